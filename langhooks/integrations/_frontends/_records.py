"""What a chain run's event records say, as the steps a chat frontend shows.

``RunReader`` reads event records one at a time (recorded or live) and turns them
into typed steps: a model call starting, thinking and text deltas, tool-call
fragments, a finished answer, tool outcomes, an interrupt, the run's end. The AG-UI
and UI-message translations are written over these steps, so both protocols read a
run the same way and neither looks at record payloads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, final

import attrs

from ..._core._messages import LangHooksError, Message, ToolCall, ToolResult
from ..._persist import _codec
from ..._persist._records import EventRecord

__all__ = [
    "CLIENT_TOOL",
    "MESSAGE_ID",
    "RESULT_IDS",
    "ModelCallEnded",
    "ModelCallFailed",
    "ModelCallStarted",
    "RunEnded",
    "RunFailed",
    "RunReader",
    "RunStarted",
    "Step",
    "TextDelta",
    "ThinkingDelta",
    "ToolFragment",
    "ToolOutcome",
    "ToolProgressed",
    "ToolsInterrupted",
    "approval_id",
    "awaits_client",
    "numbered",
    "result_id",
    "shown_error",
    "split_approval_id",
    "tool_result_text",
    "waiting_results",
]


@final
@attrs.frozen
class RunStarted:
    """The first record of a run (or of its resumed part) was read."""

    run_id: str


@final
@attrs.frozen
class ModelCallStarted:
    """A model call began; its answer will be the message ``message_id``."""

    message_id: str


@final
@attrs.frozen
class ThinkingDelta:
    """Streamed thinking of the current answer."""

    text: str


@final
@attrs.frozen
class TextDelta:
    """Streamed text of the current answer."""

    text: str


@final
@attrs.frozen
class ToolFragment:
    """A streamed piece of the tool call at ``index`` (id and name may come later)."""

    index: int
    call_id: str | None
    name: str | None
    arguments: str


@final
@attrs.frozen
class ModelCallEnded:
    """The current answer is complete; ``streamed`` is False when nothing of it
    was streamed (a model that answers whole), so a translation sends it whole."""

    message: Message
    streamed: bool


@final
@attrs.frozen
class ModelCallFailed:
    """The current model call failed (a retry or a fallback may follow)."""


@final
@attrs.frozen
class ToolOutcome:
    """A tool call was answered: ``output`` (it ran), ``error`` (it failed) or
    ``denied`` (a review or a human rejected it; the model gets ``text``)."""

    call_id: str
    name: str
    text: str
    kind: Literal["output", "error", "denied"]
    message_id: str


@final
@attrs.frozen
class ToolProgressed:
    """A running tool call reported how far it has got (``on_tool_progress``)."""

    call_id: str
    name: str
    progress: float
    total: float | None
    message: str | None


@final
@attrs.frozen
class ToolsInterrupted:
    """Calls that wait: those a review sent to a human, each with the review's
    message, and those the frontend runs (``for_client``: calls of a
    ``client_tool`` that review allowed)."""

    calls: tuple[tuple[ToolCall, str], ...]
    for_client: tuple[ToolCall, ...] = ()


@final
@attrs.frozen
class RunEnded:
    """The run stopped for now: it answered (``ok``), waits for a human
    (``interrupted``) or its answer was cancelled (``cancelled``).

    ``messages`` is the conversation as the run left it, with the id each
    message has in this translation (``RunReader.message_id``).
    """

    outcome: Literal["ok", "interrupted", "cancelled"]
    messages: tuple[tuple[str, Message], ...]
    finish_reason: str | None


@final
@attrs.frozen
class RunFailed:
    """The run gave up with ``error``."""

    error: LangHooksError


Step: TypeAlias = (
    RunStarted
    | ModelCallStarted
    | ThinkingDelta
    | TextDelta
    | ToolFragment
    | ModelCallEnded
    | ModelCallFailed
    | ToolOutcome
    | ToolProgressed
    | ToolsInterrupted
    | RunEnded
    | RunFailed
)

#: ``Message.metadata`` key: the id a frontend gave the message.
MESSAGE_ID: Final = "message_id"
#: ``Message.metadata`` key of a tool message: the ids a frontend gave its results,
#: by tool call id.
RESULT_IDS: Final = "result_ids"

#: ``interrupt_data["kind"]`` of a call that waits for the frontend to run it
#: (a ``client_tool``'s call), not for a person's decision.
CLIENT_TOOL: Final = "client_tool"

# The one separator of an approval id: a run id never contains it.
_SEPARATOR: Final = "/"


def approval_id(run_id: str, call_id: str) -> str:
    """The id under which a frontend answers the interrupted call ``call_id``:
    it names the run, so any worker finds the run in the store."""
    return f"{run_id}{_SEPARATOR}{call_id}"


def split_approval_id(value: str) -> tuple[str, str] | None:
    """``(run_id, call_id)`` of an ``approval_id``, or None for anything else."""
    run_id, separator, call_id = value.partition(_SEPARATOR)
    if not separator or not run_id or not call_id:
        return None
    return run_id, call_id


def numbered(
    messages: Sequence[Message], run_id: str
) -> tuple[tuple[str, Message], ...]:
    """A stored run's conversation with the ids its translation gave each
    message (``RunReader.message_id``): the frontend's own, else the run id
    and the position."""
    return tuple(
        (
            given
            if isinstance(given := m.metadata.get(MESSAGE_ID), str)
            else f"{run_id}:{position}",
            m,
        )
        for position, m in enumerate(messages)
    )


def result_id(messages: Sequence[tuple[str, Message]], call_id: str) -> str:
    """The id of the result of ``call_id`` in a numbered conversation: the one
    its frontend gave it (``metadata["result_ids"]`` of its tool message), else
    the id of the answer that made the call, ``/`` and the call id."""
    answer = None
    for message_id, message in messages:
        if any(call.call_id == call_id for call in message.tool_calls):
            answer = message_id
        given = message.metadata.get(RESULT_IDS)
        if isinstance(given, Mapping) and isinstance(given.get(call_id), str):
            return str(given[call_id])
    return f"{answer or 'call'}/{call_id}"


def shown_error(
    exc: BaseException, run_id: str | None, *, expose: bool
) -> tuple[str, str]:
    """The code and message a frontend is told of a run that failed with
    ``exc``: the error's type as code ("internal_error" for an exception that
    is not a ``LangHooksError``) and, unless ``expose``, a message that names
    only the code and the run id (the details may hold server internals: a
    repr, an address; the app logs them under the run id). A "conflict" (an
    answer that came twice) is said as it is: its message is langhooks' own."""
    code: str
    if isinstance(exc, LangHooksError):
        code, message = exc.type, exc.message
    else:
        code, message = "internal_error", f"the run failed: {type(exc).__name__}"
    if expose or code == "conflict":
        return code, message
    under = "" if run_id is None else f" under run id {run_id!r}"
    return code, f"the run failed ({code}); the server's log has the details{under}"


def waiting_results(messages: Sequence[Message]) -> list[ToolResult]:
    """The stand-in results of the calls of ``messages`` that wait for a human
    (a settled call's stand-in is replaced by its result)."""
    return [
        result
        for message in messages
        if message.role == "tool"
        for result in message.tool_results
        if result.is_interrupt
    ]


def awaits_client(result: ToolResult) -> bool:
    """Whether ``result`` is the stand-in of a call that waits for the frontend
    to run it (``CLIENT_TOOL``), not for a person's decision."""
    data = result.interrupt_data
    return result.is_interrupt and data is not None and data.get("kind") == CLIENT_TOOL


def tool_result_text(result: ToolResult) -> str:
    """What the model reads of ``result``: its text parts, joined."""
    return "".join(part.content for part in result.content if part.type == "text")


@final
class RunReader:
    """Turns a run's records into ``Step``s, one record at a time.

    Records of streams outside a chain run (``on_partial_response`` and the other
    streaming events) and events no frontend shows are skipped. After a
    ``RunEnded`` or ``RunFailed`` the reader starts over at the next
    ``on_run_start`` (a resumed part of the same run).

    Args:
        named: what the ids it makes (of messages, of approvals) are made of: a
            frontend's own id for the run (AG-UI's ``runId``); None: the run's
            langhooks id.
        posted: the calls whose results the frontend posted itself (calls it
            ran): their outcomes make no step, the frontend has them.
    """

    def __init__(
        self, *, named: str | None = None, posted: frozenset[str] = frozenset()
    ) -> None:
        self._named = named
        self._posted = posted
        self._messages: list[Message] = []
        self._ids: dict[int, str] = {}
        self._attempts: dict[int, int] = {}
        self._run_id = "run"
        self._started: str | None = None
        self._active = False
        self._streamed = False

    @property
    def run_id(self) -> str:
        """The id the ids of the run being read are made of: ``named``, else
        its records' ``run_id``."""
        return self._run_id

    @property
    def started(self) -> str | None:
        """The id of the run read so far, or None before its ``on_run_start``."""
        return self._started

    def message_id(self, position: int) -> str:
        """The id of the message at ``position`` of the run's conversation: the
        one its frontend gave it (``metadata["message_id"]``), else one made of
        the run id and the position (with the attempt, for a retried call)."""
        given = self._messages[position].metadata.get(MESSAGE_ID)
        if isinstance(given, str):
            return given
        return self._ids.get(position, f"{self._run_id}:{position}")

    def read(self, record: EventRecord) -> Iterator[Step]:
        """The steps ``record`` makes (often none)."""
        chain = record.payload.get("chain")
        if isinstance(chain, Mapping):
            self._follow(chain)
        handler = getattr(self, f"_{record.event}", None)
        if handler is None or (not self._active and record.event != "on_run_start"):
            return
        yield from handler(record)

    def _follow(self, chain: Mapping[str, Any]) -> None:
        if "messages" in chain:
            del self._messages[chain["messages_from"] :]
            self._messages.extend(
                _codec.message_from_data(data) for data in chain["messages"]
            )

    # --- one method per event the frontends show -----------------------------------

    def _on_run_start(self, record: EventRecord) -> Iterator[Step]:
        if self._active:
            return
        self._active = True
        self._run_id = self._named or record.run_id or "run"
        self._started = record.run_id
        yield RunStarted(self._run_id)

    def _on_llm_call_start(self, record: EventRecord) -> Iterator[Step]:
        position = len(self._messages)
        attempt = self._attempts.get(position, 0) + 1
        self._attempts[position] = attempt
        # A retried call answers at the same position: its message needs a new id.
        suffix = "" if attempt == 1 else f".{attempt}"
        self._ids[position] = f"{self._run_id}:{position}{suffix}"
        self._streamed = False
        yield ModelCallStarted(self._ids[position])

    def _on_llm_new_delta(self, record: EventRecord) -> Iterator[Step]:
        for delta in record.payload["deltas"]:
            self._streamed = True
            if delta["thinking"]:
                yield ThinkingDelta(delta["thinking"])
            if delta["text"]:
                yield TextDelta(delta["text"])
            call = delta["tool_call"]
            if call is not None:
                yield ToolFragment(
                    index=call["index"],
                    call_id=call["id"],
                    name=call["name"],
                    arguments=call["partial_arguments"] or "",
                )

    def _on_llm_call_complete(self, record: EventRecord) -> Iterator[Step]:
        response = record.payload["response"]
        message = _codec.message_from_data(response["message"])
        yield ModelCallEnded(message, streamed=self._streamed)

    def _on_llm_error(self, record: EventRecord) -> Iterator[Step]:
        yield ModelCallFailed()

    def _on_tool_progress(self, record: EventRecord) -> Iterator[Step]:
        call, progress = record.payload["call"], record.payload["progress"]
        yield ToolProgressed(
            call_id=call["call_id"],
            name=call["name"],
            progress=progress["progress"],
            total=progress["total"],
            message=progress["message"],
        )

    def _on_tool_execution_completed(self, record: EventRecord) -> Iterator[Step]:
        result = _result(record)
        if result.tool_call_id not in self._posted:
            yield self._outcome(result, "output")

    def _on_tool_execution_failed(self, record: EventRecord) -> Iterator[Step]:
        result = _result(record)
        if result.tool_call_id in self._posted:
            return
        # A denial or a human rejection is answered without being an error.
        yield self._outcome(result, "error" if result.is_error else "denied")

    def _on_tool_interrupted(self, record: EventRecord) -> Iterator[Step]:
        results = [_tool_result(data) for data in record.payload["results"]]
        calls = {call.call_id: call for m in self._messages for call in m.tool_calls}
        yield ToolsInterrupted(
            tuple(
                (calls[r.tool_call_id], r.display_text or tool_result_text(r))
                for r in results
                if not awaits_client(r)
            ),
            tuple(calls[r.tool_call_id] for r in results if awaits_client(r)),
        )

    def _on_run_complete(self, record: EventRecord) -> Iterator[Step]:
        status = record.payload["result"]["status"]
        last = self._messages[-1] if self._messages else None
        if status == "error" or (
            status == "ok" and last is not None and last.role == "tool"
        ):
            # An error ends with on_error; after a resume's tools ran (status
            # "ok", the tool message last) the model answers next, in this run.
            return
        self._active = False
        if status == "interrupted":
            outcome: Literal["ok", "interrupted", "cancelled"] = "interrupted"
        elif last is not None and last.status == "cancelled":
            outcome = "cancelled"
        else:
            outcome = "ok"
        yield RunEnded(outcome, self._numbered(), _finish_reason(last))

    def _on_error(self, record: EventRecord) -> Iterator[Step]:
        self._active = False
        data = record.payload["error"]
        if data.get("type") == "LangHooksError":
            error = _codec.decode_fields("LangHooksError", _fields(data))
        else:  # pragma: no cover - the runtime gives on_error a LangHooksError
            error = LangHooksError("handler_error", str(data.get("message", data)))
        yield RunFailed(error)

    def result_id(self, call_id: str) -> str:
        """The id of the result of ``call_id``: see ``result_id``."""
        return result_id(self._numbered(), call_id)

    def _outcome(
        self, result: ToolResult, kind: Literal["output", "error", "denied"]
    ) -> ToolOutcome:
        return ToolOutcome(
            call_id=result.tool_call_id,
            name=result.name,
            text=tool_result_text(result),
            kind=kind,
            message_id=self.result_id(result.tool_call_id),
        )

    def _numbered(self) -> tuple[tuple[str, Message], ...]:
        return tuple(
            (self.message_id(position), message)
            for position, message in enumerate(self._messages)
        )


def _fields(value: Mapping[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if key != "type"}


def _tool_result(data: Mapping[str, Any]) -> ToolResult:
    result = _codec.decode_fields("ToolResult", _fields(data))
    assert isinstance(result, ToolResult)
    return result


def _result(record: EventRecord) -> ToolResult:
    return _tool_result(record.payload["result"])


def _finish_reason(message: Message | None) -> str | None:
    if message is None or message.role != "assistant":
        return None
    return {"length": "length", "content_filtered": "content-filter"}.get(
        message.status, "stop"
    )
