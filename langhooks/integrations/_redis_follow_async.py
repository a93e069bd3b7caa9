"""Reading a run's stream: ``arun_entries`` (the records with their stream ids) and
``afollow``, which re-drives a local handler with them. (The async module is
written by hand; the sync one is generated from it by ``scripts/unasync.py``. What
both share is in ``_redis_entries``.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio
import redis.asyncio.cluster

from .._core._twins_async import asleep
from .._persist._events import Handler
from ._redis_entries import _COUNT, RunEntry, _Entries, _prime, _Reader, _replayer
from ._redis_position import FollowPosition
from ._redis_read_async import aread_stream
from ._redis_wire import TRANSIENT, Keys, check_async_client

__all__ = ["afollow", "arun_entries"]


def arun_entries(
    client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster,
    run_id: str,
    *,
    prefix: str = "langhooks:",
    shards: int | None = None,
    last_id: str = "0-0",
    block_ms: int = 5000,
) -> AsyncIterator[RunEntry]:
    """The records of run ``run_id`` after ``last_id``, as they are published.

    Lazy: waits for new records while iterated; stops after the record that ends
    the run for good, or when ``block_ms`` passed with nothing new. What a web
    page's event stream needs (``id``, ``event``, the record). The client and
    arguments are checked when called, before the first record is asked for.

    Args:
        client: a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``
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
    check_async_client(client, "arun_entries")
    key = Keys.of(client, prefix, shards).run(run_id)
    return _arun_entries(client, key, last_id, block_ms, _Entries())


async def _arun_entries(
    client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster,
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
            await asleep(reader.failed(fault))
            continue
        for entry in reader.take(reply):
            yield entry
    reader.done()


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
    """Drive ``handler`` with the records of run ``run_id`` as they are published.

    The handler receives the same methods, in the same order, with arguments equal
    to those the publishing process's handlers received (as ``areplay_events``:
    a chain is rebuilt from the recorded messages, with a model and tools that
    cannot be called). Waits for new records; returns after the record that ends
    the run for good, or when ``block_ms`` passed with nothing new.

    Args:
        client: a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``
            client.
        run_id: the run to follow (its invocation id, ``chain.invocation.id``).
        handler: a chain and/or streaming handler, async (its methods awaited) or
            sync (called inline).
        prefix: the key prefix the publisher uses.
        shards: the publisher's ``shards`` (None: its default for this client).
        last_id: the stream id after which to start (exclusive): "0-0" for the
            run's first record, or what an earlier ``afollow`` returned to go on
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
    check_async_client(client, "afollow")
    replayer = _replayer(handler, sync=False)
    key, once = Keys.of(client, prefix, shards).run(run_id), _Entries()
    if last_id != "0-0":
        # The chains of the records to come are rebuilt from the ones before.
        history: Any = await client.xrange(key, "-", last_id)
        _prime(replayer, once, history)
    position, ended = last_id, False
    async for entry in _arun_entries(client, key, last_id, block_ms, once):
        position, ended = entry.id, entry.ends_run
        await replayer.areplay(entry.record)
    return FollowPosition(position, ended=ended)
