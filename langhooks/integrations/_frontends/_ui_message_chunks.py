"""A run's event records as AI SDK UI message stream chunks: the translation alone.

Protocol v1 as AI SDK 6 speaks it (``uiMessageChunkSchema`` of the ``ai`` package).
The chunks are plain JSON objects: the protocol's schema lives in TypeScript, and
the tests check every chunk with the SDK's own parser.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Literal, final

import attrs

from ..._core._messages import Message, ToolCall, ToolResult
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
    shown_error,
    tool_result_text,
)

__all__ = ["UiMessageTranslator", "chat_messages", "ui_message_chunks"]

Chunk = dict[str, Any]

_ENDS: Final = frozenset({"finish", "error", "abort"})

#: The type of the data part that carries a tool call's progress.
TOOL_PROGRESS: Final = "data-tool-progress"
_WAITS: Final = _ENDS | {"tool-approval-request"}


@attrs.define
class _Call:
    """One tool call of the current answer, as far as it has streamed."""

    call_id: str | None = None
    name: str | None = None
    pending: str = ""
    started: bool = False
    available: bool = False


@final
class UiMessageTranslator:
    """Translates one request's records to UI message chunks, one at a time.

    The whole run is one assistant message, whose id is the run's id (kept
    across a resume, so a continuation continues the same message); each model
    call is a step.

    A call of a client tool (one of ``client_tools``) is held at
    ``tool-input-start`` and its input until the review let it go to the
    client: its ``tool-input-available`` (on which ``useChat`` calls
    ``onToolCall``) comes when it waits for the client, once the run is
    stored, so the client never runs a call a review denied or a person has
    not approved yet.

    Args:
        expose_errors: a failed run's ``error`` chunk says the error's message;
            False says only its code and the run id (``shown_error``).
        client_tools: the names of the tools the client runs.
        posted: the calls whose outputs the client posted (calls it ran): no
            ``tool-output-*`` chunk repeats them (it would replace the
            client's own output with the text the model read).
    """

    def __init__(
        self,
        *,
        expose_errors: bool = True,
        client_tools: frozenset[str] = frozenset(),
        posted: frozenset[str] = frozenset(),
    ) -> None:
        self._expose = expose_errors
        self._client_tools = client_tools
        self._shown: set[str] = set()  # calls whose input was made available
        self._released: set[str] = set()
        self._reader = RunReader(posted=posted)
        self._answer = "answer"
        self._open: Literal["text", "reasoning"] | None = None
        self._step = False
        self._calls: dict[int, _Call] = {}

    def translate(self, record: EventRecord) -> list[Chunk]:
        """The chunks of ``record``, in order."""
        chunks: list[Chunk] = []
        for step in self._reader.read(record):
            chunks.extend(self._chunks(step))
        return chunks

    def _chunks(self, step: Step) -> Iterator[Chunk]:
        match step:
            case RunStarted(run_id):
                yield {"type": "start", "messageId": run_id}
            case ModelCallStarted(message_id):
                yield from self._finish_step()
                self._answer, self._calls, self._step = message_id, {}, True
                yield {"type": "start-step"}
            case ThinkingDelta(text):
                yield from self._switch("reasoning")
                yield {"type": "reasoning-delta", "id": self._part(), "delta": text}
            case TextDelta(text):
                yield from self._switch("text")
                yield {"type": "text-delta", "id": self._part(), "delta": text}
            case ToolFragment():
                yield from self._switch(None)
                yield from self._fragment(step)
            case ModelCallEnded(message, streamed):
                yield from self._ended(message, streamed)
            case ModelCallFailed():
                yield from self._switch(None)
                yield from self._abandon_calls("the model call failed")
            case ToolOutcome():
                yield _outcome(step)
            case ToolProgressed():
                # A data part with the call's id: each report replaces the last
                # one in the client's message (the part is not transient).
                yield {
                    "type": TOOL_PROGRESS,
                    "id": step.call_id,
                    "data": {
                        "toolCallId": step.call_id,
                        "toolName": step.name,
                        "progress": step.progress,
                        "total": step.total,
                        "message": step.message,
                    },
                }
            case ToolsInterrupted(calls, for_client):
                for released in for_client:
                    # Held by this translation, or made in an earlier request
                    # (a resumed run: the call was approved first).
                    if released.call_id not in self._shown:
                        self._released.add(released.call_id)
                        yield self._available(released)
                for call, _ in calls:
                    yield {
                        "type": "tool-approval-request",
                        "approvalId": approval_id(self._reader.run_id, call.call_id),
                        "toolCallId": call.call_id,
                    }
            case RunEnded(outcome, _, finish_reason):
                yield from self._finish_step()
                if outcome == "cancelled":
                    yield {"type": "abort", "reason": "the answer was cancelled"}
                else:
                    reason = "tool-calls" if outcome == "interrupted" else finish_reason
                    yield {"type": "finish", "finishReason": reason or "stop"}
            case _:  # RunFailed, the last kind of step
                error = step.error
                yield from self._switch(None)
                yield from self._abandon_calls(error.message)
                yield self._error(error)

    def ends(self, chunk: Mapping[str, Any]) -> bool:
        """Whether ``chunk`` is the last of its request."""
        return chunk["type"] in _ENDS

    def waits(self, chunk: Mapping[str, Any]) -> bool:
        """Whether ``chunk`` waits for the run to return: the ones that end it,
        an approval request and the input of a call the client runs (their
        answers must find the run stored)."""
        return chunk["type"] in _WAITS or (
            chunk["type"] == "tool-input-available"
            and chunk["toolCallId"] in self._released
        )

    def failed(self, exc: BaseException) -> list[Chunk]:
        """The chunks that end a request whose run raised ``exc``: the open
        parts closed, then ``error``."""
        chunks = [*self._switch(None), *self._abandon_calls("the run failed")]
        chunks.append(self._error(exc))
        return chunks

    @property
    def run_id(self) -> str | None:
        """The langhooks run id of the records translated so far (None before
        the run started)."""
        return self._reader.started

    def _error(self, exc: BaseException) -> Chunk:
        code, message = shown_error(exc, self._reader.started, expose=self._expose)
        return {"type": "error", "errorText": f"{code}: {message}"}

    def _part(self) -> str:
        return f"{self._answer}:{self._open}"

    def _finish_step(self) -> Iterator[Chunk]:
        yield from self._switch(None)
        if self._step:
            self._step = False
            yield {"type": "finish-step"}

    def _switch(self, kind: Literal["text", "reasoning"] | None) -> Iterator[Chunk]:
        if self._open == kind:
            return
        if self._open is not None:
            yield {"type": f"{self._open}-end", "id": self._part()}
        self._open = kind
        if kind is not None:
            yield {"type": f"{kind}-start", "id": self._part()}

    def _fragment(self, fragment: ToolFragment) -> Iterator[Chunk]:
        call = self._calls.setdefault(fragment.index, _Call())
        call.call_id = call.call_id or fragment.call_id
        call.name = call.name or fragment.name
        call.pending += fragment.arguments
        yield from self._flush(call)

    def _flush(self, call: _Call) -> Iterator[Chunk]:
        if call.call_id is None or call.name is None:
            return
        if not call.started:
            call.started = True
            yield {
                "type": "tool-input-start",
                "toolCallId": call.call_id,
                "toolName": call.name,
            }
        if call.pending:
            yield {
                "type": "tool-input-delta",
                "toolCallId": call.call_id,
                "inputTextDelta": call.pending,
            }
            call.pending = ""

    def _ended(self, message: Message, streamed: bool) -> Iterator[Chunk]:
        if not streamed:
            if message.thinking:
                yield from self._switch("reasoning")
                yield {
                    "type": "reasoning-delta",
                    "id": self._part(),
                    "delta": message.thinking,
                }
            if message.text:
                yield from self._switch("text")
                yield {"type": "text-delta", "id": self._part(), "delta": message.text}
        yield from self._switch(None)
        for tool_call in message.tool_calls:
            call = self._matching(tool_call)
            held = tool_call.name in self._client_tools
            if held and not call.started and not call.pending:
                # Its input as a delta: the part shows it while it is held.
                call.pending = json.dumps(dict(tool_call.arguments))
            call.call_id, call.name = tool_call.call_id, tool_call.name
            yield from self._flush(call)
            call.available = True
            if not held:
                yield self._available(tool_call)

    def _available(self, call: ToolCall) -> Chunk:
        self._shown.add(call.call_id)
        return {
            "type": "tool-input-available",
            "toolCallId": call.call_id,
            "toolName": call.name,
            "input": dict(call.arguments),
        }

    def _matching(self, tool_call: ToolCall) -> _Call:
        """The streamed call ``tool_call`` completes (a new one if none)."""
        for call in self._calls.values():
            if call.call_id == tool_call.call_id:
                return call
        found = self._calls.get(tool_call.index)
        if found is None or found.call_id not in (None, tool_call.call_id):
            found = self._calls[-1 - len(self._calls)] = _Call()
        return found

    def _abandon_calls(self, reason: str) -> Iterator[Chunk]:
        """Calls whose input started streaming but never completed."""
        for call in self._calls.values():
            if call.started and not call.available:
                call.available = True
                yield {
                    "type": "tool-input-error",
                    "toolCallId": call.call_id,
                    "toolName": call.name,
                    "input": None,
                    "errorText": reason,
                }


def _outcome(outcome: ToolOutcome) -> Chunk:
    if outcome.kind == "output":
        return {
            "type": "tool-output-available",
            "toolCallId": outcome.call_id,
            "output": outcome.text,
        }
    if outcome.kind == "denied":
        return {"type": "tool-output-denied", "toolCallId": outcome.call_id}
    return {
        "type": "tool-output-error",
        "toolCallId": outcome.call_id,
        "errorText": outcome.text,
    }


def chat_messages(messages: Sequence[Message], run_id: str) -> list[dict[str, Any]]:
    """A waiting run's chat as UI messages, what ``useChat`` takes as
    ``messages``: user messages with their text; the run's answer since the
    last user message as one assistant message whose id is the run's (the id
    its stream gave it, so an approval answered from it continues it), each
    model call a step with its reasoning, text and tool parts; a call that
    waits for a person is in state ``approval-requested``, one that waits for
    the client to run it in ``input-available``. System messages stay on the
    server."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    first = run_id
    results = {
        r.tool_call_id: r for m in messages if m.role == "tool" for r in m.tool_results
    }
    for (message_id, message), position in zip(
        numbered(messages, run_id), range(len(messages)), strict=True
    ):
        if message.role == "user":
            text = {"type": "text", "text": message.text}
            out.append({"id": message_id, "role": "user", "parts": [text]})
        elif message.role == "assistant":
            if not parts:
                first = message_id
            parts.append({"type": "step-start"})
            if message.thinking:
                parts.append(
                    {"type": "reasoning", "text": message.thinking, "state": "done"}
                )
            if message.text:
                parts.append({"type": "text", "text": message.text, "state": "done"})
            parts.extend(
                _tool_part(call, results.get(call.call_id), run_id)
                for call in message.tool_calls
            )
        if parts and (
            position + 1 == len(messages) or messages[position + 1].role == "user"
        ):
            answer = run_id if position > last_user else first
            out.append({"id": answer, "role": "assistant", "parts": parts})
            parts = []
    return out


def _tool_part(
    call: ToolCall, result: ToolResult | None, run_id: str
) -> dict[str, Any]:
    """The tool part of ``call``, in the state its result says."""
    part: dict[str, Any] = {
        "type": f"tool-{call.name}",
        "toolCallId": call.call_id,
        "input": dict(call.arguments),
    }
    if result is None or awaits_client(result):
        part["state"] = "input-available"
    elif result.is_interrupt:
        part["state"] = "approval-requested"
        part["approval"] = {"id": approval_id(run_id, call.call_id)}
    elif result.is_error:
        part["state"] = "output-error"
        part["errorText"] = tool_result_text(result)
    else:
        part["state"] = "output-available"
        part["output"] = tool_result_text(result)
    return part


def ui_message_chunks(records: Iterable[EventRecord]) -> Iterator[dict[str, Any]]:
    """A chain run's event records as AI SDK UI message stream chunks (v1).

    The translation the UI-message app streams, usable on recorded runs. The
    run is one assistant message (``start`` with the run's id as ``messageId``);
    each model call a step (``start-step`` ... ``finish-step``) holding its
    thinking (``reasoning-start`` / ``-delta`` / ``-end``), its text
    (``text-start`` / ``-delta`` / ``-end``) and its tool calls as they stream
    (``tool-input-start``, ``tool-input-delta``, ``tool-input-available`` with the
    parsed input). A running call's progress is a ``data-tool-progress`` part
    whose ``id`` is the call's id (so each report replaces the last in the
    client's message; data: ``toolCallId``, ``toolName``, ``progress``,
    ``total``, ``message``). A call's answer is ``tool-output-available`` (it ran),
    ``tool-output-error`` (it failed) or ``tool-output-denied`` (a review or a
    human rejected it); a call waiting for a human is a ``tool-approval-request``
    and the message finishes with reason "tool-calls". Then ``finish`` with the
    finish reason, ``error`` when the run gave up, or ``abort`` when its answer
    was cancelled. The ``[DONE]`` line that ends a stream is the app's framing,
    not a chunk.

    Args:
        records: one run's records, in ``seq`` order, from its ``on_run_start``.

    Yields:
        Each chunk as the JSON object the protocol sends.
    """
    translator = UiMessageTranslator()
    for record in records:
        yield from translator.translate(record)
