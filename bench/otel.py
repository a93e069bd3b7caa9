"""What ``OpenTelemetryHandler`` costs (issue 13), in one run.

Usage (from the repository root)::

    python bench/otel.py            # about half a minute
    python bench/otel.py --quick    # a smoke run

Two comparisons, each timed with ``_harness.measure`` (interleaved rounds, median
of paired ratios; see ``_harness.py`` and ``docs/performance.md``):

1. A scripted 100-turn run with two tool calls a turn, traced by
   ``OpenTelemetryHandler`` against the same run traced by ``HandMadeSpans``: a
   handler written the way a user would write it by hand for one run at a time,
   making the same spans with the same attributes and the same metrics through the
   same SDK. Both export to a span processor that drops what it gets, so only the
   making of spans is timed. Goal: at most 1.3x. The untraced run is shown too.
2. One streamed token (``on_llm_new_delta``) delivered as the runtime delivers it
   (through ``HandlerWithoutInvocation``) to ``OpenTelemetryHandler`` once its run's
   first chunk is recorded (no span work left to do), against a handler whose
   ``on_llm_new_delta`` does nothing. Goal: at most 1.2x.

Exits 0 whatever the figures: a shared machine's timings are reported, not asserted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import _harness
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import Attributes, AttributeValue
from typing_extensions import override

import langhooks
from langhooks import (
    ChainCallbackHandler,
    ChatResponse,
    HandlerWithoutInvocation,
    Invocation,
    MessageDelta,
    Tool,
    ToolCall,
    ToolResult,
)
from langhooks.chain import LLMChain, RunResult
from langhooks.integrations._otel._calls import (
    DURATION_BUCKETS,
    FIRST_CHUNK_BUCKETS,
    TOKEN_BUCKETS,
)
from langhooks.integrations._otel._genai_content import finish_reason
from langhooks.integrations.opentelemetry import OpenTelemetryHandler
from langhooks.models import ChatModel, ChatRequest, ScriptedChatModel, ScriptedTurn

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "otel.json"
TURNS = 100


class Dropping(SpanProcessor):
    """A span processor that receives every ended span and keeps none."""

    def __init__(self) -> None:
        self.ended = 0

    @override
    def on_end(self, span: ReadableSpan) -> None:
        self.ended += 1


class HandMadeSpans(ChainCallbackHandler):
    """The same spans and metrics, written by hand for one run at a time."""

    def __init__(self, tracer_provider: TracerProvider, meter: MeterProvider) -> None:
        self.tracer = tracer_provider.get_tracer("hand-made")
        m = meter.get_meter("hand-made")
        self.duration = m.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION, unit="s"
        )
        self.tokens = m.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE, unit="{token}"
        )
        self.first = m.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK, unit="s"
        )
        self.run: Span | None = None
        self.run_context: otel_context.Context | None = None
        self.chat: Span | None = None
        self.chat_started = 0.0
        self.waiting_first = False
        self.tools: dict[str, Span] = {}

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        run_id = chain.invocation.id if chain.invocation else ""
        self.run = self.tracer.start_span(
            "invoke_agent langhooks",
            attributes={
                gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent",
                gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
                gen_ai.GEN_AI_AGENT_NAME: "langhooks",
                gen_ai.GEN_AI_CONVERSATION_ID: run_id,
            },
        )
        self.run_context = trace.set_span_in_context(self.run)

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        run_id = chain.invocation.id if chain.invocation else ""
        self.chat = self.tracer.start_span(
            "chat",
            context=self.run_context,
            kind=SpanKind.CLIENT,
            attributes={
                gen_ai.GEN_AI_OPERATION_NAME: "chat",
                gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
                gen_ai.GEN_AI_CONVERSATION_ID: run_id,
            },
        )
        self.chat_started = time.perf_counter()
        self.waiting_first = True

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        if self.waiting_first and self.chat is not None:
            self.waiting_first = False
            elapsed = time.perf_counter() - self.chat_started
            self.chat.set_attribute(gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, elapsed)
            self.first.record(elapsed, {gen_ai.GEN_AI_OPERATION_NAME: "chat"})

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        chat = self.chat
        if chat is None:
            return
        chat.set_attribute(gen_ai.GEN_AI_RESPONSE_MODEL, response.model_name or "")
        chat.set_attribute(gen_ai.GEN_AI_RESPONSE_ID, response.id or "")
        if response.finish_reason is not None:
            reason = response.finish_reason.value
            chat.set_attribute(gen_ai.GEN_AI_RESPONSE_FINISH_REASONS, (reason,))
        attributes = {
            gen_ai.GEN_AI_OPERATION_NAME: "chat",
            gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
            gen_ai.GEN_AI_RESPONSE_MODEL: response.model_name or "",
        }
        usage = response.token_usage
        if usage is not None:
            chat.set_attribute(gen_ai.GEN_AI_USAGE_INPUT_TOKENS, usage.input_tokens)
            chat.set_attribute(gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, usage.output_tokens)
            self.tokens.record(
                usage.input_tokens, {**attributes, gen_ai.GEN_AI_TOKEN_TYPE: "input"}
            )
            self.tokens.record(
                usage.output_tokens, {**attributes, gen_ai.GEN_AI_TOKEN_TYPE: "output"}
            )
        self.duration.record(time.perf_counter() - self.chat_started, attributes)
        chat.end()
        self.chat = None

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self.run_context,
            attributes={
                gen_ai.GEN_AI_OPERATION_NAME: "execute_tool",
                gen_ai.GEN_AI_TOOL_NAME: call.name,
                gen_ai.GEN_AI_TOOL_CALL_ID: call.call_id,
                gen_ai.GEN_AI_TOOL_TYPE: "function",
            },
        )
        self.tools[call.call_id] = span
        otel_context.attach(trace.set_span_in_context(span))

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.tools.pop(call.call_id).end()

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        if self.run is not None:
            self.run.end()


class FloorSpans(ChainCallbackHandler):
    """What ``OpenTelemetryHandler`` makes, through the cheapest SDK calls: the floor.

    The same spans with the same attributes, and the same metric points, for one
    run at a time: every span's attributes given at ``start_span`` or in one
    ``set_attributes`` call, no span made current (no context attached), each
    metric's attributes built once and reused. What this costs over a bare run is
    the SDK's own price for the handler's output.
    """

    def __init__(self, tracer_provider: TracerProvider, meter: MeterProvider) -> None:
        self.tracer = tracer_provider.get_tracer("floor")
        m = meter.get_meter("floor")
        self.duration = m.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
            unit="s",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.tokens = m.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
            unit="{token}",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.first = m.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
            unit="s",
            explicit_bucket_boundaries_advisory=FIRST_CHUNK_BUCKETS,
        )
        self.chat_metric: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: "chat",
            gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
        }
        # Per response model: the duration's attributes and the two token types'.
        self.response_metrics: dict[str, tuple[Attributes, Attributes, Attributes]] = {}
        self.run: Span | None = None
        self.run_context: otel_context.Context | None = None
        self.chat_attributes: Attributes = None
        self.run_id = ""
        self.chat: Span | None = None
        self.chat_started = 0.0
        self.waiting_first = False
        self.input_tokens = 0
        self.output_tokens = 0
        self.tools: dict[str, Span] = {}

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        run_id = self.run_id = chain.invocation.id if chain.invocation else ""
        self.run = self.tracer.start_span(
            "invoke_agent langhooks",
            attributes={
                gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent",
                gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
                gen_ai.GEN_AI_AGENT_NAME: "langhooks",
                gen_ai.GEN_AI_CONVERSATION_ID: run_id,
            },
        )
        self.run_context = trace.set_span_in_context(self.run)
        self.chat_attributes = {
            **self.chat_metric,
            gen_ai.GEN_AI_CONVERSATION_ID: run_id,
        }
        self.input_tokens = self.output_tokens = 0

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self.chat = self.tracer.start_span(
            "chat",
            context=self.run_context,
            kind=SpanKind.CLIENT,
            attributes=self.chat_attributes,
        )
        self.chat_started = time.perf_counter()
        self.waiting_first = True

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        if self.waiting_first and self.chat is not None:
            self.waiting_first = False
            elapsed = time.perf_counter() - self.chat_started
            self.chat.set_attribute(gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, elapsed)
            self.first.record(elapsed, self.chat_metric)

    def _response_metrics(
        self, model: str
    ) -> tuple[Attributes, Attributes, Attributes]:
        found = self.response_metrics.get(model)
        if found is None:
            duration = {**self.chat_metric, gen_ai.GEN_AI_RESPONSE_MODEL: model}
            found = self.response_metrics[model] = (
                duration,
                {**duration, gen_ai.GEN_AI_TOKEN_TYPE: "input"},
                {**duration, gen_ai.GEN_AI_TOKEN_TYPE: "output"},
            )
        return found

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        chat = self.chat
        if chat is None:
            return
        model = response.model_name or ""
        said: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_RESPONSE_MODEL: model,
            gen_ai.GEN_AI_RESPONSE_ID: response.id or "",
        }
        if response.finish_reason is not None:
            said[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = (
                finish_reason(response.finish_reason),
            )
        duration, input_type, output_type = self._response_metrics(model)
        usage = response.token_usage
        if usage is not None:
            said[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
            said[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
        chat.set_attributes(said)
        if usage is not None:
            self.tokens.record(usage.input_tokens, input_type)
            self.tokens.record(usage.output_tokens, output_type)
        self.duration.record(time.perf_counter() - self.chat_started, duration)
        chat.end()
        self.chat = None

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.tools[call.call_id] = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self.run_context,
            attributes={
                gen_ai.GEN_AI_OPERATION_NAME: "execute_tool",
                gen_ai.GEN_AI_TOOL_NAME: call.name,
                gen_ai.GEN_AI_TOOL_CALL_ID: call.call_id,
                gen_ai.GEN_AI_TOOL_TYPE: "function",
                gen_ai.GEN_AI_CONVERSATION_ID: self.run_id,
            },
        )

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.tools.pop(call.call_id).end()

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        if self.run is not None:
            self.run.set_attributes(
                {
                    gen_ai.GEN_AI_USAGE_INPUT_TOKENS: self.input_tokens,
                    gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: self.output_tokens,
                }
            )
            self.run.end()


class BareSpans(ChainCallbackHandler):
    """The same three spans a turn, with no attributes and no metrics.

    The least the SDK can charge for the span structure alone: below this, only
    fewer spans or no SDK.
    """

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self.tracer = tracer_provider.get_tracer("bare-spans")
        self.run: Span | None = None
        self.run_context: otel_context.Context | None = None
        self.chat: Span | None = None
        self.tools: dict[str, Span] = {}

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        self.run = self.tracer.start_span("invoke_agent langhooks")
        self.run_context = trace.set_span_in_context(self.run)

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self.chat = self.tracer.start_span(
            "chat", context=self.run_context, kind=SpanKind.CLIENT
        )

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        if self.chat is not None:
            self.chat.end()
            self.chat = None

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.tools[call.call_id] = self.tracer.start_span(
            f"execute_tool {call.name}", context=self.run_context
        )

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.tools.pop(call.call_id).end()

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        if self.run is not None:
            self.run.end()


class NoOpDeltas(ChainCallbackHandler):
    """A handler whose on_llm_new_delta does nothing: the per-token floor."""

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        return None


def _script(turns: int) -> list[ScriptedTurn]:
    script = [
        ScriptedTurn(
            text="Let me check both.",
            tool_calls=[
                ToolCall(
                    call_id=f"call-{turn}-{tool}",
                    name=tool,
                    arguments={"turn": turn},
                    index=position,
                )
                for position, tool in enumerate(("lookup", "compute"))
            ],
            usage=langhooks.TokenUsage(input_tokens=100, output_tokens=20),
        )
        for turn in range(turns)
    ]
    script.append(ScriptedTurn(text="All done."))
    return script


def run_case(
    name: str, turns: int, handlers: Sequence[ChainCallbackHandler]
) -> _harness.Case:
    """A case: one scripted ``turns``-turn run with two tools a turn."""
    tools = [
        Tool(tool, lambda arguments, context: "ok") for tool in ("lookup", "compute")
    ]
    script = _script(turns)
    question = langhooks.Message.user("go")

    def run() -> None:
        chain = LLMChain(ScriptedChatModel(script), tools=tools, callbacks=handlers)
        result = chain.add_message(question).run(max_runs=turns + 1)
        assert result.status == "ok", result.error

    return _harness.Case(name, run, turns + 1)


def token_case(name: str, handler: ChainCallbackHandler, tokens: int) -> _harness.Case:
    """A case: ``tokens`` streamed deltas delivered as the runtime delivers them."""
    wrapped = HandlerWithoutInvocation.wrap(handler)
    chain = LLMChain(ScriptedChatModel([]), invocation=Invocation(name="run"))
    batches = tuple((MessageDelta(text=f"t{i % 8}"),) for i in range(tokens))

    def run() -> None:
        deliver = wrapped.on_llm_new_delta
        for batch in batches:
            deliver(chain, batch)

    return _harness.Case(name, run, tokens)


def started_run(handler: OpenTelemetryHandler) -> None:
    """Put ``handler`` in the state of a run whose stream is under way.

    The run and its chat span are open and the first chunk was recorded, so a
    token has no span work left: what remains is the handler's own check.
    """
    chain = LLMChain(ScriptedChatModel([]), invocation=Invocation(name="run"))
    handler.on_run_start(chain)
    handler.on_llm_call_start(chain, ScriptedChatModel([]), ChatRequest([]))
    handler.on_llm_new_delta(chain, (MessageDelta(text="first"),))


def main(argv: Sequence[str] | None = None) -> int:
    """Run both comparisons and print (and save) the figures.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0.
    """
    settings = _harness.parse_settings(
        "Time OpenTelemetryHandler against hand-made spans and a no-op handler.",
        DEFAULT_JSON,
        argv,
    )
    turns = 10 if settings.quick else TURNS
    provider = TracerProvider()
    dropping = Dropping()
    provider.add_span_processor(dropping)
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()])
    handler = OpenTelemetryHandler(tracer_provider=provider, meter_provider=meter)
    cases = [
        run_case("run_untraced", turns, []),
        run_case("run_hand_made", turns, [HandMadeSpans(provider, meter)]),
        run_case("run_handler", turns, [handler]),
    ]
    token_handler = OpenTelemetryHandler(tracer_provider=provider, meter_provider=meter)
    started_run(token_handler)
    cases += [
        token_case("token_noop", NoOpDeltas(), settings.events),
        token_case("token_handler", token_handler, settings.events),
    ]
    print(
        f"{settings.rounds} rounds of >= {settings.min_round_s * 1000:.0f} ms; "
        f"{turns}-turn runs; {settings.events} tokens per token case",
        file=sys.stderr,
    )
    results = _harness.measure(
        cases, settings, progress=lambda note: print(note, file=sys.stderr)
    )
    targets = (
        _harness.Target(
            f"{turns}-turn run: OpenTelemetryHandler vs the same spans by hand "
            f"(ns per model turn)",
            "run_handler",
            "run_hand_made",
            1.3,
        ),
        _harness.Target(
            "a streamed token with no span work: OpenTelemetryHandler vs a no-op "
            "on_llm_new_delta",
            "token_handler",
            "token_noop",
            1.2,
        ),
    )
    print(
        _harness.format_table(
            _harness.TARGET_HEADERS, [target.row(results) for target in targets]
        )
    )
    untraced = results["run_untraced"]
    traced = results["run_handler"]
    print(
        f"\nthe same run untraced: {untraced.median / 1000:.0f} us per turn; "
        f"traced by the handler {traced.median / 1000:.0f} us per turn "
        f"({traced.ratio(untraced):.2f}x); spans ended: {dropping.ended}"
    )
    if settings.json_path is not None:
        payload: Mapping[str, Any] = {
            "machine": _harness.machine_info(),
            "turns": turns,
            "targets": [target.as_json(results) for target in targets],
            "results": {name: result.as_json() for name, result in results.items()},
        }
        _harness.save_json(settings.json_path, payload)
        print(f"saved {settings.json_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
