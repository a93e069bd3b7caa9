"""Human decisions on interrupted tool calls, and the retry policy for model calls."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal

import attrs

from .._core._messages import _ERROR_TYPES, LangHooksError, _arguments
from .._core._validators import fraction, non_negative, positive_int, sleepable

__all__ = ["Decision", "RetryPolicy"]

DecisionKind = Literal["approve", "edit", "reject"]


def _optional_arguments(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else _arguments(value)


@attrs.frozen(kw_only=True)
class Decision:
    """A human's decision on one interrupted tool call.

    Build one with ``Decision.approve()``, ``Decision.edit(arguments)`` or
    ``Decision.reject()`` and pass it to
    ``LLMChain.execute_tool_calls_with_decisions``.

    Attributes:
        kind: "approve", "edit" or "reject".
        arguments: the arguments to run the call with (``edit`` only).
        reason: what the model is told about a rejection.
    """

    kind: DecisionKind = attrs.field(
        validator=attrs.validators.in_(("approve", "edit", "reject"))
    )
    arguments: Mapping[str, Any] | None = attrs.field(
        default=None, converter=_optional_arguments
    )
    reason: str = attrs.field(
        default="The user rejected this tool call.",
        validator=attrs.validators.instance_of(str),
    )

    def __attrs_post_init__(self) -> None:
        if (self.kind == "edit") != (self.arguments is not None):
            raise ValueError(
                "arguments go with kind 'edit' and only with it: use "
                "Decision.edit(arguments)"
            )

    @classmethod
    def approve(cls) -> Decision:
        """Run the call as asked (review sees ``human_decision="approve"``)."""
        return cls(kind="approve")

    @classmethod
    def edit(cls, arguments: Mapping[str, Any]) -> Decision:
        """Run the call with ``arguments`` instead (review sees ``"edit"``)."""
        return cls(kind="edit", arguments=arguments)

    @classmethod
    def reject(cls, reason: str = "The user rejected this tool call.") -> Decision:
        """Do not run the call; the model is told ``reason`` (not a failure)."""
        return cls(kind="reject", reason=reason)


def _error_types(values: Iterable[str]) -> frozenset[str]:
    # A typed converter: mypy's attrs plugin cannot infer the argument type of the
    # generic ``frozenset``, and a bare str would silently become its letters.
    if isinstance(values, str):
        raise TypeError(
            f"retry_types must be a collection of error types, got the str "
            f"{values!r}: write {{{values!r}}}"
        )
    types = frozenset(values)
    unknown = sorted(types - _ERROR_TYPES)
    if unknown:
        raise ValueError(
            f"retry_types has unknown error types {unknown}; known: "
            f"{sorted(_ERROR_TYPES)}"
        )
    return types


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """How a run retries a failed model call before failing over.

    A failed call is retried on the same model while ``should_retry(error)`` and
    fewer than ``max_attempts`` calls were made to that model in this step; the
    wait before attempt ``n + 1`` is the provider's ``retry_after`` when it gave one,
    else ``initial_delay * multiplier ** (n - 1)`` capped at ``max_delay``, spread by
    ``jitter`` (a fraction: 0.2 means +/-20%). Then the next fallback model is
    tried. No wait exceeds ``max_delay``: when a provider asks for a longer one
    the call is not retried on that model, and the next fallback is tried at once
    (or the run gives up with the provider's error). Inject ``sleep`` /
    ``async_sleep`` / ``random`` in tests so nothing really waits.

    Attributes:
        max_attempts: calls per model per step (1 means no retry).
        initial_delay: seconds before the first retry.
        multiplier: growth factor of the delay per attempt.
        max_delay: the longest computed wait in seconds.
        jitter: the random spread of each wait, as a fraction of it.
        retry_types: error types retried even when not flagged ``retryable``
            (none by default: the error's own ``retryable`` decides, as the
            provider models set it, for instance from ``x-should-retry``).
        sleep: waits in ``run``.
        async_sleep: waits in ``arun``.
        random: a source of floats in [0, 1) for the jitter.
    """

    max_attempts: int = attrs.field(default=2, validator=positive_int)
    initial_delay: float = attrs.field(default=0.5, validator=non_negative)
    multiplier: float = attrs.field(default=2.0, validator=non_negative)
    max_delay: float = attrs.field(default=30.0, validator=[non_negative, sleepable])
    jitter: float = attrs.field(default=0.2, validator=fraction)
    retry_types: frozenset[str] = attrs.field(
        default=frozenset(), converter=_error_types
    )
    sleep: Callable[[float], object] = attrs.field(default=time.sleep, eq=False)
    async_sleep: Callable[[float], Awaitable[object]] = attrs.field(
        default=asyncio.sleep, eq=False
    )
    random: Callable[[], float] = attrs.field(default=random.random, eq=False)

    def should_retry(self, error: LangHooksError) -> bool:
        """Whether ``error`` is worth another attempt (or a fallback)."""
        return error.retryable or error.type in self.retry_types

    def retry_delay(self, attempt: int, error: LangHooksError) -> float | None:
        """Seconds to wait before retrying on the same model, or None to move on.

        Args:
            attempt: the number of the attempt that failed (from 1).
            error: why it failed.

        Returns:
            ``delay(attempt, error)``; None when ``error`` is not worth retrying,
            ``max_attempts`` are spent, or the provider asked to wait longer than
            ``max_delay`` (then the next fallback is tried at once, or the run
            gives up with the provider's error).
        """
        if not self.should_retry(error) or attempt >= self.max_attempts:
            return None
        if error.retry_after is not None and error.retry_after > self.max_delay:
            return None
        return self.delay(attempt, error)

    def delay(self, attempt: int, error: LangHooksError) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (from 1).

        Returns:
            ``error.retry_after`` when the provider set it, else the jittered
            exponential backoff; never more than ``max_delay``.
        """
        if error.retry_after is not None:
            return min(error.retry_after, self.max_delay)
        growth = self.multiplier ** (attempt - 1)
        base = min(self.max_delay, self.initial_delay * growth)
        spread = 1 + self.jitter * (2 * self.random() - 1)
        return min(self.max_delay, base * spread)
