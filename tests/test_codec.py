"""langhooks.codec: every value type to JSON and back, equal; clear errors otherwise."""

from __future__ import annotations

import datetime
import enum
import json
import pickle
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import override

from langhooks import (
    Allow,
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    Deny,
    FinishReason,
    Interrupt,
    Invocation,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    ReviewContext,
    TokenUsage,
    Tool,
    ToolCall,
    ToolContext,
    ToolProgress,
    ToolResult,
    UpdateArguments,
)
from langhooks.chain import Decision
from langhooks.codec import SCHEMA_VERSION, decode, dumps, encode, loads
from langhooks.events import EventRecord

CALL = ToolCall(
    call_id="call_1",
    name="get_weather",
    arguments={"city": "Paris", "days": [1, 2], "opts": {"unit": "c", "n": None}},
    index=2,
    display_text="Weather",
)
RESULT = ToolResult(
    tool_call_id="call_1",
    name="get_weather",
    content="14°C",
    display_text="Weather",
    is_error=True,
    is_interrupt=True,
    interrupt_data={"ask": "approve?"},
    processed_content={"celsius": 14.5},
)
USAGE = TokenUsage(input_tokens=3, output_tokens=4, raw={"cached": 1}, cumulative=True)
ASSISTANT = Message(
    role="assistant",
    content=(ContentPart.thinking("hmm"), ContentPart.text("Let me look.")),
    tool_calls=(CALL,),
    status="length",
    metadata={"id": "resp_1", "headers": {"x": "1"}},
)

#: One example of every value type the codec handles.
VALUES: list[Any] = [
    ContentPart(type="image_url", content="https://example.com/a.png"),
    CALL,
    RESULT,
    ASSISTANT,
    Message.tool([RESULT]),
    Message.user("hi"),
    MessageDelta(
        text="a",
        thinking="b",
        tool_call=PartialToolCall(index=0, id=None, name="f", partial_arguments=""),
        usage=USAGE,
        status="complete",
    ),
    MessageDelta(text="only text"),
    USAGE,
    FinishReason.TOOL_EXECUTION,
    ChatResponse(
        message=ASSISTANT,
        id="resp_1",
        model_name="m",
        token_usage=USAGE,
        finish_reason=FinishReason.LENGTH,
        metadata={"ratelimit": {"remaining": 3}},
    ),
    ChatResponse(message=Message.assistant("plain")),
    Invocation(
        name="run",
        parent_id="p",
        custom_context={"tenant": "acme"},
        started_at=datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, datetime.UTC),
    ),
    PartialResponse(text="Hel"),
    PartialThinking(text="so"),
    PartialToolCall(index=1, id="c", name="f", partial_arguments='{"a'),
    CompleteToolCall(index=2, tool_call=CALL),
    ToolProgress(3, 5, "3 of 5 files"),
    ToolProgress(0.25),
    Allow(),
    UpdateArguments({"city": "Lyon"}),
    Deny("no"),
    Interrupt("approve?", {"why": ["money"]}),
    ReviewContext(human_decision="edit", custom_context={"k": 1}),
    Decision.approve(),
    Decision.edit({"city": "Nice"}),
    Decision.reject("not today"),
    EventRecord(
        seq=7,
        event="on_partial_response",
        run_id="r",
        invocation_id="i",
        parent_id=None,
        time=datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC),
        payload={"partial": {"type": "PartialResponse", "text": "x"}},
    ),
]

ERROR = LangHooksError(
    "rate_limited",
    "slow down",
    original=RuntimeError("kept out"),
    retryable=False,
    retry_after=1.5,
    metadata={"status_code": 429},
)


def _weather(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool function pickle can find by name."""
    return "sunny"


def _fields(error: LangHooksError) -> tuple[Any, ...]:
    return (
        error.type,
        error.message,
        error.retryable,
        error.retry_after,
        dict(error.metadata),
    )


class TestRoundTrip:
    @pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
    def test_encode_decode_equal(self, value: Any) -> None:
        """decode(encode(v)) == v for every value type."""
        assert decode(encode(value)) == value

    @pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
    def test_dumps_loads_equal(self, value: Any) -> None:
        """loads(dumps(v)) == v, through JSON text."""
        assert loads(dumps(value)) == value

    @pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
    def test_encoded_is_json(self, value: Any) -> None:
        """encode gives JSON types only: json.dumps takes it and gives it back."""
        data = encode(value)
        assert json.loads(json.dumps(data)) == data

    @pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
    def test_tag_and_version(self, value: Any) -> None:
        """The type tag is the class name under "type", beside the schema version."""
        data = encode(value)
        assert data["type"] == type(value).__name__
        assert data["version"] == SCHEMA_VERSION

    def test_error_fields_round_trip(self) -> None:
        """A LangHooksError comes back with its type, message, retryable,
        retry_after and metadata (exceptions compare by identity)."""
        copy = loads(dumps(ERROR), type=LangHooksError)
        assert isinstance(copy, LangHooksError)
        assert _fields(copy) == _fields(ERROR)

    def test_error_original_not_encoded(self) -> None:
        """LangHooksError.original stays out of the encoding."""
        assert "original" not in encode(ERROR)
        assert loads(dumps(ERROR), type=LangHooksError).original is None

    def test_tool_result_exception_not_encoded(self) -> None:
        """ToolResult.exception is never serialised; the rest round-trips."""
        result = ToolResult(
            tool_call_id="c", name="f", content="boom", exception=ValueError("x")
        )
        copy = loads(dumps(result), type=ToolResult)
        assert copy.exception is None
        assert copy == ToolResult(tool_call_id="c", name="f", content="boom")

    def test_content_part_type_field(self) -> None:
        """ContentPart's own "type" field is written as content_type, so the tag
        keeps its key."""
        data = encode(ContentPart.text("x"))
        assert data == {
            "type": "ContentPart",
            "version": SCHEMA_VERSION,
            "content_type": "text",
            "content": "x",
        }

    def test_lone_surrogate_round_trips(self) -> None:
        """A lone surrogate round-trips: dumps writes ASCII with it escaped."""
        value = Message.user("a\ud800b\udfffc")
        text = dumps(value)
        assert text.isascii()
        assert loads(text) == value

    def test_huge_int_round_trips(self) -> None:
        """Ints beyond 64 bits round-trip exactly."""
        call = ToolCall(call_id="c", name="f", arguments={"n": 2**200 + 1})
        assert loads(dumps(call)) == call

    def test_tuples_in_data_become_lists(self) -> None:
        """Caller data is JSON: a tuple in it comes back as a list."""
        call = ToolCall(call_id="c", name="f", arguments={"xs": (1, (2, 3))})
        assert loads(dumps(call), type=ToolCall).arguments == {"xs": [1, [2, 3]]}


class TestUnencodable:
    def test_path_to_a_non_json_argument(self) -> None:
        """A non-JSON value in tool arguments is a TypeError naming its path."""
        when = datetime.datetime(2026, 1, 1)
        call = ToolCall(call_id="c", name="f", arguments={"when": when})
        message = Message.assistant("", tool_calls=[CALL, call])
        with pytest.raises(TypeError) as caught:
            encode(message)
        assert 'tool_calls[1].arguments["when"]' in str(caught.value)
        assert "datetime is not JSON data" in str(caught.value)

    def test_path_inside_lists(self) -> None:
        """The path goes through lists and nested mappings."""
        result = ToolResult(
            tool_call_id="c", name="f", processed_content={"rows": [1, {"x": {1}}]}
        )
        with pytest.raises(TypeError, match=r'processed_content\["rows"\]\[1\]\["x"\]'):
            encode(Message.tool([result]))

    def test_non_str_key(self) -> None:
        """A mapping key that is not a str is refused (JSON would make it one)."""
        with pytest.raises(TypeError, match=r"metadata: the key 1 is a int"):
            encode(Message(role="user", metadata={1: "x"}))  # type: ignore[dict-item]

    @pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
    def test_non_finite_float(self, number: float) -> None:
        """NaN and infinities are refused with a ValueError naming the path."""
        with pytest.raises(ValueError, match=r'raw\["x"\]: .* is not a JSON number'):
            encode(TokenUsage(raw={"x": number}))

    def test_path_through_a_nested_value(self) -> None:
        """The path goes through nested value types."""
        delta = MessageDelta(usage=TokenUsage(raw={"cost": {1.5}}))
        with pytest.raises(TypeError, match=r'usage\.raw\["cost"\]: set is not'):
            encode(delta)

    def test_subclasses_of_json_types(self) -> None:
        """str, int and float subclasses (enums, for instance) are written as the
        plain type."""

        class Unit(enum.StrEnum):
            C = "celsius"

        class Level(enum.IntEnum):
            HIGH = 3

        call = ToolCall(call_id="c", name="f", arguments={"u": Unit.C, "l": Level.HIGH})
        data = json.loads(dumps(call))
        assert data["arguments"] == {"u": "celsius", "l": 3}
        assert type(loads(dumps(call), type=ToolCall).arguments["u"]) is str

    def test_not_a_value_type(self) -> None:
        """Encoding something that is not a value type is a TypeError."""
        with pytest.raises(TypeError, match="cannot encode a dict"):
            encode({"a": 1})  # type: ignore[arg-type]

    def test_never_stringified(self) -> None:
        """An object with a str() is still refused, not written as text."""

        class Money:
            @override
            def __str__(self) -> str:
                return "12 EUR"

        with pytest.raises(TypeError, match=r'custom_context\["price"\]'):
            dumps(ReviewContext(custom_context={"price": Money()}))


class TestDecodeErrors:
    def test_unknown_tag(self) -> None:
        """An unknown type tag is a ValueError that lists the known ones."""
        with pytest.raises(ValueError, match="unknown type tag 'Mystery'"):
            decode({"type": "Mystery", "version": 1})

    def test_newer_version(self) -> None:
        """A newer schema version is a ValueError that says to upgrade."""
        data = encode(Message.user("x"))
        data["version"] = SCHEMA_VERSION + 1
        with pytest.raises(ValueError, match="newer than this langhooks reads"):
            decode(data)

    @pytest.mark.parametrize("version", [None, "1", 0, 1.0, True])
    def test_bad_version(self, version: object) -> None:
        """A missing or malformed version is a ValueError."""
        data = encode(Message.user("x"))
        data["version"] = version
        with pytest.raises(ValueError, match="no valid schema version"):
            decode(data)

    def test_no_tag(self) -> None:
        """Data without a type tag is a ValueError."""
        with pytest.raises(ValueError, match="no type tag"):
            decode({"version": 1, "role": "user"})

    def test_not_a_mapping(self) -> None:
        """decode takes a mapping; anything else is a TypeError."""
        with pytest.raises(TypeError, match="got list"):
            decode([])  # type: ignore[call-overload]

    def test_loads_of_non_object(self) -> None:
        """loads of JSON that is not an object is a TypeError."""
        with pytest.raises(TypeError, match="got int"):
            loads("3")

    def test_missing_field(self) -> None:
        """A missing field is a ValueError naming it."""
        data = encode(Message.user("x"))
        del data["status"]
        with pytest.raises(ValueError, match="the field 'status' is missing"):
            decode(data)

    def test_bad_field_value(self) -> None:
        """A field the class refuses is a ValueError carrying the class's message."""
        data = encode(Message.user("x"))
        data["role"] = "robot"
        with pytest.raises(ValueError, match="not a valid encoded Message: role must"):
            decode(data)

    @pytest.mark.parametrize(
        ("value", "field"),
        [
            (RESULT, "is_error"),
            (USAGE, "cumulative"),
            (ERROR, "retryable"),
        ],
    )
    def test_bool_fields_checked(self, value: Any, field: str) -> None:
        """Flags must be JSON booleans; 1 or "true" is refused."""
        data = encode(value)
        data[field] = 1
        with pytest.raises(ValueError, match=f"{field} must be a bool"):
            decode(data)

    def test_bad_time(self) -> None:
        """A time that is not an ISO string is a ValueError."""
        data = encode(VALUES[-1])
        data["time"] = 12
        with pytest.raises(ValueError, match="time must be an ISO 8601 str"):
            decode(data)

    @pytest.mark.parametrize("field", ["id", "parent_id"])
    def test_invocation_ids_checked(self, field: str) -> None:
        """Invocation ids must be str."""
        data = encode(Invocation(name="run", parent_id="p"))
        data[field] = 5
        with pytest.raises(ValueError, match=f"{field} must be a str"):
            decode(data)

    def test_record_ids_checked(self) -> None:
        """An EventRecord's ids must be str or null."""
        data = encode(VALUES[-1])
        data["run_id"] = 5
        with pytest.raises(ValueError, match="run_id must be a str or None"):
            decode(data)

    def test_interrupt_data_checked(self) -> None:
        """interrupt_data must be an object or null."""
        data = encode(RESULT)
        data["interrupt_data"] = [1]
        with pytest.raises(ValueError, match="interrupt_data must be an object"):
            decode(data)


class TestPickle:
    @pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
    def test_pickles_equal(self, value: Any) -> None:
        """Every value type pickles and unpickles equal (mapping fields too)."""
        assert pickle.loads(pickle.dumps(value)) == value

    def test_error_pickles(self) -> None:
        """LangHooksError pickles with its fields."""
        copy = pickle.loads(pickle.dumps(ERROR))
        assert _fields(copy) == _fields(ERROR)

    def test_tool_pickles(self) -> None:
        """A Tool whose function is importable pickles (its schema is read-only)."""
        tool = Tool("get_weather", _weather, parameters_schema={"type": "object"})
        assert pickle.loads(pickle.dumps(tool)) == tool

    def test_message_list_pickles(self) -> None:
        """The issue's example: a chain's messages pickle."""
        messages = (Message.system("s"), ASSISTANT, Message.tool([RESULT]))
        assert pickle.loads(pickle.dumps(messages)) == messages


# --- properties -------------------------------------------------------------------

# Every str Python can hold, lone surrogates included.
TEXT = st.text(st.characters(exclude_categories=()), max_size=12)
NAME = TEXT.filter(bool)
INTS = st.integers(min_value=-(2**300), max_value=2**300)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | INTS
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4)
    ),
    max_leaves=12,
)
OBJECT = st.dictionaries(TEXT, JSON, max_size=4)
OPTIONAL_TEXT = st.none() | TEXT
COUNT = st.integers(min_value=0, max_value=2**70)

PARTS = st.builds(
    ContentPart,
    type=st.sampled_from(["text", "thinking", "image_url", "file", "unsupported"]),
    content=TEXT,
)
CALLS = st.builds(
    ToolCall,
    call_id=NAME,
    name=NAME,
    arguments=OBJECT,
    index=COUNT,
    display_text=OPTIONAL_TEXT,
)
RESULTS = st.builds(
    ToolResult,
    tool_call_id=NAME,
    name=NAME,
    content=st.lists(PARTS, max_size=3),
    display_text=OPTIONAL_TEXT,
    is_error=st.booleans(),
    is_interrupt=st.booleans(),
    interrupt_data=st.none() | OBJECT,
    processed_content=JSON,
)
STATUSES = st.sampled_from(
    ["complete", "length", "cancelled", "content_filtered", "stream_error"]
)
USAGES = st.builds(
    TokenUsage,
    input_tokens=COUNT,
    output_tokens=COUNT,
    raw=OBJECT,
    cumulative=st.booleans(),
)
MESSAGES = st.one_of(
    st.builds(
        Message,
        role=st.sampled_from(["system", "user"]),
        content=st.lists(PARTS, max_size=3),
        status=STATUSES,
        metadata=OBJECT,
    ),
    st.builds(
        Message,
        role=st.just("assistant"),
        content=st.lists(PARTS, max_size=3),
        tool_calls=st.lists(CALLS, max_size=3),
        status=STATUSES,
        metadata=OBJECT,
    ),
    st.builds(
        Message,
        role=st.just("tool"),
        tool_results=st.lists(RESULTS, max_size=3),
        metadata=OBJECT,
    ),
)
PARTIAL_CALLS = st.builds(
    PartialToolCall,
    index=COUNT,
    id=OPTIONAL_TEXT,
    name=NAME,
    partial_arguments=TEXT,
)
# A delta carries something: text, here.
DELTAS = st.builds(
    MessageDelta,
    text=NAME,
    thinking=TEXT,
    tool_call=st.none() | PARTIAL_CALLS,
    usage=st.none() | USAGES,
    status=st.none() | STATUSES,
)
TIMES = st.datetimes(
    timezones=st.sampled_from(
        [None, datetime.UTC, datetime.timezone(datetime.timedelta(hours=-9.5))]
    )
)
VALUE_STRATEGIES = st.one_of(
    PARTS,
    CALLS,
    RESULTS,
    MESSAGES,
    DELTAS,
    USAGES,
    st.sampled_from(FinishReason),
    st.builds(
        ChatResponse,
        message=MESSAGES,
        id=OPTIONAL_TEXT,
        model_name=OPTIONAL_TEXT,
        token_usage=st.none() | USAGES,
        finish_reason=st.none() | st.sampled_from(FinishReason),
        metadata=OBJECT,
    ),
    st.builds(
        Invocation,
        id=TEXT,
        name=TEXT,
        parent_id=OPTIONAL_TEXT,
        custom_context=OBJECT,
        started_at=TIMES,
    ),
    st.builds(PartialResponse, text=NAME),
    st.builds(PartialThinking, text=NAME),
    PARTIAL_CALLS,
    st.builds(CompleteToolCall, index=COUNT, tool_call=CALLS),
    st.builds(
        ToolProgress,
        st.floats(allow_nan=False, allow_infinity=False),
        st.none() | st.floats(allow_nan=False, allow_infinity=False),
        OPTIONAL_TEXT,
    ),
    st.just(Allow()),
    st.builds(UpdateArguments, OBJECT),
    st.builds(Deny, TEXT),
    st.builds(Interrupt, TEXT, OBJECT),
    st.builds(
        ReviewContext,
        human_decision=st.sampled_from([None, "approve", "edit"]),
        custom_context=OBJECT,
    ),
    st.builds(Decision.edit, OBJECT),
    st.builds(Decision.reject, TEXT),
    st.builds(
        EventRecord,
        seq=COUNT,
        event=NAME,
        run_id=OPTIONAL_TEXT,
        invocation_id=OPTIONAL_TEXT,
        parent_id=OPTIONAL_TEXT,
        time=TIMES,
        payload=OBJECT,
    ),
)


class TestProperties:
    @settings(max_examples=300, deadline=None)
    @given(VALUE_STRATEGIES)
    def test_round_trip(self, value: Any) -> None:
        """Any value of any value type comes back equal through JSON text and
        through pickle (any str, huge ints and nested data included)."""
        text = dumps(value)
        assert text.isascii()
        assert loads(text) == value
        assert decode(encode(value)) == value
        assert pickle.loads(pickle.dumps(value)) == value

    @settings(max_examples=100, deadline=None)
    @given(
        st.builds(
            LangHooksError,
            st.sampled_from(["timeout", "rate_limited", "invalid_request"]),
            TEXT,
            retryable=st.none() | st.booleans(),
            retry_after=st.none() | st.floats(min_value=0, max_value=1e9),
            metadata=OBJECT,
        )
    )
    def test_error_round_trip(self, error: LangHooksError) -> None:
        """Any LangHooksError comes back with equal fields."""
        assert _fields(loads(dumps(error), type=LangHooksError)) == _fields(error)

    def test_int_past_str_limit(self) -> None:
        """An int too long for int-to-str conversion is a clear ValueError."""
        call = ToolCall(call_id="c", name="f", arguments={"n": 10**5000})
        with pytest.raises(ValueError, match="integer string conversion"):
            dumps(call)
