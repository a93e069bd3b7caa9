"""Run stores: ``MemoryRunStore``, and the names every store shares re-exported
(``RunStore``/``AsyncRunStore`` from ``_stores_sync``/``_stores_async``,
``PendingRun`` and the checks from ``_runs``).

A run store keeps interrupted runs (``chain.to_state()``) so a later request, in any
worker, can resume them with a person's decisions, once. Every store resumes through
the shared driver of ``_resume``: a claim that is a state change in the store, kept
alive by a heartbeat, and a record of every tool call started.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal, final

import attrs
from typing_extensions import override

from .._core._messages import LangHooksError, ToolCall
from ._pending import (
    CallKey,
    PendingRun,
    check_expires_in,
    check_limit,
    check_metadata,
    contains,
    run_id_of,
)
from ._resume import (
    Known,
    Saved,
    Write,
    check_claim_timeout,
)
from ._stores_async import AsyncRunStore, AsyncStoreBase
from ._stores_sync import RunStore, StoreBase

__all__ = [
    "AsyncRunStore",
    "CallKey",
    "MemoryRunStore",
    "PendingRun",
    "RunStore",
    "awaited_memory",
    "check_expires_in",
    "check_limit",
    "check_metadata",
    "check_run_store",
    "contains",
    "run_id_of",
]


# --- checks every store shares -------------------------------------------------------


def check_run_store(store: object, what: str) -> RunStore:
    """``store`` when it is a synchronous ``RunStore``.

    Raises:
        TypeError: it is not one (an async store included), naming ``what``.
    """
    if not isinstance(store, RunStore) or inspect.iscoroutinefunction(store.resume):
        raise TypeError(
            f"{what} must be a RunStore (a synchronous one: PostgresRunStore, "
            f"RedisRunStore, MemoryRunStore, ...), got {store!r}"
        )
    return store


def _unknown(run_id: str) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"no saved run {run_id!r} (never saved, deleted, or expired)",
    )


# --- in memory ---------------------------------------------------------------------

_Status = Literal["waiting", "claimed", "done"]


@attrs.frozen
class _Log:
    head: str
    messages: tuple[str, ...]
    version: str

    def saved(self) -> Saved:
        return Saved(self.head, ",".join(self.messages), self.version)


@attrs.define
class _Saved:
    log: _Log
    calls: tuple[ToolCall, ...]
    metadata: dict[str, Any]
    saved_at: datetime
    expires_at: float | None  # time.time()
    status: _Status
    token: str | None = None
    beat: float = 0.0  # time.monotonic() of the last heartbeat
    records: dict[str, str] = attrs.field(factory=dict)


@final
class MemoryRunStore(StoreBase):
    """A ``RunStore`` in this process's memory (the web apps' default store).

    Thread-safe; resumes once, as every store does (a second or concurrent resume
    raises "conflict" and runs nothing). Runs are lost when the process ends: use
    ``RedisRunStore`` or ``PostgresRunStore`` to resume in another process.

    Args:
        claim_timeout: seconds without a heartbeat after which a resume's claim
            may be taken over (a worker in this process stops only with it, so
            this matters only when a resume's thread is stuck).
    """

    def __init__(self, *, claim_timeout: float = 60.0) -> None:
        self._claim_timeout = check_claim_timeout(claim_timeout)
        self._known = Known()
        self._storage: Final = _MemoryBackend(self._claim_timeout)

    @override
    def _backend(self) -> _MemoryBackend:
        return self._storage


def _row(run_id: str, saved: _Saved) -> PendingRun:
    expires_at = saved.expires_at
    return PendingRun(
        run_id=run_id,
        calls=saved.calls,
        saved_at=saved.saved_at,
        expires_at=None
        if expires_at is None
        else datetime.fromtimestamp(expires_at, UTC),
        metadata=saved.metadata,
    )


@final
class _MemoryBackend:
    """The storage of ``MemoryRunStore`` (its ``ClaimBackend``): a dict, under a
    lock."""

    def __init__(self, claim_timeout: float) -> None:
        self._claim_timeout: Final = claim_timeout
        self._lock: Final = threading.Lock()
        self._runs: Final[dict[str, _Saved]] = {}

    def _live(self, run_id: str) -> _Saved | None:
        # Called with the lock held; forgets an expired run.
        saved = self._runs.get(run_id)
        if (
            saved is not None
            and saved.expires_at is not None
            and saved.expires_at <= time.time()
        ):
            del self._runs[run_id]
            return None
        return saved

    def _held(self, run_id: str, token: str) -> _Saved:
        saved = self._live(run_id)
        if saved is None or saved.status != "claimed" or saved.token != token:
            raise LangHooksError(
                "conflict",
                f"the claim on run {run_id!r} was taken over by another resume",
            )
        return saved

    def unknown(self, run_id: str) -> LangHooksError:
        return _unknown(run_id)

    def write(
        self, write: Write, metadata: Mapping[str, Any], expires_in: float | None
    ) -> bool:
        with self._lock:
            log = self._log(self._live(write.run_id), write)
            if log is None:
                return False
            self._runs[write.run_id] = _Saved(
                log=log,
                calls=write.calls,
                metadata=dict(metadata),
                saved_at=datetime.now(UTC),
                expires_at=None if expires_in is None else time.time() + expires_in,
                status=write.status,
            )
            return True

    @staticmethod
    def _log(saved: _Saved | None, write: Write) -> _Log | None:
        # The log ``write`` makes of ``saved``'s, or None when its base is gone.
        if write.base is None:
            return _Log(write.head, write.messages, write.version)
        if saved is None or saved.log.version != write.base:
            return None
        kept = saved.log.messages[: write.keep]
        return _Log(write.head, kept + write.messages, write.version)

    def read(self, run_id: str) -> Saved | None:
        with self._lock:
            saved = self._live(run_id)
            return None if saved is None else saved.log.saved()

    def claim(self, run_id: str, token: str) -> Saved:
        with self._lock:
            saved = self._live(run_id)
            if saved is None:
                raise _unknown(run_id)
            now = time.monotonic()
            stale = now - saved.beat >= self._claim_timeout
            if saved.status == "done":
                raise LangHooksError(
                    "conflict",
                    f"run {run_id!r} waits for no decision (it was resumed "
                    f"already); nothing was run",
                )
            if saved.status == "claimed" and not stale:
                raise LangHooksError(
                    "conflict",
                    f"run {run_id!r} is being resumed by another request; nothing "
                    f"was run",
                )
            saved.status, saved.token, saved.beat = "claimed", token, now
            return saved.log.saved()

    def heartbeat(self, run_id: str, token: str) -> bool:
        with self._lock:
            saved = self._live(run_id)
            if saved is None or saved.status != "claimed" or saved.token != token:
                return False
            saved.beat = time.monotonic()
            return True

    def start_call(self, run_id: str, token: str, call: CallKey) -> str | None:
        # (Records in memory never outlive this release: none by id alone.)
        with self._lock:
            saved = self._held(run_id, token)
            if call.text in saved.records:
                return saved.records[call.text]
            saved.records[call.text] = ""
            return None

    def finish_call(self, run_id: str, token: str, call: CallKey, outcome: str) -> None:
        with self._lock:
            self._held(run_id, token).records[call.text] = outcome

    def settle(self, run_id: str, token: str, write: Write) -> None:
        with self._lock:
            saved = self._held(run_id, token)
            kept = saved.log.messages[: write.keep]
            saved.log = _Log(write.head, kept + write.messages, write.version)
            saved.calls, saved.status = write.calls, write.status
            saved.token, saved.records = None, {}
            saved.saved_at = datetime.now(UTC)

    def release(self, run_id: str, token: str) -> None:
        with self._lock:
            saved = self._live(run_id)
            if saved is not None and saved.status == "claimed" and saved.token == token:
                saved.status, saved.token = "waiting", None

    def pending(self, wanted: Mapping[str, Any], limit: int) -> list[PendingRun]:
        with self._lock:
            rows = [
                (run_id, saved)
                for run_id in list(self._runs)
                if (saved := self._live(run_id)) is not None
                and saved.status == "waiting"
                and contains(saved.metadata, wanted)
            ]
        rows.sort(key=lambda row: row[1].saved_at, reverse=True)
        return [_row(run_id, saved) for run_id, saved in rows[:limit]]

    def waiting(self, run_id: str) -> PendingRun | None:
        with self._lock:
            saved = self._live(run_id)
        if saved is None or saved.status != "waiting":
            return None
        return _row(run_id, saved)

    def delete(self, run_id: str) -> bool:
        with self._lock:
            return self._live(run_id) is not None and bool(self._runs.pop(run_id))


# --- the same memory, awaited ------------------------------------------------------


@final
class _AwaitedMemory:
    """A ``_MemoryBackend`` as an ``AsyncClaimBackend``: each operation is a dict
    update under a lock held for no longer, so it is done on the event loop."""

    def __init__(self, backend: _MemoryBackend) -> None:
        self._backend: Final = backend

    def unknown(self, run_id: str) -> LangHooksError:
        return _unknown(run_id)

    async def write(
        self, write: Write, metadata: Mapping[str, Any], expires_in: float | None
    ) -> bool:
        return self._backend.write(write, metadata, expires_in)

    async def read(self, run_id: str) -> Saved | None:
        return self._backend.read(run_id)

    async def claim(self, run_id: str, token: str) -> Saved:
        return self._backend.claim(run_id, token)

    async def heartbeat(self, run_id: str, token: str) -> bool:
        return self._backend.heartbeat(run_id, token)

    async def start_call(self, run_id: str, token: str, call: CallKey) -> str | None:
        return self._backend.start_call(run_id, token, call)

    async def finish_call(
        self, run_id: str, token: str, call: CallKey, outcome: str
    ) -> None:
        self._backend.finish_call(run_id, token, call, outcome)

    async def settle(self, run_id: str, token: str, write: Write) -> None:
        self._backend.settle(run_id, token, write)

    async def release(self, run_id: str, token: str) -> None:
        self._backend.release(run_id, token)

    async def pending(self, wanted: Mapping[str, Any], limit: int) -> list[PendingRun]:
        return self._backend.pending(wanted, limit)

    async def waiting(self, run_id: str) -> PendingRun | None:
        return self._backend.waiting(run_id)

    async def delete(self, run_id: str) -> bool:
        return self._backend.delete(run_id)


@final
class _AwaitedMemoryStore(AsyncStoreBase):
    """A ``MemoryRunStore``'s runs through the async store: resumed with
    ``arun()`` on the caller's event loop."""

    def __init__(self, store: MemoryRunStore) -> None:
        self._claim_timeout = store._claim_timeout
        self._known = store._known
        self._storage: Final = _AwaitedMemory(store._storage)

    @override
    def _backend(self) -> _AwaitedMemory:
        return self._storage


def awaited_memory(store: MemoryRunStore) -> AsyncRunStore:
    """``store`` as an ``AsyncRunStore`` over the same runs (a run saved through
    one is resumed once through either): for an app that runs async agents on
    its event loop and keeps their runs in memory."""
    return _AwaitedMemoryStore(store)
