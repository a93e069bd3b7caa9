"""``langhooks demo``: a small agent whose every chain event is printed as it fires.

The agent streams thinking and text, asks for a tool call that a review handler
interrupts for a human, gets a scripted approval, runs the tool and streams its final
answer. By default it runs on ``ScriptedChatModel``; ``--base-url URL --model NAME``
runs the same agent on any OpenAI-compatible server.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO

from typing_extensions import override

from .._chain_callbacks import ChainCallbackHandler, Interrupt, ReviewContext
from .._messages import (
    LangHooksError,
    Message,
    MessageDelta,
    TokenUsage,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
)
from ._chain import LLMChain, RunResult
from ._decision import Decision

if TYPE_CHECKING:
    from .._chain_callbacks import ReviewDecision
    from ..models._base import ChatModel

__all__ = ["add_arguments", "run"]

QUESTION: Final = "What's the weather in Paris? Do I need an umbrella?"
SYSTEM: Final = (
    "You are a concise assistant. For weather questions, call the get_weather tool "
    "once, then answer in one sentence."
)

# A real model could keep asking for the tool; the demo approves this many rounds.
MAX_APPROVALS: Final = 3

_COLORS: Final = {
    "dim": "2",
    "bold": "1",
    "cyan": "36",
    "green": "32",
    "yellow": "33",
    "red": "31",
    "magenta": "35",
    "blue": "34",
}


class _Style:
    """ANSI colours, or none."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(_COLORS[style] for style in styles)
        return f"\033[{codes}m{text}\033[0m"


def weather(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """The demo's tool: a fixed forecast."""
    city = str(arguments.get("city", "Paris"))
    return f"{city}: 14°C, light rain until 16:00"


WEATHER_TOOL: Final = Tool(
    "get_weather",
    weather,
    description="The current weather in a city.",
    parameters_schema={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "the city"}},
        "required": ["city"],
    },
    display_text="Weather lookup",
)


def scripted_model(delay: float) -> ChatModel:
    """The scripted model the demo runs on by default."""
    from ..models._scripted import ScriptedChatModel, ScriptedTurn

    return ScriptedChatModel(
        [
            ScriptedTurn(
                thinking=(
                    "The user asks about rain in Paris. I should look up the "
                    "weather before answering."
                ),
                text="Let me check the weather in Paris.",
                tool_calls=[
                    ToolCall(
                        call_id="call_weather_1",
                        name="get_weather",
                        arguments={"city": "Paris"},
                    )
                ],
                usage=TokenUsage(input_tokens=48, output_tokens=36),
            ),
            ScriptedTurn(
                text=(
                    "It is 14°C in Paris with light rain until 16:00, so yes: take "
                    "an umbrella."
                ),
                usage=TokenUsage(input_tokens=97, output_tokens=21),
            ),
        ],
        delay=delay,
    )


class ApprovalGate(ChainCallbackHandler):
    """Interrupts every call of a tool that has no human decision yet."""

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        if review.human_decision is not None:
            return None
        return Interrupt(
            f"{tool.name} calls an external service: approve?",
            {"tool": tool.name, "arguments": dict(call.arguments)},
        )


class EventPrinter(ChainCallbackHandler):
    """Prints each chain event on one line; streamed text continues its line."""

    def __init__(self, out: TextIO, style: _Style) -> None:
        self._out = out
        self._style = style
        self._streaming: str | None = None  # what the open line is streaming
        self.count = 0

    def _end_line(self) -> None:
        if self._streaming is not None:
            self._out.write("\n")
            self._streaming = None

    def line(self, event: str, detail: str = "", color: str = "cyan") -> None:
        """Print one event."""
        self._end_line()
        self.count += 1
        name = self._style(f"{event:<28}", color)
        self._out.write(f"  {name} {detail}".rstrip() + "\n")
        self._out.flush()

    def note(self, text: str, color: str = "bold") -> None:
        """Print a line that is not an event (the story around the run)."""
        self._end_line()
        self._out.write(self._style(text, color) + "\n")
        self._out.flush()

    def _stream(self, kind: str, label: str, text: str, color: str) -> None:
        if self._streaming != kind:
            self._end_line()
            self._streaming = kind
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
        for delta in deltas:
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
                self.count -= 1
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
        from .._invocation import current_invocation

        current = current_invocation()
        where = "" if current is None else f"in invocation {current.name}"
        self.line("on_tool_pre_execution", f"{call.name} {self._style(where, 'dim')}")

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
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self.line("on_llm_error", str(error), "red")

    @override
    def on_retries_exceeded(self, chain: LLMChain) -> None:
        self.line(
            "on_retries_exceeded", f"{chain.current_failure_count} failures", "red"
        )

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self.line("on_error", str(error), "red")

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self.line("on_run_complete", f"status {result.status}", "magenta")


def _arguments(call: ToolCall) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the demo's options."""
    parser.add_argument(
        "--no-color", action="store_true", help="plain output, no ANSI colours"
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=None,
        help="seconds between streamed pieces of the scripted model "
        "(default: 0.03 on a terminal, else 0)",
    )
    parser.add_argument(
        "--base-url",
        help="run on an OpenAI-compatible server at this URL instead of the "
        "scripted model (needs --model)",
    )
    parser.add_argument("--model", help="the model name on that server")
    parser.add_argument(
        "--api-key", help="the server's API key (default: $OPENAI_API_KEY or 'none')"
    )
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="also record every event to FILE (JSON Lines, appended); print it "
        "with 'langhooks events FILE'",
    )


def _server_model(args: argparse.Namespace) -> ChatModel | None:
    """``OpenAIChatModel`` for the options, or None when it cannot be built here."""
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "none"
    try:
        from ..models import OpenAIChatModel  # needs the openai extra

        model: ChatModel = OpenAIChatModel(
            args.model, base_url=args.base_url, api_key=api_key
        )
    except ImportError:
        return None
    return model


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the demo agent and print its events.

    Returns:
        0 when the agent answered, 1 when the run failed, 2 for bad options or an
        unavailable server model.
    """
    out = sys.stdout if out is None else out
    tty = out.isatty()
    style = _Style(tty and not args.no_color and "NO_COLOR" not in os.environ)
    if (args.base_url is None) != (args.model is None):
        print("langhooks demo: --base-url and --model go together", file=sys.stderr)
        return 2
    if args.base_url is not None:
        model = _server_model(args)
        if model is None:
            print(
                "langhooks demo: OpenAIChatModel is not available in this install "
                "(pip install 'langhooks[openai]')",
                file=sys.stderr,
            )
            return 2
        source = f"{args.model} at {args.base_url}"
    else:
        delay = args.delay if args.delay is not None else (0.03 if tty else 0.0)
        model = scripted_model(max(0.0, delay))
        source = "the scripted model"

    printer = EventPrinter(out, style)
    callbacks: list[ChainCallbackHandler] = [printer]
    recorder = None
    record = getattr(args, "record", None)  # callers may build args by hand
    if record is not None:
        from ..events import EventRecorder

        try:
            recorder = EventRecorder(record)
        except OSError as exc:
            print(
                f"langhooks demo: cannot record to {record!r}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2
        callbacks.append(recorder)
    chain = LLMChain(
        model,
        tools=[WEATHER_TOOL],
        callbacks=[*callbacks, ApprovalGate()],
    ).add_messages([Message.system(SYSTEM), Message.user(QUESTION)])
    try:
        return _converse(chain, printer, source)
    finally:
        if recorder is not None:
            recorder.close()


def _converse(chain: LLMChain, printer: EventPrinter, source: str) -> int:
    """Run the agent, approving what it asks for, and print the story."""
    printer.note(f"langhooks demo: an agent on {source}; each line is a chain event")
    printer.note(f"user: {QUESTION}", "bold")
    result = chain.run()
    rounds = 0
    while result.status == "interrupted" and rounds < MAX_APPROVALS:
        rounds += 1
        waiting = result.chain.pending_tool_calls
        printer.note(f"run interrupted: {dict(result.interrupt_data or {})}", "yellow")
        for call in waiting:
            printer.note(f"human (scripted): approve {call.name}({_arguments(call)})")
        result = result.chain.execute_tool_calls_with_decisions(
            waiting, [Decision.approve() for _ in waiting]
        )
        # Interrupted again: another round; an error ends the loop.
        if result.status == "ok":
            result = result.chain.run()
    if result.status == "interrupted":
        printer.note(f"the agent still wants approval after {rounds} rounds", "red")
        return 1
    if result.status != "ok":
        printer.note(f"the agent failed: {result.error}", "red")
        return 1
    printer.note(f"answer: {result.chain.messages[-1].text}", "green")
    printer.note(f"{printer.count} events", "dim")
    return 0
