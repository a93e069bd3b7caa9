"""The attrs validators the value types and the runtime's settings share.

Each raises with one sentence naming the field, what it must be and what it got
("index must be a non-negative int, got -1"). A validator specific to one type (a
tool name, a partial's text) stays beside that type.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any, TypeAlias

import attrs

__all__ = [
    "Validator",
    "callable_value",
    "count",
    "fraction",
    "instance_of",
    "non_empty_str",
    "non_negative",
    "one_of",
    "optional_str",
    "positive_int",
    "sleepable",
]

Validator: TypeAlias = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def one_of(allowed: frozenset[str]) -> Validator:
    """A validator accepting only the values in ``allowed``.

    Args:
        allowed: The accepted values.

    Returns:
        The validator; it raises ValueError listing the accepted values.
    """

    def check(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in allowed:
            raise ValueError(
                f"{attribute.name} must be one of {sorted(allowed)}, got {value!r}"
            )

    return check


def instance_of(kind: type, *, optional: bool = False) -> Validator:
    """Like ``attrs.validators.instance_of`` (or ``optional(...)``), with a
    one-sentence message: "message must be a Message, got str".

    Args:
        kind: The type the value must be an instance of.
        optional: Whether None is accepted too.

    Returns:
        The validator; it raises TypeError naming the expected and the actual type.
    """
    article = "an" if kind.__name__[0] in "AEIOUaeiou" else "a"
    expected = f"{article} {kind.__name__}{' or None' if optional else ''}"

    def check(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, kind) and not (optional and value is None):
            raise TypeError(
                f"{attribute.name} must be {expected}, got {type(value).__name__}"
            )

    return check


def non_empty_str(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accept a non-empty str.

    Raises:
        ValueError: ``value`` is not a str, or is empty.
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty str, got {value!r}")


def optional_str(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accept a str or None.

    Raises:
        TypeError: ``value`` is neither.
    """
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str or None, got {value!r}")


def count(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accept an int >= 0 (not a bool).

    Raises:
        ValueError: ``value`` is not such an int.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be a non-negative int, got {value!r}")


def positive_int(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accept an int >= 1 (not a bool).

    Raises:
        ValueError: ``value`` is not such an int.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an int >= 1, got {value!r}")


def non_negative(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accept a finite int or float >= 0 (not a bool, not NaN).

    Raises:
        ValueError: ``value`` is not such a number.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{attribute.name} must be a number >= 0, got {value!r}")
    if not 0 <= value < math.inf:  # also rejects NaN
        raise ValueError(
            f"{attribute.name} must be a number >= 0 and finite, got {value!r}"
        )


def sleepable(_instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    """Accept a number of seconds this platform can wait (``threading.TIMEOUT_MAX``).

    ``time.sleep`` overflows past it, which must not make a retry raise.

    Raises:
        ValueError: ``value`` is longer.
    """
    if value > threading.TIMEOUT_MAX:
        raise ValueError(
            f"{attribute.name} must be at most {threading.TIMEOUT_MAX:g} seconds "
            f"(the longest wait this platform can make), got {value!r}"
        )


def fraction(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accept a number in [0, 1] (not a bool).

    Raises:
        ValueError: ``value`` is not such a number.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{attribute.name} must be a number in [0, 1], got {value!r}")
    if not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value!r}")


def callable_value(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accept a callable.

    Raises:
        TypeError: ``value`` is not callable.
    """
    if not callable(value):
        raise TypeError(f"{attribute.name} must be callable, got {value!r}")
