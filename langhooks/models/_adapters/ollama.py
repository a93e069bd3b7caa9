"""Ollama ``/api/chat`` NDJSON lines -> actions.

Quirks handled (see ``docs/guide/streams.md``):

- ``message.thinking`` (with ``think``) is thinking text, ``message.content``
  response text;
- tool calls arrive complete, never in fragments, on their own lines or on the
  final line: each gives one ``on_partial_tool_call`` with the whole arguments
  (``arguments`` is a JSON object on the wire; a string is parsed) and then
  ``on_complete_tool_call``; calls are numbered 0, 1, ... in order; a call without
  an ``id`` (Ollama before ``id``/``index``) gets ``call_<index>``;
- Ollama says ``done_reason: "stop"`` after tool calls too: the response reports
  ``TOOL_EXECUTION`` whenever calls completed; ``length`` is ``LENGTH``;
- usage from ``prompt_eval_count`` / ``eval_count``; the durations (nanoseconds)
  are kept in the raw usage;
- a line ``{"error": "..."}`` mid-stream (the status stays 200) is raised.
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

__all__ = ["OllamaAdapter"]

_DONE: Final[Mapping[str, FinishReason]] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
}
_METRICS: Final = (
    "prompt_eval_count",
    "eval_count",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
)


class OllamaAdapter(StreamAdapter):
    """``/api/chat`` stream lines -> actions."""

    terminal: ClassVar[str] = 'a line with "done": true'

    def __init__(self) -> None:
        super().__init__()
        self._tool_count = 0

    @override
    def feed(self, event: WireEvent) -> list[Action]:
        event = require_mapping(event, "an Ollama chat line")
        error = event.get("error")
        if error:
            text = error if isinstance(error, str) else json.dumps(error)
            raise classify_error(
                status=None, code=None, message=text, original=dict(event)
            )
        if self.model_name is None:
            self.model_name = optional_str(event, "model")
        out: list[Action] = []
        message = optional_mapping(event, "message")
        if message is not None:
            thinking = optional_str(message, "thinking")
            if thinking:
                out.append((THINKING, thinking))
            content = optional_str(message, "content")
            if content:
                out.append((TEXT, content))
            calls = message.get("tool_calls")
            if calls:
                if type(calls) is not list:
                    raise malformed("'message.tool_calls' must be a list")
                for call in calls:
                    self._tool_call(require_mapping(call, "a tool call"), out)
        done = event.get("done")
        if done is True:
            self._done(event)
        elif done is not None and done is not False:
            raise malformed(f"'done' must be a boolean, got {done!r}")
        return out

    def _tool_call(self, call: Mapping[str, Any], out: list[Action]) -> None:
        function = require_mapping(call.get("function"), "'function'")
        name = optional_str(function, "name")
        if not name:
            raise malformed("a tool call needs 'function.name'")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            text = arguments
        elif arguments is None or isinstance(arguments, Mapping):
            text = json.dumps(arguments or {}, ensure_ascii=False)
        else:
            raise malformed("'function.arguments' must be an object")
        slot = ToolSlot(self._tool_count, optional_str(call, "id") or None, name)
        self._tool_count += 1
        slot.pieces.append(text)
        out.append((TOOL_PARTIAL, slot.index, slot.call_id, name, text))
        out.append(slot.finish())

    def _done(self, event: Mapping[str, Any]) -> None:
        self.done = True
        reason = optional_str(event, "done_reason")
        self.response_metadata["stop_reason"] = reason
        created = optional_str(event, "created_at")
        if created is not None:
            self.response_metadata["created_at"] = created
        raw = {key: event[key] for key in _METRICS if event.get(key) is not None}
        if raw:
            self.usage = TokenUsage(
                input_tokens=optional_int(event, "prompt_eval_count") or 0,
                output_tokens=optional_int(event, "eval_count") or 0,
                raw=raw,
            )
        self.finish_reason = (
            _DONE.get(reason, FinishReason.OTHER) if reason else FinishReason.STOP
        )
