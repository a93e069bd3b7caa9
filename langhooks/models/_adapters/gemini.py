"""Gemini API ``streamGenerateContent?alt=sse`` events -> actions.

Each event is a whole ``GenerateContentResponse``. Quirks handled (see
``docs/guide/providers.md``):

- parts with ``thought: true`` are thinking, other ``text`` parts response text;
- function calls arrive whole: each ``functionCall`` part gives one
  ``on_partial_tool_call`` with all its arguments, then ``on_complete_tool_call``;
  calls are numbered 0, 1, ... in order; a call without an ``id`` (Gemini before
  3) gets ``call_<index>``;
- ``thoughtSignature``: a function call's goes to
  ``message.metadata["thought_signatures"]`` (call id -> signature), any other
  part's (the last one) to ``message.metadata["thinking_signature"]``: what the
  next turn sends back;
- usage (every chunk restates it; the last report wins): input tokens are
  ``promptTokenCount``, output tokens ``candidatesTokenCount`` +
  ``thoughtsTokenCount``;
- ``finishReason`` ends the stream (Gemini sends no terminal event): ``STOP`` is
  ``STOP``, ``MAX_TOKENS`` is ``LENGTH``, the safety reasons ``CONTENT_FILTER``;
  ``promptFeedback.blockReason`` (a refused prompt, no candidates) ends it as
  ``CONTENT_FILTER``;
- a chunk whose parts carry no typed data (``executableCode``,
  ``codeExecutionResult``, ``inlineData``, server ``toolCall`` /
  ``toolResponse`` parts), or that only carries grounding, goes to
  ``on_unmapped_raw_event``; the last ``groundingMetadata`` and
  ``urlContextMetadata`` are also kept in the response metadata;
- an ``{"error": {...}}`` event is raised, its code the error's ``status``
  string (``RESOURCE_EXHAUSTED``, ...).
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
    optional_str,
    require_mapping,
)

__all__ = ["GeminiAdapter"]

_FINISH: Final[Mapping[str, FinishReason]] = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
    "IMAGE_PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "IMAGE_RECITATION": FinishReason.CONTENT_FILTER,
}
# Candidate fields kept in the response metadata (the last report wins).
_KEPT: Final[Mapping[str, str]] = {
    "groundingMetadata": "grounding_metadata",
    "urlContextMetadata": "url_context_metadata",
    "citationMetadata": "citation_metadata",
}


class GeminiAdapter(StreamAdapter):
    """``GenerateContentResponse`` stream events -> actions."""

    terminal: ClassVar[str] = "a chunk with a finishReason"

    def __init__(self) -> None:
        super().__init__()
        self._tool_count = 0
        self._call_signatures: dict[str, str] = {}
        self._usage_raw: object = None

    @override
    def feed(self, event: WireEvent) -> list[Action]:
        if type(event) is not dict:
            event = require_mapping(event, "a Gemini stream event")
        error = event.get("error")
        if error is not None:
            raise _error(error, event)
        if self.id is None:
            self.id = optional_str(event, "responseId")
        if self.model_name is None:
            self.model_name = optional_str(event, "modelVersion")
        usage = event.get("usageMetadata")
        if usage is not None and usage != self._usage_raw:
            # Every chunk restates the usage, mostly unchanged: only a change
            # builds a new report.
            self._usage_raw = usage
            self._usage(require_mapping(usage, "'usageMetadata'"))
        candidates = event.get("candidates")
        if (
            type(candidates) is list
            and len(candidates) == 1
            and "promptFeedback" not in event
        ):
            # The hot path: one candidate of one text part and nothing else.
            candidate = candidates[0]
            if (
                type(candidate) is dict
                and len(candidate) == 2
                and candidate.get("index") == 0
            ):
                content = candidate.get("content")
                parts = content.get("parts") if type(content) is dict else None
                if type(parts) is list and len(parts) == 1:
                    part = parts[0]
                    if type(part) is dict and len(part) == 1:
                        text = part.get("text")
                        if type(text) is str:
                            return [(TEXT, text)] if text else []
        out: list[Action] = []
        typed = False  # the chunk carried a typed action or a finish
        extra = False  # the chunk carried data no typed callback covers
        if candidates:
            if type(candidates) is not list:
                raise malformed("'candidates' must be a list")
            for candidate in candidates:
                if type(candidate) is not dict:
                    candidate = require_mapping(candidate, "a candidate")
                if candidate.get("index", 0) != 0:
                    extra = True  # another candidate (candidateCount > 1)
                    continue
                part_typed, part_extra = self._candidate(candidate, out)
                typed = typed or part_typed
                extra = extra or part_extra
        feedback = event.get("promptFeedback")
        if feedback is not None:
            feedback = require_mapping(feedback, "'promptFeedback'")
            reason = optional_str(feedback, "blockReason")
            if reason:
                self.response_metadata["block_reason"] = reason
                self.response_metadata["prompt_feedback"] = dict(feedback)
                self.finish_reason = FinishReason.CONTENT_FILTER
                typed = True
                self._end()
        if extra and not typed:
            out.append((UNMAPPED, event))
        return out

    def _candidate(
        self, candidate: Mapping[str, Any], out: list[Action]
    ) -> tuple[bool, bool]:
        typed = extra = False
        content = candidate.get("content")
        if content is not None and type(content) is not dict:
            content = require_mapping(content, "'content'")
        parts = content.get("parts") if content is not None else None
        if parts:
            if type(parts) is not list:
                raise malformed("'content.parts' must be a list")
            for part in parts:
                if type(part) is dict and len(part) == 1:
                    text = part.get("text")
                    if type(text) is str:
                        # The hot path: a part of nothing but text.
                        if text:
                            out.append((TEXT, text))
                        typed = True
                        continue
                if self._part(require_mapping(part, "a part"), out):
                    typed = True
                else:
                    extra = True
        if len(candidate) == ("content" in candidate) + ("index" in candidate):
            return typed, extra  # the common chunk: nothing but content
        for key, name in _KEPT.items():
            value = candidate.get(key)
            if value:
                self.response_metadata[name] = value
                extra = True
        reason = optional_str(candidate, "finishReason")
        if reason:
            self.response_metadata["stop_reason"] = reason
            message = optional_str(candidate, "finishMessage")
            if message:
                self.response_metadata["finish_message"] = message
            self.finish_reason = _FINISH.get(reason, FinishReason.OTHER)
            typed = True
            self._end()
        return typed, extra

    def _part(self, part: Mapping[str, Any], out: list[Action]) -> bool:
        """Add ``part``'s actions; whether it is typed data (text or a call)."""
        signature = optional_str(part, "thoughtSignature")
        call = part.get("functionCall")
        if call is not None:
            call_id = self._call(require_mapping(call, "'functionCall'"), out)
            if signature:
                self._call_signatures[call_id] = signature
                self.message_metadata["thought_signatures"] = dict(
                    self._call_signatures
                )
            return True
        if signature:
            self.message_metadata["thinking_signature"] = signature
        if "text" not in part:
            return False
        text = optional_str(part, "text")
        if text:
            if part.get("thought") is True:
                out.append((THINKING, text))
            else:
                out.append((TEXT, text))
        return True

    def _call(self, call: Mapping[str, Any], out: list[Action]) -> str:
        name = optional_str(call, "name")
        if not name:
            raise malformed("a functionCall needs a 'name'")
        arguments = call.get("args")
        if arguments is not None:
            require_mapping(arguments, "'functionCall.args'")
        text = json.dumps(arguments or {}, ensure_ascii=False)
        slot = ToolSlot(self._tool_count, optional_str(call, "id") or None, name)
        self._tool_count += 1
        slot.pieces.append(text)
        out.append((TOOL_PARTIAL, slot.index, slot.call_id, name, text))
        complete = slot.finish()
        out.append(complete)
        return complete[1].call_id

    def _usage(self, usage: Mapping[str, Any]) -> None:
        self.usage = TokenUsage(
            input_tokens=optional_int(usage, "promptTokenCount") or 0,
            output_tokens=(optional_int(usage, "candidatesTokenCount") or 0)
            + (optional_int(usage, "thoughtsTokenCount") or 0),
            raw=dict(usage),
        )

    def _end(self) -> None:
        self.done = True
        if self.id is not None:
            self.message_metadata["response_id"] = self.id


def _error(error: object, event: Mapping[str, Any]) -> Exception:
    """The ``LangHooksError`` for a Gemini ``{"error": {...}}`` event."""
    if not isinstance(error, Mapping):
        return classify_error(
            status=None, code=None, message=str(error), original=dict(event)
        )
    code = error.get("code")
    return classify_error(
        status=code if type(code) is int and code >= 400 else None,
        code=optional_str(error, "status"),
        message=optional_str(error, "message") or "the stream failed",
        original=dict(event),
    )
