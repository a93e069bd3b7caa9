"""One chain run's spans: ``invoke_agent``, its ``chat`` and ``execute_tool`` spans.

``Telemetry`` is what ``OpenTelemetryHandler`` does: one per handler, serving any
number of concurrent runs, each found by its invocation id.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, final

from opentelemetry import trace
from opentelemetry._logs import LoggerProvider
from opentelemetry.context import attach
from opentelemetry.metrics import MeterProvider, get_meter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.trace import Span, SpanKind, TracerProvider

from ..._core._messages import ChatResponse, LangHooksError, ToolCall, ToolResult
from ..._core._tools import Tool, ToolProgress
from ..._version import __version__
from .. import _genai_content as content
from ._calls import (
    DURATION_BUCKETS,
    ERROR_TYPE,
    EXECUTE_TOOL,
    FIRST_CHUNK_BUCKETS,
    INVOKE_AGENT,
    PROGRESS_EVENT,
    PROGRESS_MESSAGE,
    PROGRESS_TOTAL,
    PROGRESS_VALUE,
    RETRY_ATTEMPT,
    RETRY_DELAY,
    RETRY_EVENT,
    SCHEMA_URL,
    TOKEN_BUCKETS,
    ChatCall,
    fail_span,
    provider,
    request_attributes,
    run_id,
)
from ._capture import CaptureMode, ContentCapture

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from langhooks.chain import LLMChain, RunResult
    from langhooks.models import ChatModel, ChatRequest

__all__ = ["Run", "Telemetry"]


@final
class Run:
    """The spans of one chain run: its own, the model call's, the tool calls'."""

    __slots__ = (
        "attempt",
        "chat",
        "context",
        "input_tokens",
        "next_attempt",
        "output_tokens",
        "run_id",
        "span",
        "tools",
    )

    def __init__(self, run_id: str, span: Span) -> None:
        self.run_id = run_id
        self.span = span
        self.context = trace.set_span_in_context(span)
        self.chat: ChatCall | None = None
        # The number of the model attempt under way, and of the next one (above 1
        # only when a retry was announced).
        self.attempt = 1
        self.next_attempt = 1
        self.tools: dict[str, Span] = {}
        self.input_tokens = 0
        self.output_tokens = 0


@final
class Telemetry:
    """What the handler does: spans per run, keyed by the run's id.

    One handler serves any number of concurrent runs; each run's state is found by
    its invocation id, so nothing is shared between runs but the dictionaries,
    which change under a lock.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        logger_provider: LoggerProvider | None,
        capture_content: bool | CaptureMode,
        agent_name: str,
    ) -> None:
        if tracer_provider is not None and not isinstance(
            tracer_provider, TracerProvider
        ):
            raise TypeError(
                f"tracer_provider must be an opentelemetry TracerProvider, got "
                f"{tracer_provider!r}"
            )
        if meter_provider is not None and not isinstance(meter_provider, MeterProvider):
            raise TypeError(
                f"meter_provider must be an opentelemetry MeterProvider, got "
                f"{meter_provider!r}"
            )
        #: Where message content goes (spans, log records, both or neither).
        self.capture: Final = ContentCapture(capture_content, logger_provider)
        name: object = agent_name  # checked: callers need not use a type checker
        if not isinstance(name, str) or not name:
            raise TypeError(f"agent_name must be a non-empty str, got {name!r}")
        self.tracer: Final = trace.get_tracer(
            "langhooks", __version__, tracer_provider, schema_url=SCHEMA_URL
        )
        meter = get_meter("langhooks", __version__, meter_provider, SCHEMA_URL)
        self.operation_duration: Final = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.token_usage: Final = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.time_to_first_chunk: Final = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time to receive the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=FIRST_CHUNK_BUCKETS,
        )
        self.agent_name: Final = agent_name
        self._lock: Final = threading.Lock()
        self._runs: Final[dict[str, Run]] = {}
        # Model calls still waiting for their first chunk, by run id: the per-token
        # path only looks here, and finds it empty once every stream has started.
        self.awaiting_chunk: Final[dict[str, ChatCall]] = {}

    # --- runs -------------------------------------------------------------------

    def run_start(self, chain: LLMChain) -> None:
        key = run_id(chain)
        if key is None:
            return
        attributes: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: INVOKE_AGENT,
            gen_ai.GEN_AI_PROVIDER_NAME: provider(chain.model),
            gen_ai.GEN_AI_AGENT_NAME: self.agent_name,
            gen_ai.GEN_AI_CONVERSATION_ID: key,
        }
        model = request_attributes(chain.model).get(gen_ai.GEN_AI_REQUEST_MODEL)
        if model is not None:
            attributes[gen_ai.GEN_AI_REQUEST_MODEL] = model
        # Started in the caller's context (the handler sees a copy of it), so the
        # run's span is a child of the caller's current span.
        span = self.tracer.start_span(
            f"{INVOKE_AGENT} {self.agent_name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        with self._lock:
            self._runs[key] = Run(key, span)

    def run_complete(self, chain: LLMChain, result: RunResult) -> None:
        run = self._pop(chain)
        if run is not None:
            self._end_run(run, None)

    def run_error(self, chain: LLMChain, error: LangHooksError) -> None:
        run = self._pop(chain)
        if run is not None:
            self._end_run(run, error)

    def _pop(self, chain: LLMChain) -> Run | None:
        key = run_id(chain) or ""
        with self._lock:
            self.awaiting_chunk.pop(key, None)
            return self._runs.pop(key, None)

    def _end_run(self, run: Run, error: LangHooksError | None) -> None:
        # Whatever is still open ends here: an error ends a run mid-call too.
        reason = error or LangHooksError("cancelled", "the run ended first")
        if run.chat is not None:
            run.chat.fail(reason)
        for span in run.tools.values():
            fail_span(span, reason.type, str(reason), None)
            span.end()
        span = run.span
        if run.input_tokens or run.output_tokens:
            span.set_attribute(gen_ai.GEN_AI_USAGE_INPUT_TOKENS, run.input_tokens)
            span.set_attribute(gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, run.output_tokens)
        if error is not None:
            fail_span(span, error.type, str(error), error)
        span.end()

    def _run(self, chain: LLMChain) -> Run | None:
        invocation = chain.invocation
        return None if invocation is None else self._runs.get(invocation.id)

    # --- model calls ------------------------------------------------------------

    def call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        run = self._run(chain)
        if run is None:
            return
        if run.chat is not None:  # pragma: no cover  # the runtime ends each attempt
            run.chat.fail(LangHooksError("cancelled", "a new attempt began"))
        run.attempt, run.next_attempt = run.next_attempt, 1
        call = ChatCall(self, model, request, run.context, run.run_id)
        run.chat = call
        with self._lock:
            self.awaiting_chunk[run.run_id] = call
        # The runtime calls this in the model attempt's own copy of the context:
        # the span is current for the model's code (an instrumented HTTP client's
        # spans nest under it) and for nothing after the attempt.
        attach(trace.set_span_in_context(call.span))

    def chunk(self, chain: LLMChain) -> None:
        invocation = chain.invocation
        if invocation is not None:
            call = self.awaiting_chunk.pop(invocation.id, None)
            if call is not None:
                call.first_chunk()

    def call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        run = self._run(chain)
        if run is None or run.chat is None:
            return
        call, run.chat = run.chat, None
        self.awaiting_chunk.pop(run.run_id, None)
        input_tokens, output_tokens = call.complete(response)
        run.input_tokens += input_tokens
        run.output_tokens += output_tokens

    def call_error(self, chain: LLMChain, error: LangHooksError) -> None:
        run = self._run(chain)
        if run is None or run.chat is None:
            return
        call, run.chat = run.chat, None
        self.awaiting_chunk.pop(run.run_id, None)
        call.fail(error)

    def retry(self, chain: LLMChain, error: LangHooksError, delay: float) -> None:
        """The failed call will be retried: an event on the run's span (the failed
        attempt's ``chat`` span has already ended)."""
        run = self._run(chain)
        if run is None:
            return
        run.next_attempt = run.attempt + 1
        run.span.add_event(
            RETRY_EVENT,
            {
                ERROR_TYPE: error.type,
                RETRY_ATTEMPT: run.next_attempt,
                RETRY_DELAY: delay,
            },
        )

    # --- tool calls -------------------------------------------------------------

    def _tool_span(
        self, run: Run, call_id: str, name: str, tool: Tool | None, arguments: object
    ) -> Span:
        attributes: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: EXECUTE_TOOL,
            gen_ai.GEN_AI_TOOL_NAME: name,
            gen_ai.GEN_AI_TOOL_CALL_ID: call_id,
            gen_ai.GEN_AI_TOOL_TYPE: "function",
            gen_ai.GEN_AI_CONVERSATION_ID: run.run_id,
        }
        if tool is not None and tool.description:
            attributes[gen_ai.GEN_AI_TOOL_DESCRIPTION] = tool.description
        if self.capture.on_spans and arguments is not None:
            attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = content.to_json(arguments)
        return self.tracer.start_span(
            f"{EXECUTE_TOOL} {name}",
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )

    def tool_start(self, chain: LLMChain, call: ToolCall, tool: Tool) -> None:
        """In the tool's own thread or task: open its span and make it current.

        The runtime runs each tool call in its own copy of the context, so the span
        stays current for the tool's code and for nothing after it.
        """
        run = self._run(chain)
        if run is None:
            return
        span = self._tool_span(run, call.call_id, call.name, tool, call.arguments)
        with self._lock:
            run.tools[call.call_id] = span
        attach(trace.set_span_in_context(span))

    def tool_progress(
        self, chain: LLMChain, call: ToolCall, progress: ToolProgress
    ) -> None:
        """A progress report: an event on the call's open span."""
        run = self._run(chain)
        if run is None:
            return
        with self._lock:
            span = run.tools.get(call.call_id)
        if span is None:  # the handler was added after the call started
            return
        attributes: dict[str, AttributeValue] = {PROGRESS_VALUE: progress.progress}
        if progress.total is not None:
            attributes[PROGRESS_TOTAL] = progress.total
        if progress.message is not None and self.capture.on_spans:
            attributes[PROGRESS_MESSAGE] = progress.message
        span.add_event(PROGRESS_EVENT, attributes)

    def _take_tool_span(
        self, chain: LLMChain, call_id: str, name: str, arguments: object
    ) -> Span | None:
        """The call's open span, or a new one for a call that never ran."""
        run = self._run(chain)
        if run is None:
            return None
        with self._lock:
            span = run.tools.pop(call_id, None)
        if span is None:
            span = self._tool_span(run, call_id, name, None, arguments)
        return span

    def tool_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        span = self._take_tool_span(chain, call.call_id, call.name, call.arguments)
        if span is not None:
            self._result(span, result)
            span.end()

    def tool_failed(self, chain: LLMChain, call: ToolCall, result: ToolResult) -> None:
        span = self._take_tool_span(chain, call.call_id, call.name, call.arguments)
        if span is None:
            return
        self._result(span, result)
        if result.exception is not None:
            error_type = type(result.exception).__qualname__
            fail_span(span, error_type, str(result.exception), result.exception)
        elif result.is_error:
            fail_span(span, "tool_error", "the tool call failed", None)
        else:
            fail_span(span, "denied", "the call was denied or rejected", None)
        span.end()

    def tools_interrupted(self, chain: LLMChain, results: Sequence[ToolResult]) -> None:
        for result in results:
            call_id, name = result.tool_call_id, result.name
            span = self._take_tool_span(chain, call_id, name, None)
            if span is not None:
                fail_span(
                    span, "interrupted", "the call waits for a human decision", None
                )
                span.end()

    def _result(self, span: Span, result: ToolResult) -> None:
        if self.capture.on_spans:
            span.set_attribute(gen_ai.GEN_AI_TOOL_CALL_RESULT, result.text)
