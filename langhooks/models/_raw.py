"""What the sync and async readers of an SDK's httpx response share (the readers
themselves are in ``_raw_async``, and ``_raw_sync`` generated from it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._core._messages import LangHooksError
from ._transport import http_error

__all__ = ["http_response", "status_error"]


def http_response(stream: object, reader: str) -> Any:
    """The HTTP response under an SDK stream object (or a wrapper around it).

    Raises:
        TypeError: ``stream`` holds no response with ``reader`` (the model's guard
            reports it as a classified error).
    """
    response = getattr(stream, "response", None)
    if not callable(getattr(response, reader, None)):
        raise TypeError(
            f"the SDK's create(stream=True) returned {type(stream).__name__}, "
            f"which holds no HTTP response to read"
        )
    return response


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
