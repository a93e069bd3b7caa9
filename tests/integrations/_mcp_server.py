"""A real MCP server for the tests, written with the SDK's ``MCPServer`` (FastMCP).

Served in-process over memory streams, or as a subprocess over stdio
(``python -m tests.integrations._mcp_server``).
"""

from __future__ import annotations

import base64
import os
import warnings
from typing import Annotated, Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
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


def ask_name() -> Elicit[Name]:
    """The question ``register`` needs answered first."""
    return Elicit("Who are you?", Name)


@server.tool()
def register(person: Annotated[Name, Resolve(ask_name)]) -> str:
    """Registers the person the client names (asked before the tool runs: mid-call
    on a 2025 session, by InputRequiredResult on a 2026-07-28 one)."""
    return f"Registered {person.name}, {person.age}"


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
    """Two pages of tools."""
    if params is None or params.cursor is None:
        names, cursor = ["first"], "page-2"
    else:
        names, cursor = ["second", "poll", "forever", "sample"], None
    tools = [types.Tool(name=name, input_schema={"type": "object"}) for name in names]
    return types.ListToolsResult(tools=tools, next_cursor=cursor)


async def _call_paged(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    """``first``/``second``: structured content and no content blocks; ``poll``:
    "still working" once (request state only), then a result; ``forever``:
    always needs more input; ``sample``: asks the client's model."""
    if params.name == "poll" and params.request_state is None:
        return types.InputRequiredResult(request_state="working")
    if params.name == "forever":
        return types.InputRequiredResult(request_state="again")
    if params.name == "sample":
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=[], max_tokens=1)
        )
        return types.InputRequiredResult(input_requests={"s": request})
    return types.CallToolResult(content=[], structured_content={"tool": params.name})


#: A low-level server that lists its tools on two pages.
paged = Server("paged", on_list_tools=_list_paged, on_call_tool=_call_paged)


if __name__ == "__main__":
    server.run("stdio")
