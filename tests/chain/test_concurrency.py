"""Concurrent tools, async runs and the invocation context of each event."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    Invocation,
    Message,
    MessageDelta,
    ReviewContext,
    ReviewDecision,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    UpdateArguments,
    current_invocation,
)
from langhooks.chain import LLMChain, RunResult
from langhooks.models import ScriptedChatModel
from langhooks.testing import RecordingChainHandler
from tests.chain.scenarios import asks, call, collapse, make_chain, says


class WhereHandler(ChainCallbackHandler):
    """Notes the thread, the current invocation and the snapshot's invocation."""

    def __init__(self) -> None:
        self.pre: list[tuple[str, int, Invocation | None, Invocation | None]] = []
        self.others: list[tuple[str, Invocation | None, Invocation | None]] = []
        self.lock = threading.Lock()

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        with self.lock:
            self.pre.append(
                (
                    call.call_id,
                    threading.get_ident(),
                    current_invocation(),
                    chain.invocation,
                )
            )

    @override
    def on_tool_execution_started(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.others.append(("started", current_invocation(), chain.invocation))


class TestConcurrentThreads:
    """Concurrent sync tools run together in worker threads under run()."""

    def test_tools_overlap_and_keep_call_order(self) -> None:
        """Three tools meet at a barrier (so they overlap); results keep call order."""
        barrier = threading.Barrier(3, timeout=10)
        threads: dict[str, int] = {}
        seen_invocations: dict[str, Invocation | None] = {}

        def meet(arguments: Mapping[str, Any], context: ToolContext) -> str:
            barrier.wait()  # only returns once all three run at the same time
            threads[context.call.call_id] = threading.get_ident()
            seen_invocations[context.call.call_id] = current_invocation()
            return f"met {context.call.call_id}"

        tool = Tool("meet", meet, concurrent=True)
        where = WhereHandler()
        recorder = RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel(
                [asks(call("meet", "a"), call("meet", "b"), call("meet", "c")), says()]
            ),
            tools=[tool],
            callbacks=[recorder, where],
        ).add_message(Message.user("go"))
        result = chain.run()
        tool_message = result.chain.messages[2]
        assert [r.text for r in tool_message.tool_results] == [
            "met a",
            "met b",
            "met c",
        ]
        main = threading.get_ident()
        assert main not in set(threads.values())
        assert len(set(threads.values())) == 3
        for call_id, thread, current, run_invocation in where.pre:
            assert thread == threads[call_id]
            assert current is seen_invocations[call_id]
            assert current is not None
            assert run_invocation is not None
            assert current.name == "meet"
            assert current.parent_id == run_invocation.id
        # Handlers other than pre-execution run without an invocation.
        assert where.others
        assert all(current is None for _, current, _ in where.others)
        summary = collapse(recorder.summary())
        started = summary.index("on_tool_execution_started meet x3")
        assert summary[started + 1 : started + 2] == ["on_tool_pre_execution meet x3"]
        assert summary[started + 2] == "on_tool_execution_completed meet x3"
        completed = [
            args[1].call_id for args in recorder.of("on_tool_execution_completed")
        ]
        assert completed == ["a", "b", "c"]

    def test_sync_tools_run_after_concurrent_ones_in_order(self) -> None:
        """Concurrent tools go first; the others follow one by one in call order."""
        order: list[str] = []

        def note(arguments: Mapping[str, Any], context: ToolContext) -> str:
            order.append(context.call.call_id)
            return "ok"

        chain, _ = make_chain(
            [
                asks(
                    call("slow", "1"),
                    call("fast", "2"),
                    call("slow", "3"),
                    call("fast", "4"),
                ),
                says(),
            ],
            tools=(Tool("slow", note), Tool("fast", note, concurrent=True)),
        )
        result = chain.run()
        assert order[2:] == ["1", "3"]
        assert sorted(order[:2]) == ["2", "4"]
        ids = [r.tool_call_id for r in result.chain.messages[2].tool_results]
        assert ids == ["1", "2", "3", "4"]


class AsyncRecorder(AsyncChainCallbackHandler):
    """An async handler noting event names and the snapshot's invocation id."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.invocation_ids: set[str | None] = set()
        self.current: set[Invocation | None] = set()

    def _note(self, name: str, chain: LLMChain) -> None:
        self.names.append(name)
        self.invocation_ids.add(
            None if chain.invocation is None else chain.invocation.id
        )
        self.current.add(current_invocation())

    @override
    async def on_run_start(self, chain: LLMChain) -> None:
        self._note("on_run_start", chain)

    @override
    async def on_llm_new_delta(
        self, chain: LLMChain, deltas: Sequence[MessageDelta]
    ) -> None:
        await asyncio.sleep(0)
        self._note("on_llm_new_delta", chain)

    @override
    async def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        self._note("on_tool_call_review", chain)
        return UpdateArguments({"n": 2})

    @override
    async def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.names.append("on_tool_pre_execution")

    @override
    async def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._note("on_tool_execution_completed", chain)

    @override
    async def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self._note("on_run_complete", chain)


class TestAsyncRuns:
    """arun awaits async handlers and runs concurrent tools as tasks."""

    async def test_async_handlers_and_review(self) -> None:
        """Async and sync handlers see the same order; async review rewrites."""
        seen: list[Mapping[str, Any]] = []

        async def double(arguments: Mapping[str, Any], context: ToolContext) -> str:
            seen.append(dict(arguments))
            return str(arguments["n"] * 2)

        handler = AsyncRecorder()
        recorder = RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel([asks(call("double", n=1)), says("4")]),
            tools=[Tool("double", double)],
            callbacks=[handler, recorder],
        ).add_message(Message.user("go"))
        result = await chain.arun()
        assert result.status == "ok"
        assert seen == [{"n": 2}]
        assert [n for n in recorder.names if n in handler.names] == handler.names
        assert handler.current == {None}
        assert len(handler.invocation_ids) == 1

    async def test_async_tools_overlap_as_tasks(self) -> None:
        """Concurrent async tools wait for each other, so they run as tasks."""
        arrived = 0
        everyone = asyncio.Event()
        tasks: set[asyncio.Task[Any] | None] = set()

        async def meet(arguments: Mapping[str, Any], context: ToolContext) -> str:
            nonlocal arrived
            arrived += 1
            if arrived == 3:
                everyone.set()
            await asyncio.wait_for(everyone.wait(), timeout=10)
            tasks.add(asyncio.current_task())
            invocation = current_invocation()
            assert invocation is not None
            return invocation.name

        chain, recorder = make_chain(
            [asks(call("meet", "a"), call("meet", "b"), call("meet", "c")), says()],
            tools=(Tool("meet", meet, concurrent=True),),
        )
        result = await chain.arun()
        assert [r.text for r in result.chain.messages[2].tool_results] == ["meet"] * 3
        assert len(tasks) == 3
        assert "on_tool_pre_execution meet x3" in collapse(recorder.summary())

    async def test_concurrent_sync_tools_use_threads_under_arun(self) -> None:
        """Concurrent sync tools run in threads under arun, with pre-execution
        (of sync handlers) in the same thread and the tool's invocation current."""
        barrier = threading.Barrier(2, timeout=10)
        main = threading.get_ident()
        threads: dict[str, int] = {}

        def meet(arguments: Mapping[str, Any], context: ToolContext) -> str:
            barrier.wait()
            threads[context.call.call_id] = threading.get_ident()
            assert current_invocation() is context.invocation
            return "ok"

        where = WhereHandler()
        chain, _ = make_chain(
            [asks(call("meet", "a"), call("meet", "b")), says()],
            tools=(Tool("meet", meet, concurrent=True),),
        )
        assert (await chain.add_callback(where).arun()).status == "ok"
        assert main not in threads.values()
        assert len(set(threads.values())) == 2
        for call_id, thread, current, run_invocation in where.pre:
            assert thread == threads[call_id]
            assert current is not None
            assert run_invocation is not None
            assert current.parent_id == run_invocation.id

    async def test_concurrent_sync_tools_with_an_async_handler(self) -> None:
        """With an async handler, pre-execution runs in the tool's task instead."""
        barrier = threading.Barrier(2, timeout=10)
        main = threading.get_ident()
        threads: list[int] = []

        def meet(arguments: Mapping[str, Any], context: ToolContext) -> str:
            barrier.wait()
            threads.append(threading.get_ident())
            assert current_invocation() is context.invocation
            return "ok"

        handler = AsyncRecorder()
        chain, _ = make_chain(
            [asks(call("meet", "a"), call("meet", "b")), says()],
            tools=(Tool("meet", meet, concurrent=True),),
        )
        assert (await chain.add_callback(handler).arun()).status == "ok"
        assert main not in threads
        assert len(set(threads)) == 2
        assert handler.names.count("on_tool_pre_execution") == 2

    async def test_awaitable_of_a_concurrent_sync_tool_is_awaited(self) -> None:
        """A sync function returning an awaitable, run in a worker thread beside an
        async handler: its awaitable is awaited in the loop, in the tool's
        invocation."""
        seen: list[Invocation | None] = []

        async def answer(text: str) -> str:
            seen.append(current_invocation())
            return text

        def later(arguments: Mapping[str, Any], context: ToolContext) -> Awaitable[str]:
            return answer(f"later {context.call.call_id}")

        chain, _ = make_chain(
            [asks(call("later", "a"), call("later", "b")), says()],
            tools=(Tool("later", later, concurrent=True),),
        )
        result = await chain.add_callback(AsyncRecorder()).arun()
        assert result.status == "ok"
        assert [r.text for r in result.chain.messages[2].tool_results] == [
            "later a",
            "later b",
        ]
        assert len(seen) == 2
        assert all(current is not None for current in seen)

    async def test_sequential_tools_under_arun(self) -> None:
        """Non-concurrent sync and async tools run inline, in call order."""
        order: list[str] = []

        def sync_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
            order.append("sync")
            return "s"

        async def async_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
            order.append("async")
            return "a"

        chain, _ = make_chain(
            [asks(call("s", "1"), call("a", "2"), call("s", "3")), says()],
            tools=(Tool("s", sync_tool), Tool("a", async_tool)),
        )
        assert (await chain.arun()).status == "ok"
        assert order == ["sync", "async", "sync"]

    async def test_fifty_runs_without_cross_talk(self) -> None:
        """Fifty concurrent aruns: each handler sees only its own run."""

        def echo(arguments: Mapping[str, Any], context: ToolContext) -> str:
            invocation = context.invocation
            assert invocation is not None
            return str(invocation.parent_id)

        chains: list[tuple[LLMChain, AsyncRecorder, RecordingChainHandler]] = []
        for number in range(50):
            handler = AsyncRecorder()
            recorder = RecordingChainHandler()
            chain = LLMChain(
                ScriptedChatModel(
                    [asks(call("echo", f"c{number}")), says(f"run {number}")]
                ),
                tools=[Tool("echo", echo, concurrent=number % 2 == 0)],
                callbacks=[handler, recorder],
            ).add_message(Message.user(str(number)))
            chains.append((chain, handler, recorder))
        results = await asyncio.gather(*(chain.arun() for chain, _, _ in chains))
        run_ids = set()
        for number, (result, (_, handler, recorder)) in enumerate(
            zip(results, chains, strict=True)
        ):
            assert result.status == "ok"
            assert result.chain.messages[-1].text == f"run {number}"
            assert len(handler.invocation_ids) == 1
            (run_id,) = handler.invocation_ids
            run_ids.add(run_id)
            assert result.chain.messages[2].tool_results[0].text == run_id
            ids = {args[0].invocation.id for _, args in recorder.events}
            assert ids == {run_id}
            calls = [
                args[1].call_id for args in recorder.of("on_tool_execution_started")
            ]
            assert calls == [f"c{number}"]
        assert len(run_ids) == 50

    async def test_nested_run_from_a_tool_is_a_child(self) -> None:
        """A run started inside a tool is a child of the tool's invocation."""
        pairs: list[tuple[str | None, str]] = []

        async def delegate(arguments: Mapping[str, Any], context: ToolContext) -> str:
            inner, _ = make_chain([says("inner")])
            result = await inner.arun()
            assert result.chain.invocation is not None
            assert context.invocation is not None
            pairs.append((result.chain.invocation.parent_id, context.invocation.id))
            return "delegated"

        chain, _ = make_chain(
            [asks(call("delegate")), says()], tools=(Tool("delegate", delegate),)
        )
        assert (await chain.arun()).status == "ok"
        ((parent, tool_invocation),) = pairs
        assert parent == tool_invocation


class TestRunFromHandler:
    """A run started from a handler is a fresh root run."""

    def test_handler_run_is_a_root(self) -> None:
        """HandlerWithoutInvocation makes a nested run's invocation a root."""
        parents: list[str | None] = []

        class Starter(ChainCallbackHandler):
            @override
            def on_run_start(self, chain: LLMChain) -> None:
                if chain.custom_context.get("outer"):
                    inner, _ = make_chain([says("inner")])
                    result = inner.run()
                    assert result.chain.invocation is not None
                    parents.append(result.chain.invocation.parent_id)

        chain = LLMChain(
            ScriptedChatModel([says()]),
            callbacks=[Starter()],
            custom_context={"outer": True},
        )
        assert chain.run().status == "ok"
        assert parents == [None]
