"""Reading a run's stream, what ``run_entries``/``follow`` and their async twins
share: ``RunEntry``, the entries of a stream once each, and one reader's position,
wait and faults (the twins are in ``_redis_follow_async`` and the
``_redis_follow_sync`` generated from it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final, final

import attrs

from ..._persist._events import EventRecord, Handler, Replayer
from ._wire import (
    AsyncClient,
    SyncClient,
    block_step,
    ends_run,
    publisher_of,
    record_of,
    text,
)

__all__ = ["RunEntry"]

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


def _replayer(handler: Handler, *, sync: bool) -> Replayer:
    """The replayer of ``follow`` (``sync``: sync handlers only, an async one
    refused with a pointer to ``afollow``) or of ``afollow``."""
    if sync:
        return Replayer(handler, "follow", twin="afollow")
    return Replayer(handler, "afollow", twin=None)


def _prime(replayer: Replayer, once: _Entries, history: Sequence[Any]) -> None:
    for entry_id, fields in history:
        entry = once.entry(entry_id, fields)
        if entry is not None:
            replayer.prime(entry.record)
