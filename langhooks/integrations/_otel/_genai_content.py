"""Message content in the JSON shapes of the OpenTelemetry GenAI conventions.

Used by ``langhooks.integrations.opentelemetry`` only when content capture is on:
``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``
and ``gen_ai.tool.definitions`` hold JSON text (span attributes cannot hold nested
structures), in the shapes the conventions' JSON schemas give.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..._core._messages import ContentPart, FinishReason, Message
from ..._core._tools import Tool

__all__ = [
    "finish_reason",
    "input_messages",
    "output_messages",
    "system_instructions",
    "to_json",
    "tool_definitions",
]

# The conventions' finish reasons ("tool_call", not langhooks' "tool_execution").
_FINISH_REASONS: Final = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_EXECUTION: "tool_call",
    FinishReason.CONTENT_FILTER: "content_filter",
    FinishReason.OTHER: "other",
}


def finish_reason(reason: FinishReason) -> str:
    """The conventions' name for ``reason``."""
    return _FINISH_REASONS[reason]


def _default(value: object) -> object:
    # Frozen mappings (MappingProxyType) are objects; anything else JSON cannot hold
    # is written as its repr: telemetry must not fail a run over an odd argument.
    if isinstance(value, Mapping):
        return dict(value)
    return repr(value)


def to_json(value: object) -> str:
    """Compact JSON; a value JSON cannot hold is written as its ``repr``."""
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), default=_default
    )


def _part(part: ContentPart) -> dict[str, Any]:
    if part.type == "text":
        return {"type": "text", "content": part.content}
    if part.type == "thinking":
        return {"type": "reasoning", "content": part.content}
    if part.type == "image_url":
        return {"type": "uri", "modality": "image", "uri": part.content}
    return {"type": part.type, "content": part.content}


def _parts(message: Message) -> list[dict[str, Any]]:
    parts = [_part(part) for part in message.content]
    parts += [
        {
            "type": "tool_call",
            "id": call.call_id,
            "name": call.name,
            "arguments": dict(call.arguments),
        }
        for call in message.tool_calls
    ]
    parts += [
        {
            "type": "tool_call_response",
            "id": result.tool_call_id,
            "response": result.text,
        }
        for result in message.tool_results
    ]
    return parts


def input_messages(messages: Sequence[Message]) -> str:
    """``gen_ai.input.messages``: the conversation sent, without system messages."""
    return to_json(
        [
            {"role": message.role, "parts": _parts(message)}
            for message in messages
            if message.role != "system"
        ]
    )


def system_instructions(messages: Sequence[Message]) -> str | None:
    """``gen_ai.system_instructions``: the system messages' parts, or None."""
    parts = [
        _part(part)
        for message in messages
        if message.role == "system"
        for part in message.content
    ]
    return to_json(parts) if parts else None


def output_messages(message: Message, reason: FinishReason | None) -> str:
    """``gen_ai.output.messages``: the model's answer, with its finish reason."""
    return to_json(
        [
            {
                "role": message.role,
                "parts": _parts(message),
                "finish_reason": finish_reason(reason) if reason else message.status,
            }
        ]
    )


def _definition(tool: Tool) -> Mapping[str, Any]:
    definition: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        definition["description"] = tool.description
    if tool.parameters_schema is not None:
        definition["parameters"] = tool.parameters_schema
    return definition


def tool_definitions(tools: Sequence[Tool]) -> str | None:
    """``gen_ai.tool.definitions``: the tools offered to the model, or None."""
    return to_json([_definition(tool) for tool in tools]) if tools else None
