"""What the web app needs from where runs live: ``Backend``, and the values it uses.

``MemoryBackend`` (``_web_memory``) keeps runs in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar, final

import attrs

if TYPE_CHECKING:
    from ..._core._messages import ToolCall
    from ...chain import Decision, LLMChain

__all__ = [
    "Agent",
    "Backend",
    "DecisionMismatch",
    "Entry",
    "RunConflict",
    "RunNotFound",
    "RunState",
    "RunSummary",
    "Tasks",
    "match_decisions",
    "not_waiting",
]

_T = TypeVar("_T")

Agent = Callable[[str], "LLMChain"]
"""Builds the chain that answers a prompt: model, tools, handlers, messages."""

RunState = Literal["running", "interrupted", "resuming", "ok", "error", "unreadable"]
# "unreadable": the run's stream ends with an entry this version cannot decode (a
# newer schema, a foreign writer); it is listed, and its raw records still stream.
# States a run reaches for good: its stream has ended.
_FINAL: Final = frozenset({"ok", "error"})


class RunNotFound(LookupError):
    """No run has this id."""


class RunConflict(Exception):
    """The run is not waiting for decisions (running, being resumed, or finished)."""


class DecisionMismatch(ValueError):
    """Decisions that name a call the run does not wait for, or one call twice."""


@final
@attrs.frozen(kw_only=True)
class Entry:
    """One event of a run's stream.

    Attributes:
        id: the stream id (what a Server-Sent Event carries as ``id:``).
        event: the handler method name.
        data: the record, encoded with ``langhooks.codec``, as JSON text.
        ends: this record ends the run for good.
        hidden: not sent (not a record, or a repeat of one); it only moves the
            reader past it.
    """

    id: str
    event: str
    data: str
    ends: bool = False
    hidden: bool = False


@final
@attrs.frozen(kw_only=True)
class RunSummary:
    """What the page lists about a run."""

    run_id: str
    prompt: str
    state: RunState
    created: float
    owner: str | None = None  # who started it (``owner_only``); never listed


class Backend(Protocol):
    """Where runs live: their event streams, and the runs waiting for a human."""

    def check_id(self, text: str) -> str:
        """``text`` as a stream id of this backend; ValueError when it is not one."""

    async def summary(self, run_id: str) -> RunSummary:
        """One run (RunNotFound when there is none)."""

    async def runs(self) -> list[RunSummary]:
        """Every run, newest first."""

    async def owner(self, run_id: str) -> str | None:
        """Who started the run (None: no one known, or no such run)."""

    async def read(self, run_id: str, after: str | None, timeout: float) -> list[Entry]:
        """The entries after stream id ``after`` (None: from the first), waiting up
        to ``timeout`` seconds for one; empty when none came."""

    async def ended(self, run_id: str, after: str | None) -> bool:
        """Whether the entry that ends the run is at or before ``after``."""

    async def start(self, chain: LLMChain, prompt: str, *, owner: str | None) -> str:
        """Run ``chain`` in the background, recording its events, as started by
        ``owner``; returns the run id once the run has begun."""

    async def resume(
        self,
        run_id: str,
        decisions: Sequence[tuple[str, Decision]],
        agent: Agent | None,
    ) -> None:
        """Resume an interrupted run with decisions by tool call id, in the
        background; returns once they are accepted. Raises RunNotFound,
        RunConflict (not waiting, or being resumed) or DecisionMismatch."""

    async def close(self) -> None:
        """Stop the runs still going (the server is stopping)."""


def match_decisions(
    waiting: Sequence[ToolCall], decisions: Sequence[tuple[str, Decision]]
) -> tuple[list[ToolCall], list[Decision]]:
    """The waiting calls the decisions settle, in the decisions' order.

    Raises:
        DecisionMismatch: a call that is not waiting, or one given twice.
    """
    by_id = {call.call_id: call for call in waiting}
    calls: list[ToolCall] = []
    for call_id, _ in decisions:
        if call_id not in by_id:
            raise DecisionMismatch(
                f"tool call {call_id!r} is not waiting for a decision; waiting: "
                f"{', '.join(sorted(by_id)) or 'none'}"
            )
        if any(call.call_id == call_id for call in calls):
            raise DecisionMismatch(f"tool call {call_id!r} is given more than once")
        calls.append(by_id[call_id])
    return calls, [decision for _, decision in decisions]


def not_waiting(state: RunState) -> str:
    """Why a run in ``state`` takes no decision."""
    if state == "resuming":
        return "the run is already being resumed: decisions are accepted once"
    if state in _FINAL:
        return f"the run has finished ({state}): it waits for no decision"
    return "the run is still running: it waits for no decision yet"


@final
class Tasks:
    """A backend's background tasks: referenced until they are done, cancelled
    (and awaited) when the server stops."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Future[Any]] = set()

    def spawn(self, work: Awaitable[_T]) -> asyncio.Future[_T]:
        """Run ``work`` as a task of the running loop."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def cancel(self) -> None:
        """Cancel every task still going and wait until each has stopped."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
