// Drives create_ui_message_app with AI SDK 6's own chat machinery: AbstractChat (the
// class useChat wraps; here with a plain in-memory state instead of React's) over
// DefaultChatTransport, with a client-side tool `pick_color`: onToolCall runs it
// (counted) and answers with addToolOutput, and sendAutomaticallyWhen:
// lastAssistantMessageIsCompleteWithToolCalls posts the conversation again, as useChat
// does. An approval request (a review asking first) is approved with
// addToolApprovalResponse and sent with sendMessage(). Then the same output is posted
// again through the transport (a stale tab). Prints one JSON summary.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";

const [url, question] = process.argv.slice(2);

// What @ai-sdk/react's ChatState does, without React.
class MemoryState {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(message) {
    this.messages = this.messages.concat(message);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [
      ...this.messages.slice(0, index),
      this.snapshot(message),
      ...this.messages.slice(index + 1),
    ];
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

class NodeChat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new MemoryState() });
  }
}

const ran = [];
const requests = [];
const errors = [];
const transport = new DefaultChatTransport({
  api: url,
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    requests.push(response.status);
    return response;
  },
});
const chat = new NodeChat({
  id: "chat-client-tool",
  transport,
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
  onError: (error) => errors.push(error.message),
  onToolCall: ({ toolCall }) => {
    if (toolCall.toolName !== "pick_color") {
      return;
    }
    // The client-side tool itself; no await: useChat's documented pattern.
    ran.push(toolCall.input);
    chat.addToolOutput({
      tool: "pick_color",
      toolCallId: toolCall.toolCallId,
      output: { color: "#a0c4ff", mood: toolCall.input.mood },
    });
  },
});

await chat.sendMessage({ text: question });
const approvals = [];
for (let round = 0; round < 3; round++) {
  const asking = chat.lastMessage.parts.filter(
    (part) => part.state === "approval-requested",
  );
  if (!asking.length) {
    break;
  }
  for (const part of asking) {
    approvals.push(part.toolCallId);
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
  }
  await chat.sendMessage();
}
const snapshot = structuredClone(chat.messages);
const last = snapshot.at(-1);

// A stale tab posts the conversation as it was with the output, the answer left out.
const answered = structuredClone(last);
const upToOutput = answered.parts.findIndex(
  (part) => part.type === "tool-pick_color" && part.state === "output-available",
);
answered.parts = answered.parts.slice(0, upToOutput + 1);
const repeated = { status: null, shown: null };
try {
  await new DefaultChatTransport({
    api: url,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      repeated.status = response.status;
      return response;
    },
  }).sendMessages({
    chatId: "chat-client-tool",
    messages: [...snapshot.slice(0, -1), answered],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
} catch (error) {
  repeated.shown = error.message;
}

console.log(
  JSON.stringify({
    ran,
    approvals,
    requests,
    errors,
    status: chat.status,
    messages: snapshot,
    answer: last.parts
      .filter((part) => part.type === "text")
      .map((part) => part.text)
      .join(""),
    repeated,
  }),
);
