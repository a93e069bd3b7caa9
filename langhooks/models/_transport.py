"""What running one provider HTTP stream through a stream driver needs on both
sides: the helpers of ``run_stream`` / ``arun_stream`` (``_run_async``, and
``_run_sync`` generated from it) and of the models calling them.

The provider models open a streamed HTTP response (through the official SDK or
httpx) and hand it to ``run_stream`` / ``arun_stream``. Cancelling the stream's
handle shuts the socket down (``_Interrupter``), so a read blocked in another thread
wakes up and the server sees the disconnect; an error body is read up to
``ERROR_BODY_LIMIT`` (``_ErrorBody``) and classified (``http_error``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import socket
import urllib.parse
from collections.abc import AsyncIterator, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Final, Protocol, cast

from .._core._messages import LangHooksError
from .._core._streaming import StreamingHandle
from ._errors import classify_error, parse_ratelimit
from ._sse import Chunk

__all__ = [
    "ERROR_BODY_LIMIT",
    "AsyncHTTPBody",
    "ConnectionWatch",
    "Decoder",
    "google_retry_delay",
    "http_error",
    "lower_headers",
    "mapping_items",
    "model_name",
    "require",
    "response_metadata",
]


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


class Decoder(Protocol):
    """What ``pump`` reads events with: a ``WireDecoder``, or one that wraps it."""

    def feed(self, chunk: Chunk) -> list[object]:
        """The decoded events ``chunk`` completes."""
        ...

    def end(self) -> list[object]:
        """The events left at the end of input."""
        ...


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


def _nothing() -> None:
    """Stands in for ``close`` on an iterator that is not a generator."""


async def _anothing() -> None:
    """Stands in for ``aclose`` on an async iterator that is not a generator."""
