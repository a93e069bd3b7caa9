"""``langhooks.codec``'s typed functions: ``encode``/``dumps`` take the union of the
value types, ``decode``/``loads`` an optional expected class.

The work is ``_codec``'s; this module only types it and checks the expected class,
so ``loads(text, type=Message)`` is a ``Message`` for the type checkers and at run
time.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, TypeAlias, TypeVar, overload

from .._core._chain_callbacks import (
    Allow,
    Deny,
    Interrupt,
    ReviewContext,
    UpdateArguments,
)
from .._core._invocation import Invocation
from .._core._messages import (
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from .._core._tools import ToolProgress
from ..chain._decision import Decision
from . import _codec
from ._records import EventRecord

__all__ = ["Encodable", "decode", "dumps", "encode", "loads"]

#: What ``encode`` and ``dumps`` take: every langhooks value type. The classes of
#: the codec's table (``_codec.ROWS``), written out because a type checker cannot
#: read a union from a table; ``tests/test_codec_table.py`` keeps the two equal.
Encodable: TypeAlias = (
    ContentPart
    | ToolCall
    | ToolResult
    | Message
    | MessageDelta
    | TokenUsage
    | FinishReason
    | ChatResponse
    | LangHooksError
    | Invocation
    | PartialResponse
    | PartialThinking
    | PartialToolCall
    | CompleteToolCall
    | ToolProgress
    | Allow
    | UpdateArguments
    | Deny
    | Interrupt
    | ReviewContext
    | Decision
    | EventRecord
)

# The class ``decode`` and ``loads`` are told to expect: one of the value types.
_T = TypeVar("_T", bound=Encodable)


def encode(value: Encodable) -> dict[str, Any]:
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
    return _codec.encode(value)


def dumps(value: Encodable) -> str:
    """``encode(value)`` as JSON text (ASCII: lone surrogates are escaped, so any
    str round-trips).

    Raises:
        TypeError: as ``encode``.
        ValueError: as ``encode``; also an int too long for ``int`` to ``str``
            conversion (see ``sys.set_int_max_str_digits``).
    """
    return _codec.dumps(value)


def _expected(value: Encodable, expected: type[Any] | None) -> Encodable:
    if expected is not None and not isinstance(value, expected):
        raise TypeError(
            f"expected an encoded {expected.__name__}, got an encoded "
            f"{builtins.type(value).__name__}"
        )
    return value


def _check_type(expected: object) -> None:
    if expected is not None and not isinstance(expected, builtins.type):
        raise TypeError(f"type must be a class such as Message, got {expected!r}")


@overload
def decode(data: Mapping[str, Any]) -> Encodable: ...
@overload
def decode(data: Mapping[str, Any], type: type[_T]) -> _T: ...
def decode(data: Mapping[str, Any], type: type[Any] | None = None) -> Encodable:
    """The value ``encode`` made ``data`` from (equal to the original).

    Args:
        data: a dict as ``encode`` returns it (for instance from ``json.loads``).
        type: the class the value must be (``decode(data, Message)``): the result
            is typed as it, and checked at run time.

    Returns:
        The value (a ``Message``, ``ToolCall``, ``EventRecord``, ...): without
        ``type``, typed ``Encodable``, to be narrowed (``isinstance``) before use.

    Raises:
        TypeError: ``data`` is not a mapping, ``type`` is not a class, or the value
            is not a ``type``.
        ValueError: an unknown type tag, a schema version newer than this code
            reads, or fields that do not make a valid value.
    """
    _check_type(type)
    value = _codec.decode(data)
    return _expected(value, type)


@overload
def loads(text: str | bytes) -> Encodable: ...
@overload
def loads(text: str | bytes, type: type[_T]) -> _T: ...
def loads(text: str | bytes, type: type[Any] | None = None) -> Encodable:
    """The value ``dumps`` wrote as ``text``.

    Args:
        text: JSON text as ``dumps`` returns it.
        type: the class the value must be (``loads(text, type=Message)``): the
            result is typed as it, and checked at run time.

    Raises:
        ValueError: the text is not JSON, or as ``decode``.
        TypeError: the JSON is not an object, ``type`` is not a class, or the value
            is not a ``type``.
    """
    _check_type(type)
    value = _codec.loads(text)
    return _expected(value, type)
