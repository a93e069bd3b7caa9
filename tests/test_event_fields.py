"""The one per-event description (``_core/_event_fields.py``) covers both specs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from langhooks._core._chain_handler import ChainCallbackHandler
from langhooks._core._event_fields import (
    CHAIN_FIELDS,
    STREAM_FIELDS,
    Field,
    call_index,
)
from langhooks._core._messages import ToolCall
from langhooks._core._stream_handler import StreamingChatResponseHandler
from langhooks.integrations._event_lines import call_extra

SPECS = (
    (ChainCallbackHandler._langhooks_own_events, CHAIN_FIELDS),
    (StreamingChatResponseHandler._langhooks_own_events, STREAM_FIELDS),
)


@pytest.mark.parametrize(("events", "fields"), SPECS, ids=["chain", "stream"])
def test_every_event_of_the_spec_has_a_row(
    events: Mapping[str, Any], fields: Mapping[str, tuple[Field, ...]]
) -> None:
    """A new event without a row here fails: adding an event is one row."""
    assert list(fields) == list(events)


@pytest.mark.parametrize(("events", "fields"), SPECS, ids=["chain", "stream"])
def test_every_field_names_an_argument_of_its_event(
    events: Mapping[str, Any], fields: Mapping[str, tuple[Field, ...]]
) -> None:
    for event, row in fields.items():
        params = events[event].params
        for field in row:
            assert field.param in params, f"{event}: {field.name} from {field.param}"
        names = [field.name for field in row]
        assert len(names) == len(set(names)), f"{event}: a field named twice"


def test_a_field_reads_its_argument_or_an_attribute_of_it() -> None:
    call = ToolCall(call_id="c1", name="get_weather", arguments={"city": "Paris"})
    tool, call_id, arguments = CHAIN_FIELDS["on_tool_execution_started"]
    assert tool.of({"call": call}) == "get_weather"
    assert call_id.of({"call": call}) == "c1"
    assert arguments.of({"call": call}) == {"city": "Paris"}
    assert arguments.content
    assert not tool.content
    assert Field("delay", "delay").of({"delay": 1.5}) == 1.5


def test_the_call_of_an_event_about_one_tool_call() -> None:
    events = ChainCallbackHandler._langhooks_own_events
    about_a_call = {
        event
        for event in CHAIN_FIELDS
        if call_index(event, events[event].params) is not None
    }
    assert about_a_call == {
        event for event, spec in events.items() if "call" in spec.params
    }
    assert call_index("on_tool_progress", events["on_tool_progress"].params) == 1
    assert call_index("on_run_start", ("chain",)) is None


def test_logging_carries_the_data_fields_of_a_call() -> None:
    """``LoggingHandler``'s extras about a call are the row's data fields of the call
    (spelled out there, not read per event: a dict literal costs half as much)."""
    call = ToolCall(call_id="c1", name="get_weather", arguments={"city": "Paris"})
    row = CHAIN_FIELDS["on_tool_pre_execution"]
    data = {f.name: f.of({"call": call}) for f in row if f.param == "call"}
    assert call_extra(call) == data
    assert not any(f.content for f in row)
