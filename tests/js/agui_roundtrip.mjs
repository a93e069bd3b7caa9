// Drives create_agui_app with the official AG-UI client (@ag-ui/client's HttpAgent,
// which validates every event with zod and checks their order) through a full
// interrupt -> resume round trip, then repeats the resume, then sends a resume the app
// refuses (a malformed payload: a 400 whose body is a RUN_ERROR event, which the
// client puts in its error's payload). Prints one JSON summary.
import { HttpAgent } from "@ag-ui/client";

const [url, question, token] = process.argv.slice(2);
// With a token, every request carries it as the app's authorize= expects.
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const agent = new HttpAgent({ url, threadId: "thread-1", headers });
agent.messages = [{ id: "user-1", role: "user", content: question }];

async function run(parameters) {
  const events = [];
  let error = null;
  let refusal = null;
  let finished = null;
  try {
    await agent.runAgent(parameters, {
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFinishedEvent: (params) => {
        finished = { outcome: params.outcome, interrupts: params.interrupts ?? null };
      },
      onRunFailed: ({ error: failure }) => {
        error = String(failure?.message ?? failure);
      },
    });
  } catch (failure) {
    error = String(failure?.message ?? failure);
    if (failure?.status !== undefined) {
      refusal = { status: failure.status, payload: failure.payload };
    }
  }
  return {
    types: events.map((event) => event.type),
    events,
    finished,
    error,
    refusal,
    pendingInterrupts: agent.pendingInterrupts,
    messages: structuredClone(agent.messages),
  };
}

const first = await run({ runId: "run-1" });
const interrupts = first.pendingInterrupts;
const resume = interrupts.map((interrupt) => ({
  interruptId: interrupt.id,
  status: "resolved",
  payload: { approved: true },
}));
const second = await run({ runId: "run-2", resume });
const repeated = await run({ runId: "run-3", resume });
const malformed = resume.map((answer) => ({ ...answer, payload: { approved: "yes" } }));
const refused = await run({ runId: "run-4", resume: malformed });
console.log(JSON.stringify({ first, interrupts, second, repeated, refused }));
