"""OpenTelemetry spans and metrics for langhooks runs, after the GenAI conventions.

``OpenTelemetryHandler`` (for ``run()`` and ``arun()`` alike) turns a chain run's
events into the spans and metrics of the OpenTelemetry semantic conventions for
generative AI (attribute names come from ``opentelemetry-semantic-conventions``,
never retyped):

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

Message content (prompts, answers, tool arguments and results) is recorded as the
official GenAI instrumentations do, chosen by ``capture_content`` or, when that is
False, by ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` when the handler is
made: ``span_only`` (or ``true``) as span attributes; ``event_only`` as the
``gen_ai.client.inference.operation.details`` log record of each model call (through
the OpenTelemetry logs API, ``logger_provider=``), never on spans; ``span_and_event``
both; ``no_content`` or unset, nowhere. The official instrumentation of an SDK that
a langhooks model streams through runs beside it: its client span nests under the
``chat`` span.

For a model called without ``LLMChain``, ``traced_stream`` / ``atraced_stream`` wrap
one ``model.stream()`` in a ``chat`` span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from typing_extensions import override

try:
    from opentelemetry import trace
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider
except ImportError as _missing:  # pragma: no cover  # tested in a subprocess
    raise ImportError(
        "langhooks.integrations.opentelemetry needs OpenTelemetry: "
        "pip install 'langhooks[opentelemetry]'"
    ) from _missing

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._messages import (
    ChatResponse,
    LangHooksError,
    MessageDelta,
    ToolCall,
    ToolResult,
)
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from .._core._tools import Tool, ToolProgress
from .._wrap._compose import AsyncCompositeStreamingHandler, CompositeStreamingHandler
from ._otel._calls import ChatCall, FirstChunk
from ._otel._capture import CAPTURE_CONTENT_ENV, CaptureMode
from ._otel._runs import Telemetry

if TYPE_CHECKING:
    from ..chain import LLMChain, RunResult
    from ..models import ChatModel, ChatRequest

__all__ = ["CAPTURE_CONTENT_ENV", "CaptureMode", "OpenTelemetryHandler"]


class OpenTelemetryHandler(ChainCallbackHandler):
    """Chain runs as OpenTelemetry GenAI spans and metrics (see the module).

    One handler serves any number of runs at once, in threads or tasks; each run's
    spans form their own tree. Works with ``run()`` and ``arun()`` (under
    ``arun()`` its methods run inline: they await nothing).
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        capture_content: bool | CaptureMode = False,
        agent_name: str = "langhooks",
    ) -> None:
        """Make the handler.

        Args:
            tracer_provider: where spans go (default: the global provider).
            meter_provider: where metrics go (default: the global provider).
            logger_provider: where the ``gen_ai.client.inference.operation.details``
                log records go when content goes to events (default: the global
                provider).
            capture_content: where prompts, answers, tool arguments and results
                are recorded: True (``"span_only"``), ``"span_only"``,
                ``"event_only"``, ``"span_and_event"`` or ``"no_content"``. When
                False, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
                decides, with the same values (``true`` is ``span_only``).
            agent_name: ``gen_ai.agent.name``, and the run span's name suffix.

        Raises:
            TypeError: a provider of the wrong kind, an unknown ``capture_content``,
                or an empty ``agent_name``.
        """
        self._telemetry: Final = Telemetry(
            tracer_provider,
            meter_provider,
            logger_provider,
            capture_content,
            agent_name,
        )
        self._awaiting_chunk: Final = self._telemetry.awaiting_chunk

    @property
    def capture_content(self) -> bool:
        """Whether message content is recorded anywhere (by argument or
        environment)."""
        return self._telemetry.capture.mode != "no_content"

    @property
    def capture_mode(self) -> CaptureMode:
        """Where message content goes, one of ``"no_content"``, ``"span_only"``,
        ``"event_only"`` and ``"span_and_event"``."""
        return self._telemetry.capture.mode

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
        call = ChatCall(self._telemetry, model, request, None, None)
        timer = FirstChunk(call)
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
        call = ChatCall(self._telemetry, model, request, None, None)
        timer = FirstChunk(call)
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
    def on_tool_progress(
        self, chain: LLMChain, call: ToolCall, progress: ToolProgress
    ) -> None:
        self._telemetry.tool_progress(chain, call, progress)

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
