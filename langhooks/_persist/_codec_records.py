"""The codec of what a run is recorded as: an event record's decoder beside its
row of the codec's table (the invocation it names is in
``_core._json_messages``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core._codec_rows import DATA, INT, OPT_STR, STR, TIME, ValueCodec
from .._core._json_fields import time_field
from ._records import EventRecord

__all__ = ["CODECS"]


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
    ValueCodec(
        EventRecord,
        decode_record,
        ("seq", INT),
        ("event", STR),
        ("run_id", OPT_STR),
        ("invocation_id", OPT_STR),
        ("parent_id", OPT_STR),
        ("time", TIME),
        ("payload", DATA),
    ),
)
