"""What the AG-UI and UI-message apps share: a live run translated as it records.

A request's run (a new one, or a stored one resumed) works in a worker thread with
an ``EventRecorder`` whose records come back to the event loop; the protocol's
translator turns each into events as it arrives, so a live run is translated by
exactly the code that translates a recorded one. The events that end a request
are held until the run's thread has returned: by then an interrupted run is in the
store, so a client that answers at once finds it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._core._messages import LangHooksError, Message, ToolCall
from .._persist._events import EventRecord, EventRecorder
from ..chain import Decision, LLMChain
from ._web_auth import Action, Authorize, Guard, metadata_owner

if TYPE_CHECKING:
    from .._persist._stores import RunStore

__all__ = [
    "Agent",
    "LiveRun",
    "Translation",
    "Work",
    "allowed",
    "build_chain",
    "error",
    "fresh_run",
    "known",
    "resumed_run",
    "stream_events",
    "waiting_calls",
]

_log: Final = logging.getLogger("langhooks.integrations.frontends")

Agent = Callable[[Sequence[Message]], LLMChain]
"""Builds the chain for a conversation so far: model, tools, handlers, messages."""

Work = Callable[[EventRecorder], None]


def error(status: int, message: str) -> JSONResponse:
    """A refusal: ``{"error": message}`` with ``status``."""
    return JSONResponse({"error": message}, status_code=status)


async def allowed(
    authorize: Authorize | None,
    request: Request,
    action: Action,
    run_id: str | None,
    store: RunStore,
    where: Mapping[str, Any],
) -> Response | None:
    """What an app's ``Guard`` answers ``request`` asking ``action`` on run
    ``run_id`` (None: go on). The run's owner, when ``authorize`` asks, is read
    from the metadata of the run waiting in ``store`` among those matching
    ``where`` (the thread or chat the request names)."""

    async def owner_of(run: str) -> str | None:
        rows = await asyncio.to_thread(store.pending, metadata=where)
        row = next((row for row in rows if row.run_id == run), None)
        return None if row is None else metadata_owner(row.metadata)

    return await Guard(authorize, owner_of).check(request, action, run_id)


def waiting_calls(calls: Sequence[ToolCall]) -> str:
    """The calls a refusal names: ``name ('call id')``, comma-separated."""
    return ", ".join(f"{call.name} ({call.call_id!r})" for call in calls)


def build_chain(agent: Agent, messages: Sequence[Message]) -> LLMChain:
    """The agent's chain for ``messages``.

    Raises:
        TypeError: the agent returned something else than an ``LLMChain``.
    """
    chain = agent(messages)
    if not isinstance(chain, LLMChain):
        raise TypeError(f"the agent must return an LLMChain, got {chain!r}")
    return chain


def fresh_run(chain: LLMChain, store: RunStore, metadata: Mapping[str, Any]) -> Work:
    """Run ``chain``; an interrupted run is saved in ``store`` with ``metadata``."""

    def work(recorder: EventRecorder) -> None:
        result = chain.add_callback(recorder).run()
        if result.status == "interrupted":
            store.save(result.chain, metadata=metadata)

    return work


def resumed_run(
    chain: LLMChain,
    store: RunStore,
    run_id: str,
    decisions: Mapping[str, Decision],
) -> Work:
    """Resume stored run ``run_id`` with ``decisions`` on ``chain``'s code."""

    def work(recorder: EventRecorder) -> None:
        store.resume(
            run_id,
            decisions,
            chain.model,
            tools=chain.tools,
            callbacks=(*chain.callbacks, recorder),
            fallbacks=chain.fallbacks,
            retry=chain.retry,
        )

    return work


async def known(store: RunStore, run_id: str, chain: LLMChain) -> bool:
    """Whether ``store`` has run ``run_id`` (waiting or not)."""
    # The store is asked in a thread that catches its refusal: no exception
    # comes back through the await.
    return await asyncio.to_thread(_known, store, run_id, chain)


def _known(store: RunStore, run_id: str, chain: LLMChain) -> bool:
    try:
        store.load(run_id, chain.model, tools=chain.tools)
    except LangHooksError as exc:
        if exc.type != "invalid_request":  # pragma: no cover - a store's own failure
            raise
        return False
    return True


@final
class LiveRun:
    """A run working in a thread, its records queued for the event loop."""

    def __init__(self, work: Work) -> None:
        loop = asyncio.get_running_loop()
        self._records: asyncio.Queue[EventRecord] = asyncio.Queue()
        self._recorded = asyncio.Event()

        def arrived(record: EventRecord) -> None:
            self._records.put_nowait(record)
            self._recorded.set()

        def sink(record: EventRecord) -> None:
            loop.call_soon_threadsafe(arrived, record)

        self.done: asyncio.Future[None] = asyncio.ensure_future(
            asyncio.to_thread(work, EventRecorder(sink))
        )

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
        return self.done.exception()

    async def next(self, timeout: float) -> EventRecord | None:
        """The next record; None when none came within ``timeout`` seconds or
        the run has returned with every record read (``self.done`` is done).

        Raises:
            Exception: what the run raised, once every record was read.
        """
        if not self._records.empty():
            return self._records.get_nowait()
        if self.done.done():
            self.done.result()
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
        return self.done.exception()


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


async def stream_events(
    live: LiveRun, translation: Translation, heartbeat: float
) -> AsyncIterator[dict[str, Any] | None]:
    """The events of ``live``, as they come; None for a heartbeat (nothing came
    for ``heartbeat`` seconds). Ends after the event that ends the request."""
    while True:
        try:
            record = await live.next(heartbeat)
        except Exception as exc:
            _log.exception("langhooks frontends: a run raised")
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
        events = translation.translate(record)
        ending = any(translation.ends(event) for event in events)
        if any(translation.waits(event) for event in events):
            problem = await live.settled()
            if problem is not None:
                _log.error(
                    "langhooks frontends: a run raised after it ended",
                    exc_info=problem,
                )
                events = translation.failed(problem)
        for event in events:
            yield event
        if ending:
            return
