"""OpenAI Chat Completions chunks (and OpenAI-compatible servers) -> actions.

Quirks handled (see ``docs/guide/streams.md``):

- thinking text in ``delta.reasoning_content`` (DeepSeek, vLLM before 0.11) or
  ``delta.reasoning`` (vLLM 0.11+, Ollama's ``/v1``); the first non-null wins;
- tool calls accumulated by ``index``, never by ``id`` or list position; sent one
  after another (OpenAI), interleaved, whole in one chunk, or with the ``id``
  repeated on every fragment; a fragment with the same ``index`` but a new ``id``
  starts a new call (servers that number every call 0);
- a call completes as soon as a later call starts and its arguments already form
  a JSON object, or at the ``finish_reason`` chunk; with ``"length"`` the open
  calls were cut off and never complete;
- ``delta.refusal`` is response text, recorded in ``message.metadata["refusal"]``
  and reported as ``CONTENT_FILTER``;
- ``delta.content`` as a list of thinking and text parts (Mistral's Magistral);
- usage on its own ``choices: []`` chunk, on the finish chunk or on every chunk
  (the last wins); output tokens include reasoning tokens a server (xAI) left out
  of ``completion_tokens``;
- Perplexity's ``citations``/``search_results`` go to ``response.metadata``;
  OpenRouter's ``reasoning_details`` (joined, signature included) to
  ``message.metadata["reasoning_details"]``;
- ``{"error": {...}}`` mid-stream (after a 200) is classified and raised;
- the stream ends with ``data: [DONE]``; a chunk that gave nothing typed but holds
  choices other than index 0 (``n > 1``), delta fields or content parts nobody
  maps, or top-level fields beyond the framing (Azure's ``prompt_filter_results``,
  Groq's ``x_groq``) goes to ``on_unmapped_raw_event``; a chunk that was mapped
  never does (the contract).
"""

from __future__ import annotations

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
    arguments_parse,
    malformed,
    optional_int,
    optional_mapping,
    optional_str,
    require_mapping,
)

__all__ = ["OpenAIChatAdapter"]

_FINISH: Final[Mapping[str, FinishReason]] = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_EXECUTION,
    "function_call": FinishReason.TOOL_EXECUTION,
    "content_filter": FinishReason.CONTENT_FILTER,
}
_KNOWN_DELTA_KEYS: Final = frozenset(
    {
        "role",
        "content",
        "refusal",
        "tool_calls",
        "reasoning_content",
        "reasoning",
        "reasoning_details",
    }
)
# Chunk fields that frame every chunk: a chunk that holds nothing else and gave
# nothing typed is not worth an unmapped event.
_FRAMING_KEYS: Final = frozenset(
    {
        "id",
        "object",
        "created",
        "model",
        "choices",
        "usage",
        "system_fingerprint",
        "service_tier",
        "obfuscation",
        "provider",
        "error",
    }
)
# Top-level annotations of the whole answer that ride on text chunks (Perplexity):
# kept in ``response.metadata`` under their own names, the last report winning.
_ANNOTATIONS: Final = ("citations", "search_results")
# The fields of an OpenRouter reasoning detail that stream in pieces.
_DETAIL_TEXT: Final = ("text", "summary")


class OpenAIChatAdapter(StreamAdapter):
    """Chat Completions ``chat.completion.chunk`` events -> actions."""

    terminal: ClassVar[str] = "data: [DONE]"

    def __init__(self) -> None:
        super().__init__()
        self._by_wire_index: dict[int, ToolSlot] = {}
        self._slots: list[ToolSlot] = []
        self._refusal: list[str] = []
        self._finish_raw: str | None = None
        self._finished_choice = False
        # Open calls given arguments since the last completion check: checking
        # only those keeps many never-closing calls linear, not quadratic.
        self._unchecked: dict[int, ToolSlot] = {}
        self._reasoning_details: list[dict[str, Any]] = []

    @override
    def feed(self, event: WireEvent) -> list[Action]:
        if type(event) is str:
            if event.strip() != "[DONE]":
                raise malformed(f"unexpected data {event[:80]!r} (not a JSON object)")
            return self._done()
        if type(event) is not dict:
            event = require_mapping(event, "a Chat Completions chunk")
        error = event.get("error")
        if error:
            raise self._error(error)
        out: list[Action] = []
        # Something nobody maps (another choice, an unknown delta field) sends the
        # chunk to on_unmapped_raw_event, unless the chunk was mapped.
        unmapped = finished = False
        if not self.id:
            # Azure's leading prompt-filter chunk has an empty id and model.
            self.id = optional_str(event, "id") or None
            self.model_name = optional_str(event, "model") or None
            for key in ("system_fingerprint", "service_tier"):
                value = event.get(key)
                if value is not None:
                    self.response_metadata[key] = value
        if "citations" in event or "search_results" in event:
            self._annotations(event)
        choices = event.get("choices")
        if choices:
            if type(choices) is not list:
                raise malformed("'choices' must be a list")
            for choice in choices:
                if type(choice) is not dict:
                    choice = require_mapping(choice, "a choice")
                if choice.get("index", 0) != 0:
                    unmapped = True  # n > 1: the handler has no place for it
                    continue
                delta = choice.get("delta")
                if delta:
                    if type(delta) is not dict:
                        delta = require_mapping(delta, "'delta'")
                    content = delta.get("content")
                    if len(delta) == 1 and type(content) is str:
                        # The hot path: a delta of nothing but text.
                        if content:
                            out.append((TEXT, content))
                    elif self._delta(delta, out):
                        unmapped = True
                reason = choice.get("finish_reason")
                if reason is not None:
                    finished = True
                    self._finish(reason, out)
        usage = event.get("usage")
        if usage:
            self._usage(require_mapping(usage, "'usage'"))
        elif not out and not finished and (unmapped or _extra_fields(event)):
            out.append((UNMAPPED, event))
        return out

    def _annotations(self, event: Mapping[str, Any]) -> None:
        """Keep the answer's annotations (Perplexity's), the last report winning."""
        for key in _ANNOTATIONS:
            value = event.get(key)
            if value:
                self.response_metadata[key] = value

    def _delta(self, delta: Mapping[str, Any], out: list[Action]) -> bool:
        """Map ``delta`` into ``out``; whether it holds a field nobody maps."""
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")
        if reasoning:
            if type(reasoning) is not str:
                raise malformed("'delta.reasoning_content' must be a string")
            out.append((THINKING, reasoning))
        unknown = False
        content = delta.get("content")
        if content:
            if type(content) is list:
                unknown = _content_parts(content, out)
            elif type(content) is not str:
                raise malformed("'delta.content' must be a string or a list of parts")
            else:
                out.append((TEXT, content))
        refusal = delta.get("refusal")
        if refusal:
            if type(refusal) is not str:
                raise malformed("'delta.refusal' must be a string")
            self._refusal.append(refusal)
            out.append((TEXT, refusal))
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            if type(tool_calls) is not list:
                raise malformed("'delta.tool_calls' must be a list")
            for fragment in tool_calls:
                self._fragment(require_mapping(fragment, "a tool call fragment"), out)
        details = delta.get("reasoning_details")
        if details:
            if type(details) is not list:
                raise malformed("'delta.reasoning_details' must be a list")
            for detail in details:
                self._reasoning_detail(require_mapping(detail, "a reasoning detail"))
        return unknown or (
            not delta.keys() <= _KNOWN_DELTA_KEYS
            and any(delta[key] is not None for key in delta.keys() - _KNOWN_DELTA_KEYS)
        )

    def _reasoning_detail(self, detail: Mapping[str, Any]) -> None:
        """Keep an OpenRouter reasoning detail: pieces of one detail (same type
        and index) are joined, so the signature that ends it lands beside its
        text, ready to be sent back."""
        kept = self._reasoning_details
        last = kept[-1] if kept else None
        if (
            last is None
            or last.get("type") != detail.get("type")
            or last.get("index") != detail.get("index")
        ):
            kept.append(dict(detail))
            self.message_metadata["reasoning_details"] = kept
            return
        for key, value in detail.items():
            if key in _DETAIL_TEXT and type(value) is str:
                previous = last.get(key)
                last[key] = value if type(previous) is not str else previous + value
            elif value is not None:
                last[key] = value

    def _fragment(self, fragment: Mapping[str, Any], out: list[Action]) -> None:
        if self._finished_choice:
            raise malformed("a tool call fragment arrived after the finish_reason")
        wire_index = optional_int(fragment, "index")
        function = fragment.get("function") or {}
        function = require_mapping(function, "'function'")
        call_id = optional_str(fragment, "id") or None
        name = optional_str(function, "name") or None
        arguments = optional_str(function, "arguments") or ""
        if wire_index is None:
            # Some servers omit the index: a fragment naming a tool starts a new
            # call, any other continues the last one.
            slot = self._slots[-1] if name is None and self._slots else None
        else:
            slot = self._by_wire_index.get(wire_index)
        starts = slot is None or (
            call_id is not None and slot.call_id is not None and call_id != slot.call_id
        )
        if slot is not None and not starts:
            if call_id is not None and slot.call_id is None:
                slot.call_id = call_id
            if arguments:
                if slot.complete:
                    if not arguments.strip():
                        return
                    raise malformed(
                        f"tool call {slot.index} received arguments after it was "
                        "complete"
                    )
                slot.pieces.append(arguments)
                self._unchecked[slot.index] = slot
                out.append(
                    (TOOL_PARTIAL, slot.index, slot.call_id, slot.name, arguments)
                )
            return
        if name is None:
            raise malformed("a tool call's first fragment must carry function.name")
        # A new call: earlier ones whose arguments already parse are done. Only
        # calls given arguments since the last check can have changed.
        unchecked = self._unchecked
        if unchecked:
            for earlier in sorted(unchecked.values(), key=_by_index):
                if not earlier.complete and arguments_parse("".join(earlier.pieces)):
                    out.append(earlier.finish())
            unchecked.clear()
        slot = ToolSlot(len(self._slots), call_id, name)
        self._slots.append(slot)
        if wire_index is not None:
            self._by_wire_index[wire_index] = slot
        slot.pieces.append(arguments)
        unchecked[slot.index] = slot
        out.append((TOOL_PARTIAL, slot.index, call_id, name, arguments))

    def _finish(self, reason: object, out: list[Action]) -> None:
        if type(reason) is not str:
            raise malformed("'finish_reason' must be a string")
        self._finish_raw = reason
        self._finished_choice = True
        if reason != "length":
            self._complete_open(out)

    def _complete_open(self, out: list[Action]) -> None:
        for slot in self._slots:
            if not slot.complete:
                out.append(slot.finish())

    def _done(self) -> list[Action]:
        out: list[Action] = []
        if not self._finished_choice:
            self._complete_open(out)
        self.done = True
        raw = self._finish_raw
        if raw is not None:
            self.response_metadata["stop_reason"] = raw
        reason = _FINISH.get(raw, FinishReason.OTHER) if raw else FinishReason.OTHER
        if self._refusal:
            self.message_metadata["refusal"] = "".join(self._refusal)
            if reason is FinishReason.STOP:
                reason = FinishReason.CONTENT_FILTER
        self.finish_reason = reason
        return out

    def _usage(self, usage: Mapping[str, Any]) -> None:
        prompt = optional_int(usage, "prompt_tokens") or 0
        completion = optional_int(usage, "completion_tokens") or 0
        details = optional_mapping(usage, "completion_tokens_details") or {}
        reasoning = optional_int(details, "reasoning_tokens") or 0
        # OpenAI counts reasoning inside completion_tokens; xAI leaves it out, and
        # its total_tokens shows it. Output tokens always include the thinking.
        if reasoning and optional_int(usage, "total_tokens") == (
            prompt + completion + reasoning
        ):
            completion += reasoning
        self.usage = TokenUsage(
            input_tokens=prompt, output_tokens=completion, raw=usage
        )

    def _error(self, error: object) -> Exception:
        if isinstance(error, Mapping):
            code = error.get("code") or error.get("type")
            message = error.get("message")
            return classify_error(
                status=None,
                code=code if isinstance(code, str) else None,
                message=message if isinstance(message, str) else str(error),
                original=dict(error),
            )
        return classify_error(status=None, code=None, message=str(error))


def _extra_fields(event: Mapping[str, Any]) -> bool:
    """Whether a chunk holds a top-level field nobody maps (Azure's
    ``prompt_filter_results``, Groq's ``x_groq``, ...)."""
    return any(
        value
        for key, value in event.items()
        if key not in _FRAMING_KEYS and key not in _ANNOTATIONS
    )


def _by_index(slot: ToolSlot) -> int:
    return slot.index


def _content_parts(parts: list[Any], out: list[Action]) -> bool:
    """Map Mistral's ``delta.content`` list of parts into ``out``; whether it
    held a part of a type nobody maps.

    A ``text`` part is response text; a ``thinking`` part holds a string or a
    list of text parts (Magistral).
    """
    unknown = False
    for part in parts:
        part = require_mapping(part, "a content part")
        kind = part.get("type")
        if kind == "text":
            text = optional_str(part, "text")
            if text:
                out.append((TEXT, text))
        elif kind == "thinking":
            thinking = part.get("thinking")
            if type(thinking) is list:
                thinking = "".join(
                    optional_str(require_mapping(inner, "a thinking part"), "text")
                    or ""
                    for inner in thinking
                )
            elif thinking is not None and type(thinking) is not str:
                raise malformed("a thinking part must hold a string or a list")
            if thinking:
                out.append((THINKING, thinking))
        else:
            unknown = True
    return unknown
