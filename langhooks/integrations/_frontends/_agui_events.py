"""A run's event records as AG-UI core 1.0 events: the translation alone.

The events are the ``ag-ui-protocol`` package's own models, dumped as the camelCase
JSON the protocol sends, so each one is checked against the protocol's schema here
as well as by the client.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from http import HTTPStatus
from typing import Any, Final, Literal, final

import attrs

try:
    from ag_ui import core as agui
except ImportError as error:  # pragma: no cover - the web extra installs it
    raise ImportError(
        "langhooks.integrations.agui needs the web extra: pip install 'langhooks[web]'"
    ) from error

from ..._core._messages import Message, ToolCall
from ..._persist._records import EventRecord
from ._records import (
    ModelCallEnded,
    ModelCallFailed,
    ModelCallStarted,
    RunEnded,
    RunReader,
    RunStarted,
    Step,
    TextDelta,
    ThinkingDelta,
    ToolFragment,
    ToolOutcome,
    ToolProgressed,
    ToolsInterrupted,
    approval_id,
    awaits_client,
    numbered,
    result_id,
    shown_error,
    tool_result_text,
    waiting_results,
)

__all__ = [
    "TOOL_OUTCOME",
    "AguiTranslator",
    "agui_events",
    "refusal_event",
    "thread_snapshot",
]

_ENDS: Final = frozenset({"RUN_FINISHED", "RUN_ERROR"})

#: The ``reason`` of an interrupt that waits for a tool call's approval.
TOOL_APPROVAL: Final = "tool_approval"

#: The name of the ``CUSTOM`` event that carries a tool call's progress (AG-UI
#: core has no progress event of its own).
TOOL_PROGRESS: Final = "langhooks.tool_progress"

#: The ``metadata`` key of a ``TOOL_CALL_RESULT`` that says how the call was
#: answered: "output" (it ran), "error" (it failed) or "denied" (a review or a
#: person rejected it; ``content`` is the reason the model reads). The event has
#: no field of its own for it; ``@ag-ui/client`` copies an event's ``metadata``
#: onto the tool message it makes.
TOOL_OUTCOME: Final = "langhooks.tool_outcome"


def _dump(event: agui.BaseEvent) -> dict[str, Any]:
    data: dict[str, Any] = event.model_dump(mode="json", by_alias=True)
    return data


@attrs.define
class _Call:
    """One tool call of the current answer, as far as it has streamed."""

    call_id: str | None = None
    name: str | None = None
    pending: str = ""  # arguments streamed before the id and name were known
    started: bool = False
    ended: bool = False


@final
class AguiTranslator:
    """Translates one request's records to AG-UI events, one record at a time.

    Args:
        thread_id: the AG-UI thread (``RunAgentInput.threadId``).
        run_id: the AG-UI run (``RunAgentInput.runId``), which the lifecycle
            events carry.
        named: what the ids of the messages and interrupts it makes are made
            of: the ``runId`` of the request that started the langhooks run
            (a resumed run's ids stay those its first request's client knows);
            None: the langhooks run id.
        expose_errors: a failed run's ``RUN_ERROR`` says the error's message;
            False says only its code and the run id (``shown_error``).
        posted: the calls whose results the client posted (calls it ran):
            no ``TOOL_CALL_RESULT`` repeats them (the client would keep a
            second tool message).
    """

    def __init__(
        self,
        *,
        thread_id: str,
        run_id: str,
        named: str | None = None,
        expose_errors: bool = True,
        posted: frozenset[str] = frozenset(),
    ) -> None:
        self._thread_id = thread_id
        self._expose = expose_errors
        self._run_id = run_id
        self._reader = RunReader(named=named, posted=posted)
        self._answer = "answer"
        self._open: Literal["text", "thinking"] | None = None
        self._calls: dict[int, _Call] = {}
        self._interrupts: list[agui.Interrupt] = []
        self._for_client: list[str] = []
        self._started = False

    def translate(self, record: EventRecord) -> list[dict[str, Any]]:
        """The AG-UI events (JSON objects) of ``record``, in order."""
        events: list[agui.BaseEvent] = []
        for step in self._reader.read(record):
            events.extend(self._step(step))
        return [_dump(event) for event in events]

    def _step(self, step: Step) -> Iterator[agui.BaseEvent]:
        match step:
            case RunStarted():
                self._interrupts, self._for_client, self._started = [], [], True
                yield agui.RunStartedEvent(
                    thread_id=self._thread_id, run_id=self._run_id
                )
            case ModelCallStarted(message_id):
                self._answer, self._calls = message_id, {}
            case ThinkingDelta(text):
                yield from self._switch("thinking")
                yield agui.ReasoningMessageContentEvent(
                    message_id=self._thinking_id(), delta=text
                )
            case TextDelta(text):
                yield from self._switch("text")
                yield agui.TextMessageContentEvent(message_id=self._answer, delta=text)
            case ToolFragment():
                yield from self._switch(None)
                yield from self._fragment(step)
            case ModelCallEnded(message, streamed):
                yield from self._ended(message, streamed)
            case ModelCallFailed():
                yield from self._switch(None)
                yield from self._end_calls()
            case ToolOutcome():
                yield agui.ToolCallResultEvent(
                    message_id=step.message_id,
                    tool_call_id=step.call_id,
                    content=step.text,
                    role="tool",
                    metadata={TOOL_OUTCOME: step.kind},
                )
            case ToolProgressed():
                yield agui.CustomEvent(
                    name=TOOL_PROGRESS,
                    value={
                        "toolCallId": step.call_id,
                        "toolName": step.name,
                        "progress": step.progress,
                        "total": step.total,
                        "message": step.message,
                    },
                )
            case ToolsInterrupted(calls, for_client):
                self._for_client.extend(call.call_id for call in for_client)
                self._interrupts.extend(
                    agui.Interrupt(
                        id=approval_id(self._reader.run_id, call.call_id),
                        reason=TOOL_APPROVAL,
                        tool_call_id=call.call_id,
                        message=message,
                    )
                    for call, message in calls
                )
            case RunEnded():
                yield from self._run_ended(step)
            case _:  # RunFailed, the last kind of step
                yield from self._switch(None)
                yield from self._end_calls()
                yield self._error(step.error)

    def ends(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` is the last of its request (the run finished or
        failed)."""
        return event["type"] in _ENDS

    def waits(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` waits for the run to return: the ones that end it."""
        return self.ends(event)

    def failed(self, exc: BaseException) -> list[dict[str, Any]]:
        """The events that end a request whose run raised ``exc`` (or that was
        refused, as a "conflict"): ``RUN_ERROR`` with the error's type as
        ``code`` ("internal_error" for an exception that is not a
        ``LangHooksError``), after ``RUN_STARTED`` if none was sent yet."""
        events: list[agui.BaseEvent] = []
        if not self._started:
            self._started = True
            events.append(
                agui.RunStartedEvent(thread_id=self._thread_id, run_id=self._run_id)
            )
        events.extend(self._switch(None))
        events.extend(self._end_calls())
        events.append(self._error(exc))
        return [_dump(event) for event in events]

    @property
    def run_id(self) -> str | None:
        """The langhooks run id of the records translated so far (None before
        the run started)."""
        return self._reader.started

    def _error(self, exc: BaseException) -> agui.RunErrorEvent:
        code, message = shown_error(exc, self._reader.started, expose=self._expose)
        return agui.RunErrorEvent(message=message, code=code)

    def _thinking_id(self) -> str:
        return f"{self._answer}:thinking"

    def _switch(
        self, kind: Literal["text", "thinking"] | None
    ) -> Iterator[agui.BaseEvent]:
        """End the open text or thinking message unless it is ``kind``; start
        ``kind`` if it is not open."""
        if self._open == kind:
            return
        if self._open == "text":
            yield agui.TextMessageEndEvent(message_id=self._answer)
        elif self._open == "thinking":
            yield agui.ReasoningMessageEndEvent(message_id=self._thinking_id())
            yield agui.ReasoningEndEvent(message_id=self._thinking_id())
        self._open = kind
        if kind == "text":
            yield agui.TextMessageStartEvent(message_id=self._answer, role="assistant")
        elif kind == "thinking":
            yield agui.ReasoningStartEvent(message_id=self._thinking_id())
            yield agui.ReasoningMessageStartEvent(
                message_id=self._thinking_id(), role="reasoning"
            )

    def _fragment(self, fragment: ToolFragment) -> Iterator[agui.BaseEvent]:
        call = self._calls.setdefault(fragment.index, _Call())
        call.call_id = call.call_id or fragment.call_id
        call.name = call.name or fragment.name
        call.pending += fragment.arguments
        yield from self._flush(call)

    def _flush(self, call: _Call) -> Iterator[agui.BaseEvent]:
        if call.call_id is None or call.name is None:
            return  # wait for the id and name: AG-UI starts a call with both
        if not call.started:
            call.started = True
            yield agui.ToolCallStartEvent(
                tool_call_id=call.call_id,
                tool_call_name=call.name,
                parent_message_id=self._answer,
            )
        if call.pending:
            yield agui.ToolCallArgsEvent(tool_call_id=call.call_id, delta=call.pending)
            call.pending = ""

    def _end_calls(self) -> Iterator[agui.BaseEvent]:
        for call in self._calls.values():
            if call.started and not call.ended:
                call.ended = True
                assert call.call_id is not None
                yield agui.ToolCallEndEvent(tool_call_id=call.call_id)

    def _ended(self, message: Message, streamed: bool) -> Iterator[agui.BaseEvent]:
        if not streamed:
            # Nothing streamed: the whole answer, as if it had.
            if message.thinking:
                yield from self._switch("thinking")
                yield agui.ReasoningMessageContentEvent(
                    message_id=self._thinking_id(), delta=message.thinking
                )
            if message.text:
                yield from self._switch("text")
                yield agui.TextMessageContentEvent(
                    message_id=self._answer, delta=message.text
                )
        yield from self._switch(None)
        for tool_call in message.tool_calls:
            call = self._matching(tool_call)
            if not call.started and not call.pending:
                call.pending = json.dumps(dict(tool_call.arguments))
            call.call_id, call.name = tool_call.call_id, tool_call.name
            yield from self._flush(call)
        yield from self._end_calls()

    def _matching(self, tool_call: ToolCall) -> _Call:
        """The streamed call ``tool_call`` completes (a new one if none)."""
        for call in self._calls.values():
            if call.call_id == tool_call.call_id:
                return call
        found = self._calls.get(tool_call.index)
        if found is None or found.call_id not in (None, tool_call.call_id):
            found = self._calls[-1 - len(self._calls)] = _Call()
        return found

    def _run_ended(self, ended: RunEnded) -> Iterator[agui.BaseEvent]:
        outcome: agui.RunFinishedOutcome | None = None
        if ended.outcome == "interrupted" and self._interrupts:
            yield agui.MessagesSnapshotEvent(messages=_snapshot(ended.messages))
            outcome = agui.RunFinishedInterruptOutcome(interrupts=self._interrupts)
        elif ended.outcome == "interrupted" and self._for_client:
            # Only calls the client runs wait: the protocol's pending calls.
            outcome = agui.RunFinishedSuccessOutcome(
                pending_tool_call_ids=self._for_client
            )
        elif ended.outcome == "cancelled":
            outcome = agui.RunFinishedCancelledOutcome()
        yield agui.RunFinishedEvent(
            thread_id=self._thread_id, run_id=self._run_id, outcome=outcome
        )


def _snapshot(messages: Iterable[tuple[str, Message]]) -> list[agui.Message]:
    """The conversation as AG-UI messages. System messages are the agent's own
    instructions and stay on the server; the stand-in results of calls waiting
    for a human are left out (the calls have no result yet)."""
    numbered = tuple(messages)
    out: list[agui.Message] = []
    for message_id, message in numbered:
        if message.role == "user":
            out.append(agui.UserMessage(id=message_id, content=message.text))
        elif message.role == "assistant":
            if message.thinking:
                out.append(
                    agui.ReasoningMessage(
                        id=f"{message_id}:thinking", content=message.thinking
                    )
                )
            calls = [
                agui.ToolCall(
                    id=call.call_id,
                    function=agui.FunctionCall(
                        name=call.name, arguments=json.dumps(dict(call.arguments))
                    ),
                )
                for call in message.tool_calls
            ]
            out.append(
                agui.AssistantMessage(
                    id=message_id,
                    content=message.text or None,
                    tool_calls=calls or None,
                )
            )
        elif message.role == "tool":
            for result in message.tool_results:
                if result.is_interrupt:
                    continue
                text = tool_result_text(result)
                out.append(
                    agui.ToolMessage(
                        id=result_id(numbered, result.tool_call_id),
                        content=text,
                        tool_call_id=result.tool_call_id,
                        error=text if result.is_error else None,
                    )
                )
    return out


def thread_snapshot(messages: Sequence[Message], run_id: str) -> dict[str, Any]:
    """A waiting run's thread as the AG-UI read route answers it: the
    ``MESSAGES_SNAPSHOT`` event of its conversation, with the ``interrupts`` a
    resume answers (those ``RUN_FINISHED`` carried when the run stopped), their
    ids and the messages' made of ``run_id`` as the translation's were, and the
    ``pendingToolCallIds`` of the calls the client runs (``client_tool``)."""
    conversation = numbered(messages, run_id)
    waiting = waiting_results(messages)
    interrupts = [
        agui.Interrupt(
            id=approval_id(run_id, result.tool_call_id),
            reason=TOOL_APPROVAL,
            tool_call_id=result.tool_call_id,
            message=result.display_text or tool_result_text(result),
        )
        for result in waiting
        if not awaits_client(result)
    ]
    snapshot = agui.MessagesSnapshotEvent(messages=_snapshot(conversation))
    return {
        **_dump(snapshot),
        "interrupts": [
            interrupt.model_dump(by_alias=True, exclude_none=True)
            for interrupt in interrupts
        ],
        "pendingToolCallIds": [
            result.tool_call_id for result in waiting if awaits_client(result)
        ],
    }


def refusal_event(status: int, message: str) -> dict[str, Any]:
    """A request the app refuses before anything runs, as the body of its
    4xx answer: a ``RUN_ERROR`` event whose ``code`` names the HTTP status
    ("not_found", "conflict", ...), so an AG-UI client reads the protocol's own
    error shape (``@ag-ui/client`` puts it in the thrown error's ``payload``)."""
    code = HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    return _dump(agui.RunErrorEvent(message=message, code=code))


def agui_events(
    records: Iterable[EventRecord], *, thread_id: str, run_id: str
) -> Iterator[dict[str, Any]]:
    """A chain run's event records as AG-UI core 1.0 events (JSON objects).

    The translation the AG-UI app streams, usable on recorded runs
    (``read_events``) or on runs followed from Redis. ``RUN_STARTED``; per model
    answer its thinking (``REASONING_START``, ``REASONING_MESSAGE_START`` /
    ``CONTENT`` / ``END``, ``REASONING_END``), its text (``TEXT_MESSAGE_START`` /
    ``CONTENT`` / ``END``) and each tool call as it streams (``TOOL_CALL_START``
    with its ``parentMessageId``, ``TOOL_CALL_ARGS``, ``TOOL_CALL_END``);
    a running call's progress as a ``CUSTOM`` event named
    "langhooks.tool_progress" (value: ``toolCallId``, ``toolName``,
    ``progress``, ``total``, ``message``); ``TOOL_CALL_RESULT`` for each call
    answered (run, failed or denied); then
    ``RUN_FINISHED``, or ``RUN_ERROR`` with the error's type as ``code``. A run
    that waits for a human ends with ``MESSAGES_SNAPSHOT`` and ``RUN_FINISHED``
    whose outcome is an interrupt per waiting call (``reason`` "tool_approval");
    a run that waits only for calls the client runs (``client_tool``) ends
    with ``RUN_FINISHED`` whose "success" outcome lists them as
    ``pendingToolCallIds``;
    a run whose answer was cancelled finishes with the "cancelled" outcome. A
    recording that goes on after an interrupt (its resumed part) starts again
    with ``RUN_STARTED``.

    Args:
        records: one run's records, in ``seq`` order, from its ``on_run_start``.
        thread_id: the ``threadId`` the events carry.
        run_id: the ``runId`` the events carry.

    Yields:
        Each event as the JSON object the protocol sends (camelCase keys).
    """
    translator = AguiTranslator(thread_id=thread_id, run_id=run_id)
    for record in records:
        yield from translator.translate(record)
