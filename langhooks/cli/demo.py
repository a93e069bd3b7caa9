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
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TextIO

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler, Interrupt, ReviewContext
from .._core._messages import Message, TokenUsage, ToolCall
from .._core._terminal_style import Style, call_arguments, wants_color
from .._core._tools import Tool, ToolContext
from ..chain._chain import LLMChain
from ..chain._decision import Decision
from ..integrations.console import ConsoleHandler

if TYPE_CHECKING:
    from .._core._chain_callbacks import ReviewDecision
    from .._core._model import ChatModel
    from ..models._scripted import ScriptedTurn

__all__ = ["add_arguments", "run"]

QUESTION: Final = "What's the weather in Paris? Do I need an umbrella?"
SYSTEM: Final = (
    "You are a concise assistant. For weather questions, call the get_weather tool "
    "once, then answer in one sentence."
)

# A real model could keep asking for the tool; the demo approves this many rounds.
MAX_APPROVALS: Final = 3


def forecast(arguments: Mapping[str, Any]) -> str:
    """The fixed forecast the demo's tool answers ``arguments`` with."""
    city = str(arguments.get("city", "Paris"))
    return f"{city}: 14°C, light rain until 16:00"


def weather(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """The demo's tool: a fixed forecast."""
    return forecast(arguments)


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


def demo_turns() -> list[ScriptedTurn]:
    """The scripted model's two answers: a tool call, then the answer."""
    from ..models._scripted import ScriptedTurn

    return [
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
    ]


def scripted_model(delay: float) -> ChatModel:
    """The scripted model the demo runs on by default."""
    from ..models._scripted import ScriptedChatModel

    return ScriptedChatModel(demo_turns(), delay=delay)


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


class EventPrinter(ConsoleHandler):
    """The demo's printer: ``ConsoleHandler`` with the demo's colour choice."""

    def __init__(self, out: TextIO, style: Style) -> None:
        super().__init__(out, color=style.enabled)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the demo's options."""
    parser.add_argument(
        "--no-color", action="store_true", help="plain output, no ANSI colours"
    )
    parser.add_argument(
        "--delay",
        type=seconds,
        default=None,
        help="seconds between streamed pieces of the scripted model "
        "(default: 0.03 on a terminal, else 0)",
    )
    add_server_arguments(parser)
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="also record every event to FILE (JSON Lines, appended); print it "
        "with 'langhooks events FILE'",
    )


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more (``--delay``)."""
    problem = argparse.ArgumentTypeError(
        f"expected a number of seconds, 0 or more, got {text!r}"
    )
    try:
        value = float(text)
    except ValueError:
        raise problem from None
    if not 0 <= value < float("inf"):
        raise problem
    return value


def base_url(text: str) -> str:
    """An argparse type: an http(s) URL with a host (``--base-url``)."""
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL: {text!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"expected an http:// or https:// URL with a host, got {text!r}"
        )
    return text


def model_name(text: str) -> str:
    """An argparse type: a non-empty model name (``--model``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the model name must not be empty")
    return text


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--base-url``, ``--model`` and ``--api-key`` (``demo`` and ``serve``)."""
    parser.add_argument(
        "--base-url",
        type=base_url,
        help="run on an OpenAI-compatible server at this URL instead of the "
        "scripted model (needs --model)",
    )
    parser.add_argument(
        "--model", type=model_name, help="the model name on that server"
    )
    parser.add_argument(
        "--api-key", help="the server's API key (default: $OPENAI_API_KEY or 'none')"
    )


def server_options_agree(args: argparse.Namespace, command: str) -> bool:
    """Whether ``--base-url`` and ``--model`` are both given or both left out.

    When they are not, says so on standard error for ``langhooks COMMAND``.
    """
    if (args.base_url is None) == (args.model is None):
        return True
    print(f"langhooks {command}: --base-url and --model go together", file=sys.stderr)
    return False


def server_model(args: argparse.Namespace, command: str) -> ChatModel | None:
    """``OpenAIChatModel`` for the options, or None when it cannot be built here.

    None (the openai extra is missing) is said on standard error for
    ``langhooks COMMAND``.
    """
    api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "none"
    try:
        from ..models import OpenAIChatModel  # needs the openai extra

        model: ChatModel = OpenAIChatModel(
            args.model, base_url=args.base_url, api_key=api_key
        )
    except ImportError:
        print(
            f"langhooks {command}: OpenAIChatModel is not available in this install "
            "(pip install 'langhooks[openai]')",
            file=sys.stderr,
        )
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
    # ConsoleHandler's rule (a terminal, NO_COLOR unset or empty), or --no-color.
    style = Style(not args.no_color and wants_color(out))
    if not server_options_agree(args, "demo"):
        return 2
    if args.base_url is not None:
        model = server_model(args, "demo")
        if model is None:
            return 2
        source = f"{args.model} at {args.base_url}"
    else:
        delay = args.delay if args.delay is not None else (0.03 if tty else 0.0)
        model = scripted_model(delay)
        source = "the scripted model"

    printer = EventPrinter(out, style)
    callbacks: list[ChainCallbackHandler] = [printer]
    recorder = None
    record = getattr(args, "record", None)  # callers may build args by hand
    if record is not None:
        from .._persist._events import EventRecorder

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
    # Each call of the chain is a run of its own (on_run_start ... on_run_complete),
    # with the same run id: said before each, so three on_run_start read right.
    printer.note("chain.run(): the model streams its step, up to a tool call", "dim")
    result = chain.run()
    rounds = 0
    while result.status == "interrupted" and rounds < MAX_APPROVALS:
        rounds += 1
        waiting = result.chain.pending_tool_calls
        printer.note(f"run interrupted: {dict(result.interrupt_data or {})}", "yellow")
        for call in waiting:
            printer.note(
                f"human (scripted): approve {call.name}({call_arguments(call)})"
            )
        printer.note(
            "chain.execute_tool_calls_with_decisions(...): runs the approved "
            "calls, no model call ('ok': the tools are done)",
            "dim",
        )
        result = result.chain.execute_tool_calls_with_decisions(
            waiting, [Decision.approve() for _ in waiting]
        )
        # Interrupted again: another round; an error ends the loop.
        if result.status == "ok":
            printer.note("chain.run(): the model answers with the results", "dim")
            result = result.chain.run()
    if result.status == "interrupted":
        printer.note(f"the agent still wants approval after {rounds} rounds", "red")
        return 1
    if result.status != "ok":
        printer.note(f"the agent failed: {result.error}", "red")
        return 1
    printer.note(f"answer: {result.chain.messages[-1].text}", "green")
    printer.note(
        f"{printer.lines} lines for {printer.count} printed events "
        f"(each streamed delta is one; deltas of one kind share a line)",
        "dim",
    )
    return 0
