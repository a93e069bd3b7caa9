"""The limits every langhooks web app puts on a request body: JSON only, a bounded
size and a bounded nesting depth, checked before anything else reads it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = ["MAX_BODY_BYTES", "MAX_JSON_DEPTH", "BadRequest", "json_body"]

# Request bodies larger than this are refused unread (413).
MAX_BODY_BYTES: Final = 64 * 1024
# JSON nested deeper than this is refused (400): no legitimate body comes close.
MAX_JSON_DEPTH: Final = 32


class BadRequest(Exception):
    """A request the app refuses: its status and what was wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _depth(value: Any) -> int:
    """How deeply ``value`` nests arrays and objects (a scalar is 0)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in item)
    return deepest


async def json_body(request: Request, *, max_bytes: int = MAX_BODY_BYTES) -> Any:
    """The request's JSON body, read up to ``max_bytes``.

    Raises:
        BadRequest: not JSON (415), too large (413), malformed or nested deeper
            than ``MAX_JSON_DEPTH`` (400).
    """
    media_type = request.headers.get("content-type", "").split(";")[0].strip()
    if media_type != "application/json":
        # Also what keeps other sites out: a cross-site form cannot send JSON.
        raise BadRequest(415, "send the body as Content-Type: application/json")
    length = request.headers.get("content-length", "")
    if length.isdecimal() and int(length) > max_bytes:
        raise BadRequest(413, f"the body is larger than {max_bytes} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise BadRequest(413, f"the body is larger than {max_bytes} bytes")
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(400, f"the body is not valid JSON: {exc}") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise BadRequest(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels")
    return value
