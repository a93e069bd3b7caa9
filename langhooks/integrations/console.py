"""``ConsoleHandler``: every chain event as one readable line on a terminal.

This is what ``langhooks demo`` prints. Streamed text and thinking continue their
line as they arrive; every other event gets a line of its own. Colour is used only
on a terminal and never when ``NO_COLOR`` is set (https://no-color.org). Needs no
optional library.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, TextIO

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._event_fields import CHAIN_FIELDS, Field
from .._core._messages import LangHooksError, MessageDelta
from .._core._terminal_style import Style as _Style
from .._core._terminal_style import wants_color as _wants_color
from ._event_lines import (
    LINES,
    Console,
    Lines,
    field_values,
    method_factory,
    pairs_text,
    params_of,
)

if TYPE_CHECKING:
    from ..chain import LLMChain, RunResult
    from ..models import ChatModel, ChatRequest

__all__ = ["ConsoleHandler"]


def _run_key(chain: LLMChain) -> str:
    """The key of a run's attempt numbers: its invocation id."""
    invocation = chain.invocation
    return "" if invocation is None else invocation.id


def line_methods(
    fields: Mapping[str, tuple[Field, ...]],
    params: Mapping[str, tuple[str, ...]],
    lines: Mapping[str, Lines],
) -> dict[str, Callable[..., None]]:
    """One method per event of ``fields``, printing its line: its row in ``lines``,
    else its fields as ``name=value``. Built once, when the module is imported."""
    methods: dict[str, Callable[..., None]] = {}
    for event, row in fields.items():
        console = lines.get(event, Lines()).console
        if console is None:
            values = field_values(row, params[event], data_only=False)
            console = Console(lambda style, *args, v=values: pairs_text(v(*args)))
        methods[event] = _line_method(
            event, console.detail, console.color, len(params[event])
        )
    return methods


def _line_method(
    event: str, detail: Callable[..., str], color: str, arity: int
) -> Callable[..., None]:
    source = (
        "def factory(column, detail, color):\n"
        "    def method(self, {args}):\n"
        "        self._line(column, detail(self._style, {args}), color)\n"
        "    return method\n"
    )
    make = method_factory(source, arity)
    method: Callable[..., None] = make(f"{event:<28}", detail, color)
    method.__name__ = method.__qualname__ = event
    return method


class ConsoleHandler(ChainCallbackHandler):
    """Prints each chain event on one line; streamed text continues its line.

    What the line says is the event's row in ``_event_lines.LINES`` (or its fields);
    the methods here are the events with more to do than print one line.

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

    # The table's methods, made once, in the class body (not a base class, which the
    # API docs would show); a method below replaces the table's for its event.
    vars().update(line_methods(CHAIN_FIELDS, params_of(ChainCallbackHandler), LINES))

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
        self._line(f"{event:<28}", detail, color)

    def _line(self, column: str, detail: str, color: str) -> None:
        """``line`` with the event's name already padded to its column."""
        with self._lock:
            self._end_line()
            self.count += 1
            self.lines += 1
            self._out.write(f"  {self._style(column, color)} {detail}".rstrip() + "\n")
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
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._forget(chain)
        self.line("on_error", str(error), "red")

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self._forget(chain)
        self.line("on_run_complete", f"status {result.status}", "magenta")
