// Drives create_agui_app with the official AG-UI client (@ag-ui/client's HttpAgent):
// a run with initialState, context and forwardedProps whose tool changes the state.
// The client applies the STATE_DELTA (fast-json-patch) and STATE_SNAPSHOT events it
// validated; prints the agent's state after the run and each state it went through.
import { HttpAgent } from "@ag-ui/client";

const [url] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  threadId: "thread-state",
  initialState: { items: ["milk"], owner: "ann" },
});
agent.messages = [{ id: "user-1", role: "user", content: "Add tea to my cart." }];
const changes = [];
agent.subscribe({
  onStateChanged: ({ state }) => {
    changes.push(structuredClone(state));
  },
});
let error = null;
try {
  await agent.runAgent(
    {
      runId: "run-1",
      context: [{ description: "page", value: "checkout" }],
      forwardedProps: { tenant: "t1" },
    },
    {
      onRunFailed: ({ error: failure }) => {
        error = String(failure?.message ?? failure);
      },
    },
  );
} catch (failure) {
  error = String(failure?.message ?? failure);
}
console.log(JSON.stringify({ state: agent.state, changes, error }));
