"""A raising handler ends the run with one on_error, unless it is isolated."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    LangHooksError,
    MessageDelta,
    ReviewContext,
    ReviewDecision,
    Tool,
    ToolCall,
    ToolContext,
    isolate,
)
from langhooks.chain import LLMChain, RunResult
from langhooks.testing import RecordingChainHandler
from tests.chain.scenarios import asks, call, make_chain, says

RAN: list[str] = []


def tracked(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that notes that it ran."""
    RAN.append(context.call.call_id)
    return "ran"


TRACKED = Tool("get_weather", tracked)
CONCURRENT = Tool("get_weather", tracked, concurrent=True)


class Faulty(ChainCallbackHandler):
    """Raises in one chosen event."""

    def __init__(self, event: str) -> None:
        self.event = event

    def _maybe(self, event: str) -> None:
        if event == self.event:
            raise RuntimeError(f"bug in {event}")

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        self._maybe("on_run_start")

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        self._maybe("on_llm_new_delta")

    @override
    def on_tool_call_identified(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._maybe("on_tool_call_identified")

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        self._maybe("on_tool_call_review")
        if self.event == "bad_review":
            return "yes"  # type: ignore[return-value]
        return None

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._maybe("on_tool_pre_execution")

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: Any
    ) -> None:
        self._maybe("on_tool_execution_completed")

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        self._maybe("on_run_complete")

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._maybe("on_error")


def faulty_run(
    event: str, *, isolated: bool = False, tool: Tool = TRACKED
) -> tuple[RunResult, RecordingChainHandler]:
    """Run a one-tool conversation with a handler raising in ``event``."""
    RAN.clear()
    faulty = Faulty(event)
    chain, recorder = make_chain(
        [asks(call("get_weather", "a"), call("get_weather", "b")), says()],
        tools=(tool,),
    )
    chain = LLMChain(
        chain.model,
        tools=chain.tools,
        messages=chain.messages,
        callbacks=[isolate(faulty) if isolated else faulty, recorder],
        retry=chain.retry,
    )
    return chain.run(), recorder


EVENTS = [
    "on_run_start",
    "on_llm_new_delta",
    "on_tool_call_identified",
    "on_tool_call_review",
    "on_tool_pre_execution",
    "on_tool_execution_completed",
    "on_run_complete",
]


class TestRaisingHandler:
    """Without isolate, a handler's exception ends the run."""

    @pytest.mark.parametrize("event", EVENTS)
    def test_one_on_error_with_the_original(self, event: str) -> None:
        """The run ends with one handler_error whose original is the exception."""
        result, recorder = faulty_run(event)
        assert result.status == "error"
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert isinstance(result.error.original, RuntimeError)
        assert str(result.error.original) == f"bug in {event}"
        assert event in str(result.error)
        assert recorder.names.count("on_error") == 1
        assert recorder.names[-1] == "on_error"

    def test_review_fault_aborts_before_any_tool_runs(self) -> None:
        """A raising reviewer stops the batch: no call runs, none is announced."""
        _, recorder = faulty_run("on_tool_call_review")
        assert RAN == []
        assert "on_tool_execution_started" not in recorder.names

    def test_a_bad_review_value_is_a_handler_error(self) -> None:
        """A reviewer returning something else than a decision is a handler_error."""
        result, _ = faulty_run("bad_review")
        assert result.error is not None
        assert isinstance(result.error.original, TypeError)
        assert RAN == []

    def test_concurrent_pre_execution_fault(self) -> None:
        """A fault in a worker's pre-execution ends the run after the workers."""
        result, recorder = faulty_run("on_tool_pre_execution", tool=CONCURRENT)
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert "on_tool_execution_completed" not in recorder.names

    def test_on_error_fault_propagates(self) -> None:
        """A handler raising inside on_error itself raises out of run()."""

        class Both(Faulty):
            @override
            def on_run_start(self, chain: LLMChain) -> None:
                raise KeyError("first")

        chain, _ = make_chain([says()])
        chain = chain.add_callback(Both("on_error"))
        with pytest.raises(RuntimeError, match="bug in on_error"):
            chain.run()


class TestIsolatedHandler:
    """isolate(handler) logs the exception and the run goes on."""

    @pytest.mark.parametrize("event", EVENTS)
    def test_run_goes_on(self, event: str, caplog: pytest.LogCaptureFixture) -> None:
        """The run ends normally and the exception is logged with its traceback."""
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            result, recorder = faulty_run(event, isolated=True)
        assert "on_error" not in recorder.names
        assert any(record.exc_info for record in caplog.records)
        if event == "on_tool_call_review":
            # A failed review denies the call rather than letting it through.
            assert RAN == []
            assert result.status == "ok"
        else:
            assert result.status == "ok"
            assert RAN == ["a", "b"]


class AsyncFaulty(AsyncChainCallbackHandler):
    """An async handler raising in one chosen event."""

    def __init__(self, event: str) -> None:
        self.event = event

    @override
    async def on_llm_new_delta(
        self, chain: LLMChain, deltas: Sequence[MessageDelta]
    ) -> None:
        if self.event == "on_llm_new_delta":
            raise RuntimeError("async bug")

    @override
    async def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        if self.event == "on_tool_pre_execution":
            raise RuntimeError("async bug")

    @override
    async def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        if self.event == "on_error":
            raise RuntimeError("async on_error bug")


class TestAsyncFaults:
    """arun treats handler faults the same way."""

    @pytest.mark.parametrize("event", ["on_llm_new_delta", "on_tool_pre_execution"])
    @pytest.mark.parametrize("tool", [TRACKED, CONCURRENT])
    async def test_handler_error(self, event: str, tool: Tool) -> None:
        """An async handler's exception ends the run with one handler_error."""
        chain, recorder = make_chain(
            [asks(call("get_weather", "a")), says()], tools=(tool,)
        )
        result = await chain.add_callback(AsyncFaulty(event)).arun()
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert recorder.names.count("on_error") == 1

    async def test_on_error_fault_propagates(self) -> None:
        """A raising async on_error raises out of arun()."""
        chain, _ = make_chain([LangHooksError("authentication", "bad key")])
        with pytest.raises(RuntimeError, match="async on_error bug"):
            await chain.add_callback(AsyncFaulty("on_error")).arun()
