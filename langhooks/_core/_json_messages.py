"""The codec of what a chain's state holds: messages, tool calls and results,
usage, answers, errors and the run's invocation; each type's decoder (fields ->
value) beside its row of the codec's table (its fields, from which its encoder and
the event recorder's text writer are made: see ``_codec_rows``).

It sits in ``_core``, beside the types, so that the runtime's state codec
(``chain._state_codec``) imports it plainly, as ``langhooks.codec`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._codec_rows import (
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
from ._invocation import Invocation
from ._json_fields import (
    bool_field,
    mapping_or_none,
    optional_str,
    str_field,
    time_field,
)
from ._messages import (
    ChatResponse,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    TokenUsage,
    ToolCall,
    ToolResult,
)

__all__ = [
    "CALL",
    "CODECS",
    "MESSAGE",
    "USAGE",
    "decode_call",
    "decode_invocation",
    "decode_message",
    "decode_usage",
    "encode_call",
    "encode_invocation",
    "encode_message",
    "encode_usage",
]


def decode_part(data: Mapping[str, Any]) -> ContentPart:
    return ContentPart(type=data["content_type"], content=data["content"])


PART: Final = ValueCodec(
    ContentPart, decode_part, ("content_type", STR, "type"), ("content", STR)
)


def decode_parts(items: Any) -> list[ContentPart]:
    return [decode_part(item) for item in items]


def decode_call(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        call_id=data["call_id"],
        name=data["name"],
        arguments=data["arguments"],
        index=data["index"],
        display_text=data["display_text"],
    )


CALL: Final = ValueCodec(
    ToolCall,
    decode_call,
    ("call_id", STR),
    ("name", STR),
    ("arguments", DATA),
    ("index", INT),
    ("display_text", OPT_STR),
)


def decode_result(data: Mapping[str, Any]) -> ToolResult:
    return ToolResult(
        tool_call_id=data["tool_call_id"],
        name=data["name"],
        content=decode_parts(data["content"]),
        display_text=data["display_text"],
        is_error=bool_field(data["is_error"], "is_error"),
        is_interrupt=bool_field(data["is_interrupt"], "is_interrupt"),
        interrupt_data=mapping_or_none(data["interrupt_data"], "interrupt_data"),
        processed_content=data["processed_content"],
    )


RESULT: Final = ValueCodec(
    ToolResult,
    decode_result,
    ("tool_call_id", STR),
    ("name", STR),
    ("content", each(PART)),
    ("display_text", OPT_STR),
    ("is_error", BOOL),
    ("is_interrupt", BOOL),
    ("interrupt_data", DATA),
    ("processed_content", DATA),
)


def decode_message(data: Mapping[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=decode_parts(data["content"]),
        tool_calls=[decode_call(item) for item in data["tool_calls"]],
        tool_results=[decode_result(item) for item in data["tool_results"]],
        status=data["status"],
        metadata=data["metadata"],
    )


MESSAGE: Final = ValueCodec(
    Message,
    decode_message,
    ("role", STR),
    ("content", each(PART)),
    ("tool_calls", each(CALL)),
    ("tool_results", each(RESULT)),
    ("status", STR),
    ("metadata", DATA),
)


def decode_usage(data: Mapping[str, Any]) -> TokenUsage:
    return TokenUsage(
        input_tokens=data["input_tokens"],
        output_tokens=data["output_tokens"],
        raw=data["raw"],
        cumulative=bool_field(data["cumulative"], "cumulative"),
    )


USAGE: Final = ValueCodec(
    TokenUsage,
    decode_usage,
    ("input_tokens", INT),
    ("output_tokens", INT),
    ("raw", DATA),
    ("cumulative", BOOL),
)


def decode_reason(data: Mapping[str, Any]) -> FinishReason:
    return FinishReason(data["value"])


REASON: Final = ValueCodec(FinishReason, decode_reason, ("value", STR))


def decode_response(data: Mapping[str, Any]) -> ChatResponse:
    usage, reason = data["token_usage"], data["finish_reason"]
    return ChatResponse(
        message=decode_message(data["message"]),
        id=data["id"],
        model_name=data["model_name"],
        token_usage=None if usage is None else decode_usage(usage),
        finish_reason=None if reason is None else FinishReason(reason),
        metadata=data["metadata"],
    )


RESPONSE: Final = ValueCodec(
    ChatResponse,
    decode_response,
    ("message", nested(MESSAGE)),
    ("id", OPT_STR),
    ("model_name", OPT_STR),
    ("token_usage", nested(USAGE)),
    ("finish_reason", OPT_VALUE),
    ("metadata", DATA),
)


def decode_error(data: Mapping[str, Any]) -> LangHooksError:
    return LangHooksError(
        data["error_type"],
        data["message"],
        retryable=bool_field(data["retryable"], "retryable"),
        retry_after=data["retry_after"],
        metadata=data["metadata"],
    )


ERROR: Final = ValueCodec(
    LangHooksError,
    decode_error,
    ("error_type", STR, "type"),
    ("message", STR),
    ("retryable", BOOL),
    ("retry_after", SCALAR),
    ("metadata", DATA),
)


def decode_invocation(data: Mapping[str, Any]) -> Invocation:
    return Invocation(
        id=str_field(data["id"], "id"),
        name=data["name"],
        parent_id=optional_str(data["parent_id"], "parent_id"),
        custom_context=data["custom_context"],
        started_at=time_field(data["started_at"], "started_at"),
    )


INVOCATION: Final = ValueCodec(
    Invocation,
    decode_invocation,
    ("id", STR),
    ("name", STR),
    ("parent_id", OPT_STR),
    ("custom_context", DATA),
    ("started_at", TIME),
)

#: The encoders the run state uses.
encode_call: Final = CALL.encode
encode_message: Final = MESSAGE.encode
encode_usage: Final = USAGE.encode
encode_invocation: Final = INVOCATION.encode

#: This concept's rows of the codec's table.
CODECS: Final[tuple[ValueCodec, ...]] = (
    PART,
    CALL,
    RESULT,
    MESSAGE,
    USAGE,
    REASON,
    RESPONSE,
    ERROR,
    INVOCATION,
)
