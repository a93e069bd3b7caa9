"""What every run store shares: ``PendingRun``, one row of the approval inbox, and
the checks of what ``save`` and ``pending`` take (the protocols are in
``_stores_async``/``_stores_sync``, ``MemoryRunStore`` in ``_stores``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import attrs

from .._core._messages import ToolCall

if TYPE_CHECKING:
    from ..chain import LLMChain

__all__ = [
    "CallKey",
    "PendingRun",
    "check_expires_in",
    "check_limit",
    "check_metadata",
    "contains",
    "run_id_of",
]


@attrs.frozen
class CallKey:
    """Which tool call of a run a resume's record is about: the position in the
    conversation of the assistant message that made the call, and the call's id.

    A provider that numbers call ids per response (``call_0``, ``call_1``, ... in
    every turn) repeats ids across turns, never a position: a later turn's
    ``call_0`` is another call.
    """

    position: int
    call_id: str

    @property
    def text(self) -> str:
        """The key as one ASCII string, ``position`` then the id as JSON (a store
        keeps any id, NUL and lone surrogates included)."""
        return f"{self.position} {json.dumps(self.call_id)}"


def _calls(value: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    calls = tuple(value)
    for call in calls:
        if not isinstance(call, ToolCall):
            raise TypeError(f"calls must be ToolCalls, got {call!r}")
    return calls


def _metadata(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict(check_metadata(value))


@attrs.frozen(kw_only=True)
class PendingRun:
    """A run waiting for a person's decisions: one row of the approval inbox.

    Attributes:
        run_id: the run's id (what ``resume`` takes).
        calls: the tool calls waiting for a decision, in the run's order.
        saved_at: when the run was saved (UTC).
        expires_at: when the store forgets it (UTC), or None for never.
        metadata: what ``save`` was given (a tenant, a user, a title, ...).
    """

    run_id: str
    calls: tuple[ToolCall, ...] = attrs.field(converter=_calls)
    saved_at: datetime
    expires_at: datetime | None = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_metadata)


# --- checks every store shares -------------------------------------------------------


def run_id_of(chain: LLMChain) -> str:
    """The run id ``save`` keeps ``chain`` under.

    Raises:
        TypeError: ``chain`` is not an ``LLMChain``.
        ValueError: the chain has not run (it has no run id).
    """
    from ..chain import LLMChain

    if not isinstance(chain, LLMChain):
        raise TypeError(f"save takes an LLMChain, got {chain!r}")
    if chain.invocation is None:
        raise ValueError(
            "the chain has not run, so it has no run id: save the chain of a "
            "RunResult (result.chain)"
        )
    return chain.invocation.id


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """``metadata`` as a dict of JSON values ({} for None).

    Raises:
        TypeError: it is not a mapping with str keys, or a value is not JSON.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping or None, got {metadata!r}")
    value = dict(metadata)
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"metadata keys must be str, got {key!r}")
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"metadata must hold JSON values only: {exc}") from None
    result: dict[str, Any] = json.loads(text)
    return result


def check_expires_in(expires_in: float | None) -> float | None:
    """``expires_in`` when it is None or a number of seconds > 0 and finite.

    Raises:
        TypeError: it is not a number.
        ValueError: it is not > 0 and finite.
    """
    if expires_in is None:
        return None
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float):
        raise TypeError(
            f"expires_in must be a number of seconds or None, got {expires_in!r}"
        )
    if not (expires_in > 0 and math.isfinite(expires_in)):
        raise ValueError(
            f"expires_in must be > 0 seconds and finite, got {expires_in!r}"
        )
    return float(expires_in)


def check_limit(limit: int) -> int:
    """``limit`` when it is an int >= 1.

    Raises:
        TypeError: it is not an int.
        ValueError: it is < 1.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, got {limit!r}")
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return limit


def contains(metadata: Any, wanted: Any) -> bool:
    """Whether ``metadata`` contains ``wanted`` as PostgreSQL's JSONB ``@>`` says
    (for a ``metadata`` object: objects by key, arrays by element, numbers by
    value)."""
    if isinstance(wanted, dict):
        return isinstance(metadata, dict) and all(
            key in metadata and contains(metadata[key], value)
            for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return isinstance(metadata, list) and all(
            any(contains(item, one) for item in metadata) for one in wanted
        )
    if _number(metadata) and _number(wanted):
        return bool(metadata == wanted)
    return type(metadata) is type(wanted) and metadata == wanted


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
