"""The publisher's outbox: a bounded buffer that one thread sends to Redis in batches.

Handlers call ``put`` on the thread that fires the event; a flusher thread takes
whatever is buffered and sends it as one call of a Lua script, which does per record
what a pipeline would (two ``XADD``s: the run's stream and the firehose, both
``MAXLEN ~``) and then one ``EXPIRE`` per run stream the batch touched, so a run's
stream expires ``expire_after`` seconds after its last record. One command per batch
instead of two per record: redis-py packs and parses 2N commands in Python, which
costs more than everything else the publisher does (see docs/performance.md). The
script names every key it touches, so on a Redis Cluster they must share a slot: the
key layout (``Keys``) puts a run's stream in the slot of its firehose shard, and a
batch is sent as one script call per shard it touches.

A batch leaves when ``batch_size`` records wait, when the oldest has waited
``flush_interval``, or at once when a caller asks for a flush (before a terminal or
review event). While a round trip is in flight, new records accumulate: under load
batches grow by themselves, and a quiet stream costs one round trip per record.

What happens when Redis is slower than the model: the buffer holds ``max_buffer``
records; a full buffer blocks the producer (back-pressure) for up to
``block_timeout`` seconds, then drops the record, counted in ``lost``; while the
buffer stays full after such a timeout, further records are dropped at once instead
of waiting again. A batch Redis refuses or that times out is lost as a whole and
counted, shard by shard (a cluster node down loses only the batches of its shards).
A node whose send failed is paused: for a while its records are lost at once, without
a round trip, and then the next batch for it tries again (``Pauses``). Without the
pause every batch for a dead node would wait out the client's own retries (about 4 s
a call with redis-py 8's defaults), and the records of every live node, queued
behind it on the one flusher thread, would reach Redis seconds late.
Whatever a send raises (``RedisError``, a cluster's ``RedisClusterException``, or
anything else) is a loss: the flusher thread never stops before ``close``. The
first loss is logged once at WARNING. Nothing grows without bound and nothing is
lost silently.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Final, final

import attrs
import redis.cluster

from ._wire import SyncClient

__all__ = ["Outbox", "Pauses", "Pending"]

logger: Final = logging.getLogger("langhooks")


# KEYS: the firehose shard, then the run streams of the batch (all in its slot).
# ARGV: maxlen, expire_after, the publisher id, then per record: its stream's index
# in KEYS (1: none), event name, record JSON, "1" when it ends its run.
_SEND: Final = """
local maxlen, publisher = ARGV[1], ARGV[3]
for i = 4, #ARGV, 4 do
    local fields = {'event', ARGV[i + 1], 'publisher', publisher,
                    'record', ARGV[i + 2]}
    if ARGV[i + 3] == '1' then
        fields[7] = 'end'
        fields[8] = '1'
    end
    local run = tonumber(ARGV[i])
    if run > 1 then
        redis.call('XADD', KEYS[run], 'MAXLEN', '~', maxlen, '*', unpack(fields))
    end
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, '*', unpack(fields))
end
for k = 2, #KEYS do
    redis.call('EXPIRE', KEYS[k], ARGV[2])
end
return 0
"""


@attrs.frozen
class Pending:
    """One record waiting to be sent: its firehose shard, its run's stream (None:
    the firehose only, in the same slot as the shard), its event name, the record
    as JSON, and whether it ends its run."""

    firehose: str
    key: str | None
    event: str
    record: str
    end: bool


@final
class Pauses:
    """Which Redis nodes are paused after a failed send, and until when.

    A node is the cluster node that owns a shard's slot (by the client's current
    view of the cluster; after a failover the slot's new owner is another node and
    is not paused), or the one server of a plain client. The first failure pauses a
    node for ``first`` seconds; each failure of the send that ends a pause doubles
    it, up to ``longest``; a send that succeeds ends it. On a cluster, the send that
    ends a pause is preceded by a ``PING`` on the node's own connection, which
    redis-py never retries, so a node still down costs one refused connection (or
    ``socket_connect_timeout``) instead of the cluster client's retries.
    """

    def __init__(self, client: SyncClient, *, first: float, longest: float) -> None:
        self._cluster: Final = (
            client if isinstance(client, redis.cluster.RedisCluster) else None
        )
        self._first: Final = first
        self._longest: Final = longest
        # node name -> (paused until, the pause's length)
        self._paused: dict[str, tuple[float, float]] = {}

    def node(self, key: str) -> tuple[str, redis.cluster.ClusterNode | None]:
        """The name of the node ``key`` lives on ("" for a plain client's one
        server; the key itself when the client knows no owner), and the node."""
        if self._cluster is None:
            return "", None
        try:
            owner = self._cluster.get_node_from_key(key)  # type: ignore[no-untyped-call]
        except Exception:  # the client knows no owner: the key stands for its node
            return key, None
        return str(owner.name), owner

    def check(self, key: str) -> tuple[str, Exception | None]:
        """Whether records for ``key`` may be sent now: the node's name, and the
        reason they may not (the node is paused, or its probe failed) or None."""
        name, owner = self.node(key)
        pause = self._paused.get(name)
        if pause is None:
            return name, None
        if time.monotonic() < pause[0]:
            return name, NodePaused(name)
        connection = None if owner is None else owner.redis_connection
        if connection is not None:
            try:
                connection.ping()
            except Exception as error:  # the node is still down
                self.settled(name, error)
                return name, error
        return name, None

    def settled(self, name: str, error: Exception | None) -> None:
        """A send to node ``name`` (or its probe) ended: with ``error`` it is
        paused, longer if it was paused before; without, it is not paused."""
        if error is None:
            self._paused.pop(name, None)
            return
        pause = self._paused.get(name)
        length = self._first if pause is None else min(pause[1] * 2, self._longest)
        self._paused[name] = (time.monotonic() + length, length)


#: How long a node is paused after its first failed send, and at the most.
PAUSE_FIRST: Final = 0.5
PAUSE_LONGEST: Final = 8.0


@final
class Outbox:
    """Bounded buffer + flusher thread; see the module docstring for the policy."""

    def __init__(
        self,
        client: SyncClient,
        *,
        publisher: str,
        maxlen: int,
        expire_after: int,
        batch_size: int,
        flush_interval: float,
        max_buffer: int,
        block_timeout: float,
    ) -> None:
        self._client: Final = client
        self._script: Final = client.register_script(_SEND)
        self._pauses: Final = Pauses(client, first=PAUSE_FIRST, longest=PAUSE_LONGEST)
        self._publisher: Final = publisher
        self._maxlen: Final = maxlen
        self._expire_after: Final = expire_after
        self._batch_size: Final = batch_size
        self._flush_interval: Final = flush_interval
        self._max_buffer: Final = max_buffer
        self._block_timeout: Final = block_timeout
        self._lock: Final = threading.Condition(threading.Lock())
        self._buffer: list[Pending] = []
        # Records ever put (dropped ones too), and ever settled (sent or lost):
        # flush waits for these to meet.
        self._put = 0
        self._settled = 0
        self._urgent = False
        self._overflowing = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.sent = 0
        self.lost = 0
        # False from a failed batch to the next one Redis accepts.
        self.healthy = True
        self._warned = False

    def forked(self, publisher: str) -> Outbox:
        """A new outbox with this one's settings, for a child process after
        ``fork()``: its own lock, empty buffer, counters at zero and no thread yet
        (the parent's thread does not exist in the child, and the parent sends the
        records it buffered). A closed outbox stays closed."""
        child = Outbox(
            self._client,
            publisher=publisher,
            maxlen=self._maxlen,
            expire_after=self._expire_after,
            batch_size=self._batch_size,
            flush_interval=self._flush_interval,
            max_buffer=self._max_buffer,
            block_timeout=self._block_timeout,
        )
        # Read without the lock: a thread of the parent may have held it at the
        # fork, and in the child nothing else runs yet.
        child._closed = self._closed
        return child

    # --- producer side ------------------------------------------------------------

    def put(self, pending: Pending) -> None:
        """Buffer one record, waiting for room as the overflow policy says."""
        with self._lock:
            self._put += 1
            if self._closed:
                self._lose(1, "the publisher is closed")
                return
            if self._thread is None:
                self._start()
            if len(self._buffer) >= self._max_buffer and not self._wait_for_room():
                self._lose(
                    1,
                    f"Redis did not keep up: the buffer of {self._max_buffer} records "
                    f"stayed full for {self._block_timeout}s",
                )
                return
            self._buffer.append(pending)
            if len(self._buffer) == 1 or len(self._buffer) >= self._batch_size:
                self._lock.notify_all()

    def _wait_for_room(self) -> bool:
        # Called with the lock held and the buffer full.
        if self._overflowing:
            return False
        deadline = time.monotonic() + self._block_timeout
        while len(self._buffer) >= self._max_buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self._closed:
                self._overflowing = True
                return False
            self._lock.wait(left)
        return True

    def flush(self, timeout: float | None) -> bool:
        """Send everything put so far now; wait until it is sent or lost.

        Returns:
            True when every record put before the call is settled, False when
            ``timeout`` (seconds) passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            target = self._put
            if self._settled >= target:
                return True
            self._urgent = True
            self._lock.notify_all()
            while self._settled < target:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def close(self, timeout: float | None) -> bool:
        """Flush, then stop the flusher thread. Later records are lost (counted).

        Returns:
            Whether everything was settled within ``timeout``.
        """
        settled = self.flush(timeout)
        thread = self.stop()
        if thread is not None:
            thread.join(timeout)
        return settled

    def stop(self) -> threading.Thread | None:
        """Let the flusher thread send what is buffered and end; take no more.

        Returns:
            The flusher thread, if it was started.
        """
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            return self._thread

    def _lose(self, count: int, reason: str) -> None:
        # Called with the lock held.
        self.lost += count
        self._settled += count
        if not self._warned:
            self._warned = True
            logger.warning(
                "langhooks: RedisEventPublisher lost %d event record(s): %s; the run "
                "goes on, further losses are counted in RedisEventPublisher.lost "
                "and not logged again",
                count,
                reason,
            )
        self._lock.notify_all()

    # --- flusher side -------------------------------------------------------------

    def _start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name="langhooks-redis-publisher", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            groups: dict[str, list[Pending]] = {}
            for pending in batch:
                groups.setdefault(pending.firehose, []).append(pending)
            for firehose, group in groups.items():
                node, error = self._pauses.check(firehose)
                if error is None:
                    error = self._send(firehose, group)
                    self._pauses.settled(node, error)
                self._settle(group, error)

    def _settle(self, group: Sequence[Pending], error: Exception | None) -> None:
        with self._lock:
            if error is None:
                self.sent += len(group)
                self._settled += len(group)
                self._overflowing = False
                self.healthy = True
                self._lock.notify_all()
            else:
                self.healthy = False
                self._lose(len(group), f"{type(error).__name__}: {error}")

    def _next_batch(self) -> list[Pending] | None:
        with self._lock:
            while not self._buffer:
                if self._closed:
                    return None
                self._lock.wait()
            deadline = time.monotonic() + self._flush_interval
            while (
                not self._urgent
                and not self._closed
                and len(self._buffer) < self._batch_size
            ):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
            batch = self._buffer[: self._batch_size]
            del self._buffer[: self._batch_size]
            if not self._buffer:
                self._urgent = False
            self._lock.notify_all()
            return batch

    def _send(self, firehose: str, batch: Sequence[Pending]) -> Exception | None:
        """Send one shard's records in one script call; the error, if it failed."""
        keys: dict[str, int] = {firehose: 1}
        args: list[str | int] = [self._maxlen, self._expire_after, self._publisher]
        for pending in batch:
            run = (
                1
                if pending.key is None
                else keys.setdefault(pending.key, len(keys) + 1)
            )
            args += (run, pending.event, pending.record, "1" if pending.end else "")
        try:
            self._script(keys=list(keys), args=args)
        except Exception as error:  # counted and logged as a loss
            # RedisError, a cluster's RedisClusterException (no RedisError), or a
            # failure inside redis-py during a failover: the thread must go on.
            return error
        return None


class NodePaused(Exception):
    """The reason a paused node's records are lost without a round trip."""

    def __init__(self, node: str) -> None:
        where = f"Redis node {node}" if node else "Redis"
        super().__init__(
            f"{where} failed just before; its records are dropped for a while"
        )
