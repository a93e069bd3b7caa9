"""``RedisEventPublisher``: every event as an ``EventRecord`` in a Redis stream."""

from __future__ import annotations

import asyncio
import atexit
import os
import uuid
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, final, overload

import redis
import redis.cluster
from typing_extensions import override

from ..._core._chain_callbacks import ChainCallbackHandler
from ..._core._messages import LangHooksError
from ..._core._streaming import StreamingChatResponseHandler
from ..._persist._events import (
    _TERMINAL,
    EventRecord,
    EventRecorder,
)
from ..._persist._records import _CHAIN_EVENTS, _STREAM_EVENTS
from .._run_end import EndMarker
from ._outbox import Outbox, Pending
from ._wire import (
    Keys,
    check_count,
    check_seconds,
    check_sync_client,
    record_json,
)

if TYPE_CHECKING:
    from ...chain import LLMChain, RunResult

__all__ = ["RedisEventPublisher"]

# Records after which the buffer is flushed at once: the run or stream returns, or a
# tool call waits on its review (a human may be about to look at the stream).
_URGENT: Final = _TERMINAL | {"on_tool_call_review"}

# Publishers with a flusher thread, flushed (briefly) when the interpreter exits.
_LIVE: Final[weakref.WeakSet[RedisEventPublisher]] = weakref.WeakSet()


# Every publisher of this process: a child made by fork() gives each a new identity.
_ALL: Final[weakref.WeakSet[RedisEventPublisher]] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:  # pragma: no cover  # runs as the interpreter exits
    for publisher in list(_LIVE):
        publisher.flush(timeout=1.0)


def _after_fork_in_child() -> None:  # pragma: no cover  # in a forked child
    # Coverage does not follow a fork: tests/integrations/test_redis_fork.py runs
    # this in real children, and _forked in-process.
    # A child of fork() shares its parent's publisher ids and seq numbers (readers
    # would drop the child's records as repeats) and has none of its threads (the
    # parent's flusher is gone, its locks may be held): each publisher starts over.
    for publisher in list(_ALL):
        publisher._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _forwarding(name: str) -> Callable[..., None]:
    def forward(self: RedisEventPublisher, *args: Any) -> None:
        getattr(self._recorder, name)(*args)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"Publish ``{name}``."
    return forward


@final
class RedisEventPublisher(ChainCallbackHandler, StreamingChatResponseHandler):
    """A chain and streaming handler that publishes every event to Redis Streams.

    Each event becomes an ``EventRecord`` (made by an ``EventRecorder``) appended,
    in ``seq`` order, to the stream ``{prefix}run:{run_id}`` (a record outside a
    chain run goes to the stream of its current invocation, ``with
    invocation(...)``, or only to the firehose when there is none) and to the
    capped firehose ``{prefix}events`` that ``RedisEventConsumer`` groups read.
    On a Redis Cluster (or with ``shards`` > 1) the firehose is sharded: a run's
    records go to the shard of its id, and its stream is in that shard's slot
    (``{prefix}{{prefix}k}:run:{run_id}`` beside ``{prefix}{{prefix}k}:events``).
    Entry fields: ``record`` (the record, ``langhooks.codec`` JSON), ``event``,
    ``publisher`` (this publisher's id: ``seq`` is unique per publisher), and
    ``end`` on the record that ends a run for good (its ``on_error``, or its
    ``on_run_complete`` with status "ok" when the model answered).

    Records are sent in batches by one background thread (one Lua script call per
    batch and shard, which appends each record to both streams, atomically): a batch
    leaves when ``batch_size`` records wait, after ``flush_interval`` seconds,
    and at once before the run or stream returns and when a tool call is up for
    review (the publisher waits up to ``flush_timeout`` for that flush, except on a
    thread running an event loop, which it never blocks, and while Redis fails).
    Both streams are trimmed with ``MAXLEN ~ maxlen``; a run's stream expires
    ``expire_after`` seconds after its last record.

    When Redis is slower than the model, at most ``max_buffer`` records wait; a
    full buffer blocks the event for up to ``block_timeout`` seconds
    (back-pressure), then the record is dropped. When Redis is down or times out,
    the batch is dropped (on a cluster, the part of it bound for the failing
    node's shards: a moved slot, a node down, a failover, a
    ``RedisClusterException``). Either way the run goes on: the loss is logged once at
    WARNING on the ``langhooks`` logger and counted in ``lost``. With
    ``fail_run=True`` the next event after a loss raises ``LangHooksError``
    (type "connection") instead, which ends the run with a handler error.

    A publisher made before ``fork()`` (at module level, or in a pre-forking
    server) starts over in each child: a new ``id``, ``seq`` from 0, its own
    thread, ``published`` and ``lost`` from 0; the parent sends what it had
    buffered. A child ends without the interpreter's exit hooks (multiprocessing
    calls ``os._exit``): call ``flush()`` or ``close()`` before it returns.

    Args:
        client: a synchronous ``redis.Redis`` or ``redis.cluster.RedisCluster``
            client (also for ``arun`` and ``astream``: the I/O happens on the
            publisher's thread).
        prefix: prepended to every key.
        shards: how many shards the firehose has (each its own slot); None: 1 on
            one node, 16 on a cluster. Readers of the prefix (``follow``,
            ``RedisEventConsumer``, ``create_app``) must use the same.
        maxlen: the approximate cap of each stream.
        expire_after: seconds a run's stream lives after its last record.
        batch_size: the most records in one batch (one script call).
        flush_interval: the longest a record waits for others to join its batch.
        max_buffer: the most records waiting to be sent.
        block_timeout: the longest an event waits for room in a full buffer.
        flush_timeout: the longest an urgent flush waits for Redis.
        fail_run: raise after a loss instead of going on.

    Raises:
        TypeError: a bad client or option.
    """

    def __init__(
        self,
        client: redis.Redis | redis.cluster.RedisCluster,
        *,
        prefix: str = "langhooks:",
        shards: int | None = None,
        maxlen: int = 100_000,
        expire_after: int = 24 * 3600,
        batch_size: int = 500,
        flush_interval: float = 0.005,
        max_buffer: int = 10_000,
        block_timeout: float = 1.0,
        flush_timeout: float = 5.0,
        fail_run: bool = False,
    ) -> None:
        check_sync_client(client, "RedisEventPublisher")
        self._keys: Final = Keys.of(client, prefix, shards)
        for name, count in (
            ("maxlen", maxlen),
            ("expire_after", expire_after),
            ("batch_size", batch_size),
            ("max_buffer", max_buffer),
        ):
            check_count(name, count, 1)
        for name, seconds in (
            ("flush_interval", flush_interval),
            ("block_timeout", block_timeout),
            ("flush_timeout", flush_timeout),
        ):
            check_seconds(name, seconds)
        self._prefix: Final = prefix
        self._fail_run: Final = bool(fail_run)
        self._flush_timeout: Final = float(flush_timeout)
        self.id: str = uuid.uuid4().hex
        """This publisher's id, in every entry's ``publisher`` field (a new one in
        a child process after ``fork()``)."""
        self._outbox = Outbox(
            client,
            publisher=self.id,
            maxlen=maxlen,
            expire_after=expire_after,
            batch_size=batch_size,
            flush_interval=float(flush_interval),
            max_buffer=max_buffer,
            block_timeout=float(block_timeout),
        )
        self._end = EndMarker()
        self._raised_at = 0
        self._recorder = EventRecorder(self._publish)
        # A publisher dropped without close() must not leave its thread behind.
        self._finalizer = weakref.finalize(self, self._outbox.stop)
        _LIVE.add(self)
        _ALL.add(self)

    def _forked(self) -> None:
        """Start over in a child process: a new id, recorder (``seq`` from 0) and
        outbox (its own thread, counters from 0)."""
        self.id = uuid.uuid4().hex
        self._outbox = self._outbox.forked(self.id)
        self._end = EndMarker()
        self._raised_at = 0
        self._recorder = EventRecorder(self._publish)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, self._outbox.stop)

    @property
    def published(self) -> int:
        """How many records Redis accepted so far."""
        return self._outbox.sent

    @property
    def lost(self) -> int:
        """How many records were dropped (Redis down, timing out, or too slow)."""
        return self._outbox.lost

    def flush(self, timeout: float | None = None) -> bool:
        """Send every record made so far, and wait until each is sent or lost.

        Returns:
            False when ``timeout`` seconds passed first.
        """
        return self._outbox.flush(timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Flush, then stop the background thread; later events are lost (counted).

        Returns:
            False when ``timeout`` seconds passed before everything was sent.
        """
        _LIVE.discard(self)
        return self._outbox.close(timeout)

    def __enter__(self) -> RedisEventPublisher:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @override
    def __repr__(self) -> str:
        return f"RedisEventPublisher(prefix={self._prefix!r})"

    def _publish(self, record: EventRecord) -> None:
        if self._fail_run and self._outbox.lost > self._raised_at:
            self._raised_at = self._outbox.lost
            raise LangHooksError(
                "connection",
                f"RedisEventPublisher lost {self._raised_at} event record(s) "
                f"(fail_run=True)",
            )
        stream = record.run_id or record.invocation_id
        keys = self._keys
        self._outbox.put(
            Pending(
                firehose=keys.firehose(keys.shard(stream)),
                key=None if stream is None else keys.run(stream),
                event=record.event,
                record=record_json(record),
                end=self._end.ends(record.event),
            )
        )
        if record.event in _URGENT:
            # Sent now; waited for only off an event loop, and not while Redis
            # fails (each run would wait flush_timeout for nothing).
            wait = self._outbox.healthy and not _on_event_loop()
            self._outbox.flush(self._flush_timeout if wait else 0.0)

    # One forwarding method per event of both interfaces, as EventRecorder has.
    locals().update(
        {
            name: _forwarding(name)
            for name in {*_CHAIN_EVENTS, *_STREAM_EVENTS}
            - {"on_error", "on_run_complete"}
        }
    )

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult, /) -> None:
        """Publish ``on_run_complete``, marked as the run's end when the run
        ended for good (status "ok" and the model answered: not a resume that
        leaves tool results for the model)."""
        self._end.on_run_complete(chain, result)
        self._recorder.on_run_complete(chain, result)

    @overload
    def on_error(self, error: BaseException, /) -> None: ...
    @overload
    def on_error(self, chain: LLMChain, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        """Publish ``on_error``: a stream's ``(error)``, a run's ``(chain, error)``."""
        self._recorder.on_error(*args)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
