"""The codec of what a run is recorded as: invocations and event records, each
type's encoder beside its decoder, and their rows of the codec's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core._invocation import Invocation
from ._fields import ValueCodec, data_field, optional_str, str_field, time_field
from ._records import EventRecord

__all__ = ["CODECS", "decode_invocation", "encode_invocation"]


def encode_invocation(current: Invocation) -> dict[str, Any]:
    return {
        "id": current.id,
        "name": current.name,
        "parent_id": current.parent_id,
        "custom_context": data_field(current.custom_context, "custom_context"),
        "started_at": current.started_at.isoformat(),
    }


def decode_invocation(data: Mapping[str, Any]) -> Invocation:
    return Invocation(
        id=str_field(data["id"], "id"),
        name=data["name"],
        parent_id=optional_str(data["parent_id"], "parent_id"),
        custom_context=data["custom_context"],
        started_at=time_field(data["started_at"], "started_at"),
    )


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
CODECS: Final[tuple[ValueCodec, ...]] = (
    (Invocation, encode_invocation, decode_invocation),
    (EventRecord, encode_record, decode_record),
)
