"""The claim primitives a run store gives the shared resume driver of ``_resume``.
The async module is written by hand, and the sync one is generated from it by
``scripts/unasync.py``: the same methods without ``async``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .._core._messages import ToolCall
from ._runs import CallKey

__all__ = ["AsyncClaimBackend"]


class AsyncClaimBackend(Protocol):
    """The primitives an async store gives the shared resume driver."""

    async def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        """Claim a waiting run (or take over one whose heartbeat stopped).

        Returns:
            The run's saved state.

        Raises:
            LangHooksError: "invalid_request" for an unknown, deleted or expired
                run; "conflict" when it is claimed by a live worker or done.
        """
        ...

    async def heartbeat(self, run_id: str, token: str) -> bool:
        """Renew the claim; False when ``token`` no longer holds it."""
        ...

    async def start_call(self, run_id: str, token: str, call: CallKey) -> str | None:
        """Mark a call started: None when it was not, else its outcome text
        (``""`` for a call that started and never returned). A store that kept
        records by call id alone (before ``CallKey``) takes such a record as
        this call's, once.

        Raises:
            LangHooksError: "conflict" when ``token`` no longer holds the claim.
        """
        ...

    async def finish_call(
        self, run_id: str, token: str, call: CallKey, outcome: str
    ) -> None:
        """Save the outcome of a started call."""
        ...

    async def settle(
        self,
        run_id: str,
        token: str,
        state: Mapping[str, Any],
        waiting: Sequence[ToolCall],
    ) -> None:
        """Save the state the resume ended in: waiting again for ``waiting``
        (call records cleared), or done when ``waiting`` is empty.

        Raises:
            LangHooksError: "conflict" when ``token`` no longer holds the claim.
        """
        ...

    async def release(self, run_id: str, token: str) -> None:
        """Hand the claim back: the run waits again, its call records kept."""
        ...
