// The AI SDK 6 page: useChat with DefaultChatTransport against
// create_ui_message_app mounted at /api/ui/. It keeps only the chat id (in the
// URL): after a reload it reads the waiting thread back (GET /{id}/messages)
// and resumes a running answer (resume: true, GET /{id}/stream). The tool
// pick_color runs in the page (onToolCall -> addToolOutput); the chat then goes
// on by itself (sendAutomaticallyWhen), as it does after an approval.
import { useEffect, useState } from "react";
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  isToolUIPart,
  getToolName,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";
import { Bubble, chatId, ColorView, Composer, ErrorBanner, mount, PICK_COLOR, readThread, StateView, ToolCard, usePickColor } from "./common.jsx";

const API = "/api/ui/";

const transport = new DefaultChatTransport({
  api: API,
  prepareReconnectToStreamRequest: ({ id }) => ({ api: `${API}${encodeURIComponent(id)}/stream` }),
});

function Part({ part, current, busy, decide }) {
  if (part.type === "text") return <p className="text">{part.text}</p>;
  if (part.type === "reasoning") return <em className="reasoning">{part.text}</em>;
  if (isToolUIPart(part)) {
    const output = part.state === "output-available" ? String(part.output)
      : part.state === "output-denied" ? "denied"
      : part.state === "output-error" ? part.errorText : undefined;
    // An approval on an earlier message was rejected by the later message.
    const waiting = current && part.state === "approval-requested";
    return <ToolCard name={getToolName(part)} input={part.input} output={output}
      waiting={waiting} busy={busy} onDecide={(approved) => decide(part.approval.id, approved)} />;
  }
  return null;
}

// Post again once every call of the last step has its approval response or
// (for a tool the page ran) its output.
const answered = (options) =>
  lastAssistantMessageIsCompleteWithApprovalResponses(options) || lastAssistantMessageIsCompleteWithToolCalls(options);

function Chat({ id, saved }) {
  const [picked, pickColor] = usePickColor();
  const { messages, sendMessage, addToolApprovalResponse, addToolOutput, status, error } = useChat({
    id,
    messages: saved,
    // A thread read back waits for approval: no answer of it runs. Otherwise an
    // answer may be running: GET /{id}/stream follows it (204 when none).
    // (Resuming the finished answer too would race with an early Approve.)
    resume: saved.length === 0,
    transport,
    sendAutomaticallyWhen: answered,
    // The server's tool-input-available of a client tool's call (once review
    // let it go). Not awaited here: addToolOutput waits for the stream's end.
    onToolCall: ({ toolCall }) => {
      if (toolCall.toolName !== PICK_COLOR.name) return;
      const { toolName: tool, toolCallId } = toolCall;
      let result;
      try {
        result = { output: pickColor(toolCall.input) };
      } catch (failure) {
        result = { state: "output-error", errorText: String(failure.message || failure) };
      }
      addToolOutput({ tool, toolCallId, ...result });
    },
  });
  const decide = (approvalId, approved) =>
    addToolApprovalResponse({ id: approvalId, approved, ...(approved ? {} : { reason: "The user said no." }) });
  const busy = status === "submitted" || status === "streaming";
  // The agent's state: the latest data-state part (one per message, replaced by id).
  const state = messages.flatMap((m) => m.parts).findLast((part) => part.type === "data-state")?.data;
  return (
    <main id="chat" data-status={status}>
      {messages.map((message, index) => (
        <Bubble key={message.id} role={message.role} id={message.id}>
          {message.parts.map((part, i) => (
            <Part key={i} part={part} current={index === messages.length - 1} busy={busy} decide={decide} />
          ))}
        </Bubble>
      ))}
      <StateView state={state} />
      <ColorView picked={picked} />
      <ErrorBanner error={error && error.message} />
      <Composer busy={busy} onSend={(text) => sendMessage({ text })} />
    </main>
  );
}

function App() {
  const [id] = useState(chatId);
  const [saved, setSaved] = useState(null);
  useEffect(() => {
    readThread(API, id).then((thread) => setSaved(thread ? thread.messages : []));
  }, [id]);
  return saved === null ? <p id="loading">loading</p> : <Chat id={id} saved={saved} />;
}

mount(<App />);
