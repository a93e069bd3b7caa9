"""Running one provider HTTP stream through a stream driver. (The async module is
written by hand; the sync one is generated from it by ``scripts/unasync.py``.)

``arun_stream`` opens a streamed response, reads its raw bytes, decodes them with
the wire-format decoders, feeds each event to the driver, and turns every
transport failure into a ``LangHooksError`` reported once through the driver. The
parts both sides share (the error body, the socket interrupter, the headers) are
in ``_transport``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from .._core._messages import ChatResponse, LangHooksError
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._drive_async import AsyncStreamDriver
from ._errors import error_from_exception
from ._formats import StreamFormat
from ._sse import Chunk, stream_events
from ._transport import (
    _OPENING,
    Decoder,
    _anothing,
    _cancelled,
    _ErrorBody,
    _Interrupter,
    _network_socket,
    http_error,
    response_metadata,
)

__all__ = [
    "AsyncBody",
    "aerror_body_hook",
    "apump",
    "aread_error_body",
    "arun_stream",
]


class AsyncBody(Protocol):
    """A streamed HTTP response: its headers, its bytes, its connection."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""
        ...

    def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body bytes as they arrive."""
        ...


async def aread_error_body(
    response: object, chunks: AsyncIterator[bytes], handle: StreamingHandle
) -> tuple[bytes, bool]:
    """Read an HTTP error body, at most ``ERROR_BODY_LIMIT`` bytes of it.

    The caller closes the response afterwards (the rest is never read).

    Args:
        response: the httpx response (its socket is shut down on a cancel).
        chunks: its body, as it arrives.
        handle: the stream's handle: a cancel stops the reading.

    Returns:
        The body read, and whether it is the whole body.
    """
    body = _ErrorBody(response, handle)
    try:
        async for chunk in chunks:
            if not body.take(chunk):
                break
        else:
            body.complete = True
    except Exception:
        # The body broke off (or a cancel shut the socket): the error is the
        # status's, with what arrived.
        pass
    return body.result()


async def aerror_body_hook(response: Any) -> None:
    """An httpx ``response`` event hook: an error response's body is read up to
    ``ERROR_BODY_LIMIT``, the response closed and the error raised.

    The SDK clients get it, so they never read an endless error body whole; the
    SDK wraps what it raises, and ``error_from_exception`` unwraps it.

    Raises:
        LangHooksError: the response's status is 400 or more.
    """
    if response.status_code < 400:
        return
    # Outside a model's stream (no handle) nothing can cancel the read.
    handle = _OPENING.get() or StreamingHandle()
    body, complete = await aread_error_body(response, response.aiter_bytes(), handle)
    await response.aclose()
    raise http_error(
        response.status_code,
        response.headers,
        body,
        complete=complete,
        url=str(response.request.url),
    )


async def arun_stream(
    format: StreamFormat,
    handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
    handle: StreamingHandle | None,
    open_body: Callable[[], AbstractAsyncContextManager[AsyncBody]],
) -> ChatResponse:
    """Open a streamed response and drive ``handler`` with its events.

    The whole stream runs under the driver's ``guard``: whatever raises while
    opening, reading or closing reaches the handler as one classified
    ``LangHooksError``.

    Args:
        format: the wire format of the body.
        handler: the handler to drive.
        handle: the caller's cancel handle, if it made one.
        open_body: opens the HTTP response (raising on an HTTP error status).

    Returns:
        The response; its message has status "cancelled" if the handle was.

    Raises:
        LangHooksError: the request or the stream failed (after ``on_error``).
    """
    # The driver first: a handler of the wrong type is refused before a request
    # goes out.
    driver = AsyncStreamDriver(format, handler, handle=handle)
    return await driver.guard(lambda: _aread_stream(driver, open_body))


async def _aread_stream(
    driver: AsyncStreamDriver,
    open_body: Callable[[], AbstractAsyncContextManager[AsyncBody]],
) -> ChatResponse:
    handle = driver.handle
    if handle.is_cancelled:
        return await driver.finish()
    opening = _OPENING.set(handle)
    try:
        opened = open_body()
        body = await opened.__aenter__()
    finally:
        _OPENING.reset(opening)
    try:
        driver._add_metadata(response_metadata(body.headers))
        interrupter = _Interrupter(_network_socket(body))
        handle.add_cancel_callback(interrupter)
        try:
            return await apump(
                driver,
                body.iter_bytes(),
                stream_events(driver.format),
                error_from_exception,
            )
        finally:
            interrupter.done()
    finally:
        await opened.__aexit__(None, None, None)


async def apump(
    driver: AsyncStreamDriver,
    chunks: AsyncIterator[Chunk],
    decoder: Decoder,
    read_error: Callable[[Exception], LangHooksError],
) -> ChatResponse:
    """Feed a body's chunks through ``decoder`` to ``driver`` until it is over,
    then close ``chunks`` (when it can be closed).

    Args:
        driver: the stream's driver.
        chunks: the body, in pieces as read.
        decoder: the wire decoder for the stream's format.
        read_error: the ``LangHooksError`` for an exception reading ``chunks``
            raised (reported through the driver, unless the stream was
            cancelled: then the reading failed because the connection was shut).

    Returns:
        The response (after ``on_complete_response``), or the cancelled one.

    Raises:
        LangHooksError: the stream failed (after ``on_error``).
    """
    try:
        while True:
            try:
                chunk = await anext(chunks, None)
            except Exception as exc:
                if _cancelled(driver.handle):
                    return await driver.finish()
                await driver.fail(read_error(exc))
            # After a cancel the driver delivers nothing and returns False.
            for event in decoder.end() if chunk is None else decoder.feed(chunk):
                if not await driver.feed(event):
                    return await driver.finish()
            if chunk is None:
                return await driver.finish()
    finally:
        # Finish the body's generator here, rather than leaving it to garbage
        # collection (the event loop's hook, for an async one).
        await getattr(chunks, "aclose", _anothing)()
