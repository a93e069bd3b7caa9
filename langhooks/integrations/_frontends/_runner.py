"""How the frontend apps run an agent's chain and reach their store.

A chain whose handlers or tools are async runs with ``arun()`` on the app's event
loop (a task: cancelling it cancels the run); any other chain runs with ``run()``
in a worker thread, as it always did, so a sync handler that blocks never holds
the loop. A ``RunStore`` is called in threads and an ``AsyncRunStore`` awaited; a
stored run is resumed with the chain's own driver: ``RunStore.resume`` (``run()``)
for a sync chain, ``AsyncRunStore.resume`` (``arun()``) for an async one. A
``MemoryRunStore`` serves both (``awaited_memory``); another sync store cannot
resume an async chain (it says so).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from ..._core._chain_callbacks import ChainCallbackHandler
from ..._persist._stores import MemoryRunStore, awaited_memory

if TYPE_CHECKING:
    from ..._core._result import RunResult
    from ..._persist._events import EventRecord, EventRecorder
    from ..._persist._pending import PendingRun
    from ..._persist._stores import AsyncRunStore, RunStore
    from ...chain import Decision, LLMChain
    from ...chain._chain import Handler

__all__ = ["Runs", "Work", "is_async", "runs_of"]


def is_async(chain: LLMChain) -> bool:
    """Whether ``chain`` needs ``arun()``: a handler is an
    ``AsyncChainCallbackHandler`` or a tool's function is a coroutine function."""
    return any(
        not isinstance(handler, ChainCallbackHandler) for handler in chain.callbacks
    ) or any(tool.is_async for tool in chain.tools)


def _unheard(record: EventRecord) -> None:
    """No one is told of the records."""


@attrs.frozen
class Work:
    """A run to start: ``run`` works it with a recorder among its handlers;
    ``on_loop`` says it is a task of the event loop (cancelling it cancels
    the run) rather than a wait for a worker thread (which cannot be
    cancelled); ``recorded`` is told of each record as it is made, in the
    thread that records it, before the event loop gets it."""

    run: Callable[[EventRecorder], Awaitable[None]]
    on_loop: bool
    recorded: Callable[[EventRecord], None] = _unheard


def _run(chain: LLMChain, recorder: EventRecorder, abandon: bool) -> RunResult:
    current = chain
    if abandon and chain.pending_tool_calls:
        settled = chain.abandon_tool_calls()
        if settled.error is not None:
            raise settled.error
        current = settled.chain
    return current.add_callback(recorder).run()


async def _arun(chain: LLMChain, recorder: EventRecorder, abandon: bool) -> RunResult:
    current = chain
    if abandon and chain.pending_tool_calls:
        settled = await chain.aabandon_tool_calls()
        if settled.error is not None:
            raise settled.error
        current = settled.chain
    return await current.add_callback(recorder).arun()


@final
class Runs:
    """An app's store, and the driver each of its chains runs with.

    Args:
        store: a ``RunStore`` or an ``AsyncRunStore``.
        run_async: True runs every chain with ``arun()``, False with ``run()``;
            None decides per chain (``is_async``).
        cancel_on_disconnect: whether a run on the loop is cancelled when the
            client of the request that started it goes away.
    """

    def __init__(
        self,
        store: RunStore | AsyncRunStore,
        run_async: bool | None,
        *,
        cancel_on_disconnect: bool = False,
    ) -> None:
        self._threaded: RunStore | None = None
        self._awaited: AsyncRunStore | None = None
        if inspect.iscoroutinefunction(store.resume):
            self._awaited = store  # type: ignore[assignment]  # told by resume
        else:
            self._threaded = store  # type: ignore[assignment]  # told by resume
            if isinstance(store, MemoryRunStore):
                self._awaited = awaited_memory(store)
        self._run_async: Final = run_async
        self.cancel_on_disconnect: Final = cancel_on_disconnect

    def on_loop(self, chain: LLMChain) -> bool:
        """Whether ``chain`` runs with ``arun()`` on the event loop."""
        return is_async(chain) if self._run_async is None else self._run_async

    async def pending(
        self, metadata: Mapping[str, Any], limit: int = 100
    ) -> list[PendingRun]:
        """The store's waiting runs whose metadata contains ``metadata``."""
        if self._threaded is not None:
            return await asyncio.to_thread(
                self._threaded.pending, metadata=metadata, limit=limit
            )
        assert self._awaited is not None  # one of the two is set
        return await self._awaited.pending(metadata=metadata, limit=limit)

    async def load(self, run_id: str, chain: LLMChain) -> LLMChain:
        """Stored run ``run_id`` with ``chain``'s model and tools.

        Raises:
            LangHooksError: "invalid_request" for a run the store does not have.
        """
        if self._threaded is not None:
            return await asyncio.to_thread(
                self._threaded.load, run_id, chain.model, tools=chain.tools
            )
        assert self._awaited is not None  # one of the two is set
        return await self._awaited.load(run_id, chain.model, tools=chain.tools)

    async def save(self, chain: LLMChain, metadata: Mapping[str, Any]) -> None:
        """Save interrupted ``chain`` with ``metadata``."""
        if self._threaded is not None:
            await asyncio.to_thread(self._threaded.save, chain, metadata=metadata)
        else:
            assert self._awaited is not None  # one of the two is set
            await self._awaited.save(chain, metadata=metadata)

    async def resume(
        self,
        chain: LLMChain,
        run_id: str,
        decisions: Mapping[str, Decision],
        *,
        recorder: EventRecorder | None = None,
        continue_run: bool = True,
    ) -> None:
        """Resume stored run ``run_id`` with ``decisions`` on ``chain``'s code
        (its handlers, and ``recorder``), with the chain's driver.

        Raises:
            LangHooksError: the store's refusal ("conflict": answered already).
            TypeError: an async chain and a sync store other than a
                ``MemoryRunStore``: it resumes with ``run()`` only.
        """
        callbacks: Sequence[Handler] = (
            chain.callbacks if recorder is None else (*chain.callbacks, recorder)
        )
        if not self._resumes_on_loop(chain):
            assert self._threaded is not None  # a sync store resumes in a thread
            await asyncio.to_thread(
                self._threaded.resume,
                run_id,
                decisions,
                chain.model,
                tools=chain.tools,
                callbacks=callbacks,
                fallbacks=chain.fallbacks,
                retry=chain.retry,
                continue_run=continue_run,
            )
            return
        if self._awaited is None:
            raise TypeError(
                f"an agent with async handlers or tools resumes its runs with "
                f"arun(): give the app an AsyncRunStore (AsyncRedisRunStore, "
                f"AsyncPostgresRunStore) or a MemoryRunStore, not "
                f"{self._threaded!r}"
            )
        await self._awaited.resume(
            run_id,
            decisions,
            chain.model,
            tools=chain.tools,
            callbacks=callbacks,
            fallbacks=chain.fallbacks,
            retry=chain.retry,
            continue_run=continue_run,
        )

    def fresh(
        self, chain: LLMChain, metadata: Mapping[str, Any], *, abandon: bool = False
    ) -> Work:
        """Run ``chain``; an interrupted run is saved with ``metadata``. With
        ``abandon``, calls of ``chain`` that wait for a human are first answered
        with ``ABANDONED`` (``abandon_tool_calls``: the agent's handlers see the
        rejections; the client sees the new run)."""
        on_loop = self.on_loop(chain)

        async def work(recorder: EventRecorder) -> None:
            if on_loop:
                result = await _arun(chain, recorder, abandon)
            else:
                result = await asyncio.to_thread(_run, chain, recorder, abandon)
            if result.status == "interrupted":
                await self.save(result.chain, metadata)

        return Work(work, on_loop)

    def resumed(
        self, chain: LLMChain, run_id: str, decisions: Mapping[str, Decision]
    ) -> Work:
        """Resume stored run ``run_id`` with ``decisions`` on ``chain``'s code."""

        async def work(recorder: EventRecorder) -> None:
            await self.resume(chain, run_id, decisions, recorder=recorder)

        return Work(work, self._resumes_on_loop(chain))

    def _resumes_on_loop(self, chain: LLMChain) -> bool:
        # An async store resumes with arun(), whatever the chain.
        return self._threaded is None or self.on_loop(chain)


def runs_of(
    store: RunStore | AsyncRunStore | None,
    run_async: bool | None,
    cancel_on_disconnect: bool,
) -> Runs:
    """An app's ``Runs`` (``store`` None: a ``MemoryRunStore``).

    Raises:
        TypeError: ``run_async`` is not a bool or None, or
            ``cancel_on_disconnect`` not a bool.
    """
    if run_async is not None and not isinstance(run_async, bool):
        raise TypeError(f"run_async must be a bool or None, got {run_async!r}")
    if not isinstance(cancel_on_disconnect, bool):
        raise TypeError(
            f"cancel_on_disconnect must be a bool, got {cancel_on_disconnect!r}"
        )
    given = MemoryRunStore() if store is None else store
    return Runs(given, run_async, cancel_on_disconnect=cancel_on_disconnect)
