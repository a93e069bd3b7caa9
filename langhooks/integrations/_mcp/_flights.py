"""One call to an MCP server's tool, from its request to its result, and what the
server says to the client meanwhile (progress, questions, log messages).

A server asks a question (an elicitation) mid-call on a 2025-11-25 session, or by
answering ``InputRequiredResult`` on a 2026-07-28 one (the request is then sent
again with the answers). Either way the question reaches this call's ``ask`` and
becomes an interrupt of the run: the tool invocation returns an interrupted
``ToolResult`` while the call stays open, parked under its tool call's id, until
the human's answer comes with the resume (``answer_elicitation``) or
``elicitation_timeout`` passes (the request is then cancelled). A session lives in
one process: a resume in another process, or after the timeout, sends the request
again and answers the same question (same message and schema) with the human's
answer, without asking again.

Everything here runs on the session's event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, final

import attrs
from mcp import ClientSession, MCPError
from mcp import types as mcp_types
from mcp.client.session import ClientRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp.types import jsonrpc

from ..._core._messages import ToolCall, ToolResult
from ._results import classified, tool_result

__all__ = [
    "ELICITATION",
    "ELICITATION_KEY",
    "Answer",
    "Report",
    "elicitation_callback",
    "invoke",
    "logging_callback",
]

#: The key of a tool call's arguments that carries the human's answers to its
#: server's questions (set by ``answer_elicitation``, never sent to the server).
ELICITATION_KEY: Final = "_mcp_elicitation"
#: ``interrupt_data["kind"]`` of an interrupt that waits for such an answer.
ELICITATION: Final = "mcp_elicitation"

# How many times a request is sent again with the input a server asked for, and
# how long to wait before asking again when it asked for none (still working).
_MAX_ROUNDS: Final = 10
_POLL: Final = 0.05

#: Where a call's progress goes: ``(progress, total, message)``.
Report: TypeAlias = Callable[[float, float | None, str | None], None]

Action: TypeAlias = Literal["accept", "decline", "cancel"]

_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


@final
@attrs.frozen
class Answer:
    """A human's answer to one question of a server."""

    message: str
    requested_schema: Mapping[str, Any]
    action: Action
    content: Mapping[str, Any] | None

    def asks(self, question: mcp_types.ElicitRequestFormParams) -> bool:
        """Whether this answers ``question`` (the same message and schema)."""
        return (
            question.message == self.message
            and question.requested_schema == self.requested_schema
        )

    def result(self) -> mcp_types.ElicitResult:
        """The answer as the client's reply to the server."""
        content = None if self.content is None else dict(self.content)
        return mcp_types.ElicitResult(action=self.action, content=content)

    def as_data(self) -> dict[str, Any]:
        """The answer as JSON data (in a decision's arguments, in interrupt data)."""
        return {
            "message": self.message,
            "requested_schema": dict(self.requested_schema),
            "action": self.action,
            "content": None if self.content is None else dict(self.content),
        }

    @classmethod
    def from_data(cls, data: Any) -> Answer:
        """An answer from ``as_data``'s form.

        Raises:
            TypeError: ``data`` is not such an answer.
        """
        try:
            action = data["action"]
            if action not in ("accept", "decline", "cancel"):
                raise TypeError(f"action {action!r}")
            return cls(
                message=str(data["message"]),
                requested_schema=dict(data["requested_schema"]),
                action=action,
                content=None if data["content"] is None else dict(data["content"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise TypeError(
                f"{ELICITATION_KEY!r} must hold the answers answer_elicitation "
                f"gives, got {data!r} ({error})"
            ) from error


# A question reached the tool invocation, or the call ended.
_Question: TypeAlias = tuple[Literal["question"], mcp_types.ElicitRequestFormParams]
_Event: TypeAlias = _Question | tuple[Literal["done"], None]


def _dropped(progress: float, total: float | None, message: str | None) -> None:
    """Progress while a question waits for a human: no invocation listens."""


@final
class _Flight:
    """One call to a server's tool, sent when made; it outlives a tool invocation
    while it waits for a human's answer."""

    def __init__(
        self,
        session: ClientSession,
        key: _Key,
        request: tuple[str, dict[str, Any]],
        answers: list[Answer],
        timeout: float,
    ) -> None:
        self.session: Final = session
        self.key: Final = key
        self.prepared = answers  # answers given before the server asked
        self.given: list[Answer] = list(answers)  # every answer of this call
        self.timeout: Final = timeout
        self.events: Final[asyncio.Queue[_Event]] = asyncio.Queue()
        self.pending: asyncio.Future[mcp_types.ElicitResult] | None = None
        self.report: Report = _dropped

        async def on_progress(
            progress: float, total: float | None, message: str | None
        ) -> None:
            self.report(progress, total, message)

        self.task: Final = asyncio.ensure_future(self._rounds(*request, on_progress))
        self.task.add_done_callback(lambda _: self.events.put_nowait(("done", None)))

    async def _rounds(
        self, name: str, arguments: dict[str, Any], on_progress: ProgressFnT
    ) -> mcp_types.CallToolResult:
        """The request, and on a 2026-07-28 session its retries: a server that
        needs input returns ``InputRequiredResult``; each of its questions goes
        through the session's callbacks (``elicitation_callback``: this call's
        ``ask``) and the request is sent again with the answers."""
        responses: mcp_types.InputResponses | None = None
        state: str | None = None
        for _ in range(_MAX_ROUNDS):
            result = await self.session.call_tool(
                name,
                arguments,
                progress_callback=on_progress,
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
            )
            if isinstance(result, mcp_types.CallToolResult):
                return result
            if not result.input_requests:  # the server is still working
                await asyncio.sleep(_POLL)
            responses, state = {}, result.request_state
            for key, needed in (result.input_requests or {}).items():
                context = ClientRequestContext(session=self.session, request_id=key)
                given = await self.session.dispatch_input_request(context, needed)
                if isinstance(given, mcp_types.ErrorData):
                    raise MCPError.from_error_data(given)
                responses[key] = given
        raise MCPError(
            jsonrpc.INTERNAL_ERROR,
            f"the server still needed input after {_MAX_ROUNDS} rounds",
        )

    async def ask(
        self, question: mcp_types.ElicitRequestFormParams
    ) -> mcp_types.ElicitResult:
        """The answer to the server's ``question``: a prepared one, else the
        human's (the invocation returns an interrupt meanwhile)."""
        for answer in self.prepared:
            if answer.asks(question):
                self.prepared.remove(answer)
                return answer.result()
        self.pending = asyncio.get_running_loop().create_future()
        self.events.put_nowait(("question", question))
        try:
            return await asyncio.wait_for(asyncio.shield(self.pending), self.timeout)
        except TimeoutError:
            # Nobody answered in time: give up the question and the call.
            _park(self.session).pop(self.key, None)
            _forget(self)
            self.task.cancel()
            return mcp_types.ElicitResult(action="cancel")
        finally:
            self.pending = None

    def answer(self, answer: Answer | None) -> None:
        """Resume with the human's ``answer`` (None: the question is cancelled).

        Only a flight waiting for an answer is parked, so one is pending.
        """
        assert self.pending is not None
        if answer is None:
            self.pending.set_result(mcp_types.ElicitResult(action="cancel"))
        else:
            self.given.append(answer)
            self.pending.set_result(answer.result())

    def waiting(self) -> bool:
        """Whether the request is open and not waiting for a human."""
        return not self.task.done() and self.pending is None


# The calls running on each session, and those parked by call id.
_RUNNING: Final[weakref.WeakKeyDictionary[ClientSession, list[_Flight]]] = (
    weakref.WeakKeyDictionary()
)
# A parked call's key: its run's id (kept across a resume) and its tool call's id.
_Key: TypeAlias = tuple[str | None, str]
_PARKED: Final[weakref.WeakKeyDictionary[ClientSession, dict[_Key, _Flight]]] = (
    weakref.WeakKeyDictionary()
)


def _park(session: ClientSession) -> dict[_Key, _Flight]:
    return _PARKED.setdefault(session, {})


def _answers(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], list[Answer]]:
    """The arguments for the server, and the human's answers they carried."""
    given = arguments.get(ELICITATION_KEY)
    rest = {key: value for key, value in arguments.items() if key != ELICITATION_KEY}
    if given is None:
        return rest, []
    if isinstance(given, str | bytes) or not isinstance(given, Sequence):
        raise TypeError(
            f"{ELICITATION_KEY!r} must be the list answer_elicitation gives, "
            f"got {given!r}"
        )
    return rest, [Answer.from_data(item) for item in given]


async def invoke(
    session: ClientSession,
    server_tool: str,
    call: ToolCall,
    run_id: str | None,
    report: Report,
    timeout: float,
) -> ToolResult:
    """One invocation of a tool made from the server's ``server_tool``, for
    ``call`` of the run ``run_id``.

    Returns:
        The server's result; or, when the server asks a question, an interrupted
        result whose ``interrupt_data`` holds the question.

    Raises:
        LangHooksError: the call failed (a classified error, never the SDK's).
    """
    arguments, answers = _answers(call.arguments)
    key = (run_id, call.call_id)
    flight = _park(session).pop(key, None)
    if flight is not None:  # resuming a call that waits for this answer
        flight.answer(answers[-1] if answers else None)
    else:
        request = (server_tool, arguments)
        flight = _Flight(session, key, request, answers, timeout)
        _RUNNING.setdefault(session, []).append(flight)
    flight.report = report
    try:
        kind, question = await flight.events.get()
    except BaseException:  # the run was cancelled: so is the request
        _forget(flight)
        flight.task.cancel()
        raise
    finally:
        flight.report = _dropped
    if kind == "question":
        assert question is not None
        _park(session)[key] = flight
        return _interrupted(call, server_tool, question, flight.given)
    _forget(flight)
    try:
        result = flight.task.result()
    except Exception as error:
        raise classified(error, server_tool) from error
    return tool_result(call, result)


def _forget(flight: _Flight) -> None:
    """The call's request ended (or was given up): it can ask no more."""
    _RUNNING[flight.session].remove(flight)


def _interrupted(
    call: ToolCall,
    server_tool: str,
    question: mcp_types.ElicitRequestFormParams,
    given: Sequence[Answer],
) -> ToolResult:
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=f"The tool asks the user: {question.message}",
        display_text=question.message,
        is_interrupt=True,
        interrupt_data={
            "kind": ELICITATION,
            "server_tool": server_tool,
            "message": question.message,
            "requested_schema": json.loads(json.dumps(question.requested_schema)),
            "answers": [answer.as_data() for answer in given],
        },
    )


async def elicitation_callback(
    context: ClientRequestContext, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    """The ``elicitation_callback`` to build a ``ClientSession`` with: a server's
    question during a call of a tool from ``mcp_tools`` interrupts the run.

    Pass it as ``ClientSession(read, write, elicitation_callback=...)``; without
    it the session tells servers it cannot answer questions.

    Returns:
        The human's answer; an error for a URL-mode question, or for a question
        that no single running call can have asked.
    """
    if not isinstance(params, mcp_types.ElicitRequestFormParams):
        return mcp_types.ErrorData(
            code=jsonrpc.INVALID_REQUEST,
            message="langhooks answers form elicitations only, not URL mode",
        )
    running = [f for f in _RUNNING.get(context.session, []) if f.waiting()]
    if len(running) != 1:
        return mcp_types.ErrorData(
            code=jsonrpc.INVALID_REQUEST,
            message=(
                f"{len(running)} langhooks tool calls are running on this session "
                "and MCP does not say which one asks: a question can be answered "
                "only while one call runs"
            ),
        )
    return await running[0].ask(params)


async def logging_callback(params: mcp_types.LoggingMessageNotificationParams) -> None:
    """The ``logging_callback`` to build a ``ClientSession`` with: each log
    message of the server goes to Python ``logging``.

    The logger is ``langhooks.mcp`` (``langhooks.mcp.<name>`` for a named server
    logger), the level the server's (notice as INFO, alert and emergency as
    CRITICAL), the message the data (JSON unless a str). MCP does not say which
    call a log message belongs to, so it is no ``on_tool_progress``.
    """
    name = "langhooks.mcp" if not params.logger else f"langhooks.mcp.{params.logger}"
    data = params.data
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    logging.getLogger(name).log(
        _LEVELS.get(params.level, logging.INFO),
        "%s",
        text,
        extra={"mcp_level": params.level},
    )
