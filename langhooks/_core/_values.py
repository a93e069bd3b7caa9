"""Small helpers the core's value types share: frozen mappings and pickling.

Below ``_messages`` and ``_invocation``, which both build on them.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs

__all__ = [
    "_EMPTY",
    "_custom_context",
    "_frozen_mapping",
    "_metadata",
    "_raw",
    "_reduce",
]

_EMPTY: Final[Mapping[str, Any]] = types.MappingProxyType({})

_T = TypeVar("_T")


def _reduce(self: Any) -> str | tuple[Any, ...]:
    """``__reduce__`` for value types with read-only mapping fields.

    A ``mappingproxy`` does not pickle: its contents go as a dict, and the class's
    converter freezes them again when the copy is built.
    """
    cls = type(self)
    values = {
        field.alias: dict(value) if isinstance(value, types.MappingProxyType) else value
        for field in attrs.fields(cls)
        for value in (getattr(self, field.name),)
    }
    return (_rebuild, (cls, values))


def _rebuild(cls: Callable[..., _T], values: Mapping[str, Any]) -> _T:
    return cls(**values)


def _frozen_mapping(
    value: Mapping[str, Any] | None, field: str = "value"
) -> Mapping[str, Any]:
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise TypeError(f"{field} must be a mapping, got {type(value).__name__}")
    return types.MappingProxyType(dict(value))


# Named converters, so that a bad value's error names the field it was given for.
def _metadata(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _frozen_mapping(value, "metadata")


def _raw(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _frozen_mapping(value, "raw")


def _custom_context(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _frozen_mapping(value, "custom_context")
