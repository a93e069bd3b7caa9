"""The codec of what a run is recorded as: an event record's encoder beside its
decoder, and its row of the codec's table (the invocation it names is in
``_core._json_messages``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core._json_fields import ValueCodec, data_field, time_field
from ._records import EventRecord

__all__ = ["CODECS"]


def encode_record(record: EventRecord) -> dict[str, Any]:
    return {
        "seq": record.seq,
        "event": record.event,
        "run_id": record.run_id,
        "invocation_id": record.invocation_id,
        "parent_id": record.parent_id,
        "time": record.time.isoformat(),
        "payload": data_field(record.payload, "payload"),
    }


def decode_record(data: Mapping[str, Any]) -> EventRecord:
    return EventRecord(
        seq=data["seq"],
        event=data["event"],
        run_id=data["run_id"],
        invocation_id=data["invocation_id"],
        parent_id=data["parent_id"],
        time=time_field(data["time"], "time"),
        payload=data["payload"],
    )


#: This concept's rows of the codec's table.
CODECS: Final[tuple[ValueCodec, ...]] = ((EventRecord, encode_record, decode_record),)
