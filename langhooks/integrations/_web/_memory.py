"""``MemoryBackend``: runs kept and driven in this process.

Each run is an ``arun()`` task on the server's event loop; its records go through an
``EventRecorder`` into a list per run, and readers wait on it. An interrupted run's
chain stays here until a person decides, or, given a ``RunStore``, is saved there and
resumed through it (once, with the agent's code). Stream ids are "1", "2", ... per
run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from ..._core._messages import LangHooksError
from .._auth import owner_metadata
from ._backend import (
    Agent,
    Entry,
    RunConflict,
    RunNotFound,
    RunState,
    RunSummary,
    Tasks,
    match_decisions,
    not_waiting,
)
from ._record import RecordSink

if TYPE_CHECKING:
    from ..._persist._stores import RunStore
    from ...chain import Decision, LLMChain, RunResult

__all__ = ["MemoryBackend"]

_log: Final = logging.getLogger("langhooks.integrations.web")


@attrs.define
class _Run:
    prompt: str
    sink: RecordSink
    owner: str | None = None
    state: RunState = "running"
    chain: LLMChain | None = None  # while interrupted
    created: float = attrs.field(factory=time.time)
    entries: list[Entry] = attrs.field(factory=list)
    end: int | None = None  # how many entries there are up to the one that ends it
    waiters: set[asyncio.Future[None]] = attrs.field(factory=set)


@final
class MemoryBackend:
    """Runs kept and driven in this process (for one server process).

    Args:
        store: where interrupted runs wait (None: with their chain, here).
    """

    def __init__(self, store: RunStore | None = None) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}
        self._tasks = Tasks()
        self._store = store

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise RunNotFound(run_id)
        return run

    # --- recording (called by RecordSink, from any thread) ---------------------------

    def create(
        self, run_id: str, prompt: str, sink: RecordSink, owner: str | None
    ) -> None:
        """Register a new run with an empty stream."""
        with self._lock:
            self._runs[run_id] = _Run(prompt=prompt, sink=sink, owner=owner)

    def append(self, run_id: str, event: str, data: str, *, ends: bool) -> str:
        """Add one record to a run's stream; waiting readers wake up.

        Raises:
            RunNotFound: no run has this id.
        """
        with self._lock:
            run = self._run(run_id)
            entry_id = str(len(run.entries) + 1)
            run.entries.append(Entry(id=entry_id, event=event, data=data, ends=ends))
            if ends and run.end is None:
                run.end = len(run.entries)
            waiters, run.waiters = run.waiters, set()
        for waiter in waiters:
            waiter.get_loop().call_soon_threadsafe(_wake, waiter)
        return entry_id

    # --- reading ---------------------------------------------------------------------

    def check_id(self, text: str) -> str:
        """``text`` when it is a stream id of this backend.

        Raises:
            ValueError: it is not a non-negative decimal number.
        """
        if not (text.isascii() and text.isdecimal()) or len(text) > 18:
            raise ValueError(f"not a stream id of this server: {text[:40]!r}")
        return text

    async def summary(self, run_id: str) -> RunSummary:
        """One run.

        Raises:
            RunNotFound: no run has this id.
        """
        with self._lock:
            return _summary(run_id, self._run(run_id))

    async def runs(self) -> list[RunSummary]:
        """Every run, newest first."""
        with self._lock:
            summaries = [_summary(run_id, run) for run_id, run in self._runs.items()]
        return sorted(summaries, key=lambda s: s.created, reverse=True)

    async def owner(self, run_id: str) -> str | None:
        """Who started the run (None: no one known, or no such run)."""
        with self._lock:
            run = self._runs.get(run_id)
            return None if run is None else run.owner

    async def read(self, run_id: str, after: str | None, timeout: float) -> list[Entry]:
        """The entries after ``after``, waiting up to ``timeout`` seconds for one.

        Raises:
            RunNotFound: no run has this id.
        """
        start = 0 if after is None else int(after)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            with self._lock:
                run = self._run(run_id)
                if len(run.entries) > start:
                    return run.entries[start:]
                waiter = loop.create_future()
                run.waiters.add(waiter)
            try:
                await asyncio.wait_for(waiter, deadline - loop.time())
            except TimeoutError:
                return []
            finally:
                with self._lock:
                    run.waiters.discard(waiter)

    async def ended(self, run_id: str, after: str | None) -> bool:
        """Whether the entry that ends the run is at or before ``after``.

        Raises:
            RunNotFound: no run has this id.
        """
        with self._lock:
            end = self._run(run_id).end
        return end is not None and after is not None and int(after) >= end

    # --- driving ---------------------------------------------------------------------

    async def start(self, chain: LLMChain, prompt: str, *, owner: str | None) -> str:
        """Run ``chain`` as a task of this loop; the run id once it has begun.

        Raises:
            Exception: whatever the run raised before its first event.
        """
        sink = RecordSink(self, prompt, owner)
        started: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        sink.on_first(started)
        marker, recorder = sink.handlers
        chain = chain.add_callback(marker).add_callback(recorder)
        self._tasks.spawn(self._drive(sink, chain.arun()))
        return await started

    async def resume(
        self,
        run_id: str,
        decisions: Sequence[tuple[str, Decision]],
        agent: Agent | None,
    ) -> None:
        """Resume an interrupted run with its kept chain (``agent`` is not needed).

        Raises:
            RunNotFound: no run has this id.
            RunConflict: the run is not waiting for decisions.
            DecisionMismatch: a decision names a call that is not waiting.
        """
        if self._store is not None:
            await self._resume_stored(self._store, run_id, decisions, agent)
            return
        with self._lock:
            run = self._run(run_id)
            chain = run.chain
            if run.state != "interrupted" or chain is None:
                raise RunConflict(not_waiting(run.state))
            calls, settled = match_decisions(chain.pending_tool_calls, decisions)
            run.chain, run.state = None, "resuming"
        self._tasks.spawn(self._drive(run.sink, _resumed(chain, calls, settled)))

    async def _resume_stored(
        self,
        store: RunStore,
        run_id: str,
        decisions: Sequence[tuple[str, Decision]],
        agent: Agent | None,
    ) -> None:
        """Resume through ``store`` with the agent's code, in a thread."""
        with self._lock:
            run = self._run(run_id)
            if run.state != "interrupted":
                raise RunConflict(not_waiting(run.state))
            if agent is None:  # pragma: no cover - an app without an agent runs none
                raise RunConflict("this app runs no agent, so it cannot resume runs")
            run.state = "resuming"
        template = agent(run.prompt)
        try:
            saved = await asyncio.to_thread(
                store.load, run_id, template.model, tools=template.tools
            )
            calls, settled = match_decisions(saved.pending_tool_calls, decisions)
        except BaseException as error:
            self._settle(run_id, "interrupted", None)
            if isinstance(error, LangHooksError):
                raise RunConflict(
                    f"the run's saved state cannot be resumed: {error.message}"
                ) from None
            raise
        chosen = {
            call.call_id: decision
            for call, decision in zip(calls, settled, strict=True)
        }
        work = asyncio.to_thread(
            store.resume,
            run_id,
            chosen,
            template.model,
            tools=template.tools,
            callbacks=[*template.callbacks, *run.sink.handlers],
            fallbacks=template.fallbacks,
            retry=template.retry,
        )
        self._tasks.spawn(self._drive(run.sink, work, stored=True))

    async def close(self) -> None:
        """Cancel the runs still going."""
        await self._tasks.cancel()

    async def _drive(
        self,
        sink: RecordSink,
        work: Coroutine[Any, Any, RunResult],
        *,
        stored: bool = False,
    ) -> None:
        """Await a run (or a resume and the run after it); keep how it ended
        (``stored``: the store's resume saved it already)."""
        try:
            result = await work
        except BaseException as exc:
            sink.failed(exc)
            if sink.run_id is not None:
                self._settle(sink.run_id, "error", None)
            if not isinstance(exc, Exception):
                raise
            _log.exception("langhooks web: run %s raised", sink.run_id)
            return
        assert sink.run_id is not None  # a run records on_run_start first
        interrupted = result.status == "interrupted"
        if self._store is None:
            self._settle(
                sink.run_id, result.status, result.chain if interrupted else None
            )
            return
        if not stored:
            # Saved however it ended, as a store's resume does: an interrupted run
            # waits there, a finished one is refused.
            try:
                await asyncio.to_thread(
                    self._store.save,
                    result.chain,
                    metadata=owner_metadata(sink.owner),
                )
            except Exception:
                _log.exception("langhooks web: run %s could not be saved", sink.run_id)
                self._settle(sink.run_id, "error", None)
                return
        self._settle(sink.run_id, result.status, None)

    def _settle(self, run_id: str, state: RunState, chain: LLMChain | None) -> None:
        with self._lock:
            run = self._runs[run_id]
            run.state, run.chain = state, chain


async def _resumed(
    chain: LLMChain, calls: Sequence[Any], decisions: Sequence[Decision]
) -> RunResult:
    result = await chain.aexecute_tool_calls_with_decisions(calls, decisions)
    if result.status == "ok":
        # The tools ran: the model gets their results and answers.
        result = await result.chain.arun()
    return result


def _wake(waiter: asyncio.Future[None]) -> None:
    # The reader may have stopped waiting (timed out, went away) in the meantime.
    with contextlib.suppress(asyncio.InvalidStateError):
        waiter.set_result(None)


def _summary(run_id: str, run: _Run) -> RunSummary:
    return RunSummary(
        run_id=run_id,
        prompt=run.prompt,
        state=run.state,
        created=run.created,
        owner=run.owner,
    )
