"""Text from the wire made safe to print: the CLI commands' one escaping."""

from __future__ import annotations

import json

__all__ = ["escaped", "short_json"]


def escaped(text: str) -> str:
    """``text`` safe to print to a terminal.

    Args:
        text: text that came from a model, a tool or a file.

    Returns:
        ``text`` with every unprintable character (a control character, a lone
        surrogate, a line separator) as a ``\\x1b``-style escape; printable text
        unchanged.
    """
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


def short_json(value: object, limit: int) -> str:
    """``value`` as JSON, escaped and cut to ``limit`` characters.

    Args:
        value: data (a value that does not serialise is shown by its ``repr``).
        limit: the longest result; a longer one ends in ``...``.

    Returns:
        The line-safe text.
    """
    text = escaped(json.dumps(value, ensure_ascii=False, default=repr))
    return text if len(text) <= limit else text[: limit - 3] + "..."
