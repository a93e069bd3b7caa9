// Drives create_agui_app with the official AG-UI client (@ag-ui/client's HttpAgent)
// through a tool the frontend runs: `pick_color` is passed in runAgent({ tools }); a
// run that waits for it finishes with pendingToolCallIds (read in a subscriber's
// onRunFinishedEvent); the script runs the tool itself (counted), adds its result with
// agent.addMessage and runs the agent again, as a CopilotKit frontend action does. An
// interrupt (a review asking first) is approved with a resume. Then a second client,
// a stale tab holding the conversation as it was before the result was used, posts the
// same result again. Prints one JSON summary.
import { HttpAgent } from "@ag-ui/client";

const [url, question] = process.argv.slice(2);
const tools = [
  {
    name: "pick_color",
    description: "Pick the page's colour in the browser.",
    parameters: {
      type: "object",
      properties: { mood: { type: "string" } },
      required: ["mood"],
    },
  },
];
const ran = [];

// The frontend tool itself: what the page does with the model's arguments.
function pickColor(args) {
  ran.push(args);
  return JSON.stringify({ color: "#a0c4ff", mood: args.mood });
}

function newAgent() {
  return new HttpAgent({ url, threadId: "thread-client-tool" });
}

async function run(agent, parameters) {
  const types = [];
  let finished = null;
  let error = null;
  let code = null;
  try {
    await agent.runAgent(
      { tools, ...parameters },
      {
        onEvent: ({ event }) => {
          types.push(event.type);
          if (event.type === "RUN_ERROR") {
            code = event.code ?? null;
          }
        },
        onRunFinishedEvent: (params) => {
          finished = {
            outcome: params.outcome,
            pendingToolCallIds: params.pendingToolCallIds ?? null,
            interrupts: params.interrupts ?? null,
          };
        },
        onRunFailed: ({ error: failure }) => {
          error = String(failure?.message ?? failure);
        },
      },
    );
  } catch (failure) {
    error = String(failure?.message ?? failure);
  }
  return { types, finished, error, code };
}

const agent = newAgent();
agent.messages = [{ id: "user-1", role: "user", content: question }];
const runs = [];
const approvals = [];
let beforeResult = null;
let parameters = { runId: "run-1" };
for (let turn = 2; turn < 8; turn++) {
  const outcome = await run(agent, parameters);
  runs.push(outcome);
  const finished = outcome.finished;
  if (finished?.outcome === "interrupt") {
    approvals.push(...finished.interrupts.map((interrupt) => interrupt.toolCallId));
    parameters = {
      runId: `run-${turn}`,
      resume: finished.interrupts.map((interrupt) => ({
        interruptId: interrupt.id,
        status: "resolved",
        payload: { approved: true },
      })),
    };
  } else if (finished?.outcome === "success" && finished.pendingToolCallIds.length) {
    const calls = agent.messages.flatMap((message) => message.toolCalls ?? []);
    for (const id of finished.pendingToolCallIds) {
      const call = calls.find((candidate) => candidate.id === id);
      agent.addMessage({
        id: `result-${id}`,
        role: "tool",
        toolCallId: id,
        content: pickColor(JSON.parse(call.function.arguments)),
      });
    }
    beforeResult = structuredClone(agent.messages);
    parameters = { runId: `run-${turn}` };
  } else {
    break;
  }
}
const answer = agent.messages.at(-1);

// A stale tab: the conversation as it was when the result was first posted.
const stale = newAgent();
stale.messages = beforeResult ?? [];
const repeated = await run(stale, { runId: "run-stale" });

console.log(
  JSON.stringify({
    runs,
    ran,
    approvals,
    answer: answer.role === "assistant" ? answer.content : null,
    messages: agent.messages,
    repeated,
  }),
);
