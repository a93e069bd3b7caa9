"""Reading one Redis stream, on one node or on a cluster. (The async module is
written by hand; the sync one is generated from it by ``scripts/unasync.py``.)"""

from __future__ import annotations

from typing import Any

import redis.asyncio
import redis.asyncio.cluster

__all__ = ["aread_stream"]


def _read_args(
    group: tuple[str, str] | None,
    key: str,
    position: str,
    count: int,
    block: int | None,
) -> list[Any]:
    head: list[Any] = ["XREAD"] if group is None else ["XREADGROUP", "GROUP", *group]
    wait = [] if block is None else ["BLOCK", block]
    return [*head, "COUNT", count, *wait, "STREAMS", key, position]


async def aread_stream(
    client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster,
    key: str,
    position: str,
    *,
    count: int,
    block: int | None,
    group: tuple[str, str] | None = None,
) -> Any:
    """``XREAD`` (or, with ``group=(group, consumer)``, ``XREADGROUP``) of one
    stream.

    On a cluster the command goes straight to the node owning the key's slot:
    redis-py finds the keys of these commands by asking its default node
    (``COMMAND GETKEYS``), so with that node down every read would fail, on
    every node, until the client is made again.
    """
    if isinstance(client, redis.asyncio.cluster.RedisCluster):
        # Its slots are known after its first command, or this.  # unasync: remove
        await client.initialize()  # unasync: remove
        node = client.get_node_from_key(key)
        return await client.execute_command(
            *_read_args(group, key, position, count, block), target_nodes=node
        )
    if group is None:
        return await client.xread({key: position}, count=count, block=block)
    return await client.xreadgroup(*group, {key: position}, count=count, block=block)
