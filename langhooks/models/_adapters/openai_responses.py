"""OpenAI Responses API stream events -> actions.

Quirks handled (see ``docs/guide/streams.md``):

- text from ``response.output_text.delta``, refusals from
  ``response.refusal.delta`` (response text, recorded in
  ``message.metadata["refusal"]``, reported as ``CONTENT_FILTER``);
- thinking from ``response.reasoning_summary_text.delta`` and
  ``response.reasoning_text.delta``; the finished reasoning items (with
  ``encrypted_content`` when requested) go to
  ``message.metadata["reasoning_items"]`` so they can be sent back;
- function calls announced by ``response.output_item.added`` (the ``call_id`` is
  the id to echo back, the item ``id`` is what deltas refer to), argument deltas,
  completed by ``response.function_call_arguments.done`` (or the item's
  ``.done``), whose restated arguments are delivered as a last fragment when the
  deltas did not spell them (LM Studio sends no deltas); calls are numbered 0, 1,
  ... in order;
- a ``custom_tool_call`` (freeform input) is a tool call whose arguments are
  ``{"input": ...}``, its input deltas streamed as fragments of that JSON; its
  ``call_id`` is listed in ``message.metadata["custom_tool_calls"]``;
- the stream ends at ``response.completed`` / ``response.incomplete`` (``LENGTH``
  or ``CONTENT_FILTER``) / ``response.failed`` (raised), with no ``[DONE]``;
- ``error`` events in both shapes: nested ``{"error": {...}}`` (the live API) and
  flat ``code``/``message`` (the documented one);
- other output items (web search, file search, MCP, ...) and unknown events go to
  ``on_unmapped_raw_event``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from typing_extensions import override

from ..._core._messages import FinishReason, LangHooksError, TokenUsage
from .._errors import classify_error
from ._base import (
    TEXT,
    THINKING,
    TOOL_PARTIAL,
    UNMAPPED,
    Action,
    StreamAdapter,
    ToolPartialAction,
    ToolSlot,
    WireEvent,
    malformed,
    optional_int,
    optional_mapping,
    optional_str,
    require_mapping,
)

__all__ = ["OpenAIResponsesAdapter"]

# Events that carry nothing the handler or the response needs beyond what the
# deltas and the items already gave.
_ACKNOWLEDGED: Final = frozenset(
    {
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    }
)
_HEADER_EVENTS: Final = frozenset(
    {"response.created", "response.in_progress", "response.queued"}
)
_INCOMPLETE_REASONS: Final[Mapping[str, FinishReason]] = {
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}


class OpenAIResponsesAdapter(StreamAdapter):
    """Responses API stream events -> actions."""

    terminal: ClassVar[str] = "response.completed, response.incomplete or failed"

    def __init__(self) -> None:
        super().__init__()
        self._calls: dict[str, ToolSlot] = {}
        self._count = 0
        self._refusal: list[str] = []
        self._reasoning_items: list[Mapping[str, Any]] = []
        self._custom: list[str] = []

    @override
    def feed(self, event: WireEvent) -> list[Action]:
        event = require_mapping(event, "a Responses stream event")
        kind = event.get("type")
        if kind == "response.output_text.delta":
            return self._text(event)
        if (
            kind == "response.reasoning_summary_text.delta"
            or kind == "response.reasoning_text.delta"
        ):
            delta = optional_str(event, "delta")
            return [(THINKING, delta)] if delta else []
        if kind == "response.function_call_arguments.delta":
            slot = self._slot(event)
            delta = optional_str(event, "delta")
            if not delta:
                return []
            if slot.complete:
                raise malformed(f"arguments arrived after function call {slot.index}")
            slot.pieces.append(delta)
            return [(TOOL_PARTIAL, slot.index, slot.call_id, slot.name, delta)]
        if kind == "response.function_call_arguments.done":
            slot = self._slot(event)
            if slot.complete:
                return []
            return _restated(slot, optional_str(event, "arguments"))
        if kind == "response.custom_tool_call_input.delta":
            slot = self._slot(event)
            delta = optional_str(event, "delta")
            if not delta:
                return []
            if slot.complete:
                raise malformed(f"input arrived after custom tool call {slot.index}")
            # The freeform input streams as a JSON string inside {"input": ...}:
            # the fragments spell the arguments the complete call carries.
            piece = json.dumps(delta)[1:-1]
            slot.pieces.append(piece)
            return [(TOOL_PARTIAL, slot.index, slot.call_id, slot.name, piece)]
        if kind == "response.custom_tool_call_input.done":
            slot = self._slot(event)
            if slot.complete:
                return []
            return _restated(
                slot, _custom_arguments(slot, optional_str(event, "input"))
            )
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind == "response.refusal.delta":
            delta = optional_str(event, "delta")
            if not delta:
                return []
            self._refusal.append(delta)
            return [(TEXT, delta)]
        if kind in _ACKNOWLEDGED:
            return []
        if kind in _HEADER_EVENTS:
            self._header(require_mapping(event.get("response"), "'response'"))
            return []
        if kind == "response.completed" or kind == "response.incomplete":
            self._terminal(require_mapping(event.get("response"), "'response'"))
            return []
        if kind == "response.failed":
            raise self._failed(event)
        if kind == "error":
            raise _error_event(event)
        if type(kind) is not str:
            raise malformed("a Responses event must have a string 'type'")
        return [(UNMAPPED, event)]

    def _text(self, event: Mapping[str, Any]) -> list[Action]:
        delta = event.get("delta")
        if not delta:
            return []
        if type(delta) is not str:
            raise malformed("'delta' must be a string")
        return [(TEXT, delta)]

    def _slot(self, event: Mapping[str, Any]) -> ToolSlot:
        item_id = optional_str(event, "item_id")
        slot = self._calls.get(item_id) if item_id is not None else None
        if slot is None:
            raise malformed(f"arguments for unknown tool call item {item_id!r}")
        return slot

    def _item_added(self, event: Mapping[str, Any]) -> list[Action]:
        item = require_mapping(event.get("item"), "'item'")
        kind = item.get("type")
        if kind == "function_call" or kind == "custom_tool_call":
            item_id = optional_str(item, "id") or optional_str(item, "call_id")
            name = optional_str(item, "name")
            if not item_id or not name:
                raise malformed(f"a {kind} item needs an 'id' and a 'name'")
            if item_id in self._calls:
                raise malformed(f"tool call item {item_id!r} was added twice")
            slot = ToolSlot(self._count, optional_str(item, "call_id"), name)
            self._count += 1
            self._calls[item_id] = slot
            if kind == "function_call":
                arguments = optional_str(item, "arguments") or ""
            else:
                self._custom.append(slot.call_id or f"call_{slot.index}")
                self.message_metadata["custom_tool_calls"] = tuple(self._custom)
                arguments = (
                    _CUSTOM_START + json.dumps(optional_str(item, "input") or "")[1:-1]
                )
            slot.pieces.append(arguments)
            return [(TOOL_PARTIAL, slot.index, slot.call_id, name, arguments)]
        if kind == "message" or kind == "reasoning":
            return []
        return [(UNMAPPED, event)]

    def _item_done(self, event: Mapping[str, Any]) -> list[Action]:
        item = require_mapping(event.get("item"), "'item'")
        kind = item.get("type")
        if kind == "function_call" or kind == "custom_tool_call":
            item_id = optional_str(item, "id") or optional_str(item, "call_id")
            slot = self._calls.get(item_id) if item_id is not None else None
            if slot is None:
                raise malformed(f"unknown tool call item {item_id!r} is done")
            if slot.complete:
                return []
            if kind == "function_call":
                return _restated(slot, optional_str(item, "arguments"))
            return _restated(slot, _custom_arguments(slot, optional_str(item, "input")))
        if kind == "reasoning":
            self._reasoning_items.append(item)
            return []
        if kind == "message":
            return []
        return [(UNMAPPED, event)]

    def _header(self, response: Mapping[str, Any]) -> None:
        self.id = optional_str(response, "id") or self.id
        self.model_name = optional_str(response, "model") or self.model_name

    def _terminal(self, response: Mapping[str, Any]) -> None:
        self._header(response)
        status = optional_str(response, "status")
        for key in ("service_tier",):
            value = response.get(key)
            if value is not None:
                self.response_metadata[key] = value
        if self.id is not None:
            self.message_metadata["response_id"] = self.id
        if self._reasoning_items:
            self.message_metadata["reasoning_items"] = tuple(self._reasoning_items)
        usage = optional_mapping(response, "usage")
        if usage is not None:
            self.usage = TokenUsage(
                input_tokens=optional_int(usage, "input_tokens") or 0,
                output_tokens=optional_int(usage, "output_tokens") or 0,
                raw=usage,
            )
        reason = FinishReason.STOP
        if status == "incomplete":
            details = optional_mapping(response, "incomplete_details") or {}
            why = optional_str(details, "reason")
            self.response_metadata["stop_reason"] = why
            reason = _INCOMPLETE_REASONS.get(why or "", FinishReason.OTHER)
        else:
            self.response_metadata["stop_reason"] = status
        if self._refusal:
            self.message_metadata["refusal"] = "".join(self._refusal)
            if reason is FinishReason.STOP:
                reason = FinishReason.CONTENT_FILTER
        self.finish_reason = reason
        self.done = True

    def _failed(self, event: Mapping[str, Any]) -> LangHooksError:
        response = require_mapping(event.get("response"), "'response'")
        self._header(response)
        error = optional_mapping(response, "error") or {}
        return classify_error(
            status=None,
            code=optional_str(error, "code"),
            message=optional_str(error, "message") or "the response failed",
            original=dict(event),
        )


_CUSTOM_START: Final = '{"input": "'


def _custom_arguments(slot: ToolSlot, text: str | None) -> str:
    """A custom tool call's freeform input as the arguments JSON it is given as
    (without a restated input, the input streamed so far)."""
    if text is None:
        return "".join(slot.pieces) + '"}'
    return _CUSTOM_START + json.dumps(text)[1:] + "}"


def _restated(slot: ToolSlot, arguments: str | None) -> list[Action]:
    """Complete ``slot`` with the arguments a ``.done`` event restates.

    Servers that stream no argument deltas (LM Studio) send them only here: the
    missing rest is delivered as one more fragment first, so the fragments always
    spell the arguments.

    Raises:
        LangHooksError: ``protocol_error`` when the restated arguments contradict
            the fragments already delivered.
    """
    sent = "".join(slot.pieces)
    if arguments is None or arguments == sent:
        return [slot.finish()]
    if arguments.startswith(sent):
        rest = arguments[len(sent) :]
        slot.pieces.append(rest)
        partial: ToolPartialAction = (
            TOOL_PARTIAL,
            slot.index,
            slot.call_id,
            slot.name,
            rest,
        )
        return [partial, slot.finish()]
    try:
        same = json.loads(sent) == json.loads(arguments)
    except ValueError:
        same = False
    if not same:
        raise malformed(
            f"tool call {slot.index}: the arguments restated at its end differ from "
            "the fragments streamed"
        )
    return [slot.finish()]


def _error_event(event: Mapping[str, Any]) -> LangHooksError:
    # The live API nests the error object; the documented shape is flat.
    nested = event.get("error")
    error = nested if isinstance(nested, Mapping) else event
    code = optional_str(error, "code") or optional_str(error, "type")
    if code == "error":  # the flat shape's "type" is the event type
        code = None
    return classify_error(
        status=None,
        code=code,
        message=optional_str(error, "message") or "the stream reported an error",
        original=dict(event),
    )
