"""``iterate_stream`` / ``aiterate_stream``: a model stream as an iterator.

The stream runs beside the loop that consumes it (on a thread for ``iterate_stream``,
as a task for ``aiterate_stream``) and hands each item over through a small bounded
buffer: a consumer that falls behind makes the stream wait, so nothing piles up.
Leaving the ``with`` block (a ``break``, an exception, a cancelled task) cancels the
stream through its ``StreamingHandle``, which closes the connection.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from typing import Any, Final, Self, TypeAlias, final

from typing_extensions import override

from .._core._messages import (
    ChatResponse,
    CompleteToolCall,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
)
from .._core._model import ChatModel, ChatRequest
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
)

__all__ = ["StreamEvent", "aiterate_stream", "iterate_stream"]

StreamEvent: TypeAlias = (
    PartialResponse
    | PartialThinking
    | PartialToolCall
    | CompleteToolCall
    | ChatResponse
)
"""One item of an iterated stream; the ``ChatResponse`` is always the last."""

# How many items may wait for the consumer before the stream waits for it: enough
# to hand items over in batches (one thread or task switch per batch, not per item).
_BUFFER: Final = 64
# A stream waiting for room is woken once the buffer is down to this many items.
_LOW: Final = _BUFFER // 2


@final
class _End:
    """The last entry of a buffer: the stream's response, or what it raised."""

    __slots__ = ("error", "response")

    def __init__(
        self, response: ChatResponse | None, error: BaseException | None
    ) -> None:
        self.response = response
        self.error = error

    def outcome(self) -> ChatResponse:
        """The stream's response, the iterator's last item.

        Raises:
            BaseException: what the stream raised, if it failed.
        """
        if self.error is not None:
            raise self.error
        assert self.response is not None  # (set whenever error is None)
        return self.response


def _check(model: object, request: object, handle: object, what: str) -> None:
    if not isinstance(model, ChatModel):
        raise TypeError(
            f"{what} takes a ChatModel (an object with stream and astream), "
            f"got {model!r}"
        )
    if not isinstance(request, ChatRequest):
        raise TypeError(f"{what} takes a ChatRequest, got {request!r}")
    if handle is not None and not isinstance(handle, StreamingHandle):
        raise TypeError(f"handle must be a StreamingHandle or None, got {handle!r}")


# --- sync -------------------------------------------------------------------------


@final
class _Handoff:
    """A bounded buffer from the stream's thread to the consuming thread.

    Each side wakes the other only when it waits; a waiting stream is woken once
    half the buffer is free, so the two threads take turns by the batch, not by the
    item.
    """

    __slots__ = (
        "_items",
        "_left",
        "_lock",
        "_readable",
        "_reader_waits",
        "_writable",
        "_writer_waits",
    )

    def __init__(self) -> None:
        self._items: collections.deque[Any] = collections.deque()
        self._lock = threading.Lock()
        self._readable = threading.Condition(self._lock)
        self._writable = threading.Condition(self._lock)
        self._reader_waits = False
        self._writer_waits = False
        self._left = False

    def put(self, item: object) -> None:
        """Hand one item over, waiting while the buffer is full (until the
        consumer leaves: then the item is dropped, as the stream is cancelled)."""
        with self._lock:
            while len(self._items) >= _BUFFER and not self._left:
                self._writer_waits = True
                self._writable.wait()
            self._append(item)

    def end(self, entry: _End) -> None:
        """Hand the stream's outcome over; never waits."""
        with self._lock:
            self._append(entry)

    def _append(self, item: object) -> None:
        self._items.append(item)
        if self._reader_waits:
            self._reader_waits = False
            self._readable.notify()

    def get(self) -> Any:
        """The next item, waiting for one."""
        with self._lock:
            while not self._items:
                self._reader_waits = True
                self._readable.wait()
            item = self._items.popleft()
            if self._writer_waits and len(self._items) <= _LOW:
                self._writer_waits = False
                self._writable.notify()
            return item

    def leave(self) -> None:
        """The consumer is gone: never make the stream wait again."""
        with self._lock:
            self._left = True
            self._writable.notify()


class _HandoffHandler(StreamingChatResponseHandler):
    """Puts each item of the stream into a ``_Handoff``."""

    def __init__(self, handoff: _Handoff) -> None:
        self._put = handoff.put

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        self._put(partial)

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext, /
    ) -> None:
        self._put(partial)

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext, /
    ) -> None:
        self._put(partial)

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall, /) -> None:
        self._put(complete)


@final
class _StreamIterator(Iterator[StreamEvent]):
    """The items of one stream, as ``iterate_stream`` hands them out."""

    def __init__(self, handoff: _Handoff) -> None:
        self._handoff = handoff
        self._finished = False

    @override
    def __iter__(self) -> Self:
        return self

    @override
    def __next__(self) -> StreamEvent:
        if self._finished:
            raise StopIteration
        item = self._handoff.get()
        if type(item) is _End:
            self._finished = True
            return item.outcome()
        return item  # type: ignore[no-any-return]  # only StreamEvents are put


@contextlib.contextmanager
def iterate_stream(
    model: ChatModel, request: ChatRequest, *, handle: StreamingHandle | None = None
) -> Generator[Iterator[StreamEvent], None, None]:
    """Stream a response as an iterator of its items.

    The items are what a handler would receive, in stream order: each
    ``PartialThinking``, ``PartialResponse``, ``PartialToolCall`` and
    ``CompleteToolCall``, then the ``ChatResponse`` as the last item. A stream that
    fails raises its error from the iterator, after the items that came before it.
    The stream runs on a thread of its own, in a copy of the caller's context (it
    belongs to the caller's invocation), and waits while a few dozen items are not
    consumed yet (back-pressure). Leaving the ``with`` block before the end (a
    ``break``, an exception) cancels the stream, which closes its connection, and
    waits for its thread to end. ::

        with iterate_stream(model, request) as items:
            for item in items:
                match item:
                    case PartialResponse(text=text):
                        print(text, end="")
                    case ChatResponse(message=message):
                        history.append(message)

    Args:
        model: the model to stream from.
        request: what to send it.
        handle: a handle to cancel the stream from elsewhere, too; the response
            then ends the items with status "cancelled".

    Yields:
        The iterator of the stream's items (``StreamEvent``).

    Raises:
        TypeError: ``model``, ``request`` or ``handle`` has the wrong type.
    """
    _check(model, request, handle, "iterate_stream")
    handle = StreamingHandle() if handle is None else handle
    handoff = _Handoff()
    handler = _HandoffHandler(handoff)

    def produce() -> None:
        try:
            response = model.stream(request, handler, handle=handle)
        except BaseException as error:  # handed to the consumer, who raises it
            handoff.end(_End(None, error))
        else:
            handoff.end(_End(response, None))

    # A daemon: a consumer that never leaves its block (a generator never closed)
    # must not keep the interpreter from exiting.
    # In a copy of the caller's context, as a task would be: the stream belongs to
    # the caller's invocation (and, say, its current tracing span).
    thread = threading.Thread(
        target=contextvars.copy_context().run,
        args=(produce,),
        name="langhooks-iterate-stream",
        daemon=True,
    )
    thread.start()
    try:
        yield _StreamIterator(handoff)
    finally:
        # Leave first: cancel() waits for a callback in progress, and the stream's
        # may be waiting in put() for room only leave() makes.
        handoff.leave()
        handle.cancel()
        thread.join()


# --- async ------------------------------------------------------------------------


@final
class _AsyncHandoff:
    """A bounded buffer from the stream's task to the consuming task (one loop).

    Both sides touch ``items`` directly on their fast path (room to put, an item to
    take) and wait on a future only when they must, as ``_Handoff`` does.
    """

    __slots__ = ("_left", "_loop", "_readable", "_writable", "items")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.items: collections.deque[Any] = collections.deque()
        self._readable: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._left = False

    def offer(self, item: object) -> bool:
        """Hand one item over if there is room (or the consumer left: then it is
        dropped); False when the stream must ``await put(item)`` instead."""
        if len(self.items) >= _BUFFER and not self._left:
            return False
        self.end(item)
        return True

    async def put(self, item: object) -> None:
        """Hand one item over, waiting while the buffer is full."""
        while not self.offer(item):
            writable = self._writable = self._loop.create_future()
            await writable

    def end(self, item: object) -> None:
        """Hand an item (or the stream's outcome) over; never waits."""
        self.items.append(item)
        readable, self._readable = self._readable, None
        _wake(readable)

    async def readable(self) -> None:
        """Wait until there is an item to take."""
        while not self.items:
            readable = self._readable = self._loop.create_future()
            await readable

    def took(self) -> None:
        """An item was taken: wake a waiting stream once half the buffer is free."""
        if self._writable is not None and len(self.items) <= _LOW:
            self._wake_writer()

    def leave(self) -> None:
        """The consumer is gone: never make the stream wait again."""
        self._left = True
        self._wake_writer()

    def _wake_writer(self) -> None:
        writable, self._writable = self._writable, None
        _wake(writable)


def _wake(waiter: asyncio.Future[None] | None) -> None:
    # A waiter may be done already: cancelled with its task a moment ago.
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class _AsyncHandoffHandler(AsyncStreamingChatResponseHandler):
    """Puts each item of the stream into an ``_AsyncHandoff``."""

    def __init__(self, handoff: _AsyncHandoff) -> None:
        self._offer = handoff.offer
        self._put = handoff.put

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        if not self._offer(partial):
            await self._put(partial)

    @override
    async def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext, /
    ) -> None:
        if not self._offer(partial):
            await self._put(partial)

    @override
    async def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext, /
    ) -> None:
        if not self._offer(partial):
            await self._put(partial)

    @override
    async def on_complete_tool_call(self, complete: CompleteToolCall, /) -> None:
        if not self._offer(complete):
            await self._put(complete)


@final
class _AsyncStreamIterator(AsyncIterator[StreamEvent]):
    """The items of one stream, as ``aiterate_stream`` hands them out."""

    def __init__(self, handoff: _AsyncHandoff) -> None:
        self._handoff = handoff
        self._finished = False

    @override
    def __aiter__(self) -> Self:
        return self

    @override
    async def __anext__(self) -> StreamEvent:
        if self._finished:
            raise StopAsyncIteration
        handoff = self._handoff
        items = handoff.items
        if not items:
            await handoff.readable()
        item = items.popleft()
        handoff.took()
        if type(item) is _End:
            self._finished = True
            return item.outcome()
        return item  # type: ignore[no-any-return]  # only StreamEvents are put


@contextlib.asynccontextmanager
async def aiterate_stream(
    model: ChatModel, request: ChatRequest, *, handle: StreamingHandle | None = None
) -> AsyncGenerator[AsyncIterator[StreamEvent], None]:
    """Stream a response as an async iterator of its items.

    The async twin of ``iterate_stream``: the stream runs as a task of the calling
    event loop (``model.astream``), and leaving the ``async with`` block early (a
    ``break``, an exception, the consuming task cancelled) cancels the stream,
    which closes its connection, and waits for that task to end. ::

        async with aiterate_stream(model, request) as items:
            async for item in items:
                match item:
                    case PartialResponse(text=text):
                        await websocket.send_text(text)
                    case ChatResponse(message=message):
                        history.append(message)

    Args:
        model: the model to stream from.
        request: what to send it.
        handle: a handle to cancel the stream from elsewhere, too.

    Yields:
        The async iterator of the stream's items (``StreamEvent``).

    Raises:
        TypeError: ``model``, ``request`` or ``handle`` has the wrong type.
    """
    _check(model, request, handle, "aiterate_stream")
    handle = StreamingHandle() if handle is None else handle
    handoff = _AsyncHandoff(asyncio.get_running_loop())
    handler = _AsyncHandoffHandler(handoff)

    async def produce() -> None:
        try:
            response = await model.astream(request, handler, handle=handle)
        except asyncio.CancelledError as error:
            if _being_cancelled():
                raise  # the consumer left: nobody reads an outcome any more
            # The stream's own CancelledError (an SDK's inner task, say), not a
            # cancel of this task: the consumer waits for it like any outcome.
            handoff.end(_End(None, error))
        except BaseException as error:  # handed to the consumer, who raises it
            handoff.end(_End(None, error))
        else:
            handoff.end(_End(response, None))

    producer = asyncio.create_task(produce(), name="langhooks-aiterate-stream")
    try:
        yield _AsyncStreamIterator(handoff)
    finally:
        handle.cancel()
        handoff.leave()
        if not producer.done():
            producer.cancel()
        # Not ``await producer``: its CancelledError would read as this task's.
        await asyncio.wait({producer})


def _being_cancelled() -> bool:
    """Whether the current task was asked to cancel (``Task.cancel()``), as
    opposed to awaiting something that raised ``CancelledError`` of its own."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
