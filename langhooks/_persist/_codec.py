"""JSON for langhooks' value types: each type's row of the codec's table.

``encode(value)`` gives a dict of JSON types whose ``"type"`` key names the value's
class and whose ``"version"`` key is the schema version; fields follow, nested value
types as plain dicts (their class is known from the field). Fields that hold caller
data (tool arguments, metadata, custom context, ...) must already be JSON: anything
else is refused with the path to it, never turned into a string.

Why not cattrs: the value types are few and fixed, the runtime dependencies are
attrs and typing-extensions only, and the contract asks for things a generic
converter does not give for free (a type tag beside a field named ``type``, a schema
version, the path to an unencodable value, JSON-only data fields). Each class is one
row (``_core._codec_rows.ValueCodec``): its fields, listed once, from which its
encoder and the event recorder's text writer are generated as code, and a
hand-written decoder; the hot path (an event record per streamed token) does no
reflection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core import _json_messages
from .._core._codec_rows import ValueCodec
from .._core._json_fields import SCHEMA_VERSION, check_version
from .._core._jsondata import (
    MAX_DEPTH,
    Unencodable,
    json_data,
    json_text,
    parse_json,
)
from .._core._messages import Message
from ..chain._state_codec import STATE_TAG, decode_state, encode_state
from . import _codec_records, _codec_review, _codec_streaming

__all__ = [
    "MAX_DEPTH",
    "ROWS",
    "SCHEMA_VERSION",
    "STATE_TAG",
    "check_version",
    "decode",
    "decode_fields",
    "decode_state",
    "dumps",
    "encode",
    "encode_fields",
    "encode_state",
    "is_value_type",
    "json_data",
    "json_text",
    "loads",
    "message_from_data",
    "parse_json",
    "register",
]


# --- the registry -----------------------------------------------------------------

# class -> its row; tag -> its row. The tag is the public class name. Each concept's
# module holds its types' decoders, each beside its row of this table (``CODECS``:
# the type's fields, from which its encoder and the recorder's text writer are
# made).
ROWS: Final[dict[type, ValueCodec]] = {}
_TAGS: Final[dict[str, ValueCodec]] = {}


def register(*tables: tuple[ValueCodec, ...]) -> None:
    """Add each row of ``tables`` to the codec's table (the recorder's fast path
    writes their values too)."""
    for table in tables:
        for row in table:
            ROWS[row.cls] = row
            _TAGS[row.tag] = row


register(
    _json_messages.CODECS,
    _codec_streaming.CODECS,
    _codec_review.CODECS,
    _codec_records.CODECS,
)


# --- the public functions ---------------------------------------------------------


def is_value_type(kind: type) -> bool:
    """Whether ``encode`` takes instances of ``kind``."""
    return kind in ROWS


def encode_fields(value: Any) -> tuple[str, dict[str, Any]]:
    """``value``'s tag and fields, without the tag and version keys.

    Raises:
        TypeError: ``value`` is not a value type, or a part of it is not JSON
            data (the message names its path).
        ValueError: a float in it is NaN or infinite.
    """
    row = ROWS.get(type(value))
    if row is None:
        known = ", ".join(sorted(_TAGS))
        raise TypeError(
            f"cannot encode a {type(value).__qualname__}: langhooks.codec encodes "
            f"its value types ({known})"
        )
    try:
        return row.tag, row.encode(value)
    except Unencodable as error:
        error.raise_public()
        raise  # pragma: no cover  # raise_public always raises


def encode(value: Any) -> dict[str, Any]:
    """``value`` as a dict of JSON types, tagged with its type and schema version.

    Args:
        value: a langhooks value type (``Message``, ``ToolCall``, ``EventRecord``,
            ...). ``ToolResult.exception`` and ``LangHooksError.original`` are not
            encoded (they are never sent anywhere); tuples in caller data come back
            as lists.

    Returns:
        ``{"type": <class name>, "version": SCHEMA_VERSION, <fields>...}``.

    Raises:
        TypeError: ``value`` is not a value type, or caller data in it (tool
            arguments, metadata, custom context, ...) is not JSON: the message
            names the path, as ``tool_calls[0].arguments["when"]``.
        ValueError: a float in caller data is NaN or infinite.
    """
    tag, fields = encode_fields(value)
    out: dict[str, Any] = {"type": tag, "version": SCHEMA_VERSION}
    out.update(fields)
    return out


def decode_fields(tag: str, data: Mapping[str, Any]) -> Any:
    """The value of class ``tag`` from its fields (no version check).

    Raises:
        ValueError: an unknown tag, or fields that do not make a valid value.
    """
    row = _TAGS.get(tag)
    if row is None:
        raise ValueError(
            f"unknown type tag {tag!r}: langhooks.codec knows "
            f"{', '.join(sorted(_TAGS))} (was it written by a newer langhooks?)"
        )
    try:
        return row.decode(data)
    except KeyError as error:
        raise ValueError(
            f"not a valid encoded {tag}: the field {error} is missing"
        ) from None
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"not a valid encoded {tag}: {error}") from error


def decode(data: Mapping[str, Any]) -> Any:
    """The value ``encode`` made ``data`` from (equal to the original).

    Args:
        data: a dict as ``encode`` returns it (for instance from ``json.loads``).

    Returns:
        The value (a ``Message``, ``ToolCall``, ``EventRecord``, ...).

    Raises:
        TypeError: ``data`` is not a mapping.
        ValueError: an unknown type tag, a schema version newer than this code
            reads, or fields that do not make a valid value.
    """
    if not isinstance(data, Mapping):
        raise TypeError(
            f"decode takes a mapping as encode returns it, got {type(data).__name__}"
        )
    tag = data.get("type")
    if not isinstance(tag, str):
        raise ValueError(f"no type tag (a str under 'type') in {_preview(data)}")
    check_version(data, f"the encoded {tag}")
    return decode_fields(tag, data)


def _preview(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 80 else text[:77] + "..."


def dumps(value: Any) -> str:
    """``encode(value)`` as JSON text (ASCII: lone surrogates are escaped, so any
    str round-trips).

    Raises:
        TypeError: as ``encode``.
        ValueError: as ``encode``; also an int too long for ``int`` to ``str``
            conversion (see ``sys.set_int_max_str_digits``).
    """
    return json_text(encode(value))


def loads(text: str | bytes) -> Any:
    """The value ``dumps`` wrote as ``text``.

    Raises:
        ValueError: the text is not JSON (or nests too deeply for Python's JSON
            parser), or as ``decode``.
        TypeError: the JSON is not an object.
    """
    return decode(parse_json(text))


# --- messages as data, for run state and event records ------------------------------


def message_from_data(data: Mapping[str, Any]) -> Message:
    """The message whose fields (as ``encode_fields`` gives them) are ``data``.

    Raises:
        ValueError: fields that do not make a valid message.
    """
    return decode_fields("Message", data)  # type: ignore[no-any-return]
