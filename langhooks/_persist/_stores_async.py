"""The run-store protocol: where interrupted runs wait for people. The async module
is written by hand, and the sync one is generated from it by ``scripts/unasync.py``:
the same methods without ``async``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .._core._tools import Tool
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult
    from ..chain._chain import Handler
    from ..models import ChatModel
    from ._runs import PendingRun

__all__ = ["AsyncRunStore"]


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
