"""The UI-message app behind ``langhooks.integrations.ui_messages``: the endpoint
the AI SDK's ``useChat`` posts to, streaming the run as a UI message stream (v1),
with tool approval answered by re-posting the conversation."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from ..._core._messages import (
    ContentPart,
    LangHooksError,
    Message,
    ToolCall,
    ToolResult,
)
from ...chain import Decision, LLMChain
from .._auth import Authorize, check_authorize, owner_metadata, started_by
from .._web._limits import BadRequest, json_body
from ._app import (
    Agent,
    Answers,
    LiveRun,
    allowed,
    build_chain,
    close_unanswered,
    known,
    moves_on,
    settle_stored,
    stream_events,
    waiting_thread,
)
from ._client_tools import (
    ANSWERED,
    Resume,
    Waiting,
    client_answers,
    client_tool_names,
    posted_answers,
)
from ._records import split_approval_id
from ._runner import Runs, Work, runs_of
from ._shared_state import (
    SharedState,
    StateTranslation,
    shared_work,
    ui_state,
    ui_state_events,
)
from ._ui_message_chunks import UiMessageTranslator, chat_messages

if TYPE_CHECKING:
    from ..._persist._stores import AsyncRunStore, RunStore

__all__ = ["MAX_CONVERSATION_BYTES", "conversation", "create_ui_message_app"]

#: A posted conversation larger than this is refused unread (413).
MAX_CONVERSATION_BYTES: Final = 512 * 1024
# The store metadata key that ties an interrupted run to its chat.
_CHAT: Final = "ui_chat"
_HEARTBEAT: Final = 15.0
_HEADERS: Final = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "x-vercel-ai-ui-message-stream": "v1",
}
# What a chat's waiting calls wait for, said in a refusal (``waits_for``).
_WAITING: Final = Waiting(
    decide=(
        "answers to its tool approvals, tool call(s) {calls}: answer them, each "
        "approved to run it, or not approved (with a reason the model reads as "
        "the tool's result) to decide against it"
    ),
    run="the outputs of the client tool call(s) {calls} the client runs "
    "(addToolOutput)",
    new="send a new message (it rejects them)",
)
_REJECTED: Final = "The user rejected this tool call."
# Tool part states that carry a call the model made (input-streaming does not yet).
_CALLED: Final = frozenset(
    {
        "input-available",
        "approval-requested",
        "approval-responded",
        "output-available",
        "output-error",
        "output-denied",
    }
)


def _refusal(status: int, message: str) -> Response:
    """A request refused before anything ran: ``status`` and the message as
    plain text, which is what the AI SDK's transport makes the error
    ``useChat`` shows (the body of an answer that is not 2xx, as it is)."""
    return PlainTextResponse(message, status_code=status)


def _chat(body: object) -> tuple[str, list[dict[str, Any]]]:
    """The chat id and UI messages of a posted body.

    Raises:
        BadRequest: not ``{"id": "...", "messages": [{"role", "parts"}, ...]}``.
    """
    if not isinstance(body, dict):
        raise BadRequest(400, 'the body must be {"id": "...", "messages": [...]}')
    chat_id, messages = body.get("id"), body.get("messages")
    if not isinstance(chat_id, str) or not chat_id:
        raise BadRequest(400, "id (the chat id) must be a non-empty string")
    if not isinstance(messages, list) or not messages:
        raise BadRequest(400, "messages must be a non-empty list of UI messages")
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "user",
            "assistant",
        ):
            raise BadRequest(
                400, f"{where} must be a UI message with role system, user or assistant"
            )
        parts = message.get("parts")
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            raise BadRequest(400, f"{where}.parts must be a list of objects")
    return chat_id, messages


def _string(part: Mapping[str, Any], key: str, where: str) -> str:
    value = part.get(key)
    if not isinstance(value, str):
        raise BadRequest(400, f"{where}.{key} must be a string")
    return value


def _tool_name(part: Mapping[str, Any], where: str) -> str | None:
    """The tool name of a tool part (``tool-NAME`` or ``dynamic-tool``), else
    None."""
    kind = part.get("type")
    if kind == "dynamic-tool":
        return _string(part, "toolName", where)
    if isinstance(kind, str) and kind.startswith("tool-"):
        return kind.removeprefix("tool-")
    return None


def _output(part: Mapping[str, Any]) -> str:
    output = part.get("output")
    return output if isinstance(output, str) else json.dumps(output)


def _result(part: Mapping[str, Any], call: ToolCall, where: str) -> ToolResult | None:
    state = part["state"]
    if state == "output-available":
        content = _output(part)
        return ToolResult(tool_call_id=call.call_id, name=call.name, content=content)
    if state == "output-error":
        text = _string(part, "errorText", where)
        return ToolResult(
            tool_call_id=call.call_id, name=call.name, content=text, is_error=True
        )
    if state == "output-denied":
        approval = part.get("approval")
        reason = approval.get("reason") if isinstance(approval, dict) else None
        return ToolResult(
            tool_call_id=call.call_id,
            name=call.name,
            content=reason if isinstance(reason, str) and reason else _REJECTED,
        )
    return None


class _Step:
    """One step of an assistant UI message: its text, calls and results."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self.results: list[ToolResult] = []

    def messages(self) -> list[Message]:
        out: list[Message] = []
        if self.text or self.calls:
            content = [ContentPart.text("".join(self.text))] if self.text else []
            out.append(
                Message(role="assistant", content=content, tool_calls=self.calls)
            )
        if self.results:
            out.append(Message.tool(self.results))
        return out


def _assistant(parts: Sequence[Mapping[str, Any]], where: str) -> list[Message]:
    steps = [_Step()]
    for index, part in enumerate(parts):
        here = f"{where}.parts[{index}]"
        kind = part.get("type")
        if kind == "step-start":
            steps.append(_Step())
        elif kind == "text":
            steps[-1].text.append(_string(part, "text", here))
        else:
            name = _tool_name(part, here)
            if name is None or part.get("state") not in _CALLED:
                continue  # reasoning, sources, data parts; calls still streaming
            arguments = part.get("input")
            if not isinstance(arguments, dict):
                raise BadRequest(400, f"{here}.input must be an object")
            call = ToolCall(
                call_id=_string(part, "toolCallId", here),
                name=name,
                arguments=arguments,
                index=len(steps[-1].calls),
            )
            steps[-1].calls.append(call)
            result = _result(part, call, here)
            if result is not None:
                steps[-1].results.append(result)
    return [message for step in steps for message in step.messages()]


def conversation(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """UI messages (as ``_chat`` checked them) as langhooks messages.

    User and system messages keep their text parts; an assistant message becomes
    one assistant message per step (its text and tool calls) followed by a tool
    message with the calls' outputs, errors and denials. Reasoning, source, data
    and still-streaming tool parts are left out.

    Raises:
        BadRequest: a file part (only text is taken), or a malformed part.
    """
    out: list[Message] = []
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        try:
            out.extend(_converted(message, where))
        except ValueError as invalid:
            # A value langhooks refuses (an empty tool call id, a part type
            # "tool-" naming no tool): the client's mistake, said as such.
            raise BadRequest(400, f"{where}: {invalid}") from None
    return out


def _converted(message: Mapping[str, Any], where: str) -> list[Message]:
    """One UI message as langhooks messages."""
    parts = message["parts"]
    if message["role"] == "assistant":
        return _assistant(parts, where)
    texts: list[str] = []
    for index, part in enumerate(parts):
        if part.get("type") == "text":
            texts.append(_string(part, "text", f"{where}.parts[{index}]"))
        elif part.get("type") == "file":
            raise BadRequest(
                400, f"{where}.parts[{index}]: only text content is supported"
            )
    text = "".join(texts)
    return [Message.user(text) if message["role"] == "user" else Message.system(text)]


def _approvals(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[str, dict[str, Decision]] | None:
    """The run and decisions of the approvals the last (assistant) message
    answers, or None when it answers none.

    Raises:
        BadRequest: an approval that is malformed, not made by this app, or not
            for its own tool call; approvals of different runs.
    """
    last = messages[-1]
    if last["role"] != "assistant":
        return None
    runs: set[str] = set()
    decisions: dict[str, Decision] = {}
    for index, part in enumerate(last["parts"]):
        if part.get("state") != "approval-responded":
            continue
        where = f"messages[{len(messages) - 1}].parts[{index}]"
        approval = part.get("approval")
        if not isinstance(approval, dict) or not isinstance(
            approval.get("approved"), bool
        ):
            raise BadRequest(
                400,
                f'{where}.approval must be {{"id": "...", "approved": true | false, '
                f'"reason"?: "..."}}',
            )
        ids = split_approval_id(_string(approval, "id", f"{where}.approval"))
        call_id = _string(part, "toolCallId", where)
        if ids is None or ids[1] != call_id:
            raise BadRequest(
                400, f"{where}: no approval {approval['id']!r} in this chat"
            )
        runs.add(ids[0])
        reason = approval.get("reason")
        decisions[call_id] = (
            Decision.approve()
            if approval["approved"]
            else Decision.reject(
                reason if isinstance(reason, str) and reason else _REJECTED
            )
        )
    if not decisions:
        return None
    if len(runs) != 1:
        raise BadRequest(400, "the approvals answered together must be of one run")
    return runs.pop(), decisions


@final
class _UiMessageApp:
    def __init__(
        self,
        agent: Agent,
        runs: Runs,
        authorize: Authorize | None,
        expose_errors: bool,
    ) -> None:
        self._agent = agent
        self._runs = runs
        self._authorize = authorize
        self._expose_errors = expose_errors
        self._answers = Answers()

    async def chat(self, request: Request) -> Response:
        """POST /: a chat's UI messages; the run as a UI message stream."""
        try:
            body = await json_body(request, max_bytes=MAX_CONVERSATION_BYTES)
            chat_id, messages = _chat(body)
            state = SharedState(ui_state(body, messages))
            approvals = _approvals(messages)
            refused = await allowed(
                self._authorize,
                request,
                "start" if approvals is None else "decide",
                approvals and approvals[0],
                self._runs,
                {_CHAT: chat_id},
            )
            if refused is not None:
                return refused
            converted = close_unanswered(conversation(messages))
        except BadRequest as bad:
            return _refusal(bad.status, bad.message)
        chain = build_chain(self._agent, converted)
        # A user's chat: another user's run waiting under the same chat id is
        # neither told of nor in the way.
        chat = {_CHAT: chat_id, **owner_metadata(started_by(request))}
        key = (chat_id, started_by(request))
        waiting = await self._runs.pending(chat)
        if approvals is None:
            if moves_on(chain, waiting):
                # A new message rejects the calls that wait, as chat products do.
                try:
                    await settle_stored(self._runs, waiting, chain)
                except LangHooksError as exc:
                    if exc.type != "conflict":  # pragma: no cover - a store failure
                        raise
                    return _refusal(409, exc.message)
                work = self._runs.fresh(chain, chat, abandon=True)
                return await self._stream(work, key, state, chain)
            # Not a new message: the client's outputs of the calls it ran
            # resume the waiting run, or the request is refused.
            where = f"chat {chat_id!r}"
            settled = await posted_answers(self._runs, waiting, chain, where, _WAITING)
            if isinstance(settled, Resume):
                work = self._runs.resumed(chain, settled.run_id, settled.decisions)
                return await self._stream(work, key, state, chain, settled.posted)
            if settled is not None:
                return _refusal(409, settled.message)
            return await self._stream(self._runs.fresh(chain, chat), key, state, chain)
        run_id, decisions = approvals
        run = next((p for p in waiting if p.run_id == run_id), None)
        if run is None:
            exists = await known(self._runs, run_id, chain)
            if exists:
                return _refusal(
                    409, "these approvals were answered already; nothing was run"
                )
            return _refusal(404, f"no run waits for approval in chat {chat_id!r}")
        found = await client_answers(self._runs, run, chain)
        if found is None:
            return _refusal(409, ANSWERED)
        client, results = found
        # The calls the client runs are answered by their outputs.
        open_calls = {call.call_id for call in run.calls} - client
        unknown = sorted(set(decisions) - open_calls)
        if unknown:
            return _refusal(422, f"tool call(s) {unknown} do not wait for approval")
        missing = sorted(open_calls - set(decisions))
        if missing:
            return _refusal(
                422, f"answer every approval request: tool call(s) {missing} wait too"
            )
        unanswered = sorted(client - results.keys())
        if unanswered:
            return _refusal(
                422,
                f"post the output of every client tool call with the approvals: "
                f"tool call(s) {unanswered} wait for theirs",
            )
        work = self._runs.resumed(chain, run_id, {**decisions, **results})
        return await self._stream(work, key, state, chain, frozenset(results))

    async def messages(self, request: Request) -> Response:
        """GET /{chat_id}/messages: the chat's waiting run as UI messages."""
        chat_id = request.path_params["chat_id"]
        found = await waiting_thread(
            self._authorize, request, self._runs, self._agent, {_CHAT: chat_id}
        )
        if isinstance(found, Response):
            return found
        run, messages = found
        return JSONResponse(
            {"id": chat_id, "messages": chat_messages(messages, run.run_id)},
            headers={"Cache-Control": "no-store"},
        )

    async def stream(self, request: Request) -> Response:
        """GET /{chat_id}/stream: the chat's latest answer from its first chunk,
        then the rest as it comes (the AI SDK's ``resume: true``); 204 when
        this process has none."""
        refused = await allowed(self._authorize, request, "read", None, self._runs, {})
        if refused is not None:
            return refused
        key = (request.path_params["chat_id"], started_by(request))
        answer = self._answers.get(key)
        if answer is None:
            return Response(status_code=204)
        return StreamingResponse(
            _lines(answer.follow(_HEARTBEAT)),
            media_type="text/event-stream",
            headers=_HEADERS,
        )

    async def cancel(self, request: Request) -> Response:
        """POST /{chat_id}/cancel: cancel the chat's run going on here."""
        chat_id = request.path_params["chat_id"]
        where = {_CHAT: chat_id}
        refused = await allowed(
            self._authorize, request, "start", None, self._runs, where
        )
        if refused is not None:
            return refused
        return self._answers.cancel((chat_id, started_by(request)))

    async def _stream(
        self,
        work: Work,
        key: tuple[str, str | None],
        state: SharedState,
        chain: LLMChain,
        posted: frozenset[str] = frozenset(),
    ) -> Response:
        live = LiveRun(shared_work(work, state))
        refused = await live.begun()
        if isinstance(refused, LangHooksError) and refused.type == "conflict":
            return _refusal(409, refused.message)
        translator = UiMessageTranslator(
            expose_errors=self._expose_errors,
            client_tools=client_tool_names(chain),
            posted=posted,
        )
        shared = StateTranslation(translator, state, ui_state_events)
        events = stream_events(live, shared, _HEARTBEAT)
        answer = self._answers.start(key, events, live)
        leave = self._runs.cancel_on_disconnect
        return StreamingResponse(
            _lines(answer.follow(_HEARTBEAT, cancel_on_leave=leave)),
            media_type="text/event-stream",
            headers=_HEADERS,
        )


async def _lines(
    chunks: AsyncIterator[dict[str, Any] | None],
) -> AsyncIterator[str]:
    async for chunk in chunks:
        if chunk is None:
            yield ": heartbeat\n\n"
        else:
            yield f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n"
    yield "data: [DONE]\n\n"


def create_ui_message_app(
    *,
    agent: Agent,
    store: RunStore | AsyncRunStore | None = None,
    authorize: Authorize | None = None,
    expose_errors: bool = False,
    run_async: bool | None = None,
    cancel_on_disconnect: bool = False,
) -> Starlette:
    """An endpoint for the AI SDK's ``useChat``: ``POST /`` runs the agent on the
    chat and streams the UI message stream protocol v1 (AI SDK 6).

    The body is what ``useChat``'s transport posts: the chat id as ``"id"`` and
    its UI messages as ``"messages"``. The answer is Server-Sent Events with
    the header ``x-vercel-ai-ui-message-stream: v1``, one ``data:`` line per
    chunk (``ui_message_chunks`` says which), ending ``data: [DONE]``. A tool
    call a review interrupts is a ``tool-approval-request``; the client answers
    by posting the conversation again with the tool part in state
    ``approval-responded`` (``approval: {id, approved, reason?}``), and the app
    resumes the stored run of that chat, streaming the continuation of the same
    assistant message. A conversation that repeats an answered approval runs
    nothing (409). Bad input gets a 4xx answer ``{"error": "..."}``: a malformed
    body (400), too large (413), not JSON (415), no waiting run (404), a new
    message in a chat that waits for approvals or an approval answered already
    (409), approvals that do not match the waiting calls (422).

    The client's state (the body's ``"state"``, else the last ``data-state``
    part posted) is the run's ``shared_state()``; each change is sent as a
    ``data-state`` part with the id "state".

    A chain with an async handler (``AsyncChainCallbackHandler``) or an async
    tool runs with ``arun()`` on the app's event loop; any other with ``run()``
    in a worker thread (``run_async`` decides otherwise). ``POST
    /{chat_id}/cancel`` cancels the chat's run going on in this process when
    it runs on the loop (202; the stream ends with an ``error`` chunk
    "cancelled: ..."; 409 for a run in a thread, 200 ``{"cancelled": false}`` when none
    goes on); a
    client that goes away (``stop()``) cancels nothing (unless
    ``cancel_on_disconnect``): the run goes on, for ``GET /{chat_id}/stream``.

    Args:
        agent: builds the chain for the conversation so far (model, tools,
            handlers and the messages, converted to langhooks ``Message`` values).
        store: where interrupted runs wait (any ``RunStore`` or
            ``AsyncRunStore``); None keeps them in this process
            (``MemoryRunStore``). A chain that runs on the loop is resumed
            through an ``AsyncRunStore`` or a ``MemoryRunStore``; an
            ``AsyncRunStore`` resumes every chain with ``arun()``.
        authorize: asked ``authorize(request, action, run_id)`` by ``POST /``
            once the body is read, before anything runs: ``"start"`` (run_id
            None) for a new message, ``"decide"`` with the run id for approvals
            answered (sync or async; as in ``create_app``: False is 403, an
            ``HTTPException`` it raises is its answer). ``owner_only`` works:
            the run's owner is kept in the store's metadata as ``"owner"``.
            None serves only requests naming the app by ``localhost`` or an IP
            address. A POST from another origin is refused (403) before
            ``authorize`` is asked.
        expose_errors: a run that fails ends with an ``error`` chunk whose
            ``errorText`` is ``"<code>: <message>"``, the code being the
            error's type; the message says only that code and the run id,
            unless this is True (then it is the error's own message, which may
            hold server internals). The details are logged on the
            ``langhooks.integrations.frontends`` logger with the run id.
        run_async: True runs every chain with ``arun()`` on the event loop
            (cancellable; a sync handler then runs on the loop), False every
            one with ``run()`` in a thread; None (the default) decides per
            chain, as above.
        cancel_on_disconnect: True cancels a run on the loop when the client
            of the request that started it goes away before its end (a
            follower of ``GET /{id}/stream`` leaving cancels nothing).

    Returns:
        The app (a ``Starlette``), to serve with uvicorn or mount in another app.

    Raises:
        TypeError: ``agent`` or ``authorize`` is not callable,
            ``expose_errors`` or ``cancel_on_disconnect`` is not a bool, or
            ``run_async`` is not a bool or None.
    """
    if not callable(agent):
        raise TypeError(
            f"agent must be a function from messages to an LLMChain, got {agent!r}"
        )
    check_authorize(authorize)
    if not isinstance(expose_errors, bool):
        raise TypeError(f"expose_errors must be a bool, got {expose_errors!r}")
    runs = runs_of(store, run_async, cancel_on_disconnect)
    app = _UiMessageApp(agent, runs, authorize, expose_errors)
    return Starlette(
        routes=[
            Route("/", app.chat, methods=["POST"]),
            Route("/{chat_id}/messages", app.messages, methods=["GET"]),
            Route("/{chat_id}/stream", app.stream, methods=["GET"]),
            Route("/{chat_id}/cancel", app.cancel, methods=["POST"]),
        ]
    )
