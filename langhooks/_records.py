"""``EventRecord``: one handler event as data (the value type behind ``events``).

It lives apart from ``_events`` so that ``_codec`` can encode it without importing
the recorder.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import attrs

from ._messages import _count, _frozen_mapping, _instance_of, _non_empty_str, _reduce

__all__ = ["EventRecord"]


def _optional_id(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str or None, got {value!r}")


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

    seq: int = attrs.field(validator=_count)
    event: str = attrs.field(validator=_non_empty_str)
    run_id: str | None = attrs.field(default=None, validator=_optional_id)
    invocation_id: str | None = attrs.field(default=None, validator=_optional_id)
    parent_id: str | None = attrs.field(default=None, validator=_optional_id)
    time: datetime.datetime = attrs.field(
        factory=lambda: datetime.datetime.now(datetime.UTC),
        validator=_instance_of(datetime.datetime),
    )
    payload: Mapping[str, Any] = attrs.field(factory=dict, converter=_payload)

    __reduce__ = _reduce
