"""``RedisEventConsumer``: consumer groups over the firehose stream."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, final

import redis
import redis.cluster

from ..._persist._events import EventRecord, Replayer, SyncHandler
from ._wire import (
    TRANSIENT,
    Keys,
    SyncClient,
    block_step,
    check_count,
    check_sync_client,
    is_cluster,
    publisher_of,
    read_stream,
    record_of,
    text,
)

__all__ = ["RedisEventConsumer"]

logger: Final = logging.getLogger("langhooks")

# How many handled records ``dedupe`` keeps.
_REMEMBERED: Final = 100_000
# How many runs' rebuilt chains a member keeps.
_RUNS: Final = 1000
# The approximate cap of the dead-letter stream.
_DEAD_MAXLEN: Final = 100_000
# With several shards: the longest one blocking read of one shard waits (ms) before
# every shard is read again.
_SLICE_MS: Final = 100
# The pauses of ``run`` while Redis fails: from the first to the longest (seconds).
_PAUSE: Final = 0.05
_MAX_PAUSE: Final = 1.0


@final
class _Shard:
    """One firehose shard as this member reads it."""

    def __init__(self, key: str) -> None:
        self.key: Final = key
        self.ready = False
        # After a (re)start: first what this member took before and never acked.
        self.own_pending = True
        self.claim_from = "0-0"


@final
class RedisEventConsumer:
    """Delivers every record of the firehose stream to a handler, as one member
    of a consumer group.

    Every publisher also appends each record to the firehose ``{prefix}events``, and
    groups read that one stream (on a Redis Cluster, or with ``shards`` > 1, every shard
    of it, with one group of this name per shard): a group (an audit writer, a metrics
    exporter) sees the records of every run without knowing the run ids, and its members
    share the work. Within a group each record is delivered once under normal operation,
    and acknowledged (``XACK``) only after the handler returned. Records a member took
    and never acknowledged (it died) are claimed by another member once they have been
    pending ``claim_idle_ms`` (``XAUTOCLAIM``, looked for every half of it): delivery is
    at least once across a crash. With ``dedupe=True`` a member skips a record it has
    already handled (by its publisher and ``seq``), which covers a record claimed back
    from it; make effects idempotent by ``record.seq`` where a crash between the handler
    and its acknowledgement must not repeat them.

    The group is created on first use, from the start of the firehose (a new group
    reads what the firehose still holds). A consumer is one member: call it from
    one thread; run more members (with their own names) for more throughput.
    ``run`` goes on through transient faults (connection lost, a cluster node down
    or failing over): it pauses, logs once, and reads again, first its own pending
    records.

    A record that cannot be decoded (not a langhooks record, written by a newer
    langhooks, or a payload of the wrong shape) never wedges the group: it is
    logged at WARNING and left pending for another try, the records after it are
    handled, and once it has been delivered ``max_attempts`` times it is copied to
    the dead-letter stream ``{prefix}dead`` (its fields, plus ``error``,
    ``group``, ``consumer`` and ``entry``, its id in the firehose), acknowledged,
    logged and counted in ``dead_letters``.

    Args:
        client: a synchronous ``redis.Redis`` or ``redis.cluster.RedisCluster``
            client.
        group: the consumer group's name.
        consumer: this member's name, stable across restarts (a restarted member
            first takes back its own pending records).
        handler: a langhooks handler; each record drives its ``on_*`` method as
            ``replay_events`` does.
        prefix: the key prefix the publishers use.
        shards: the publishers' ``shards`` (None: their default for this client).
        claim_idle_ms: how long a record stays pending on another member before
            this one claims it.
        dedupe: skip records this member already handled.
        count: the most records one read (or claim) takes.
        max_attempts: how many deliveries a record that cannot be decoded gets
            before it goes to the dead-letter stream.

    Raises:
        TypeError: a bad client, handler or option.
    """

    def __init__(
        self,
        client: redis.Redis | redis.cluster.RedisCluster,
        *,
        group: str,
        consumer: str,
        handler: SyncHandler,
        prefix: str = "langhooks:",
        shards: int | None = None,
        claim_idle_ms: int = 30_000,
        dedupe: bool = False,
        count: int = 100,
        max_attempts: int = 3,
    ) -> None:
        check_sync_client(client, "RedisEventConsumer")
        keys = Keys.of(client, prefix, shards)
        names: tuple[tuple[str, object], ...] = (
            ("group", group),
            ("consumer", consumer),
        )
        for name, value in names:
            if not isinstance(value, str) or not value:
                raise TypeError(f"{name} must be a non-empty str, got {value!r}")
        check_count("claim_idle_ms", claim_idle_ms, 0)
        check_count("count", count, 1)
        check_count("max_attempts", max_attempts, 1)
        self._max_attempts: Final = max_attempts
        self._dead: Final = keys.dead()
        # One transaction for the dead letter and its ack: on a cluster they are in
        # different slots, and the dead letter is written first (at least once).
        self._atomic_bury: Final = not is_cluster(client)
        self.dead_letters: int = 0
        """How many records this member moved to the dead-letter stream."""
        self._count: Final = count
        self._client: Final = client
        self._group: Final = group
        self._consumer: Final = consumer
        self._replays: Final = _RunReplays(client, handler, keys)
        self._shards: Final = [_Shard(key) for key in keys.firehoses()]
        self._turn = 0
        self._swept = -float("inf")
        self._claim_idle_ms: Final = claim_idle_ms
        self._seen: OrderedDict[tuple[str, int], None] | None = (
            OrderedDict() if dedupe else None
        )

    def run_once(self, block_ms: int = 1000) -> int:
        """Handle what is available: records claimed from dead members first, then
        new ones, waiting up to ``block_ms`` for new ones when there are none (at
        most half a second less than the client's ``socket_timeout``; 0 waits
        without end when the client has none). With several shards, each is read
        in turn, and a wait blocks on one shard at a time for at most 100 ms.

        Returns:
            How many records the handler received in this call.

        Raises:
            Exception: what the handler raised; its record stays pending (another
                member claims it after ``claim_idle_ms``) and nothing after it in
                this call is handled.
            redis.RedisError: Redis failed (``RedisClusterException`` on a
                cluster); what this member read and did not acknowledge is read
                again by the next call.
        """
        try:
            return self._run_once(block_ms)
        except TRANSIENT:
            for shard in self._shards:
                shard.own_pending = True
            raise

    def _run_once(self, block_ms: int) -> int:
        handled = 0
        # Records idle for claim_idle_ms are looked for every half of it.
        now = time.monotonic()
        sweep = now - self._swept >= self._claim_idle_ms / 2000
        if sweep:
            self._swept = now
        for shard in self._shards:
            self._ensure_group(shard)
            if shard.own_pending:
                # After a restart: what this member took and never acknowledged.
                entries = self._read(shard, "0", None)
                shard.own_pending = bool(entries)
                handled += self._handle(shard, entries)
            if sweep:
                handled += self._handle(shard, self._claim(shard))
        if handled:
            return handled
        step = block_step(self._client, block_ms)
        if len(self._shards) == 1:
            return self._handle(self._shards[0], self._read(self._shards[0], ">", step))
        deadline = None if step == 0 else time.monotonic() + step / 1000
        while True:
            for shard in self._shards:
                handled += self._handle(shard, self._read(shard, ">", None))
            left = None if deadline is None else deadline - time.monotonic()
            if handled or (left is not None and left <= 0):
                return handled
            shard = self._shards[self._turn % len(self._shards)]
            self._turn += 1
            block = _SLICE_MS if left is None else min(_SLICE_MS, int(left * 1000))
            # What this read brings is returned after the sweep at the top, which
            # also takes what came meanwhile on the other shards.
            handled = self._handle(shard, self._read(shard, ">", max(1, block)))

    def run(self, stop: threading.Event | None = None) -> None:
        """Call ``run_once`` until ``stop`` is set (forever without one); a
        transient fault is logged once, then the calls go on after a pause."""
        pause, failing = _PAUSE, False
        while stop is None or not stop.is_set():
            try:
                self.run_once()
            except TRANSIENT as fault:
                if not failing:
                    logger.warning(
                        "langhooks: RedisEventConsumer %r of group %r: Redis failed "
                        "(%s: %s); reading again",
                        *(self._consumer, self._group, type(fault).__name__, fault),
                    )
                failing = True
                time.sleep(pause)
                pause = min(_MAX_PAUSE, pause * 2)
                continue
            pause, failing = _PAUSE, False

    def _ensure_group(self, shard: _Shard) -> None:
        if shard.ready:
            return
        try:
            self._client.xgroup_create(shard.key, self._group, "0", mkstream=True)
        except redis.ResponseError as error:
            if not str(error).startswith("BUSYGROUP"):
                raise
        shard.ready = True

    def _read(self, shard: _Shard, start: str, block_ms: int | None) -> Sequence[Any]:
        reply: Any = read_stream(
            self._client,
            shard.key,
            start,
            count=self._count,
            block=block_ms,
            group=(self._group, self._consumer),
        )
        return reply[0][1] if reply else []

    def _claim(self, shard: _Shard) -> Sequence[Any]:
        reply: Any = self._client.xautoclaim(
            shard.key,
            self._group,
            self._consumer,
            self._claim_idle_ms,
            shard.claim_from,
            count=self._count,
        )
        # The cursor walks the pending list; "0-0" means it went round once.
        shard.claim_from = text(reply[0])
        claimed: Sequence[Any] = reply[1]
        return claimed

    def _handle(self, shard: _Shard, entries: Sequence[Any]) -> int:
        handled = 0
        for entry_id, fields in entries:
            try:
                record = record_of(fields)
                key = (publisher_of(fields), record.seq)
                seen = self._seen is not None and key in self._seen
                call = None if seen else self._replays.call(record, key)
            except ValueError as error:
                self._undecodable(shard, entry_id, fields, error)
                continue
            if not seen:
                if call is not None:
                    method, args = call
                    method(*args)
                handled += 1
                self._remember(key)
            self._client.xack(shard.key, self._group, entry_id)
        return handled

    def _undecodable(
        self, shard: _Shard, entry_id: Any, fields: Any, error: ValueError
    ) -> None:
        """Leave a record that cannot be decoded pending for another try, or after
        ``max_attempts`` deliveries move it to the dead-letter stream."""
        if not fields:
            # Deleted from the firehose (trimmed by MAXLEN) while pending: nothing
            # is left to retry, and Redis no longer counts its deliveries.
            self._bury(
                shard,
                entry_id,
                {},
                "the entry left the stream (trimmed?) before "
                "this group handled it: its record is lost",
                1,
            )
            return
        pending: Any = self._client.xpending_range(
            shard.key, self._group, min=entry_id, max=entry_id, count=1
        )
        attempts = pending[0]["times_delivered"] if pending else self._max_attempts
        entry = text(entry_id)
        if attempts < self._max_attempts:
            # Read this member's pending records again on the next call.
            shard.own_pending = True
            logger.warning(
                "langhooks: RedisEventConsumer %r of group %r cannot decode entry %s "
                "of %s (delivery %d of %d; it stays pending): %r",
                *(self._consumer, self._group, entry, shard.key),
                *(attempts, self._max_attempts, str(error)),
            )
            return
        self._bury(shard, entry_id, fields, str(error), attempts)

    def _bury(
        self,
        shard: _Shard,
        entry_id: Any,
        fields: Mapping[Any, Any],
        error: str,
        attempts: int,
    ) -> None:
        """Copy an entry to the dead-letter stream and acknowledge it, at once."""
        entry = text(entry_id)
        dead: dict[Any, Any] = dict(fields)
        dead.update(
            error=error, group=self._group, consumer=self._consumer, entry=entry
        )
        if self._atomic_bury:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.xadd(self._dead, dead, maxlen=_DEAD_MAXLEN, approximate=True)
                pipe.xack(shard.key, self._group, entry_id)
                pipe.execute()
        else:
            self._client.xadd(self._dead, dead, maxlen=_DEAD_MAXLEN, approximate=True)
            self._client.xack(shard.key, self._group, entry_id)
        self.dead_letters += 1
        logger.error(
            "langhooks: RedisEventConsumer %r of group %r moved entry %s of %s to "
            "the dead-letter stream %s after %d deliveries: %r",
            *(self._consumer, self._group, entry, shard.key, self._dead),
            *(attempts, error),
        )

    def _remember(self, key: tuple[str, int]) -> None:
        # Only after the handler returned: a record whose handler raised must be
        # handled when it comes back.
        if self._seen is not None:
            self._seen[key] = None
            if len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)


@final
class _RunReplays:
    """Delivers records of many runs, each run's chain rebuilt from its records.

    A member of a group sees only some of a run's records (the others went to
    other members): when a record refers to messages this member never saw, the
    run's earlier records are read from its stream to rebuild them.
    """

    def __init__(self, client: SyncClient, handler: SyncHandler, keys: Keys) -> None:
        Replayer(handler, "RedisEventConsumer", twin="afollow")  # checks the handler
        self._client: Final = client
        self._handler: Final = handler
        self._keys: Final = keys
        self._runs: OrderedDict[str | None, Replayer] = OrderedDict()

    def call(
        self, record: EventRecord, key: tuple[str, int]
    ) -> tuple[Callable[..., Any], list[Any]] | None:
        """The handler's method for ``record`` and its arguments (None: the
        handler does not take the record's interface).

        Raises:
            ValueError: the record cannot be decoded, also with its run's
                earlier records.
        """
        run = record.run_id
        replayer = self._runs.get(run)
        if replayer is None:
            replayer = self._runs[run] = self._new()
            if len(self._runs) > _RUNS:
                self._runs.popitem(last=False)
        try:
            call = replayer.call(record)
        except ValueError:
            # The record refers to messages this member never saw (a ValueError
            # of the handler itself is not caught here: it is called below).
            if run is None:
                raise
            self._runs[run] = replayer = self._rebuilt(run, key)
            return replayer.call(record)
        return call

    def _new(self) -> Replayer:
        return Replayer(self._handler, "RedisEventConsumer", twin="afollow")

    def _rebuilt(self, run_id: str, key: tuple[str, int]) -> Replayer:
        replayer = self._new()
        entries: Any = self._client.xrange(self._keys.run(run_id))
        for _entry_id, fields in entries:
            record = record_of(fields)
            if (publisher_of(fields), record.seq) == key:
                break
            # An earlier record that cannot be decoded is that record's problem.
            with contextlib.suppress(ValueError):
                replayer.prime(record)
        return replayer
