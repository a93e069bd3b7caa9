"""What the AG-UI and UI-message apps share: a live run translated as it records.

A request's run (a new one, or a stored one resumed) works in a worker thread, or
as a task of the event loop (``_runner``), with an ``EventRecorder`` whose records
come back to the event loop; the protocol's translator turns each into events as
it arrives, so a live run is translated by exactly the code that translates a
recorded one. The events that end a request are held until the run has returned:
by then an interrupted run is in the store, so a client that answers at once
finds it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..._core._messages import LangHooksError, Message, ToolResult
from ..._persist._events import EventRecord, EventRecorder
from ...chain import Decision, LLMChain
from ...chain._chain import ABANDONED
from .._auth import (
    Action,
    Authorize,
    Guard,
    metadata_owner,
    owner_metadata,
    started_by,
)
from ._client_tools import with_stored_tools
from ._runner import Runs, Work

if TYPE_CHECKING:
    from ..._persist._pending import PendingRun

__all__ = [
    "Agent",
    "Answers",
    "LiveRun",
    "Translation",
    "Work",
    "abandon_waiting",
    "allowed",
    "build_chain",
    "close_unanswered",
    "error",
    "known",
    "moves_on",
    "settle_stored",
    "stream_events",
    "waiting_thread",
]

_log: Final = logging.getLogger("langhooks.integrations.frontends")

Agent = Callable[[Sequence[Message]], LLMChain]
"""Builds the chain for a conversation so far: model, tools, handlers, messages."""


def error(status: int, message: str) -> JSONResponse:
    """A refusal: ``{"error": message}`` with ``status``."""
    return JSONResponse({"error": message}, status_code=status)


async def allowed(
    authorize: Authorize | None,
    request: Request,
    action: Action,
    run_id: str | None,
    runs: Runs,
    where: Mapping[str, Any],
) -> Response | None:
    """What an app's ``Guard`` answers ``request`` asking ``action`` on run
    ``run_id`` (None: go on). The run's owner, when ``authorize`` asks, is read
    from the metadata of the run waiting in ``runs``' store among those matching
    ``where`` (the thread or chat the request names)."""

    async def owner_of(run: str) -> str | None:
        rows = await runs.pending(where)
        row = next((row for row in rows if row.run_id == run), None)
        return None if row is None else metadata_owner(row.metadata)

    return await Guard(authorize, owner_of).check(request, action, run_id)


async def waiting_thread(
    authorize: Authorize | None,
    request: Request,
    runs: Runs,
    agent: Agent,
    where: Mapping[str, Any],
) -> tuple[PendingRun, list[Message]] | Response:
    """The run waiting in ``runs``' store on the thread (or chat) ``where`` names, as
    the read route answers it: its row and conversation, once ``authorize``
    allowed "read" of the thread (run id None, as "start" is asked: the thread
    is the user's own, another user's run under the same id is not found);
    else the answer that refuses (404: nothing waits). The run is loaded with
    the agent's chain and the client tools it was started with
    (``with_stored_tools``)."""
    refused = await allowed(authorize, request, "read", None, runs, where)
    if refused is not None:
        return refused
    mine = {**where, **owner_metadata(started_by(request))}
    rows = await runs.pending(mine, limit=1)
    if not rows:
        return error(
            404,
            "nothing waits on this thread: the server keeps a "
            "thread only while its tool calls wait for a human",
        )
    chain = with_stored_tools(build_chain(agent, []), rows[:1])
    stored = await runs.load(rows[0].run_id, chain)
    return rows[0], list(stored.messages)


def build_chain(agent: Agent, messages: Sequence[Message]) -> LLMChain:
    """The agent's chain for ``messages``.

    Raises:
        TypeError: the agent returned something else than an ``LLMChain``.
    """
    chain = agent(messages)
    if not isinstance(chain, LLMChain):
        raise TypeError(f"the agent must return an LLMChain, got {chain!r}")
    return chain


def close_unanswered(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with each tool call that has no result and messages after
    it answered with ``ABANDONED`` (the conversation moved on without
    deciding it: a model is never sent a call without its result). Calls at
    the end of the conversation are left as they are: they still wait."""
    out: list[Message] = []
    for position, message in enumerate(messages):
        out.append(message)
        later = messages[position + 1 :]
        calls = message.tool_calls
        if not calls or not any(m.role != "tool" for m in later):
            continue
        answered = {
            result.tool_call_id
            for after in itertools.takewhile(lambda m: m.role == "tool", later)
            for result in after.tool_results
        }
        missing = [
            ToolResult(tool_call_id=call.call_id, name=call.name, content=ABANDONED)
            for call in calls
            if call.call_id not in answered
        ]
        if missing:
            out.append(Message.tool(missing))
    return out


async def abandon_waiting(chain: LLMChain) -> LLMChain:
    """``chain`` with the calls that wait for a human answered with
    ``ABANDONED`` (``aabandon_tool_calls``: its handlers see the rejections,
    the model reads the reason as each call's result), so a new message runs
    as chat products do; ``chain`` itself when no call waits.

    Raises:
        LangHooksError: a handler failed on a rejection (nothing ran).
    """
    if not chain.pending_tool_calls:
        return chain
    settled = await chain.aabandon_tool_calls()
    if settled.error is not None:
        raise settled.error
    return settled.chain


def moves_on(chain: LLMChain, stored: Sequence[PendingRun]) -> bool:
    """Whether a request is a new message that moves on past waiting calls: calls
    wait (in the store, or in the posted conversation) and the conversation
    ends with a user message."""
    waiting = bool(stored) or bool(chain.pending_tool_calls)
    last = chain.messages[-1] if chain.messages else None
    return waiting and last is not None and last.role == "user"


async def settle_stored(
    runs: Runs, stored: Sequence[PendingRun], chain: LLMChain
) -> None:
    """Reject every waiting call of the ``stored`` runs with ``ABANDONED``, as
    ``LLMChain.abandon_tool_calls`` does, through the store's claim (a call is
    answered once: a concurrent answer makes this raise "conflict"). The runs
    do not go on to the model; the new message's run answers instead. The
    agent's handlers see the rejections, as ``abandon_tool_calls`` fires them.

    Raises:
        LangHooksError: "conflict" when another request answers them now.
    """
    for row in stored:
        decisions = {call.call_id: Decision.reject(ABANDONED) for call in row.calls}
        await runs.resume(chain, row.run_id, decisions, continue_run=False)


async def known(runs: Runs, run_id: str, chain: LLMChain) -> bool:
    """Whether ``runs``' store has run ``run_id`` (waiting or not)."""
    # Awaited as a task of its own, so the store's refusal is read, not thrown
    # into this coroutine (Python 3.11's tracers lose the lines after a throw).
    loading = asyncio.ensure_future(runs.load(run_id, chain))
    await asyncio.wait({loading})
    problem = loading.exception()
    if problem is None:
        return True
    if not isinstance(problem, LangHooksError) or problem.type != "invalid_request":
        raise problem  # pragma: no cover - a store's own failure
    return False


@final
class LiveRun:
    """A run working in a thread or as a task, its records queued for the event
    loop."""

    def __init__(self, work: Work) -> None:
        loop = asyncio.get_running_loop()
        self._records: asyncio.Queue[EventRecord] = asyncio.Queue()
        self._recorded = asyncio.Event()
        recorded = work.recorded

        def arrived(record: EventRecord) -> None:
            self._records.put_nowait(record)
            self._recorded.set()

        def sink(record: EventRecord) -> None:
            recorded(record)
            loop.call_soon_threadsafe(arrived, record)

        self.done: asyncio.Future[None] = asyncio.ensure_future(
            work.run(EventRecorder(sink))
        )
        self._on_loop = work.on_loop

    def cancel(self) -> bool:
        """Cancel the run when it is a task of the event loop (its ``arun()``
        stops where it awaits; a run in a worker thread cannot be stopped);
        whether it was."""
        return self._on_loop and self.done.cancel()

    def _raised(self) -> BaseException | None:
        """What the returned run raised: a cancelled run "cancelled"."""
        if self.done.cancelled():
            return LangHooksError("cancelled", "the run was cancelled")
        return self.done.exception()

    async def begun(self) -> BaseException | None:
        """Wait until the run has recorded its first event or returned; what it
        raised before it recorded anything (a store refusing a resume: nothing
        ran), else None. The exception is still raised by ``next``."""
        recorded = asyncio.ensure_future(self._recorded.wait())
        either: set[asyncio.Future[Any]] = {recorded, self.done}
        await asyncio.wait(either, return_when="FIRST_COMPLETED")
        recorded.cancel()
        if self._recorded.is_set():
            return None
        return self._raised()

    async def next(self, timeout: float) -> EventRecord | None:
        """The next record; None when none came within ``timeout`` seconds or
        the run has returned with every record read (``self.done`` is done).

        Raises:
            Exception: what the run raised, once every record was read.
        """
        if not self._records.empty():
            return self._records.get_nowait()
        if self.done.done():
            raised = self._raised()
            if raised is not None:
                raise raised
            return None
        getting = asyncio.ensure_future(self._records.get())
        either: set[asyncio.Future[Any]] = {getting, self.done}
        await asyncio.wait(either, timeout=timeout, return_when="FIRST_COMPLETED")
        if getting.cancel():
            return await self.next(0) if self.done.done() else None
        return getting.result()

    async def settled(self) -> BaseException | None:
        """Wait until the run has returned; what it raised, if anything."""
        await asyncio.wait({self.done})
        return self._raised()


class Translation(Protocol):
    """One protocol's side of a live run."""

    def translate(self, record: EventRecord) -> list[dict[str, Any]]:
        """The events of one record."""

    def ends(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` ends the request."""

    def waits(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` may be sent only once the run has returned (an
        answer to it must find the run in the store)."""

    def failed(self, exc: BaseException) -> list[dict[str, Any]]:
        """The events that end a request whose run raised ``exc``."""

    @property
    def run_id(self) -> str | None:
        """The langhooks run id of the records translated so far (None before
        the run started)."""


async def stream_events(
    live: LiveRun, translation: Translation, heartbeat: float
) -> AsyncIterator[dict[str, Any] | None]:
    """The events of ``live``, as they come; None for a heartbeat (nothing came
    for ``heartbeat`` seconds). Ends after the event that ends the request."""
    while True:
        try:
            record = await live.next(heartbeat)
        except Exception as exc:
            _log.exception("langhooks frontends: run %s raised", translation.run_id)
            for event in translation.failed(exc):
                yield event
            return
        if record is None:
            if live.done.done():
                # Ended without the record that ends a run: say so, never hang.
                silent = LangHooksError(
                    "stream_error", "the run ended without an answer"
                )
                for event in translation.failed(silent):
                    yield event
                return
            yield None
            continue
        if record.event == "on_error":
            # The details stay here; the client is told what the app exposes.
            _log.error(
                "langhooks frontends: run %s failed: %s",
                record.run_id,
                record.payload.get("error"),
            )
        events = translation.translate(record)
        ending = any(translation.ends(event) for event in events)
        if any(translation.waits(event) for event in events):
            problem = await live.settled()
            if problem is not None:
                _log.error(
                    "langhooks frontends: run %s raised after it ended",
                    translation.run_id,
                    exc_info=problem,
                )
                events = translation.failed(problem)
        for event in events:
            yield event
        if ending:
            return


@final
class _Answer:
    """The events of one answer so far; followers get them all, then the rest
    as they come."""

    def __init__(self, live: LiveRun | None) -> None:
        self.events: list[dict[str, Any]] = []
        self.done = False
        self.live = live
        self._changed = asyncio.Event()

    def add(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        self._changed.set()
        self._changed = asyncio.Event()

    def finish(self) -> None:
        self.done = True
        self._changed.set()

    async def follow(
        self, heartbeat: float, *, cancel_on_leave: bool = False
    ) -> AsyncIterator[dict[str, Any] | None]:
        """Every event from the first; None for a heartbeat. With
        ``cancel_on_leave``, a follower that stops before the answer ended (its
        client went away) cancels the run (when it is on the loop)."""
        sent = 0
        try:
            while True:
                while sent < len(self.events):
                    yield self.events[sent]
                    sent += 1
                if self.done:
                    return
                changed = self._changed
                try:
                    await asyncio.wait_for(changed.wait(), heartbeat)
                except TimeoutError:
                    yield None
        finally:
            if cancel_on_leave and not self.done and self.live is not None:
                self.live.cancel()


@final
class Answers:
    """Each chat's latest answer in this process, kept until the chat's next
    one (at most ``limit`` chats, the oldest forgotten first): the run is
    translated by a task of its own, so an answer goes on when its client is
    gone, and a client that comes back follows it from its first event.

    Args:
        limit: how many chats' answers are kept.
    """

    def __init__(self, limit: int = 1000) -> None:
        self._answers: OrderedDict[Hashable, _Answer] = OrderedDict()
        self._running: set[asyncio.Task[None]] = set()
        self._limit = limit

    def start(
        self,
        key: Hashable,
        events: AsyncIterator[dict[str, Any] | None],
        live: LiveRun | None = None,
    ) -> _Answer:
        """Translate ``events`` (of ``live``, the run a cancel stops) into a new
        answer of chat ``key``."""
        answer = _Answer(live)

        async def drain() -> None:
            try:
                async for event in events:
                    if event is not None:
                        answer.add(event)
            finally:
                answer.finish()

        task = asyncio.ensure_future(drain())
        # The loop keeps only a weak reference: a run whose answer was
        # forgotten (more chats than ``limit``) still ends.
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        self._answers.pop(key, None)
        self._answers[key] = answer
        while len(self._answers) > self._limit:
            self._answers.popitem(last=False)
        return answer

    def get(self, key: Hashable) -> _Answer | None:
        """The latest answer of chat ``key``, or None."""
        return self._answers.get(key)

    def cancel(self, key: Hashable) -> Response:
        """Cancel the run of chat ``key``'s latest answer: 202 when it was
        cancelled (the answer ends with the error "cancelled"), 409 when it
        works in a thread; ``{"cancelled": false}`` when none goes on in this
        process (it ended, or never started here: a cancel that comes late is
        no error)."""
        answer = self._answers.get(key)
        live = None if answer is None or answer.done else answer.live
        if live is None or live.done.done():
            return JSONResponse({"cancelled": False})
        if not live.cancel():
            return error(
                409,
                "this run works in a thread (its handlers and tools are sync: "
                "run() cannot be stopped); create the app with run_async=True "
                "to make runs cancellable",
            )
        return JSONResponse({"cancelled": True}, status_code=202)
