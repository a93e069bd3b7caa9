"""The run-store protocol: where interrupted runs wait for people; and
``AsyncStoreBase``, the store every langhooks store is above its backend (the
storage-only contract of ``_claims``). The async module is written by hand, and the
sync one is generated from it by ``scripts/unasync.py``: the same methods without
``async``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._claims_async import AsyncClaimBackend
from ._log import Known
from ._resume import ResumeCode, aresume_once, asave_run, loaded
from ._runs import check_limit, check_metadata

if TYPE_CHECKING:
    from .._core._tools import Tool
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult
    from ..chain._chain import Handler
    from ..models import ChatModel
    from ._runs import PendingRun

__all__ = ["AsyncRunStore", "AsyncStoreBase"]


@runtime_checkable
class AsyncRunStore(Protocol):
    """Where interrupted runs wait for people, and are resumed once.

    ``AsyncRedisRunStore`` and ``AsyncPostgresRunStore`` satisfy it: the
    async twin of ``RunStore``, the same methods, awaited.
    """

    async def save(
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
            expires_in: seconds until the store forgets the run (None: the
                store's default).

        Returns:
            The run id (``chain.invocation.id``).
        """
        ...

    async def load(
        self,
        run_id: str,
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
    ) -> LLMChain:
        """The saved chain of run ``run_id``, with this worker's code."""
        ...

    async def resume(
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
        """Resume a waiting run with people's decisions, once."""
        ...

    async def pending(
        self, *, metadata: Mapping[str, Any] | None = None, limit: int = 100
    ) -> list[PendingRun]:
        """The runs waiting for decisions, newest first (the approval inbox)."""
        ...

    async def delete(self, run_id: str) -> bool:
        """Forget run ``run_id``; whether it was there."""
        ...


class AsyncStoreBase:
    """A run store above its backend: save, load, resume once, the inbox and
    delete, written once for every backend (in memory, Redis, PostgreSQL).

    A store class sets ``_known`` (a ``Known``) and ``_claim_timeout`` and
    implements ``_backend()``: the storage primitives (``AsyncClaimBackend``)
    for one operation.
    """

    _known: Known
    _claim_timeout: float

    def _backend(self) -> AsyncClaimBackend:
        """The backend one operation runs on."""
        raise NotImplementedError  # pragma: no cover - every store implements it

    async def save(
        self,
        chain: LLMChain,
        *,
        metadata: Mapping[str, Any] | None = None,
        expires_in: float | None = None,
    ) -> str:
        """Save ``chain``'s state under its run id (replacing an earlier save).

        The store writes what changed since the version of the run it last
        wrote or read (the new messages, and the small rest of the state),
        or the whole state when it knows none or the run changed elsewhere.

        Args:
            chain: the chain of a ``RunResult`` (``result.chain``).
            metadata: JSON values to find the run by (``pending(metadata=...)``).
            expires_in: seconds until the run is forgotten (None: the store's
                default: never, or ``RedisRunStore``'s ``expire_after``).

        Returns:
            The run id (``chain.invocation.id``).

        Raises:
            TypeError: not an ``LLMChain``, metadata that is not JSON, or a state
                holding a value that cannot be encoded.
            ValueError: the chain has not run (it has no run id), or a bad
                ``expires_in``.
        """
        return await asave_run(
            self._backend(), self._known, chain, metadata, expires_in
        )

    async def load(
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
        backend = self._backend()
        saved = await backend.read(run_id)
        if saved is None:
            raise backend.unknown(run_id)
        return loaded(
            self._known,
            run_id,
            saved,
            model,
            tools=tools,
            callbacks=callbacks,
            fallbacks=fallbacks,
            retry=retry,
        )

    async def resume(
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
        raises "conflict". A heartbeat renews the claim while this worker lives;
        each tool call is recorded before it runs and its outcome when it
        returns, so a call never runs twice, even when a resume takes over a
        run whose worker died (no heartbeat for ``claim_timeout`` seconds): a
        call that had started gets an error result saying its worker stopped.
        After the decisions the run goes on to the model's answer
        (``continue_run``) and the state it ends in is saved under the same run
        id (waiting again, or done). Code (model, tools, callbacks) is never
        stored.

        Args:
            run_id: the run to resume.
            decisions: one ``Decision`` per waiting call, in the order of
                ``chain.pending_tool_calls``, or a mapping from tool call id to
                ``Decision`` (for some of the waiting calls).
            model: the model the run continues on; ``tools``, ``callbacks``,
                ``fallbacks`` and ``retry`` as ``LLMChain.from_state``.
            continue_run: after the decisions, ``arun()`` on to the model's
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
        return await aresume_once(
            self._backend(),
            self._known,
            run_id,
            decisions,
            code,
            claim_timeout=self._claim_timeout,
        )

    async def pending(
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
        return await self._backend().pending(wanted, limit)

    async def waiting(self, run_id: str) -> PendingRun | None:
        """Run ``run_id``'s row of the inbox: None unless it waits for decisions
        (unknown, expired, being resumed or done)."""
        return await self._backend().waiting(run_id)

    async def delete(self, run_id: str) -> bool:
        """Forget run ``run_id`` (and its call records); whether it was there."""
        self._known.forget(run_id)
        return await self._backend().delete(run_id)
