"""The limits every langhooks web app puts on a request body, checked before
anything else reads it: JSON only, a bounded size, a bounded nesting depth, and
text that is valid Unicode."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = ["MAX_BODY_BYTES", "MAX_BODY_DEPTH", "BadRequest", "json_body"]

# Request bodies larger than this are refused unread (413).
MAX_BODY_BYTES: Final = 64 * 1024
# Request bodies nested deeper than this are refused (400): no decision, prompt or
# conversation needs more, and a deeper one would only exhaust the stack of what
# handles it.
MAX_BODY_DEPTH: Final = 64
_TOO_DEEP: Final = f"the body is nested deeper than {MAX_BODY_DEPTH} levels"
_NOT_UNICODE: Final = "the body holds text that is not valid Unicode (a lone surrogate)"


class BadRequest(Exception):
    """A request the app refuses: its status and what was wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def json_body(request: Request, *, max_bytes: int = MAX_BODY_BYTES) -> Any:
    """The request's JSON body, read up to ``max_bytes``.

    Raises:
        BadRequest: not JSON (415), too large (413), malformed, nested deeper than
            ``MAX_BODY_DEPTH`` or holding a lone surrogate (400).
    """
    media_type = request.headers.get("content-type", "").split(";")[0].strip()
    if media_type.lower() != "application/json":
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
    except RecursionError:
        raise BadRequest(400, _TOO_DEEP) from None
    except ValueError as exc:
        raise BadRequest(400, f"the body is not valid JSON: {exc}") from None
    _check_tree(value)
    return value


def _check_tree(value: object) -> None:
    """Refuse a parsed body nested too deep or holding text that is not Unicode
    (a lone surrogate, which JSON's escapes allow but nothing can encode).

    Raises:
        BadRequest: 400, saying which.
    """
    # Iterative: the walk must not be what exhausts the stack.
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item)
            continue
        if isinstance(item, dict | list) and depth > MAX_BODY_DEPTH:
            raise BadRequest(400, _TOO_DEEP)
        if isinstance(item, dict):
            for key in item:
                _check_text(key)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(400, _NOT_UNICODE) from None
