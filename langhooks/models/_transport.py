"""Running one provider HTTP stream through a stream driver.

The provider models open a streamed HTTP response (through the official SDK or
httpx) and hand it to ``run_stream`` / ``arun_stream``. These read the raw bytes,
decode them with the wire-format decoders, feed each event to the driver, and turn
every transport failure into a ``LangHooksError`` reported once through the driver.
Cancelling the stream's handle shuts the socket down, so a read blocked in another
thread wakes up and the server sees the disconnect.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import socket
import urllib.parse
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from contextvars import ContextVar
from typing import Any, Final, Protocol, cast

from .._core._messages import ChatResponse, LangHooksError
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._drive import AsyncStreamDriver, StreamDriver, StreamFormat
from ._errors import classify_error, error_from_exception, parse_ratelimit
from ._sse import Chunk, stream_events

__all__ = [
    "ERROR_BODY_LIMIT",
    "AsyncBody",
    "AsyncHTTPBody",
    "Body",
    "ConnectionWatch",
    "Decoder",
    "aerror_body_hook",
    "apump",
    "aread_error_body",
    "arun_stream",
    "error_body_hook",
    "error_from_exception",
    "google_retry_delay",
    "http_error",
    "lower_headers",
    "mapping_items",
    "model_name",
    "pump",
    "read_error_body",
    "require",
    "response_metadata",
    "run_stream",
    "sdk_http_client",
]


class Body(Protocol):
    """A streamed HTTP response: its headers, its bytes, its connection."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""
        ...

    def iter_bytes(self) -> Iterator[bytes]:
        """The body bytes as they arrive."""
        ...


class AsyncBody(Protocol):
    """The async twin of ``Body``."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""
        ...

    def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body bytes as they arrive."""
        ...


def model_name(value: object) -> str:
    """``value`` checked as a model name.

    Raises:
        ValueError: ``value`` is not a non-empty str.
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"model must be a non-empty str, got {value!r}")
    return value


def _cancelled(handle: StreamingHandle) -> bool:
    # A function, not the property inline: another thread may flip it at any time.
    return handle.is_cancelled


def require(module: str, extra: str) -> Any:
    """Import an optional dependency, or say which extra installs it.

    Raises:
        ImportError: the module is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f'this model needs the {module!r} package: pip install "langhooks[{extra}]"'
        ) from exc


def lower_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """All headers, names lower-cased (repeated headers joined with ", ")."""
    result: dict[str, str] = {}
    items: Iterable[tuple[str, str]]
    multi = getattr(headers, "multi_items", None)
    items = multi() if callable(multi) else headers.items()
    for name, value in items:
        key = name.lower()
        result[key] = f"{result[key]}, {value}" if key in result else value
    return result


def response_metadata(headers: Mapping[str, str]) -> dict[str, Any]:
    """``response_headers`` (lower-cased) and parsed ``ratelimit`` for a response."""
    lowered = lower_headers(headers)
    return {"response_headers": lowered, "ratelimit": parse_ratelimit(lowered)}


def _body_message(body: object) -> str | None:
    """The message in an error body: ``{"error": {"message": ...}}`` and kin."""
    if isinstance(body, str):
        return body or None
    if isinstance(body, Mapping):
        for key in ("error", "message"):
            found = _body_message(body.get(key))
            if found is not None:
                return found
    return None


#: The most of an HTTP error body a model reads (1 MiB). A server that sends an
#: endless error body cannot make the client grow without bound: past this the
#: connection is closed and the error raised with what was read.
ERROR_BODY_LIMIT: Final = 1 << 20

# The handle of the stream whose request is being opened in this thread or task:
# the SDK clients' response hook reads an error body on behalf of that stream.
_OPENING: ContextVar[StreamingHandle | None] = ContextVar(
    "langhooks_opening_stream", default=None
)


class _ErrorBody:
    """An error body being read up to ``ERROR_BODY_LIMIT`` (shared by the sync and
    async readers): a cancel shuts the socket down, so a stalled read wakes."""

    __slots__ = ("_handle", "_interrupter", "complete", "data")

    def __init__(self, response: object, handle: StreamingHandle) -> None:
        self.data = bytearray()
        self.complete = False
        self._handle = handle
        self._interrupter = _Interrupter(_network_socket(response))
        handle.add_cancel_callback(self._interrupter)

    def take(self, chunk: bytes) -> bool:
        """Keep ``chunk``; whether to read on."""
        self.data += chunk
        return len(self.data) <= ERROR_BODY_LIMIT and not self._handle.is_cancelled

    def result(self) -> tuple[bytes, bool]:
        self._interrupter.done()
        return bytes(self.data[:ERROR_BODY_LIMIT]), self.complete


def read_error_body(
    response: object, chunks: Iterable[bytes], handle: StreamingHandle
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
        for chunk in chunks:
            if not body.take(chunk):
                break
        else:
            body.complete = True
    except Exception:
        # The body broke off (or a cancel shut the socket): the error is the
        # status's, with what arrived.
        pass
    return body.result()


async def aread_error_body(
    response: object, chunks: AsyncIterator[bytes], handle: StreamingHandle
) -> tuple[bytes, bool]:
    """The async twin of ``read_error_body``."""
    body = _ErrorBody(response, handle)
    try:
        async for chunk in chunks:
            if not body.take(chunk):
                break
        else:
            body.complete = True
    except Exception:
        # As in read_error_body: the status already says what failed.
        pass
    return body.result()


def http_error(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    complete: bool = True,
    url: str | None = None,
) -> LangHooksError:
    """The ``LangHooksError`` for an HTTP error response.

    Classified by the status and the provider's error code in the body
    (``{"error": {"code"|"type": ...}}``, Anthropic's and OpenAI's shapes); the
    message is the body's, or the body itself.

    Args:
        status: the HTTP status.
        headers: the response headers.
        body: the body as read (at most ``ERROR_BODY_LIMIT`` bytes).
        complete: False when the body was cut at the limit.
        url: the URL requested, named in the message (and in ``metadata["url"]``);
            a 404 on an OpenAI-style path without ``/v1`` hints at the base URL.
    """
    text = body.decode("utf-8", "replace").strip()
    decoded: object = None
    if complete:
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
    error = decoded.get("error") if isinstance(decoded, Mapping) else None
    code = None
    if isinstance(error, Mapping):
        # OpenAI's "code" or Anthropic's "type"; Google's "code" is the HTTP
        # status and its "status" the code (RESOURCE_EXHAUSTED, ...).
        for key in ("code", "type", "status"):
            found = error.get(key)
            if isinstance(found, str) and found:
                code = found
                break
    message = _body_message(decoded) or text[:1000] or f"HTTP {status}"
    if not complete:
        message = (
            f"{message} ... [the error body was not read in full: at most "
            f"{ERROR_BODY_LIMIT} bytes are]"
        )
    classified = classify_error(
        status=status,
        code=code,
        message=message,
        headers=lower_headers(headers),
        original=body,
        url=url,
        hint=_base_url_hint(status, url) if url else "",
    )
    if classified.retry_after is None and isinstance(error, Mapping):
        classified.retry_after = google_retry_delay(error)
    return classified


#: The paths an OpenAI-compatible client appends to its base URL.
_OPENAI_PATHS: Final = ("/chat/completions", "/responses", "/completions")


def _base_url_hint(status: int, url: str) -> str:
    """For a 404 on an OpenAI-style path whose base has no ``/v1``: the hint."""
    path = urllib.parse.urlsplit(url).path
    if status != 404 or "/v1" in path:
        return ""
    for suffix in _OPENAI_PATHS:
        if path.endswith(suffix):
            base = url[: url.rindex(suffix)]
            return (
                f"an OpenAI-compatible base URL usually ends in /v1: try "
                f"{base.rstrip('/')}/v1"
            )
    return ""


def google_retry_delay(error: Mapping[str, Any]) -> float | None:
    """The wait a Google API error asks for: its ``google.rpc.RetryInfo`` detail's
    ``retryDelay`` (``"37s"``, ``"1.5s"``), in seconds; None when it has none."""
    details = error.get("details")
    if not isinstance(details, list):
        return None
    for detail in details:
        if not isinstance(detail, Mapping):
            continue
        if not str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            continue
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                seconds = float(delay[:-1])
            except ValueError:
                return None
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def error_body_hook(response: Any) -> None:
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
    body, complete = read_error_body(response, response.iter_bytes(), handle)
    response.close()
    raise http_error(
        response.status_code,
        response.headers,
        body,
        complete=complete,
        url=str(response.request.url),
    )


async def aerror_body_hook(response: Any) -> None:
    """The async client's twin of ``error_body_hook``.

    Raises:
        LangHooksError: the response's status is 400 or more.
    """
    if response.status_code < 400:
        return
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


def sdk_http_client(sdk: Any, asynchronous: bool = False) -> Any:
    """The HTTP client an official SDK's client gets: the SDK's own default one
    (its timeouts, limits and redirects) with ``error_body_hook``.

    Args:
        sdk: the ``openai`` or ``anthropic`` module.
        asynchronous: the async client's (``DefaultAsyncHttpxClient``).
    """
    if asynchronous:
        return sdk.DefaultAsyncHttpxClient(event_hooks={"response": [aerror_body_hook]})
    return sdk.DefaultHttpxClient(event_hooks={"response": [error_body_hook]})


def mapping_items(value: object) -> list[dict[str, Any]]:
    """The JSON objects in a list or tuple kept in message metadata (else none)."""
    if not isinstance(value, (list, tuple)):
        return []
    return [dict(item) for item in value if isinstance(item, Mapping)]


def _network_socket(response: object) -> Any:
    """The socket under an httpx/httpx2 response, when the transport exposes it."""
    raw = getattr(response, "http_response", response)
    extensions = getattr(raw, "extensions", None)
    stream = extensions.get("network_stream") if isinstance(extensions, dict) else None
    if stream is None:  # pragma: no cover - custom transports (mocks, ASGI) have none
        return None
    return stream.get_extra_info("socket")


class _Interrupter:
    """Shuts a stream's socket down when its handle is cancelled.

    ``shutdown`` is safe from any thread and wakes a read blocked in another one;
    the reading side then closes the response itself.
    """

    __slots__ = ("_done", "_socket")

    def __init__(self, sock: Any) -> None:
        self._socket = sock
        self._done = False

    def __call__(self) -> None:
        if self._done or self._socket is None:
            return
        # OSError: already closed by the reading side, so nothing to wake.
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)

    def done(self) -> None:
        self._done = True


class ConnectionWatch:
    """Shuts an httpx request's connection down on cancel, from the moment it is
    connected: a cancel while the server has sent nothing yet (Ollama loading a
    model for minutes) closes the connection at once instead of waiting for the
    first byte.

    Pass ``{"trace": watch.trace}`` (``watch.atrace`` for an async client) as the
    request's ``extensions``, and call ``done`` once the request is over.
    """

    __slots__ = ("_handle", "_interrupters")

    def __init__(self, handle: StreamingHandle) -> None:
        self._handle = handle
        self._interrupters: list[_Interrupter] = []

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        """httpcore's trace hook: watch each new connection's socket."""
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        get_extra_info = getattr(stream, "get_extra_info", None)
        if get_extra_info is None:  # pragma: no cover - httpcore always gives one
            return
        interrupter = _Interrupter(get_extra_info("socket"))
        self._interrupters.append(interrupter)
        self._handle.add_cancel_callback(interrupter)

    async def atrace(self, event: str, info: Mapping[str, Any]) -> None:
        """The async client's trace hook (it must be a coroutine)."""
        self.trace(event, info)

    def done(self) -> None:
        """The request is over: a later cancel touches no socket."""
        for interrupter in self._interrupters:
            interrupter.done()


def run_stream(
    format: StreamFormat,
    handler: StreamingChatResponseHandler,
    handle: StreamingHandle | None,
    open_body: Callable[[], AbstractContextManager[Body]],
) -> ChatResponse:
    """Open a streamed response and drive ``handler`` with its events.

    The whole stream runs under ``StreamDriver.guard``: whatever raises while
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
    driver = StreamDriver(format, handler, handle=handle)
    return driver.guard(lambda: _read_stream(driver, open_body))


def _read_stream(
    driver: StreamDriver, open_body: Callable[[], AbstractContextManager[Body]]
) -> ChatResponse:
    handle = driver.handle
    if handle.is_cancelled:
        return driver.finish()
    opening = _OPENING.set(handle)
    try:
        opened = open_body()
        body = opened.__enter__()
    finally:
        _OPENING.reset(opening)
    try:
        driver._add_metadata(response_metadata(body.headers))
        interrupter = _Interrupter(_network_socket(body))
        handle.add_cancel_callback(interrupter)
        try:
            return pump(
                driver,
                body.iter_bytes(),
                stream_events(driver.format),
                error_from_exception,
            )
        finally:
            interrupter.done()
    finally:
        opened.__exit__(None, None, None)


class Decoder(Protocol):
    """What ``pump`` reads events with: a ``WireDecoder``, or one that wraps it."""

    def feed(self, chunk: Chunk) -> list[object]:
        """The decoded events ``chunk`` completes."""
        ...

    def end(self) -> list[object]:
        """The events left at the end of input."""
        ...


def pump(
    driver: StreamDriver,
    chunks: Iterable[Chunk],
    decoder: Decoder,
    read_error: Callable[[Exception], LangHooksError],
) -> ChatResponse:
    """Feed a body's chunks through ``decoder`` to ``driver`` until it is over.

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
    feed = driver.feed
    iterator = iter(chunks)
    while True:
        try:
            chunk = next(iterator, None)
        except Exception as exc:
            if _cancelled(driver.handle):
                return driver.finish()
            driver.fail(read_error(exc))
        # After a cancel the driver delivers nothing and returns False.
        for event in decoder.end() if chunk is None else decoder.feed(chunk):
            if not feed(event):
                return driver.finish()
        if chunk is None:
            return driver.finish()


async def arun_stream(
    format: StreamFormat,
    handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
    handle: StreamingHandle | None,
    open_body: Callable[[], AbstractAsyncContextManager[AsyncBody]],
) -> ChatResponse:
    """The async twin of ``run_stream`` (under ``AsyncStreamDriver.guard``).

    Raises:
        LangHooksError: the request or the stream failed (after ``on_error``).
    """
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
    """The async twin of ``pump``; it also closes ``chunks`` when it ends.

    Args:
        driver: the stream's driver.
        chunks: the body, in pieces as read.
        decoder: the wire decoder for the stream's format.
        read_error: the ``LangHooksError`` for an exception reading ``chunks``
            raised (unless the stream was cancelled, as for ``pump``).

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
            for event in decoder.end() if chunk is None else decoder.feed(chunk):
                if not await driver.feed(event):
                    return await driver.finish()
            if chunk is None:
                return await driver.finish()
    finally:
        # Finish the body's async generator here, in this task, rather than
        # leaving it to the event loop's garbage collection hook.
        await getattr(chunks, "aclose", _nothing)()


class AsyncHTTPBody:
    """An httpx (or httpx2) async response seen as an ``AsyncBody``."""

    __slots__ = ("http_response",)

    def __init__(self, response: Any) -> None:
        self.http_response = response

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""
        return cast("Mapping[str, str]", self.http_response.headers)

    def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body bytes as they arrive."""
        return cast("AsyncIterator[bytes]", self.http_response.aiter_bytes())


async def _nothing() -> None:
    """Stands in for ``aclose`` on an async iterator that is not a generator."""
