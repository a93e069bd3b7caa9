// Drives create_ui_message_app with AI SDK 6's own stream readers (as useChat
// does): the tool's state change arrives as a data-state part, which
// readUIMessageStream reconciles by its id; the next request posts the
// conversation back, the part included, as useChat does. Prints one JSON summary.
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const [url] = process.argv.slice(2);

async function post(messages) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: "chat-state", messages, trigger: "submit-message" }),
  });
  const answer = { status: response.status, errors: [], message: null };
  const stream = parseJsonEventStream({
    stream: response.body,
    schema: uiMessageChunkSchema,
  }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) {
          throw result.error;
        }
        controller.enqueue(result.value);
      },
    }),
  );
  for await (const message of readUIMessageStream({
    stream,
    onError: (error) => answer.errors.push(String(error)),
    terminateOnError: true,
  })) {
    answer.message = structuredClone(message);
  }
  answer.states = answer.message.parts.filter((part) => part.type === "data-state");
  return answer;
}

const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });
const first = await post([user("user-1", "Add tea.")]);
const second = await post([user("user-1", "Add tea."), first.message, user("user-2", "Again.")]);
console.log(JSON.stringify({ first, second }));
