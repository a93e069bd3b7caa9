"""The AG-UI app behind ``langhooks.integrations.agui``: one ``POST /`` that takes a
``RunAgentInput`` and streams the run as AG-UI events, with interrupts for human
approval and their resume, on any worker sharing the store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import attrs
import pydantic
from ag_ui import core as agui
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..._core._messages import LangHooksError, Message, ToolCall, ToolResult
from ..._persist._stores import MemoryRunStore
from ...chain import Decision
from .._auth import Authorize, check_authorize, owner_metadata, started_by
from .._web._limits import BadRequest, json_body
from ._agui_events import AguiTranslator, thread_snapshot
from ._app import (
    Agent,
    Answers,
    LiveRun,
    Work,
    allowed,
    build_chain,
    close_unanswered,
    error,
    fresh_run,
    known,
    moves_on,
    resumed_run,
    settle_stored,
    stream_events,
    waiting_calls,
    waiting_thread,
)
from ._records import MESSAGE_ID, RESULT_IDS, split_approval_id
from ._shared_state import (
    SharedState,
    StateTranslation,
    agui_state_events,
    shared_work,
    with_context,
)

if TYPE_CHECKING:
    from ..._persist._stores import RunStore

__all__ = ["MAX_CONVERSATION_BYTES", "create_agui_app"]

#: A posted conversation larger than this is refused unread (413).
MAX_CONVERSATION_BYTES: Final = 512 * 1024
# The store metadata key that ties an interrupted run to its AG-UI thread.
_THREAD: Final = "agui_thread"
_HEADERS: Final = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def _text(content: str | list[Any], where: str) -> str:
    """A message's content as text: a string, or text parts only.

    Raises:
        BadRequest: a part that is not text (images and files are not taken).
    """
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content:
        if not isinstance(part, agui.TextPart):
            raise BadRequest(
                400, f"{where}: only text content is supported, got {part.type!r}"
            )
        texts.append(part.text)
    return "".join(texts)


def _arguments(call: agui.ToolCall, where: str) -> dict[str, Any]:
    try:
        arguments = json.loads(call.function.arguments or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise BadRequest(
            400, f"{where}: tool call {call.id!r} arguments must be a JSON object"
        )
    return arguments


def conversation(messages: Sequence[agui.Message]) -> list[Message]:
    """AG-UI messages as langhooks messages.

    User, system and developer messages become user and system messages;
    assistant messages keep their text and tool calls; consecutive tool messages
    become one tool message. Reasoning and activity messages are left out (no
    model is sent its earlier thinking back). Each message keeps its AG-UI id
    in ``metadata`` (a tool message its results' ids), so the conversation a
    run sends back in ``MESSAGES_SNAPSHOT`` has the ids the client knows.

    Raises:
        BadRequest: a non-text part, tool call arguments that are not a JSON
            object, or a tool result for a call no assistant message made.
    """
    out: list[Message] = []
    names: dict[str, str] = {}
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        try:
            _convert(out, names, message, where)
        except ValueError as invalid:
            # A value langhooks refuses (an empty tool call id or name): the
            # client's mistake, said as such.
            raise BadRequest(400, f"{where}: {invalid}") from None
    return out


def _convert(
    out: list[Message], names: dict[str, str], message: agui.Message, where: str
) -> None:
    """Add one AG-UI message to ``out`` (tool call names kept in ``names``)."""
    known = {MESSAGE_ID: message.id}
    if isinstance(message, agui.UserMessage):
        user = Message.user(_text(message.content, where))
        out.append(attrs.evolve(user, metadata=known))
    elif isinstance(message, agui.SystemMessage | agui.DeveloperMessage):
        out.append(attrs.evolve(Message.system(message.content), metadata=known))
    elif isinstance(message, agui.AssistantMessage):
        calls = [
            ToolCall(
                call_id=call.id,
                name=call.function.name,
                arguments=_arguments(call, where),
                index=index,
            )
            for index, call in enumerate(message.tool_calls or ())
        ]
        names.update((call.call_id, call.name) for call in calls)
        answer = Message.assistant(message.content or "", tool_calls=calls)
        out.append(attrs.evolve(answer, metadata=known))
    elif isinstance(message, agui.ToolMessage):
        out.append(_tool_message(out, message, names, where))


def _tool_message(
    out: list[Message],
    message: agui.ToolMessage,
    names: Mapping[str, str],
    where: str,
) -> Message:
    """``message`` as a result added to the tool message that ends ``out`` (it
    is taken off ``out``), or as a new tool message."""
    name = names.get(message.tool_call_id)
    if name is None:
        raise BadRequest(
            400,
            f"{where}: a result for tool call {message.tool_call_id!r}, which no "
            f"assistant message made",
        )
    result = ToolResult(
        tool_call_id=message.tool_call_id,
        name=name,
        content=_text(message.content, where),
        is_error=message.error is not None,
    )
    results: tuple[ToolResult, ...] = (result,)
    ids = {message.tool_call_id: message.id}
    if out and out[-1].role == "tool":
        previous = out.pop()
        results = (*previous.tool_results, result)
        ids = {**previous.metadata[RESULT_IDS], **ids}
    return attrs.evolve(Message.tool(results), metadata={RESULT_IDS: ids})


def _decision(entry: agui.ResumeEntry, where: str) -> Decision:
    """What a resume entry decides.

    Raises:
        BadRequest: a payload that is not ``{"approved": bool, "arguments"?: {...},
            "reason"?: "..."}``.
    """
    if entry.status == "cancelled":
        return Decision.reject("The user cancelled this tool call.")
    payload = entry.payload
    shape = (
        f'{where}.payload must be {{"approved": true | false, "arguments"?: '
        f'{{...}}, "reason"?: "..."}}'
    )
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise BadRequest(400, shape)
    if set(payload) - {"approved", "arguments", "reason"}:
        raise BadRequest(400, shape)
    arguments = payload.get("arguments")
    reason = payload.get("reason", "The user rejected this tool call.")
    if not isinstance(reason, str) or not (
        arguments is None or isinstance(arguments, dict)
    ):
        raise BadRequest(400, shape)
    if not payload["approved"]:
        return Decision.reject(reason)
    return Decision.approve() if arguments is None else Decision.edit(arguments)


def _resume(entries: Sequence[agui.ResumeEntry]) -> tuple[str, dict[str, Decision]]:
    """The run a resume answers and its decisions by tool call id.

    Raises:
        BadRequest: an interrupt id this app did not make, entries naming
            different runs, or one interrupt answered twice.
    """
    runs: set[str] = set()
    decisions: dict[str, Decision] = {}
    for position, entry in enumerate(entries):
        where = f"resume[{position}]"
        ids = split_approval_id(entry.interrupt_id)
        if ids is None:
            raise BadRequest(
                400, f"{where}: no interrupt {entry.interrupt_id!r} on this thread"
            )
        run_id, call_id = ids
        if call_id in decisions:
            raise BadRequest(400, f"{where}: interrupt answered twice")
        runs.add(run_id)
        decisions[call_id] = _decision(entry, where)
    if len(runs) != 1:
        raise BadRequest(400, "a resume answers the interrupts of one run")
    return runs.pop(), decisions


@final
class _AguiApp:
    def __init__(
        self,
        agent: Agent,
        store: RunStore,
        heartbeat: float,
        authorize: Authorize | None,
        expose_errors: bool,
    ) -> None:
        self._agent = agent
        self._store = store
        self._heartbeat = heartbeat
        self._authorize = authorize
        self._expose_errors = expose_errors
        self._answers = Answers()

    async def run(self, request: Request) -> Response:
        """POST /: a ``RunAgentInput``; the run as AG-UI events."""
        try:
            body = await json_body(request, max_bytes=MAX_CONVERSATION_BYTES)
            try:
                given = agui.RunAgentInput.model_validate(body)
            except pydantic.ValidationError as exc:
                raise BadRequest(400, f"not an AG-UI RunAgentInput: {exc}") from None
            resume = _resume(given.resume) if given.resume else None
            refused = await allowed(
                self._authorize,
                request,
                "decide" if resume else "start",
                resume and resume[0],
                self._store,
                {_THREAD: given.thread_id},
            )
            if refused is not None:
                return refused
            messages = with_context(
                close_unanswered(conversation(given.messages)),
                [(entry.description, entry.value) for entry in given.context or ()],
            )
            if resume is None:
                return await self._start(given, messages, started_by(request))
            return await self._resumed(
                given, messages, *resume, owner=started_by(request)
            )
        except BadRequest as bad:
            return error(bad.status, bad.message)

    async def thread(self, request: Request) -> Response:
        """GET /{thread_id}/messages: the thread's waiting run, to rebuild a
        page from (a ``MESSAGES_SNAPSHOT`` with its ``interrupts``)."""
        thread_id = request.path_params["thread_id"]
        found = await waiting_thread(
            self._authorize, request, self._store, self._agent, {_THREAD: thread_id}
        )
        if isinstance(found, Response):
            return found
        run_id, messages = found
        return JSONResponse(thread_snapshot(messages, run_id), headers=_HEADERS)

    async def _start(
        self, given: agui.RunAgentInput, messages: list[Message], owner: str | None
    ) -> Response:
        # A user's thread: another user's run waiting on the same thread id is
        # neither told of nor in the way.
        thread = {_THREAD: given.thread_id, **owner_metadata(owner)}
        rows = await asyncio.to_thread(self._store.pending, metadata=thread)
        chain = build_chain(self._agent, messages)
        if moves_on(chain, rows):
            # A new message rejects the calls that wait, as chat products do.
            try:
                await settle_stored(self._store, rows, chain)
            except LangHooksError as exc:
                if exc.type != "conflict":  # pragma: no cover - a store failure
                    raise
                return self._refused(given, exc)
            work = fresh_run(chain, self._store, thread, abandon=True)
            return await self._stream(given, work, owner)
        calls = rows[0].calls if rows else chain.pending_tool_calls
        if calls:
            # Neither an answer nor a new message: the client chooses.
            return error(
                409,
                f"thread {given.thread_id!r} waits for answers to its interrupts, "
                f"tool call(s) {waiting_calls(calls)}: send them as resume, each "
                f'"resolved" with {{"approved": true}} to run it or '
                f'{{"approved": false, "reason": "..."}} to decide against it, '
                f'or "cancelled" to abandon it (the model reads the reason as the '
                f"tool's result), or send a new user message (it rejects them)",
            )
        work = fresh_run(chain, self._store, thread)
        return await self._stream(given, work, owner)

    async def _resumed(
        self,
        given: agui.RunAgentInput,
        messages: list[Message],
        run_id: str,
        decisions: dict[str, Decision],
        *,
        owner: str | None,
    ) -> Response:
        chain = build_chain(self._agent, messages)
        waiting = await asyncio.to_thread(
            self._store.pending, metadata={_THREAD: given.thread_id}
        )
        run = next((p for p in waiting if p.run_id == run_id), None)
        if run is None:
            exists = await known(self._store, run_id, chain)
            if not exists:
                return error(404, f"no interrupted run on thread {given.thread_id!r}")
            conflict = LangHooksError(
                "conflict", "these interrupts were answered already; nothing was run"
            )
            return self._refused(given, conflict)
        open_calls = {call.call_id for call in run.calls}
        unknown = sorted(set(decisions) - open_calls)
        if unknown:
            return error(422, f"tool call(s) {unknown} do not wait for an answer")
        missing = sorted(open_calls - set(decisions))
        if missing:
            return error(
                422, f"answer every open interrupt: tool call(s) {missing} wait too"
            )
        work = resumed_run(chain, self._store, run_id, decisions)
        return await self._stream(given, work, owner)

    def _refused(self, given: agui.RunAgentInput, exc: LangHooksError) -> Response:
        translator = AguiTranslator(
            thread_id=given.thread_id,
            run_id=given.run_id,
            expose_errors=self._expose_errors,
        )
        return _events_response(_once(translator.failed(exc)))

    async def _stream(
        self, given: agui.RunAgentInput, work: Work, owner: str | None
    ) -> Response:
        translator = AguiTranslator(
            thread_id=given.thread_id,
            run_id=given.run_id,
            expose_errors=self._expose_errors,
        )
        state = SharedState(given.state, forwarded_props=given.forwarded_props)
        live = LiveRun(shared_work(work, state))
        shared = StateTranslation(translator, state, agui_state_events)
        events = stream_events(live, shared, self._heartbeat)
        answer = self._answers.start((given.thread_id, owner), events)
        return _events_response(answer.follow(self._heartbeat))

    async def reconnect(self, request: Request) -> Response:
        """GET /{thread_id}/stream: the thread's latest run from its first event,
        then the rest as it comes; 204 when this process has none."""
        refused = await allowed(self._authorize, request, "read", None, self._store, {})
        if refused is not None:
            return refused
        key = (request.path_params["thread_id"], started_by(request))
        answer = self._answers.get(key)
        if answer is None:
            return Response(status_code=204)
        return _events_response(answer.follow(self._heartbeat))


async def _once(events: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any] | None]:
    for event in events:
        yield event


def _events_response(
    events: AsyncIterator[dict[str, Any] | None],
) -> StreamingResponse:
    async def lines() -> AsyncIterator[str]:
        async for event in events:
            if event is None:
                yield ": heartbeat\n\n"
            else:
                yield f"data: {json.dumps(event, separators=(',', ':'))}\n\n"

    return StreamingResponse(lines(), media_type="text/event-stream", headers=_HEADERS)


def create_agui_app(
    *,
    agent: Agent,
    store: RunStore | None = None,
    heartbeat: float = 15.0,
    authorize: Authorize | None = None,
    expose_errors: bool = False,
) -> Starlette:
    """An AG-UI server for an agent: ``POST /`` runs it and streams AG-UI events.

    The body is an AG-UI ``RunAgentInput`` (camelCase: ``threadId``, ``runId``,
    ``messages``, ``tools``, ``context``, ``state``, ``forwardedProps``,
    ``resume``); the answer is ``text/event-stream`` with one ``data:`` line per
    event (``agui_events`` says which). A tool call a review interrupts ends the
    request with an interrupt per waiting call; the client resumes with a
    request on the same thread whose ``resume`` answers every one of them: status
    "resolved" with the payload ``{"approved": true}`` (``"arguments"`` may
    change the call's arguments, ``"reason"`` explain a refusal), or status
    "cancelled". A repeated or concurrent resume gets ``RUN_ERROR`` with code
    "conflict" and runs nothing.
    Bad input gets a 4xx answer ``{"error": "..."}``: a malformed body (400), too
    large (413), not JSON (415), no waiting run on the thread (404), a new run on
    a thread that waits for answers (409), answers that do not match the waiting
    calls (422).

    The ``context`` entries reach the model as one system message before the
    run's user message; the ``state`` (with ``forwardedProps``) is the run's
    ``shared_state()``, whose changes are sent as ``STATE_DELTA``, then one
    ``STATE_SNAPSHOT`` before the run's end.

    The run works in a worker thread (``chain.run()``), so the agent's handlers
    and tools are synchronous ones.

    Args:
        agent: builds the chain for the conversation so far (model, tools,
            handlers and the messages, converted to langhooks ``Message`` values).
        store: where interrupted runs wait (any ``RunStore``: a shared one lets
            another worker take the answer); None keeps them in this process
            (``MemoryRunStore``).
        heartbeat: seconds between comment lines while a run is quiet, so that
            proxies keep the connection open.
        authorize: asked ``authorize(request, action, run_id)`` by ``POST /``
            once the body is read, before anything runs: ``"start"`` (run_id
            None) for a new run, ``"decide"`` with the run id for a ``resume``
            (sync or async; as in ``create_app``: False is 403, an
            ``HTTPException`` it raises is its answer). ``owner_only`` works:
            the run's owner is kept in the store's metadata as ``"owner"``.
            None serves only requests naming the app by ``localhost`` or an IP
            address. A POST from another origin is refused (403) before
            ``authorize`` is asked.
        expose_errors: a run that fails ends with ``RUN_ERROR`` whose ``code``
            is the error's type; its ``message`` says only that code and the
            run id, unless this is True (then it is the error's own message,
            which may hold server internals). The details are logged on the
            ``langhooks.integrations.frontends`` logger with the run id.

    Returns:
        The app (a ``Starlette``), to serve with uvicorn or mount in another app.

    Raises:
        TypeError: ``agent`` or ``authorize`` is not callable, ``heartbeat``
            is not a number, or ``expose_errors`` is not a bool.
        ValueError: ``heartbeat`` is not positive.
    """
    if not callable(agent):
        raise TypeError(
            f"agent must be a function from messages to an LLMChain, got {agent!r}"
        )
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, int | float):
        raise TypeError(f"heartbeat must be a number of seconds, got {heartbeat!r}")
    if not heartbeat > 0:
        raise ValueError(f"heartbeat must be positive, got {heartbeat!r}")
    check_authorize(authorize)
    if not isinstance(expose_errors, bool):
        raise TypeError(f"expose_errors must be a bool, got {expose_errors!r}")
    app = _AguiApp(
        agent,
        MemoryRunStore() if store is None else store,
        heartbeat,
        authorize,
        expose_errors,
    )
    return Starlette(
        routes=[
            Route("/", app.run, methods=["POST"]),
            Route("/{thread_id}/messages", app.thread, methods=["GET"]),
            Route("/{thread_id}/stream", app.reconnect, methods=["GET"]),
        ]
    )
