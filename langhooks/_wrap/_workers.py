"""``in_background``'s workers: a thread for a wrapper's synchronous events, a task
on each event loop for its asynchronous ones, and ``_Workers``, which holds them all.

Each worker takes queued events (bounded, blocking or dropping the oldest when
full) and delivers them to the handler in order, exactly once; ``_background``
builds the wrapper on top.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import contextvars
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, Final, TypeAlias, final

from .._core._streaming import mark_delivery_proxy
from ._counters import Counters as _Counters
from ._counters import closed_error as _closed_error

__all__ = ["_TaskWorker", "_ThreadWorker", "_Workers"]

logger: Final = logging.getLogger("langhooks")

# How long, at interpreter exit, the workers of handlers nobody closed may take to
# deliver what is still queued.
_EXIT_TIMEOUT: Final = 10.0

# One queued event: (event name, the handler's method, its arguments).
_Item: TypeAlias = tuple[str, Callable[..., Any], tuple[Any, ...]]


# --- the thread worker (synchronous events) ---------------------------------------


@final
class _ThreadWorker:
    """A queue and the thread that empties it into the handler.

    Holds no reference to the wrapper, so a wrapper nobody closes can be collected;
    its finalizer then stops the worker after it delivered what was queued.

    Progress is counted so ``flush`` can wait for exactly what was queued before it:
    ``queued`` events were ever accepted, ``removed`` left the queue (taken by the
    worker or dropped, always from the head, so in queue order), and ``current`` is
    the number of the event the worker is delivering (0 when idle). Everything up to
    ``n`` is done once ``removed >= n`` and the worker is not delivering one of them.
    """

    __slots__ = (
        "__weakref__",
        "_closed",
        "_counters",
        "_done",
        "_drop",
        "_flushers",
        "_idle",
        "_lock",
        "_maxsize",
        "_queue",
        "_room",
        "_thread",
        "_waiting_for_room",
        "_wake",
        "current",
        "queued",
        "removed",
    )

    def __init__(self, maxsize: int, drop: bool, counters: _Counters) -> None:
        self._maxsize = maxsize
        self._drop = drop
        self._counters = counters
        self._queue: collections.deque[_Item] = collections.deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._room = threading.Condition(self._lock)
        self._done = threading.Condition(self._lock)
        self._idle = False
        self._closed = False
        self._waiting_for_room = 0
        # What each waiting flush waits for (an event count), lowest first.
        self._flushers: list[int] = []
        self._thread: threading.Thread | None = None
        self.queued = 0
        self.removed = 0
        self.current = 0

    def put(self, item: _Item) -> None:
        """Queue one event (blocking while the queue is full, for "block").

        Raises:
            LangHooksError: the wrapper was closed (type handler_error).
        """
        with self._lock:
            if self._closed:
                raise _closed_error(self._counters.owner)
            if len(self._queue) >= self._maxsize:
                self._make_room()
            self._queue.append(item)
            self.queued += 1
            if self._thread is None:
                self._start()
            elif self._idle:
                self._idle = False
                self._wake.notify()

    def _make_room(self) -> None:
        # Called with the lock held and the queue full.
        if self._drop:
            self._queue.popleft()
            self.removed += 1
            self._counters.drop(self._maxsize)
            self._notify_flushers()
            return
        if self._thread is threading.current_thread():
            # The handler sends an event to its own wrapper (a nested stream):
            # only this thread makes room, so waiting would never end. The queue
            # holds it beyond maxsize; the handler's own nesting bounds that.
            return
        self._waiting_for_room += 1
        try:
            while len(self._queue) >= self._maxsize and not self._closed:
                self._room.wait()
        finally:
            self._waiting_for_room -= 1
        if self._closed:
            raise _closed_error(self._counters.owner)

    def _start(self) -> None:
        # A daemon thread: a handler nobody closed must not keep the interpreter
        # alive; the atexit hook below delivers what it still holds.
        self._thread = threading.Thread(
            target=self._run,
            name=f"langhooks-background-{self._counters.owner}",
            daemon=True,
        )
        _LIVE_THREAD_WORKERS.add(self)
        self._thread.start()

    def _run(self) -> None:
        mark_delivery_proxy()
        try:
            self._deliver_all()
        finally:
            _LIVE_THREAD_WORKERS.discard(self)

    def _deliver_all(self) -> None:
        queue, lock = self._queue, self._lock
        counters = self._counters
        while True:
            with lock:
                self.current = 0
                self._notify_flushers()
                while not queue:
                    if self._closed:
                        return
                    self._idle = True
                    self._wake.wait()
                name, method, args = queue.popleft()
                self.removed += 1
                self.current = self.removed
                if self._waiting_for_room:
                    self._room.notify()
            try:
                method(*args)
            except BaseException:
                # Nobody up this thread could handle it: a KeyboardInterrupt or
                # SystemExit raised by a handler here ends no program either.
                counters.failed(name)

    def _done_through(self, target: int) -> bool:
        return self.removed >= target and not (0 < self.current <= target)

    def _notify_flushers(self) -> None:
        # Called with the lock held. Waking a flusher only once its target is
        # reached (the first is the lowest: targets are appended as ``queued``
        # grows) spares a wake-up per event while a flush waits.
        targets = self._flushers
        if targets and self._done_through(targets[0]):
            self._done.notify_all()

    def flush(self, timeout: float | None) -> bool:
        """Wait until every event queued before the call was handled.

        Returns:
            True when they were (delivered, or dropped and counted); False when
            ``timeout`` seconds passed first.
        """
        with self._lock:
            target = self.queued
            if self._thread is threading.current_thread():
                # Called by the handler itself: waiting for its own delivery would
                # never end.
                return self._done_through(target)
            self._flushers.append(target)
            try:
                return self._done.wait_for(lambda: self._done_through(target), timeout)
            finally:
                self._flushers.remove(target)

    def close(self, timeout: float | None) -> bool:
        """Take no more events; wait for the queued ones and the thread's end.

        Returns:
            True when everything queued was handled and the thread ended.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self.stop()
        thread = self._thread
        if thread is None:
            return True
        if thread is threading.current_thread():
            return False
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not thread.is_alive()

    def stop(self) -> None:
        """Take no more events; the thread ends once the queue is empty."""
        with self._lock:
            self._closed = True
            self._wake.notify()
            self._room.notify_all()


_LIVE_THREAD_WORKERS: Final[weakref.WeakSet[_ThreadWorker]] = weakref.WeakSet()


@atexit.register
def _deliver_at_exit() -> None:  # pragma: no cover  # runs at interpreter exit
    # Covered by a test in a subprocess, which coverage does not follow.
    deadline = time.monotonic() + _EXIT_TIMEOUT
    for worker in list(_LIVE_THREAD_WORKERS):
        if not worker.close(max(0.0, deadline - time.monotonic())):
            logger.warning(
                "langhooks: in_background(%s) still had events to deliver at exit",
                worker._counters.owner,
            )


# --- the task worker (asynchronous events) ----------------------------------------


@final
class _TaskWorker:
    """The async twin of ``_ThreadWorker``: a queue and the task that empties it.

    One per event loop: an async handler's resources usually belong to the loop that
    called it. Everything runs on that loop's thread, so no lock is needed.
    """

    __slots__ = (
        "_closed",
        "_counters",
        "_drop",
        "_idle",
        "_loop",
        "_maxsize",
        "_progress",
        "_queue",
        "_room",
        "_waiting_for_room",
        "current",
        "queued",
        "removed",
        "task",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        maxsize: int,
        drop: bool,
        counters: _Counters,
    ) -> None:
        self._loop = loop
        self._maxsize = maxsize
        self._drop = drop
        self._counters = counters
        self._queue: collections.deque[_Item] = collections.deque()
        self._idle: asyncio.Future[None] | None = None
        # Set when an event left the queue (room for a waiting caller) and when one
        # was handled (progress for a waiting flush); waiters clear and re-check.
        self._room = asyncio.Event()
        self._progress = asyncio.Event()
        self._waiting_for_room = 0
        self._closed = False
        self.queued = 0
        self.removed = 0
        self.current = 0
        # An empty context: the worker outlives the call that started it, and must
        # not carry that call's invocation into later events.
        self.task: asyncio.Task[None] = loop.create_task(
            self._run(), context=contextvars.Context()
        )
        # Also when the task is cancelled before its first step, which runs none
        # of ``_run`` (not even its ``finally``).
        self.task.add_done_callback(lambda _: self._end())

    def offer(self, item: _Item) -> bool:
        """Queue one event unless the caller must wait for room ("block" with a
        full queue: then False, and the caller awaits ``put``)."""
        if self.task.done():
            # Sent after the loop cancelled this worker (a task cleaning up while
            # ``asyncio.run`` returns): nobody is left to deliver it.
            self._lost(1)
            return True
        queue = self._queue
        if len(queue) >= self._maxsize:
            if self._drop:
                queue.popleft()
                self.removed += 1
                self._counters.drop(self._maxsize)
                self._progress.set()
            elif asyncio.current_task() is not self.task:
                return False
            # Else the handler sends an event to its own wrapper (a nested
            # stream): only this task makes room, so the queue holds it beyond
            # maxsize; the handler's own nesting bounds that.
        queue.append(item)
        self.queued += 1
        idle = self._idle
        if idle is not None:
            self._idle = None
            idle.set_result(None)
        return True

    async def put(self, item: _Item) -> None:
        """Queue one event, waiting for room first.

        Raises:
            LangHooksError: the wrapper was closed while waiting (handler_error).
        """
        self._waiting_for_room += 1
        try:
            while len(self._queue) >= self._maxsize and not self._closed:
                self._room.clear()
                await self._room.wait()
        finally:
            self._waiting_for_room -= 1
        if self._closed:
            raise _closed_error(self._counters.owner)
        self.offer(item)

    async def _run(self) -> None:
        queue, counters = self._queue, self._counters
        try:
            while True:
                self.current = 0
                self._progress.set()
                while not queue:
                    if self._closed:
                        return
                    idle = self._idle = self._loop.create_future()
                    await idle
                name, method, args = queue.popleft()
                self.removed += 1
                self.current = self.removed
                if self._waiting_for_room:
                    self._room.set()
                try:
                    await method(*args)
                except asyncio.CancelledError:
                    if self.task.cancelling():
                        raise  # this worker is cancelled: its loop is ending
                    # The handler's own CancelledError (it awaited something that
                    # was cancelled): an error of that event, not the worker's end.
                    counters.failed(name)
                except Exception:
                    counters.failed(name)
        finally:
            self._end()

    def _end(self) -> None:
        # Idempotent: called when ``_run`` ends and again when the task is done.
        self._closed = True
        lost = len(self._queue)
        if lost:
            # The loop is shutting down (``asyncio.run`` returning) with events
            # still queued: say so rather than lose them quietly.
            self._queue.clear()
            self._lost(lost)
        self.removed, self.current = self.queued, 0
        self._room.set()
        self._progress.set()

    def _lost(self, count: int) -> None:
        logger.warning(
            "langhooks: in_background(%s) lost %d event(s): its event loop ended "
            "before they were delivered; await aclose() before the loop ends",
            self._counters.owner,
            count,
        )

    def _done_through(self, target: int) -> bool:
        return self.removed >= target and not (0 < self.current <= target)

    async def flush(self) -> None:
        """Wait until every event queued before the call was handled."""
        target = self.queued
        if asyncio.current_task() is self.task:
            return  # the handler itself: waiting for its own delivery never ends
        while not self._done_through(target):
            self._progress.clear()
            await self._progress.wait()

    def stop(self) -> None:
        """Take no more events; the task ends once the queue is empty."""
        self._closed = True
        self._room.set()
        idle = self._idle
        if idle is not None:
            self._idle = None
            idle.set_result(None)

    async def close(self) -> None:
        """``stop``, then wait for the task to deliver what was queued and end."""
        self.stop()
        if asyncio.current_task() is not self.task:
            # Not ``await self.task``: a task the loop cancelled would raise here
            # (and cancelling this caller must not cancel the worker).
            await asyncio.wait({self.task})


# --- all of a wrapper's workers ---------------------------------------------------


@final
class _Workers:
    """Every worker of one wrapper (and nothing that refers back to the wrapper)."""

    __slots__ = ("closed", "counters", "drop", "lock", "loops", "maxsize", "thread")

    def __init__(self, maxsize: int, drop: bool, counters: _Counters) -> None:
        self.maxsize = maxsize
        self.drop = drop
        self.counters = counters
        self.thread = _ThreadWorker(maxsize, drop, counters)
        self.loops: dict[asyncio.AbstractEventLoop, _TaskWorker] = {}
        self.lock = threading.Lock()
        self.closed = False

    def for_loop(self) -> _TaskWorker:
        """This event loop's worker, started on first use.

        Raises:
            LangHooksError: the wrapper was closed (type handler_error).
        """
        loop = asyncio.get_running_loop()
        worker = self.loops.get(loop)
        if worker is None or self.closed:
            with self.lock:
                if self.closed:
                    raise _closed_error(self.counters.owner)
                worker = _TaskWorker(loop, self.maxsize, self.drop, self.counters)
                self.loops[loop] = worker
                worker.task.add_done_callback(lambda _: self.loops.pop(loop, None))
        return worker

    async def flush_loop(self) -> None:
        """Wait until this event loop's worker, if any, delivered what it holds."""
        worker = self.loops.get(asyncio.get_running_loop())
        if worker is not None:
            await worker.flush()

    def stop(self) -> None:
        """Stop every worker (from any thread); each ends after its queue empties."""
        with self.lock:
            self.closed = True
            workers = list(self.loops.items())
        self.thread.stop()
        for loop, worker in workers:
            # Thread-safe: the loop may run in another thread, and a finalizer may
            # call this at any moment. A loop closed without cancelling its tasks
            # (not through asyncio.run) has nothing left to stop.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(worker.stop)
