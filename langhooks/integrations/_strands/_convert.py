"""Strands' messages as langhooks messages, and human decisions as the interrupt
responses that resume a paused agent: pure translations."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from strands.interrupt import Interrupt as StrandsInterrupt
from strands.types.interrupt import InterruptResponseContent

from ..._core._messages import ContentPart, Message, TokenUsage, ToolCall, ToolResult
from ..._core._tools import Tool
from ...chain._decision import Decision
from .._bridging._chain import stand_in_tool

__all__ = [
    "DECISION_KEY",
    "INTERRUPT_NAME",
    "interrupt_responses",
    "message_of",
    "messages_of",
    "tool_call_of",
    "tools_of",
    "usage_of",
]

#: The name of the interrupt a review raises (one per tool call: Strands makes
#: its id from the call's id and this name).
INTERRUPT_NAME = "langhooks-review"

#: The key of an interrupt response under which the human's decision travels.
DECISION_KEY = "langhooks_decision"


def tool_call_of(use: Mapping[str, Any], index: int) -> ToolCall:
    """A ``toolUse`` block as a ``ToolCall`` (``index``: its place in the message)."""
    arguments = use.get("input") or {}
    return ToolCall(
        call_id=str(use.get("toolUseId", "")),
        name=str(use.get("name", "")),
        arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
        index=index,
    )


def usage_of(usage: Mapping[str, Any] | None) -> TokenUsage | None:
    """A ``metadata.usage`` block as ``TokenUsage`` (None when absent)."""
    if not usage:
        return None
    return TokenUsage(
        input_tokens=int(usage.get("inputTokens", 0)),
        output_tokens=int(usage.get("outputTokens", 0)),
    )


def _result_text(result: Mapping[str, Any]) -> str:
    pieces: list[str] = []
    for block in result.get("content") or []:
        if "text" in block:
            pieces.append(str(block["text"]))
        elif "json" in block:
            pieces.append(json.dumps(block["json"], default=str))
    return "".join(pieces)


def tool_result_of(result: Mapping[str, Any], name: str) -> ToolResult:
    """A ``toolResult`` as a ``ToolResult``."""
    return ToolResult(
        tool_call_id=str(result.get("toolUseId", "")),
        name=name,
        content=_result_text(result),
        is_error=result.get("status") == "error",
    )


def message_of(message: Mapping[str, Any]) -> Message:
    """An assistant message: thinking and text in order, and its tool calls."""
    parts: list[ContentPart] = []
    calls: list[ToolCall] = []
    for block in message.get("content") or []:
        if "toolUse" in block:
            calls.append(tool_call_of(block["toolUse"], len(calls)))
        elif "reasoningContent" in block:
            text = (block["reasoningContent"].get("reasoningText") or {}).get("text")
            if text:
                parts.append(ContentPart.thinking(text))
        elif block.get("text"):
            parts.append(ContentPart.text(block["text"]))
    return Message(role="assistant", content=parts, tool_calls=calls)


def messages_of(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """A Strands conversation as langhooks messages."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "assistant":
            answer = message_of(message)
            names.update((c.call_id, c.name) for c in answer.tool_calls)
            out.append(answer)
            continue
        blocks = message.get("content") or []
        results = [
            tool_result_of(
                b["toolResult"], names.get(b["toolResult"].get("toolUseId"), "")
            )
            for b in blocks
            if "toolResult" in b
        ]
        text = "".join(str(b.get("text", "")) for b in blocks if "text" in b)
        if results:
            out.append(Message.tool(results))
        elif text:
            out.append(Message.user(text))
    return out


def tools_of(specs: Sequence[Mapping[str, Any]]) -> list[Tool]:
    """Stand-ins of the agent's tools, from their specs."""
    return [
        stand_in_tool(
            str(spec["name"]),
            str(spec.get("description", "")),
            (spec.get("inputSchema") or {}).get("json"),
        )
        for spec in specs
    ]


def interrupt_responses(
    interrupts: Sequence[StrandsInterrupt], decisions: Mapping[str, Decision]
) -> list[InterruptResponseContent]:
    """The prompt that resumes an agent a review interrupted: ``decisions`` maps
    each interrupted call's id to the human's decision.

    ``interrupts`` is ``AgentResult.interrupts`` of the paused run (or, in
    another process, the agent's restored ``interrupts``). ``Decision.approve()``
    and ``Decision.edit(arguments)`` let the call run (the review then sees
    ``human_decision`` "approve" or "edit"), ``Decision.reject(reason)`` denies it.

    Raises:
        ValueError: a call in ``decisions`` has no interrupt of the bridge.
    """
    by_call: dict[str, StrandsInterrupt] = {}
    for interrupt in interrupts:
        reason = interrupt.reason if isinstance(interrupt.reason, Mapping) else {}
        if interrupt.name == INTERRUPT_NAME and "tool_call_id" in reason:
            by_call[str(reason["tool_call_id"])] = interrupt
    prompt: list[InterruptResponseContent] = []
    for call_id, decision in decisions.items():
        if call_id not in by_call:
            raise ValueError(
                f"no langhooks interrupt for tool call {call_id!r}: pass the paused "
                f"run's interrupts and the id of a call its review interrupted"
            )
        response = {
            DECISION_KEY: {
                "tool_call_id": call_id,
                "kind": decision.kind,
                "arguments": None
                if decision.arguments is None
                else dict(decision.arguments),
                "reason": decision.reason,
            }
        }
        prompt.append(
            {
                "interruptResponse": {
                    "interruptId": by_call[call_id].id,
                    "response": response,
                }
            }
        )
    return prompt
