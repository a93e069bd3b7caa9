"""``ScriptedChatModel``: the embedded, deterministic model for demos and tests.

Each call to ``stream`` / ``astream`` consumes the next scripted turn and delivers it
through the streaming contract: thinking and text in word-sized partials, each tool
call as argument fragments followed by its complete call, then the terminal
``on_complete_response`` (or ``on_error`` for an error item).

A turn becomes the same adapter actions a provider stream gives (``_ScriptedAdapter``)
and runs through the same ``StreamDriver`` / ``AsyncStreamDriver``: delivery,
assembly, cancelling and the terminal call are the provider code path, so the demo
and tests built on the scripted model exercise it.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, final

import attrs
from typing_extensions import override

from .._core._messages import (
    ChatResponse,
    FinishReason,
    LangHooksError,
    TokenUsage,
    ToolCall,
)
from .._core._model import ChatRequest
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from .._core._values import _frozen_mapping
from ._adapters._base import (
    TEXT,
    THINKING,
    TOOL_COMPLETE,
    TOOL_PARTIAL,
    Action,
    StreamAdapter,
)
from ._drive import AsyncStreamDriver, StreamDriver

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


def _events(turn: ScriptedTurn) -> list[dict[str, Any]]:
    """The events a turn streams before its end, in order: what
    ``_ScriptedAdapter`` turns into the actions a provider adapter would give."""
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


_END: Final[Mapping[str, Any]] = {"type": "end"}


@final
class _ScriptedAdapter(StreamAdapter):
    """A scripted turn's events -> the actions a provider adapter gives."""

    terminal: ClassVar[str] = "the end of the scripted turn"

    def __init__(self, turn: ScriptedTurn, number: int) -> None:
        super().__init__()
        self.id = f"scripted-{number}"
        self.model_name = "scripted"
        self.usage = turn.usage

    @override
    def feed(self, event: Mapping[str, Any] | str) -> list[Action]:
        assert not isinstance(event, str)  # only _events and _END are fed
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
        driver = StreamDriver("openai-chat", handler, handle=handle)
        number, turn = self._take(request)
        return driver.guard(lambda: self._deliver(driver, number, turn))

    def _deliver(
        self, driver: StreamDriver, number: int, turn: ScriptedTurn | LangHooksError
    ) -> ChatResponse:
        if isinstance(turn, LangHooksError):
            driver.fail(turn)
        driver._use_adapter(_ScriptedAdapter(turn, number))
        driver._add_metadata(turn.metadata)
        for event in _events(turn):
            if self._delay:
                time.sleep(self._delay)
            if not driver.feed(event):
                return driver.finish()
        driver.feed(_END if turn.error is None else turn.error)
        return driver.finish()

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
        driver = AsyncStreamDriver("openai-chat", handler, handle=handle)
        number, turn = self._take(request)
        return await driver.guard(lambda: self._adeliver(driver, number, turn))

    async def _adeliver(
        self,
        driver: AsyncStreamDriver,
        number: int,
        turn: ScriptedTurn | LangHooksError,
    ) -> ChatResponse:
        if isinstance(turn, LangHooksError):
            await driver.fail(turn)
        driver._use_adapter(_ScriptedAdapter(turn, number))
        driver._add_metadata(turn.metadata)
        for event in _events(turn):
            if self._delay:
                await asyncio.sleep(self._delay)
            if not await driver.feed(event):
                return await driver.finish()
        await driver.feed(_END if turn.error is None else turn.error)
        return await driver.finish()

    @override
    def __repr__(self) -> str:
        return f"ScriptedChatModel({len(self._turns)} turn(s), {self.remaining} left)"
