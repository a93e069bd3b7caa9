"""``ScriptedChatModel``: the embedded, deterministic model for demos and tests.

Each call to ``stream`` / ``astream`` consumes the next scripted turn and delivers it
through the streaming contract: thinking and text in word-sized partials, each tool
call as argument fragments followed by its complete call, then the terminal
``on_complete_response`` (or ``on_error`` for an error item).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, final

import attrs
from typing_extensions import override

from .._messages import (
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    _frozen_mapping,
)
from .._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._base import ChatRequest

__all__ = ["ScriptedChatModel", "ScriptedTurn"]

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


def _turns(value: Sequence[ScriptedTurn | LangHooksError]) -> tuple[Any, ...]:
    if isinstance(value, ScriptedTurn | LangHooksError | str):
        raise TypeError(
            "turns must be a sequence of ScriptedTurn or LangHooksError items; "
            "wrap a single turn in a list"
        )
    turns = tuple(value)
    for turn in turns:
        if not isinstance(turn, ScriptedTurn | LangHooksError):
            raise TypeError(
                f"turns must be ScriptedTurn or LangHooksError items, got "
                f"{type(turn).__name__}"
            )
    return turns


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _events(turn: ScriptedTurn) -> list[tuple[str, Any]]:
    """The streaming calls a turn makes before its terminal call, in order."""
    events: list[tuple[str, Any]] = [
        ("thinking", PartialThinking(text=word)) for word in _words(turn.thinking)
    ]
    events += [("text", PartialResponse(text=word)) for word in _words(turn.text)]
    for index, call in enumerate(turn.tool_calls):
        arguments = json.dumps(dict(call.arguments), separators=(",", ":"))
        pieces = [
            arguments[i : i + _FRAGMENT] for i in range(0, len(arguments), _FRAGMENT)
        ]
        for piece in pieces:
            partial = PartialToolCall(
                index=index, id=call.call_id, name=call.name, partial_arguments=piece
            )
            events.append(("fragment", partial))
        complete = CompleteToolCall(
            index=index, tool_call=attrs.evolve(call, index=index)
        )
        events.append(("complete", complete))
    return events


@final
class _Assembly:
    """The response assembled from the partials delivered so far."""

    __slots__ = ("calls", "text", "thinking", "turn")

    def __init__(self, turn: ScriptedTurn) -> None:
        self.turn = turn
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []

    def add(self, kind: str, item: Any) -> None:
        if kind == "thinking":
            self.thinking.append(item.text)
        elif kind == "text":
            self.text.append(item.text)
        elif kind == "complete":
            self.calls.append(item.tool_call)

    def response(self, number: int, *, cancelled: bool) -> ChatResponse:
        parts: list[ContentPart] = []
        if self.thinking:
            parts.append(ContentPart.thinking("".join(self.thinking)))
        if self.text:
            parts.append(ContentPart.text("".join(self.text)))
        message = Message(
            role="assistant",
            content=parts,
            tool_calls=self.calls,
            status="cancelled" if cancelled else "complete",
        )
        finish = FinishReason.TOOL_EXECUTION if self.calls else FinishReason.STOP
        return ChatResponse(
            message=message,
            id=f"scripted-{number}",
            model_name="scripted",
            token_usage=self.turn.usage,
            finish_reason=None if cancelled else finish,
            metadata=self.turn.metadata,
        )


def _deliver(handler: Any, handle: StreamingHandle, kind: str, item: Any) -> Any:
    """Make the handler call for one event; returns what the handler returned."""
    if kind == "thinking":
        return handler.on_partial_thinking(item, PartialThinkingContext(handle=handle))
    if kind == "text":
        return handler.on_partial_response(item, PartialResponseContext(handle=handle))
    if kind == "fragment":
        return handler.on_partial_tool_call(item, PartialToolCallContext(handle=handle))
    return handler.on_complete_tool_call(item)


@final
class ScriptedChatModel:
    """A ``ChatModel`` that replays scripted turns, one per call, in order.

    Deterministic, thread-safe (concurrent calls each take a different turn) and
    usable from sync and async code. ``requests`` records what each call was sent.

    Args:
        turns: the answers, in order: a ``ScriptedTurn``, or a ``LangHooksError``
            that makes that call fail (``on_error`` once, then raised).
        delay: seconds to wait before each partial, to make a demo look live.

    Raises:
        TypeError: an item is neither a ``ScriptedTurn`` nor a ``LangHooksError``.
        ValueError: ``delay`` is negative.
    """

    def __init__(
        self, turns: Sequence[ScriptedTurn | LangHooksError], *, delay: float = 0.0
    ) -> None:
        if not delay >= 0:
            raise ValueError(f"delay must be >= 0 seconds, got {delay!r}")
        self._turns: Final = _turns(turns)
        self._delay: Final = float(delay)
        self._lock: Final = threading.Lock()
        self._next = 0
        self._requests: list[ChatRequest] = []

    @property
    def requests(self) -> tuple[ChatRequest, ...]:
        """The requests received so far, in order."""
        with self._lock:
            return tuple(self._requests)

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been used yet."""
        with self._lock:
            return len(self._turns) - self._next

    def _take(self, request: ChatRequest) -> tuple[int, ScriptedTurn | LangHooksError]:
        if not isinstance(request, ChatRequest):
            raise TypeError(f"request must be a ChatRequest, got {request!r}")
        with self._lock:
            self._requests.append(request)
            number = self._next
            if number >= len(self._turns):
                error = LangHooksError(
                    "invalid_request",
                    f"ScriptedChatModel has no turn left: it was given "
                    f"{len(self._turns)} turn(s) and this is call {number + 1}; "
                    f"add more turns to the script",
                    retryable=False,
                )
                return number, error
            self._next += 1
            return number, self._turns[number]

    @staticmethod
    def _check_handler(handler: object, *, allow_async: bool) -> None:
        allowed: tuple[type, ...] = (StreamingChatResponseHandler,)
        if allow_async:
            allowed = (*allowed, AsyncStreamingChatResponseHandler)
        if not isinstance(handler, allowed):
            names = " or ".join(a.__name__ for a in allowed)
            hint = ""
            if isinstance(handler, list | tuple):
                hint = " (wrap several in CompositeStreamingHandler)"
            raise TypeError(f"handler must be a {names}, got {handler!r}{hint}")

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Stream the next turn into ``handler`` and return the response.

        Returns:
            The response; after ``handle.cancel()``, the partial response with
            message status "cancelled" (and no further callback).

        Raises:
            LangHooksError: the turn is an error (after ``handler.on_error``), or
                the script has run out (type invalid_request).
            TypeError: ``request`` or ``handler`` has the wrong type.
        """
        self._check_handler(handler, allow_async=False)
        handle = StreamingHandle() if handle is None else handle
        number, turn = self._take(request)
        if isinstance(turn, LangHooksError):
            if not handle.is_cancelled:
                handler.on_error(turn)
            raise turn
        assembly = _Assembly(turn)
        for kind, item in _events(turn):
            if self._delay:
                time.sleep(self._delay)
            if handle.is_cancelled:
                return assembly.response(number, cancelled=True)
            _deliver(handler, handle, kind, item)
            assembly.add(kind, item)
        if handle.is_cancelled:
            return assembly.response(number, cancelled=True)
        if turn.error is not None:
            handler.on_error(turn.error)
            raise turn.error
        response = assembly.response(number, cancelled=False)
        handler.on_complete_response(response)
        return response

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin of ``stream``: an async handler is awaited, a sync one
        called inline; the delay is an ``asyncio.sleep``.

        Returns:
            The response (partial, status "cancelled", after ``handle.cancel()``).

        Raises:
            LangHooksError: as ``stream``.
            TypeError: ``request`` or ``handler`` has the wrong type.
        """
        self._check_handler(handler, allow_async=True)
        handle = StreamingHandle() if handle is None else handle
        number, turn = self._take(request)
        if isinstance(turn, LangHooksError):
            if not handle.is_cancelled:
                await _maybe_await(handler.on_error(turn))
            raise turn
        assembly = _Assembly(turn)
        for kind, item in _events(turn):
            if self._delay:
                await asyncio.sleep(self._delay)
            if handle.is_cancelled:
                return assembly.response(number, cancelled=True)
            await _maybe_await(_deliver(handler, handle, kind, item))
            assembly.add(kind, item)
        if handle.is_cancelled:
            return assembly.response(number, cancelled=True)
        if turn.error is not None:
            await _maybe_await(handler.on_error(turn.error))
            raise turn.error
        response = assembly.response(number, cancelled=False)
        await _maybe_await(handler.on_complete_response(response))
        return response

    @override
    def __repr__(self) -> str:
        return f"ScriptedChatModel({len(self._turns)} turn(s), {self.remaining} left)"


async def _maybe_await(value: object) -> None:
    if inspect.isawaitable(value):
        await value
