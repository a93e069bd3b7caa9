"""What every wire-format adapter shares: actions, state and small checks.

An adapter is a pure state machine over one stream. ``feed(event)`` takes one
decoded wire event (a JSON object, or the ``"[DONE]"`` sentinel of Chat
Completions) and returns the handler *actions* it implies, in order; it never
calls a handler itself, so one adapter serves both the sync and the async driver
(``langhooks.models._drive``), which deliver the actions, check for cancellation
before each, and assemble the response from what they delivered.

An action is a tagged tuple whose first item says what it is; each shape has
its type (``TextAction``, ...), and ``Action`` is their union, so a checker
narrows ``action`` by its tag and checks every read of its items (plain tuples:
no object is built per action on the hot path):

- ``(TEXT, text)`` and ``(THINKING, text)``: a non-empty piece of text;
- ``(TOOL_PARTIAL, index, id, name, partial_arguments)``;
- ``(TOOL_COMPLETE, ToolCall)``;
- ``(UNMAPPED, raw_event)``.

An in-stream error event raises the classified ``LangHooksError``; malformed
data raises a ``LangHooksError`` of type ``protocol_error`` (or, for tool-call
arguments that are not a JSON object, ``delta_conversion_failed``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, TypeAlias

from ..._core._messages import (
    FinishReason,
    LangHooksError,
    MessageStatus,
    TokenUsage,
    ToolCall,
)

__all__ = [
    "TEXT",
    "THINKING",
    "TOOL_COMPLETE",
    "TOOL_PARTIAL",
    "UNMAPPED",
    "Action",
    "StreamAdapter",
    "TextAction",
    "ThinkingAction",
    "ToolCompleteAction",
    "ToolPartialAction",
    "ToolSlot",
    "UnmappedAction",
    "malformed",
    "optional_int",
    "optional_mapping",
    "optional_str",
    "require_mapping",
    "wire_event",
]

TEXT: Final = 0
THINKING: Final = 1
TOOL_PARTIAL: Final = 2
TOOL_COMPLETE: Final = 3
UNMAPPED: Final = 4

TextAction: TypeAlias = tuple[Literal[0], str]
ThinkingAction: TypeAlias = tuple[Literal[1], str]
#: (TOOL_PARTIAL, index, id, name, partial_arguments)
ToolPartialAction: TypeAlias = tuple[Literal[2], int, "str | None", str, str]
ToolCompleteAction: TypeAlias = tuple[Literal[3], ToolCall]
UnmappedAction: TypeAlias = tuple[Literal[4], object]
Action: TypeAlias = (
    "TextAction | ThinkingAction | ToolPartialAction | ToolCompleteAction"
    " | UnmappedAction"
)
WireEvent: TypeAlias = "Mapping[str, Any] | str"


def malformed(message: str, *, original: object = None) -> LangHooksError:
    """A ``protocol_error`` for wire data that breaks the format."""
    return LangHooksError("protocol_error", message, original=original)


def require_mapping(value: object, what: str) -> Mapping[str, Any]:
    """``value`` as a JSON object, or a protocol error naming ``what``."""
    if type(value) is dict:
        return value
    if not isinstance(value, Mapping):
        raise malformed(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def optional_mapping(event: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """``event[key]`` as a JSON object; None when absent or null."""
    value = event.get(key)
    if value is None:
        return None
    return require_mapping(value, repr(key))


def optional_str(event: Mapping[str, Any], key: str) -> str | None:
    """``event[key]`` as a string; None when absent or null."""
    value = event.get(key)
    if value is None or type(value) is str:
        return value
    raise malformed(f"{key!r} must be a string, got {type(value).__name__}")


def optional_int(event: Mapping[str, Any], key: str) -> int | None:
    """``event[key]`` as a non-negative int; None when absent or null."""
    value = event.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise malformed(f"{key!r} must be a non-negative integer, got {value!r}")
    return value


class ToolSlot:
    """One tool call being assembled from fragments."""

    __slots__ = ("call_id", "complete", "index", "name", "pieces")

    def __init__(self, index: int, call_id: str | None, name: str) -> None:
        self.index = index
        self.call_id = call_id
        self.name = name
        self.pieces: list[str] = []
        self.complete = False

    def finish(self, arguments_text: str | None = None) -> ToolCompleteAction:
        """Mark complete and build the ``TOOL_COMPLETE`` action.

        Args:
            arguments_text: the full arguments when the provider restates them;
                otherwise the joined fragments are parsed.

        Raises:
            LangHooksError: ``delta_conversion_failed`` when the arguments are not
                a JSON object.
        """
        text = "".join(self.pieces) if arguments_text is None else arguments_text
        self.complete = True
        call = ToolCall(
            call_id=self.call_id or f"call_{self.index}",
            name=self.name,
            arguments=parse_arguments(text, self.name),
            index=self.index,
        )
        return (TOOL_COMPLETE, call)


def parse_arguments(text: str, name: str) -> dict[str, Any]:
    """Parse a tool call's JSON arguments; blank means no arguments.

    Raises:
        LangHooksError: ``delta_conversion_failed`` when they are not a JSON object.
    """
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise LangHooksError(
            "delta_conversion_failed",
            f"the arguments of tool call {name!r} are not valid JSON: {exc}",
            original=exc,
        ) from exc
    if not isinstance(value, dict):
        raise LangHooksError(
            "delta_conversion_failed",
            f"the arguments of tool call {name!r} must be a JSON object, got "
            f"{type(value).__name__}",
        )
    return value


def arguments_parse(text: str) -> bool:
    """Whether ``text`` is already a complete JSON object."""
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def finish_status(reason: FinishReason | None) -> MessageStatus:
    """The message status a finish reason implies."""
    if reason is FinishReason.LENGTH:
        return "length"
    if reason is FinishReason.CONTENT_FILTER:
        return "content_filtered"
    return "complete"


class StreamAdapter:
    """The state every adapter reports; subclasses implement ``feed``."""

    #: What ends a stream of this format, for error messages.
    terminal: ClassVar[str] = ""

    def __init__(self) -> None:
        self.done = False
        self.id: str | None = None
        self.model_name: str | None = None
        self.usage: TokenUsage | None = None
        self.finish_reason: FinishReason | None = None
        self.response_metadata: dict[str, Any] = {}
        self.message_metadata: dict[str, Any] = {}

    def feed(self, event: WireEvent) -> list[Action]:
        """Turn one wire event into actions (see the module docstring)."""
        raise NotImplementedError


def wire_event(event: object) -> object:
    """A JSON object (or the ``"[DONE]"`` string) from ``event``.

    Official-SDK events are pydantic models: dumped the way they came off the wire
    (fields the server did not send are left out).
    """
    if isinstance(event, Mapping | str):
        return event
    dump = getattr(event, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
        except Exception as exc:  # a broken SDK object is malformed input
            raise malformed(f"cannot convert {type(event).__name__}: {exc}") from exc
    raise malformed(
        f"expected a decoded wire event (a JSON object or an SDK event), got "
        f"{type(event).__name__}"
    )
