"""Anthropic Messages stream events -> actions.

Quirks handled (see ``docs/guide/streams.md``):

- ``thinking_delta`` is thinking text; the block's ``signature_delta`` (sent just
  before its ``content_block_stop``) and ``redacted_thinking`` blocks go to
  ``message.metadata["thinking_blocks"]`` in order (what Anthropic needs sent
  back), the last signature also to ``message.metadata["thinking_signature"]``;
- ``tool_use`` blocks: announced at ``content_block_start``, ``input_json_delta``
  fragments (the first often ``""``) joined and parsed at ``content_block_stop``;
  calls are numbered 0, 1, ... in order; a block cut off by ``max_tokens`` (no
  stop) never completes and the reason is ``LENGTH``;
- usage in ``message_delta`` is cumulative: each report replaces the earlier
  values, never adds to them; ``input_tokens`` counts cache reads and writes too
  (the raw object keeps the split);
- ``stop_reason`` ``refusal`` is ``CONTENT_FILTER`` (``stop_details`` kept in
  ``metadata``), ``max_tokens`` and ``model_context_window_exceeded`` are
  ``LENGTH``;
- ``ping``, server-tool blocks, ``citations_delta`` and unknown events go to
  ``on_unmapped_raw_event``; an ``error`` event (after a 200) is raised.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from typing_extensions import override

from ..._core._messages import FinishReason, TokenUsage
from .._errors import classify_error
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

__all__ = ["AnthropicAdapter"]

_STOP: Final[Mapping[str, FinishReason]] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_EXECUTION,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "refusal": FinishReason.CONTENT_FILTER,
}


class _Block:
    __slots__ = ("kind", "signature", "stopped", "thinking", "tool")

    def __init__(self, kind: str, tool: ToolSlot | None = None) -> None:
        self.kind = kind
        self.tool = tool
        self.thinking: list[str] = []
        self.signature = ""
        self.stopped = False


class AnthropicAdapter(StreamAdapter):
    """Messages API stream events -> actions."""

    terminal: ClassVar[str] = "message_stop"

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}
        self._tool_count = 0
        self._usage: dict[str, Any] = {}
        self._thinking_blocks: list[dict[str, str]] = []
        self._stop_reason: str | None = None

    @override
    def feed(self, event: WireEvent) -> list[Action]:
        event = require_mapping(event, "a Messages stream event")
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            return self._stop(event)
        if kind == "message_start":
            message = require_mapping(event.get("message"), "'message'")
            self.id = optional_str(message, "id")
            self.model_name = optional_str(message, "model")
            self._add_usage(optional_mapping(message, "usage"))
            return []
        if kind == "message_delta":
            delta = optional_mapping(event, "delta") or {}
            reason = optional_str(delta, "stop_reason")
            if reason is not None:
                self._stop_reason = reason
                self.response_metadata["stop_reason"] = reason
            for key in ("stop_sequence", "stop_details"):
                if delta.get(key) is not None:
                    self.response_metadata[key] = delta[key]
            self._add_usage(optional_mapping(event, "usage"))
            return []
        if kind == "message_stop":
            self._end()
            return []
        if kind == "error":
            error = optional_mapping(event, "error") or {}
            raise classify_error(
                status=None,
                code=optional_str(error, "type"),
                message=optional_str(error, "message") or "the stream failed",
                original=dict(event),
            )
        if type(kind) is not str:
            raise malformed("a Messages event must have a string 'type'")
        return [(UNMAPPED, event)]

    def _block(self, event: Mapping[str, Any]) -> tuple[int, _Block]:
        index = optional_int(event, "index")
        block = self._blocks.get(index) if index is not None else None
        if index is None or block is None:
            raise malformed(f"content block {index!r} was not started")
        if block.stopped:
            raise malformed(f"content block {index} was already stopped")
        return index, block

    def _start(self, event: Mapping[str, Any]) -> list[Action]:
        index = optional_int(event, "index")
        if index is None:
            raise malformed("content_block_start needs an 'index'")
        if index in self._blocks:
            raise malformed(f"content block {index} was started twice")
        content = require_mapping(event.get("content_block"), "'content_block'")
        kind = content.get("type")
        if kind == "text":
            self._blocks[index] = _Block("text")
            text = optional_str(content, "text")
            return [(TEXT, text)] if text else []
        if kind == "thinking":
            block = self._blocks[index] = _Block("thinking")
            text = optional_str(content, "thinking")
            block.signature = optional_str(content, "signature") or ""
            if text:
                block.thinking.append(text)
                return [(THINKING, text)]
            return []
        if kind == "redacted_thinking":
            self._blocks[index] = _Block("redacted_thinking")
            self._thinking_blocks.append(
                {
                    "type": "redacted_thinking",
                    "data": optional_str(content, "data") or "",
                }
            )
            return []
        if kind == "tool_use":
            call_id = optional_str(content, "id")
            name = optional_str(content, "name")
            if not call_id or not name:
                raise malformed("a tool_use block needs an 'id' and a 'name'")
            slot = ToolSlot(self._tool_count, call_id, name)
            self._tool_count += 1
            self._blocks[index] = _Block("tool_use", slot)
            initial = content.get("input")
            if initial:
                # A block that starts with its input (no deltas follow).
                require_mapping(initial, "'input'")
                slot.pieces.append(json.dumps(initial))
            return [(TOOL_PARTIAL, slot.index, call_id, name, "".join(slot.pieces))]
        if type(kind) is not str:
            raise malformed("a content block must have a string 'type'")
        self._blocks[index] = _Block("unmapped")
        return [(UNMAPPED, event)]

    def _delta(self, event: Mapping[str, Any]) -> list[Action]:
        _, block = self._block(event)
        delta = require_mapping(event.get("delta"), "'delta'")
        if block.kind == "unmapped":
            # A server tool's input streams as input_json_delta too: the whole
            # block is unmapped, its deltas with it.
            return [(UNMAPPED, event)]
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text":
            text = optional_str(delta, "text")
            return [(TEXT, text)] if text else []
        if kind == "thinking_delta" and block.kind == "thinking":
            text = optional_str(delta, "thinking")
            if not text:
                return []
            block.thinking.append(text)
            return [(THINKING, text)]
        if kind == "signature_delta" and block.kind == "thinking":
            block.signature += optional_str(delta, "signature") or ""
            return []
        if kind == "input_json_delta" and block.tool is not None:
            piece = optional_str(delta, "partial_json")
            if not piece:
                return []
            slot = block.tool
            slot.pieces.append(piece)
            return [(TOOL_PARTIAL, slot.index, slot.call_id, slot.name, piece)]
        if kind in (
            "text_delta",
            "thinking_delta",
            "signature_delta",
            "input_json_delta",
        ):
            raise malformed(f"a {kind} arrived for a {block.kind} block")
        return [(UNMAPPED, event)]

    def _stop(self, event: Mapping[str, Any]) -> list[Action]:
        _, block = self._block(event)
        block.stopped = True
        if block.tool is not None:
            return [block.tool.finish()]
        if block.kind == "thinking":
            self._thinking_blocks.append(
                {
                    "type": "thinking",
                    "thinking": "".join(block.thinking),
                    "signature": block.signature,
                }
            )
            if block.signature:
                self.message_metadata["thinking_signature"] = block.signature
            return []
        if block.kind == "unmapped":
            return [(UNMAPPED, event)]
        return []

    def _add_usage(self, usage: Mapping[str, Any] | None) -> None:
        if usage is None:
            return
        # Cumulative: a later report replaces the counts it carries. The merged
        # result is the response's own total (not marked cumulative), so summing
        # the usage of several responses adds them up.
        self._usage.update({k: v for k, v in usage.items() if v is not None})
        raw = self._usage
        self.usage = TokenUsage(
            input_tokens=(optional_int(raw, "input_tokens") or 0)
            + (optional_int(raw, "cache_read_input_tokens") or 0)
            + (optional_int(raw, "cache_creation_input_tokens") or 0),
            output_tokens=optional_int(raw, "output_tokens") or 0,
            raw=raw,
        )

    def _end(self) -> None:
        self.done = True
        if self._thinking_blocks:
            self.message_metadata["thinking_blocks"] = tuple(self._thinking_blocks)
        if self.id is not None:
            self.message_metadata["message_id"] = self.id
        reason = self._stop_reason
        self.finish_reason = (
            _STOP.get(reason, FinishReason.OTHER) if reason else FinishReason.OTHER
        )
