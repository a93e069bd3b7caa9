"""``EventRecord``: one handler event as data (the value type behind ``events``).

It lives apart from ``_events`` so that ``_codec`` can encode it without importing
the recorder.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

import attrs

from .._core._chain_callbacks import ChainCallbackHandler, ChainEventName
from .._core._streaming import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingEventName,
)
from .._core._validators import count, instance_of, non_empty_str, optional_str
from .._core._values import _frozen_mapping, _reduce

__all__ = ["EventName", "EventRecord"]

#: The name of a handler event: a chain event or a streaming event (``on_error``
#: is both).
EventName: TypeAlias = ChainEventName | StreamingEventName

# The event vocabulary the recorder and the replay share: each interface's own
# events, and the streaming events whose argument is a context object.
_CHAIN_EVENTS: Final = ChainCallbackHandler._langhooks_own_events
_STREAM_EVENTS: Final = StreamingChatResponseHandler._langhooks_own_events
_CONTEXTS: Final[dict[str, type]] = {
    "on_partial_response": PartialResponseContext,
    "on_partial_thinking": PartialThinkingContext,
    "on_partial_tool_call": PartialToolCallContext,
}


def _payload(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _frozen_mapping(value, "payload")


@attrs.frozen(kw_only=True)
class EventRecord:
    """One handler event, as data that can leave the process.

    Attributes:
        seq: the record's number in its recorder: gap-free and increasing.
        event: the handler method's name (``on_partial_response``, ...): typed as
            the event names this version has; checked only for being a non-empty
            str at run time, so records a newer version wrote still decode.
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
    event: EventName = attrs.field(validator=non_empty_str)
    run_id: str | None = attrs.field(default=None, validator=optional_str)
    invocation_id: str | None = attrs.field(default=None, validator=optional_str)
    parent_id: str | None = attrs.field(default=None, validator=optional_str)
    time: datetime.datetime = attrs.field(
        factory=lambda: datetime.datetime.now(datetime.UTC),
        validator=instance_of(datetime.datetime),
    )
    payload: Mapping[str, Any] = attrs.field(factory=dict, converter=_payload)

    __reduce__ = _reduce
