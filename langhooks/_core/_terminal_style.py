"""What the console handler and the CLI both print with: ANSI colours, the colour
choice for a stream, and a tool call's arguments and progress as text."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final, TextIO

from ._terminal import escaped

if TYPE_CHECKING:
    from ._messages import ToolCall

__all__ = ["Style", "call_arguments", "progress_text", "wants_color"]

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


class Style:
    """ANSI colours, or none."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(_COLORS[style] for style in styles)
        return f"\033[{codes}m{text}\033[0m"


def wants_color(stream: TextIO) -> bool:
    """Whether to colour what goes to ``stream``: a terminal, ``NO_COLOR`` unset."""
    # no-color.org: NO_COLOR set to a non-empty value turns colour off.
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def call_arguments(call: ToolCall) -> str:
    """A call's arguments as ``key='value', ...``."""
    return ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """A progress report as ``3/5 (60%) message`` (``3`` alone without a total)."""
    text = f"{progress:g}"
    if total is not None:
        share = f" ({progress / total:.0%})" if total else ""
        text = f"{text}/{total:g}{share}"
    return text if message is None else f"{text} {escaped(message)}"
