"""The codec's field helpers: caller data encoded with the path to a bad value, and
the checks of decoded fields whose classes do not validate them.

An encoder that meets caller data that is not JSON raises ``Unencodable``; each
helper here adds its step of the path (``.arguments``, ``[2]``), so the error names
where the value was, as ``tool_calls[0].arguments["when"]``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._jsondata import Unencodable, jsonable

__all__ = [
    "SCHEMA_VERSION",
    "bool_field",
    "check_version",
    "data_field",
    "each_field",
    "mapping_or_none",
    "nested_field",
    "optional_str",
    "str_field",
    "time_field",
]


#: The schema version the codec writes; it reads it and every older one.
SCHEMA_VERSION: Final[int] = 1


# --- encoding: caller data and nested values, with the path to a bad value ---------


def data_field(value: Any, field: str) -> Any:
    """Caller data under ``field``, as JSON types.

    Raises:
        Unencodable: a part of it is not JSON (its path ends in ``.field``).
    """
    try:
        return jsonable(value)
    except Unencodable as error:
        error.path.append(f".{field}")
        raise


def each_field(items: Any, encode_one: Callable[[Any], Any], field: str) -> list[Any]:
    """Each of ``items`` encoded by ``encode_one`` (a list under ``field``).

    Raises:
        Unencodable: as ``encode_one``, the path naming the item.
    """
    out: list[Any] = []
    try:
        for item in items:
            out.append(encode_one(item))
    except Unencodable as error:
        error.path.append(f"[{len(out)}]")
        error.path.append(f".{field}")
        raise
    return out


def nested_field(value: Any, encode_one: Callable[[Any], Any], field: str) -> Any:
    """``value`` (or None) encoded by ``encode_one`` under ``field``.

    Raises:
        Unencodable: as ``encode_one``, the path naming the field.
    """
    if value is None:
        return None
    try:
        return encode_one(value)
    except Unencodable as error:
        error.path.append(f".{field}")
        raise


# --- decoding: checks for fields whose classes do not validate them ----------------


def bool_field(value: Any, field: str) -> bool:
    """``value``, a bool.

    Raises:
        TypeError: it is not one.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{field} must be a bool, got {value!r}")
    return value


def str_field(value: Any, field: str) -> str:
    """``value``, a str.

    Raises:
        TypeError: it is not one.
    """
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a str, got {value!r}")
    return value


def optional_str(value: Any, field: str) -> str | None:
    """``value``, a str or None.

    Raises:
        TypeError: it is neither.
    """
    return None if value is None else str_field(value, field)


def mapping_or_none(value: Any, field: str) -> Mapping[str, Any] | None:
    """``value``, a mapping or None.

    Raises:
        TypeError: it is neither.
    """
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(f"{field} must be an object or null, got {value!r}")
    return value


def time_field(value: Any, field: str) -> datetime.datetime:
    """The time ``value`` (ISO 8601 text) says.

    Raises:
        TypeError: it is not a str.
        ValueError: it is not ISO 8601.
    """
    if not isinstance(value, str):
        raise TypeError(f"{field} must be an ISO 8601 str, got {value!r}")
    return datetime.datetime.fromisoformat(value)


def check_version(data: Mapping[str, Any], what: str) -> None:
    """Check ``data["version"]`` is a schema version this code reads.

    Raises:
        ValueError: the version is missing, not an int, or newer than
            ``SCHEMA_VERSION``.
    """
    version = data.get("version")
    if type(version) is not int or version < 1:
        raise ValueError(
            f"{what} has no valid schema version (an int >= 1 under 'version'), "
            f"got {version!r}"
        )
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"{what} has schema version {version}, newer than this langhooks reads "
            f"({SCHEMA_VERSION}): upgrade langhooks to read it"
        )
