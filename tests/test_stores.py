"""MemoryRunStore: the in-process run store, and the checks every store shares."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest
from typing_extensions import override

import langhooks as lh
from langhooks._persist._log import Known
from langhooks.chain import Decision, LLMChain, Tool
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore, PendingRun, RunStore


class AskFirst(lh.ChainCallbackHandler):
    """Every call waits for a human."""

    @override
    def on_tool_call_review(
        self,
        chain: LLMChain,
        call: lh.ToolCall,
        tool: lh.Tool,
        review: lh.ReviewContext,
    ) -> lh.ReviewDecision | None:
        if review.human_decision is None:
            return lh.Interrupt("May I?", {"tool": call.name})
        return None


def _tool(ran: list[str]) -> Tool:
    def book(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
        ran.append(context.call.call_id)
        return f"booked {arguments['people']}"

    return Tool("book", book)


def _waiting(tool: Tool) -> LLMChain:
    call = lh.ToolCall(call_id="call_1", name="book", arguments={"people": 4})
    model = ScriptedChatModel([ScriptedTurn(tool_calls=[call])])
    chain = LLMChain(model, tools=[tool], callbacks=[AskFirst()])
    result = chain.add_message(lh.Message.user("a table")).run()
    assert result.status == "interrupted"
    return result.chain


def _answer() -> ScriptedChatModel:
    return ScriptedChatModel([ScriptedTurn(text="Booked.")])


class TestMemoryRunStore:
    def test_is_a_run_store(self) -> None:
        """MemoryRunStore satisfies the RunStore protocol."""
        assert isinstance(MemoryRunStore(), RunStore)

    def test_concurrent_resumes_run_the_tool_once(self) -> None:
        """Eight threads resuming one run: one runs the tool, seven get conflict."""
        ran: list[str] = []
        tool = _tool(ran)
        store = MemoryRunStore()
        run_id = store.save(_waiting(tool))
        outcomes: list[str] = []
        barrier = threading.Barrier(8)

        def resume() -> None:
            barrier.wait()
            try:
                result = store.resume(
                    run_id, [Decision.approve()], _answer(), tools=[tool]
                )
                outcomes.append(result.status)
            except lh.LangHooksError as error:
                outcomes.append(error.type)

        threads = [threading.Thread(target=resume) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["conflict"] * 7 + ["ok"]
        assert ran == ["call_1"]

    def test_pending_lists_the_inbox(self) -> None:
        """pending() lists waiting runs with their calls, filtered by metadata."""
        store = MemoryRunStore()
        run_id = store.save(_waiting(_tool([])), metadata={"tenant": "a"})
        (row,) = store.pending(metadata={"tenant": "a"})
        assert isinstance(row, PendingRun)
        assert row.run_id == run_id
        assert [call.call_id for call in row.calls] == ["call_1"]
        assert store.pending(metadata={"tenant": "b"}) == []


def _waiting_on(tool: Tool, *dos: str) -> LLMChain:
    calls = [
        lh.ToolCall(call_id=f"call_{n}", name=tool.name, arguments={"do": do})
        for n, do in enumerate(dos, 1)
    ]
    model = ScriptedChatModel([ScriptedTurn(tool_calls=calls)])
    result = (
        LLMChain(model, tools=[tool], callbacks=[AskFirst()])
        .add_message(lh.Message.user("go"))
        .run()
    )
    assert result.status == "interrupted"
    return result.chain


def _results(result: lh.chain.RunResult) -> dict[str, lh.ToolResult]:
    return {
        r.tool_call_id: r
        for message in result.chain.messages
        for r in message.tool_results
    }


class TestCallRecords:
    """What a resume records of each call, and what a later resume reuses."""

    def test_async_tool_through_a_sync_store(self) -> None:
        """An async tool resumed by a sync store is recorded once its awaitable
        finishes, also when it raises."""
        ran: list[str] = []

        async def act(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
            ran.append(context.call.call_id)
            if arguments["do"] == "fail":
                raise ValueError("no table")
            return "booked"

        tool = Tool("act", act)
        store = MemoryRunStore()
        run_id = store.save(_waiting_on(tool, "ok", "fail"))
        result = store.resume(run_id, [Decision.approve()] * 2, _answer(), tools=[tool])
        results = _results(result)
        assert results["call_1"].text == "booked"
        assert "ValueError: no table" in results["call_2"].text
        assert ran == ["call_1", "call_2"]

    def test_the_chain_a_resume_returns_runs_plain_tools(self) -> None:
        """After the resume, its result's chain runs its tools without the store
        (the claim is over)."""
        ran: list[str] = []
        tool = _tool(ran)
        store = MemoryRunStore()
        run_id = store.save(_waiting(tool))
        more = lh.ToolCall(call_id="call_2", name="book", arguments={"people": 2})
        model = ScriptedChatModel(
            [ScriptedTurn(tool_calls=[more]), ScriptedTurn(text="Done.")]
        )
        result = store.resume(
            run_id, [Decision.approve()], model, tools=[tool], continue_run=False
        )
        assert result.chain.run().status == "ok"
        assert ran == ["call_1", "call_2"]

    def test_a_run_deleted_mid_resume(self, caplog: pytest.LogCaptureFixture) -> None:
        """A run deleted while it is resumed: the heartbeat sees the claim gone,
        later calls are refused (error results), and the resume's final save is
        a conflict."""
        store = MemoryRunStore(claim_timeout=0.15)
        ran: list[str] = []
        box: list[str] = []

        def act(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
            ran.append(context.call.call_id)
            store.delete(box[0])
            while "taken over" not in caplog.text:
                threading.Event().wait(0.01)
            return "done"

        tool = Tool("act", act)
        box.append(store.save(_waiting_on(tool, "a", "b")))
        with pytest.raises(lh.LangHooksError, match="taken over") as caught:
            store.resume(box[0], [Decision.approve()] * 2, _answer(), tools=[tool])
        assert caught.value.type == "conflict"
        assert ran == ["call_1"]

    def test_a_result_the_state_cannot_hold(self) -> None:
        """A tool result whose processed_content is not JSON makes the final save
        fail (TypeError); the run waits again and the retry reuses the result
        without it, running nothing twice."""
        ran: list[str] = []

        def act(arguments: Mapping[str, Any], context: lh.ToolContext) -> Any:
            ran.append(context.call.call_id)
            return lh.ToolResult(
                tool_call_id=context.call.call_id,
                name="act",
                content="structured",
                processed_content=object(),
            )

        tool = Tool("act", act)
        store = MemoryRunStore()
        run_id = store.save(_waiting_on(tool, "x"))
        with pytest.raises(TypeError, match="processed_content"):
            store.resume(run_id, [Decision.approve()], _answer(), tools=[tool])
        result = store.resume(run_id, [Decision.approve()], _answer(), tools=[tool])
        reused = _results(result)["call_1"]
        assert (reused.text, reused.processed_content) == ("structured", None)
        assert ran == ["call_1"]

    def test_bad_claim_timeout(self) -> None:
        """claim_timeout must be a positive, finite number of seconds."""
        with pytest.raises(ValueError, match="claim_timeout"):
            MemoryRunStore(claim_timeout=float("inf"))
        with pytest.raises(TypeError, match="claim_timeout"):
            MemoryRunStore(claim_timeout=True)

    def test_pending_row_checks(self) -> None:
        """PendingRun holds ToolCalls and JSON metadata only."""
        from datetime import UTC, datetime

        with pytest.raises(TypeError, match="ToolCalls"):
            PendingRun(
                run_id="r",
                calls=["x"],  # type: ignore[list-item]
                saved_at=datetime.now(UTC),
            )


class TestMessageLog:
    """What a save writes: the messages after those the store knows."""

    def _chain(self) -> LLMChain:
        model = ScriptedChatModel([ScriptedTurn(text="Hi.")])
        return LLMChain(model).add_message(lh.Message.user("hello")).run().chain

    def test_a_run_written_elsewhere_is_written_whole(self) -> None:
        """A save whose base another writer replaced writes the whole log."""
        store = MemoryRunStore()
        chain = self._chain()
        run_id = store.save(chain)
        other = chain.add_messages([lh.Message.user("elsewhere")])
        assert store._backend().write(Known().whole(run_id, other), {}, None)
        later = chain.add_messages([lh.Message.user("here")])
        store.save(later)  # its base is gone: whole
        assert store.load(run_id, chain.model).messages == later.messages

    def test_known_keeps_the_latest_runs(self) -> None:
        """Known forgets the least recent runs beyond its budget of messages:
        their next save is whole; a run noted again counts once."""
        known = Known(budget=4)
        first, second = self._chain(), self._chain()  # 2 messages each
        known.wrote(known.plan("a", first), first)
        known.wrote(known.plan("a", first), first)
        known.wrote(known.plan("b", second), second)
        assert known.plan("a", first).base is not None  # 4 messages: both kept
        longer = second.add_messages([lh.Message.user("more")])
        known.wrote(known.plan("b", longer), longer)  # 5: "a" goes
        assert known.plan("a", first).base is None
        assert known.plan("b", longer).base is not None
        known.forget("b")
        assert known.plan("b", longer).base is None
