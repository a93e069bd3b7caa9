"""``ToolContext.report_progress``: a running tool's progress reaches every chain
handler as ``on_tool_progress``, in the order reported, on the run's own thread or
task, between the call's ``on_tool_execution_started`` and its result."""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    Message,
    Tool,
    ToolCall,
    ToolContext,
    ToolProgress,
)
from langhooks.chain import LLMChain
from langhooks.models import ScriptedChatModel
from langhooks.testing import RecordingChainHandler
from tests.chain.scenarios import asks, call, says


def counting(steps: int = 3) -> Tool:
    """A sync tool reporting ``steps`` steps, each with a message."""

    def count(arguments: Mapping[str, Any], context: ToolContext) -> str:
        for step in range(1, steps + 1):
            context.report_progress(step, steps, f"step {step}")
        return "counted"

    return Tool("count", count)


def acounting(steps: int = 3) -> Tool:
    """An async tool reporting ``steps`` steps, yielding to the loop between."""

    async def count(arguments: Mapping[str, Any], context: ToolContext) -> str:
        for step in range(1, steps + 1):
            context.report_progress(step, steps, f"step {step}")
            await asyncio.sleep(0)
        return "counted"

    return Tool("acount", count)


def chain_with(tools: list[Tool], calls: list[ToolCall], *handlers: Any) -> LLMChain:
    return LLMChain(
        ScriptedChatModel([asks(*calls), says()]), tools=tools, callbacks=handlers
    ).add_message(Message.user("Go."))


def tool_events(recording: RecordingChainHandler) -> list[str]:
    """The tool events, with each progress report's message."""
    out: list[str] = []
    for name, args in recording.events:
        if name == "on_tool_progress":
            out.append(f"progress {args[1].call_id} {args[2].message}")
        elif name in ("on_tool_execution_started", "on_tool_execution_completed"):
            out.append(f"{name.removeprefix('on_tool_')} {args[1].call_id}")
    return out


class TestToolProgress:
    def test_value(self) -> None:
        """ToolProgress holds numbers as floats and checks its fields."""
        assert ToolProgress(1, 4, "a") == ToolProgress(1.0, 4.0, "a")
        assert ToolProgress(0.5).total is None
        with pytest.raises(TypeError, match="progress must be a number"):
            ToolProgress("1")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="progress must be a number"):
            ToolProgress(True)
        with pytest.raises(ValueError, match="total must be finite"):
            ToolProgress(1, float("inf"))
        with pytest.raises(TypeError, match="message"):
            ToolProgress(1, None, 3)  # type: ignore[arg-type]

    def test_pickles(self) -> None:
        """A ToolProgress survives pickling, as every value type does."""
        report = ToolProgress(2, 5, "two")
        assert pickle.loads(pickle.dumps(report)) == report

    def test_outside_a_run_it_does_nothing(self) -> None:
        """A context without a sink (a tool called directly) ignores reports, but
        still checks them."""
        context = ToolContext(call=call("count"))
        context.report_progress(1, 2, "half")
        with pytest.raises(TypeError):
            context.report_progress("x")  # type: ignore[arg-type]

    def test_sink_is_not_part_of_the_value(self) -> None:
        """Two contexts that differ only in their sink are equal."""
        context = ToolContext(call=call("count"))
        assert attrs.evolve(context, progress_sink=lambda _: None) == context


class TestRun:
    def test_sequential_tool_is_live(self) -> None:
        """Under run(), a tool on the run's thread has each report delivered before
        report_progress returns, between started and completed."""
        recording = RecordingChainHandler()
        heard: list[int] = []

        def count(arguments: Mapping[str, Any], context: ToolContext) -> str:
            for step in (1, 2, 3):
                context.report_progress(step, 3)
                heard.append(len(recording.of("on_tool_progress")))
            return "counted"

        chain = chain_with([Tool("count", count)], [call("count")], recording)
        assert chain.run().status == "ok"
        assert heard == [1, 2, 3]
        progress = [args[2] for args in recording.of("on_tool_progress")]
        assert progress == [ToolProgress(step, 3) for step in (1, 2, 3)]
        assert set(recording.threads) == {threading.get_ident()}

    def test_concurrent_tools_report_on_the_run_thread(self) -> None:
        """Concurrent tools report from worker threads; handlers hear each call's
        reports in order, on the run's thread, before the call's result."""
        recording = RecordingChainHandler()
        tool = attrs.evolve(counting(5), concurrent=True)
        calls = [call("count", f"c{n}") for n in range(3)]
        assert chain_with([tool], calls, recording).run().status == "ok"
        events = tool_events(recording)
        for n in range(3):
            mine = [e for e in events if e.split()[1] == f"c{n}"]
            assert mine == [
                f"execution_started c{n}",
                *(f"progress c{n} step {s}" for s in range(1, 6)),
                f"execution_completed c{n}",
            ]
        progress_threads = {
            thread
            for (name, _), thread in zip(
                recording.events, recording.threads, strict=True
            )
            if name == "on_tool_progress"
        }
        assert progress_threads == {threading.get_ident()}

    def test_a_thread_the_tool_starts(self) -> None:
        """Reports from a thread the tool starts (and joins) are delivered on the
        run's thread, in order, before the call's result."""
        recording = RecordingChainHandler()

        def helper(arguments: Mapping[str, Any], context: ToolContext) -> str:
            worker = threading.Thread(
                target=lambda: context.report_progress(1, 3, "step 1")
            )
            worker.start()
            worker.join()
            context.report_progress(2, 3, "step 2")
            worker = threading.Thread(
                target=lambda: context.report_progress(3, 3, "step 3")
            )
            worker.start()
            worker.join()
            return "helped"

        chain = chain_with([Tool("helper", helper)], [call("helper")], recording)
        assert chain.run().status == "ok"
        assert tool_events(recording) == [
            "execution_started call_1",
            "progress call_1 step 1",
            "progress call_1 step 2",
            "progress call_1 step 3",
            "execution_completed call_1",
        ]
        assert set(recording.threads) == {threading.get_ident()}

    def test_async_tool_under_run(self) -> None:
        """An async tool under run() reports like a sync one."""
        recording = RecordingChainHandler()
        chain = chain_with([acounting()], [call("acount")], recording)
        assert chain.run().status == "ok"
        assert tool_events(recording) == [
            "execution_started call_1",
            "progress call_1 step 1",
            "progress call_1 step 2",
            "progress call_1 step 3",
            "execution_completed call_1",
        ]

    def test_a_raising_handler_ends_the_run(self) -> None:
        """A handler raising in on_tool_progress ends the run with handler_error
        after the call; the call's later reports are not delivered."""

        class Raises(ChainCallbackHandler):
            @override
            def on_tool_progress(
                self, chain: LLMChain, call: ToolCall, progress: ToolProgress
            ) -> None:
                raise ValueError("no progress please")

        recording = RecordingChainHandler()
        result = chain_with([counting()], [call("count")], Raises(), recording).run()
        assert result.status == "error"
        assert result.error.type == "handler_error"
        assert "on_tool_progress" in result.error.message
        assert len(recording.of("on_tool_progress")) == 0

    def test_a_report_after_the_call_ended_raises(self) -> None:
        """A thread the tool left running cannot report once the call is over."""
        contexts: list[ToolContext] = []

        def keep(arguments: Mapping[str, Any], context: ToolContext) -> str:
            contexts.append(context)
            return "kept"

        chain = chain_with([Tool("keep", keep)], [call("keep")])
        assert chain.run().status == "ok"
        with pytest.raises(RuntimeError, match="after the tool call ended"):
            contexts[0].report_progress(1)


class AsyncRecorder(AsyncChainCallbackHandler):
    """Records progress messages and the thread each was heard on."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str | None, int]] = []

    @override
    async def on_tool_progress(
        self, chain: LLMChain, call: ToolCall, progress: ToolProgress
    ) -> None:
        await asyncio.sleep(0)
        self.heard.append((call.call_id, progress.message, threading.get_ident()))


class TestArun:
    async def test_async_tool(self) -> None:
        """Under arun(), an async tool's reports reach async and sync handlers in
        order, before the call's result."""
        recording, heard = RecordingChainHandler(), AsyncRecorder()
        chain = chain_with([acounting()], [call("acount")], recording, heard)
        assert (await chain.arun()).status == "ok"
        assert tool_events(recording)[1:4] == [
            f"progress call_1 step {s}" for s in (1, 2, 3)
        ]
        assert [m for _, m, _ in heard.heard] == ["step 1", "step 2", "step 3"]

    async def test_concurrent_sync_tools_in_threads(self) -> None:
        """Concurrent sync tools report from worker threads; handlers hear them on
        the loop's thread, each call's in order."""
        heard = AsyncRecorder()
        tool = attrs.evolve(counting(4), concurrent=True)
        calls = [call("count", f"c{n}") for n in range(3)]
        assert (await chain_with([tool], calls, heard).arun()).status == "ok"
        for n in range(3):
            mine = [m for c, m, _ in heard.heard if c == f"c{n}"]
            assert mine == [f"step {s}" for s in range(1, 5)]
        assert {t for _, _, t in heard.heard} == {threading.get_ident()}

    async def test_sequential_sync_tool(self) -> None:
        """A sync tool that blocks the loop has its reports delivered when it
        returns, still before its result."""
        recording = RecordingChainHandler()
        chain = chain_with([counting()], [call("count")], recording, AsyncRecorder())
        assert (await chain.arun()).status == "ok"
        assert tool_events(recording) == [
            "execution_started call_1",
            "progress call_1 step 1",
            "progress call_1 step 2",
            "progress call_1 step 3",
            "execution_completed call_1",
        ]

    async def test_a_raising_async_handler_ends_the_run(self) -> None:
        """An async handler raising in on_tool_progress ends the run."""

        class Raises(AsyncChainCallbackHandler):
            @override
            async def on_tool_progress(
                self, chain: LLMChain, call: ToolCall, progress: ToolProgress
            ) -> None:
                raise ValueError("no progress please")

        result = await chain_with([acounting()], [call("acount")], Raises()).arun()
        assert result.status == "error"
        assert result.error.type == "handler_error"

    async def test_cancelling_the_run_cancels_the_tool(self) -> None:
        """Cancelling arun() while a tool runs cancels the tool's task."""
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def wait(arguments: Mapping[str, Any], context: ToolContext) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "never"

        run = asyncio.ensure_future(
            chain_with([Tool("wait", wait)], [call("wait")]).arun()
        )
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert cancelled.is_set()
