"""A real MCP server for the tests, written with the SDK's ``MCPServer`` (FastMCP).

Served in-process over memory streams, or as a subprocess over stdio
(``python -m tests.integrations._mcp_server``).
"""

from __future__ import annotations

import base64
import os
import warnings
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ImageContent, TextContent
from pydantic import BaseModel

server = MCPServer("langhooks-tests")

#: What the in-process server saw: "cancelled" once a call was cancelled.
SEEN: list[str] = []
#: Set when the waiting tool has started (in-process).
STARTED: list[anyio.Event] = []

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


@server.tool(title="Count")
async def count(n: int, ctx: Context) -> str:
    """Count to n, reporting each step."""
    for step in range(1, n + 1):
        await ctx.report_progress(step, n, f"step {step}")
    with warnings.catch_warnings():
        # MCP 2026-07-28 deprecates logging; the tests still read it.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ctx.info(f"counted to {n}")
    return f"counted to {n}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"cannot: {reason}")


@server.tool()
def weather(city: str) -> dict[str, Any]:
    """Structured weather."""
    return {"city": city, "temperature": 18}


@server.tool()
def picture() -> list[TextContent | ImageContent]:
    """A caption and an image."""
    return [
        TextContent(type="text", text="a pixel"),
        ImageContent(type="image", data=PIXEL, mime_type="image/png"),
    ]


@server.tool()
def attachments() -> list[types.ContentBlock]:
    """Audio, a link, and a text and a binary resource."""
    return [
        types.AudioContent(type="audio", data=PIXEL, mime_type="audio/wav"),
        types.ResourceLink(type="resource_link", name="doc", uri="file:///doc.txt"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///a.txt", text="hello"),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///b.bin", blob=PIXEL),
        ),
    ]


class Name(BaseModel):
    name: str
    age: int


@server.tool()
async def greet(ctx: Context) -> str:
    """Asks who is there, then greets them."""
    answer = await ctx.elicit("Who are you?", Name)
    if answer.action != "accept":
        return f"no greeting ({answer.action})"
    return f"Hello {answer.data.name}, {answer.data.age}"


@server.tool()
async def wait(ctx: Context) -> str:
    """Waits until cancelled."""
    if STARTED:
        STARTED[0].set()
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        SEEN.append("cancelled")
        raise
    return "never"  # pragma: no cover


@server.tool()
async def die(ctx: Context) -> str:
    """Reports once, then the server process exits mid-call."""
    await ctx.report_progress(1, 2, "about to die")
    os._exit(3)


async def _list_paged(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    """Two pages of one tool each."""
    first = params is None or params.cursor is None
    name, cursor = ("first", "page-2") if first else ("second", None)
    tool = types.Tool(name=name, input_schema={"type": "object"})
    return types.ListToolsResult(tools=[tool], next_cursor=cursor)


async def _call_paged(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    """Structured content and no content blocks."""
    return types.CallToolResult(content=[], structured_content={"tool": params.name})


#: A low-level server that lists its tools on two pages.
paged = Server("paged", on_list_tools=_list_paged, on_call_tool=_call_paged)


if __name__ == "__main__":
    server.run("stdio")
