"""JSON data: caller data checked and copied as JSON types, and JSON text read back.

Caller data (tool arguments, metadata, custom context, ...) must already be JSON:
anything else is refused with the path to it, never turned into a string. It nests
``MAX_DEPTH`` levels at most, a fixed limit rather than whatever stack is left.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "Unencodable",
    "json_data",
    "json_text",
    "jsonable",
    "parse_json",
]

#: How deep caller data (tool arguments, metadata, ...) may nest. The limit is
#: fixed, not whatever stack is left: Python's ``json`` recurses once per level and
#: fails with ``RecursionError`` near 1,000 levels minus the caller's depth, which a
#: record adds its own levels to. Deeper data is refused with ``ValueError``.
MAX_DEPTH: Final = 200

#: Compact JSON text of already-encoded data. One encoder, made once: ``json.dumps``
#: with options builds a new one per call. Encoded data is a fresh tree checked by
#: ``encode`` (no cycles, no NaN), so those checks are off.
_reference_text: Final = json.JSONEncoder(
    separators=(",", ":"), check_circular=False, allow_nan=False
).encode


def _not_json(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _c_text() -> Callable[[Any], str] | None:
    """``_reference_text`` without its per-call cost (``JSONEncoder.encode`` makes a
    new C encoder for every call): the C encoder with the same options, made once.
    None where ``json`` has no C accelerator."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover  # CPython always has it
        return None
    encoder = make(
        None, _not_json, json.encoder.encode_basestring_ascii, None, ":", ",",
        False, False, False,
    )  # fmt: skip

    def text(value: Any) -> str:
        return "".join(encoder(value, 0))

    return text


json_text: Final[Callable[[Any], str]] = _c_text() or _reference_text


class Unencodable(Exception):
    """A value that cannot be encoded; ``path`` grows while the stack unwinds."""

    def __init__(self, error: type[Exception], reason: str) -> None:
        super().__init__(reason)
        self.error = error
        self.reason = reason
        self.path: list[str] = []  # innermost first

    def raise_public(self, root: str = "") -> None:
        """Raise the public error (TypeError or ValueError) naming the path."""
        path = root + "".join(reversed(self.path))
        where = path.removeprefix(".") or "the value"
        raise self.error(f"cannot encode {where}: {self.reason}") from None


# --- JSON data (arguments, metadata, custom context, ...) -------------------------


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as fresh JSON types (tuples become lists), or ``Unencodable``."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise Unencodable(ValueError, f"{value!r} is not a JSON number")
    if depth >= MAX_DEPTH and isinstance(value, Mapping | list | tuple):
        raise Unencodable(
            ValueError, f"JSON data may nest {MAX_DEPTH} levels deep at most"
        )
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise Unencodable(
                    TypeError,
                    f"the key {key!r} is a {type(key).__name__}; JSON object keys "
                    f"are str",
                )
            try:
                out[key] = jsonable(item, depth + 1)
            except Unencodable as error:
                error.path.append(f"[{json.dumps(key)}]")
                raise
        return out
    if isinstance(value, list | tuple):
        items: list[Any] = []
        try:
            for item in value:
                items.append(jsonable(item, depth + 1))
        except Unencodable as error:
            error.path.append(f"[{len(items)}]")
            raise
        return items
    if isinstance(value, str | int | float):  # subclasses (bool was handled above)
        return jsonable(str(value) if isinstance(value, str) else value.real, depth)
    raise Unencodable(
        TypeError,
        f"{type(value).__qualname__} is not JSON data (use str, int, float, bool, "
        f"None, and lists and str-keyed mappings of them)",
    )


def json_data(value: Any, what: str) -> Any:
    """``value`` checked and copied as JSON data.

    Raises:
        TypeError: a part of it is not JSON data (the message names its path
            under ``what``).
        ValueError: a float is NaN or infinite, or it nests deeper than
            ``MAX_DEPTH`` levels.
    """
    try:
        return jsonable(value)
    except Unencodable as error:
        error.raise_public(what)
        raise  # pragma: no cover  # raise_public always raises


def parse_json(text: str | bytes) -> Any:
    """``json.loads(text)``, with text nested too deeply to parse refused as
    ``ValueError`` (the parser recurses once per level).

    Raises:
        ValueError: the text is not JSON, or nests too deeply.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(
            "the JSON nests too deeply to parse (langhooks data nests "
            f"{MAX_DEPTH} levels deep at most)"
        ) from None
