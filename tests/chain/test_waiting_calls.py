"""A new message on a chain whose calls wait for a human is an explicit choice
(issue 37, 7): ``run()`` refuses, naming the calls and the two ways on; they are
decided, or abandoned with a reason the model reads as the tool's result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from typing_extensions import override

import langhooks as lh
from langhooks.chain import Decision, LLMChain, Tool
from langhooks.chain._chain import ABANDONED
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore
from langhooks.testing import RecordingChainHandler

NEW = "Never mind: what time is it?"


class Ask(lh.ChainCallbackHandler):
    """Every call waits for a human."""

    @override
    def on_tool_call_review(
        self,
        chain: LLMChain,
        call: lh.ToolCall,
        tool: lh.Tool,
        review: lh.ReviewContext,
    ) -> lh.ReviewDecision | None:
        return lh.Interrupt("May I?") if review.human_decision is None else None


def _moved_on(
    ran: list[str], *handlers: lh.ChainCallbackHandler
) -> tuple[LLMChain, ScriptedChatModel]:
    """A chain interrupted at ``book`` (``call_1``), then given a new user message;
    and its model, whose next turn answers."""

    def book(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
        ran.append(context.call.call_id)
        return "booked"

    call = lh.ToolCall(call_id="call_1", name="book", arguments={})
    model = ScriptedChatModel(
        [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="Noon.")]
    )
    chain = LLMChain(model, tools=[Tool("book", book)], callbacks=[Ask(), *handlers])
    result = chain.add_message(lh.Message.user("Book, please.")).run()
    assert result.status == "interrupted"
    return result.chain.add_message(lh.Message.user(NEW)), model


def _tool_texts(chain: LLMChain) -> list[str]:
    return [r.text for m in chain.messages for r in m.tool_results]


class TestRunRefuses:
    """run() on waiting calls says which wait and the two ways on."""

    def test_run(self) -> None:
        """The approval is not dropped: run() raises, naming the call, and
        neither the model nor the tool is called."""
        ran: list[str] = []
        chain, model = _moved_on(ran)
        with pytest.raises(ValueError, match="book \\('call_1'\\)") as caught:
            chain.run()
        message = str(caught.value)
        assert "1 message(s) were added after them" in message
        assert "execute_tool_calls_with_decisions" in message
        assert "abandon_tool_calls(reason)" in message
        assert ran == []
        assert model.remaining == 1

    async def test_arun(self) -> None:
        """arun() refuses the same way."""
        chain, _ = _moved_on([])
        with pytest.raises(ValueError, match="abandon_tool_calls"):
            await chain.arun()

    def test_the_calls_still_wait(self) -> None:
        """The chain says its calls wait; a store keeps it in the inbox."""
        chain, _ = _moved_on([])
        assert [c.call_id for c in chain.pending_tool_calls] == ["call_1"]
        store = MemoryRunStore()
        run_id = store.save(chain)
        assert [row.run_id for row in store.pending()] == [run_id]


class TestAbandon:
    """abandon_tool_calls answers each waiting call with the reason."""

    def test_the_reason_is_the_tools_result(self) -> None:
        """Each call is answered with the reason (not an error), the usual tool
        events fire, the new message stays after, and the run goes on."""
        ran: list[str] = []
        recorder = RecordingChainHandler()
        chain, _ = _moved_on(ran, recorder)
        before = len(recorder.summary())
        result = chain.abandon_tool_calls("The user asked something else.")
        assert result.status == "ok"
        assert _tool_texts(result.chain) == ["The user asked something else."]
        assert [m.text for m in result.chain.messages if m.role == "user"][-1] == NEW
        assert result.chain.messages[-1].text == NEW
        assert result.chain.pending_tool_calls == ()
        assert not result.chain.messages[2].tool_results[0].is_error
        assert recorder.summary()[before:] == [
            "on_run_start",
            "on_tool_execution_failed book",
            "on_tool_response_created",
            "on_message_processed",
            "on_run_complete",
        ]
        answered = result.chain.run()
        assert answered.chain.messages[-1].text == "Noon."
        assert ran == []

    async def test_async(self) -> None:
        """aabandon_tool_calls, with the default reason."""
        chain, _ = _moved_on([])
        result = await chain.aabandon_tool_calls()
        assert _tool_texts(result.chain) == [ABANDONED]
        assert result.chain.messages[-1].text == NEW

    def test_nothing_waits(self) -> None:
        """Abandoning without waiting calls, or with a reason that is no str."""
        chain, _ = _moved_on([])
        done = chain.abandon_tool_calls().chain
        with pytest.raises(ValueError, match="no tool call"):
            done.abandon_tool_calls()
        with pytest.raises(TypeError, match="reason must be a str"):
            chain.abandon_tool_calls(42)  # type: ignore[arg-type]


class TestDecide:
    """Deciding the calls works with the new message in place."""

    def test_approve(self) -> None:
        """The approved call runs; its result goes before the new message."""
        ran: list[str] = []
        chain, _ = _moved_on(ran)
        result = chain.execute_tool_calls_with_decisions(
            chain.pending_tool_calls, [Decision.approve()]
        )
        assert ran == ["call_1"]
        assert [m.role for m in result.chain.messages] == [
            "user",
            "assistant",
            "tool",
            "user",
        ]
        assert _tool_texts(result.chain) == ["booked"]
        assert result.chain.run().chain.messages[-1].text == "Noon."

    async def test_async_through_a_store(self) -> None:
        """A store resumes such a chain: the decision runs, the new message
        follows, and the run answers it."""
        ran: list[str] = []
        chain, model = _moved_on(ran)
        store = MemoryRunStore()
        run_id = store.save(chain)
        result = store.resume(
            run_id, [Decision.approve()], model, tools=chain.tools, callbacks=[Ask()]
        )
        assert ran == ["call_1"]
        assert result.chain.messages[-1].text == "Noon."
        assert store.pending() == []


class TestEarlierStates:
    """A state an earlier release saved with a message after its waiting calls
    (as waiting for none) loads, and its calls wait."""

    def test_loads(self) -> None:
        chain, model = _moved_on([])
        state = chain.to_state()
        state["pending_tool_calls"] = []
        loaded = LLMChain.from_state(state, model, tools=chain.tools)
        assert [c.call_id for c in loaded.pending_tool_calls] == ["call_1"]
