"""The core every framework bridge fires events through (``FrameworkRun``): the
contract's guarantees hold whatever a framework reports."""

from __future__ import annotations

import asyncio

from langhooks import Invocation, ToolCall
from langhooks.integrations._bridging._chain import FrameworkModel, stand_in_tool
from langhooks.integrations._bridging._run import BridgeHandlers, FrameworkRun
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler


def bridged(*handlers: object) -> FrameworkRun:
    return FrameworkRun(
        BridgeHandlers(handlers, "test"),
        tools=[stand_in_tool("add", "Add.", None)],
        invocation=Invocation(name="run"),
        model=FrameworkModel("m", "test"),
    )


class TestTerminal:
    """Exactly one terminal call, nothing after it."""

    def test_complete_twice_and_fail_after(self) -> None:
        """A second ``complete`` and a later ``fail`` fire nothing."""
        recorder = RecordingChainHandler()
        run = bridged(recorder)

        async def main() -> None:
            await run.start()
            await run.start()
            await run.complete()
            await run.complete()
            error = await run.fail(RuntimeError("late"))
            assert error.type == "stream_error"

        asyncio.run(main())
        assert recorder.names == ["on_run_start", "on_run_complete"]


class TestUnknown:
    """What a framework reports beyond the bridge's knowledge is handled."""

    def test_a_tool_the_bridge_does_not_know(self) -> None:
        """No review (the framework answers it), no started or pre-execution."""
        recorder = RecordingChainHandler()
        run = bridged(recorder)
        call = ToolCall(call_id="x", name="other", arguments={})

        async def main() -> None:
            assert await run.review(call) is None
            await run.tool_started(call)
            await run.tool_pre_execution(call)

        asyncio.run(main())
        assert recorder.names == []

    def test_text_outside_a_model_call(self) -> None:
        """Partials a framework streams before announcing the call still arrive."""
        stream = RecordingStreamingHandler()
        run = bridged(stream)
        asyncio.run(run.text("hi"))
        assert stream.names == ["on_partial_response"]
