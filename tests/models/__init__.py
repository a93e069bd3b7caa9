"""Tests of langhooks.models, and the helpers they share.

``local_fixture(name)`` finds a wire-format fixture written for this project
(``tests/models/fixtures``: the suite needs nothing outside the repository).
``Recorder`` is a handler that records every event and checks the streaming
contract as it goes; ``drive(format, *events)`` feeds decoded wire events to a
``StreamDriver`` into a new ``Recorder``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Final

from typing_extensions import override

import langhooks as lh
from langhooks.models import StreamDriver, StreamFormat

__all__ = [
    "LOCAL_FIXTURES",
    "AsyncRecorder",
    "Recorder",
    "drive",
    "local_fixture",
]

LOCAL_FIXTURES: Final = Path(__file__).resolve().parent / "fixtures"


def local_fixture(name: str) -> Path:
    """The path of a fixture written for these tests."""
    path = LOCAL_FIXTURES / name
    if not path.is_file():
        raise FileNotFoundError(f"test fixture {name!r} not found at {path}")
    return path


Event = tuple[str, Any]
_TERMINAL: Final = frozenset({"complete_response", "error"})


class _Record:
    """The recording and contract checks both recorders share."""

    def __init__(self, *, cancel_after: int | None = None) -> None:
        self.events: list[Event] = []
        self.violations: list[str] = []
        self.cancel_after = cancel_after
        self.handle: lh.StreamingHandle | None = None
        #: The handle of every partial, in order.
        self.handles: list[lh.StreamingHandle] = []
        #: Set at the first partial (another thread may wait for it to cancel).
        self.first_partial = threading.Event()

    def record(
        self, name: str, payload: Any, handle: lh.StreamingHandle | None
    ) -> None:
        if self.events and self.events[-1][0] in _TERMINAL:
            self.violations.append(f"{name} after the terminal call")
        if handle is not None:
            if self.handle is None:
                self.handle = handle
            elif handle is not self.handle:
                self.violations.append("two different handles in one stream")
            if handle.is_cancelled:
                self.violations.append(f"{name} after cancel()")
        elif self.handle is not None and self.handle.is_cancelled:
            self.violations.append(f"{name} after cancel()")
        self.events.append((name, payload))
        if handle is not None:
            self.handles.append(handle)
            self.first_partial.set()
        if (
            self.cancel_after is not None
            and len(self.events) >= self.cancel_after
            and handle is not None
        ):
            handle.cancel()

    @property
    def names(self) -> list[str]:
        """The event names, in order."""
        return [name for name, _ in self.events]

    def payloads(self, name: str) -> list[Any]:
        """The payloads of the events called ``name``, in order."""
        return [payload for event, payload in self.events if event == name]

    @property
    def text(self) -> str:
        """All partial response text, joined."""
        return "".join(self.payloads("partial_response"))

    @property
    def thinking(self) -> str:
        """All partial thinking text, joined."""
        return "".join(self.payloads("partial_thinking"))

    @property
    def errors(self) -> list[BaseException]:
        """The errors ``on_error`` received."""
        return self.payloads("error")

    @property
    def terminal_calls(self) -> list[Event]:
        """The terminal calls made (the contract allows at most one)."""
        return [event for event in self.events if event[0] in _TERMINAL]


class Recorder(lh.StreamingChatResponseHandler, _Record):
    """Records every event as ``(name, payload)`` and checks the contract.

    ``violations`` lists every call made after the terminal call or after cancel.
    With ``cancel_after=n`` it cancels the stream from inside its n-th callback
    that carries a context.
    """

    def __init__(self, *, cancel_after: int | None = None) -> None:
        _Record.__init__(self, cancel_after=cancel_after)

    @override
    def on_partial_response(
        self, partial: lh.PartialResponse, context: lh.PartialResponseContext
    ) -> None:
        self.record("partial_response", partial.text, context.handle)

    @override
    def on_partial_thinking(
        self, partial: lh.PartialThinking, context: lh.PartialThinkingContext
    ) -> None:
        self.record("partial_thinking", partial.text, context.handle)

    @override
    def on_partial_tool_call(
        self, partial: lh.PartialToolCall, context: lh.PartialToolCallContext
    ) -> None:
        self.record("partial_tool_call", partial, context.handle)

    @override
    def on_complete_tool_call(self, complete: lh.CompleteToolCall) -> None:
        self.record("complete_tool_call", complete, None)

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        self.record("unmapped_raw_event", raw_event, None)

    @override
    def on_complete_response(self, response: lh.ChatResponse) -> None:
        self.record("complete_response", response, None)

    @override
    def on_error(self, error: BaseException) -> None:
        self.record("error", error, None)


class AsyncRecorder(lh.AsyncStreamingChatResponseHandler, _Record):
    """The async twin of ``Recorder``."""

    def __init__(self, *, cancel_after: int | None = None) -> None:
        _Record.__init__(self, cancel_after=cancel_after)

    @override
    async def on_partial_response(
        self, partial: lh.PartialResponse, context: lh.PartialResponseContext
    ) -> None:
        self.record("partial_response", partial.text, context.handle)

    @override
    async def on_partial_thinking(
        self, partial: lh.PartialThinking, context: lh.PartialThinkingContext
    ) -> None:
        self.record("partial_thinking", partial.text, context.handle)

    @override
    async def on_partial_tool_call(
        self, partial: lh.PartialToolCall, context: lh.PartialToolCallContext
    ) -> None:
        self.record("partial_tool_call", partial, context.handle)

    @override
    async def on_complete_tool_call(self, complete: lh.CompleteToolCall) -> None:
        self.record("complete_tool_call", complete, None)

    @override
    async def on_unmapped_raw_event(self, raw_event: object) -> None:
        self.record("unmapped_raw_event", raw_event, None)

    @override
    async def on_complete_response(self, response: lh.ChatResponse) -> None:
        self.record("complete_response", response, None)

    @override
    async def on_error(self, error: BaseException) -> None:
        self.record("error", error, None)


def drive(format: StreamFormat, *events: object) -> tuple[Recorder, lh.ChatResponse]:
    """Feed ``events`` to a ``StreamDriver`` until it stops; the record and response."""
    recorder = Recorder()
    driver = StreamDriver(format, recorder)
    for event in events:
        if not driver.feed(event):
            break
    return recorder, driver.finish()
