"""An MCP server's tools as langhooks ``Tool``s, and the human's answer to a
server's question as a ``Decision``."""

from __future__ import annotations

import queue
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import jsonschema
from anyio.from_thread import BlockingPortal
from mcp import ClientSession
from mcp import types as mcp_types

from ..._core._messages import ToolCall, ToolResult
from ..._core._tools import Tool, ToolContext, ToolFunction
from ...chain._decision import Decision
from ._flights import ELICITATION, ELICITATION_KEY, Action, Answer, invoke
from ._results import classified

__all__ = [
    "DEFAULT_ELICITATION_TIMEOUT",
    "amcp_tools",
    "answer_elicitation",
    "mcp_tools",
]

#: Seconds a server's question waits for a human before the call is cancelled.
DEFAULT_ELICITATION_TIMEOUT: Final = 300.0

_NOT_A_NAME: Final = re.compile(r"[^a-zA-Z0-9_-]")


async def _listed(session: ClientSession) -> list[mcp_types.Tool]:
    """Every tool the server lists, page after page."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    while True:
        params = (
            None if cursor is None else mcp_types.PaginatedRequestParams(cursor=cursor)
        )
        try:
            page = await session.list_tools(params=params)
        except Exception as error:
            raise classified(error, "tools/list") from error
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _chosen(
    tools: list[mcp_types.Tool], include: Iterable[str] | None
) -> list[tuple[str, mcp_types.Tool]]:
    """The tools to make, each with the name the model calls it by (the server's,
    with any character a provider refuses as ``_``, at most 64).

    Raises:
        ValueError: ``include`` names a tool the server does not list, or two
            tools would have one name.
    """
    if include is not None:
        if isinstance(include, str):
            raise TypeError(f"include must be tool names, got the str {include!r}")
        wanted = list(include)
        listed = {tool.name for tool in tools}
        unknown = sorted(set(wanted) - listed)
        if unknown:
            raise ValueError(
                f"the MCP server lists no tool {unknown}; it lists {sorted(listed)}"
            )
        tools = [tool for tool in tools if tool.name in wanted]
    named = [(_NOT_A_NAME.sub("_", tool.name)[:64], tool) for tool in tools]
    names = [name for name, _ in named]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(
            f"MCP tools would share the names {twice}: choose some with include="
        )
    return named


def _tool(name: str, listed: mcp_types.Tool, function: ToolFunction) -> Tool:
    return Tool(
        name,
        function,
        description=listed.description or "",
        parameters_schema=listed.input_schema,
        display_text=listed.title,
    )


async def amcp_tools(
    session: ClientSession,
    *,
    include: Iterable[str] | None = None,
    elicitation_timeout: float = DEFAULT_ELICITATION_TIMEOUT,
) -> list[Tool]:
    """The server's tools, for ``LLMChain.arun()`` on the session's event loop.

    Each tool's description and parameter schema are the server's; a call goes to
    ``session.call_tool``, its progress notifications reach ``on_tool_progress``,
    a question the server asks interrupts the run (see ``answer_elicitation``),
    and cancelling the run cancels the request (``notifications/cancelled``).

    Args:
        session: a connected, initialized ``mcp.ClientSession``.
        include: the server's names of the tools to make (default: all).
        elicitation_timeout: seconds a question waits for the human's answer in
            this process before the request is cancelled.

    Returns:
        The tools, in the server's order.

    Raises:
        LangHooksError: listing the tools failed.
        ValueError: see ``include``.
    """
    chosen = _chosen(await _listed(session), include)
    return [
        _tool(name, listed, _async_function(session, listed.name, elicitation_timeout))
        for name, listed in chosen
    ]


def _run_id(context: ToolContext) -> str | None:
    """The id of the run the call belongs to (kept across a resume)."""
    run = None if context.chain is None else context.chain.invocation
    return None if run is None else run.id


def _async_function(
    session: ClientSession, server_tool: str, timeout: float
) -> ToolFunction:
    async def function(
        arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        return await invoke(
            session,
            server_tool,
            context.call,
            _run_id(context),
            context.report_progress,
            timeout,
        )

    function.__name__ = server_tool
    return function


def mcp_tools(
    session: ClientSession,
    *,
    portal: BlockingPortal,
    include: Iterable[str] | None = None,
    elicitation_timeout: float = DEFAULT_ELICITATION_TIMEOUT,
) -> list[Tool]:
    """The server's tools, for ``LLMChain.run()`` in a thread of its own.

    The session is async and bound to its event loop: ``portal`` is the
    ``anyio.from_thread.BlockingPortal`` whose loop runs it (enter the transport
    and the session with ``portal.wrap_async_context_manager``). Each call runs
    there while the calling thread waits and reports its progress; otherwise as
    ``amcp_tools``. Call this from a thread other than the portal's.

    Raises:
        LangHooksError: listing the tools failed.
        ValueError: see ``include``.
    """
    chosen = _chosen(portal.call(_listed, session), include)
    return [
        _tool(
            name,
            listed,
            _sync_function(session, portal, listed.name, elicitation_timeout),
        )
        for name, listed in chosen
    ]


def _sync_function(
    session: ClientSession, portal: BlockingPortal, server_tool: str, timeout: float
) -> ToolFunction:
    def function(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        # The request runs on the portal's loop; its progress comes back here, so
        # it is reported from the tool's own thread (live under run()).
        reports: queue.SimpleQueue[tuple[float, float | None, str | None] | None] = (
            queue.SimpleQueue()
        )

        def report(value: float, total: float | None, message: str | None) -> None:
            reports.put((value, total, message))

        async def call(call: ToolCall) -> ToolResult:
            try:
                return await invoke(session, server_tool, call, run, report, timeout)
            finally:
                reports.put(None)

        run = _run_id(context)
        future = portal.start_task_soon(call, context.call)
        while (item := reports.get()) is not None:
            context.report_progress(*item)
        return future.result()

    function.__name__ = server_tool
    return function


def answer_elicitation(
    call: ToolCall,
    interrupt_data: Mapping[str, Any],
    content: Mapping[str, Any] | None = None,
    *,
    action: Action = "accept",
) -> Decision:
    """The decision that resumes ``call`` with the human's answer to the server's
    question in ``interrupt_data``.

    Pass it to ``execute_tool_calls_with_decisions`` (it is a
    ``Decision.edit`` whose arguments carry the answer under
    ``"_mcp_elicitation"``; the server never sees that key).

    Args:
        call: the waiting call (from ``chain.pending_tool_calls``).
        interrupt_data: the call's interrupt data (``RunResult.interrupt_data``).
        content: the answer, for ``action="accept"``: an object valid against the
            question's ``requested_schema``.
        action: "accept" (answered), "decline" or "cancel" (no content).

    Raises:
        ValueError: the interrupt is not a server's question, or ``content`` is
            not valid against the requested schema (the message says why).
        TypeError: ``content`` is given with "decline" or "cancel", or missing
            with "accept".
    """
    if interrupt_data.get("kind") != ELICITATION:
        raise ValueError(
            f"interrupt_data is not an MCP server's question (kind "
            f"{interrupt_data.get('kind')!r}): decide it with Decision.approve(), "
            f"Decision.edit() or Decision.reject()"
        )
    schema = interrupt_data["requested_schema"]
    if action not in ("accept", "decline", "cancel"):
        raise ValueError(f"action must be accept, decline or cancel, got {action!r}")
    if (content is None) == (action == "accept"):
        raise TypeError(
            "content goes with action 'accept' and only with it"
            f" (action {action!r}, content {content!r})"
        )
    if content is not None:
        try:
            jsonschema.validate(dict(content), schema)
        except jsonschema.ValidationError as error:
            raise ValueError(
                f"the answer does not fit the requested schema: {error.message}"
            ) from None
    answer = Answer(
        message=interrupt_data["message"],
        requested_schema=schema,
        action=action,
        content=content,
    )
    answers = [*interrupt_data.get("answers", ()), answer.as_data()]
    return Decision.edit({**call.arguments, ELICITATION_KEY: answers})
