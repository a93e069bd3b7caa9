"""The httpx response under an SDK's stream, read as a streamed body. (The async
module is written by hand; the sync one is generated from it by
``scripts/unasync.py``.)

Each opening here hands the stream runner the HTTP response an SDK call gives,
not yet read, so its bytes go through langhooks' own decoder and adapter, never the
SDK's iterator: ``asdk_body`` for the stream object of an official SDK's
``create(..., stream=True)``; for the SDKs without ``with_streaming_response``,
``aresponse_body`` for a request sent through the SDK's own httpx client
(google-genai) and ``amistral_body`` for mistralai's ``chat.stream``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ._raw import http_response, status_error
from ._run_async import AsyncBody, aerror_body_hook
from ._transport import AsyncHTTPBody, require

__all__ = ["amistral_body", "aresponse_body", "asdk_body"]


@asynccontextmanager
async def asdk_body(stream: Any) -> AsyncIterator[AsyncBody]:
    """The body of the SDK stream ``stream``; closed (it, then its response) after.

    ``stream`` is closed through its own exit (a wrapper around it ends its span
    there), else its ``close()``, awaited when it returns an awaitable.
    """
    response: Any = None
    try:
        response = http_response(stream, "aiter_bytes")
        yield AsyncHTTPBody(response)
    finally:
        try:
            exit_ = getattr(stream, "__aexit__", None)
            if callable(exit_):
                await exit_(None, None, None)
            else:
                closing = getattr(stream, "close", None)
                result = closing() if callable(closing) else None
                if inspect.isawaitable(result):
                    await result
        finally:
            if response is not None:
                await response.aclose()


@asynccontextmanager
async def aresponse_body(send: Callable[[], Any]) -> AsyncIterator[AsyncBody]:
    """The response ``send()`` gives (awaited), as a body; closed on exit.

    An HTTP error status is raised as a classified ``LangHooksError``
    (``aerror_body_hook``), for a client that does not run the hook itself.
    """
    response = await send()
    try:
        await aerror_body_hook(response)
        yield AsyncHTTPBody(response)
    finally:
        await response.aclose()


@asynccontextmanager
async def amistral_body(
    client: Any, params: dict[str, Any]
) -> AsyncIterator[AsyncBody]:
    """The response of mistralai's ``chat.stream_async(**params)``, as a body; closed
    on exit.
    """
    errors = require("mistralai.client.errors", "mistral")
    try:
        events = await client.chat.stream_async(**params)
    except errors.MistralError as exc:
        # A client passed in has no error hook: the SDK read the error itself.
        raise status_error(exc.status_code, exc.headers, exc.body) from exc
    try:
        yield AsyncHTTPBody(events.response)
    finally:
        await events.response.aclose()
