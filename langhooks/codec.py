"""JSON (and pickle) for langhooks' value types.

``encode(value)`` turns a value (``Message``, ``ToolCall``, ``ChatResponse``,
``EventRecord``, ...) into a dict of JSON types tagged with its type under ``"type"``
and the schema version under ``"version"``; ``decode`` turns it back into an equal
value. ``dumps`` and ``loads`` do the same through JSON text. Every value type also
pickles.
"""

from __future__ import annotations

from ._persist._codec import SCHEMA_VERSION, decode, dumps, encode, loads

__all__ = ["SCHEMA_VERSION", "decode", "dumps", "encode", "loads"]
