"""How an event record sits in a Redis stream entry, and which records end a run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .. import codec
from ..events import EventRecord

__all__ = [
    "PUBLISHER_FIELD",
    "RECORD_FIELD",
    "entry_fields",
    "firehose_key",
    "is_terminal",
    "record_of",
    "run_key",
    "text",
]

#: The entry field holding the record, encoded with ``langhooks.codec``.
RECORD_FIELD: Final = "record"
#: The entry field naming the publisher (``seq`` is unique per publisher).
PUBLISHER_FIELD: Final = "publisher"
EVENT_FIELD: Final = "event"


def run_key(prefix: str, run_id: str) -> str:
    """The stream of one run's records."""
    return f"{prefix}run:{run_id}"


def firehose_key(prefix: str) -> str:
    """The capped stream of every record, which consumer groups read."""
    return f"{prefix}events"


def entry_fields(record: EventRecord, publisher: str) -> dict[str, str]:
    """The fields of the stream entry that carries ``record``."""
    return {
        EVENT_FIELD: record.event,
        PUBLISHER_FIELD: publisher,
        RECORD_FIELD: codec.dumps(record),
    }


def text(value: bytes | str) -> str:
    """A field or id as ``str``, whatever the client's ``decode_responses``."""
    return value.decode() if isinstance(value, bytes) else value


def record_of(fields: Mapping[Any, Any]) -> EventRecord:
    """The record a stream entry carries.

    Raises:
        ValueError: the entry carries no langhooks event record.
    """
    for key, value in fields.items():
        if text(key) == RECORD_FIELD:
            record = codec.loads(text(value))
            if isinstance(record, EventRecord):
                return record
    raise ValueError(
        f"a stream entry without a langhooks event record in field "
        f"{RECORD_FIELD!r}: {dict(fields)!r}"
    )


def publisher_of(fields: Mapping[Any, Any]) -> str:
    """The publisher id of an entry ("" when it has none)."""
    for key, value in fields.items():
        if text(key) == PUBLISHER_FIELD:
            return text(value)
    return ""


def is_terminal(record: EventRecord) -> bool:
    """Whether ``record`` ends its run for good: nothing follows it in the run's
    stream (a chain run's ``on_error`` or final ``on_run_complete``, a stream's
    ``on_complete_response`` or ``on_error``)."""
    raise NotImplementedError  # wired to langhooks.events once it lands
