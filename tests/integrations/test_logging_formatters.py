"""The observability guide's logging recipes, run as written, keep tracebacks.

The structlog and python-json-logger blocks of ``docs/guide/observability.md`` are
executed as they stand; their handler is then pointed at a buffer, a chain whose
tool raises is run, and the JSON lines are read back: the ERROR record of the tool's
exception must carry its real traceback, not a list of reprs.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import pytest

from langhooks import Message, ToolCall
from langhooks.chain import LLMChain, Tool
from langhooks.integrations.logging import LoggingHandler
from langhooks.models import ScriptedChatModel, ScriptedTurn

GUIDE: Final = Path(__file__).resolve().parents[2] / "docs/guide/observability.md"


def recipe(heading: str) -> str:
    """The first python block under ``heading`` in the guide."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split(f"### {heading}\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, f"no python block under {heading!r}"
    return found.group(1)


class FlakyToolError(RuntimeError):
    """What the tool raises."""


def flaky(arguments: Mapping[str, Any], context: Any) -> str:
    raise FlakyToolError("the weather service is down")


@pytest.fixture
def events_logger() -> Iterator[logging.Logger]:
    """The ``langhooks.events`` logger, restored after the test."""
    logger = logging.getLogger("langhooks.events")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    logger.propagate = False
    yield logger
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate


def run_recipe(heading: str, logger: logging.Logger) -> list[dict[str, Any]]:
    """Execute the recipe, then a run whose tool raises; the JSON lines written."""
    before = list(logger.handlers)
    exec(compile(recipe(heading), f"<{heading}>", "exec"), {})
    (added,) = [h for h in logger.handlers if h not in before]
    out = io.StringIO()
    assert isinstance(added, logging.StreamHandler)
    added.setStream(out)
    call = ToolCall(call_id="c1", name="get_weather", arguments={"city": "Oslo"})
    model = ScriptedChatModel(
        [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="Sorry.")]
    )
    chain = LLMChain(
        model, tools=[Tool("get_weather", flaky)], callbacks=[LoggingHandler()]
    )
    chain.add_message(Message.user("Weather?")).run()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def failed_tool(lines: list[dict[str, Any]], key: str) -> dict[str, Any]:
    (line,) = [line for line in lines if key in line]
    return line


class TestStructlogRecipe:
    """The guide's structlog setup."""

    def test_traceback_is_rendered(self, events_logger: logging.Logger) -> None:
        """The tool's exception arrives as traceback text in ``exception``."""
        lines = run_recipe("With structlog", events_logger)
        line = failed_tool(lines, "exception")
        assert line["level"] == "error"
        assert line["langhooks_event"] == "on_tool_execution_exception"
        assert line["exception"].startswith("Traceback (most recent call last):")
        assert "FlakyToolError: the weather service is down" in line["exception"]
        assert "in flaky" in line["exception"]
        assert "exc_info" not in line

    def test_without_format_exc_info_the_traceback_is_lost(
        self, events_logger: logging.Logger
    ) -> None:
        """What the recipe fixes: without format_exc_info, exc_info is reprs."""
        import structlog

        stream = logging.StreamHandler(out := io.StringIO())
        stream.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=[structlog.stdlib.ExtraAdder()],
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.JSONRenderer(),
                ],
            )
        )
        events_logger.addHandler(stream)
        events_logger.setLevel(logging.INFO)
        try:
            raise FlakyToolError("x")
        except FlakyToolError:
            events_logger.error("failed", exc_info=True)
        (line,) = [json.loads(text) for text in out.getvalue().splitlines()]
        assert "Traceback" not in json.dumps(line)


class TestPythonJsonLoggerRecipe:
    """The guide's python-json-logger setup."""

    def test_traceback_is_rendered(self, events_logger: logging.Logger) -> None:
        """The tool's exception arrives as traceback text in ``exc_info``, beside
        the record's extra fields."""
        lines = run_recipe("With python-json-logger", events_logger)
        line = failed_tool(lines, "exc_info")
        assert line["levelname"] == "ERROR"
        assert line["name"] == "langhooks.events"
        assert line["langhooks_event"] == "on_tool_execution_exception"
        assert line["tool"] == "get_weather"
        assert line["exc_info"].startswith("Traceback (most recent call last):")
        assert "FlakyToolError: the weather service is down" in line["exc_info"]
        assert all(line["run_id"] == lines[0]["run_id"] for line in lines)
