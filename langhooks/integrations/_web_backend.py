"""Where the web app keeps runs: their event streams and the state of interrupted runs.

``Backend`` is what the app needs from a store; ``MemoryBackend`` keeps everything in
this process (for ``langhooks serve`` and for an app that runs its own agent).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import TYPE_CHECKING, Final, Literal, Protocol, final

import attrs

if TYPE_CHECKING:
    from ..chain import LLMChain

__all__ = [
    "Backend",
    "Entry",
    "MemoryBackend",
    "RunConflict",
    "RunNotFound",
    "RunState",
    "RunSummary",
]

RunState = Literal["running", "interrupted", "resuming", "ok", "error"]
# States a run reaches for good: its stream has ended.
_FINAL: Final = frozenset({"ok", "error"})


class RunNotFound(LookupError):
    """No run has this id."""


class RunConflict(Exception):
    """The run is not waiting for decisions (running, being resumed, or finished)."""


@final
@attrs.frozen(kw_only=True)
class Entry:
    """One event of a run's stream.

    Attributes:
        id: the stream id (what a Server-Sent Event carries as ``id:``).
        event: the handler method name.
        data: the record, encoded with ``langhooks.codec``, as JSON text.
        ends: this record ends the run for good.
    """

    id: str
    event: str
    data: str
    ends: bool = False


@final
@attrs.frozen(kw_only=True)
class RunSummary:
    """What the page lists about a run."""

    run_id: str
    prompt: str
    state: RunState
    created: float


class Backend(Protocol):
    """A store of run streams and interrupted runs, shared by the app's requests."""

    def append(self, run_id: str, event: str, data: str, *, ends: bool) -> str:
        """Add one record to a run's stream (any thread); returns its stream id."""

    async def read(self, run_id: str, after: str | None, timeout: float) -> list[Entry]:
        """The entries after stream id ``after`` (None: from the first), waiting up
        to ``timeout`` seconds for one; empty when none came."""

    def check_id(self, text: str) -> str:
        """``text`` as a stream id of this backend; ValueError when it is not one."""

    def ended(self, run_id: str, after: str | None) -> bool:
        """Whether the entry that ends the run is at or before ``after``."""

    def runs(self) -> list[RunSummary]:
        """Every run, newest first."""

    def summary(self, run_id: str) -> RunSummary:
        """One run (RunNotFound when there is none)."""

    def claim(self, run_id: str) -> LLMChain:
        """Take an interrupted run's chain to resume it; the run is "resuming" until
        ``settle``. Raises RunNotFound, or RunConflict when the run is not
        interrupted (running, being resumed, finished)."""

    def settle(self, run_id: str, state: RunState, chain: LLMChain | None) -> None:
        """Record how a run (or a resume) ended; ``chain`` for "interrupted"."""


@attrs.define
class _Run:
    prompt: str
    state: RunState = "running"
    chain: LLMChain | None = None
    created: float = attrs.field(factory=time.time)
    entries: list[Entry] = attrs.field(factory=list)
    end: int | None = None  # position of the entry that ends the run
    waiters: set[asyncio.Future[None]] = attrs.field(factory=set)


@final
class MemoryBackend:
    """Runs kept in this process: stream ids are "1", "2", ... per run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}

    def create(self, run_id: str, prompt: str) -> None:
        """Register a new run with an empty stream."""
        with self._lock:
            self._runs[run_id] = _Run(prompt=prompt)

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise RunNotFound(run_id)
        return run

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

    def check_id(self, text: str) -> str:
        """``text`` when it is a stream id of this backend.

        Raises:
            ValueError: it is not a non-negative decimal number.
        """
        if not (text.isascii() and text.isdecimal()) or len(text) > 18:
            raise ValueError(f"not a stream id of this server: {text[:40]!r}")
        return text

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

    def ended(self, run_id: str, after: str | None) -> bool:
        """Whether the run's last entry is at or before ``after``.

        Raises:
            RunNotFound: no run has this id.
        """
        with self._lock:
            end = self._run(run_id).end
        return end is not None and after is not None and int(after) >= end

    def runs(self) -> list[RunSummary]:
        """Every run, newest first."""
        with self._lock:
            items = list(self._runs.items())
        summaries = [_summary(run_id, run) for run_id, run in items]
        return sorted(summaries, key=lambda s: s.created, reverse=True)

    def summary(self, run_id: str) -> RunSummary:
        """One run.

        Raises:
            RunNotFound: no run has this id.
        """
        with self._lock:
            return _summary(run_id, self._run(run_id))

    def claim(self, run_id: str) -> LLMChain:
        """Take an interrupted run's chain; the run is "resuming" until ``settle``.

        Raises:
            RunNotFound: no run has this id.
            RunConflict: the run is not waiting for decisions.
        """
        with self._lock:
            run = self._run(run_id)
            if run.state != "interrupted" or run.chain is None:
                raise RunConflict(_not_waiting(run.state))
            chain, run.chain, run.state = run.chain, None, "resuming"
        return chain

    def settle(self, run_id: str, state: RunState, chain: LLMChain | None) -> None:
        """Record how a run or a resume ended; keep ``chain`` when "interrupted".

        Raises:
            RunNotFound: no run has this id.
        """
        with self._lock:
            run = self._run(run_id)
            run.state = state
            run.chain = chain if state == "interrupted" else None


def _wake(waiter: asyncio.Future[None]) -> None:
    # The reader may have stopped waiting (timed out, went away) in the meantime.
    with contextlib.suppress(asyncio.InvalidStateError):
        waiter.set_result(None)


def _summary(run_id: str, run: _Run) -> RunSummary:
    return RunSummary(
        run_id=run_id, prompt=run.prompt, state=run.state, created=run.created
    )


def _not_waiting(state: RunState) -> str:
    if state == "resuming":
        return "the run is already being resumed: decisions are accepted once"
    if state in _FINAL:
        return f"the run has finished ({state}): it waits for no decision"
    return "the run is still running: it waits for no decision yet"
