"""Reading a run's stream: ``run_entries`` (the records with their stream ids) and
``follow``, which re-drives a local handler with them; each with an async twin."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Final, final

import attrs
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

from .._persist._events import EventRecord, Handler, Replayer, SyncHandler
from ._redis_position import FollowPosition
from ._redis_wire import (
    TRANSIENT,
    AsyncClient,
    Keys,
    SyncClient,
    aread_stream,
    block_step,
    check_async_client,
    check_sync_client,
    ends_run,
    publisher_of,
    read_stream,
    record_of,
    text,
)

__all__ = ["RunEntry", "afollow", "arun_entries", "follow", "run_entries"]

logger: Final = logging.getLogger("langhooks")

# Entries one read takes at most.
_COUNT: Final = 1000
# The pauses between reads while Redis fails: from the first to the longest.
_PAUSE: Final = 0.05
_MAX_PAUSE: Final = 1.0


@final
@attrs.frozen(kw_only=True)
class RunEntry:
    """One record of a run's stream.

    Attributes:
        id: its stream id (give it as ``last_id`` to go on after it).
        record: the ``EventRecord``.
        ends_run: whether it is the record that ends the run for good.
    """

    id: str
    record: EventRecord
    ends_run: bool


@final
class _Entries:
    """Turns a run's stream entries into ``RunEntry``s, once each.

    A batch the publisher's client retried after a timeout (redis-py retries on
    timeouts) can be in the stream twice; ``seq`` increases per publisher, so an
    entry whose publisher already gave a seq as high is a repeat, and skipped.
    """

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def entry(self, entry_id: Any, fields: Any) -> RunEntry | None:
        """The entry, or None for a repeat."""
        record = record_of(fields)
        publisher = publisher_of(fields)
        if record.seq <= self._last.get(publisher, -1):
            return None
        self._last[publisher] = record.seq
        return RunEntry(id=text(entry_id), record=record, ends_run=ends_run(fields))


@final
class _Reader:
    """One reader of a run's stream: the position it reads after, how long it still
    waits for a new record (``block_ms`` after the last one, in reads no longer than
    the client's socket timeout allows), and whether the run has ended.

    A read that fails with a transient fault (connection lost, node down, failover,
    moved slot) is tried again from the same position after a pause (growing to a
    second), within the same wait: redis-py reconnects, and a cluster client finds
    the slot's new node. When the wait ends while Redis still fails, the last fault
    is raised."""

    def __init__(
        self,
        client: SyncClient | AsyncClient,
        key: str,
        position: str,
        block_ms: int,
        once: _Entries,
    ) -> None:
        self.position = position
        self._key: Final = key
        self._once: Final = once
        self._block_ms: Final = block_ms
        self._step: Final = block_step(client, block_ms)
        self._deadline: float | None = None
        self._ended = False
        self._fault: Exception | None = None
        self._pause = _PAUSE
        self._renew()

    def failed(self, fault: Exception) -> float:
        """Note a transient fault of a read.

        Returns:
            The seconds to pause before the next read.
        """
        if self._fault is None:
            logger.warning(
                "langhooks: reading %s failed (%s: %s); reading again from %s",
                *(self._key, type(fault).__name__, fault, self.position),
            )
        self._fault = fault
        pause = self._pause
        self._pause = min(_MAX_PAUSE, self._pause * 2)
        if self._deadline is not None:
            pause = min(pause, max(0.0, self._deadline - time.monotonic()))
        return pause

    def done(self) -> None:
        """Raise the fault the wait ended on, if it did."""
        if self._fault is not None and not self._ended:
            raise self._fault

    def _read(self) -> None:
        # A read succeeded.
        if self._fault is not None:
            logger.warning("langhooks: reading %s again", self._key)
        self._fault = None
        self._pause = _PAUSE

    def _renew(self) -> None:
        # Something new came: wait block_ms from now.
        if self._block_ms:
            self._deadline = time.monotonic() + self._block_ms / 1000

    def next_block(self) -> int | None:
        """The ``BLOCK`` of the next read, or None when the wait is over or the
        run has ended."""
        if self._ended:
            return None
        if self._deadline is None:
            return self._step
        left = int((self._deadline - time.monotonic()) * 1000)
        return min(self._step, left) if left > 0 else None

    def take(self, reply: Any) -> Iterator[RunEntry]:
        """The new entries of one ``XREAD`` reply, up to the one that ends the run."""
        self._read()
        # XREAD of one stream: [[key, [(id, fields), ...]]], or empty after the block.
        entries: Sequence[Any] = reply[0][1] if reply else ()
        if entries:
            self._renew()
            self.position = text(entries[-1][0])
        for entry_id, fields in entries:
            entry = self._once.entry(entry_id, fields)
            if entry is None:
                continue
            yield entry
            if entry.ends_run:
                self._ended = True
                return


def run_entries(
    client: redis.Redis | redis.cluster.RedisCluster,
    run_id: str,
    *,
    prefix: str = "langhooks:",
    shards: int | None = None,
    last_id: str = "0-0",
    block_ms: int = 5000,
) -> Iterator[RunEntry]:
    """The records of run ``run_id`` after ``last_id``, as they are published.

    Lazy: blocks for new records while iterated; stops after the record that ends
    the run for good, or when ``block_ms`` passed with nothing new. What a web
    page's event stream needs (``id``, ``event``, the record).

    Args:
        client: a synchronous ``redis.Redis`` or ``redis.cluster.RedisCluster``
            client.
        run_id: the run (its invocation id, ``chain.invocation.id``).
        prefix: the key prefix the publisher uses.
        shards: the publisher's ``shards`` (None: its default for this client).
        last_id: the stream id after which to start (exclusive); "0-0" for the
            run's first record.
        block_ms: how long to wait for a new record before stopping (0 waits
            without end).

    Raises:
        TypeError: a bad client.
        ValueError: the stream holds something that is not a langhooks record.
    """
    check_sync_client(client, "run_entries")
    key = Keys.of(client, prefix, shards).run(run_id)
    return _run_entries(client, key, last_id, block_ms, _Entries())


def _run_entries(
    client: SyncClient, key: str, position: str, block_ms: int, once: _Entries
) -> Iterator[RunEntry]:
    reader = _Reader(client, key, position, block_ms, once)
    while (block := reader.next_block()) is not None:
        try:
            reply: Any = read_stream(
                client, key, reader.position, count=_COUNT, block=block
            )
        except TRANSIENT as fault:
            time.sleep(reader.failed(fault))
            continue
        yield from reader.take(reply)
    reader.done()


async def arun_entries(
    client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster,
    run_id: str,
    *,
    prefix: str = "langhooks:",
    shards: int | None = None,
    last_id: str = "0-0",
    block_ms: int = 5000,
) -> AsyncIterator[RunEntry]:
    """The async twin of ``run_entries``, on a ``redis.asyncio.Redis`` or
    ``redis.asyncio.cluster.RedisCluster`` client.

    Raises:
        TypeError: a bad client.
        ValueError: as ``run_entries``.
    """
    check_async_client(client, "arun_entries")
    key = Keys.of(client, prefix, shards).run(run_id)
    async for entry in _arun_entries(client, key, last_id, block_ms, _Entries()):
        yield entry


async def _arun_entries(
    client: AsyncClient,
    key: str,
    position: str,
    block_ms: int,
    once: _Entries,
) -> AsyncIterator[RunEntry]:
    reader = _Reader(client, key, position, block_ms, once)
    while (block := reader.next_block()) is not None:
        try:
            reply: Any = await aread_stream(
                client, key, reader.position, count=_COUNT, block=block
            )
        except TRANSIENT as fault:
            await asyncio.sleep(reader.failed(fault))
            continue
        for entry in reader.take(reply):
            yield entry
    reader.done()


def follow(
    client: redis.Redis | redis.cluster.RedisCluster,
    run_id: str,
    handler: SyncHandler,
    *,
    prefix: str = "langhooks:",
    shards: int | None = None,
    last_id: str = "0-0",
    block_ms: int = 5000,
) -> FollowPosition:
    """Drive ``handler`` with the records of run ``run_id`` as they are published.

    The handler receives the same methods, in the same order, with arguments equal
    to those the publishing process's handlers received (as ``replay_events``:
    a chain is rebuilt from the recorded messages, with a model and tools that
    cannot be called). Blocks for new records; returns after the record that ends
    the run for good, or when ``block_ms`` passed with nothing new.

    Args:
        client: a synchronous ``redis.Redis`` client.
        run_id: the run to follow (its invocation id, ``chain.invocation.id``).
        handler: a synchronous chain and/or streaming handler.
        prefix: the key prefix the publisher uses.
        last_id: the stream id after which to start (exclusive): "0-0" for the
            run's first record, or what an earlier ``follow`` returned to go on
            with nothing lost or repeated.
        block_ms: how long to wait for a new record before returning (0 waits
            without end).

    Returns:
        The id of the last record delivered (``last_id`` when there was none), a
        ``FollowPosition``: a ``str`` whose ``ended`` says whether that record
        ended the run (False when ``block_ms`` passed first).

    Raises:
        TypeError: a bad client or handler.
        ValueError: the stream holds something that is not a langhooks record, or
            the run's records before ``last_id`` were trimmed.
        redis.RedisError: Redis still failed when ``block_ms`` had passed
            (``RedisClusterException`` on a cluster).
        Exception: what the handler raised.
    """
    check_sync_client(client, "follow")
    replayer = Replayer(handler, "follow", twin="afollow")
    key, once = Keys.of(client, prefix, shards).run(run_id), _Entries()
    if last_id != "0-0":
        # The chains of the records to come are rebuilt from the ones before.
        history: Any = client.xrange(key, "-", last_id)
        _prime(replayer, once, history)
    position, ended = last_id, False
    for entry in _run_entries(client, key, last_id, block_ms, once):
        position, ended = entry.id, entry.ends_run
        replayer.replay(entry.record)
    return FollowPosition(position, ended=ended)


async def afollow(
    client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster,
    run_id: str,
    handler: Handler,
    *,
    prefix: str = "langhooks:",
    shards: int | None = None,
    last_id: str = "0-0",
    block_ms: int = 5000,
) -> FollowPosition:
    """The async twin of ``follow``: a ``redis.asyncio.Redis`` or
    ``redis.asyncio.cluster.RedisCluster`` client, and async handlers are awaited
    (sync ones are called inline).

    Returns:
        As ``follow``.

    Raises:
        TypeError: a bad client or handler.
        ValueError: as ``follow``.
        redis.RedisError: as ``follow``.
        Exception: what the handler raised.
    """
    check_async_client(client, "afollow")
    replayer = Replayer(handler, "afollow", twin=None)
    key, once = Keys.of(client, prefix, shards).run(run_id), _Entries()
    if last_id != "0-0":
        history: Any = await client.xrange(key, "-", last_id)
        _prime(replayer, once, history)
    position, ended = last_id, False
    async for entry in _arun_entries(client, key, last_id, block_ms, once):
        position, ended = entry.id, entry.ends_run
        await replayer.areplay(entry.record)
    return FollowPosition(position, ended=ended)


def _prime(replayer: Replayer, once: _Entries, history: Sequence[Any]) -> None:
    for entry_id, fields in history:
        entry = once.entry(entry_id, fields)
        if entry is not None:
            replayer.prime(entry.record)
