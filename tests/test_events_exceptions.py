"""Replay rebuilds every recorded exception, and says which records it cannot read.

A tool's exception is recorded by class and message. A builtin ``Exception`` class
whose constructor takes a message alone comes back as itself; any other class comes
back as an ``Exception`` naming it, so replay always succeeds. A payload of the
wrong shape is a ``ValueError`` naming the record, never another exception.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from typing_extensions import override

from langhooks import ToolCall
from langhooks.events import EventRecord, EventRecorder, replay_events
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler
from tests.test_events import fresh_chain


class TwoArguments(Exception):
    """An application exception whose constructor takes two arguments."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(code, text)

    @override
    def __str__(self) -> str:
        return f"{self.args[0]}: {self.args[1]}"


def raised(make: Any) -> BaseException:
    """The exception ``make()`` raises."""
    try:
        make()
    except BaseException as error:  # any kind is the point
        return error
    raise AssertionError("nothing was raised")


def exception_group() -> None:
    """Raise an ExceptionGroup of two errors."""
    raise ExceptionGroup("two failed", [ValueError("a"), KeyError("b")])


OTHER_CONSTRUCTORS = [
    raised(lambda: b"\xff".decode("utf-8")),
    raised(lambda: "\udc80".encode("utf-8")),
    UnicodeTranslateError("\udc80", 0, 1, "cannot translate"),
    raised(exception_group),
    BaseExceptionGroup("base group", [KeyboardInterrupt()]),
    TwoArguments(7, "seven"),
]


def replayed_exception(error: BaseException) -> BaseException:
    """Record ``on_tool_execution_exception`` with ``error``; replay it; the
    exception the handler got."""
    records: list[EventRecord] = []
    EventRecorder(records.append).on_tool_execution_exception(
        fresh_chain(), ToolCall(call_id="c1", name="f"), error
    )
    handler = RecordingChainHandler()
    replay_events(records, handler)
    again = handler.events[0][1][2]
    assert isinstance(again, BaseException)
    return again


class TestRebuiltExceptions:
    """Replay always succeeds: the class itself, or an Exception naming it."""

    @pytest.mark.parametrize(
        "error", OTHER_CONSTRUCTORS, ids=lambda e: type(e).__name__
    )
    def test_other_constructor(self, error: BaseException) -> None:
        """An exception whose class takes more than a message comes back as an
        Exception carrying the recorded class name and message."""
        kind = type(error)
        again = replayed_exception(error)
        assert type(again) is Exception
        assert str(again) == f"{kind.__module__}.{kind.__qualname__}: {error}"

    @pytest.mark.parametrize(
        "error", [ValueError("bad city"), OSError("disk"), KeyError("k")]
    )
    def test_message_constructor(self, error: Exception) -> None:
        """A builtin Exception class that takes a message comes back as itself."""
        again = replayed_exception(error)
        assert type(again) is type(error)
        assert str(again) == str(type(error)(str(error)))


def record(event: str, payload: dict[str, Any], seq: int = 0) -> EventRecord:
    """A record of ``event`` outside any run, carrying ``payload``."""
    return EventRecord(
        seq=seq,
        event=event,  # type: ignore[arg-type]  # any name, as a newer version writes
        time=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        payload=payload,
    )


class TestMalformedPayloads:
    """A payload of the wrong shape is a ValueError naming the record."""

    @pytest.mark.parametrize(
        ("event", "payload"),
        [
            (
                "on_tool_execution_exception",
                {"chain": None, "call": None, "exception": {"type": "Exception"}},
            ),
            (
                "on_tool_execution_exception",
                {
                    "chain": None,
                    "call": None,
                    "exception": {"type": "Exception", "class": 3, "message": "m"},
                },
            ),
            ("on_llm_response_headers", {"headers": {"type": "Mapping"}}),
            ("on_llm_response_headers", {"headers": {"type": "Mapping", "value": 5}}),
            ("on_complete_tool_call", {"complete": {"type": "CompleteToolCall"}}),
        ],
    )
    def test_wrong_shape(self, event: str, payload: dict[str, Any]) -> None:
        """replay_events raises ValueError naming the record and its field."""
        with pytest.raises(ValueError, match=f"record 0 \\({event}\\)|not a valid"):
            replay_events(
                [record(event, payload)],
                RecordingStreamingHandler()
                if event == "on_complete_tool_call"
                else RecordingChainHandler(),
            )

    def test_nested_too_deep(self) -> None:
        """An untagged payload list nested deeper than the codec allows is a
        ValueError, never RecursionError."""
        deep: list[Any] = []
        for _ in range(900):
            deep = [deep]
        with pytest.raises(ValueError, match="levels deep at most"):
            replay_events(
                [record("on_unmapped_raw_event", {"raw_event": deep})],
                RecordingStreamingHandler(),
            )
