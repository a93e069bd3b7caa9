"""A value type is one row of the codec's table: registered in this test only, a new
type is encoded, decoded, and written by the recorder's fast path byte for byte as
its reference path writes it, with no other edit."""

from __future__ import annotations

import datetime
import io
import json
from collections.abc import Mapping
from typing import Any, cast

import attrs
import pytest

from langhooks import (
    Allow,
    ContentPart,
    PartialResponseContext,
    StreamingHandle,
    ToolCall,
    ToolResult,
)
from langhooks._core._codec_rows import (
    BOOL,
    DATA,
    INT,
    OPT_STR,
    OPT_VALUE,
    SCALAR,
    STR,
    TIME,
    ValueCodec,
    each,
    nested,
)
from langhooks._core._json_fields import time_field
from langhooks._core._json_messages import CALL, PART, RESULT
from langhooks._core._messages import FinishReason
from langhooks._persist import _codec
from langhooks.events import EventRecorder
from tests.test_events_fast import Pair

_WHEN = datetime.datetime(2026, 12, 4, 18, 0, 0, 123456, tzinfo=datetime.UTC)


@attrs.frozen
class Forecast:
    """A value type the library does not have, with a field of every kind."""

    city: str
    degrees: float | int | None
    source: str | None
    hours: int
    sunny: bool
    data: Any
    issued: datetime.datetime
    reason: FinishReason | None
    call: ToolCall | None
    results: tuple[ToolResult, ...]
    parts: tuple[ContentPart, ...] = ()


def decode_forecast(data: Mapping[str, Any]) -> Forecast:
    reason = data["reason"]
    return Forecast(
        city=data["city"],
        degrees=data["degrees"],
        source=data["source"],
        hours=data["hours"],
        sunny=data["sunny"],
        data=data["data"],
        issued=time_field(data["issued"], "issued"),
        reason=None if reason is None else FinishReason(reason),
        call=None if data["call"] is None else CALL.decode(data["call"]),
        results=tuple(RESULT.decode(item) for item in data["results"]),
        parts=tuple(PART.decode(item) for item in data["parts"]),
    )


#: The one row the new type needs.
FORECAST = ValueCodec(
    Forecast,
    decode_forecast,
    ("city", STR),
    ("degrees", SCALAR),
    ("source", OPT_STR),
    ("hours", INT),
    ("sunny", BOOL),
    ("data", DATA),
    ("issued", TIME),
    ("reason", OPT_VALUE),
    ("call", nested(CALL)),
    ("results", each(RESULT)),
    ("parts", each(PART)),
)


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row registered for one test."""
    monkeypatch.setitem(_codec.ROWS, Forecast, FORECAST)
    monkeypatch.setitem(_codec._TAGS, "Forecast", FORECAST)


def forecasts() -> list[Forecast]:
    call = ToolCall(call_id="c1", name="weather", arguments={"city": "Zürich"})
    result = ToolResult(tool_call_id="c1", name="weather", content="sunny ☀")
    return [
        Forecast(
            city="Zürich \u2014 \ud800",
            degrees=21.5,
            source="met",
            hours=3,
            sunny=True,
            data={"wind": [1, 2.5, None], "é": {"n": True}},
            issued=_WHEN,
            reason=FinishReason.TOOL_EXECUTION,
            call=call,
            results=(result, result),
            parts=(ContentPart(type="text", content="x"),),
        ),
        Forecast(
            city="Oslo",
            degrees=None,
            source=None,
            hours=0,
            sunny=False,
            data=None,
            issued=_WHEN.replace(microsecond=0),
            reason=None,
            call=None,
            results=(),
        ),
    ]


def test_encoded_and_decoded() -> None:
    """The row's encoder gives the fields as JSON types; its decoder reads them."""
    for forecast in forecasts():
        text = _codec.dumps(forecast)
        assert json.loads(text)["type"] == "Forecast"
        assert _codec.loads(text) == forecast


def test_written_by_both_paths_alike() -> None:
    """As an event's argument, in a list, and twice (its nested values' texts
    kept), the new type is written by the fast path as the reference path writes
    it."""
    pair = Pair()
    handle = PartialResponseContext(handle=StreamingHandle())
    for forecast in forecasts() * 2:
        pair.call("on_partial_response", forecast, handle)
    pair.call("on_complete_tool_call", forecasts())
    pair.assert_identical()
    assert '"type":"Forecast","city":"Z\\u00fcrich \\u2014 \\ud800"' in pair.lines()[0]


def test_the_fast_path_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record is the fast path's (the row's text writer), not the reference
    path's taken as a fallback."""
    out = io.StringIO()
    recorder = EventRecorder(out)

    def no_fallback(*_args: object) -> str:
        raise AssertionError("the reference path took the record")

    monkeypatch.setattr(recorder, "_reference_line", no_fallback)
    for forecast in forecasts():
        recorder.on_partial_response(
            cast("Any", forecast), PartialResponseContext(handle=StreamingHandle())
        )
    assert out.getvalue().count('"type":"Forecast"') == 2


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"data": [object()]}, TypeError),
        ({"data": [float("nan")]}, ValueError),
        ({"city": 5}, None),
        ({"hours": "3"}, None),
        ({"hours": True}, None),
        ({"sunny": 1}, None),
    ],
)
def test_values_the_writer_cannot_write(
    change: dict[str, Any], error: type[Exception] | None
) -> None:
    """A value the row's text writer refuses is taken by the reference path:
    the same error (naming the field), or the same text."""
    forecast = attrs.evolve(forecasts()[1], **change)
    pair = Pair()
    handle = PartialResponseContext(handle=StreamingHandle())
    if error is None:
        pair.call("on_partial_response", forecast, handle)
        pair.assert_identical()
        return
    messages = []
    for recorder in pair.both:
        with pytest.raises(error) as raised:
            recorder.on_partial_response(cast("Any", forecast), handle)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    assert "cannot encode data[" in messages[0]


def test_a_row_of_no_fields() -> None:
    """A value type without fields is written as its bare tag."""
    pair = Pair()
    pair.call(
        "on_partial_response", Allow(), PartialResponseContext(handle=StreamingHandle())
    )
    pair.assert_identical()
    assert '"partial":{"type":"Allow"}' in pair.lines()[0]


@pytest.mark.parametrize("field", [("é", STR), ("a-b", STR), ("ok", STR, "x'y")])
def test_keys_and_attributes_are_identifiers(field: Any) -> None:
    """A key or an attribute is written into the generated code as it is: an ASCII
    identifier, or the row is refused."""
    with pytest.raises(ValueError, match="must be ASCII identifiers"):
        ValueCodec(Forecast, decode_forecast, field)
