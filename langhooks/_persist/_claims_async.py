"""The storage-only contract of a run store: what a backend (in memory, Redis,
PostgreSQL, or a new one) implements, and all it implements. Saving what changed,
loading, resuming once (the claim, its heartbeat, the per-call records), the inbox
and delete are written above it, once: ``StoreBase``/``AsyncStoreBase``
(``_stores_async``) over the driver of ``_resume``.

A new backend is one module: a class with these methods, and its store class on
``AsyncStoreBase`` (or ``StoreBase``) that gives it from ``_backend()``; the
contract suite (``tests/integrations/test_run_stores.py``) runs on it once it is a
``Place`` kind there. The async module is written by hand, and the sync one is
generated from it by ``scripts/unasync.py``: the same methods without ``async``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .._core._messages import LangHooksError
from ._log import Saved, Write
from ._runs import CallKey, PendingRun

__all__ = ["AsyncClaimBackend"]


class AsyncClaimBackend(Protocol):
    """The primitives an async store's backend gives the shared driver.

    Expiry is the backend's: a run whose ``expires_in`` passed is never read,
    claimed or listed again (whether its data is gone yet or not).
    """

    async def write(
        self, write: Write, metadata: Mapping[str, Any], expires_in: float | None
    ) -> bool:
        """Save a run (replacing an earlier save: its status, claim and call
        records too), expiring in ``expires_in`` seconds (None: the store's
        default).

        A ``write`` with a ``base`` keeps the first ``write.keep`` messages
        and appends ``write.messages``, when the run is at version ``base``;
        else it changes nothing and answers False (the driver then writes the
        whole log). A ``write`` without a base replaces the whole log.
        """
        ...

    async def read(self, run_id: str) -> Saved | None:
        """The saved run, or None for an unknown, deleted or expired one."""
        ...

    async def claim(self, run_id: str, token: str) -> Saved:
        """Claim a waiting run (or take over one whose heartbeat stopped).

        Returns:
            The run as saved.

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

    async def settle(self, run_id: str, token: str, write: Write) -> None:
        """Save the state the resume ended in: waiting again for
        ``write.calls`` (call records cleared), or done when there are none.
        The run is at the version ``write`` builds on (nothing else writes a
        claimed run: a save takes the claim away), so the first ``write.keep``
        messages stay and ``write.messages`` follow.

        Raises:
            LangHooksError: "conflict" when ``token`` no longer holds the claim.
        """
        ...

    async def release(self, run_id: str, token: str) -> None:
        """Hand the claim back: the run waits again, its call records kept."""
        ...

    async def pending(self, wanted: Mapping[str, Any], limit: int) -> list[PendingRun]:
        """The waiting runs whose metadata contains ``wanted`` (as JSONB ``@>``),
        newest first, at most ``limit`` (both checked already)."""
        ...

    async def waiting(self, run_id: str) -> PendingRun | None:
        """Run ``run_id``'s row of the inbox: None unless it waits for decisions."""
        ...

    async def delete(self, run_id: str) -> bool:
        """Forget run ``run_id`` (its call records too); whether it was there."""
        ...

    def unknown(self, run_id: str) -> LangHooksError:
        """The error for a run that is not there (never saved, deleted, expired)."""
        ...
