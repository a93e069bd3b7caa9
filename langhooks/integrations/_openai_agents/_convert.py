"""The Agents SDK's items as langhooks values: pure translations."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agents.items import ModelResponse

from ..._core._messages import ContentPart, Message, TokenUsage, ToolCall

__all__ = ["arguments_of", "input_messages", "message_of", "usage_of"]


def arguments_of(text: str | None) -> Mapping[str, Any]:
    """A call's JSON arguments as a mapping (``{}`` when they are not an object)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def message_of(response: ModelResponse) -> Message:
    """A model response's output items as the assistant message: reasoning
    summaries as thinking, output text, function calls in order."""
    content: list[ContentPart] = []
    calls: list[ToolCall] = []
    for item in response.output:
        kind = _field(item, "type")
        if kind == "reasoning":
            for part in _field(item, "summary") or ():
                if text := _field(part, "text"):
                    content.append(ContentPart.thinking(text))
        elif kind == "message":
            for part in _field(item, "content") or ():
                if _field(part, "type") == "output_text" and (
                    text := _field(part, "text")
                ):
                    content.append(ContentPart.text(text))
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    call_id=_field(item, "call_id"),
                    name=_field(item, "name"),
                    arguments=arguments_of(_field(item, "arguments")),
                    index=len(calls),
                )
            )
    return Message(role="assistant", content=content, tool_calls=calls)


def usage_of(response: ModelResponse) -> TokenUsage | None:
    """A response's usage (None when it reports none)."""
    usage = response.usage
    if not usage.input_tokens and not usage.output_tokens:
        return None
    return TokenUsage(
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens
    )


def input_messages(items: Iterable[Any]) -> list[Message]:
    """The conversation a run starts from: its user, system and assistant
    messages (other items, such as earlier calls, are left out)."""
    out: list[Message] = []
    for item in items:
        role, content = _field(item, "role"), _field(item, "content")
        text = (
            content
            if isinstance(content, str)
            else "".join(_field(part, "text") or "" for part in content or ())
        )
        if role in ("user", "system", "developer"):
            out.append(
                Message(role="system" if role == "developer" else role, content=text)
            )
        elif role == "assistant" and text:
            out.append(Message.assistant(text))
    return out
