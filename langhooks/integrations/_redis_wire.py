"""How an event record sits in a Redis stream entry, and which records end a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import redis

from .. import codec
from ..events import EventRecord

__all__ = [
    "END_FIELD",
    "EVENT_FIELD",
    "PUBLISHER_FIELD",
    "RECORD_FIELD",
    "check_count",
    "check_seconds",
    "check_sync_client",
    "ends_run",
    "entry_fields",
    "firehose_key",
    "publisher_of",
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


def entry_fields(record: EventRecord, publisher: str, *, end: bool) -> dict[str, str]:
    """The fields of the stream entry that carries ``record``."""
    fields = {
        EVENT_FIELD: record.event,
        PUBLISHER_FIELD: publisher,
        RECORD_FIELD: codec.dumps(record),
    }
    if end:
        fields[END_FIELD] = "1"
    return fields


def text(value: bytes | str) -> str:
    """A field or id as ``str``, whatever the client's ``decode_responses``."""
    return value.decode() if isinstance(value, bytes) else value


def record_of(fields: Mapping[Any, Any]) -> EventRecord:
    """The record a stream entry carries.

    Raises:
        ValueError: the entry carries no langhooks event record.
    """
    data = next((v for k, v in fields.items() if text(k) == RECORD_FIELD), None)
    record = None if data is None else codec.loads(text(data))
    if isinstance(record, EventRecord):
        return record
    raise ValueError(
        f"a stream entry without a langhooks event record in field "
        f"{RECORD_FIELD!r}: {dict(fields)!r}"
    )


def publisher_of(fields: Mapping[Any, Any]) -> str:
    """The publisher id of an entry ("" when it has none)."""
    return next((text(v) for k, v in fields.items() if text(k) == PUBLISHER_FIELD), "")


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
