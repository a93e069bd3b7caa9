"""The codec of what a run streams: partials, completed tool calls, message deltas
and a tool's progress reports; each type's encoder beside its decoder, and their
rows of the codec's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core._json_fields import ValueCodec, nested_field
from .._core._json_messages import decode_call, decode_usage, encode_call, encode_usage
from .._core._messages import (
    CompleteToolCall,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
)
from .._core._tools import ToolProgress

__all__ = ["CODECS"]


def encode_text(partial: PartialResponse | PartialThinking) -> dict[str, Any]:
    return {"text": partial.text}


def decode_response_text(data: Mapping[str, Any]) -> PartialResponse:
    return PartialResponse(text=data["text"])


def decode_thinking_text(data: Mapping[str, Any]) -> PartialThinking:
    return PartialThinking(text=data["text"])


def encode_partial_call(partial: PartialToolCall) -> dict[str, Any]:
    return {
        "index": partial.index,
        "id": partial.id,
        "name": partial.name,
        "partial_arguments": partial.partial_arguments,
    }


def decode_partial_call(data: Mapping[str, Any]) -> PartialToolCall:
    return PartialToolCall(
        index=data["index"],
        id=data["id"],
        name=data["name"],
        partial_arguments=data["partial_arguments"],
    )


def encode_complete_call(complete: CompleteToolCall) -> dict[str, Any]:
    return {
        "index": complete.index,
        "tool_call": nested_field(complete.tool_call, encode_call, "tool_call"),
    }


def decode_complete_call(data: Mapping[str, Any]) -> CompleteToolCall:
    return CompleteToolCall(
        index=data["index"], tool_call=decode_call(data["tool_call"])
    )


def encode_delta(delta: MessageDelta) -> dict[str, Any]:
    return {
        "text": delta.text,
        "thinking": delta.thinking,
        "tool_call": None
        if delta.tool_call is None
        else encode_partial_call(delta.tool_call),
        "usage": nested_field(delta.usage, encode_usage, "usage"),
        "status": delta.status,
    }


def decode_delta(data: Mapping[str, Any]) -> MessageDelta:
    call, usage = data["tool_call"], data["usage"]
    return MessageDelta(
        text=data["text"],
        thinking=data["thinking"],
        tool_call=None if call is None else decode_partial_call(call),
        usage=None if usage is None else decode_usage(usage),
        status=data["status"],
    )


def encode_progress(report: ToolProgress) -> dict[str, Any]:
    return {
        "progress": report.progress,
        "total": report.total,
        "message": report.message,
    }


def decode_progress(data: Mapping[str, Any]) -> ToolProgress:
    return ToolProgress(data["progress"], data["total"], data["message"])


#: This concept's rows of the codec's table.
CODECS: Final[tuple[ValueCodec, ...]] = (
    (MessageDelta, encode_delta, decode_delta),
    (PartialResponse, encode_text, decode_response_text),
    (PartialThinking, encode_text, decode_thinking_text),
    (PartialToolCall, encode_partial_call, decode_partial_call),
    (CompleteToolCall, encode_complete_call, decode_complete_call),
    (ToolProgress, encode_progress, decode_progress),
)
