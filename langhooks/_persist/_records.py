"""``EventRecord``: one handler event as data (the value type behind ``events``).

It lives apart from ``_events`` so that ``_codec`` can encode it without importing
the recorder.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import attrs

from .._core._validators import count, instance_of, non_empty_str, optional_str
from .._core._values import _frozen_mapping, _reduce

__all__ = ["EventRecord"]


def _payload(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _frozen_mapping(value, "payload")


@attrs.frozen(kw_only=True)
class EventRecord:
    """One handler event, as data that can leave the process.

    Attributes:
        seq: the record's number in its recorder: gap-free and increasing.
        event: the handler method's name (``on_partial_response``, ...).
        run_id: the id of the chain run the event belongs to (the run's
            invocation id, kept across a resume), or None outside a run.
        invocation_id: the current invocation's id when the event fired (for
            chain events, the run's; in ``on_tool_pre_execution``, the tool's).
        parent_id: that invocation's parent id.
        time: when the event was recorded (UTC).
        payload: the event's arguments by parameter name, encoded with
            ``langhooks.codec`` (JSON data).
    """

    seq: int = attrs.field(validator=count)
    event: str = attrs.field(validator=non_empty_str)
    run_id: str | None = attrs.field(default=None, validator=optional_str)
    invocation_id: str | None = attrs.field(default=None, validator=optional_str)
    parent_id: str | None = attrs.field(default=None, validator=optional_str)
    time: datetime.datetime = attrs.field(
        factory=lambda: datetime.datetime.now(datetime.UTC),
        validator=instance_of(datetime.datetime),
    )
    payload: Mapping[str, Any] = attrs.field(factory=dict, converter=_payload)

    __reduce__ = _reduce
