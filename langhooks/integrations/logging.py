"""``LoggingHandler``: one stdlib ``logging`` record per event, with structured extras.

Every record carries, in its ``extra``:

- ``langhooks_event``: the handler method's name (``on_tool_execution_completed``);
- ``run_id``: the chain run's id (its invocation's), None for a bare stream;
- ``invocation_id``: the invocation current where the event fired (a tool's own
  invocation in ``on_tool_pre_execution``), else the run's id;

and, where the event has them, ``tool``, ``tool_call_id``, ``input_tokens``,
``output_tokens``, ``error_type`` and ``retry_delay`` (seconds). The key is
``langhooks_event`` rather than ``event`` because structlog keeps the message under
``event``.

Levels: streamed increments, the start of each model call and raw provider details
at DEBUG; runs, model answers, messages, tool calls and the retry of a failed model
call (``on_llm_retry``) at the handler's ``level`` (INFO by default); failures that
a run may survive (a model error, a failed tool call, a rejected answer) at WARNING;
a run or stream that gives up, and a tool's exception, at ERROR with the exception
attached. Message content (prompts, answers, tool arguments and results, also the
text of a failed tool's result) is never logged, except the streamed text of DEBUG
records. Needs no optional library.

Every message is one line: a value that came from a model, a tool, a provider or a
user (a tool's name, a model's name, an error's text, streamed text) has its control
characters escaped in the message (a newline as ``\n``, an ANSI escape as
``\x1b``), so it cannot forge a record of its own or drive a terminal; the extras
keep the raw values. The traceback of an attached exception is the formatter's
(``logging.Formatter.formatException``), as Python prints it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, overload

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler, ReviewContext
from .._core._invocation import current_invocation
from .._core._messages import (
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
from .._core._streaming import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)
from .._core._terminal import escaped
from .._core._tools import Tool, ToolProgress

if TYPE_CHECKING:
    from .._core._chain_callbacks import ReviewDecision
    from ..chain import LLMChain, RunResult
    from ..models import ChatModel, ChatRequest

__all__ = ["LoggingHandler"]

DEBUG: Final = logging.DEBUG
WARNING: Final = logging.WARNING
ERROR: Final = logging.ERROR


def _usage(usage: TokenUsage | None) -> dict[str, Any]:
    if usage is None:
        return {}
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def _call(call: ToolCall) -> dict[str, Any]:
    return {"tool": call.name, "tool_call_id": call.call_id}


class LoggingHandler(ChainCallbackHandler, StreamingChatResponseHandler):
    """Logs every chain and streaming event through stdlib ``logging``.

    Works as a chain handler (``LLMChain(callbacks=[...])``, also for ``arun()``)
    and as a streaming handler (``model.stream(request, handler)``). Thread-safe:
    it keeps no state besides its logger.

    Args:
        logger: where records go (default: the ``langhooks.events`` logger).
        level: the level of ordinary events (runs, messages, tool calls).

    Raises:
        TypeError: ``logger`` is not a ``logging.Logger`` or ``level`` not an int.
    """

    def __init__(
        self, logger: logging.Logger | None = None, *, level: int = logging.INFO
    ) -> None:
        if logger is not None and not isinstance(logger, logging.Logger):
            raise TypeError(
                f"logger must be a logging.Logger (logging.getLogger(name)), got "
                f"{logger!r}"
            )
        if isinstance(level, bool) or not isinstance(level, int):
            raise TypeError(f"level must be a logging level (int), got {level!r}")
        self.logger: Final = logger or logging.getLogger("langhooks.events")
        self.level: Final = level

    def _log(
        self,
        level: int,
        event: str,
        detail: str,
        chain: LLMChain | None,
        extra: Mapping[str, Any] | None = None,
        exc_info: BaseException | None = None,
    ) -> None:
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        run = None if chain is None or chain.invocation is None else chain.invocation
        current = current_invocation()
        run_id = None if run is None else run.id
        fields: dict[str, Any] = {
            "langhooks_event": event,
            "run_id": run_id,
            "invocation_id": run_id if current is None else current.id,
        }
        if extra:
            fields.update(extra)
        # One line whatever the values in ``detail`` (a model picks a tool's
        # name; a provider writes an error's text): escaped here, raw in extras.
        message = escaped(f"{event} {detail}") if detail else event
        logger.log(level, message, extra=fields, exc_info=exc_info)

    # --- chain events ---------------------------------------------------------------

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        self._log(self.level, "on_run_start", "", chain)

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        detail = f"{type(model).__name__}, {len(request.messages)} message(s)"
        self._log(DEBUG, "on_llm_call_start", detail, chain)

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        reason = response.finish_reason
        detail = f"{response.model_name or 'model'}"
        if reason is not None:
            detail += f", finish {reason.value}"
        extra = _usage(response.token_usage)
        self._log(self.level, "on_llm_call_complete", detail, chain, extra)

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        if not self.logger.isEnabledFor(DEBUG):
            return  # the common case, per token: decided before any work
        for delta in deltas:
            detail = delta.text or delta.thinking
            if delta.tool_call is not None:
                detail = f"{delta.tool_call.name}: {delta.tool_call.partial_arguments}"
            if delta.status is not None:
                detail = f"stream {delta.status}"
            self._log(DEBUG, "on_llm_new_delta", detail, chain, _usage(delta.usage))

    @override
    def on_llm_new_message(self, chain: LLMChain, message: Message) -> None:
        calls = len(message.tool_calls)
        self._log(self.level, "on_llm_new_message", f"{calls} tool call(s)", chain)

    @override
    def on_llm_ratelimit_info(
        self, chain: LLMChain, info: Mapping[str, object]
    ) -> None:
        detail = ", ".join(f"{key}={value}" for key, value in info.items())
        self._log(DEBUG, "on_llm_ratelimit_info", detail, chain)

    @override
    def on_llm_token_usage(self, chain: LLMChain, usage: TokenUsage) -> None:
        detail = f"in {usage.input_tokens}, out {usage.output_tokens}"
        self._log(self.level, "on_llm_token_usage", detail, chain, _usage(usage))

    @override
    def on_llm_response_headers(
        self, chain: LLMChain, headers: Mapping[str, str]
    ) -> None:
        detail = f"{len(headers)} header(s)"
        self._log(DEBUG, "on_llm_response_headers", detail, chain)

    @override
    def on_message_processed(self, chain: LLMChain, message: Message) -> None:
        self._log(self.level, "on_message_processed", f"{message.role} message", chain)

    @override
    def on_message_processing_error(self, chain: LLMChain, message: Message) -> None:
        detail = "a message processor rejected the answer"
        self._log(WARNING, "on_message_processing_error", detail, chain)

    @override
    def on_error_message_created(self, chain: LLMChain, message: Message) -> None:
        detail = "the reply to a rejected answer was added"
        self._log(self.level, "on_error_message_created", detail, chain)

    @override
    def on_tool_call_identified(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._log(self.level, "on_tool_call_identified", tool.name, chain, _call(call))

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        human = f" (human: {review.human_decision})" if review.human_decision else ""
        detail = f"{call.name}{human}"
        self._log(self.level, "on_tool_call_review", detail, chain, _call(call))
        return None

    @override
    def on_tool_execution_started(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        event = "on_tool_execution_started"
        self._log(self.level, event, call.name, chain, _call(call))

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._log(self.level, "on_tool_pre_execution", call.name, chain, _call(call))

    @override
    def on_tool_progress(
        self, chain: LLMChain, call: ToolCall, progress: ToolProgress
    ) -> None:
        # The message is the tool's own words about its work, as a result's text
        # would be: only the numbers are logged.
        total = "" if progress.total is None else f" of {progress.total:g}"
        detail = f"{call.name} at {progress.progress:g}{total}"
        self._log(self.level, "on_tool_progress", detail, chain, _call(call))

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        event = "on_tool_execution_completed"
        self._log(self.level, event, call.name, chain, _call(call))

    @override
    def on_tool_execution_failed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        # The result's text is content (a tool's or a reviewer's words): not logged.
        detail = f"{call.name} failed"
        self._log(WARNING, "on_tool_execution_failed", detail, chain, _call(call))

    @override
    def on_tool_execution_exception(
        self, chain: LLMChain, call: ToolCall, exception: BaseException
    ) -> None:
        detail = f"{call.name} raised {type(exception).__name__}: {exception}"
        extra = _call(call)
        self._log(ERROR, "on_tool_execution_exception", detail, chain, extra, exception)

    @override
    def on_tool_interrupted(
        self, chain: LLMChain, results: Sequence[ToolResult]
    ) -> None:
        names = ", ".join(result.name for result in results)
        detail = f"{names} wait(s) for a human"
        self._log(self.level, "on_tool_interrupted", detail, chain)

    @override
    def on_tool_response_created(self, chain: LLMChain, message: Message) -> None:
        detail = f"{len(message.tool_results)} result(s)"
        self._log(self.level, "on_tool_response_created", detail, chain)

    @override
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        extra = {"error_type": error.type}
        self._log(WARNING, "on_llm_error", str(error), chain, extra)

    @override
    def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        # At ``level``, not WARNING: the failure already has its WARNING record;
        # this one says the run is recovering from it.
        extra = {"error_type": error.type, "retry_delay": delay}
        detail = f"retrying in {delay:.2f} s after {error.type}"
        self._log(self.level, "on_llm_retry", detail, chain, extra)

    @override
    def on_retries_exceeded(self, chain: LLMChain) -> None:
        detail = f"{chain.current_failure_count} failure(s)"
        self._log(WARNING, "on_retries_exceeded", detail, chain)

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        detail = f"status {result.status}"
        self._log(self.level, "on_run_complete", detail, chain)

    @overload
    def on_error(self, error: BaseException, /) -> None: ...
    @overload
    def on_error(self, chain: LLMChain, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        """A stream's ``on_error(error)`` or a run's ``on_error(chain, error)``:
        logged at ERROR with the exception attached.

        Raises:
            TypeError: not called with one or two arguments.
        """
        if not 1 <= len(args) <= 2:
            raise TypeError(
                "LoggingHandler.on_error takes (error) as a streaming handler or "
                f"(chain, error) as a chain handler, got {len(args)} arguments"
            )
        error: BaseException = args[-1]
        chain = args[0] if len(args) == 2 else None
        error_type = getattr(error, "type", type(error).__name__)
        extra = {"error_type": error_type}
        self._log(ERROR, "on_error", str(error), chain, extra, error)

    # --- streaming events -----------------------------------------------------------

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self._log(DEBUG, "on_partial_response", partial.text, None)

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        self._log(DEBUG, "on_partial_thinking", partial.text, None)

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        detail = f"{partial.name}: {partial.partial_arguments}"
        self._log(DEBUG, "on_partial_tool_call", detail, None)

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        call = complete.tool_call
        self._log(self.level, "on_complete_tool_call", call.name, None, _call(call))

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        detail = type(raw_event).__name__
        self._log(DEBUG, "on_unmapped_raw_event", detail, None)

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        reason = response.finish_reason
        detail = f"finish {reason.value}" if reason is not None else ""
        extra = _usage(response.token_usage)
        self._log(self.level, "on_complete_response", detail, None, extra)
