"""Each tool call runs in its own copy of the context, entered before pre-execution.

What ``on_tool_pre_execution`` sets in a context variable is seen by that call's tool
and by nothing after it: not by the caller of ``run()``, not by sibling calls, not by
the events that follow.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    Message,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
)
from langhooks.chain import LLMChain
from langhooks.models import ScriptedChatModel
from tests.chain.scenarios import asks, call, says

TENANT: ContextVar[str] = ContextVar("TENANT", default="unset")


class Seen:
    """What each place saw of TENANT, by call id, thread-safely."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.before_pre: dict[str, str] = {}
        self.in_tool: dict[str, str] = {}
        self.completed: dict[str, str] = {}

    def note(self, where: dict[str, str], call_id: str) -> None:
        with self.lock:
            where[call_id] = TENANT.get()


class SetsTenant(ChainCallbackHandler):
    """Sets TENANT to the call's id in on_tool_pre_execution."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.seen.note(self.seen.before_pre, call.call_id)
        TENANT.set(f"tenant-{call.call_id}")

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.seen.note(self.seen.completed, call.call_id)


class AsyncSetsTenant(AsyncChainCallbackHandler):
    """The async twin of SetsTenant."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    @override
    async def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.seen.note(self.seen.before_pre, call.call_id)
        TENANT.set(f"tenant-{call.call_id}")

    @override
    async def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.seen.note(self.seen.completed, call.call_id)


def tools(seen: Seen, *, concurrent: bool) -> tuple[Tool, Tool]:
    """A sync and an async tool that note TENANT as they run."""

    def sync_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
        seen.note(seen.in_tool, context.call.call_id)
        return "ok"

    async def async_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
        seen.note(seen.in_tool, context.call.call_id)
        return "ok"

    return (
        Tool("sync_tool", sync_tool, concurrent=concurrent),
        Tool("async_tool", async_tool, concurrent=concurrent),
    )


def chain_for(
    handler: ChainCallbackHandler | AsyncChainCallbackHandler,
    seen: Seen,
    *,
    concurrent: bool,
    async_tools: bool = False,
) -> LLMChain:
    """Three calls of one tool kind, then an answer."""
    name = "async_tool" if async_tools else "sync_tool"
    calls = [call(name, "a"), call(name, "b"), call(name, "c")]
    return LLMChain(
        ScriptedChatModel([asks(*calls), says()]),
        tools=tools(seen, concurrent=concurrent),
        callbacks=[handler],
    ).add_message(Message.user("go"))


def assert_isolated(seen: Seen) -> None:
    """Each tool saw its own value; nothing before or after it did."""
    ids = ["a", "b", "c"]
    assert seen.before_pre == dict.fromkeys(ids, "caller")
    assert seen.in_tool == {i: f"tenant-{i}" for i in ids}
    assert seen.completed == dict.fromkeys(ids, "caller")
    assert TENANT.get() == "caller"


@pytest.fixture
def caller_tenant() -> Any:
    """The caller's own TENANT value for the duration of a test."""
    token = TENANT.set("caller")
    yield
    TENANT.reset(token)


@pytest.mark.usefixtures("caller_tenant")
class TestSyncRun:
    """Under run(), sequential and thread-concurrent calls each get a context."""

    @pytest.mark.parametrize("async_tools", [False, True])
    def test_sequential_calls(self, async_tools: bool) -> None:
        """A value set in pre-execution reaches only its own sequential call."""
        seen = Seen()
        chain = chain_for(
            SetsTenant(seen), seen, concurrent=False, async_tools=async_tools
        )
        assert chain.run().status == "ok"
        assert_isolated(seen)

    def test_concurrent_calls_in_threads(self) -> None:
        """A value set in pre-execution reaches only its own worker thread's call."""
        seen = Seen()
        chain = chain_for(SetsTenant(seen), seen, concurrent=True)
        assert chain.run().status == "ok"
        assert_isolated(seen)


@pytest.mark.usefixtures("caller_tenant")
class TestAsyncRun:
    """Under arun(), sequential, task-concurrent and thread-concurrent calls too."""

    @pytest.mark.parametrize("concurrent", [False, True])
    @pytest.mark.parametrize("async_tools", [False, True])
    async def test_async_handler(self, concurrent: bool, async_tools: bool) -> None:
        """An async pre-execution's value stays with its own call's task."""
        seen = Seen()
        chain = chain_for(
            AsyncSetsTenant(seen), seen, concurrent=concurrent, async_tools=async_tools
        )
        assert (await chain.arun()).status == "ok"
        assert_isolated(seen)

    @pytest.mark.parametrize("concurrent", [False, True])
    async def test_sync_handler(self, concurrent: bool) -> None:
        """A sync pre-execution under arun (in the tool's thread when concurrent)."""
        seen = Seen()
        chain = chain_for(SetsTenant(seen), seen, concurrent=concurrent)
        assert (await chain.arun()).status == "ok"
        assert_isolated(seen)
