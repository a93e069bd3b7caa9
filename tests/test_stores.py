"""MemoryRunStore: the in-process run store, and the checks every store shares."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from typing_extensions import override

import langhooks as lh
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
