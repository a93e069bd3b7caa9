// Drives create_ui_message_app with AI SDK 6's own stream readers: each answer is
// parsed by parseJsonEventStream against uiMessageChunkSchema and assembled by
// readUIMessageStream (continuing the assistant message after an approval), as
// useChat does. The approval is answered the way addToolApprovalResponse does, by
// re-posting the conversation with the tool part in state "approval-responded";
// then the same answer is posted again, through DefaultChatTransport as useChat
// sends it (its refusal becomes the Error useChat shows). Prints one JSON summary.
import {
  DefaultChatTransport,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from "ai";

const [url, question, token] = process.argv.slice(2);
// With a token, every request carries it as the app's authorize= expects (what
// DefaultChatTransport's headers option sends).
const authorization = token ? { Authorization: `Bearer ${token}` } : {};

async function post(messages, continuing) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...authorization },
    body: JSON.stringify({ id: "chat-1", messages, trigger: "submit-message" }),
  });
  const answer = {
    status: response.status,
    header: response.headers.get("x-vercel-ai-ui-message-stream"),
    chunks: [],
    errors: [],
    message: null,
  };
  if (!response.ok) {
    answer.body = await response.json();
    return answer;
  }
  const parsed = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema });
  const chunks = parsed.pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) {
          throw result.error;
        }
        answer.chunks.push(result.value);
        controller.enqueue(result.value);
      },
    }),
  );
  for await (const message of readUIMessageStream({
    message: continuing,
    stream: chunks,
    onError: (error) => answer.errors.push(String(error)),
    terminateOnError: true,
  })) {
    answer.message = structuredClone(message);
  }
  return answer;
}

const user = { id: "user-1", role: "user", parts: [{ type: "text", text: question }] };
const first = await post([user]);
const assistant = structuredClone(first.message);
for (const part of assistant.parts) {
  if (part.state === "approval-requested") {
    // What useChat's addToolApprovalResponse({ id, approved: true }) does.
    part.state = "approval-responded";
    part.approval = { id: part.approval.id, approved: true };
  }
}
const answered = structuredClone(assistant);
const second = await post([user, answered], structuredClone(answered));
const repeated = { status: null, shown: null };
const transport = new DefaultChatTransport({
  api: url,
  headers: authorization,
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    repeated.status = response.status;
    return response;
  },
});
try {
  await transport.sendMessages({
    chatId: "chat-1",
    messages: [user, answered],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
} catch (error) {
  // What useChat puts in its `error` and a page shows.
  repeated.shown = error.message;
}
console.log(JSON.stringify({ first, second, repeated }));
