"""How an event record sits in a Redis stream entry, and which records end a run.

``read_stream``/``aread_stream`` (one stream read, on a node or a cluster) are
gathered here from ``_redis_read_async``, written by hand, and ``_redis_read_sync``,
generated from it by ``scripts/unasync.py``."""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any, Final, TypeAlias, final

import attrs
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

from ..._persist import _codec as codec
from ..._persist._codec import SCHEMA_VERSION, json_text
from ..._persist._events import EventRecord
from ._read_async import aread_stream
from ._read_sync import read_stream

__all__ = [
    "CLUSTER_SHARDS",
    "END_FIELD",
    "EVENT_FIELD",
    "FAULTS",
    "PUBLISHER_FIELD",
    "RECORD_FIELD",
    "TRANSIENT",
    "AsyncClient",
    "Keys",
    "SyncClient",
    "aread_stream",
    "block_step",
    "check_async_client",
    "check_count",
    "check_seconds",
    "check_sync_client",
    "ends_run",
    "field",
    "is_cluster",
    "publisher_of",
    "read_stream",
    "record_json",
    "record_of",
    "text",
]

#: A synchronous client: one Redis node, or a Redis Cluster.
SyncClient: TypeAlias = "redis.Redis | redis.cluster.RedisCluster"
#: An asyncio client: one Redis node, or a Redis Cluster.
AsyncClient: TypeAlias = "redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster"

#: The firehose's shards on a Redis Cluster when ``shards=`` is not given.
CLUSTER_SHARDS: Final = 16

#: What a Redis call may raise when the server or the cluster fails: redis-py's
#: ``RedisError`` and, on a cluster, ``RedisClusterException`` (no subclass of it:
#: no node owns a slot, no node could be reached, keys in several slots).
FAULTS: Final = (redis.RedisError, redis.exceptions.RedisClusterException)

#: The faults a reader waits out (and then reads again from where it was): the
#: connection lost or timing out, a node down or failing over, a moved slot.
TRANSIENT: Final = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.AskError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.RedisClusterException,
)

#: The entry field holding the record, encoded with ``langhooks.codec``.
RECORD_FIELD: Final = "record"
#: The entry field naming the publisher (``seq`` is unique per publisher).
PUBLISHER_FIELD: Final = "publisher"
EVENT_FIELD: Final = "event"
#: Present (value "1") on the entry of the record that ends its run for good.
END_FIELD: Final = "end"


def is_cluster(client: object) -> bool:
    """Whether ``client`` is a Redis Cluster client (sync or asyncio)."""
    return isinstance(
        client, redis.cluster.RedisCluster | redis.asyncio.cluster.RedisCluster
    )


@final
@attrs.frozen
class Keys:
    """Where one prefix's streams are, on one node or on a cluster.

    The single-node layout (one node, one shard): ``{prefix}run:{run_id}`` and the
    firehose ``{prefix}events``. The sharded layout (a cluster, or ``shards`` > 1):
    shard ``k`` of ``shards`` is ``{prefix}{{prefix}k}:events`` and the stream of
    a run on it ``{prefix}{{prefix}k}:run:{run_id}``. Both keys begin with the
    same text, which holds their hash tag whatever the prefix holds (the first
    ``{`` and the ``}`` after it), so a run's stream and its shard share a slot and
    one script writes both. A run is on shard ``crc32(run_id) % shards`` (records
    outside a run on shard 0). Every publisher and reader of a prefix must use the
    same ``shards``.
    """

    prefix: str
    shards: int
    sharded: bool

    @classmethod
    def of(cls, client: object, prefix: str, shards: int | None) -> Keys:
        """The layout for ``client`` (the default ``shards``: 1 on one node,
        ``CLUSTER_SHARDS`` on a cluster).

        Raises:
            TypeError: ``prefix`` is not a str, or ``shards`` not an int >= 1.
        """
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {prefix!r}")
        cluster = is_cluster(client)
        if shards is None:
            shards = CLUSTER_SHARDS if cluster else 1
        check_count("shards", shards, 1)
        return cls(prefix, shards, cluster or shards > 1)

    def shard(self, run_id: str | None) -> int:
        """The firehose shard the records of ``run_id`` go to."""
        if run_id is None or self.shards == 1:
            return 0
        return zlib.crc32(run_id.encode("utf-8", "surrogatepass")) % self.shards

    def _base(self, shard: int) -> str:
        # The text every key of a shard begins with, hash tag included.
        return f"{self.prefix}{{{self.prefix}{shard}}}:"

    def run(self, run_id: str) -> str:
        """The stream of one run's records."""
        if not self.sharded:
            return f"{self.prefix}run:{run_id}"
        return f"{self._base(self.shard(run_id))}run:{run_id}"

    def run_pattern(self) -> str:
        """A ``SCAN MATCH`` pattern for every run stream (and maybe more keys:
        ``run_id_of`` tells)."""
        prefix = _glob(self.prefix)
        if not self.sharded:
            return f"{prefix}run:*"
        return f"{prefix}{{{prefix}*}}:run:*"

    def run_id_of(self, key: str) -> str | None:
        """The run id of a key ``run`` gives (None: not such a key)."""
        if not self.sharded:
            base = f"{self.prefix}run:"
            return key[len(base) :] if key.startswith(base) else None
        opening = f"{self.prefix}{{{self.prefix}"
        if not key.startswith(opening):
            return None
        # The rest: the shard, "}:run:", the run id (the prefix may hold "}:").
        _shard, _, run_id = key[len(opening) :].partition("}:run:")
        return run_id if run_id and self.run(run_id) == key else None

    def firehose(self, shard: int = 0) -> str:
        """Firehose shard ``shard`` (the firehose itself on one node)."""
        if not self.sharded:
            return f"{self.prefix}events"
        return f"{self._base(shard)}events"

    def firehoses(self) -> list[str]:
        """Every shard of the firehose."""
        return [self.firehose(shard) for shard in range(self.shards)]

    def dead(self) -> str:
        """The stream of records consumer groups could not decode (dead letters)."""
        return f"{self.prefix}dead"


def _glob(text: str) -> str:
    """``text`` as a literal in a ``SCAN MATCH`` pattern."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def record_json(record: EventRecord) -> str:
    """``codec.dumps(record)``, the same text, for a record an ``EventRecorder``
    made: its payload is JSON data already (the recorder encoded it), so it is not
    checked and copied again, as the recorder's own file sink writes it."""
    return json_text(
        {
            "type": "EventRecord",
            "version": SCHEMA_VERSION,
            "seq": record.seq,
            "event": record.event,
            "run_id": record.run_id,
            "invocation_id": record.invocation_id,
            "parent_id": record.parent_id,
            "time": record.time.isoformat(),
            "payload": dict(record.payload),
        }
    )


def text(value: bytes | str) -> str:
    """A field or id as ``str``, whatever the client's ``decode_responses``."""
    return value.decode() if isinstance(value, bytes) else value


def field(fields: Mapping[Any, Any], name: str) -> Any:
    """The value of an entry's field ``name`` (None when it has none), whatever
    the client's ``decode_responses``."""
    return next((v for k, v in fields.items() if text(k) == name), None)


def record_of(fields: Mapping[Any, Any] | None) -> EventRecord:
    """The record a stream entry carries.

    Raises:
        ValueError: the entry carries no langhooks event record (or none: a
            pending entry trimmed from its stream comes back without fields).
    """
    data = None if fields is None else field(fields, RECORD_FIELD)
    try:
        record = None if data is None else codec.loads(text(data))
    except TypeError:  # JSON, but not an object
        record = None
    if isinstance(record, EventRecord):
        return record
    shown = repr(None if fields is None else dict(fields))
    raise ValueError(
        f"a stream entry without a langhooks event record in field "
        f"{RECORD_FIELD!r}: {shown if len(shown) <= 200 else shown[:197] + '...'}"
    )


def publisher_of(fields: Mapping[Any, Any]) -> str:
    """The publisher id of an entry ("" when it has none)."""
    return text(field(fields, PUBLISHER_FIELD) or "")


def ends_run(fields: Mapping[Any, Any]) -> bool:
    """Whether an entry carries the record that ends its run for good (the
    publisher marks it: nothing of that run follows it)."""
    return any(text(key) == END_FIELD for key in fields)


def check_count(name: str, value: object, minimum: int) -> None:
    """Raise ``TypeError`` unless ``value`` is an int of at least ``minimum``."""
    if type(value) is not int or value < minimum:
        raise TypeError(f"{name} must be an int >= {minimum}, got {value!r}")


def check_seconds(name: str, value: object) -> None:
    """Raise ``TypeError`` unless ``value`` is a number of seconds >= 0."""
    if type(value) not in (int, float) or value < 0:  # type: ignore[operator]
        raise TypeError(f"{name} must be seconds >= 0, got {value!r}")


def check_sync_client(client: object, what: str) -> None:
    """Raise ``TypeError`` unless ``client`` is a synchronous ``redis.Redis`` or
    ``redis.cluster.RedisCluster``."""
    if not isinstance(client, redis.Redis | redis.cluster.RedisCluster):
        raise TypeError(
            f"{what} takes a synchronous redis.Redis or redis.cluster.RedisCluster "
            f"client (redis.asyncio clients are for the async twins, afollow and "
            f"arun_entries), got {client!r}"
        )


def check_async_client(client: object, what: str) -> None:
    """Raise ``TypeError`` unless ``client`` is a ``redis.asyncio.Redis`` or
    ``redis.asyncio.cluster.RedisCluster``."""
    if not isinstance(client, redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster):
        raise TypeError(
            f"{what} takes a redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster "
            f"client (the sync twin takes a redis.Redis or redis.cluster.RedisCluster)"
            f", got {client!r}"
        )


def _connection_kwargs(client: SyncClient | AsyncClient) -> Mapping[str, Any]:
    if isinstance(client, redis.cluster.RedisCluster):
        return client.nodes_manager.connection_kwargs
    if isinstance(client, redis.asyncio.cluster.RedisCluster):
        kwargs: Mapping[str, Any] = client.connection_kwargs
        return kwargs
    return client.connection_pool.connection_kwargs


def block_step(client: SyncClient | AsyncClient, block_ms: int) -> int:
    """The longest ``BLOCK`` (ms) one read may ask for on ``client``.

    A blocking read must return before the client's ``socket_timeout`` (5 s by
    default in recent redis-py) or it fails with a timeout: longer waits are made
    of several reads, each this long at most. ``block_ms`` 0 means without end.
    """
    timeout = _connection_kwargs(client).get("socket_timeout")
    limit = None if not timeout else max(1, int(timeout * 1000) - 500)
    if limit is None:
        return block_ms
    return limit if block_ms == 0 else min(block_ms, limit)
