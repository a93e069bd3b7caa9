"""Content capture as the official GenAI instrumentations do it.

Each value of ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (and of
``capture_content=``) is run with the real SDK, an in-memory span exporter and an
in-memory log exporter: content goes on spans, into the
``gen_ai.client.inference.operation.details`` log record, both or neither.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator, Mapping
from typing import Any, Final

import pytest
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes

from langhooks import LangHooksError, Message, TokenUsage, ToolCall, ToolContext
from langhooks.chain import LLMChain, Tool
from langhooks.integrations.opentelemetry import (
    CAPTURE_CONTENT_ENV,
    CaptureMode,
    OpenTelemetryHandler,
)
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

DETAILS: Final = "gen_ai.client.inference.operation.details"
CONTENT_KEYS: Final = frozenset(
    {
        gen_ai.GEN_AI_INPUT_MESSAGES,
        gen_ai.GEN_AI_OUTPUT_MESSAGES,
        gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS,
        gen_ai.GEN_AI_TOOL_DEFINITIONS,
        gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS,
        gen_ai.GEN_AI_TOOL_CALL_RESULT,
    }
)


def weather(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return f"sunny in {arguments['city']}"


WEATHER: Final = Tool("get_weather", weather, description="The weather in a city.")


class Kept:
    """In-memory span and log exporters on their own providers."""

    def __init__(self) -> None:
        self.spans_out = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans_out))
        self.logs_out = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(
            SimpleLogRecordProcessor(self.logs_out)
        )

    def handler(self, **options: Any) -> OpenTelemetryHandler:
        return OpenTelemetryHandler(
            tracer_provider=self.tracer_provider,
            logger_provider=self.logger_provider,
            **options,
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.spans_out.get_finished_spans())

    def chats(self) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name.startswith("chat")]

    def records(self) -> list[ReadableLogRecord]:
        return list(self.logs_out.get_finished_logs())


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kept]:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    made = Kept()
    yield made
    made.tracer_provider.shutdown()
    made.logger_provider.shutdown()


def run_with_tool(handler: OpenTelemetryHandler) -> None:
    """A run with a system prompt, a tool and a tool call: two model calls."""
    call = ToolCall(call_id="call-1", name="get_weather", arguments={"city": "Oslo"})
    usage = TokenUsage(input_tokens=11, output_tokens=4)
    model = ScriptedChatModel(
        [
            ScriptedTurn(text="Let me look.", tool_calls=[call], usage=usage),
            ScriptedTurn(text="Sunny.", usage=usage),
        ]
    )
    chain = LLMChain(model, tools=[WEATHER], callbacks=[handler])
    chain = chain.add_messages([Message.system("Be brief."), Message.user("Weather?")])
    assert chain.run().status == "ok"


def content_on_spans(kept: Kept) -> set[str]:
    return {key for span in kept.spans() for key in (span.attributes or {})} & (
        CONTENT_KEYS
    )


CASES: Final[list[tuple[str, bool, bool]]] = [
    # value, content on spans, content in log records
    ("span_only", True, False),
    ("true", True, False),
    ("event_only", False, True),
    ("span_and_event", True, True),
    ("no_content", False, False),
]


class TestEnvironment:
    """The environment variable, read when the handler is made."""

    @pytest.mark.parametrize(("value", "on_spans", "in_events"), CASES)
    def test_each_value(
        self,
        kept: Kept,
        monkeypatch: pytest.MonkeyPatch,
        value: str,
        on_spans: bool,
        in_events: bool,
    ) -> None:
        """Content goes where the value says, and nowhere else."""
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, value)
        run_with_tool(kept.handler())
        assert bool(content_on_spans(kept)) is on_spans
        records = kept.records()
        assert len(records) == (2 if in_events else 0)
        for record in records:
            assert record.log_record.event_name == DETAILS

    def test_unset_records_nothing(self, kept: Kept) -> None:
        """Unset: no content on spans and no log record."""
        handler = kept.handler()
        assert handler.capture_mode == "no_content"
        assert handler.capture_content is False
        run_with_tool(handler)
        assert content_on_spans(kept) == set()
        assert kept.records() == []

    def test_unknown_value_is_a_warning(
        self,
        kept: Kept,
        monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """An unknown value records nothing and says so in the log."""
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, "everything")
        with caplog.at_level(logging.WARNING):
            handler = kept.handler()
        assert handler.capture_mode == "no_content"
        assert "'everything' is not one of" in caplog.text

    def test_argument_wins(self, kept: Kept, monkeypatch: pytest.MonkeyPatch) -> None:
        """capture_content= set to a mode overrides the environment."""
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, "span_and_event")
        assert kept.handler(capture_content="no_content").capture_mode == "no_content"
        assert kept.handler(capture_content=True).capture_mode == "span_only"


class TestEventRecord:
    """The operation-details log record: attributes, content, context."""

    @pytest.mark.parametrize("mode", ["event_only", "span_and_event"])
    def test_record(self, kept: Kept, mode: CaptureMode) -> None:
        """One record per model call, in its chat span's context, with the span's
        attributes and the content as structured values."""
        run_with_tool(kept.handler(capture_content=mode))
        chats = kept.chats()
        first = kept.records()[0].log_record
        assert first.span_id == chats[0].context.span_id
        assert first.trace_id == chats[0].context.trace_id
        attributes: dict[str, Any] = dict(first.attributes or {})
        assert attributes[gen_ai.GEN_AI_OPERATION_NAME] == "chat"
        assert attributes[gen_ai.GEN_AI_PROVIDER_NAME] == "langhooks.scripted"
        assert tuple(attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS]) == (
            "tool_call",
        )
        assert attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] == 11
        messages = attributes[gen_ai.GEN_AI_INPUT_MESSAGES]
        assert messages[0]["role"] == "user"
        assert messages[0]["parts"][0]["content"] == "Weather?"
        assert attributes[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS][0]["content"] == (
            "Be brief."
        )
        assert attributes[gen_ai.GEN_AI_TOOL_DEFINITIONS][0]["name"] == "get_weather"
        output = attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES][0]
        assert output["parts"][1]["arguments"] == {"city": "Oslo"}

    def test_event_only_keeps_spans_clean(self, kept: Kept) -> None:
        """event_only: no content attribute on any span, tools' included."""
        run_with_tool(kept.handler(capture_content="event_only"))
        assert content_on_spans(kept) == set()
        assert len(kept.records()) == 2

    def test_failed_call(self, kept: Kept) -> None:
        """A failed model call's record has error.type and no output."""
        handler = kept.handler(capture_content="event_only")
        model = ScriptedChatModel([LangHooksError("timeout", "slow")])
        with pytest.raises(LangHooksError):
            handler.traced_stream(model, ChatRequest([Message.user("hi")]))
        (record,) = kept.records()
        attributes: dict[str, Any] = dict(record.log_record.attributes or {})
        assert attributes[error_attributes.ERROR_TYPE] == "timeout"
        assert gen_ai.GEN_AI_OUTPUT_MESSAGES not in attributes
        assert attributes[gen_ai.GEN_AI_INPUT_MESSAGES][0]["role"] == "user"

    def test_global_logger_provider(self) -> None:
        """Without logger_provider= the global provider gets the records (in a
        subprocess: the global provider can be set once per process)."""
        code = """
from opentelemetry._logs import set_logger_provider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter, SimpleLogRecordProcessor,
)
from langhooks import Message
from langhooks.integrations.opentelemetry import OpenTelemetryHandler
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

exporter = InMemoryLogRecordExporter()
provider = LoggerProvider()
provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
set_logger_provider(provider)
handler = OpenTelemetryHandler(capture_content="event_only")
handler.traced_stream(
    ScriptedChatModel([ScriptedTurn(text="ok")]), ChatRequest([Message.user("hi")])
)
print([r.log_record.event_name for r in exporter.get_finished_logs()])
"""
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == f"[{DETAILS!r}]"
