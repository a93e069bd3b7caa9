"""``ConsoleHandler``: every chain event as one readable line on a terminal.

This is what ``langhooks demo`` prints. Streamed text and thinking continue their
line as they arrive; every other event gets a line of its own. Colour is used only
on a terminal and never when ``NO_COLOR`` is set (https://no-color.org). Needs no
optional library.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, TextIO

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler, ReviewContext
from .._core._invocation import current_invocation
from .._core._messages import (
    ChatResponse,
    LangHooksError,
    Message,
    MessageDelta,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from .._core._terminal_style import Style as _Style
from .._core._terminal_style import call_arguments as _arguments
from .._core._terminal_style import progress_text
from .._core._terminal_style import wants_color as _wants_color
from .._core._tools import Tool, ToolProgress

if TYPE_CHECKING:
    from .._core._chain_callbacks import ReviewDecision
    from ..chain import LLMChain, RunResult
    from ..models import ChatModel, ChatRequest

__all__ = ["ConsoleHandler"]


def _run_key(chain: LLMChain) -> str:
    """The key of a run's attempt numbers: its invocation id."""
    invocation = chain.invocation
    return "" if invocation is None else invocation.id


class ConsoleHandler(ChainCallbackHandler):
    """Prints each chain event on one line; streamed text continues its line.

    Safe to share across threads (tools running concurrently): lines are written
    whole, under a lock.

    Args:
        stream: where to write (default: ``sys.stdout`` when the handler is made).
        color: ANSI colours on or off; None (the default) means on when ``stream``
            is a terminal and ``NO_COLOR`` is not set.

    Attributes:
        count: how many events were printed (each streamed increment counts).
        lines: how many lines those events took (streamed increments of one kind
            continue one line).
    """

    def __init__(self, stream: TextIO | None = None, *, color: bool | None = None):
        self._out: Final = sys.stdout if stream is None else stream
        if color is not None and not isinstance(color, bool):
            raise TypeError(f"color must be True, False or None, got {color!r}")
        self._style: Final = _Style(_wants_color(self._out) if color is None else color)
        self._lock: Final = threading.RLock()
        self._streaming: str | None = None  # what the open line is streaming
        # Per run id: the number of the model attempt under way, and the number
        # of the attempt an announced retry will make.
        self._attempt: dict[str, int] = {}
        self._retrying: dict[str, int] = {}
        self.count: int = 0
        self.lines: int = 0

    def _end_line(self) -> None:
        if self._streaming is not None:
            self._out.write("\n")
            self._streaming = None

    def line(self, event: str, detail: str = "", color: str = "cyan") -> None:
        """Print one event: its name in a column, then ``detail``.

        Args:
            event: the event's name.
            detail: what happened.
            color: the name's colour (one of dim, bold, cyan, green, yellow, red,
                magenta, blue).
        """
        with self._lock:
            self._end_line()
            self.count += 1
            self.lines += 1
            name = self._style(f"{event:<28}", color)
            self._out.write(f"  {name} {detail}".rstrip() + "\n")
            self._out.flush()

    def note(self, text: str, color: str = "bold") -> None:
        """Print a line that is not an event (the story around a run).

        Args:
            text: the line.
            color: its colour (as for ``line``).
        """
        with self._lock:
            self._end_line()
            self._out.write(self._style(text, color) + "\n")
            self._out.flush()

    def _stream(self, kind: str, label: str, text: str, color: str) -> None:
        if self._streaming != kind:
            self._end_line()
            self._streaming = kind
            self.lines += 1
            head = self._style(f"{'on_llm_new_delta':<28}", "cyan")
            self._out.write(f"  {head} {self._style(label, color)} ")
        self._out.write(self._style(text, color) if kind == "thinking" else text)
        self._out.flush()

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        invocation = chain.invocation
        name = "" if invocation is None else f"{invocation.name} {invocation.id[:8]}"
        self.line("on_run_start", self._style(name, "dim"), "magenta")

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        with self._lock:
            for delta in deltas:
                self._delta(delta)

    def _delta(self, delta: MessageDelta) -> None:
        self.count += 1
        if delta.thinking:
            self._stream("thinking", "thinking:", delta.thinking, "dim")
        if delta.text:
            self._stream("text", "text:", delta.text, "bold")
        if delta.tool_call is not None:
            kind = f"tool:{delta.tool_call.index}"
            label = f"tool call {delta.tool_call.name}:"
            self._stream(kind, label, delta.tool_call.partial_arguments, "blue")
        if delta.status is not None:
            self.count -= 1  # line() counts it
            usage = ""
            if delta.usage is not None:
                usage = (
                    f" (tokens in {delta.usage.input_tokens}, "
                    f"out {delta.usage.output_tokens})"
                )
            self.line("on_llm_new_delta", f"stream {delta.status}{usage}")

    @override
    def on_tool_call_identified(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.line("on_tool_call_identified", f"{tool.name} ({tool.display_text})")

    @override
    def on_llm_response_headers(
        self, chain: LLMChain, headers: Mapping[str, str]
    ) -> None:
        self.line("on_llm_response_headers", f"{len(headers)} header(s)")

    @override
    def on_llm_ratelimit_info(
        self, chain: LLMChain, info: Mapping[str, object]
    ) -> None:
        self.line(
            "on_llm_ratelimit_info", ", ".join(f"{k}={v}" for k, v in info.items())
        )

    @override
    def on_message_processed(self, chain: LLMChain, message: Message) -> None:
        if message.role == "tool":
            detail = f"tool message, {len(message.tool_results)} result(s)"
        else:
            calls = len(message.tool_calls)
            detail = f"assistant message, {calls} tool call(s)"
        self.line("on_message_processed", detail)

    @override
    def on_llm_new_message(self, chain: LLMChain, message: Message) -> None:
        self.line("on_llm_new_message", f"{len(message.tool_calls)} tool call(s)")

    @override
    def on_message_processing_error(self, chain: LLMChain, message: Message) -> None:
        self.line("on_message_processing_error", "a processor rejected it", "red")

    @override
    def on_error_message_created(self, chain: LLMChain, message: Message) -> None:
        self.line("on_error_message_created", message.text, "yellow")

    @override
    def on_llm_token_usage(self, chain: LLMChain, usage: TokenUsage) -> None:
        self.line(
            "on_llm_token_usage",
            f"in {usage.input_tokens}, out {usage.output_tokens}, "
            f"total {usage.total_tokens}",
        )

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        human = f" (human: {review.human_decision})" if review.human_decision else ""
        self.line("on_tool_call_review", f"{call.name}({_arguments(call)}){human}")
        return None

    @override
    def on_tool_execution_started(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.line("on_tool_execution_started", f"{call.name}({_arguments(call)})")

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        current = current_invocation()
        where = "" if current is None else f"in invocation {current.name}"
        self.line("on_tool_pre_execution", f"{call.name} {self._style(where, 'dim')}")

    @override
    def on_tool_progress(
        self, chain: LLMChain, call: ToolCall, progress: ToolProgress
    ) -> None:
        report = progress_text(progress.progress, progress.total, progress.message)
        self.line("on_tool_progress", f"{call.name} {report}")

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.line(
            "on_tool_execution_completed", f"{call.name} -> {result.text}", "green"
        )

    @override
    def on_tool_execution_failed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.line("on_tool_execution_failed", f"{call.name}: {result.text}", "red")

    @override
    def on_tool_execution_exception(
        self, chain: LLMChain, call: ToolCall, exception: BaseException
    ) -> None:
        self.line("on_tool_execution_exception", repr(exception), "red")

    @override
    def on_tool_interrupted(
        self, chain: LLMChain, results: Sequence[ToolResult]
    ) -> None:
        names = ", ".join(result.name for result in results)
        self.line("on_tool_interrupted", f"{names} waits for a human", "yellow")

    @override
    def on_tool_response_created(self, chain: LLMChain, message: Message) -> None:
        self.line("on_tool_response_created", f"{len(message.tool_results)} result(s)")

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        # It also numbers the attempts for on_llm_retry's line.
        key = _run_key(chain)
        with self._lock:
            self._attempt[key] = self._retrying.pop(key, 1)
        name = getattr(model, "model", None)
        label = type(model).__name__ + (f" {name!r}" if isinstance(name, str) else "")
        detail = (
            f"{label}, {len(request.messages)} message(s), {len(request.tools)} tool(s)"
        )
        self.line("on_llm_call_start", detail, "dim")

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        reason = response.finish_reason or "-"
        detail = f"finish={reason} status={response.message.status}"
        self.line("on_llm_call_complete", detail, "dim")

    @override
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self.line("on_llm_error", str(error), "red")

    @override
    def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        key = _run_key(chain)
        with self._lock:
            attempt = self._attempt.get(key, 1) + 1
            self._retrying[key] = attempt
        detail = f"attempt {attempt} in {delay:.2f} s (after {error.type})"
        self.line("on_llm_retry", detail, "yellow")

    def _forget(self, chain: LLMChain) -> None:
        key = _run_key(chain)
        with self._lock:
            self._attempt.pop(key, None)
            self._retrying.pop(key, None)

    @override
    def on_retries_exceeded(self, chain: LLMChain) -> None:
        self.line(
            "on_retries_exceeded", f"{chain.current_failure_count} failures", "red"
        )

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._forget(chain)
        self.line("on_error", str(error), "red")

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self._forget(chain)
        self.line("on_run_complete", f"status {result.status}", "magenta")
