"""Bedrock ConverseStream events -> actions.

A raw event is the message's JSON payload with ``"type"`` set from its
``:event-type`` header (``langhooks.models._eventstream`` decodes the binary
framing); botocore's parsed shape, ``{"contentBlockDelta": {...}}``, is taken as
well. Quirks handled (see ``docs/guide/providers.md``):

- text blocks usually have no ``contentBlockStart``: a delta opens its block;
- ``reasoningContent.text`` is thinking; its ``signature`` goes to
  ``message.metadata["thinking_signature"]`` and, with ``redactedContent``
  blocks, to ``message.metadata["thinking_blocks"]`` in order, in Anthropic's
  shape (``{"type": "thinking", "thinking", "signature"}`` and
  ``{"type": "redacted_thinking", "data"}``): what the next turn sends back;
- ``toolUse`` blocks: announced at ``contentBlockStart``, ``input`` fragments
  joined and parsed at ``contentBlockStop``, numbered 0, 1, ... in order; a
  server-side tool (``"type": "server_tool_use"``) and ``toolResult`` blocks
  are the provider's own work: every event of such a block goes to
  ``on_unmapped_raw_event``, as do citation deltas and unknown events;
- ``metadata`` may come before or after ``messageStop``: the stream ends once
  both arrived (or at the end of the body after ``messageStop``); input tokens
  count cache reads and writes too (the raw usage keeps the split);
- an exception message (``throttlingException``, ...) or an ``error`` message
  raises the classified ``LangHooksError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from typing_extensions import override

from ..._core._messages import ErrorType, FinishReason, LangHooksError, TokenUsage
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

__all__ = ["BEDROCK_EXCEPTIONS", "BedrockAdapter", "bedrock_error"]

_STOP: Final[Mapping[str, FinishReason]] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_EXECUTION,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
    "content_filtered": FinishReason.CONTENT_FILTER,
}

#: Bedrock exception names (lower-cased) -> (error type, retryable).
BEDROCK_EXCEPTIONS: Final[Mapping[str, tuple[ErrorType, bool]]] = {
    "throttlingexception": ("rate_limited", True),
    "toomanyrequestsexception": ("rate_limited", True),
    "servicequotaexceededexception": ("rate_limited", False),
    "serviceunavailableexception": ("overloaded", True),
    "modelnotreadyexception": ("overloaded", True),
    "internalserverexception": ("stream_error", True),
    "modelstreamerrorexception": ("stream_error", True),
    "modeltimeoutexception": ("timeout", True),
    "modelerrorexception": ("stream_error", False),
    "validationexception": ("invalid_request", False),
    "resourcenotfoundexception": ("invalid_request", False),
    "conflictexception": ("invalid_request", False),
    "accessdeniedexception": ("authentication", False),
    "unrecognizedclientexception": ("authentication", False),
    "expiredtokenexception": ("authentication", False),
    "invalidsignatureexception": ("authentication", False),
}

_EVENTS: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


def bedrock_error(
    code: str | None,
    message: str,
    *,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
    original: object = None,
) -> LangHooksError:
    """The ``LangHooksError`` for a Bedrock exception (in a stream or an HTTP
    error): ``BEDROCK_EXCEPTIONS`` decides its type, else the HTTP status.

    Args:
        code: the exception name (``ThrottlingException``, ...), if known.
        message: the exception's message.
        status: the HTTP status, if any.
        headers: the response headers, if any.
        original: the exception or event behind it.
    """
    error = classify_error(
        status=status, code=code, message=message, headers=headers, original=original
    )
    known = BEDROCK_EXCEPTIONS.get(code.lower()) if code else None
    if known is None:
        return error
    return LangHooksError(
        known[0],
        error.message,
        original=original,
        retryable=known[1],
        retry_after=error.retry_after,
        metadata=error.metadata,
    )


class _Block:
    __slots__ = ("kind", "redacted", "signature", "stopped", "thinking", "tool")

    def __init__(self, kind: str, tool: ToolSlot | None = None) -> None:
        self.kind = kind  # "text", "reasoning", "tool", "unmapped"
        self.tool = tool
        self.thinking: list[str] = []
        self.signature = ""
        self.redacted: list[str] = []
        self.stopped = False


class BedrockAdapter(StreamAdapter):
    """ConverseStream events -> actions."""

    terminal: ClassVar[str] = "messageStop"

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}
        self._order: list[_Block] = []
        self._tool_count = 0
        self._stopped = False
        self._reported = False  # a metadata event arrived

    @override
    def feed(self, event: WireEvent) -> list[Action]:
        if type(event) is dict and event.get("type") == "contentBlockDelta":
            # The hot path: text in a text block already open (checked as the
            # full path checks it; anything else takes the full path).
            delta = event.get("delta")
            if type(delta) is dict:
                text = delta.get("text")
                index = event.get("contentBlockIndex")
                if type(text) is str and type(index) is int:
                    block = self._blocks.get(index)
                    if block is not None and block.kind == "text" and not block.stopped:
                        return [(TEXT, text)] if text else []
        if type(event) is str:
            # The body ended on a message boundary (BedrockEventDecoder.end).
            if self._stopped:
                self._end()
            return []
        event = require_mapping(event, "a ConverseStream event")
        kind = event.get("type")
        if kind is None and len(event) == 1:
            # botocore's parsed shape: {"contentBlockDelta": {...}}
            ((kind, body),) = event.items()
            event = {**require_mapping(body, repr(kind)), "type": kind}
        if kind == "contentBlockDelta":
            return self._delta(event)
        if type(kind) is not str:
            raise malformed("a ConverseStream event must have a string 'type'")
        if kind == "contentBlockStart":
            return self._start(event)
        if kind == "contentBlockStop":
            return self._stop(event)
        if kind == "messageStart":
            return []
        if kind == "messageStop":
            reason = optional_str(event, "stopReason")
            if reason is not None:
                self.response_metadata["stop_reason"] = reason
                self.finish_reason = _STOP.get(reason, FinishReason.OTHER)
            fields = event.get("additionalModelResponseFields")
            if fields is not None:
                self.response_metadata["additional_model_response_fields"] = fields
            self._stopped = True
            if self._reported:
                self._end()
            return []
        if kind == "metadata":
            self._metadata(event)
            self._reported = True
            if self._stopped:
                self._end()
            return []
        if kind == "error" or kind.endswith("Exception"):
            code = optional_str(event, "code") if kind == "error" else kind
            text = optional_str(event, "message") or optional_str(event, "Message")
            raise bedrock_error(
                code,
                text or f"the stream failed ({code})",
                original=dict(event),
            )
        return [(UNMAPPED, event)]

    def _open(self, event: Mapping[str, Any]) -> tuple[int, _Block | None]:
        index = optional_int(event, "contentBlockIndex")
        if index is None:
            raise malformed(f"a {event['type']} event needs a 'contentBlockIndex'")
        block = self._blocks.get(index)
        if block is not None and block.stopped:
            raise malformed(f"content block {index} was already stopped")
        return index, block

    def _start(self, event: Mapping[str, Any]) -> list[Action]:
        index, block = self._open(event)
        if block is not None:
            raise malformed(f"content block {index} was started twice")
        start = optional_mapping(event, "start") or {}
        tool = optional_mapping(start, "toolUse")
        if tool is not None and tool.get("type") in (None, "tool_use"):
            call_id = optional_str(tool, "toolUseId")
            name = optional_str(tool, "name")
            if not call_id or not name:
                raise malformed("a toolUse block needs a 'toolUseId' and a 'name'")
            slot = ToolSlot(self._tool_count, call_id, name)
            self._tool_count += 1
            self._blocks[index] = _Block("tool", slot)
            return [(TOOL_PARTIAL, slot.index, call_id, name, "")]
        if not start:
            # ``start: {}``: a text block announced (no payload to map).
            self._blocks[index] = _Block("text")
            return []
        self._blocks[index] = _Block("unmapped")
        return [(UNMAPPED, event)]

    def _delta(self, event: Mapping[str, Any]) -> list[Action]:
        index, block = self._open(event)
        delta = require_mapping(event.get("delta"), "'delta'")
        if block is not None and block.kind == "unmapped":
            return [(UNMAPPED, event)]
        if "text" in delta:
            text = optional_str(delta, "text")
            block = self._typed(index, block, "text")
            return [(TEXT, text)] if text else []
        reasoning = optional_mapping(delta, "reasoningContent")
        if reasoning is not None:
            block = self._typed(index, block, "reasoning")
            text = optional_str(reasoning, "text")
            block.signature += optional_str(reasoning, "signature") or ""
            redacted = optional_str(reasoning, "redactedContent")
            if redacted:
                block.redacted.append(redacted)
            if text:
                block.thinking.append(text)
                return [(THINKING, text)]
            return []
        tool = optional_mapping(delta, "toolUse")
        if tool is not None:
            if block is None or block.tool is None:
                raise malformed(
                    f"a toolUse delta arrived for content block {index}, which is "
                    "not a started toolUse block"
                )
            piece = optional_str(tool, "input")
            if not piece:
                return []
            slot = block.tool
            slot.pieces.append(piece)
            return [(TOOL_PARTIAL, slot.index, slot.call_id, slot.name, piece)]
        # citation, toolResult, image and unknown deltas: nothing typed.
        return [(UNMAPPED, event)]

    def _typed(self, index: int, block: _Block | None, kind: str) -> _Block:
        if block is None:
            block = self._blocks[index] = _Block(kind)
            self._order.append(block)
            return block
        if block.kind != kind:
            raise malformed(
                f"a {kind} delta arrived for content block {index}, a {block.kind} "
                "block"
            )
        return block

    def _stop(self, event: Mapping[str, Any]) -> list[Action]:
        index, block = self._open(event)
        if block is None:
            # A block that had no delta (an empty one): nothing to finish.
            self._blocks[index] = block = _Block("text")
        block.stopped = True
        if block.tool is not None:
            return [block.tool.finish()]
        if block.kind == "unmapped":
            return [(UNMAPPED, event)]
        return []

    def _metadata(self, event: Mapping[str, Any]) -> None:
        usage = optional_mapping(event, "usage")
        if usage is not None:
            raw = dict(usage)
            self.usage = TokenUsage(
                input_tokens=(optional_int(raw, "inputTokens") or 0)
                + (optional_int(raw, "cacheReadInputTokens") or 0)
                + (optional_int(raw, "cacheWriteInputTokens") or 0),
                output_tokens=optional_int(raw, "outputTokens") or 0,
                raw=raw,
            )
        metrics = optional_mapping(event, "metrics")
        if metrics is not None:
            latency = optional_int(metrics, "latencyMs")
            if latency is not None:
                self.response_metadata["latency_ms"] = latency
        for key, name in (
            ("trace", "trace"),
            ("performanceConfig", "performance_config"),
            ("serviceTier", "service_tier"),
        ):
            if event.get(key) is not None:
                self.response_metadata[name] = event[key]

    def _end(self) -> None:
        self.done = True
        blocks: list[dict[str, str]] = []
        for block in self._order:
            if block.kind != "reasoning":
                continue
            if block.redacted:
                blocks.append(
                    {"type": "redacted_thinking", "data": "".join(block.redacted)}
                )
            if block.thinking or block.signature:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": "".join(block.thinking),
                        "signature": block.signature,
                    }
                )
                if block.signature:
                    self.message_metadata["thinking_signature"] = block.signature
        if blocks:
            self.message_metadata["thinking_blocks"] = tuple(blocks)
        if self.finish_reason is None:
            self.finish_reason = FinishReason.OTHER
