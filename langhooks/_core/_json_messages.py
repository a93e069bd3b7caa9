"""The codec of what a chain's state holds: messages, tool calls and results,
usage, answers, errors and the run's invocation; each type's encoder (value ->
fields) beside its decoder (fields -> value), and their rows of the codec's table.

It sits in ``_core``, beside the types, so that the runtime's state codec
(``chain._state_codec``) imports it plainly, as ``langhooks.codec`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._invocation import Invocation
from ._json_fields import (
    ValueCodec,
    bool_field,
    data_field,
    each_field,
    mapping_or_none,
    nested_field,
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
    "CODECS",
    "decode_call",
    "decode_invocation",
    "decode_message",
    "decode_usage",
    "encode_call",
    "encode_invocation",
    "encode_message",
    "encode_usage",
]


def encode_part(part: ContentPart) -> dict[str, Any]:
    return {"content_type": part.type, "content": part.content}


def decode_part(data: Mapping[str, Any]) -> ContentPart:
    return ContentPart(type=data["content_type"], content=data["content"])


def decode_parts(items: Any) -> list[ContentPart]:
    return [decode_part(item) for item in items]


def encode_call(call: ToolCall) -> dict[str, Any]:
    return {
        "call_id": call.call_id,
        "name": call.name,
        "arguments": data_field(call.arguments, "arguments"),
        "index": call.index,
        "display_text": call.display_text,
    }


def decode_call(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        call_id=data["call_id"],
        name=data["name"],
        arguments=data["arguments"],
        index=data["index"],
        display_text=data["display_text"],
    )


def encode_result(result: ToolResult) -> dict[str, Any]:
    return {
        "tool_call_id": result.tool_call_id,
        "name": result.name,
        "content": [encode_part(part) for part in result.content],
        "display_text": result.display_text,
        "is_error": result.is_error,
        "is_interrupt": result.is_interrupt,
        "interrupt_data": data_field(result.interrupt_data, "interrupt_data"),
        "processed_content": data_field(result.processed_content, "processed_content"),
    }


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


def encode_message(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": [encode_part(part) for part in message.content],
        "tool_calls": each_field(message.tool_calls, encode_call, "tool_calls"),
        "tool_results": each_field(message.tool_results, encode_result, "tool_results"),
        "status": message.status,
        "metadata": data_field(message.metadata, "metadata"),
    }


def decode_message(data: Mapping[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=decode_parts(data["content"]),
        tool_calls=[decode_call(item) for item in data["tool_calls"]],
        tool_results=[decode_result(item) for item in data["tool_results"]],
        status=data["status"],
        metadata=data["metadata"],
    )


def encode_usage(usage: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "raw": data_field(usage.raw, "raw"),
        "cumulative": usage.cumulative,
    }


def decode_usage(data: Mapping[str, Any]) -> TokenUsage:
    return TokenUsage(
        input_tokens=data["input_tokens"],
        output_tokens=data["output_tokens"],
        raw=data["raw"],
        cumulative=bool_field(data["cumulative"], "cumulative"),
    )


def encode_reason(reason: FinishReason) -> dict[str, Any]:
    return {"value": reason.value}


def decode_reason(data: Mapping[str, Any]) -> FinishReason:
    return FinishReason(data["value"])


def encode_response(response: ChatResponse) -> dict[str, Any]:
    reason = response.finish_reason
    return {
        "message": nested_field(response.message, encode_message, "message"),
        "id": response.id,
        "model_name": response.model_name,
        "token_usage": nested_field(response.token_usage, encode_usage, "token_usage"),
        "finish_reason": None if reason is None else reason.value,
        "metadata": data_field(response.metadata, "metadata"),
    }


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


def encode_error(error: LangHooksError) -> dict[str, Any]:
    return {
        "error_type": error.type,
        "message": error.message,
        "retryable": error.retryable,
        "retry_after": error.retry_after,
        "metadata": data_field(error.metadata, "metadata"),
    }


def decode_error(data: Mapping[str, Any]) -> LangHooksError:
    return LangHooksError(
        data["error_type"],
        data["message"],
        retryable=bool_field(data["retryable"], "retryable"),
        retry_after=data["retry_after"],
        metadata=data["metadata"],
    )


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


#: This concept's rows of the codec's table.
CODECS: Final[tuple[ValueCodec, ...]] = (
    (ContentPart, encode_part, decode_part),
    (ToolCall, encode_call, decode_call),
    (ToolResult, encode_result, decode_result),
    (Message, encode_message, decode_message),
    (TokenUsage, encode_usage, decode_usage),
    (FinishReason, encode_reason, decode_reason),
    (ChatResponse, encode_response, decode_response),
    (LangHooksError, encode_error, decode_error),
    (Invocation, encode_invocation, decode_invocation),
)
