"""The invocation context: what a chain run or a tool execution is doing.

The current ``Invocation`` lives in a module-private ``ContextVar`` that only
``invocation()`` and the wrappers change, always through a token and ``finally``.
Threads started with ``contextvars.copy_context().run`` and asyncio tasks (which copy
the context when created) see the invocation that was current when they started.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

import attrs

from ._validators import instance_of
from ._values import _custom_context, _reduce, _value_eq, _value_hash, _value_repr

if TYPE_CHECKING:
    import datetime

__all__ = ["Invocation", "current_invocation", "entered", "invocation"]


def _uuid4_hex() -> str:
    """``uuid.uuid4().hex``, without importing ``uuid`` (``import langhooks`` stays
    light): 16 random bytes with the version (4) and variant (RFC 4122) bits set."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()


def _utc_now() -> datetime.datetime:
    # Imported on the first invocation, not by ``import langhooks`` (the pure-Python
    # part of the datetime module is slow to load); later calls find it loaded.
    from datetime import UTC, datetime

    return datetime.now(UTC)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Invocation:
    """One unit of work: a chain run or a tool execution.

    Attributes:
        id: unique id (a UUID4 in hex).
        name: what the work is ("run", a tool's name, ...).
        parent_id: the id of the invocation that was current when this one began.
        custom_context: caller data attached to the work.
        started_at: when it began (UTC).
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    id: str = attrs.field(factory=_uuid4_hex)
    name: str = attrs.field(validator=instance_of(str))
    parent_id: str | None = None
    custom_context: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_custom_context
    )
    started_at: datetime.datetime = attrs.field(factory=_utc_now)

    __reduce__ = _reduce


_CURRENT: Final[contextvars.ContextVar[Invocation | None]] = contextvars.ContextVar(
    "langhooks_current_invocation", default=None
)


def current_invocation() -> Invocation | None:
    """The invocation current in this thread or task, or None."""
    return _CURRENT.get()


@contextmanager
def invocation(
    name: str, *, custom_context: Mapping[str, Any] | None = None
) -> Iterator[Invocation]:
    """Make a new invocation current for the body of a ``with`` block.

    The new invocation's ``parent_id`` is the id of the invocation current on entry;
    on exit (also by an exception) the previous one is current again.

    Args:
        name: what the work is.
        custom_context: caller data to attach.

    Returns:
        A context manager that yields the new ``Invocation``.

    Raises:
        TypeError: ``name`` is not a str.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {name!r}")
    parent = _CURRENT.get()
    current = Invocation(
        name=name,
        parent_id=None if parent is None else parent.id,
        custom_context=custom_context,
    )
    with entered(current):
        yield current


@contextmanager
def entered(existing: Invocation) -> Iterator[Invocation]:
    """Make an existing invocation current again for the body of a ``with`` block.

    A resumed run uses it to keep the id of the run it resumes; on exit the previous
    invocation is current again.
    """
    token = _CURRENT.set(existing)
    try:
        yield existing
    finally:
        _CURRENT.reset(token)
