"""An httpx response taken from an SDK, read as a streamed ``Body``.

The google-genai, cohere and mistralai SDKs have no ``with_streaming_response``:
their models open the request through the SDK and hand its httpx response (not yet
read) to ``run_stream`` / ``arun_stream`` through these wrappers, so the bytes go
through langhooks' own decoder and adapter, never the SDK's iterator.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from typing_extensions import override

from .._core._messages import LangHooksError
from ._run_async import aerror_body_hook
from ._run_sync import error_body_hook
from ._transport import http_error

__all__ = [
    "AsyncResponseBody",
    "ResponseBody",
    "aresponse_body",
    "response_body",
    "status_error",
]


class ResponseBody:
    """A sync httpx response as a ``Body`` (``http_response``: its socket, for
    cancelling)."""

    __slots__ = ("http_response",)

    def __init__(self, response: Any) -> None:
        self.http_response = response

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers."""
        return self.http_response.headers  # type: ignore[no-any-return]

    def iter_bytes(self) -> Iterator[bytes]:
        """The body bytes as they arrive."""
        return self.http_response.iter_bytes()  # type: ignore[no-any-return]


class AsyncResponseBody(ResponseBody):
    """An async httpx response as an ``AsyncBody``."""

    __slots__ = ()

    @override
    def iter_bytes(self) -> AsyncIterator[bytes]:  # type: ignore[override]  # the async twin
        """The body bytes as they arrive."""
        return self.http_response.aiter_bytes()  # type: ignore[no-any-return]


@contextlib.contextmanager
def response_body(send: Callable[[], Any]) -> Iterator[ResponseBody]:
    """The response ``send()`` returns, as a ``Body``; closed on exit.

    An HTTP error status is raised as a classified ``LangHooksError``
    (``error_body_hook``), for a client that does not run the hook itself.
    """
    response = send()
    try:
        error_body_hook(response)
        yield ResponseBody(response)
    finally:
        response.close()


@contextlib.asynccontextmanager
async def aresponse_body(
    send: Callable[[], Any],
) -> AsyncIterator[AsyncResponseBody]:
    """The async twin of ``response_body``; ``send()`` returns an awaitable."""
    response = await send()
    try:
        await aerror_body_hook(response)
        yield AsyncResponseBody(response)
    finally:
        await response.aclose()


def status_error(
    status: int, headers: Mapping[str, str] | None, body: object
) -> LangHooksError:
    """An SDK's HTTP status error (raised by a client passed in, which has no
    ``error_body_hook``) classified as ``http_error`` classifies the response.

    Args:
        status: the HTTP status.
        headers: the response headers.
        body: the error body as the SDK kept it (text, or decoded JSON).
    """
    data = body if isinstance(body, str) else json.dumps(body, default=str)
    return http_error(status, headers or {}, data.encode())
