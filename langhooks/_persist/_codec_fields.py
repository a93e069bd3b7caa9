"""The codec's per-class fields: one encoder (value -> dict of fields, no tag) and one
decoder (dict of fields -> value) for each value type, and the helpers that put the
path to an unencodable value into the error.

``_codec`` registers them under their class and tag; nothing else calls them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from .._core._invocation import Invocation
from .._core._messages import (
    ChatResponse,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    MessageDelta,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from ..chain._decision import Decision
from ._jsondata import (
    Unencodable,
    jsonable,
)
from ._records import EventRecord

__all__ = [
    "_bool",
    "_d_call",
    "_d_decision",
    "_d_delta",
    "_d_error",
    "_d_invocation",
    "_d_message",
    "_d_part",
    "_d_partial_call",
    "_d_parts",
    "_d_record",
    "_d_response",
    "_d_result",
    "_d_time",
    "_d_usage",
    "_data",
    "_e_call",
    "_e_delta",
    "_e_error",
    "_e_invocation",
    "_e_message",
    "_e_part",
    "_e_partial_call",
    "_e_record",
    "_e_response",
    "_e_result",
    "_e_usage",
    "_each",
    "_mapping_or_none",
    "_nested",
    "_optional_str",
    "_str",
]


def _data(value: Any, field: str) -> Any:
    try:
        return jsonable(value)
    except Unencodable as error:
        error.path.append(f".{field}")
        raise


def _each(items: Any, encode_one: Callable[[Any], Any], field: str) -> list[Any]:
    out: list[Any] = []
    try:
        for item in items:
            out.append(encode_one(item))
    except Unencodable as error:
        error.path.append(f"[{len(out)}]")
        error.path.append(f".{field}")
        raise
    return out


def _nested(value: Any, encode_one: Callable[[Any], Any], field: str) -> Any:
    if value is None:
        return None
    try:
        return encode_one(value)
    except Unencodable as error:
        error.path.append(f".{field}")
        raise


# --- encoders: value -> dict of fields (no tag) -----------------------------------


def _e_part(part: ContentPart) -> dict[str, Any]:
    return {"content_type": part.type, "content": part.content}


def _e_call(call: ToolCall) -> dict[str, Any]:
    return {
        "call_id": call.call_id,
        "name": call.name,
        "arguments": _data(call.arguments, "arguments"),
        "index": call.index,
        "display_text": call.display_text,
    }


def _e_result(result: ToolResult) -> dict[str, Any]:
    return {
        "tool_call_id": result.tool_call_id,
        "name": result.name,
        "content": [_e_part(part) for part in result.content],
        "display_text": result.display_text,
        "is_error": result.is_error,
        "is_interrupt": result.is_interrupt,
        "interrupt_data": _data(result.interrupt_data, "interrupt_data"),
        "processed_content": _data(result.processed_content, "processed_content"),
    }


def _e_message(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": [_e_part(part) for part in message.content],
        "tool_calls": _each(message.tool_calls, _e_call, "tool_calls"),
        "tool_results": _each(message.tool_results, _e_result, "tool_results"),
        "status": message.status,
        "metadata": _data(message.metadata, "metadata"),
    }


def _e_usage(usage: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "raw": _data(usage.raw, "raw"),
        "cumulative": usage.cumulative,
    }


def _e_partial_call(partial: PartialToolCall) -> dict[str, Any]:
    return {
        "index": partial.index,
        "id": partial.id,
        "name": partial.name,
        "partial_arguments": partial.partial_arguments,
    }


def _e_delta(delta: MessageDelta) -> dict[str, Any]:
    return {
        "text": delta.text,
        "thinking": delta.thinking,
        "tool_call": None
        if delta.tool_call is None
        else _e_partial_call(delta.tool_call),
        "usage": _nested(delta.usage, _e_usage, "usage"),
        "status": delta.status,
    }


def _e_response(response: ChatResponse) -> dict[str, Any]:
    reason = response.finish_reason
    return {
        "message": _nested(response.message, _e_message, "message"),
        "id": response.id,
        "model_name": response.model_name,
        "token_usage": _nested(response.token_usage, _e_usage, "token_usage"),
        "finish_reason": None if reason is None else reason.value,
        "metadata": _data(response.metadata, "metadata"),
    }


def _e_error(error: LangHooksError) -> dict[str, Any]:
    return {
        "error_type": error.type,
        "message": error.message,
        "retryable": error.retryable,
        "retry_after": error.retry_after,
        "metadata": _data(error.metadata, "metadata"),
    }


def _e_invocation(current: Invocation) -> dict[str, Any]:
    return {
        "id": current.id,
        "name": current.name,
        "parent_id": current.parent_id,
        "custom_context": _data(current.custom_context, "custom_context"),
        "started_at": current.started_at.isoformat(),
    }


def _e_record(record: EventRecord) -> dict[str, Any]:
    return {
        "seq": record.seq,
        "event": record.event,
        "run_id": record.run_id,
        "invocation_id": record.invocation_id,
        "parent_id": record.parent_id,
        "time": record.time.isoformat(),
        "payload": _data(record.payload, "payload"),
    }


# --- decoders: dict of fields -> value ----------------------------------------------


def _d_part(data: Mapping[str, Any]) -> ContentPart:
    return ContentPart(type=data["content_type"], content=data["content"])


def _d_parts(items: Any) -> list[ContentPart]:
    return [_d_part(item) for item in items]


def _d_call(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        call_id=data["call_id"],
        name=data["name"],
        arguments=data["arguments"],
        index=data["index"],
        display_text=data["display_text"],
    )


def _d_result(data: Mapping[str, Any]) -> ToolResult:
    return ToolResult(
        tool_call_id=data["tool_call_id"],
        name=data["name"],
        content=_d_parts(data["content"]),
        display_text=data["display_text"],
        is_error=_bool(data["is_error"], "is_error"),
        is_interrupt=_bool(data["is_interrupt"], "is_interrupt"),
        interrupt_data=_mapping_or_none(data["interrupt_data"], "interrupt_data"),
        processed_content=data["processed_content"],
    )


def _d_message(data: Mapping[str, Any]) -> Message:
    return Message(
        role=data["role"],
        content=_d_parts(data["content"]),
        tool_calls=[_d_call(item) for item in data["tool_calls"]],
        tool_results=[_d_result(item) for item in data["tool_results"]],
        status=data["status"],
        metadata=data["metadata"],
    )


def _d_usage(data: Mapping[str, Any]) -> TokenUsage:
    return TokenUsage(
        input_tokens=data["input_tokens"],
        output_tokens=data["output_tokens"],
        raw=data["raw"],
        cumulative=_bool(data["cumulative"], "cumulative"),
    )


def _d_partial_call(data: Mapping[str, Any]) -> PartialToolCall:
    return PartialToolCall(
        index=data["index"],
        id=data["id"],
        name=data["name"],
        partial_arguments=data["partial_arguments"],
    )


def _d_delta(data: Mapping[str, Any]) -> MessageDelta:
    call, usage = data["tool_call"], data["usage"]
    return MessageDelta(
        text=data["text"],
        thinking=data["thinking"],
        tool_call=None if call is None else _d_partial_call(call),
        usage=None if usage is None else _d_usage(usage),
        status=data["status"],
    )


def _d_response(data: Mapping[str, Any]) -> ChatResponse:
    usage, reason = data["token_usage"], data["finish_reason"]
    return ChatResponse(
        message=_d_message(data["message"]),
        id=data["id"],
        model_name=data["model_name"],
        token_usage=None if usage is None else _d_usage(usage),
        finish_reason=None if reason is None else FinishReason(reason),
        metadata=data["metadata"],
    )


def _d_error(data: Mapping[str, Any]) -> LangHooksError:
    return LangHooksError(
        data["error_type"],
        data["message"],
        retryable=_bool(data["retryable"], "retryable"),
        retry_after=data["retry_after"],
        metadata=data["metadata"],
    )


def _d_time(value: Any, field: str) -> datetime.datetime:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be an ISO 8601 str, got {value!r}")
    return datetime.datetime.fromisoformat(value)


def _d_invocation(data: Mapping[str, Any]) -> Invocation:
    return Invocation(
        id=_str(data["id"], "id"),
        name=data["name"],
        parent_id=_optional_str(data["parent_id"], "parent_id"),
        custom_context=data["custom_context"],
        started_at=_d_time(data["started_at"], "started_at"),
    )


def _d_record(data: Mapping[str, Any]) -> EventRecord:
    return EventRecord(
        seq=data["seq"],
        event=data["event"],
        run_id=data["run_id"],
        invocation_id=data["invocation_id"],
        parent_id=data["parent_id"],
        time=_d_time(data["time"], "time"),
        payload=data["payload"],
    )


def _d_decision(data: Mapping[str, Any]) -> Decision:
    return Decision(
        kind=data["kind"],
        arguments=_mapping_or_none(data["arguments"], "arguments"),
        reason=data["reason"],
    )


# Checks for fields whose classes do not validate them (plain attrs fields).
def _bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{field} must be a bool, got {value!r}")
    return value


def _str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a str, got {value!r}")
    return value


def _optional_str(value: Any, field: str) -> str | None:
    return None if value is None else _str(value, field)


def _mapping_or_none(value: Any, field: str) -> Mapping[str, Any] | None:
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(f"{field} must be an object or null, got {value!r}")
    return value
