"""Where ``NotifyingHandler``'s ``(tag, payload)`` messages go.

A ``Sink`` delivers them to one ``notify`` target: a callable, a ``queue.Queue``
(dropping the oldest message when full) or an ``asyncio.Queue`` (put in its loop's
thread). ``sink(notify, loop)`` makes the right one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, final

from typing_extensions import override

__all__ = ["Sink", "sink"]

logger: Final = logging.getLogger("langhooks")


class Sink:
    """Delivers messages to one ``notify`` target; shared by a handler's copies."""

    def __init__(self, target: object) -> None:
        self.target: Final = target
        self.dropped = 0
        self._lock: Final = threading.Lock()

    def deliver(self, message: tuple[str, Any]) -> None:
        raise NotImplementedError

    def _count_drop(self, maxsize: int) -> None:
        with self._lock:
            self.dropped += 1
            first = self.dropped == 1
        if first:
            logger.warning(
                "langhooks: the notify queue is full (maxsize=%d): dropping the "
                "oldest message to make room. NotifyingHandler.dropped counts the "
                "drops; give the queue no maxsize to keep every message.",
                maxsize,
            )


@final
class _CallableSink(Sink):
    def __init__(self, target: Callable[[tuple[str, Any]], object]) -> None:
        super().__init__(target)
        self._call: Final = target

    @override
    def deliver(self, message: tuple[str, Any]) -> None:
        self._call(message)


@final
class _QueueSink(Sink):
    def __init__(self, target: queue.Queue[Any]) -> None:
        super().__init__(target)
        self._queue: Final = target
        self._drop_lock: Final = threading.Lock()

    @override
    def deliver(self, message: tuple[str, Any]) -> None:
        q = self._queue
        try:
            q.put_nowait(message)
        except queue.Full:
            pass
        else:
            return
        # Full: drop the oldest message until this one fits. The lock keeps other
        # producers on this handler from racing us for the freed slot; a consumer
        # may empty the queue meanwhile, which only means nothing needs dropping.
        with self._drop_lock:
            while True:
                try:
                    q.put_nowait(message)
                except queue.Full:
                    with contextlib.suppress(queue.Empty):
                        q.get_nowait()
                        q.task_done()
                        self._count_drop(q.maxsize)
                else:
                    return


@final
class _AsyncQueueSink(Sink):
    """Puts messages on an ``asyncio.Queue`` in its loop's thread.

    An ``asyncio.Queue`` is not thread-safe and, since Python 3.10, is bound to a
    loop only when a coroutine first waits on it, so the loop is found in this
    order: the ``loop`` given to ``NotifyingHandler``; the loop running when the
    handler was created; the loop the queue is bound to (a consumer awaited
    ``get()``); the loop running in the thread of the first delivery.
    """

    def __init__(
        self, target: asyncio.Queue[Any], loop: asyncio.AbstractEventLoop | None
    ) -> None:
        super().__init__(target)
        self._queue: Final = target
        self._loop = loop if loop is not None else asyncio._get_running_loop()

    def _resolve_loop(self) -> asyncio.AbstractEventLoop:
        # asyncio.Queue keeps the loop it bound to in ``_loop`` (None until bound).
        bound = getattr(self._queue, "_loop", None)
        loop = bound if bound is not None else asyncio._get_running_loop()
        if loop is None:
            raise RuntimeError(
                "NotifyingHandler cannot tell which event loop reads the "
                "asyncio.Queue: create the handler inside that loop (in async code), "
                "or pass loop=<the loop>"
            )
        self._loop = loop
        return loop

    @override
    def deliver(self, message: tuple[str, Any]) -> None:
        loop = self._loop if self._loop is not None else self._resolve_loop()
        # asyncio._get_running_loop (exported in asyncio.__all__) returns None off a
        # loop instead of raising: cheap on the per-delta path.
        if asyncio._get_running_loop() is loop:
            self._put(message)
            return
        try:
            loop.call_soon_threadsafe(self._put, message)
        except RuntimeError as error:
            raise RuntimeError(
                f"cannot deliver {message[0]!r}: the event loop that reads the "
                f"asyncio.Queue is closed ({error})"
            ) from error

    def _put(self, message: tuple[str, Any]) -> None:
        # Runs in the loop's thread, so nothing else touches the queue meanwhile.
        q = self._queue
        if q.full():
            q.get_nowait()
            q.task_done()
            self._count_drop(q.maxsize)
        q.put_nowait(message)


def sink(notify: object, loop: asyncio.AbstractEventLoop | None) -> Sink | None:
    if loop is not None and not isinstance(notify, asyncio.Queue):
        raise TypeError(
            f"loop= only applies when notify is an asyncio.Queue, got {notify!r}"
        )
    if notify is None:
        return None
    if isinstance(notify, asyncio.Queue):
        return _AsyncQueueSink(notify, loop)
    if isinstance(notify, queue.Queue):
        return _QueueSink(notify)
    if callable(notify):
        return _CallableSink(notify)
    raise TypeError(
        f"notify must be a queue.Queue, an asyncio.Queue, a callable taking the "
        f"(tag, payload) message, or None; got {notify!r}"
    )
