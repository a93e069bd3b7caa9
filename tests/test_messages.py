"""The value types: construction, conversion and validation."""

from __future__ import annotations

import json
import pickle
from collections.abc import Mapping
from typing import Any

import attrs
import pytest

from langhooks import (
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    Deny,
    FinishReason,
    Invocation,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
)
from langhooks._core._messages import (
    message_tuple,
    trusted_partial_response,
    trusted_text_delta,
)
from langhooks._core._tools import tool_tuple


def _echo(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return str(dict(arguments))


async def _aecho(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return str(dict(arguments))


class TestContentPart:
    def test_text_and_thinking_constructors(self) -> None:
        """ContentPart.text and .thinking build parts of those types."""
        assert ContentPart.text("hi") == ContentPart(type="text", content="hi")
        assert ContentPart.thinking("hm") == ContentPart(type="thinking", content="hm")

    @pytest.mark.parametrize("kind", ["text", "thinking", "image_url", "file"])
    def test_known_types_accepted(self, kind: Any) -> None:
        """Every documented content type is accepted."""
        assert ContentPart(type=kind, content="x").type == kind

    def test_unknown_type_names_the_field(self) -> None:
        """An unknown content type fails naming the field and the allowed values."""
        with pytest.raises(ValueError, match=r"type must be one of .*'text'.*'video'"):
            ContentPart(type="video", content="x")  # type: ignore[arg-type]

    def test_content_must_be_str(self) -> None:
        """Content that is not a str fails naming the field."""
        with pytest.raises(TypeError, match="content"):
            ContentPart(type="text", content=3)  # type: ignore[arg-type]

    def test_frozen(self) -> None:
        """Parts are immutable; attrs.evolve makes changed copies."""
        part = ContentPart.text("a")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            part.content = "b"  # type: ignore[misc]
        assert attrs.evolve(part, content="b").content == "b"


class TestToolCall:
    def test_defaults(self) -> None:
        """index defaults to 0, arguments to empty, display_text to None."""
        call = ToolCall(call_id="c1", name="search")
        assert (call.index, dict(call.arguments), call.display_text) == (0, {}, None)

    def test_arguments_copied(self) -> None:
        """arguments is copied, so later changes to the caller's dict do not leak."""
        given = {"q": "x"}
        call = ToolCall(call_id="c1", name="search", arguments=given)
        given["q"] = "y"
        assert call.arguments == {"q": "x"}

    def test_arguments_must_be_a_mapping(self) -> None:
        """Non-mapping arguments fail naming the field."""
        with pytest.raises(TypeError, match="arguments must be a mapping"):
            ToolCall(call_id="c1", name="s", arguments=["q"])  # type: ignore[arg-type]

    @pytest.mark.parametrize("field", ["call_id", "name"])
    def test_ids_must_be_non_empty(self, field: str) -> None:
        """An empty call_id or name fails naming the field."""
        values: dict[str, Any] = {"call_id": "c1", "name": "s", field: ""}
        with pytest.raises(ValueError, match=f"{field} must be a non-empty str"):
            ToolCall(**values)

    def test_negative_index_rejected(self) -> None:
        """A negative index fails naming the field."""
        with pytest.raises(ValueError, match="index must be a non-negative int"):
            ToolCall(call_id="c1", name="s", index=-1)

    def test_display_text_must_be_str(self) -> None:
        """A display_text that is not a str fails naming the field."""
        with pytest.raises(TypeError, match="display_text must be a str or None"):
            ToolCall(call_id="c1", name="s", display_text=1)  # type: ignore[arg-type]


class TestToolResult:
    def test_str_content_converted(self) -> None:
        """A str content becomes one text part; text joins the text parts."""
        result = ToolResult(tool_call_id="c1", name="s", content="42")
        assert result.content == (ContentPart.text("42"),)
        assert result.text == "42"

    def test_empty_str_is_no_parts(self) -> None:
        """An empty str content becomes no parts at all."""
        assert ToolResult(tool_call_id="c1", name="s", content="").content == ()

    def test_parts_content_kept(self) -> None:
        """A sequence of parts is kept in order; text skips non-text parts."""
        parts = [
            ContentPart.text("a"),
            ContentPart.thinking("t"),
            ContentPart.text("b"),
        ]
        result = ToolResult(tool_call_id="c1", name="s", content=parts)
        assert result.content == tuple(parts)
        assert result.text == "ab"

    def test_non_part_content_rejected(self) -> None:
        """A content item that is not a ContentPart fails naming the field."""
        with pytest.raises(TypeError, match="content must be a str or ContentParts"):
            ToolResult(tool_call_id="c1", name="s", content=[1])  # type: ignore[list-item]

    def test_flags_default_false(self) -> None:
        """A plain result is neither an error nor an interrupt."""
        result = ToolResult(tool_call_id="c1", name="s")
        assert (result.is_error, result.is_interrupt, result.exception) == (
            False,
            False,
            None,
        )

    def test_exception_not_in_repr(self) -> None:
        """The exception is kept but not shown in repr."""
        error = RuntimeError("boom")
        result = ToolResult(tool_call_id="c1", name="s", exception=error)
        assert result.exception is error
        assert "boom" not in repr(result)


class TestMessage:
    def test_dict_content_names_the_dict(self) -> None:
        """Content given as a dict says it got a dict (it iterates its keys, which
        are str: the error used to say it got a str)."""
        with pytest.raises(
            TypeError, match=r"^content must be a str or ContentParts, got dict$"
        ):
            Message.user({"text": "hi"})  # type: ignore[arg-type]

    def test_constructors(self) -> None:
        """system/user/assistant/tool build messages with the right role."""
        call = ToolCall(call_id="c1", name="s")
        result = ToolResult(tool_call_id="c1", name="s", content="ok")
        assert Message.system("be brief").role == "system"
        assert Message.user("hi").text == "hi"
        assistant = Message.assistant("", tool_calls=[call])
        assert (assistant.role, assistant.tool_calls, assistant.content) == (
            "assistant",
            (call,),
            (),
        )
        tool = Message.tool([result])
        assert (tool.role, tool.tool_results) == ("tool", (result,))

    def test_text_and_thinking(self) -> None:
        """text joins the text parts, thinking the thinking parts."""
        message = Message(
            role="assistant",
            content=[
                ContentPart.thinking("let me "),
                ContentPart.text("Hel"),
                ContentPart.thinking("think"),
                ContentPart.text("lo"),
                ContentPart(type="image_url", content="http://x"),
            ],
        )
        assert (message.text, message.thinking) == ("Hello", "let me think")

    def test_defaults(self) -> None:
        """status defaults to complete, metadata to an empty mapping."""
        message = Message.user("x")
        assert (message.status, dict(message.metadata)) == ("complete", {})

    def test_metadata_frozen_copy(self) -> None:
        """metadata is a read-only copy of what was given."""
        given = {"id": "r1"}
        message = Message(role="assistant", content="x", metadata=given)
        given["id"] = "r2"
        assert message.metadata == {"id": "r1"}
        with pytest.raises(TypeError):
            message.metadata["id"] = "r3"  # type: ignore[index]

    def test_unknown_role_names_the_field(self) -> None:
        """An unknown role fails naming the field."""
        with pytest.raises(ValueError, match="role must be one of"):
            Message(role="robot", content="x")  # type: ignore[arg-type]

    def test_unknown_status_names_the_field(self) -> None:
        """An unknown status fails naming the field."""
        with pytest.raises(ValueError, match="status must be one of"):
            Message(role="user", content="x", status="done")  # type: ignore[arg-type]

    def test_metadata_must_be_mapping(self) -> None:
        """A metadata that is not a mapping fails naming the field."""
        with pytest.raises(TypeError, match="metadata must be a mapping, got int"):
            Message(role="user", metadata=5)  # type: ignore[arg-type]

    def test_tool_calls_only_on_assistant(self) -> None:
        """Tool calls on a non-assistant message are rejected."""
        call = ToolCall(call_id="c1", name="s")
        with pytest.raises(ValueError, match="tool_calls need role 'assistant'"):
            Message(role="user", tool_calls=[call])

    def test_tool_results_only_on_tool(self) -> None:
        """Tool results on a non-tool message are rejected."""
        result = ToolResult(tool_call_id="c1", name="s")
        with pytest.raises(ValueError, match="tool_results need role 'tool'"):
            Message(role="assistant", tool_results=[result])

    def test_tool_calls_items_checked(self) -> None:
        """A tool_calls item that is not a ToolCall fails naming the field."""
        with pytest.raises(
            TypeError, match="tool_calls must be ToolCalls, got list of dict"
        ):
            Message(role="assistant", tool_calls=[{}])  # type: ignore[list-item]

    def test_tool_results_items_checked(self) -> None:
        """A tool_results item that is not a ToolResult fails naming the field."""
        with pytest.raises(TypeError, match="tool_results must be ToolResults"):
            Message(role="tool", tool_results=["x"])  # type: ignore[list-item]


class TestPartials:
    @pytest.mark.parametrize("kind", [PartialResponse, PartialThinking])
    def test_empty_text_rejected(self, kind: type[PartialResponse]) -> None:
        """A stream never delivers an empty partial: empty text fails at once."""
        with pytest.raises(ValueError, match="text must be a non-empty str"):
            kind(text="")

    @pytest.mark.parametrize("kind", [PartialResponse, PartialThinking])
    def test_text_kept(self, kind: type[PartialResponse]) -> None:
        """Whitespace is text too and is kept exactly."""
        assert kind(text=" \n").text == " \n"

    def test_trusted_partial_response(self) -> None:
        """The drivers' unchecked constructor builds the same value as the class."""
        trusted = trusted_partial_response("Hel")
        assert trusted == PartialResponse(text="Hel")
        assert attrs.asdict(trusted) == {"text": "Hel"}

    @pytest.mark.parametrize("thinking", [False, True])
    def test_trusted_text_delta(self, thinking: bool) -> None:
        """The bridges' unchecked delta sets every field as the class does."""
        trusted = trusted_text_delta("Hel", thinking=thinking)
        checked = MessageDelta(thinking="Hel") if thinking else MessageDelta(text="Hel")
        assert trusted == checked
        assert attrs.asdict(trusted) == attrs.asdict(checked)

    def test_partial_tool_call(self) -> None:
        """A fragment may have no id yet and empty arguments text."""
        partial = PartialToolCall(index=1, id=None, name="s", partial_arguments="")
        assert (partial.index, partial.id, partial.partial_arguments) == (1, None, "")

    def test_partial_tool_call_validation(self) -> None:
        """A negative index or empty name fails naming the field."""
        with pytest.raises(ValueError, match="index"):
            PartialToolCall(index=-1, id="c", name="s", partial_arguments="")
        with pytest.raises(ValueError, match="name"):
            PartialToolCall(index=0, id="c", name="", partial_arguments="")
        with pytest.raises(TypeError, match="partial_arguments"):
            PartialToolCall(index=0, id="c", name="s", partial_arguments=None)  # type: ignore[arg-type]

    def test_complete_tool_call(self) -> None:
        """A complete call carries a ToolCall, nothing else."""
        call = ToolCall(call_id="c1", name="s", arguments={"a": 1})
        assert CompleteToolCall(index=0, tool_call=call).tool_call is call
        with pytest.raises(TypeError, match="tool_call"):
            CompleteToolCall(index=0, tool_call={"a": 1})  # type: ignore[arg-type]


class TestTokenUsage:
    def test_total(self) -> None:
        """total_tokens is input plus output."""
        assert TokenUsage(input_tokens=3, output_tokens=4).total_tokens == 7

    @pytest.mark.parametrize("field", ["input_tokens", "output_tokens"])
    def test_negative_counts_rejected(self, field: str) -> None:
        """A negative count fails naming the field."""
        counts: dict[str, Any] = {field: -1}
        with pytest.raises(ValueError, match=f"{field} must be a non-negative int"):
            TokenUsage(**counts)

    def test_bool_is_not_a_count(self) -> None:
        """True is not accepted as a count of one."""
        with pytest.raises(ValueError, match="input_tokens"):
            TokenUsage(input_tokens=True)

    def test_raw_must_be_mapping(self) -> None:
        """A raw usage that is not a mapping fails naming the field."""
        with pytest.raises(TypeError, match="raw must be a mapping"):
            TokenUsage(raw=[1])  # type: ignore[arg-type]

    def test_add_sums(self) -> None:
        """Adding incremental reports sums the counts and merges raw."""
        total = TokenUsage(input_tokens=1, output_tokens=2, raw={"a": 1}) + TokenUsage(
            input_tokens=10, output_tokens=20, raw={"b": 2}
        )
        assert (total.input_tokens, total.output_tokens, dict(total.raw)) == (
            11,
            22,
            {"a": 1, "b": 2},
        )
        assert not total.cumulative

    def test_cumulative_replaces(self) -> None:
        """A cumulative report replaces the counts it carries instead of adding."""
        start = TokenUsage(input_tokens=100, output_tokens=1)
        merged = start + TokenUsage(output_tokens=40, cumulative=True)
        assert (merged.input_tokens, merged.output_tokens, merged.cumulative) == (
            100,
            40,
            True,
        )
        merged = merged + TokenUsage(
            input_tokens=120, output_tokens=55, cumulative=True
        )
        assert (merged.input_tokens, merged.output_tokens) == (120, 55)

    def test_add_other_type_unsupported(self) -> None:
        """Adding something that is not a TokenUsage is a TypeError."""
        with pytest.raises(TypeError):
            TokenUsage() + 1  # type: ignore[operator]


class TestMessageDelta:
    def test_must_carry_something(self) -> None:
        """An empty delta is rejected."""
        with pytest.raises(ValueError, match="must carry text, thinking"):
            MessageDelta()

    def test_each_field_alone_is_enough(self) -> None:
        """Text, thinking, a fragment, usage or status alone makes a valid delta."""
        fragment = PartialToolCall(index=0, id="c", name="s", partial_arguments="{")
        for delta in (
            MessageDelta(text="a"),
            MessageDelta(thinking="t"),
            MessageDelta(tool_call=fragment),
            MessageDelta(usage=TokenUsage()),
            MessageDelta(status="length"),
        ):
            assert isinstance(delta, MessageDelta)

    def test_unknown_status_names_the_field(self) -> None:
        """An unknown status fails naming the field."""
        with pytest.raises(ValueError, match="status must be None or one of"):
            MessageDelta(status="finished")  # type: ignore[arg-type]

    def test_field_types_checked(self) -> None:
        """Wrongly typed fields fail naming the field."""
        with pytest.raises(TypeError, match="text"):
            MessageDelta(text=1)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="usage"):
            MessageDelta(usage={"input_tokens": 1})  # type: ignore[arg-type]


class TestChatResponse:
    def test_defaults(self) -> None:
        """Only the message is required."""
        response = ChatResponse(message=Message.assistant("hi"))
        assert (response.id, response.token_usage, response.finish_reason) == (
            None,
            None,
            None,
        )
        assert response.metadata == {}

    def test_full(self) -> None:
        """All fields are kept; metadata may carry headers and rate limits."""
        response = ChatResponse(
            message=Message.assistant("hi"),
            id="r1",
            model_name="m",
            token_usage=TokenUsage(input_tokens=1),
            finish_reason=FinishReason.STOP,
            metadata={"response_headers": {"x": "1"}, "ratelimit": {}},
        )
        assert response.finish_reason is FinishReason.STOP
        assert response.metadata["response_headers"] == {"x": "1"}

    def test_validation(self) -> None:
        """A wrong message or finish reason type fails naming the field."""
        with pytest.raises(TypeError, match="message"):
            ChatResponse(message="hi")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="finish_reason"):
            ChatResponse(message=Message.assistant("hi"), finish_reason="stop")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="metadata must be a mapping"):
            ChatResponse(message=Message.assistant("hi"), metadata=1)  # type: ignore[arg-type]

    def test_finish_reasons(self) -> None:
        """The five finish reasons exist."""
        assert {r.name for r in FinishReason} == {
            "STOP",
            "LENGTH",
            "TOOL_EXECUTION",
            "CONTENT_FILTER",
            "OTHER",
        }

    def test_finish_reason_is_a_str(self) -> None:
        """A finish reason equals its value and is written by json as that string."""
        reason: str = FinishReason.STOP
        assert reason == "stop"
        assert FinishReason("tool_execution") is FinishReason.TOOL_EXECUTION
        assert json.dumps({"reason": FinishReason.LENGTH}) == '{"reason": "length"}'
        assert f"{FinishReason.CONTENT_FILTER}" == "content_filter"


class TestLangHooksError:
    @pytest.mark.parametrize(
        "kind", ["rate_limited", "overloaded", "timeout", "connection"]
    )
    def test_transient_types_retryable(self, kind: Any) -> None:
        """Rate limits, overload, timeouts and connection errors retry by default."""
        assert LangHooksError(kind, "x").retryable

    @pytest.mark.parametrize(
        "kind", ["authentication", "invalid_request", "protocol_error", "cancelled"]
    )
    def test_other_types_not_retryable(self, kind: Any) -> None:
        """Other types do not retry by default."""
        assert not LangHooksError(kind, "x").retryable

    def test_explicit_retryable_wins(self) -> None:
        """An explicit retryable overrides the default in both directions."""
        assert LangHooksError("stream_error", "x", retryable=True).retryable
        assert not LangHooksError("rate_limited", "x", retryable=False).retryable

    def test_attributes_and_str(self) -> None:
        """The error carries its details and reads as 'type: message'."""
        cause = OSError("reset")
        error = LangHooksError(
            "connection",
            "the connection was reset",
            original=cause,
            retry_after=1.5,
            metadata={"status_code": 503},
        )
        assert (error.type, error.message, error.original) == (
            "connection",
            "the connection was reset",
            cause,
        )
        assert (error.retry_after, error.metadata["status_code"]) == (1.5, 503)
        assert str(error) == "connection: the connection was reset"
        assert repr(error) == "LangHooksError('connection', 'the connection was reset')"
        assert isinstance(error, Exception)

    def test_unknown_type_rejected(self) -> None:
        """An unknown error type fails naming the field."""
        with pytest.raises(ValueError, match="type must be one of"):
            LangHooksError("oops", "x")  # type: ignore[arg-type]

    def test_message_must_be_str(self) -> None:
        """A message that is not a str is rejected."""
        with pytest.raises(TypeError, match="message must be a str"):
            LangHooksError("timeout", None)  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [-1, float("nan"), "5", True])
    def test_bad_retry_after_rejected(self, value: Any) -> None:
        """retry_after must be a non-negative number of seconds."""
        with pytest.raises(ValueError, match="retry_after must be a number of seconds"):
            LangHooksError("rate_limited", "x", retry_after=value)

    def test_retry_after_zero_and_int(self) -> None:
        """Zero and whole seconds are fine."""
        assert LangHooksError("rate_limited", "x", retry_after=0).retry_after == 0
        assert LangHooksError("rate_limited", "x", retry_after=3).retry_after == 3

    def test_retryable_must_be_bool(self) -> None:
        """retryable is a bool (or None for the default), never a truthy value."""
        with pytest.raises(TypeError, match="retryable must be a bool or None"):
            LangHooksError("timeout", "x", retryable="no")  # type: ignore[arg-type]

    def test_metadata_must_be_mapping(self) -> None:
        """A metadata that is not a mapping fails naming the field."""
        with pytest.raises(TypeError, match="metadata must be a mapping"):
            LangHooksError("timeout", "x", metadata=[1])  # type: ignore[arg-type]

    def test_pickles(self) -> None:
        """The error survives pickling with every attribute (for process pools)."""
        error = LangHooksError(
            "rate_limited",
            "slow down",
            original="429",
            retryable=False,
            retry_after=2.0,
            metadata={"status_code": 429},
        )
        copy = pickle.loads(pickle.dumps(error))
        assert (
            copy.type,
            copy.message,
            copy.original,
            copy.retryable,
            copy.retry_after,
            dict(copy.metadata),
        ) == ("rate_limited", "slow down", "429", False, 2.0, {"status_code": 429})


class TestTool:
    def test_defaults(self) -> None:
        """Only name and function are required; the rest are keyword-only."""
        tool = Tool("echo", _echo)
        assert (tool.description, tool.parameters_schema, tool.concurrent) == (
            "",
            None,
            False,
        )
        assert not tool.is_async

    def test_async_function_detected(self) -> None:
        """is_async is true for a coroutine function."""
        assert Tool("echo", _aecho).is_async

    def test_schema_frozen(self) -> None:
        """The parameters schema is kept as a read-only mapping."""
        tool = Tool("echo", _echo, parameters_schema={"type": "object"})
        assert tool.parameters_schema == {"type": "object"}
        with pytest.raises(TypeError, match="parameters_schema must be a mapping"):
            Tool("echo", _echo, parameters_schema="{}")  # type: ignore[arg-type]

    @pytest.mark.parametrize("name", ["", "has space", "a" * 65, "dots.no"])
    def test_bad_names_rejected(self, name: str) -> None:
        """Names providers would reject fail naming the rule."""
        with pytest.raises(ValueError, match="name must be 1-64 letters"):
            Tool(name, _echo)

    def test_function_must_be_callable(self) -> None:
        """A function that is not callable fails naming the field."""
        with pytest.raises(TypeError, match="function must be callable"):
            Tool("echo", "not a function")  # type: ignore[arg-type]

    def test_tool_context(self) -> None:
        """ToolContext freezes custom_context and names the field on error."""
        call = ToolCall(call_id="c1", name="echo")
        assert ToolContext(call=call, custom_context={"u": 1}).custom_context == {
            "u": 1
        }
        with pytest.raises(TypeError, match="custom_context must be a mapping"):
            ToolContext(call=call, custom_context=1)  # type: ignore[arg-type]


class TestConverters:
    def test_message_tuple(self) -> None:
        """message_tuple freezes messages and rejects anything else."""
        messages = [Message.user("a"), Message.user("b")]
        assert message_tuple(messages) == tuple(messages)
        with pytest.raises(
            TypeError, match="messages must be Messages, got list of str"
        ):
            message_tuple(["a"])  # type: ignore[list-item]

    def test_tool_tuple(self) -> None:
        """tool_tuple freezes tools and rejects non-tools."""
        tools = [Tool("a", _echo), Tool("b", _echo)]
        assert tool_tuple(tools) == tuple(tools)
        with pytest.raises(TypeError, match="tools must be Tools"):
            tool_tuple([_echo])  # type: ignore[list-item]

    def test_tool_tuple_unique_names(self) -> None:
        """Two tools with one name are rejected, naming it."""
        with pytest.raises(ValueError, match=r"repeated: \['a'\]"):
            tool_tuple([Tool("a", _echo), Tool("b", _echo), Tool("a", _aecho)])

    @pytest.mark.parametrize(
        ("build", "field"),
        [
            (lambda v: ToolResult(tool_call_id="c", name="t", content=v), "content"),
            (lambda v: Message(role="user", content=v), "content"),
            (lambda v: Message(role="user", content="x", tool_calls=v), "tool_calls"),
            (
                lambda v: Message(role="tool", tool_results=v, content=""),
                "tool_results",
            ),
            (message_tuple, "messages"),
            (tool_tuple, "tools"),
        ],
    )
    def test_a_non_sequence_names_the_field(self, build: Any, field: str) -> None:
        """A value that is not a sequence at all fails with a TypeError naming the
        field, like a sequence holding a wrong item does."""
        with pytest.raises(TypeError, match=f"^{field} must be .*, got int$"):
            build(5)


def _unchecked(value: object) -> Any:
    """``value``, hidden from the type checker (these tests pass wrong types)."""
    return value


class TestTypeErrors:
    @pytest.mark.parametrize(
        ("build", "expected"),
        [
            (
                lambda: ChatResponse(message=_unchecked("hi")),
                "message must be a Message, got str",
            ),
            (
                lambda: ContentPart(type="text", content=_unchecked(None)),
                "content must be a str, got NoneType",
            ),
            (
                lambda: CompleteToolCall(index=0, tool_call=_unchecked("x")),
                "tool_call must be a ToolCall, got str",
            ),
            (
                lambda: MessageDelta(usage=_unchecked(3)),
                "usage must be a TokenUsage or None, got int",
            ),
            (
                lambda: ChatResponse(
                    message=Message.assistant("x"),
                    finish_reason=_unchecked("stop"),
                ),
                "finish_reason must be a FinishReason or None, got str",
            ),
            (
                lambda: PartialResponseContext(handle=_unchecked(None)),
                "handle must be a StreamingHandle, got NoneType",
            ),
            (lambda: Deny(_unchecked(5)), "reason must be a str, got int"),
            (lambda: Invocation(name=_unchecked(3)), "name must be a str, got int"),
        ],
    )
    def test_a_wrong_type_is_one_plain_sentence(
        self, build: Any, expected: str
    ) -> None:
        """A value of the wrong type fails with a TypeError whose text is one
        sentence naming the field, the expected type and the type given."""
        with pytest.raises(TypeError) as caught:
            build()
        assert str(caught.value) == expected
