"""Adding an event is its spec method and its fields' row: the console, logging and
``langhooks events`` show it without another edit; a row of ``_event_lines.LINES``
only changes the words of the observer it names."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from typing_extensions import override

from langhooks import ToolCall
from langhooks._core._chain_handler import ChainCallbackHandler
from langhooks._core._event_fields import CHAIN_FIELDS, STREAM_FIELDS, Field
from langhooks._core._stream_handler import StreamingChatResponseHandler
from langhooks._persist._records import EventRecord
from langhooks.chain import LLMChain
from langhooks.cli.print_events import _DETAILS, _Printer
from langhooks.integrations._event_lines import LINES, Console, Lines, Log
from langhooks.integrations.console import ConsoleHandler, line_methods
from langhooks.integrations.logging import LoggingHandler, record_methods
from langhooks.models import ScriptedChatModel

#: A new chain event, as its fields' row would describe it.
FIELDS = {
    "on_tool_weighed": (
        Field("tool", "call", "name"),
        Field("arguments", "call", "arguments", content=True),
        Field("weight", "weight"),
    )
}
PARAMS = {"on_tool_weighed": ("chain", "call", "weight")}
CALL = ToolCall(call_id="c1", name="scale", arguments={"kg": 3})


class Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    @override
    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, Keep]]:
    logger = logging.getLogger("tests.langhooks.event_lines")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    keep = Keep()
    logger.addHandler(keep)
    yield logger, keep
    logger.removeHandler(keep)


def chain() -> LLMChain:
    return LLMChain(ScriptedChatModel([]))


class TestANewEvent:
    """An event with a fields row and no row of its own in ``LINES``."""

    def test_the_console_prints_its_fields(self) -> None:
        out = io.StringIO()
        (method,) = line_methods(FIELDS, PARAMS, LINES).values()
        method(ConsoleHandler(out, color=False), chain(), CALL, 2.5)
        assert out.getvalue() == (
            "  on_tool_weighed              tool=scale arguments={'kg': 3} weight=2.5\n"
        )

    def test_logging_records_its_data_fields(
        self, logger: tuple[logging.Logger, Keep]
    ) -> None:
        log, keep = logger
        (method,) = record_methods(FIELDS, PARAMS, LINES, chain=True).values()
        method(LoggingHandler(log), chain(), CALL, 2.5)
        (record,) = keep.records
        assert record.levelno == logging.INFO
        assert record.getMessage() == "on_tool_weighed tool=scale weight=2.5"
        assert record.__dict__["langhooks_event"] == "on_tool_weighed"
        assert record.__dict__["tool"] == "scale"
        assert record.__dict__["weight"] == 2.5
        assert "arguments" not in record.__dict__  # content is never logged

    def test_langhooks_events_prints_its_arguments(self) -> None:
        out = io.StringIO()
        record = EventRecord(
            seq=0,
            event="on_tool_weighed",  # type: ignore[arg-type]  # a newer name
            payload={"chain": {}, "call": {"name": "scale"}, "weight": 2.5},
        )
        _Printer(out).record(record)
        assert out.getvalue() == (
            '  on_tool_weighed              call={"name": "scale"} weight=2.5\n'
        )

    def test_a_row_of_its_own_changes_only_that_observer(
        self, logger: tuple[logging.Logger, Keep]
    ) -> None:
        lines = {
            "on_tool_weighed": Lines(
                console=Console(
                    lambda style, chain, call, weight: f"{call.name} {weight} kg",
                    "green",
                ),
                log=Log(level=logging.WARNING, attach="weight"),
            )
        }
        out = io.StringIO()
        (show,) = line_methods(FIELDS, PARAMS, lines).values()
        show(ConsoleHandler(out, color=False), chain(), CALL, 2.5)
        assert out.getvalue() == "  on_tool_weighed              scale 2.5 kg\n"
        log, keep = logger
        (record,) = record_methods(FIELDS, PARAMS, lines, chain=True).values()
        error = ValueError("too heavy")
        record(LoggingHandler(log), chain(), CALL, error)
        (logged,) = keep.records
        assert (logged.levelno, logged.getMessage()) == (
            logging.WARNING,
            "on_tool_weighed",
        )
        assert logged.exc_info is not None
        assert logged.exc_info[1] is error

    def test_a_disabled_level_does_no_work(
        self, logger: tuple[logging.Logger, Keep]
    ) -> None:
        log, keep = logger
        log.setLevel(logging.CRITICAL)
        (method,) = record_methods(FIELDS, PARAMS, LINES, chain=True).values()
        handler = LoggingHandler(log)
        method(handler, chain(), object(), 2.5)  # no .name: not read
        handler.on_error(ValueError("not logged"))
        assert keep.records == []


class TestEveryEvent:
    """Each observer handles every event of the specs through the tables."""

    def test_the_console_handles_every_chain_event(self) -> None:
        assert ConsoleHandler._langhooks_overrides == frozenset(CHAIN_FIELDS)

    def test_logging_handles_every_event(self) -> None:
        assert LoggingHandler._langhooks_overrides == frozenset(
            {*CHAIN_FIELDS, *STREAM_FIELDS}
        )

    def test_every_row_names_an_event_and_its_arguments(self) -> None:
        specs = {
            **StreamingChatResponseHandler._langhooks_own_events,
            **ChainCallbackHandler._langhooks_own_events,
        }
        assert set(LINES) <= set(specs)
        for event, lines in LINES.items():
            if lines.log is not None and lines.log.attach:
                assert lines.log.attach in specs[event].params
        assert set(_DETAILS) <= set(specs)
