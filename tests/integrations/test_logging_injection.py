"""``LoggingHandler`` on hostile values: one line per record, and no content.

A model chooses a tool's name, a provider writes an error's text, a user types a
prompt: none of them may forge a log record (a newline and a level name of their
own) or drive a terminal. Messages escape them; the extras keep them raw. A failed
tool's result text is content, never logged.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from typing_extensions import override

from langhooks import LangHooksError, Message, ToolCall
from langhooks.chain import LLMChain, RetryPolicy, Tool
from langhooks.integrations.logging import LoggingHandler
from langhooks.models import ScriptedChatModel, ScriptedTurn

FORGED = "get_weather\nCRITICAL forged: root login ok"
FORMAT = "%(levelname)s %(name)s: %(message)s"
LEVELS = ("DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ")


@pytest.fixture
def text_log() -> Iterator[tuple[logging.Logger, io.StringIO, list[logging.LogRecord]]]:
    """A logger at DEBUG writing plain text lines, and the records it made."""
    logger = logging.getLogger("tests.langhooks.injection")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    out = io.StringIO()
    stream = logging.StreamHandler(out)
    stream.setFormatter(logging.Formatter(FORMAT))
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        @override
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep()
    logger.addHandler(stream)
    logger.addHandler(keep)
    yield logger, out, records
    logger.removeHandler(stream)
    logger.removeHandler(keep)


def weather(arguments: Any, context: Any) -> str:
    """A tool that answers."""
    return "sunny"


class TestOneLinePerRecord:
    """Every message is one line, whatever the model or the provider sent."""

    def test_model_chosen_tool_name(
        self, text_log: tuple[logging.Logger, io.StringIO, list[logging.LogRecord]]
    ) -> None:
        """A tool name with a newline and a level is escaped in every message;
        no line of the log starts with the forged level; the extra is raw."""
        logger, out, records = text_log
        model = ScriptedChatModel(
            [
                ScriptedTurn(
                    tool_calls=[ToolCall(call_id="c1", name=FORGED, arguments={})]
                ),
                ScriptedTurn(text="Done."),
            ]
        )
        chain = LLMChain(
            model,
            tools=[Tool("get_weather", weather)],
            callbacks=[LoggingHandler(logger)],
        )
        chain.add_message(Message.user("Weather?")).run()
        lines = out.getvalue().splitlines()
        assert len(lines) == len(records)
        assert all(line.startswith(LEVELS) for line in lines)
        assert not any(line.startswith("CRITICAL") for line in lines)
        assert [r.getMessage() for r in records if "\n" in r.getMessage()] == []
        failed = [
            r for r in records if r.__dict__["langhooks_event"].endswith("failed")
        ]
        assert failed
        assert all(r.__dict__["tool"] == FORGED for r in failed)
        assert all("\\nCRITICAL forged" in r.getMessage() for r in failed)

    def test_error_text_and_streamed_text(
        self, text_log: tuple[logging.Logger, io.StringIO, list[logging.LogRecord]]
    ) -> None:
        """A provider's error text, and streamed text at DEBUG, with newlines,
        carriage returns and ANSI escapes: one line each, escaped."""
        logger, out, records = text_log
        error = LangHooksError(
            "overloaded", "overloaded\r\nCRITICAL forged: \x1b[31mred", retryable=True
        )
        model = ScriptedChatModel(
            [
                ScriptedTurn(error=error),
                ScriptedTurn(text="line one\nCRITICAL forged \x1b[2J"),
            ]
        )
        chain = LLMChain(
            model,
            retry=RetryPolicy(initial_delay=0.0, jitter=0.0, sleep=lambda s: None),
            callbacks=[LoggingHandler(logger)],
        )
        chain.add_message(Message.user("Hi")).run()
        lines = out.getvalue().splitlines()
        assert len(lines) == len(records)
        assert all(line.startswith(LEVELS) for line in lines)
        assert "\x1b" not in out.getvalue()
        assert "\r" not in out.getvalue()
        assert any(
            "overloaded\\r\\nCRITICAL forged: \\x1b[31mred" in line for line in lines
        )


class TestNoContent:
    """What the docs say is not logged is not in any message."""

    def test_failed_tool_result_text(
        self, text_log: tuple[logging.Logger, io.StringIO, list[logging.LogRecord]]
    ) -> None:
        """A tool that raises with a secret in its message: the failed call's
        WARNING names the tool only; the result text appears in no message."""
        logger, _out, records = text_log

        def leaky(arguments: Any, context: Any) -> str:
            raise ValueError("card 4111-1111-1111-1111 declined")

        model = ScriptedChatModel(
            [
                ScriptedTurn(tool_calls=[ToolCall(call_id="c1", name="pay")]),
                ScriptedTurn(text="Sorry."),
            ]
        )
        chain = LLMChain(
            model, tools=[Tool("pay", leaky)], callbacks=[LoggingHandler(logger)]
        )
        chain.add_message(Message.user("Pay.")).run()
        (failed,) = [
            r
            for r in records
            if r.__dict__["langhooks_event"] == "on_tool_execution_failed"
        ]
        assert failed.getMessage() == "on_tool_execution_failed pay failed"
        assert failed.levelno == logging.WARNING
        result_text = [
            m
            for m in (r.getMessage() for r in records)
            if "Error: the tool failed" in m
        ]
        assert result_text == []
