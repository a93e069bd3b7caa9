"""How an event record sits in a Redis stream entry, and which records end a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import redis
import redis.asyncio

from .._persist import _codec as codec
from .._persist._codec import SCHEMA_VERSION, json_text
from .._persist._events import EventRecord

__all__ = [
    "END_FIELD",
    "EVENT_FIELD",
    "PUBLISHER_FIELD",
    "RECORD_FIELD",
    "block_step",
    "check_count",
    "check_seconds",
    "check_sync_client",
    "dead_key",
    "ends_run",
    "field",
    "firehose_key",
    "publisher_of",
    "record_json",
    "record_of",
    "run_key",
    "text",
]

#: The entry field holding the record, encoded with ``langhooks.codec``.
RECORD_FIELD: Final = "record"
#: The entry field naming the publisher (``seq`` is unique per publisher).
PUBLISHER_FIELD: Final = "publisher"
EVENT_FIELD: Final = "event"
#: Present (value "1") on the entry of the record that ends its run for good.
END_FIELD: Final = "end"


def run_key(prefix: str, run_id: str) -> str:
    """The stream of one run's records."""
    return f"{prefix}run:{run_id}"


def firehose_key(prefix: str) -> str:
    """The capped stream of every record, which consumer groups read."""
    return f"{prefix}events"


def dead_key(prefix: str) -> str:
    """The stream of records a consumer group could not decode (dead letters)."""
    return f"{prefix}dead"


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
    """Raise ``TypeError`` unless ``client`` is a synchronous ``redis.Redis``."""
    if not isinstance(client, redis.Redis):
        raise TypeError(
            f"{what} takes a synchronous redis.Redis client (redis.asyncio clients "
            f"are for follow's async twin), got {client!r}"
        )


def block_step(client: redis.Redis | redis.asyncio.Redis, block_ms: int) -> int:
    """The longest ``BLOCK`` (ms) one read may ask for on ``client``.

    A blocking read must return before the client's ``socket_timeout`` (5 s by
    default in recent redis-py) or it fails with a timeout: longer waits are made
    of several reads, each this long at most. ``block_ms`` 0 means without end.
    """
    timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
    limit = None if not timeout else max(1, int(timeout * 1000) - 500)
    if limit is None:
        return block_ms
    return limit if block_ms == 0 else min(block_ms, limit)
