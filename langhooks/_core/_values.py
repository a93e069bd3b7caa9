"""Small helpers the core's value types share: frozen mappings, pickling, and the
``__repr__``, ``__eq__`` and ``__hash__`` attrs would otherwise generate per class.

Below ``_messages`` and ``_invocation``, which both build on them.
"""

from __future__ import annotations

import operator
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
    "_value_eq",
    "_value_hash",
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


# Per value type, read from its attrs fields on first use: the names of the fields
# its ``__eq__`` compares; the salt of its ``__hash__`` and a function from a value to
# the tuple of its hashed fields.
_EQ_NAMES: Final[dict[type, tuple[str, ...]]] = {}
_HASH_KEYS: Final[dict[type, tuple[int, Callable[[Any], tuple[Any, ...]]]]] = {}


def _eq_names(cls: type) -> tuple[str, ...]:
    names = _EQ_NAMES[cls] = tuple(f.name for f in attrs.fields(cls) if f.eq)
    return names


def _value_eq(self: object, other: object, /) -> bool:
    """``__eq__`` for value types: what attrs would generate.

    ``NotImplemented`` unless ``other`` is of the very same class, else
    ``self.a == other.a and self.b == other.b ...`` over the fields compared for
    equality. The value types are declared with ``eq=False`` and share this one
    function (and ``object``'s ``__ne__``, which negates it as attrs' ``__ne__``
    does): attrs compiles an ``__eq__`` and a ``__hash__`` per class, paid by every
    ``import langhooks``.
    """
    cls = self.__class__
    if other.__class__ is not cls:
        # Not special-cased by mypy outside a class body (NotImplemented is Any).
        return NotImplemented  # type: ignore[no-any-return]
    try:
        names = _EQ_NAMES[cls]
    except KeyError:
        names = _eq_names(cls)
    result: bool = True
    for name in names:
        result = getattr(self, name) == getattr(other, name)
        if not result:
            return result
    return result


def _hash_keys(cls: type) -> tuple[int, Callable[[Any], tuple[Any, ...]]]:
    # attrs salts a class's hash with the hash of a name made from the module and
    # qualified name of the class it generated ``__hash__`` for.
    owner = next(c for c in cls.__mro__ if c.__dict__.get("__hash__") is _value_hash)
    salt = hash(f"<attrs generated hash {owner.__module__}.{owner.__qualname__}>")
    names = [
        f.name
        for f in attrs.fields(cls)
        if f.hash is True or (f.hash is None and f.eq is True)
    ]
    fields: Callable[[Any], tuple[Any, ...]]
    if len(names) > 1:
        fields = operator.attrgetter(*names)
    else:  # attrgetter gives a tuple for two names or more only
        get = operator.attrgetter(*names) if names else None

        def fields(value: Any) -> tuple[Any, ...]:
            return () if get is None else (get(value),)

    keys = _HASH_KEYS[cls] = (salt, fields)
    return keys


def _value_hash(self: Any) -> int:
    """``__hash__`` for frozen value types: what attrs would generate.

    The hash of ``(salt, self.a, self.b, ...)`` over the fields hashed, with the
    salt attrs uses for the class.
    """
    cls = self.__class__
    try:
        salt, fields = _HASH_KEYS[cls]
    except KeyError:
        salt, fields = _hash_keys(cls)
    return hash((salt, *fields(self)))


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
