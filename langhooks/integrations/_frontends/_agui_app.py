"""The AG-UI app behind ``langhooks.integrations.agui``: one ``POST /`` that takes a
``RunAgentInput`` and streams the run as AG-UI events, with interrupts for human
approval and their resume, on any worker sharing the store."""

from __future__ import annotations

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
from ...chain import Decision, LLMChain
from .._auth import (
    Action,
    Authorize,
    check_authorize,
    owner_metadata,
    started_by,
)
from .._web._limits import BadRequest, json_body
from ._agui_events import AguiTranslator, refusal_event, thread_snapshot
from ._app import (
    Agent,
    Answers,
    LiveRun,
    allowed,
    build_chain,
    close_unanswered,
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
    client_metadata,
    posted_answers,
    with_client_tools,
    with_stored_tools,
)
from ._records import MESSAGE_ID, RESULT_IDS, approval_id
from ._runner import Runs, Work, runs_of
from ._shared_state import (
    SharedState,
    StateTranslation,
    agui_state_events,
    shared_work,
    with_context,
)

if TYPE_CHECKING:
    from ..._persist._pending import PendingRun
    from ..._persist._stores import AsyncRunStore, RunStore

__all__ = ["MAX_CONVERSATION_BYTES", "create_agui_app"]

#: A posted conversation larger than this is refused unread (413).
MAX_CONVERSATION_BYTES: Final = 512 * 1024
# The store metadata key that ties an interrupted run to its AG-UI thread.
_THREAD: Final = "agui_thread"
# The key of the ``runId`` of the request that started the run: its messages'
# and interrupts' ids are made of it, and a resume finds the run by them.
_RUN: Final = "agui_run"
# What a thread's waiting calls wait for, said in a refusal (``waits_for``).
_WAITING: Final = Waiting(
    decide=(
        "answers to its interrupts, tool call(s) {calls}: send them as resume, "
        'each "resolved" with {{"approved": true}} to run it or {{"approved": '
        'false, "reason": "..."}} to decide against it, or "cancelled" to '
        "abandon it (the model reads the reason as the tool's result)"
    ),
    run="the results of the client tool call(s) {calls} the client runs: post "
    "each as a tool message",
    new="send a new user message (it rejects them)",
)
_HEADERS: Final = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def _refusal(status: int, message: str) -> JSONResponse:
    """A request refused before anything ran: ``status`` and a ``RUN_ERROR``
    event as the body (``refusal_event``)."""
    return JSONResponse(refusal_event(status, message), status_code=status)


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


def _answers(entries: Sequence[agui.ResumeEntry]) -> dict[str, Decision]:
    """A resume's decisions by interrupt id.

    Raises:
        BadRequest: a malformed payload, or one interrupt answered twice.
    """
    decisions: dict[str, Decision] = {}
    for position, entry in enumerate(entries):
        where = f"resume[{position}]"
        if entry.interrupt_id in decisions:
            raise BadRequest(400, f"{where}: interrupt answered twice")
        decisions[entry.interrupt_id] = _decision(entry, where)
    return decisions


def _named(run: PendingRun) -> str:
    """What the ids of a stored run's messages and interrupts are made of: the
    ``runId`` of the request that started it."""
    named = run.metadata.get(_RUN)
    return named if isinstance(named, str) else run.run_id


def _interrupts(run: PendingRun) -> dict[str, str]:
    """The ids of a stored run's interrupts, each with its tool call's id."""
    return {approval_id(_named(run), call.call_id): call.call_id for call in run.calls}


@final
class _AguiApp:
    def __init__(
        self,
        agent: Agent,
        runs: Runs,
        heartbeat: float,
        authorize: Authorize | None,
        expose_errors: bool,
    ) -> None:
        self._agent = agent
        self._runs = runs
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
            if not given.run_id:
                raise BadRequest(400, "runId must not be empty")
            answers = _answers(given.resume) if given.resume else None
            if answers is None:
                waiting = None
                refused = await self._allowed(request, given, "start", None)
            else:
                waiting, refused = await self._decider(request, given, answers)
            if refused is not None:
                return refused
            messages = with_context(
                close_unanswered(conversation(given.messages)),
                [(entry.description, entry.value) for entry in given.context or ()],
            )
            if answers is None:
                return await self._start(given, messages, started_by(request))
            return await self._resumed(
                given, messages, waiting, answers, owner=started_by(request)
            )
        except BadRequest as bad:
            return _refusal(bad.status, bad.message)

    async def thread(self, request: Request) -> Response:
        """GET /{thread_id}/messages: the thread's waiting run, to rebuild a
        page from (a ``MESSAGES_SNAPSHOT`` with its ``interrupts``)."""
        thread_id = request.path_params["thread_id"]
        found = await waiting_thread(
            self._authorize, request, self._runs, self._agent, {_THREAD: thread_id}
        )
        if isinstance(found, Response):
            return found
        run, messages = found
        return JSONResponse(thread_snapshot(messages, _named(run)), headers=_HEADERS)

    async def _allowed(
        self,
        request: Request,
        given: agui.RunAgentInput,
        action: Action,
        run_id: str | None,
    ) -> Response | None:
        where = {_THREAD: given.thread_id}
        return await allowed(
            self._authorize, request, action, run_id, self._runs, where
        )

    async def _decider(
        self,
        request: Request,
        given: agui.RunAgentInput,
        answers: Mapping[str, Decision],
    ) -> tuple[PendingRun | None, Response | None]:
        """The run waiting on the thread whose interrupts ``answers`` answer
        and that ``authorize`` lets the request decide, or the refusal. Two
        users' runs may wait under one thread id with the same interrupt ids
        (the same ``runId``): the one the request may decide is taken."""
        rows = await self._runs.pending({_THREAD: given.thread_id})
        answered = [row for row in rows if set(_interrupts(row)) & set(answers)]
        refused = None
        for run in answered:
            refused = await self._allowed(request, given, "decide", run.run_id)
            if refused is None:
                return run, None
        if refused is None:
            # No run waits for them: asked with the interrupt id, which names
            # no run (owner_only refuses it, as an unknown run's id).
            refused = await self._allowed(request, given, "decide", next(iter(answers)))
        return None, refused

    async def _start(
        self, given: agui.RunAgentInput, messages: list[Message], owner: str | None
    ) -> Response:
        # A user's thread: another user's run waiting on the same thread id is
        # neither told of nor in the way.
        thread = {_THREAD: given.thread_id, **owner_metadata(owner)}
        rows = await self._runs.pending(thread)
        chain = self._chain(given, messages, rows)
        if moves_on(chain, rows):
            # A new message rejects the calls that wait, as chat products do.
            try:
                await settle_stored(self._runs, rows, chain)
            except LangHooksError as exc:
                if exc.type != "conflict":  # pragma: no cover - a store failure
                    raise
                return self._refused(given, exc)
            started = {**thread, _RUN: given.run_id, **client_metadata(chain)}
            work = self._runs.fresh(chain, started, abandon=True)
            return await self._stream(given, work, owner)
        # Not a new message: the client's results of the calls it ran resume
        # the waiting run, or the request is refused.
        where = f"thread {given.thread_id!r}"
        settled = await posted_answers(self._runs, rows, chain, where, _WAITING)
        if isinstance(settled, Resume):
            work = self._runs.resumed(chain, settled.run_id, settled.decisions)
            named = _named(rows[0])
            return await self._stream(
                given, work, owner, named=named, posted=settled.posted
            )
        if settled is not None:
            if settled.conflict:
                conflict = LangHooksError("conflict", settled.message)
                return self._refused(given, conflict)
            return _refusal(409, settled.message)
        started = {**thread, _RUN: given.run_id, **client_metadata(chain)}
        work = self._runs.fresh(chain, started)
        return await self._stream(given, work, owner)

    async def _resumed(
        self,
        given: agui.RunAgentInput,
        messages: list[Message],
        run: PendingRun | None,
        answers: Mapping[str, Decision],
        *,
        owner: str | None,
    ) -> Response:
        if run is None:
            # Answered already (or expired, or never made here): the store
            # finds a run by its waiting interrupts only.
            conflict = LangHooksError(
                "conflict",
                f"no run on thread {given.thread_id!r} waits for these "
                f"interrupts: answered already, expired or never made; "
                f"nothing was run",
            )
            return self._refused(given, conflict)
        chain = self._chain(given, messages, [run])
        found = await client_answers(self._runs, run, chain)
        if found is None:
            return self._refused(given, LangHooksError("conflict", ANSWERED))
        client, results = found
        # The calls the client runs are answered by their results, not by
        # interrupts (it was never sent interrupts for them).
        interrupts = {
            key: call_id
            for key, call_id in _interrupts(run).items()
            if call_id not in client
        }
        unknown = sorted(set(answers) - set(interrupts))
        if unknown:
            return _refusal(422, f"interrupt(s) {unknown} do not wait for an answer")
        missing = sorted(interrupts.keys() - answers.keys())
        if missing:
            return _refusal(
                422, f"answer every open interrupt: interrupt(s) {missing} wait too"
            )
        unanswered = sorted(client - results.keys())
        if unanswered:
            return _refusal(
                422,
                f"post the result of every client tool call with the resume: "
                f"tool call(s) {unanswered} wait for theirs",
            )
        decisions = {interrupts[key]: decision for key, decision in answers.items()}
        work = self._runs.resumed(chain, run.run_id, {**decisions, **results})
        return await self._stream(
            given, work, owner, named=_named(run), posted=frozenset(results)
        )

    def _chain(
        self,
        given: agui.RunAgentInput,
        messages: list[Message],
        rows: Sequence[PendingRun] = (),
    ) -> LLMChain:
        """The agent's chain for ``messages``, with the request's ``tools`` as
        client tools (``with_client_tools``), and those the stored ``rows``
        were started with that this request does not declare.

        Raises:
            BadRequest: a tool the frontend declared is not one langhooks takes.
        """
        chain = build_chain(self._agent, messages)
        declared = [(t.name, t.description, t.parameters) for t in given.tools or ()]
        try:
            chain = with_client_tools(chain, declared)
        except (TypeError, ValueError) as bad:
            raise BadRequest(400, f"tools: {bad}") from None
        return with_stored_tools(chain, rows)

    def _refused(self, given: agui.RunAgentInput, exc: LangHooksError) -> Response:
        translator = AguiTranslator(
            thread_id=given.thread_id,
            run_id=given.run_id,
            expose_errors=self._expose_errors,
        )
        return _events_response(_once(translator.failed(exc)))

    async def _stream(
        self,
        given: agui.RunAgentInput,
        work: Work,
        owner: str | None,
        *,
        named: str | None = None,
        posted: frozenset[str] = frozenset(),
    ) -> Response:
        translator = AguiTranslator(
            thread_id=given.thread_id,
            run_id=given.run_id,
            named=given.run_id if named is None else named,
            expose_errors=self._expose_errors,
            posted=posted,
        )
        state = SharedState(given.state, forwarded_props=given.forwarded_props)
        live = LiveRun(shared_work(work, state))
        shared = StateTranslation(translator, state, agui_state_events)
        events = stream_events(live, shared, self._heartbeat)
        answer = self._answers.start((given.thread_id, owner), events, live)
        leave = self._runs.cancel_on_disconnect
        return _events_response(answer.follow(self._heartbeat, cancel_on_leave=leave))

    async def reconnect(self, request: Request) -> Response:
        """GET /{thread_id}/stream: the thread's latest run from its first event,
        then the rest as it comes; 204 when this process has none."""
        refused = await allowed(self._authorize, request, "read", None, self._runs, {})
        if refused is not None:
            return refused
        key = (request.path_params["thread_id"], started_by(request))
        answer = self._answers.get(key)
        if answer is None:
            return Response(status_code=204)
        return _events_response(answer.follow(self._heartbeat))

    async def cancel(self, request: Request) -> Response:
        """POST /{thread_id}/cancel: cancel the thread's run going on here."""
        thread_id = request.path_params["thread_id"]
        where = {_THREAD: thread_id}
        refused = await allowed(
            self._authorize, request, "start", None, self._runs, where
        )
        if refused is not None:
            return refused
        return self._answers.cancel((thread_id, started_by(request)))


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
    store: RunStore | AsyncRunStore | None = None,
    heartbeat: float = 15.0,
    authorize: Authorize | None = None,
    expose_errors: bool = False,
    run_async: bool | None = None,
    cancel_on_disconnect: bool = False,
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

    A chain with an async handler (``AsyncChainCallbackHandler``) or an async
    tool runs with ``arun()`` on the app's event loop; any other with ``run()``
    in a worker thread (``run_async`` decides otherwise). ``POST
    /{thread_id}/cancel`` cancels the thread's run going on in this process
    when it runs on the loop (202; the run ends with ``RUN_ERROR`` code
    "cancelled"; 409 for a run in a thread, 200 ``{"cancelled": false}`` when none goes
    on); a client
    that goes away cancels nothing (unless ``cancel_on_disconnect``): the run
    goes on, for ``GET /{thread_id}/stream``.

    Args:
        agent: builds the chain for the conversation so far (model, tools,
            handlers and the messages, converted to langhooks ``Message`` values).
        store: where interrupted runs wait (any ``RunStore`` or
            ``AsyncRunStore``: a shared one lets another worker take the
            answer); None keeps them in this process (``MemoryRunStore``). A
            chain that runs on the loop is resumed through an ``AsyncRunStore``
            or a ``MemoryRunStore``; an ``AsyncRunStore`` resumes every chain
            with ``arun()``.
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
        TypeError: ``agent`` or ``authorize`` is not callable, ``heartbeat``
            is not a number, ``expose_errors`` or ``cancel_on_disconnect`` is
            not a bool, or ``run_async`` is not a bool or None.
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
        runs_of(store, run_async, cancel_on_disconnect),
        heartbeat,
        authorize,
        expose_errors,
    )
    return Starlette(
        routes=[
            Route("/", app.run, methods=["POST"]),
            Route("/{thread_id}/messages", app.thread, methods=["GET"]),
            Route("/{thread_id}/stream", app.reconnect, methods=["GET"]),
            Route("/{thread_id}/cancel", app.cancel, methods=["POST"]),
        ]
    )
