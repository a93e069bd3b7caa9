"""``ScriptedChatModel``: the embedded, deterministic model for demos and tests.

Each call to ``stream`` / ``astream`` consumes the next scripted turn and delivers it
through the streaming contract: thinking and text in word-sized partials, each tool
call as argument fragments followed by its complete call, then the terminal
``on_complete_response`` (or ``on_error`` for an error item).

A turn becomes the same adapter actions a provider stream gives (``ScriptedAdapter``)
and runs through the same ``StreamDriver`` / ``AsyncStreamDriver``: delivery,
assembly, cancelling and the terminal call are the provider code path, so the demo
and tests built on the scripted model exercise it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Final, final

from typing_extensions import override

from .._core._messages import ChatResponse, LangHooksError
from .._core._model import ChatRequest
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._scripted_async import astream_turn
from ._scripted_sync import stream_turn
from ._scripted_turn import ScriptedTurn

__all__ = ["ScriptedChatModel", "ScriptedTurn"]


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

    # No wire format: OpenTelemetry's provider name for its spans.
    _provider_name = "langhooks.scripted"

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
        return stream_turn(handler, handle, lambda: self._take(request), self._delay)

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
        return await astream_turn(
            handler, handle, lambda: self._take(request), self._delay
        )

    @override
    def __repr__(self) -> str:
        return f"ScriptedChatModel({len(self._turns)} turn(s), {self.remaining} left)"
