"""A scripted turn and the events it streams, as the adapter actions a provider
stream gives: what ``ScriptedChatModel`` delivers through ``astream_turn`` /
``stream_turn``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, final

import attrs
from typing_extensions import override

from .._core._messages import FinishReason, LangHooksError, TokenUsage, ToolCall
from .._core._values import _frozen_mapping
from ._adapters._base import (
    TEXT,
    THINKING,
    TOOL_COMPLETE,
    TOOL_PARTIAL,
    Action,
    StreamAdapter,
)

__all__ = ["END", "ScriptedAdapter", "ScriptedTurn", "turn_events"]

# A word and the whitespace after it: "Hello, world" -> "Hello, ", "world".
_WORD: Final = re.compile(r"\s*\S+\s*|\s+")
# Size of each streamed piece of a tool call's JSON arguments.
_FRAGMENT: Final = 12


def _calls(value: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    calls = tuple(value)
    for call in calls:
        if not isinstance(call, ToolCall):
            raise TypeError(f"tool_calls must be ToolCalls, got {type(call).__name__}")
    return calls


@attrs.frozen(kw_only=True)
class ScriptedTurn:
    """One scripted model answer.

    Attributes:
        text: the response text, streamed in word-sized partials.
        thinking: thinking text, streamed before the response text.
        tool_calls: calls the answer asks for, streamed as argument fragments and
            then complete calls (their ``index`` is set to their position).
        usage: the token usage the answer reports.
        metadata: the response's metadata (for instance ``response_headers`` and
            ``ratelimit``), as a provider model would set it.
        error: when set, the stream dies after delivering the turn's partials:
            ``on_error(error)`` instead of ``on_complete_response``, and the call
            raises it (a connection lost mid-way; give it ``retryable=True`` for
            a run to retry it, as a provider model does).
    """

    text: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    thinking: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_calls)
    usage: TokenUsage | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(TokenUsage)),
    )
    metadata: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    error: LangHooksError | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(
            attrs.validators.instance_of(LangHooksError)
        ),
    )


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def turn_events(turn: ScriptedTurn) -> list[dict[str, Any]]:
    """The events a turn streams before its end, in order: what
    ``ScriptedAdapter`` turns into the actions a provider adapter would give."""
    events: list[dict[str, Any]] = [
        {"type": "thinking", "text": word} for word in _words(turn.thinking)
    ]
    events += [{"type": "text", "text": word} for word in _words(turn.text)]
    for index, call in enumerate(turn.tool_calls):
        arguments = json.dumps(dict(call.arguments), separators=(",", ":"))
        events.extend(
            {"type": "fragment", "index": index, "call": call, "piece": piece}
            for piece in (
                arguments[i : i + _FRAGMENT]
                for i in range(0, len(arguments), _FRAGMENT)
            )
        )
        events.append({"type": "complete", "call": attrs.evolve(call, index=index)})
    return events


END: Final[Mapping[str, Any]] = {"type": "end"}


@final
class ScriptedAdapter(StreamAdapter):
    """A scripted turn's events -> the actions a provider adapter gives."""

    terminal: ClassVar[str] = "the end of the scripted turn"

    def __init__(self, turn: ScriptedTurn, number: int) -> None:
        super().__init__()
        self.id = f"scripted-{number}"
        self.model_name = "scripted"
        self.usage = turn.usage

    @override
    def feed(self, event: Mapping[str, Any] | str) -> list[Action]:
        assert not isinstance(event, str)  # only turn_events and END are fed
        kind = event["type"]
        if kind == "thinking":
            return [(THINKING, event["text"])]
        if kind == "text":
            return [(TEXT, event["text"])]
        if kind == "fragment":
            call = event["call"]
            index, piece = event["index"], event["piece"]
            return [(TOOL_PARTIAL, index, call.call_id, call.name, piece)]
        if kind == "complete":
            return [(TOOL_COMPLETE, event["call"])]
        # The end: the driver reports TOOL_EXECUTION when calls completed.
        self.finish_reason = FinishReason.STOP
        self.done = True
        return []
