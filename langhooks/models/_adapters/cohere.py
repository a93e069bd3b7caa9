"""Cohere v2 ``/v2/chat`` stream events -> actions.

Quirks handled (see ``docs/guide/providers.md``):

- ``content-delta`` carries ``content.text`` (response text) or
  ``content.thinking`` (thinking, with ``thinking`` on);
- ``tool-plan-delta`` (the plan Command writes before calling tools) is thinking
  too; the whole plan also goes to ``message.metadata["tool_plan"]``, which the
  next turn sends back;
- tool calls: ``tool-call-start`` names the call (its ``arguments`` usually
  ``""``), ``tool-call-delta`` fragments follow, ``tool-call-end`` completes it;
  calls are numbered 0, 1, ... in order;
- ``message-end`` ends the stream: ``COMPLETE`` and ``STOP_SEQUENCE`` are
  ``STOP``, ``MAX_TOKENS`` is ``LENGTH``, ``TOOL_CALL`` is ``TOOL_EXECUTION``;
  usage comes from ``usage.tokens`` (what the model read and wrote), not
  ``billed_units`` (the raw usage keeps both);
- ``finish_reason`` ``ERROR`` (the generation failed) raises a retryable
  ``stream_error``, ``TIMEOUT`` a ``timeout``;
- ``citation-start`` / ``citation-end``, ``debug`` and unknown events go to
  ``on_unmapped_raw_event``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from typing_extensions import override

from ..._core._messages import ErrorType, FinishReason, LangHooksError, TokenUsage
from ._base import (
    TEXT,
    THINKING,
    TOOL_PARTIAL,
    UNMAPPED,
    Action,
    StreamAdapter,
    ToolSlot,
    WireEvent,
    malformed,
    optional_int,
    optional_mapping,
    optional_str,
    require_mapping,
)

__all__ = ["CohereAdapter"]

_FINISH: Final[Mapping[str, FinishReason]] = {
    "COMPLETE": FinishReason.STOP,
    "STOP_SEQUENCE": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "TOOL_CALL": FinishReason.TOOL_EXECUTION,
}
# Finish reasons that say the generation failed: raised, as an error event is.
_FAILED: Final[Mapping[str, ErrorType]] = {
    "ERROR": "stream_error",
    "TIMEOUT": "timeout",
}


def _message(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """``event["delta"]["message"]`` (empty when absent)."""
    delta = optional_mapping(event, "delta") or {}
    return optional_mapping(delta, "message") or {}


class CohereAdapter(StreamAdapter):
    """``/v2/chat`` stream events -> actions."""

    terminal: ClassVar[str] = "message-end"

    def __init__(self) -> None:
        super().__init__()
        self._calls: dict[int, ToolSlot] = {}
        self._tool_count = 0
        self._plan: list[str] = []

    @override
    def feed(self, event: WireEvent) -> list[Action]:
        if type(event) is not dict:
            event = require_mapping(event, "a Cohere chat stream event")
        kind = event.get("type")
        if kind == "content-delta":
            delta = event.get("delta")
            message = delta.get("message") if type(delta) is dict else None
            content = message.get("content") if type(message) is dict else None
            if type(content) is dict and len(content) == 1:
                # The hot path: a delta of nothing but text.
                text = content.get("text")
                if type(text) is str:
                    return [(TEXT, text)] if text else []
            content = optional_mapping(_message(event), "content") or {}
            thinking = optional_str(content, "thinking")
            text = optional_str(content, "text")
            out: list[Action] = []
            if thinking:
                out.append((THINKING, thinking))
            if text:
                out.append((TEXT, text))
            return out
        if kind == "tool-plan-delta":
            plan = optional_str(_message(event), "tool_plan")
            if not plan:
                return []
            self._plan.append(plan)
            self.message_metadata["tool_plan"] = "".join(self._plan)
            return [(THINKING, plan)]
        if kind == "tool-call-delta":
            slot = self._slot(event)
            function = optional_mapping(self._call_delta(event), "function") or {}
            piece = optional_str(function, "arguments")
            if not piece:
                return []
            slot.pieces.append(piece)
            return [(TOOL_PARTIAL, slot.index, slot.call_id, slot.name, piece)]
        if kind == "content-start":
            content = optional_mapping(_message(event), "content") or {}
            out = []
            thinking = optional_str(content, "thinking")
            if thinking:
                out.append((THINKING, thinking))
            text = optional_str(content, "text")
            if text:
                out.append((TEXT, text))
            return out
        if kind == "content-end":
            return []
        if kind == "tool-call-start":
            return self._start(event)
        if kind == "tool-call-end":
            slot = self._slot(event)
            return [slot.finish()]
        if kind == "message-start":
            self.id = optional_str(event, "id")
            return []
        if kind == "message-end":
            self._end(optional_mapping(event, "delta") or {})
            return []
        if type(kind) is not str:
            raise malformed("a Cohere event must have a string 'type'")
        return [(UNMAPPED, event)]

    def _call_delta(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        return optional_mapping(_message(event), "tool_calls") or {}

    def _start(self, event: Mapping[str, Any]) -> list[Action]:
        index = optional_int(event, "index")
        if index is None:
            raise malformed("tool-call-start needs an 'index'")
        if index in self._calls:
            raise malformed(f"tool call {index} was started twice")
        call = self._call_delta(event)
        function = optional_mapping(call, "function") or {}
        name = optional_str(function, "name")
        if not name:
            raise malformed("tool-call-start needs 'function.name'")
        slot = ToolSlot(self._tool_count, optional_str(call, "id") or None, name)
        self._tool_count += 1
        self._calls[index] = slot
        initial = optional_str(function, "arguments") or ""
        if initial:
            slot.pieces.append(initial)
        return [(TOOL_PARTIAL, slot.index, slot.call_id, name, initial)]

    def _slot(self, event: Mapping[str, Any]) -> ToolSlot:
        index = optional_int(event, "index")
        slot = self._calls.get(index) if index is not None else None
        if slot is None:
            raise malformed(f"tool call {index!r} was not started")
        if slot.complete:
            raise malformed(f"tool call {index} already ended")
        return slot

    def _end(self, delta: Mapping[str, Any]) -> None:
        reason = optional_str(delta, "finish_reason")
        failed = _FAILED.get(reason) if reason is not None else None
        if failed is not None:
            raise LangHooksError(
                failed,
                f"Cohere ended the response with finish_reason {reason}",
                retryable=True,
                original=dict(delta),
                metadata={"error_code": reason},
            )
        self.done = True
        self.response_metadata["stop_reason"] = reason
        self.finish_reason = (
            _FINISH.get(reason, FinishReason.OTHER) if reason else FinishReason.OTHER
        )
        usage = optional_mapping(delta, "usage")
        if usage is not None:
            tokens = optional_mapping(usage, "tokens") or {}
            self.usage = TokenUsage(
                input_tokens=_count(tokens, "input_tokens"),
                output_tokens=_count(tokens, "output_tokens"),
                raw=dict(usage),
            )
        if self.id is not None:
            self.message_metadata["message_id"] = self.id


def _count(tokens: Mapping[str, Any], key: str) -> int:
    """A token count; Cohere sends them as JSON numbers that may be floats."""
    value = tokens.get(key)
    if type(value) is float and value.is_integer() and value >= 0:
        return int(value)
    return optional_int(tokens, key) or 0
