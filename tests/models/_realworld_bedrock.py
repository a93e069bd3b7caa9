"""The real-world corpus's reference decoder for Bedrock ConverseStream bodies.

Written for ``test_realworld.py`` and independent of langhooks' own decoder and
adapter: the binary framing is parsed by botocore's ``EventStreamBuffer`` (AWS's
own parser, which checks both CRCs), and the events are read here with the
mapping DESIGN.md pins: text and ``reasoningContent.text`` deltas are text and
thinking; each client ``toolUse`` block is a call spelled by its ``input``
fragments; ``stopReason`` gives the finish; the last ``metadata`` usage counts
input tokens with cache reads and writes; server-side tool blocks
(``server_tool_use``, ``toolResult``), citation and other untyped deltas, and
unknown events are the events with no typed data; an exception message is the
error (its ``:exception-type`` the code).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from botocore.eventstream import EventStreamBuffer

if TYPE_CHECKING:  # test_realworld imports this module: no import cycle at runtime
    from .test_realworld import Expected

__all__ = ["bedrock_events", "expect_bedrock"]

_STOP: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_execution",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


def bedrock_events(data: bytes) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The (headers, JSON payload) of every message in a body, by botocore."""
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [
        (dict(message.headers), json.loads(message.payload) if message.payload else {})
        for message in buffer
    ]


def expect_bedrock(body: bytes) -> Expected:
    """What the ConverseStream body ``body`` should replay to."""
    from .test_realworld import Call, Expected

    out = Expected()
    kinds: dict[int, str] = {}
    calls: dict[int, Call] = {}
    usage: dict[str, Any] | None = None
    for headers, payload in bedrock_events(body):
        if headers.get(":message-type") == "exception":
            out.error_code = headers[":exception-type"]
            return out
        kind = headers[":event-type"]
        event = {**payload, "type": kind}
        index: int = payload.get("contentBlockIndex", -1)
        if kind == "contentBlockStart":
            start = payload["start"]
            tool = start.get("toolUse")
            if tool is not None and tool.get("type", "tool_use") == "tool_use":
                kinds[index] = "tool"
                calls[index] = Call(tool["toolUseId"], tool["name"])
                out.calls.append(calls[index])
            elif start:
                kinds[index] = "server"
                out.unmapped.append(event)
            else:
                kinds[index] = "text"
        elif kind == "contentBlockDelta":
            delta = payload["delta"]
            if kinds.get(index) == "server":
                out.unmapped.append(event)
            elif "text" in delta:
                out.text += delta["text"]
            elif "reasoningContent" in delta:
                out.thinking += delta["reasoningContent"].get("text", "")
            elif "toolUse" in delta:
                calls[index].arguments += delta["toolUse"].get("input", "")
            else:
                out.unmapped.append(event)
        elif kind == "contentBlockStop":
            if kinds.get(index) == "server":
                out.unmapped.append(event)
        elif kind == "messageStop":
            out.finish = _STOP.get(payload.get("stopReason", ""), "other")
        elif kind == "metadata":
            usage = payload.get("usage", usage)
        elif kind != "messageStart":
            out.unmapped.append(event)
    if usage is not None:
        out.usage = (
            usage.get("inputTokens", 0)
            + usage.get("cacheReadInputTokens", 0)
            + usage.get("cacheWriteInputTokens", 0),
            usage.get("outputTokens", 0),
        )
    return out
