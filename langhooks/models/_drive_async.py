"""A stream driver. The async module is written by hand, and the sync one is
generated from it by ``scripts/unasync.py``: the same code without ``async`` and
``await``. What both share (state, assembly, the checks, the contract in the
module docstring of ``_drive``) is ``_Driver``. The async driver awaits an async
handler's methods before the stream goes on and calls a sync handler's inline;
the sync driver takes sync handlers only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, NoReturn, final

from .._core._messages import ChatResponse, LangHooksError, trusted_partial_response
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._adapters._base import TEXT
from ._drive import (
    _BROKEN,
    _CANCELLED,
    _COMPACT_AT,
    _ENDED,
    _FAILED,
    _OPEN,
    StreamFormat,
    _Driver,
)
from ._errors import with_cause

__all__ = ["AsyncStreamDriver"]


@final
class AsyncStreamDriver(_Driver):
    """Delivers one stream's events to a streaming handler.

    The async driver takes an async handler (each method awaited before the
    stream goes on) or a sync one (called inline); the sync driver takes sync
    handlers only.

    Args:
        format: the wire format (see ``STREAM_FORMATS``).
        handler: the handler to drive.
        handle: the stream's cancel handle; created when not given. Pass one to
            hold it before the first token.
        metadata: response details the caller knows (``response_headers``,
            ``ratelimit``); they go into ``ChatResponse.metadata``.

    Raises:
        ValueError: ``format`` is unknown.
        TypeError: ``handler`` is not a streaming handler this driver takes.
    """

    def __init__(
        self,
        format: StreamFormat,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(format, handler, handle, metadata, allow_async=True)
        text = self._methods["on_partial_response"]
        self._on_text: Final = None if text is None else text[0]
        self._text_is_async: Final = text is not None and text[1]  # unasync: remove

    async def feed(self, event: object) -> bool:
        """Deliver one decoded wire event.

        Args:
            event: a JSON object, an official-SDK event object, (Chat
                Completions) the string ``"[DONE]"``, or the ``LangHooksError`` a
                wire decoder produced for malformed data (reported like an error
                event).

        Returns:
            False once the stream is over (its terminal event arrived, or it was
            cancelled): stop reading and call ``finish``.

        Raises:
            LangHooksError: an error event in the stream, or malformed data;
                ``on_error`` was called once first.
        """
        if self._state != _OPEN:
            return False
        actions = self._actions(event)
        handle = self.handle
        # The handle's delivery lock is held while the handle is checked and the
        # callbacks run: a cancel() from another thread waits for the callback in
        # progress, and none begins after it returned. (``_cancelled``: the slot,
        # as the property costs several times as much on this hot path.)
        delivery = handle._delivery
        delivery.acquire()
        try:
            if isinstance(actions, LangHooksError):
                if handle._cancelled:
                    self._state = _CANCELLED
                    return False
                await self._fail(actions)
            # The hot path (a text chunk) is inlined; everything else goes
            # through _accept. The handle is checked before every call, since a
            # callback may cancel at any moment.
            on_text = self._on_text
            text_is_async = self._text_is_async  # unasync: remove
            try:
                for action in actions:
                    if handle._cancelled:
                        self._state = _CANCELLED
                        return False
                    if action[0] is TEXT:
                        text = action[1]
                        if self._last_kind == "text" and self._loose < _COMPACT_AT - 1:
                            self._last_pieces.append(text)
                            self._loose += 1
                        else:
                            self._append("text", text)
                        if on_text is not None:
                            # The adapter gave a non-empty str: no second check.
                            result = on_text(
                                trusted_partial_response(text), self._text_context
                            )
                            if text_is_async:  # unasync: remove
                                await result
                        continue
                    call = self._accept(action)
                    if call is not None:
                        result = call[0](*call[1])
                        if call[2]:  # unasync: remove
                            await result
            except BaseException as exc:
                self._state = _BROKEN
                self._raised = exc
                raise
            if handle._cancelled:
                self._state = _CANCELLED
                return False
        finally:
            delivery.release()
        if self._adapter.done:
            self._state = _ENDED
            return False
        return True

    async def finish(self) -> ChatResponse:
        """End of input: complete the stream.

        Returns:
            The response (after ``on_complete_response``), or, when cancelled, the
            partial response with message status ``"cancelled"`` (no callback).

        Raises:
            LangHooksError: the input ended before the format's terminal event
                (``stream_error``; ``on_error`` called once), or the stream had
                already failed.
        """
        with self.handle._delivery:
            settled = self._settled()
            if settled is not None:
                return settled
            if self._state == _OPEN:
                await self._fail(self._truncated())
            response, method = self._complete()
            if method is not None:
                try:
                    result = method[0](response)
                    if method[1]:  # unasync: remove
                        await result
                except BaseException as exc:
                    self._raised = exc
                    raise
            return response

    async def fail(self, error: LangHooksError) -> NoReturn:
        """Report a transport failure the caller saw, and raise it.

        ``on_error`` is called once, unless a terminal call was already made or the
        stream was cancelled (callers check ``handle.is_cancelled`` first and call
        ``finish`` instead).

        Raises:
            LangHooksError: ``error``, always.
        """
        self._failed = error
        with self.handle._delivery:
            if self._state in (_OPEN, _ENDED) and not self.handle.is_cancelled:
                await self._fail(error)
        raise error

    async def _fail(self, error: LangHooksError) -> NoReturn:
        self._state = _FAILED
        self._error = with_cause(error)
        method = self._methods["on_error"]
        if method is not None:
            try:
                result = method[0](error)
                if method[1]:  # unasync: remove
                    await result
            except BaseException as exc:
                self._raised = exc
                raise
        raise error

    async def guard(self, work: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse:
        """Run a stream's ``work`` so that no raw exception leaves it.

        The one place every model's stream passes through (see the module
        docstring of ``_drive``): an ``Exception`` ``work`` lets out and the
        driver has not reported becomes a classified ``LangHooksError`` (the
        original as ``__cause__``), reported to ``on_error`` once and raised.

        Args:
            work: opens, reads and closes the stream, feeding this driver;
                returns ``finish()``'s response.

        Returns:
            ``work``'s response; the cancelled response when the stream was
            cancelled; the completed one when only closing it failed.

        Raises:
            LangHooksError: the stream failed (``on_error`` was called once).
            BaseException: what the handler raised, unchanged.
        """
        try:
            return await work()
        except Exception as exc:
            outcome = self._escaped(exc)
            if isinstance(outcome, ChatResponse):
                return outcome
            await self.fail(outcome)
