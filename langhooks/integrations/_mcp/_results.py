"""What an MCP server answers, as langhooks values: a ``CallToolResult`` as a
``ToolResult``, and any failure of a call as a classified ``LangHooksError``."""

from __future__ import annotations

import json
from typing import Final

import anyio
import pydantic
from mcp import MCPError
from mcp import types as mcp_types
from mcp.types import jsonrpc

from ..._core._messages import (
    ContentPart,
    ErrorType,
    LangHooksError,
    ToolCall,
    ToolResult,
)

__all__ = ["classified", "tool_result"]

# JSON-RPC error codes and the langhooks error type each one is.
_CODES: Final[dict[int, ErrorType]] = {
    jsonrpc.CONNECTION_CLOSED: "connection",
    jsonrpc.REQUEST_TIMEOUT: "timeout",
    jsonrpc.INVALID_REQUEST: "invalid_request",
    jsonrpc.INVALID_PARAMS: "invalid_request",
    jsonrpc.METHOD_NOT_FOUND: "invalid_request",
}

# What a closed or broken session raises below the SDK's own errors.
_GONE: Final = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
)


def _part(block: mcp_types.ContentBlock) -> ContentPart:
    """One content block as a part (media as a data URL, a link as its URI)."""
    if isinstance(block, mcp_types.TextContent):
        return ContentPart.text(block.text)
    if isinstance(block, mcp_types.ImageContent):
        url = f"data:{block.mime_type};base64,{block.data}"
        return ContentPart(type="image_url", content=url)
    if isinstance(block, mcp_types.AudioContent):
        url = f"data:{block.mime_type};base64,{block.data}"
        return ContentPart(type="file", content=url)
    if isinstance(block, mcp_types.ResourceLink):
        return ContentPart(type="file", content=str(block.uri))
    resource = block.resource  # an EmbeddedResource
    if isinstance(resource, mcp_types.TextResourceContents):
        return ContentPart.text(resource.text)
    kind = resource.mime_type or "application/octet-stream"
    return ContentPart(type="file", content=f"data:{kind};base64,{resource.blob}")


def tool_result(call: ToolCall, result: mcp_types.CallToolResult) -> ToolResult:
    """The ``ToolResult`` of a server's answer to ``call``.

    The content blocks become the parts the model reads (text; images as
    ``image_url`` data URLs; audio, blobs and links as ``file`` parts); the
    structured content, when the server sent any, is ``processed_content``
    (and, with no other content, the text too). ``isError`` is ``is_error``.
    """
    parts = [_part(block) for block in result.content]
    structured = result.structured_content
    if not parts and structured is not None:
        parts = [ContentPart.text(json.dumps(structured, ensure_ascii=False))]
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=parts,
        is_error=result.is_error,
        processed_content=structured,
    )


def classified(error: Exception, server_tool: str) -> LangHooksError:
    """A failed call to the server's tool ``server_tool`` as a ``LangHooksError``.

    A dropped session is "connection" (retryable), a timeout "timeout", a request
    the server refused "invalid_request", any other JSON-RPC error or a malformed
    answer "protocol_error"; the SDK's exception is ``original``.
    """
    if isinstance(error, LangHooksError):
        return error
    what = f"the MCP tool {server_tool!r}"
    if isinstance(error, MCPError):
        kind: ErrorType = _CODES.get(error.code, "protocol_error")
        text = f"{what} failed: {error.message} (JSON-RPC error {error.code})"
        return LangHooksError(kind, text, original=error)
    if isinstance(error, _GONE):
        text = f"{what} failed: the MCP session is closed ({type(error).__name__})"
        return LangHooksError("connection", text, original=error)
    if isinstance(error, pydantic.ValidationError):
        text = f"{what} answered something that is not a tool result: {error}"
        return LangHooksError("protocol_error", text, original=error)
    text = f"{what} failed: {type(error).__name__}: {error}"
    return LangHooksError("protocol_error", text, original=error)
