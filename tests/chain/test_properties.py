"""Laws every run keeps, whatever the model says and the tools do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from langhooks import LangHooksError, Message, ToolCall, ToolContext
from langhooks.chain import LLMChain, Reject, RetryPolicy, Tool
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler


def ok(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that succeeds."""
    return "ok"


def bad(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that raises."""
    raise RuntimeError("bad")


TOOLS = (
    Tool("ok", ok),
    Tool("bad", bad),
    Tool("fast", ok, concurrent=True),
    Tool("needs", ok, parameters_schema={"required": ["x"]}),
)
NAMES = ["ok", "bad", "fast", "needs", "missing"]

calls = st.lists(st.sampled_from(NAMES), max_size=3)
items = st.one_of(
    calls.map(lambda names: ("turn", names)),
    st.sampled_from(["overloaded", "invalid_request"]).map(lambda t: ("error", t)),
    st.just(("rejected", None)),
)
TERMINAL = {"on_run_complete", "on_error"}


def script(plan: list[tuple[str, Any]]) -> list[ScriptedTurn | LangHooksError]:
    """Turns (with numbered calls) and errors from a generated plan."""
    turns: list[ScriptedTurn | LangHooksError] = []
    for number, (kind, value) in enumerate(plan):
        if kind == "error":
            turns.append(LangHooksError(value, "scripted failure"))
            continue
        if kind == "rejected":
            turns.append(ScriptedTurn(text=f"turn {number} rejected"))
            continue
        turns.append(
            ScriptedTurn(
                text=f"turn {number}",
                tool_calls=[
                    ToolCall(call_id=f"c{number}-{i}", name=name)
                    for i, name in enumerate(value)
                ],
            )
        )
    return turns


def refuse_marked(chain: LLMChain, message: Message) -> Message | Reject:
    """A message processor rejecting answers that say "rejected"."""
    return Reject("Try again.") if "rejected" in message.text else message


class TestRunLaws:
    """Properties of the event stream of any run."""

    @settings(max_examples=60, deadline=None)
    @given(
        plan=st.lists(items, max_size=5),
        mode=st.sampled_from(["single", "while_needs_response", "until_success"]),
    )
    def test_one_terminal_event_and_one_outcome_per_call(
        self, plan: list[tuple[str, Any]], mode: Any
    ) -> None:
        """A run starts with on_run_start, ends with exactly one terminal event,
        every started call gets exactly one outcome, in call order, and every
        rejected answer is followed by its automated reply."""
        recorder = RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel(script(plan)),
            tools=TOOLS,
            callbacks=[recorder],
            retry=RetryPolicy(sleep=lambda _: None),
            max_retry_count=10,
            message_processors=[refuse_marked],
        ).add_message(Message.user("go"))
        result = chain.run(mode)
        names = recorder.names
        assert names[0] == "on_run_start"
        assert sum(name in TERMINAL for name in names) == 1
        assert names[-1] == (
            "on_error" if result.status == "error" else "on_run_complete"
        )
        started = [a[1].call_id for a in recorder.of("on_tool_execution_started")]
        finished = [
            a[1].call_id
            for n, a in recorder.events
            if n in {"on_tool_execution_completed", "on_tool_execution_failed"}
            and a[1].call_id in started
        ]
        assert sorted(finished) == sorted(started)
        for message in result.chain.messages:
            if message.role == "tool":
                asked = [m for m in result.chain.messages if m.role == "assistant"]
                ids = [r.tool_call_id for r in message.tool_results]
                assert any([c.call_id for c in m.tool_calls] == ids for m in asked)
        for position, name in enumerate(names):
            if name == "on_message_processing_error":
                assert names[position + 1] == "on_error_message_created"
        rejected = [a[1] for a in recorder.of("on_message_processing_error")]
        messages = list(result.chain.messages)
        for message in rejected:
            after = messages[messages.index(message) + 1]
            assert after.role == "user"
            assert after.text == "Try again."
