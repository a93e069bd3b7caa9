"""The implementation of ``langhooks.testing``: recording handlers for users' tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from typing_extensions import override

from ._core._chain_callbacks import ChainCallbackHandler, ReviewContext, ReviewDecision
from ._core._event_fields import call_index
from ._core._invocation import Invocation, current_invocation
from ._core._messages import (
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from ._core._model import ChatModel, ChatRequest
from ._core._streaming import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)
from ._core._tools import Tool, ToolProgress

if TYPE_CHECKING:
    from .chain import LLMChain, RunResult

__all__ = [
    "RecordedEvent",
    "RecordingChainHandler",
    "RecordingStreamingHandler",
    "Reviewer",
]

#: One recorded event: the method name and the arguments it received.
RecordedEvent: TypeAlias = tuple[str, tuple[Any, ...]]
#: A review function for ``RecordingChainHandler``.
Reviewer: TypeAlias = Callable[[ToolCall, Tool, ReviewContext], "ReviewDecision | None"]


class _Recorder:
    """The recording shared by both handlers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[RecordedEvent] = []
        self.threads: list[int] = []
        self.invocations: list[Invocation | None] = []

    def _record(self, event: str, *args: Any) -> None:
        with self._lock:
            self.events.append((event, args))
            self.threads.append(threading.get_ident())
            self.invocations.append(current_invocation())

    @property
    def names(self) -> list[str]:
        """The recorded event names, in order."""
        with self._lock:
            return [event for event, _ in self.events]

    def of(self, event: str) -> list[tuple[Any, ...]]:
        """The arguments of every recorded ``event``, in order."""
        with self._lock:
            return [args for name, args in self.events if name == event]

    def clear(self) -> None:
        """Forget everything recorded so far."""
        with self._lock:
            self.events.clear()
            self.threads.clear()
            self.invocations.clear()


class RecordingChainHandler(_Recorder, ChainCallbackHandler):
    """A chain handler that records every event it receives.

    Attributes:
        events: ``(event, args)`` per event, in order (``args`` without ``self``).
        threads: the ``threading.get_ident()`` each event ran on.
        invocations: ``current_invocation()`` when each event ran.

    Args:
        review: decides ``on_tool_call_review`` (default: allow every call).
    """

    def __init__(self, review: Reviewer | None = None) -> None:
        super().__init__()
        self._review = review

    def summary(self) -> list[str]:
        """Event names, with the tool's name after events about one call.

        For example ``"on_tool_execution_started get_weather"``.
        """
        lines: list[str] = []
        events = ChainCallbackHandler._langhooks_own_events
        for event, args in list(self.events):
            index = call_index(event, events[event].params)
            lines.append(event if index is None else f"{event} {args[index].name}")
        return lines

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        self._record("on_run_start", chain)

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self._record("on_llm_call_start", chain, model, request)

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        self._record("on_llm_call_complete", chain, response)

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        self._record("on_llm_new_delta", chain, deltas)

    @override
    def on_llm_new_message(self, chain: LLMChain, message: Message) -> None:
        self._record("on_llm_new_message", chain, message)

    @override
    def on_llm_ratelimit_info(
        self, chain: LLMChain, info: Mapping[str, object]
    ) -> None:
        self._record("on_llm_ratelimit_info", chain, info)

    @override
    def on_llm_token_usage(self, chain: LLMChain, usage: TokenUsage) -> None:
        self._record("on_llm_token_usage", chain, usage)

    @override
    def on_llm_response_headers(
        self, chain: LLMChain, headers: Mapping[str, str]
    ) -> None:
        self._record("on_llm_response_headers", chain, headers)

    @override
    def on_message_processed(self, chain: LLMChain, message: Message) -> None:
        self._record("on_message_processed", chain, message)

    @override
    def on_message_processing_error(self, chain: LLMChain, message: Message) -> None:
        self._record("on_message_processing_error", chain, message)

    @override
    def on_error_message_created(self, chain: LLMChain, message: Message) -> None:
        self._record("on_error_message_created", chain, message)

    @override
    def on_tool_call_identified(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._record("on_tool_call_identified", chain, call, tool)

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        self._record("on_tool_call_review", chain, call, tool, review)
        return None if self._review is None else self._review(call, tool, review)

    @override
    def on_tool_execution_started(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._record("on_tool_execution_started", chain, call, tool)

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._record("on_tool_pre_execution", chain, call, tool)

    @override
    def on_tool_progress(
        self, chain: LLMChain, call: ToolCall, progress: ToolProgress
    ) -> None:
        self._record("on_tool_progress", chain, call, progress)

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._record("on_tool_execution_completed", chain, call, result)

    @override
    def on_tool_execution_failed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._record("on_tool_execution_failed", chain, call, result)

    @override
    def on_tool_execution_exception(
        self, chain: LLMChain, call: ToolCall, exception: BaseException
    ) -> None:
        self._record("on_tool_execution_exception", chain, call, exception)

    @override
    def on_tool_interrupted(
        self, chain: LLMChain, results: Sequence[ToolResult]
    ) -> None:
        self._record("on_tool_interrupted", chain, results)

    @override
    def on_tool_response_created(self, chain: LLMChain, message: Message) -> None:
        self._record("on_tool_response_created", chain, message)

    @override
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._record("on_llm_error", chain, error)

    @override
    def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        self._record("on_llm_retry", chain, error, delay)

    @override
    def on_retries_exceeded(self, chain: LLMChain) -> None:
        self._record("on_retries_exceeded", chain)

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._record("on_error", chain, error)

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self._record("on_run_complete", chain, result)


class RecordingStreamingHandler(_Recorder, StreamingChatResponseHandler):
    """A streaming handler that records every event it receives.

    Attributes:
        events: ``(event, args)`` per event, in order.
        threads: the thread each event ran on.
        invocations: ``current_invocation()`` when each event ran.
    """

    @property
    def text(self) -> str:
        """The response text delivered so far, joined."""
        return "".join(args[0].text for args in self.of("on_partial_response"))

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self._record("on_partial_response", partial, context)

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        self._record("on_partial_thinking", partial, context)

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        self._record("on_partial_tool_call", partial, context)

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        self._record("on_complete_tool_call", complete)

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        self._record("on_unmapped_raw_event", raw_event)

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        self._record("on_complete_response", response)

    @override
    def on_error(self, error: BaseException) -> None:
        self._record("on_error", error)
