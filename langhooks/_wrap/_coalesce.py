"""``CoalescingDeltas``: a streaming handler's partials, joined into fewer ones."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Literal,
    final,
    overload,
)

if TYPE_CHECKING:
    pass

from .._core._handler import (
    overridden_events,
)
from .._core._messages import PartialResponse, PartialThinking
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)
from ._wrappers import _Wrapper

__all__ = ["CoalescingDeltas"]


_PARTIALS: Final = frozenset({"on_partial_response", "on_partial_thinking"})

_Kind = Literal["text", "thinking"]


@final
class _Buffer:
    """The text a ``CoalescingDeltas`` holds back: one kind, from one stream.

    Kept apart from the wrapper, whose class forwards unknown attributes with
    ``__getattr__`` and so has slow attribute access: the hot path reads and writes
    only this object's slots and its own closure variables.
    """

    __slots__ = ("chunks", "context", "first_at", "kind", "size")

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.kind: _Kind = "text"
        # The last waiting partial's context: its handle is the stream's.
        self.context: Any = None
        self.first_at = 0.0
        self.size = 0

    def take(self) -> tuple[_Kind, str, Any]:
        """Empty the buffer; what waited: (kind, joined text, context)."""
        text = "".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        context, self.context = self.context, None
        return self.kind, text, context


class CoalescingDeltas(_Wrapper):
    """Joins consecutive text (or thinking) partials into fewer, longer calls.

    Text is buffered until ``max_chars`` characters are waiting, or a partial
    arrives ``max_interval`` seconds or more after the first one waiting, and is
    flushed before any other event is delivered, so order is kept and nothing is
    lost: a text partial is flushed before thinking, a tool call, the terminal call.
    Call ``flush()`` (around a sync handler) or ``await aflush()`` (around an async
    one) to deliver what waits at any other time. After a stream is
    cancelled no callback may follow, so text still waiting then is not delivered
    (it is in the response the stream returns); and when the handler cancels the
    stream on text flushed before another event, that event is not delivered
    either, as the stream would not have delivered it.

    Args:
        handler: a streaming handler (sync or async).
        max_chars: flush once this many characters wait (at least 1).
        max_interval: flush when a partial arrives this many seconds after the
            first waiting one; None for size only.
    """

    _langhooks_buffer: _Buffer
    _langhooks_lock: threading.RLock

    _DEFAULT_CHARS: ClassVar[int] = 64

    @overload
    def __new__(
        cls,
        handler: StreamingChatResponseHandler,
        *,
        max_chars: int = ...,
        max_interval: float | None = ...,
    ) -> _SyncCoalescing: ...
    @overload
    def __new__(
        cls,
        handler: AsyncStreamingChatResponseHandler,
        *,
        max_chars: int = ...,
        max_interval: float | None = ...,
    ) -> _AsyncCoalescing: ...
    def __new__(
        cls,
        handler: StreamingChatResponseHandler | AsyncStreamingChatResponseHandler,
        *,
        max_chars: int = _DEFAULT_CHARS,
        max_interval: float | None = 0.05,
    ) -> CoalescingDeltas:
        if not isinstance(
            handler, StreamingChatResponseHandler | AsyncStreamingChatResponseHandler
        ):
            raise TypeError(
                f"CoalescingDeltas wraps a streaming handler, got {handler!r}"
            )
        if type(max_chars) is not int or max_chars < 1:
            raise ValueError(f"max_chars must be an int >= 1, got {max_chars!r}")
        if max_interval is not None and not max_interval >= 0:
            raise ValueError(f"max_interval must be >= 0 or None, got {max_interval!r}")
        is_async = isinstance(handler, AsyncStreamingChatResponseHandler)
        kind = _AsyncCoalescing if is_async else _SyncCoalescing
        self: CoalescingDeltas = kind._specialize(handler)
        self._langhooks_buffer = _Buffer()
        self._langhooks_lock = threading.RLock()
        handled = overridden_events(handler)
        if handled & _PARTIALS:
            # Every other event must flush first, so the wrapper takes them all.
            handled = frozenset(type(handler)._langhooks_events)
        make = _coalescing_async if is_async else _coalescing_sync
        self._langhooks_install(
            handler,
            handled,
            lambda name, method, _is_async: make(
                self, name, method, max_chars, max_interval
            ),
        )
        return self


class _SyncCoalescing(CoalescingDeltas, StreamingChatResponseHandler):
    """``CoalescingDeltas`` around a sync handler: ``flush()``."""

    _langhooks_name: ClassVar[str] = "CoalescingDeltas"

    def flush(self) -> None:
        """Deliver the text waiting now, if any."""
        with self._langhooks_lock:
            if self._langhooks_buffer.chunks:
                _deliver_sync(self._langhooks_inner, *self._langhooks_buffer.take())


class _AsyncCoalescing(CoalescingDeltas, AsyncStreamingChatResponseHandler):
    """``CoalescingDeltas`` around an async handler: ``await aflush()``."""

    _langhooks_name: ClassVar[str] = "CoalescingDeltas"

    async def aflush(self) -> None:
        """Deliver the text waiting now, if any."""
        with self._langhooks_lock:
            buffer = self._langhooks_buffer
            waiting = buffer.take() if buffer.chunks else None
        if waiting is not None:
            await _deliver_async(self._langhooks_inner, *waiting)


# Delivery is called only with text waiting, so ``context`` is the last partial's.
# Text from a stream that was cancelled meanwhile is dropped: no callback may follow
# a cancel (the text is in the response the stream returned).


def _deliver_sync(inner: Any, kind: _Kind, text: str, context: Any) -> None:
    if context.handle.is_cancelled:
        return
    if kind == "text":
        inner.on_partial_response(PartialResponse(text=text), context)
    else:
        inner.on_partial_thinking(PartialThinking(text=text), context)


async def _deliver_async(inner: Any, kind: _Kind, text: str, context: Any) -> None:
    if context.handle.is_cancelled:
        return
    if kind == "text":
        await inner.on_partial_response(PartialResponse(text=text), context)
    else:
        await inner.on_partial_thinking(PartialThinking(text=text), context)


def _buffered(
    buffer: _Buffer,
    kind: _Kind,
    text: str,
    context: Any,
    max_chars: int,
    max_interval: float | None,
) -> bool:
    """Add one partial to ``buffer``, which holds nothing else of another kind or
    stream; True when the buffer is due to be flushed."""
    chunks = buffer.chunks
    if not chunks:
        buffer.kind = kind
        if max_interval is not None:
            buffer.first_at = time.monotonic()
    chunks.append(text)
    buffer.context = context
    size = buffer.size + len(text)
    buffer.size = size
    return size >= max_chars or (
        max_interval is not None and time.monotonic() - buffer.first_at >= max_interval
    )


def _coalescing_sync(
    wrapper: CoalescingDeltas,
    name: str,
    method: Callable[..., Any],
    max_chars: int,
    max_interval: float | None,
) -> Callable[..., Any]:
    # Everything the calls need is bound here, once: see ``_Buffer``.
    buffer, lock = wrapper._langhooks_buffer, wrapper._langhooks_lock
    inner = wrapper._langhooks_inner
    acquire, release = lock.acquire, lock.release
    if name in _PARTIALS:
        kind: _Kind = "text" if name == "on_partial_response" else "thinking"

        def partial(part: Any, context: Any) -> None:
            acquire()  # (cheaper than ``with``, which costs as much again)
            try:
                handle = context.handle
                if buffer.chunks and (
                    buffer.kind != kind or buffer.context.handle is not handle
                ):
                    _deliver_sync(inner, *buffer.take())
                # The slot: the property costs several times as much.
                if handle._cancelled:  # (the handler may have cancelled just now)
                    return
                if _buffered(buffer, kind, part.text, context, max_chars, max_interval):
                    _deliver_sync(inner, *buffer.take())
            finally:
                release()

        return partial

    def other(*args: Any) -> Any:
        with lock:
            if buffer.chunks:
                kind, text, context = buffer.take()
                handle = context.handle
                # Only a cancel by the flushed text's handler stops this event:
                # text of a stream cancelled earlier is just dropped, and the
                # event may well belong to the next stream.
                if not handle.is_cancelled:
                    _deliver_sync(inner, kind, text, context)
                    if handle.is_cancelled:
                        return None  # the stream would not deliver it now
            return method(*args)

    return other


def _coalescing_async(
    wrapper: CoalescingDeltas,
    name: str,
    method: Callable[..., Any],
    max_chars: int,
    max_interval: float | None,
) -> Callable[..., Any]:
    buffer, lock = wrapper._langhooks_buffer, wrapper._langhooks_lock
    inner = wrapper._langhooks_inner
    # Concurrent streams may share the wrapper: another stream's task can fill the
    # buffer while this one awaits a delivery, so each check is made again after
    # an await, and the check and the buffering happen with no await between them
    # (under the lock, for streams on other threads' loops; never held across an
    # await).
    if name in _PARTIALS:
        kind: _Kind = "text" if name == "on_partial_response" else "thinking"

        async def partial(part: Any, context: Any) -> None:
            handle = context.handle
            while True:
                with lock:
                    if buffer.chunks and (
                        buffer.kind != kind or buffer.context.handle is not handle
                    ):
                        waiting = buffer.take()
                    else:
                        if handle.is_cancelled:
                            return  # (the handler may have cancelled just now)
                        if not _buffered(
                            buffer, kind, part.text, context, max_chars, max_interval
                        ):
                            return
                        due = buffer.take()
                        break
                await _deliver_async(inner, *waiting)
            await _deliver_async(inner, *due)

        return partial

    async def other(*args: Any) -> Any:
        with lock:
            waiting = buffer.take() if buffer.chunks else None
        if waiting is not None:
            kind, text, context = waiting
            handle = context.handle
            if not handle.is_cancelled:  # (as in the sync version)
                await _deliver_async(inner, kind, text, context)
                if handle.is_cancelled:
                    return None  # the stream would not deliver it now
        return await method(*args)

    return other
