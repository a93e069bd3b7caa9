"""OpenTelemetry spans and metrics for langhooks runs, after the GenAI conventions.

``OpenTelemetryHandler`` (``AsyncOpenTelemetryHandler`` for ``arun()`` with async
handlers) turns a chain run's events into the spans and metrics of the OpenTelemetry
semantic conventions for generative AI (attribute names come from
``opentelemetry-semantic-conventions``, never retyped):

- ``invoke_agent {agent_name}`` (INTERNAL), one per run, a child of the caller's
  current span; the caller's current span is unchanged afterwards;
- ``chat {model}`` (CLIENT), one per model attempt, a child of the run's span and
  the current span while the model streams (an instrumented HTTP client's spans
  nest under it); a failed attempt, each retry and each fallback is its own span,
  with ``error.type``; a retry is also a ``langhooks.retry`` event on the run's span;
- ``execute_tool {tool}`` (INTERNAL), one per tool call, opened in the tool's own
  thread or task and made current there, so spans the tool's code makes are its
  children; a denied, rejected or interrupted call gets one too, with an error
  status and ``error.type`` saying which;
- the ``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage`` and
  ``gen_ai.client.operation.time_to_first_chunk`` histograms.

Message content (prompts, answers, tool arguments and results) is recorded only with
``capture_content=True`` or when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is ``true`` (or ``span_only`` / ``span_and_event``) when the handler is made.

For a model called without ``LLMChain``, ``traced_stream`` / ``atraced_stream`` wrap
one ``model.stream()`` in a ``chat`` span.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, final

from typing_extensions import override

try:
    from opentelemetry import trace
    from opentelemetry.context import attach
    from opentelemetry.metrics import MeterProvider, get_meter
    from opentelemetry.semconv._incubating.attributes import (
        gen_ai_attributes as gen_ai,
    )
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
    from opentelemetry.semconv.attributes import error_attributes, server_attributes
    from opentelemetry.semconv.schemas import Schemas
    from opentelemetry.trace import (
        Span,
        SpanKind,
        Status,
        StatusCode,
        TracerProvider,
    )
except ImportError as _missing:  # pragma: no cover  # tested in a subprocess
    raise ImportError(
        "langhooks.integrations.opentelemetry needs OpenTelemetry: "
        "pip install 'langhooks[opentelemetry]'"
    ) from _missing

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._messages import (
    ChatResponse,
    LangHooksError,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    Tool,
    ToolCall,
    ToolResult,
)
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from .._version import __version__
from .._wrap._compose import AsyncCompositeStreamingHandler, CompositeStreamingHandler
from . import _genai_content as content

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.util.types import AttributeValue

    from ..chain import LLMChain, RunResult
    from ..models import ChatModel, ChatRequest

__all__ = ["CAPTURE_CONTENT_ENV", "AsyncOpenTelemetryHandler", "OpenTelemetryHandler"]

#: The environment variable that turns content capture on (``true``).
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CAPTURE_VALUES: Final = frozenset({"true", "span_only", "span_and_event"})

_SCHEMA_URL: Final = Schemas.V1_44_0.value
_CHAT: Final = gen_ai.GenAiOperationNameValues.CHAT.value
_INVOKE_AGENT: Final = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
_EXECUTE_TOOL: Final = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
_INPUT: Final = gen_ai.GenAiTokenTypeValues.INPUT.value
_OUTPUT: Final = gen_ai.GenAiTokenTypeValues.OUTPUT.value
_ERROR_TYPE: Final = error_attributes.ERROR_TYPE
# The event on a run's span saying a failed model call will be retried, and its
# attributes: langhooks' own names, as the conventions define none for a retry.
_RETRY_EVENT: Final = "langhooks.retry"
_RETRY_ATTEMPT: Final = "langhooks.retry.attempt"
_RETRY_DELAY: Final = "langhooks.retry.delay"

# The bucket boundaries the conventions advise for each histogram.
_DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96,
    81.92,
)  # fmt: skip
_TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
    67108864,
)  # fmt: skip
_FIRST_CHUNK_BUCKETS: Final = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
    7.5, 10.0,
)  # fmt: skip

# gen_ai.provider.name of langhooks' own models, by class name.
_PROVIDERS: Final = {
    "OpenAIChatModel": gen_ai.GenAiProviderNameValues.OPENAI.value,
    "OpenAIResponsesModel": gen_ai.GenAiProviderNameValues.OPENAI.value,
    "AnthropicChatModel": gen_ai.GenAiProviderNameValues.ANTHROPIC.value,
    "OllamaChatModel": "ollama",
    "ScriptedChatModel": "langhooks.scripted",
}
# The conventions' value when the provider is not known.
_OTHER_PROVIDER: Final = "_OTHER"


def _provider(model: object) -> str:
    cls = type(model)
    if cls.__module__.startswith("langhooks."):
        return _PROVIDERS.get(cls.__name__, _OTHER_PROVIDER)
    return _OTHER_PROVIDER


def _request_attributes(model: object) -> dict[str, AttributeValue]:
    """What a model object says about the request: model name, server, options."""
    attributes: dict[str, AttributeValue] = {}
    name = getattr(model, "model", None)
    if isinstance(name, str) and name:
        attributes[gen_ai.GEN_AI_REQUEST_MODEL] = name
    for attribute, key in (
        ("max_tokens", gen_ai.GEN_AI_REQUEST_MAX_TOKENS),
        ("temperature", gen_ai.GEN_AI_REQUEST_TEMPERATURE),
    ):
        value = getattr(model, attribute, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[key] = value
    base_url = getattr(model, "base_url", None)
    if isinstance(base_url, str) and base_url:
        from urllib.parse import urlsplit

        url = urlsplit(base_url)
        if url.hostname:
            attributes[server_attributes.SERVER_ADDRESS] = url.hostname
            port = url.port or {"http": 80, "https": 443}.get(url.scheme)
            if port is not None:
                attributes[server_attributes.SERVER_PORT] = port
    return attributes


def _capture_from_environment() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CAPTURE_VALUES


def _fail(
    span: Span, error_type: str, description: str, exception: BaseException | None
) -> None:
    span.set_attribute(_ERROR_TYPE, error_type)
    if exception is not None:
        span.record_exception(exception)
    span.set_status(Status(StatusCode.ERROR, description))


def _run_id(chain: LLMChain) -> str | None:
    invocation = chain.invocation
    return None if invocation is None else invocation.id


# --- one model call -----------------------------------------------------------------


@final
class _ChatCall:
    """The ``chat`` span of one model attempt and its metrics."""

    __slots__ = ("_metric_attributes", "_started", "_telemetry", "span")

    def __init__(
        self,
        telemetry: _Telemetry,
        model: object,
        request: ChatRequest,
        parent: Context | None,
        conversation_id: str | None,
    ) -> None:
        self._telemetry = telemetry
        provider = _provider(model)
        attributes = _request_attributes(model)
        self._metric_attributes: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: _CHAT,
            gen_ai.GEN_AI_PROVIDER_NAME: provider,
            **attributes,
        }
        span_attributes = dict(self._metric_attributes)
        if conversation_id is not None:
            span_attributes[gen_ai.GEN_AI_CONVERSATION_ID] = conversation_id
        if telemetry.capture_content:
            span_attributes.update(_request_content(request))
        name = attributes.get(gen_ai.GEN_AI_REQUEST_MODEL)
        self.span = telemetry.tracer.start_span(
            f"{_CHAT} {name}" if name else _CHAT,
            context=parent,
            kind=SpanKind.CLIENT,
            attributes=span_attributes,
        )
        self._started = time.perf_counter()

    def first_chunk(self) -> None:
        """The first streamed piece arrived: record the time to it."""
        elapsed = time.perf_counter() - self._started
        self.span.set_attribute(gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, elapsed)
        self._telemetry.time_to_first_chunk.record(elapsed, self._metric_attributes)

    def complete(self, response: ChatResponse) -> tuple[int, int]:
        """The attempt succeeded: record the response, end the span.

        Returns:
            The input and output tokens it reported (0, 0 without usage).
        """
        span = self.span
        metric = self._metric_attributes
        if response.model_name:
            span.set_attribute(gen_ai.GEN_AI_RESPONSE_MODEL, response.model_name)
            metric[gen_ai.GEN_AI_RESPONSE_MODEL] = response.model_name
        if response.id:
            span.set_attribute(gen_ai.GEN_AI_RESPONSE_ID, response.id)
        if response.finish_reason is not None:
            reason = content.finish_reason(response.finish_reason)
            span.set_attribute(gen_ai.GEN_AI_RESPONSE_FINISH_REASONS, (reason,))
        if self._telemetry.capture_content:
            span.set_attribute(
                gen_ai.GEN_AI_OUTPUT_MESSAGES,
                content.output_messages(response.message, response.finish_reason),
            )
        tokens = (0, 0)
        usage = response.token_usage
        if usage is not None:
            tokens = (usage.input_tokens, usage.output_tokens)
            span.set_attribute(gen_ai.GEN_AI_USAGE_INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, usage.output_tokens)
            record = self._telemetry.token_usage.record
            record(usage.input_tokens, {**metric, gen_ai.GEN_AI_TOKEN_TYPE: _INPUT})
            record(usage.output_tokens, {**metric, gen_ai.GEN_AI_TOKEN_TYPE: _OUTPUT})
        if response.message.status == "cancelled":
            # Cut short on purpose: marked so that a partial answer is never read as
            # a whole one.
            _fail(span, "cancelled", "the stream was cancelled", None)
            metric = {**metric, _ERROR_TYPE: "cancelled"}
        self._end(metric)
        return tokens

    def fail(self, error: BaseException) -> None:
        """The attempt failed with ``error``: error status, end the span."""
        error_type = (
            error.type
            if isinstance(error, LangHooksError)
            else type(error).__qualname__
        )
        _fail(self.span, error_type, str(error), error)
        self._end({**self._metric_attributes, _ERROR_TYPE: error_type})

    def _end(self, metric_attributes: Mapping[str, AttributeValue]) -> None:
        elapsed = time.perf_counter() - self._started
        self._telemetry.operation_duration.record(elapsed, metric_attributes)
        self.span.end()


def _request_content(request: ChatRequest) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        gen_ai.GEN_AI_INPUT_MESSAGES: content.input_messages(request.messages)
    }
    system = content.system_instructions(request.messages)
    if system is not None:
        attributes[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS] = system
    tools = content.tool_definitions(request.tools)
    if tools is not None:
        attributes[gen_ai.GEN_AI_TOOL_DEFINITIONS] = tools
    return attributes


@final
class _FirstChunk(StreamingChatResponseHandler):
    """Times a bare stream's first piece (any partial) for ``traced_stream``."""

    __slots__ = ("_call",)

    def __init__(self, call: _ChatCall) -> None:
        self._call: _ChatCall | None = call

    def _first(self) -> None:
        call = self._call
        if call is not None:
            self._call = None
            call.first_chunk()

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self._first()

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        self._first()

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        self._first()


# --- one run ------------------------------------------------------------------------


@final
class _Run:
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
        self.chat: _ChatCall | None = None
        # The number of the model attempt under way, and of the next one (above 1
        # only when a retry was announced).
        self.attempt = 1
        self.next_attempt = 1
        self.tools: dict[str, Span] = {}
        self.input_tokens = 0
        self.output_tokens = 0


@final
class _Telemetry:
    """What both handler twins do, once: spans per run, keyed by the run's id.

    One handler serves any number of concurrent runs; each run's state is found by
    its invocation id, so nothing is shared between runs but the dictionaries,
    which change under a lock.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        capture_content: bool,
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
        if not isinstance(capture_content, bool):
            raise TypeError(
                f"capture_content must be True or False, got {capture_content!r}"
            )
        name: object = agent_name  # checked: callers need not use a type checker
        if not isinstance(name, str) or not name:
            raise TypeError(f"agent_name must be a non-empty str, got {name!r}")
        self.tracer: Final = trace.get_tracer(
            "langhooks", __version__, tracer_provider, schema_url=_SCHEMA_URL
        )
        meter = get_meter("langhooks", __version__, meter_provider, _SCHEMA_URL)
        self.operation_duration: Final = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.token_usage: Final = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.time_to_first_chunk: Final = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time to receive the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=_FIRST_CHUNK_BUCKETS,
        )
        self.capture_content: Final = capture_content or _capture_from_environment()
        self.agent_name: Final = agent_name
        self._lock: Final = threading.Lock()
        self._runs: Final[dict[str, _Run]] = {}
        # Model calls still waiting for their first chunk, by run id: the per-token
        # path only looks here, and finds it empty once every stream has started.
        self.awaiting_chunk: Final[dict[str, _ChatCall]] = {}

    # --- runs -------------------------------------------------------------------

    def run_start(self, chain: LLMChain) -> None:
        run_id = _run_id(chain)
        if run_id is None:
            return
        attributes: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: _INVOKE_AGENT,
            gen_ai.GEN_AI_PROVIDER_NAME: _provider(chain.model),
            gen_ai.GEN_AI_AGENT_NAME: self.agent_name,
            gen_ai.GEN_AI_CONVERSATION_ID: run_id,
        }
        model = _request_attributes(chain.model).get(gen_ai.GEN_AI_REQUEST_MODEL)
        if model is not None:
            attributes[gen_ai.GEN_AI_REQUEST_MODEL] = model
        # Started in the caller's context (the handler sees a copy of it), so the
        # run's span is a child of the caller's current span.
        span = self.tracer.start_span(
            f"{_INVOKE_AGENT} {self.agent_name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        with self._lock:
            self._runs[run_id] = _Run(run_id, span)

    def run_complete(self, chain: LLMChain, result: RunResult) -> None:
        run = self._pop(chain)
        if run is not None:
            self._end_run(run, None)

    def run_error(self, chain: LLMChain, error: LangHooksError) -> None:
        run = self._pop(chain)
        if run is not None:
            self._end_run(run, error)

    def _pop(self, chain: LLMChain) -> _Run | None:
        run_id = _run_id(chain)
        with self._lock:
            self.awaiting_chunk.pop(run_id or "", None)
            return self._runs.pop(run_id or "", None)

    def _end_run(self, run: _Run, error: LangHooksError | None) -> None:
        # Whatever is still open ends here: an error ends a run mid-call too.
        reason = error or LangHooksError("cancelled", "the run ended first")
        if run.chat is not None:
            run.chat.fail(reason)
        for span in run.tools.values():
            _fail(span, reason.type, str(reason), None)
            span.end()
        span = run.span
        if run.input_tokens or run.output_tokens:
            span.set_attribute(gen_ai.GEN_AI_USAGE_INPUT_TOKENS, run.input_tokens)
            span.set_attribute(gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, run.output_tokens)
        if error is not None:
            _fail(span, error.type, str(error), error)
        span.end()

    def _run(self, chain: LLMChain) -> _Run | None:
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
        call = _ChatCall(self, model, request, run.context, run.run_id)
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
            _RETRY_EVENT,
            {
                _ERROR_TYPE: error.type,
                _RETRY_ATTEMPT: run.next_attempt,
                _RETRY_DELAY: delay,
            },
        )

    # --- tool calls -------------------------------------------------------------

    def _tool_span(
        self, run: _Run, call_id: str, name: str, tool: Tool | None, arguments: object
    ) -> Span:
        attributes: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: _EXECUTE_TOOL,
            gen_ai.GEN_AI_TOOL_NAME: name,
            gen_ai.GEN_AI_TOOL_CALL_ID: call_id,
            gen_ai.GEN_AI_TOOL_TYPE: "function",
            gen_ai.GEN_AI_CONVERSATION_ID: run.run_id,
        }
        if tool is not None and tool.description:
            attributes[gen_ai.GEN_AI_TOOL_DESCRIPTION] = tool.description
        if self.capture_content and arguments is not None:
            attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = content.to_json(arguments)
        return self.tracer.start_span(
            f"{_EXECUTE_TOOL} {name}",
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
            _fail(span, error_type, str(result.exception), result.exception)
        elif result.is_error:
            _fail(span, "tool_error", "the tool call failed", None)
        else:
            _fail(span, "denied", "the call was denied or rejected", None)
        span.end()

    def tools_interrupted(self, chain: LLMChain, results: Sequence[ToolResult]) -> None:
        for result in results:
            call_id, name = result.tool_call_id, result.name
            span = self._take_tool_span(chain, call_id, name, None)
            if span is not None:
                _fail(span, "interrupted", "the call waits for a human decision", None)
                span.end()

    def _result(self, span: Span, result: ToolResult) -> None:
        if self.capture_content:
            span.set_attribute(gen_ai.GEN_AI_TOOL_CALL_RESULT, result.text)


# --- the handlers -------------------------------------------------------------------


class _TracingOptions:
    """The constructor and the bare-stream helpers both handler twins share."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        agent_name: str = "langhooks",
    ) -> None:
        """Make the handler.

        Args:
            tracer_provider: where spans go (default: the global provider).
            meter_provider: where metrics go (default: the global provider).
            capture_content: record prompts, answers, tool arguments and results.
                When False, the ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
                environment variable (``true``) can still turn it on.
            agent_name: ``gen_ai.agent.name``, and the run span's name suffix.

        Raises:
            TypeError: a provider of the wrong kind, or an empty ``agent_name``.
        """
        self._telemetry: Final = _Telemetry(
            tracer_provider, meter_provider, capture_content, agent_name
        )
        self._awaiting_chunk: Final = self._telemetry.awaiting_chunk

    @property
    def capture_content(self) -> bool:
        """Whether message content is recorded (by argument or environment)."""
        return self._telemetry.capture_content

    def traced_stream(
        self,
        model: ChatModel,
        request: ChatRequest,
        handler: StreamingChatResponseHandler | None = None,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """``model.stream(request, handler)`` inside a ``chat`` span.

        For a model called without ``LLMChain``. The span is current during the
        stream (an instrumented HTTP client's spans nest under it) and is ended
        whatever happens: with the response's attributes, or with an error
        status when the stream fails.

        Args:
            model: the model to call.
            request: what to send.
            handler: the caller's streaming handler, if any.
            handle: the stream's cancel handle, as for ``model.stream``.

        Returns:
            The model's response.

        Raises:
            LangHooksError: the stream failed (after ``handler.on_error``).
        """
        call = _ChatCall(self._telemetry, model, request, None, None)
        timer = _FirstChunk(call)
        target = (
            timer if handler is None else CompositeStreamingHandler([timer, handler])
        )
        with trace.use_span(call.span, end_on_exit=False, record_exception=False):
            try:
                response = model.stream(request, target, handle=handle)
            except BaseException as error:
                call.fail(error)
                raise
        call.complete(response)
        return response

    async def atraced_stream(
        self,
        model: ChatModel,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler
        | StreamingChatResponseHandler
        | None = None,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin of ``traced_stream``: ``await model.astream(...)``.

        Raises:
            LangHooksError: the stream failed (after ``handler.on_error``).
        """
        call = _ChatCall(self._telemetry, model, request, None, None)
        timer = _FirstChunk(call)
        target = (
            timer
            if handler is None
            else AsyncCompositeStreamingHandler([timer, handler])
        )
        with trace.use_span(call.span, end_on_exit=False, record_exception=False):
            try:
                response = await model.astream(request, target, handle=handle)
            except BaseException as error:
                call.fail(error)
                raise
        call.complete(response)
        return response


class OpenTelemetryHandler(_TracingOptions, ChainCallbackHandler):
    """Chain runs as OpenTelemetry GenAI spans and metrics (see the module).

    One handler serves any number of runs at once, in threads or tasks; each run's
    spans form their own tree. Works with ``run()`` and ``arun()``.
    """

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        self._telemetry.run_start(chain)

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self._telemetry.call_start(chain, model, request)

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        if self._awaiting_chunk:  # empty once every stream has its first chunk
            self._telemetry.chunk(chain)

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        self._telemetry.call_complete(chain, response)

    @override
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._telemetry.call_error(chain, error)

    @override
    def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        self._telemetry.retry(chain, error, delay)

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._telemetry.tool_start(chain, call, tool)

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._telemetry.tool_completed(chain, call, result)

    @override
    def on_tool_execution_failed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._telemetry.tool_failed(chain, call, result)

    @override
    def on_tool_interrupted(
        self, chain: LLMChain, results: Sequence[ToolResult]
    ) -> None:
        self._telemetry.tools_interrupted(chain, results)

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._telemetry.run_error(chain, error)

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self._telemetry.run_complete(chain, result)


class AsyncOpenTelemetryHandler(_TracingOptions, AsyncChainCallbackHandler):
    """The ``async def`` twin of ``OpenTelemetryHandler``, for ``arun()``.

    Nothing it does waits: use it where a chain's handlers are all async.
    """

    @override
    async def on_run_start(self, chain: LLMChain) -> None:
        self._telemetry.run_start(chain)

    @override
    async def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self._telemetry.call_start(chain, model, request)

    @override
    async def on_llm_new_delta(
        self, chain: LLMChain, deltas: Sequence[MessageDelta]
    ) -> None:
        if self._awaiting_chunk:
            self._telemetry.chunk(chain)

    @override
    async def on_llm_call_complete(
        self, chain: LLMChain, response: ChatResponse
    ) -> None:
        self._telemetry.call_complete(chain, response)

    @override
    async def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._telemetry.call_error(chain, error)

    @override
    async def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        self._telemetry.retry(chain, error, delay)

    @override
    async def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._telemetry.tool_start(chain, call, tool)

    @override
    async def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._telemetry.tool_completed(chain, call, result)

    @override
    async def on_tool_execution_failed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._telemetry.tool_failed(chain, call, result)

    @override
    async def on_tool_interrupted(
        self, chain: LLMChain, results: Sequence[ToolResult]
    ) -> None:
        self._telemetry.tools_interrupted(chain, results)

    @override
    async def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._telemetry.run_error(chain, error)

    @override
    async def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self._telemetry.run_complete(chain, result)
