"""``follow`` and ``afollow``: re-drive a local handler from a run's stream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import redis
import redis.asyncio

from .._handler import HandlerBase
from ._redis_replay import Replayer
from ._redis_wire import check_sync_client, ends_run, record_of, run_key, text

__all__ = ["afollow", "follow"]

# Entries one read takes at most.
_COUNT: Final = 1000


def follow(
    client: redis.Redis,
    run_id: str,
    handler: HandlerBase,
    *,
    prefix: str = "langhooks:",
    last_id: str = "0-0",
    block_ms: int = 5000,
) -> str:
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
        The id of the last record delivered (``last_id`` when there was none).

    Raises:
        TypeError: a bad client or handler.
        ValueError: the stream holds something that is not a langhooks record, or
            the run's records before ``last_id`` were trimmed.
        Exception: what the handler raised.
    """
    check_sync_client(client, "follow")
    replayer = Replayer(handler, "follow", is_async=False)
    key = run_key(prefix, run_id)
    if last_id != "0-0":
        # The chains of the records to come are rebuilt from the ones before.
        history: Any = client.xrange(key, "-", last_id)
        for _entry_id, fields in history:
            replayer.prime(record_of(fields))
    position = last_id
    while True:
        reply: Any = client.xread({key: position}, count=_COUNT, block=block_ms)
        entries = _entries(reply)
        if not entries:
            return position
        for entry_id, fields in entries:
            position = text(entry_id)
            replayer.replay(record_of(fields))
            if ends_run(fields):
                return position


async def afollow(
    client: redis.asyncio.Redis,
    run_id: str,
    handler: HandlerBase,
    *,
    prefix: str = "langhooks:",
    last_id: str = "0-0",
    block_ms: int = 5000,
) -> str:
    """The async twin of ``follow``: a ``redis.asyncio`` client, and async handlers
    are awaited (sync ones are called inline).

    Returns:
        As ``follow``.

    Raises:
        TypeError: a bad client or handler.
        ValueError: as ``follow``.
        Exception: what the handler raised.
    """
    if not isinstance(client, redis.asyncio.Redis):
        raise TypeError(
            f"afollow takes a redis.asyncio.Redis client (follow takes a "
            f"redis.Redis), got {client!r}"
        )
    replayer = Replayer(handler, "afollow", is_async=True)
    key = run_key(prefix, run_id)
    if last_id != "0-0":
        history: Any = await client.xrange(key, "-", last_id)
        for _entry_id, fields in history:
            replayer.prime(record_of(fields))
    position = last_id
    while True:
        areply: Any = await client.xread({key: position}, count=_COUNT, block=block_ms)
        entries = _entries(areply)
        if not entries:
            return position
        for entry_id, fields in entries:
            position = text(entry_id)
            await replayer.areplay(record_of(fields))
            if ends_run(fields):
                return position


def _entries(reply: Any) -> Sequence[Any]:
    # XREAD of one stream: [[key, [(id, fields), ...]]], or empty after the block.
    return reply[0][1] if reply else ()
