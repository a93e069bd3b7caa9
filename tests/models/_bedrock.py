"""ConverseStream bodies for the Bedrock tests: real eventstream frames.

Each message is written with ``encode_message`` (both CRC32s computed); the
decoder tests check that encoder against botocore's own parser, so these
bodies are what AWS's SDKs accept.
"""

from __future__ import annotations

import json
from typing import Any, Final

from langhooks.models._eventstream import encode_message

from ._server import Reply

__all__ = [
    "CONTENT_TYPE",
    "SIGNATURE",
    "TEXT_STREAM",
    "THINKING_STREAM",
    "TOOL_STREAM",
    "event",
    "exception",
    "stream_body",
    "stream_reply",
]

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
SIGNATURE: Final = "EqQBCkgIARABGAIiQNs0aWduYXR1cmU="


def event(kind: str, payload: dict[str, Any]) -> bytes:
    """One ``:message-type`` event message, as AWS frames it."""
    return encode_message(
        {
            ":event-type": kind,
            ":content-type": "application/json",
            ":message-type": "event",
        },
        json.dumps(payload).encode(),
    )


def exception(kind: str, message: str) -> bytes:
    """One exception message (``throttlingException``, ...)."""
    return encode_message(
        {
            ":exception-type": kind,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps({"message": message}).encode(),
    )


def _text(index: int, text: str) -> bytes:
    return event(
        "contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}}
    )


def _end(reason: str, usage: dict[str, int]) -> bytes:
    return event("messageStop", {"stopReason": reason}) + event(
        "metadata", {"usage": usage, "metrics": {"latencyMs": 321}}
    )


def stream_body(*texts: str, reason: str = "end_turn") -> bytes:
    """A text-only body: messageStart, one delta per text, the end events."""
    return (
        event("messageStart", {"role": "assistant"})
        + b"".join(_text(0, text) for text in texts)
        + event("contentBlockStop", {"contentBlockIndex": 0})
        + _end(reason, {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14})
    )


#: "Hello there, traveller." in three deltas.
TEXT_STREAM: Final = stream_body("Hello", " there,", " traveller.")

#: Reasoning (two deltas and a signature), then text.
THINKING_STREAM: Final = (
    event("messageStart", {"role": "assistant"})
    + event(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Hm, "}}},
    )
    + event(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "easy."}}},
    )
    + event(
        "contentBlockDelta",
        {
            "contentBlockIndex": 0,
            "delta": {"reasoningContent": {"signature": SIGNATURE}},
        },
    )
    + event("contentBlockStop", {"contentBlockIndex": 0})
    + _text(1, "Four.")
    + event("contentBlockStop", {"contentBlockIndex": 1})
    + _end(
        "end_turn",
        {
            "inputTokens": 20,
            "outputTokens": 9,
            "cacheReadInputTokens": 100,
            "cacheWriteInputTokens": 5,
            "totalTokens": 134,
        },
    )
)

#: Text, then a get_weather call whose input arrives in two fragments.
TOOL_STREAM: Final = (
    event("messageStart", {"role": "assistant"})
    + _text(0, "Checking.")
    + event("contentBlockStop", {"contentBlockIndex": 0})
    + event(
        "contentBlockStart",
        {
            "contentBlockIndex": 1,
            "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}},
        },
    )
    + event(
        "contentBlockDelta",
        {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"city":'}}},
    )
    + event(
        "contentBlockDelta",
        {"contentBlockIndex": 1, "delta": {"toolUse": {"input": ' "Paris"}'}}},
    )
    + event("contentBlockStop", {"contentBlockIndex": 1})
    + _end("tool_use", {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42})
)


def stream_reply(body: bytes, **changes: Any) -> Reply:
    """A 200 ConverseStream reply with AWS's headers."""
    return Reply(
        headers=(
            ("content-type", CONTENT_TYPE),
            ("x-amzn-requestid", "3b1c2e57-bedrock-request"),
        ),
        body=body,
        **changes,
    )
