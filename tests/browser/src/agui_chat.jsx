// The AG-UI page: an @ag-ui/client HttpAgent against create_agui_app mounted
// at /api/agui/. It keeps only the thread id (in the URL): after a reload it
// reads the waiting thread back (GET /{id}/messages, a MESSAGES_SNAPSHOT with
// its interrupts), else reconnects to a running answer with connectAgent(),
// whose connect() is the plain GET /{id}/stream. Each run declares the tool
// pick_color (a CopilotKit frontend action): a run that ends waiting for its
// calls (RUN_FINISHED's pendingToolCallIds) has them run in the page, their
// results added as tool messages, and the agent run again.
import { useEffect, useMemo, useState } from "react";
import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { Bubble, chatId, ColorView, Composer, ErrorBanner, mount, PICK_COLOR, readThread, StateView, ToolCard, usePickColor } from "./common.jsx";

const API = "/api/agui/";

class ChatAgent extends HttpAgent {
  connect(input) {
    return transformHttpEventStream(
      runHttpRequest(async () => {
        const response = await fetch(`${API}${encodeURIComponent(input.threadId)}/stream`, {
          headers: { Accept: "text/event-stream" },
        });
        // 204: no answer to follow; an empty stream applies nothing.
        return response.status === 204 ? new Response("", { headers: { "Content-Type": "text/event-stream" } }) : response;
      }),
    );
  }
}

function useAgentView(agent) {
  const [view, setView] = useState({ messages: [], interrupts: [], running: false, error: null });
  useEffect(() => {
    const update = (changes) => setView((old) => ({ ...old, messages: [...agent.messages], interrupts: [...agent.pendingInterrupts], ...changes }));
    // The first error of a run is the one to show (RUN_ERROR, before the
    // client's own failure that follows it).
    const fail = (error) => setView((old) => ({ ...old, running: false, error: old.error || String(error.message || error) }));
    const { unsubscribe } = agent.subscribe({
      onMessagesChanged: () => update({}),
      // STATE_DELTA / STATE_SNAPSHOT applied to agent.state.
      onStateChanged: ({ state }) => update({ state }),
      onRunInitialized: () => update({ running: true, error: null }),
      onRunErrorEvent: ({ event }) => update({ error: event.code ? `${event.code}: ${event.message}` : event.message }),
      onRunFinalized: () => update({ running: false }),
      onRunFailed: ({ error }) => fail(error),
    });
    return unsubscribe;
  }, [agent]);
  const refresh = (changes = {}) => setView((old) => ({ ...old, messages: [...agent.messages], interrupts: [...agent.pendingInterrupts], ...changes }));
  const fail = (error) => setView((old) => ({ ...old, running: false, error: old.error || String(error.message || error) }));
  return [view, refresh, fail];
}

function AssistantMessage({ message, results, interrupts, busy, decide }) {
  return (
    <Bubble role="assistant" id={message.id}>
      {message.content ? <p className="text">{message.content}</p> : null}
      {(message.toolCalls || []).map((call) => {
        const interrupt = interrupts.find((i) => i.toolCallId === call.id);
        let input;
        try { input = JSON.parse(call.function.arguments); } catch { input = call.function.arguments; }
        return <ToolCard key={call.id} name={call.function.name} input={input} output={results.get(call.id)}
          waiting={Boolean(interrupt)} busy={busy} onDecide={(approved) => decide(interrupt, approved)} />;
      })}
    </Bubble>
  );
}

function Chat({ id }) {
  const agent = useMemo(() => new ChatAgent({ url: API, threadId: id }), [id]);
  const [view, refresh, fail] = useAgentView(agent);
  const [ready, setReady] = useState(false);
  const [picked, pickColor] = usePickColor();

  // The tool message answering one call of the page's tool.
  const runTool = (call) => {
    const message = { id: crypto.randomUUID(), role: "tool", toolCallId: call.id };
    try {
      return { ...message, content: pickColor(JSON.parse(call.function.arguments)) };
    } catch (failure) {
      const error = String(failure.message || failure);
      return { ...message, content: error, error };
    }
  };
  // A run with the page's tools; when it ends waiting for calls of them, they
  // run here (each once: a call already answered is not run again) and the
  // agent runs again with their results.
  const run = async (parameters = {}) => {
    let pending = [];
    const subscriber = {
      onRunFinishedEvent: (finished) => {
        pending = finished.outcome === "success" ? finished.pendingToolCallIds : [];
      },
    };
    try {
      await agent.runAgent({ ...parameters, tools: [PICK_COLOR] }, subscriber);
    } catch (error) {
      fail(error);
      return;
    }
    const answered = new Set(agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
    const calls = agent.messages
      .flatMap((m) => (m.role === "assistant" && m.toolCalls) || [])
      .filter((call) => pending.includes(call.id) && !answered.has(call.id) && call.function.name === PICK_COLOR.name);
    if (calls.length === 0) return;
    for (const call of calls) agent.addMessage(runTool(call));
    refresh();
    await run();
  };

  useEffect(() => {
    readThread(API, id).then(async (snapshot) => {
      if (snapshot) {
        agent.messages = snapshot.messages;
        agent.pendingInterrupts = snapshot.interrupts;
        refresh();
      }
      setReady(true);
      if (!snapshot) await agent.connectAgent().catch(fail);
    });
  }, [agent]);

  const decide = (interrupt, approved) => run({
    resume: agent.pendingInterrupts.map((i) => ({
      interruptId: i.id,
      status: "resolved",
      payload: i.id === interrupt.id && approved ? { approved: true } : { approved: false, reason: "The user said no." },
    })),
  });
  const send = (text) => {
    // The client refuses a run while interrupts wait; the server rejects them
    // for a new message (the model reads why), so the page lets them go.
    agent.pendingInterrupts = [];
    agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
    refresh();
    run();
  };

  const results = new Map(view.messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m.content]));
  return (
    <main id="chat" data-status={!ready ? "loading" : view.running ? "streaming" : view.error ? "error" : "ready"}>
      {view.messages.map((message) =>
        message.role === "user" ? (
          <Bubble key={message.id} role="user" id={message.id}><p className="text">{message.content}</p></Bubble>
        ) : message.role === "reasoning" ? (
          <Bubble key={message.id} role="reasoning" id={message.id}><em className="reasoning">{message.content}</em></Bubble>
        ) : message.role === "assistant" ? (
          <AssistantMessage key={message.id} message={message} results={results} interrupts={view.interrupts} busy={view.running} decide={decide} />
        ) : null,
      )}
      <StateView state={view.state} />
      <ColorView picked={picked} />
      <ErrorBanner error={view.error} />
      <Composer busy={view.running} onSend={send} />
    </main>
  );
}

mount(<Chat id={chatId()} />);
