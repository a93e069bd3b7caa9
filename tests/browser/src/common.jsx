// What both chat pages share: the chat id kept in the URL (all a page keeps
// across a reload), the composer, the error banner and the page shell. A page
// per protocol renders its messages with these, so a later step (a frontend
// tool, shared state) is one more component in each page.
import { useCallback, useState } from "react";
import { createRoot } from "react-dom/client";

/** The chat id from `?chat=`, or a new one written into the URL. */
export function chatId() {
  const url = new URL(window.location.href);
  let id = url.searchParams.get("chat");
  if (!id) {
    id = crypto.randomUUID();
    url.searchParams.set("chat", id);
    window.history.replaceState(null, "", url);
  }
  return id;
}

/** GET `${api}${id}/messages`: the waiting thread, or null (404: nothing waits). */
export async function readThread(api, id) {
  const response = await fetch(`${api}${encodeURIComponent(id)}/messages`);
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`reading the thread: HTTP ${response.status}`);
  return response.json();
}

export function Composer({ onSend, busy }) {
  const [text, setText] = useState("");
  const send = (event) => {
    event.preventDefault();
    if (!text.trim()) return;
    onSend(text);
    setText("");
  };
  return (
    <form id="composer" onSubmit={send}>
      <input id="prompt" value={text} onChange={(e) => setText(e.target.value)} />
      <button id="send" type="submit" disabled={busy}>Send</button>
    </form>
  );
}

/** The state the agent shares with the page (AG-UI state, the AI SDK's
 * data-state part), as JSON; nothing before there is any. */
export function StateView({ state }) {
  return state === undefined ? null : <pre id="state">{JSON.stringify(state)}</pre>;
}

export function ErrorBanner({ error }) {
  return error ? <p id="error" role="alert">{error}</p> : null;
}

/** One tool call: its name, arguments, result, and Approve / Reject while it
 * waits (disabled while an answer streams: a resumed answer replaces the message). */
export function ToolCard({ name, input, output, waiting, busy, onDecide }) {
  return (
    <div className="tool" data-name={name} data-state={waiting ? "waiting" : output === undefined ? "called" : "done"}>
      <span className="name">{name}</span> <code className="input">{JSON.stringify(input)}</code>
      {output !== undefined && <pre className="output">{output}</pre>}
      {waiting && (
        <span className="approval">
          <button className="approve" disabled={busy} onClick={() => onDecide(true)}>Approve</button>
          <button className="reject" disabled={busy} onClick={() => onDecide(false)}>Reject</button>
        </span>
      )}
    </div>
  );
}

/** The tool the page runs (a CopilotKit frontend action; a useChat client-side
 * tool), as an AG-UI request declares it. */
export const PICK_COLOR = {
  name: "pick_color",
  description: "Pick the page's colour for a mood, in the browser.",
  parameters: { type: "object", properties: { mood: { type: "string" } }, required: ["mood"] },
};
const COLORS = { calm: "#a0c4ff", warm: "#ffc6a0" };

/** `pick_color` run in the page: the page takes the mood's colour, and counts
 * the tool's runs (`window.__toolRuns`, shown by `ColorView`). Returns
 * [the colour picked and the runs so far, or null; the tool (input -> the
 * result text for the model)]. */
export function usePickColor() {
  const [picked, setPicked] = useState(null);
  const pick = useCallback((input) => {
    const color = COLORS[input && input.mood];
    if (!color) throw new Error(`no colour for the mood ${JSON.stringify(input && input.mood)}`);
    window.__toolRuns = (window.__toolRuns || 0) + 1;
    document.body.style.backgroundColor = color;
    setPicked({ color, runs: window.__toolRuns });
    return `The page is now ${color}.`;
  }, []);
  return [picked, pick];
}

/** The colour `pick_color` gave the page, and how many times it ran. */
export function ColorView({ picked }) {
  return picked === null ? null : (
    <p id="picked" data-runs={picked.runs} style={{ backgroundColor: picked.color }}>{picked.color}</p>
  );
}

/** One message: `.message[data-role]` holding its parts in order. */
export function Bubble({ role, id, children }) {
  return (
    <div className="message" data-role={role} data-id={id}>
      {children}
    </div>
  );
}

/** Mount `element` once the page is parsed; `#ready` says the first render happened. */
export function mount(element) {
  createRoot(document.getElementById("root")).render(element);
}
