"""JSON (and pickle) for langhooks' value types.

``encode(value)`` turns a value (``Message``, ``ToolCall``, ``ChatResponse``,
``EventRecord``, ...) into a dict of JSON types tagged with its type under ``"type"``
and the schema version under ``"version"``; ``decode`` turns it back into an equal
value. ``dumps`` and ``loads`` do the same through JSON text. Every value type also
pickles. ``Encodable`` is the union of the types ``encode`` takes; ``decode`` and
``loads`` take the class expected (``loads(text, type=Message)``) to type the result
and check it at run time.
"""

from __future__ import annotations

from ._persist._codec import SCHEMA_VERSION
from ._persist._codec_api import Encodable, decode, dumps, encode, loads

__all__ = ["SCHEMA_VERSION", "Encodable", "decode", "dumps", "encode", "loads"]
