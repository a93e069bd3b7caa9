"""Opening Ollama's ``/api/chat`` stream over httpx. (The async module is written
by hand; the sync one is generated from it by ``scripts/unasync.py``.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .._core._streaming import StreamingHandle
from ._run_async import AsyncBody, aread_error_body
from ._transport import AsyncHTTPBody, ConnectionWatch, http_error

__all__ = ["aopen_chat"]


@asynccontextmanager
async def aopen_chat(
    httpx: Any, url: str, payload: dict[str, Any], timeout: Any, handle: StreamingHandle
) -> AsyncIterator[AsyncBody]:
    """POST ``payload`` to ``url`` and hold the streamed response, unread.

    A client of its own per stream, closed on exit. The connection is watched
    from the moment it is made, so a cancel while Ollama is still loading the
    model closes it at once; an HTTP error status is raised as a classified
    ``LangHooksError`` with the error body (read up to ``ERROR_BODY_LIMIT``).

    Args:
        httpx: the ``httpx`` module.
        url: the ``/api/chat`` endpoint.
        payload: the request body.
        timeout: the client's ``httpx.Timeout``.
        handle: the stream's cancel handle.
    """
    watch = ConnectionWatch(handle)
    try:
        async with (
            httpx.AsyncClient(timeout=timeout) as client,
            client.stream(
                "POST", url, json=payload, extensions={"trace": watch.atrace}
            ) as r,
        ):
            if r.status_code >= 400:
                body, complete = await aread_error_body(r, r.aiter_bytes(), handle)
                raise http_error(
                    r.status_code,
                    r.headers,
                    body,
                    complete=complete,
                    url=str(r.request.url),
                )
            yield AsyncHTTPBody(r)
    finally:
        watch.done()
