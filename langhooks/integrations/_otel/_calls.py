"""One model call: its ``chat`` span, its metrics, and the span helpers.

``ChatCall`` is opened when a model attempt starts (by a chain run or by
``traced_stream``) and ended by the response or the error; ``FirstChunk`` times a
bare stream's first piece.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Protocol, final
from urllib.parse import urlsplit

from opentelemetry.metrics import Histogram
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.semconv.schemas import Schemas
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from typing_extensions import override

from ..._core._messages import (
    ChatResponse,
    LangHooksError,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
)
from ..._core._streaming import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)
from ...models._formats import provider_name
from .. import _genai_content as content
from ._capture import ContentCapture, request_content

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.util.types import AttributeValue

    from langhooks.chain import LLMChain
    from langhooks.models import ChatRequest

__all__ = [
    "CHAT",
    "DURATION_BUCKETS",
    "ERROR_TYPE",
    "EXECUTE_TOOL",
    "FIRST_CHUNK_BUCKETS",
    "INVOKE_AGENT",
    "PROGRESS_EVENT",
    "PROGRESS_MESSAGE",
    "PROGRESS_TOTAL",
    "PROGRESS_VALUE",
    "RETRY_ATTEMPT",
    "RETRY_DELAY",
    "RETRY_EVENT",
    "SCHEMA_URL",
    "TOKEN_BUCKETS",
    "CallTelemetry",
    "ChatCall",
    "FirstChunk",
    "fail_span",
    "provider",
    "request_attributes",
    "run_id",
]

SCHEMA_URL: Final = Schemas.V1_44_0.value
CHAT: Final = gen_ai.GenAiOperationNameValues.CHAT.value
INVOKE_AGENT: Final = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
EXECUTE_TOOL: Final = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
_INPUT: Final = gen_ai.GenAiTokenTypeValues.INPUT.value
_OUTPUT: Final = gen_ai.GenAiTokenTypeValues.OUTPUT.value
ERROR_TYPE: Final = error_attributes.ERROR_TYPE
# The event on a run's span saying a failed model call will be retried, and its
# attributes: langhooks' own names, as the conventions define none for a retry.
RETRY_EVENT: Final = "langhooks.retry"
RETRY_ATTEMPT: Final = "langhooks.retry.attempt"
RETRY_DELAY: Final = "langhooks.retry.delay"
# The event on a tool's span for each progress report (``on_tool_progress``), and
# its attributes; the message is content, captured only with content on spans.
PROGRESS_EVENT: Final = "langhooks.tool.progress"
PROGRESS_VALUE: Final = "langhooks.tool.progress.value"
PROGRESS_TOTAL: Final = "langhooks.tool.progress.total"
PROGRESS_MESSAGE: Final = "langhooks.tool.progress.message"

# The bucket boundaries the conventions advise for each histogram.
DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96,
    81.92,
)  # fmt: skip
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
    67108864,
)  # fmt: skip
FIRST_CHUNK_BUCKETS: Final = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
    7.5, 10.0,
)  # fmt: skip

# The conventions' value when the provider is not known.
_OTHER_PROVIDER: Final = "_OTHER"


def provider(model: object) -> str:
    cls = type(model)
    if not cls.__module__.startswith("langhooks."):
        return _OTHER_PROVIDER
    # langhooks' own models: their format's entry (or their class) says.
    name = provider_name(cls) or _OTHER_PROVIDER
    if name == gen_ai.GenAiProviderNameValues.GCP_GEMINI.value and _on_vertex(model):
        return gen_ai.GenAiProviderNameValues.GCP_VERTEX_AI.value
    return name


def _on_vertex(model: object) -> bool:
    """Whether a Gemini model's client is a Vertex AI one (the same model class
    talks to the Gemini API or to Vertex AI, by its client)."""
    api = getattr(getattr(model, "_client", None), "_api_client", None)
    return getattr(api, "vertexai", False) is True


def request_attributes(model: object) -> dict[str, AttributeValue]:
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
        url = urlsplit(base_url)
        if url.hostname:
            attributes[server_attributes.SERVER_ADDRESS] = url.hostname
            port = url.port or {"http": 80, "https": 443}.get(url.scheme)
            if port is not None:
                attributes[server_attributes.SERVER_PORT] = port
    return attributes


def fail_span(
    span: Span, error_type: str, description: str, exception: BaseException | None
) -> None:
    span.set_attribute(ERROR_TYPE, error_type)
    if exception is not None:
        span.record_exception(exception)
    span.set_status(Status(StatusCode.ERROR, description))


def run_id(chain: LLMChain) -> str | None:
    invocation = chain.invocation
    return None if invocation is None else invocation.id


# --- one model call -----------------------------------------------------------------


class CallTelemetry(Protocol):
    """What a ``ChatCall`` records with (``_runs.Telemetry`` is one)."""

    @property
    def tracer(self) -> Tracer:
        """Makes the ``chat`` spans."""

    @property
    def capture(self) -> ContentCapture:
        """Where content goes."""

    @property
    def operation_duration(self) -> Histogram:
        """``gen_ai.client.operation.duration``."""

    @property
    def token_usage(self) -> Histogram:
        """``gen_ai.client.token.usage``."""

    @property
    def time_to_first_chunk(self) -> Histogram:
        """``gen_ai.client.operation.time_to_first_chunk``."""


@final
class ChatCall:
    """The ``chat`` span of one model attempt, its metrics and (with content in
    events) its operation-details log record."""

    __slots__ = (
        "_content",
        "_metric_attributes",
        "_said",
        "_started",
        "_telemetry",
        "span",
    )

    def __init__(
        self,
        telemetry: CallTelemetry,
        model: object,
        request: ChatRequest,
        parent: Context | None,
        conversation_id: str | None,
    ) -> None:
        self._telemetry = telemetry
        attributes = request_attributes(model)
        self._metric_attributes: dict[str, AttributeValue] = {
            gen_ai.GEN_AI_OPERATION_NAME: CHAT,
            gen_ai.GEN_AI_PROVIDER_NAME: provider(model),
            **attributes,
        }
        span_attributes = dict(self._metric_attributes)
        if conversation_id is not None:
            span_attributes[gen_ai.GEN_AI_CONVERSATION_ID] = conversation_id
        capture = telemetry.capture
        # The request's content and what the span says besides it, kept for the log
        # record when events get it (which repeats both); None otherwise.
        self._content: dict[str, str] | None = None
        self._said: dict[str, AttributeValue] | None = None
        if capture.in_events:
            # Copied before content is added: content never goes into the record's
            # attributes (it gets its own structured copy).
            self._said = dict(span_attributes)
        if capture.on_spans or capture.in_events:
            found = request_content(request)
            if capture.on_spans:
                span_attributes.update(found)
            if capture.in_events:
                self._content = dict(found)
        name = attributes.get(gen_ai.GEN_AI_REQUEST_MODEL)
        self.span = telemetry.tracer.start_span(
            f"{CHAT} {name}" if name else CHAT,
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
        # Everything the response says, set on the span at once (one lock, one
        # pass of the SDK's attribute checks), in the order of the conventions.
        said: dict[str, AttributeValue] = {}
        if response.model_name:
            said[gen_ai.GEN_AI_RESPONSE_MODEL] = response.model_name
            metric[gen_ai.GEN_AI_RESPONSE_MODEL] = response.model_name
        if response.id:
            said[gen_ai.GEN_AI_RESPONSE_ID] = response.id
        if response.finish_reason is not None:
            reason = content.finish_reason(response.finish_reason)
            said[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = (reason,)
        tokens = (0, 0)
        usage = response.token_usage
        if usage is not None:
            tokens = (usage.input_tokens, usage.output_tokens)
            said[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
            said[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
        if self._said is not None:
            self._said.update(said)
        capture = self._telemetry.capture
        if capture.on_spans or self._content is not None:
            output = content.output_messages(response.message, response.finish_reason)
            if capture.on_spans:
                said[gen_ai.GEN_AI_OUTPUT_MESSAGES] = output
            if self._content is not None:
                self._content[gen_ai.GEN_AI_OUTPUT_MESSAGES] = output
        span.set_attributes(said)
        if usage is not None:
            record = self._telemetry.token_usage.record
            record(usage.input_tokens, {**metric, gen_ai.GEN_AI_TOKEN_TYPE: _INPUT})
            record(usage.output_tokens, {**metric, gen_ai.GEN_AI_TOKEN_TYPE: _OUTPUT})
        if response.message.status == "cancelled":
            # Cut short on purpose: marked so that a partial answer is never read as
            # a whole one.
            fail_span(span, "cancelled", "the stream was cancelled", None)
            metric = {**metric, ERROR_TYPE: "cancelled"}
        self._end(metric)
        return tokens

    def fail(self, error: BaseException) -> None:
        """The attempt failed with ``error``: error status, end the span."""
        error_type = (
            error.type
            if isinstance(error, LangHooksError)
            else type(error).__qualname__
        )
        fail_span(self.span, error_type, str(error), error)
        self._end({**self._metric_attributes, ERROR_TYPE: error_type})

    def _end(self, metric_attributes: Mapping[str, AttributeValue]) -> None:
        elapsed = time.perf_counter() - self._started
        self._telemetry.operation_duration.record(elapsed, metric_attributes)
        if self._said is not None and self._content is not None:
            said = dict(self._said)
            error_type = metric_attributes.get(ERROR_TYPE)
            if error_type is not None:
                said[ERROR_TYPE] = error_type
            self._telemetry.capture.emit(self.span, said, self._content)
        self.span.end()


@final
class FirstChunk(StreamingChatResponseHandler):
    """Times a bare stream's first piece (any partial) for ``traced_stream``."""

    __slots__ = ("_call",)

    def __init__(self, call: ChatCall) -> None:
        self._call: ChatCall | None = call

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
