"""Small helpers the core's value types share: frozen mappings and pickling.

Below ``_messages`` and ``_invocation``, which both build on them.
"""

from __future__ import annotations

import threading
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
    "_value_repr",
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


# The ids of the values whose repr is being made in this thread: a value met again
# inside its own repr (through a mutable container) is shown as "...".
_REPRING: Final = threading.local()


def _value_repr(self: Any) -> str:
    """``__repr__`` for value types: the text attrs would generate.

    ``Name(field=value, ...)`` over the fields shown in a repr. The value types are
    declared with ``repr=False`` and share this one function: attrs compiles
    a ``__repr__`` per class, a third of the code it generates, paid by every
    ``import langhooks``.
    """
    try:
        running: set[int] = _REPRING.ids
    except AttributeError:
        running = _REPRING.ids = set()
    if id(self) in running:
        return "..."
    running.add(id(self))
    try:
        cls = type(self)
        shown = ", ".join(
            f"{field.name}={getattr(self, field.name)!r}"
            for field in attrs.fields(cls)
            if field.repr
        )
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({shown})"
    finally:
        running.discard(id(self))


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
