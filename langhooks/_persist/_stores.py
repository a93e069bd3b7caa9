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
import json
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, final

import attrs

from .._core._messages import LangHooksError, ToolCall
from ._resume import ResumeCode, check_claim_timeout, resume_once
from ._runs import (
    CallKey,
    PendingRun,
    check_expires_in,
    check_limit,
    check_metadata,
    contains,
    run_id_of,
)
from ._stores_async import AsyncRunStore
from ._stores_sync import RunStore

if TYPE_CHECKING:
    from .._core._tools import Tool
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult
    from ..chain._chain import Handler
    from ..models import ChatModel

__all__ = [
    "AsyncRunStore",
    "CallKey",
    "MemoryRunStore",
    "PendingRun",
    "RunStore",
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


@attrs.define
class _Saved:
    state: str
    calls: tuple[ToolCall, ...]
    metadata: dict[str, Any]
    saved_at: datetime
    expires_at: float | None  # time.time()
    status: _Status
    token: str | None = None
    beat: float = 0.0  # time.monotonic() of the last heartbeat
    records: dict[str, str] = attrs.field(factory=dict)


@final
class MemoryRunStore:
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
        self._claim_timeout: Final = check_claim_timeout(claim_timeout)
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

    def save(
        self,
        chain: LLMChain,
        *,
        metadata: Mapping[str, Any] | None = None,
        expires_in: float | None = None,
    ) -> str:
        """Save ``chain``'s state under its run id (replacing an earlier save).

        Args:
            chain: the chain of a ``RunResult`` (``result.chain``).
            metadata: JSON values to find the run by (``pending(metadata=...)``).
            expires_in: seconds until the run is forgotten (None: never).

        Returns:
            The run id (``chain.invocation.id``).

        Raises:
            TypeError: not an ``LLMChain``, metadata that is not JSON, or a state
                holding a value that cannot be encoded.
            ValueError: the chain has not run, or a bad ``expires_in``.
        """
        run_id = run_id_of(chain)
        data = check_metadata(metadata)
        seconds = check_expires_in(expires_in)
        state = json.dumps(chain.to_state(), separators=(",", ":"))
        calls = chain.pending_tool_calls
        saved = _Saved(
            state=state,
            calls=calls,
            metadata=data,
            saved_at=datetime.now(UTC),
            expires_at=None if seconds is None else time.time() + seconds,
            status="waiting" if calls else "done",
        )
        with self._lock:
            self._runs[run_id] = saved
        return run_id

    def load(
        self,
        run_id: str,
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
    ) -> LLMChain:
        """The saved chain of run ``run_id`` (its latest state), with this
        worker's code.

        Raises:
            LangHooksError: "invalid_request" for an unknown, deleted or expired
                run.
        """
        from ..chain import LLMChain

        with self._lock:
            saved = self._live(run_id)
            if saved is None:
                raise _unknown(run_id)
            state = saved.state
        return LLMChain.from_state(
            json.loads(state),
            model,
            tools=tools,
            callbacks=callbacks,
            fallbacks=fallbacks,
            retry=retry,
        )

    def resume(
        self,
        run_id: str,
        decisions: Sequence[Decision] | Mapping[str, Decision],
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
        continue_run: bool = True,
    ) -> RunResult:
        """Resume a waiting run with people's decisions, once.

        The run is claimed first: a second or concurrent resume runs nothing and
        raises "conflict". Each tool call is recorded before it runs and its
        outcome when it returns, so a call never runs twice. After the
        decisions the run goes on to the model's answer (``continue_run``) and
        the state it ends in is saved under the same run id.

        Args:
            run_id: the run to resume.
            decisions: one ``Decision`` per waiting call, in the order of
                ``chain.pending_tool_calls``, or a mapping from tool call id to
                ``Decision`` (for some of the waiting calls).
            model: the model the run continues on; ``tools``, ``callbacks``,
                ``fallbacks`` and ``retry`` as ``LLMChain.from_state``.
            continue_run: after the decisions, ``run()`` on to the model's
                answer (when they did not end the run).

        Returns:
            The ``RunResult`` the run ended with here.

        Raises:
            LangHooksError: "conflict" when the run is being resumed or waits for
                no decision; "invalid_request" for an unknown, deleted or
                expired run.
            ValueError: the decisions do not match the waiting calls (the run
                waits again, unchanged).
        """
        code = ResumeCode(
            model=model,
            tools=tools,
            callbacks=callbacks,
            fallbacks=fallbacks,
            retry=retry,
            continue_run=continue_run,
        )
        return resume_once(
            _MemoryClaims(self),
            run_id,
            decisions,
            code,
            claim_timeout=self._claim_timeout,
        )

    def pending(
        self, *, metadata: Mapping[str, Any] | None = None, limit: int = 100
    ) -> list[PendingRun]:
        """The runs waiting for decisions, newest first (the approval inbox).

        Args:
            metadata: keep only runs whose metadata contains this (as JSONB
                ``@>``: ``{"tenant": "a"}`` matches ``{"tenant": "a", "user":
                "b"}``).
            limit: at most this many runs.

        Raises:
            TypeError: bad ``metadata`` or ``limit``.
            ValueError: ``limit`` < 1.
        """
        wanted = check_metadata(metadata)
        check_limit(limit)
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
        """Run ``run_id``'s row of the inbox: None unless it waits for decisions."""
        with self._lock:
            saved = self._live(run_id)
        if saved is None or saved.status != "waiting":
            return None
        return _row(run_id, saved)

    def delete(self, run_id: str) -> bool:
        """Forget run ``run_id``; whether it was there (and not expired)."""
        with self._lock:
            return self._live(run_id) is not None and bool(self._runs.pop(run_id))


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
class _MemoryClaims:
    """The claim primitives of ``MemoryRunStore``, under its lock."""

    def __init__(self, store: MemoryRunStore) -> None:
        self._store: Final = store

    def _held(self, run_id: str, token: str) -> _Saved:
        saved = self._store._live(run_id)  # the store's own helper
        if saved is None or saved.status != "claimed" or saved.token != token:
            raise LangHooksError(
                "conflict",
                f"the claim on run {run_id!r} was taken over by another resume",
            )
        return saved

    def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        store = self._store
        with store._lock:
            saved = store._live(run_id)
            if saved is None:
                raise _unknown(run_id)
            now = time.monotonic()
            stale = now - saved.beat >= store._claim_timeout
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
            state: dict[str, Any] = json.loads(saved.state)
            return state

    def heartbeat(self, run_id: str, token: str) -> bool:
        store = self._store
        with store._lock:
            saved = store._live(run_id)
            if saved is None or saved.status != "claimed" or saved.token != token:
                return False
            saved.beat = time.monotonic()
            return True

    def start_call(self, run_id: str, token: str, call: CallKey) -> str | None:
        # (Records in memory never outlive this release: none by id alone.)
        with self._store._lock:
            saved = self._held(run_id, token)
            if call.text in saved.records:
                return saved.records[call.text]
            saved.records[call.text] = ""
            return None

    def finish_call(self, run_id: str, token: str, call: CallKey, outcome: str) -> None:
        with self._store._lock:
            self._held(run_id, token).records[call.text] = outcome

    def settle(
        self,
        run_id: str,
        token: str,
        state: Mapping[str, Any],
        waiting: Sequence[ToolCall],
    ) -> None:
        text = json.dumps(state, separators=(",", ":"))
        with self._store._lock:
            saved = self._held(run_id, token)
            saved.state, saved.calls = text, tuple(waiting)
            saved.status = "waiting" if waiting else "done"
            saved.token, saved.records = None, {}
            saved.saved_at = datetime.now(UTC)

    def release(self, run_id: str, token: str) -> None:
        with self._store._lock:
            saved = self._store._live(run_id)
            if saved is not None and saved.status == "claimed" and saved.token == token:
                saved.status, saved.token = "waiting", None
