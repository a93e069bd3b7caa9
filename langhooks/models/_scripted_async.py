"""Delivering one scripted turn through a stream driver. (The async module is
written by hand; the sync one is generated from it by ``scripts/unasync.py``.)"""

from __future__ import annotations

from collections.abc import Callable

from .._core._messages import ChatResponse, LangHooksError
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from .._core._twins_async import asleep
from ._drive_async import AsyncStreamDriver
from ._scripted_turn import END, ScriptedAdapter, ScriptedTurn, turn_events

__all__ = ["astream_turn"]


async def astream_turn(
    handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
    handle: StreamingHandle | None,
    take: Callable[[], tuple[int, ScriptedTurn | LangHooksError]],
    delay: float,
) -> ChatResponse:
    """Stream the turn ``take()`` gives (its number, and the turn) into ``handler``.

    The driver is made first: a handler of the wrong type is refused before a turn
    is taken.

    Args:
        handler: the handler to drive.
        handle: the caller's cancel handle, if it made one.
        take: takes the script's next turn.
        delay: seconds to wait before each partial.

    Returns:
        The response, or the partial one if the stream was cancelled.

    Raises:
        LangHooksError: the turn is an error, or ends with one (after
            ``on_error``).
    """
    driver = AsyncStreamDriver("openai-chat", handler, handle=handle)
    number, turn = take()
    return await driver.guard(lambda: _adeliver(driver, number, turn, delay))


async def _adeliver(
    driver: AsyncStreamDriver,
    number: int,
    turn: ScriptedTurn | LangHooksError,
    delay: float,
) -> ChatResponse:
    """Stream ``turn`` (the script's turn ``number``) through ``driver``.

    Args:
        driver: the stream's driver (its guard is around this call).
        number: the turn's position in the script (its response id says it).
        turn: the turn, or the error that call fails with.
        delay: seconds to wait before each partial.

    Returns:
        The response, or the partial one if the stream was cancelled.

    Raises:
        LangHooksError: ``turn`` is an error, or ends with one (after
            ``on_error``).
    """
    if isinstance(turn, LangHooksError):
        await driver.fail(turn)
    driver._use_adapter(ScriptedAdapter(turn, number))
    driver._add_metadata(turn.metadata)
    for event in turn_events(turn):
        if delay:
            await asleep(delay)
        if not await driver.feed(event):
            return await driver.finish()
    await driver.feed(END if turn.error is None else turn.error)
    return await driver.finish()
