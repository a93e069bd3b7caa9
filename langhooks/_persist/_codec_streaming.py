"""The codec of what a run streams: partials, completed tool calls, message deltas
and a tool's progress reports; each type's decoder beside its row of the codec's
table (its fields: see ``_core._codec_rows``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core._codec_rows import INT, OPT_STR, SCALAR, STR, ValueCodec, nested
from .._core._json_messages import CALL, USAGE, decode_call, decode_usage
from .._core._messages import (
    CompleteToolCall,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
)
from .._core._tools import ToolProgress

__all__ = ["CODECS"]


def decode_response_text(data: Mapping[str, Any]) -> PartialResponse:
    return PartialResponse(text=data["text"])


RESPONSE_TEXT: Final = ValueCodec(PartialResponse, decode_response_text, ("text", STR))


def decode_thinking_text(data: Mapping[str, Any]) -> PartialThinking:
    return PartialThinking(text=data["text"])


THINKING_TEXT: Final = ValueCodec(PartialThinking, decode_thinking_text, ("text", STR))


def decode_partial_call(data: Mapping[str, Any]) -> PartialToolCall:
    return PartialToolCall(
        index=data["index"],
        id=data["id"],
        name=data["name"],
        partial_arguments=data["partial_arguments"],
    )


PARTIAL_CALL: Final = ValueCodec(
    PartialToolCall,
    decode_partial_call,
    ("index", INT),
    ("id", OPT_STR),
    ("name", STR),
    ("partial_arguments", STR),
)


def decode_complete_call(data: Mapping[str, Any]) -> CompleteToolCall:
    return CompleteToolCall(
        index=data["index"], tool_call=decode_call(data["tool_call"])
    )


COMPLETE_CALL: Final = ValueCodec(
    CompleteToolCall,
    decode_complete_call,
    ("index", INT),
    ("tool_call", nested(CALL)),
)


def decode_delta(data: Mapping[str, Any]) -> MessageDelta:
    call, usage = data["tool_call"], data["usage"]
    return MessageDelta(
        text=data["text"],
        thinking=data["thinking"],
        tool_call=None if call is None else decode_partial_call(call),
        usage=None if usage is None else decode_usage(usage),
        status=data["status"],
    )


DELTA: Final = ValueCodec(
    MessageDelta,
    decode_delta,
    ("text", STR),
    ("thinking", STR),
    ("tool_call", nested(PARTIAL_CALL)),
    ("usage", nested(USAGE)),
    ("status", OPT_STR),
)


def decode_progress(data: Mapping[str, Any]) -> ToolProgress:
    return ToolProgress(data["progress"], data["total"], data["message"])


PROGRESS: Final = ValueCodec(
    ToolProgress,
    decode_progress,
    ("progress", SCALAR),
    ("total", SCALAR),
    ("message", SCALAR),
)

#: This concept's rows of the codec's table.
CODECS: Final[tuple[ValueCodec, ...]] = (
    DELTA,
    RESPONSE_TEXT,
    THINKING_TEXT,
    PARTIAL_CALL,
    COMPLETE_CALL,
    PROGRESS,
)
