"""The Strands Agents bridge: ``LangHooksHookProvider`` on real Strands agents.

Every run is Strands' own ``Agent`` on ``ScriptedStrandsModel`` (Strands' stream
events), with sessions in files of the test's own.

The conformance script itself (paused here, resumed in a second process) runs
in ``test_conformance.py`` through ``drivers/strands.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typing_extensions import override

from tests.bridges._support import need_module

need_module("strands", "strands")

from strands import Agent  # noqa: E402
from strands.interrupt import Interrupt as StrandsInterrupt  # noqa: E402
from strands.tools.tools import PythonAgentTool  # noqa: E402
from strands.types.interrupt import InterruptResponseContent  # noqa: E402

from langhooks import (  # noqa: E402
    Allow,
    ChainCallbackHandler,
    ContentPart,
    Deny,
    Interrupt,
    ToolCall,
    UpdateArguments,
    current_invocation,
)
from langhooks.chain import Decision  # noqa: E402
from langhooks.events import EventRecord, EventRecorder  # noqa: E402
from langhooks.integrations._strands._convert import (  # noqa: E402
    message_of,
    messages_of,
    tool_result_of,
    usage_of,
)
from langhooks.integrations.strands import (  # noqa: E402
    BridgeWarning,
    LangHooksHookProvider,
    interrupt_responses,
)

from ._driver import Place  # noqa: E402
from ._recording import AsyncChainLog, ReviewLog, StreamLog, names  # noqa: E402
from ._script import TURNS, Reviewer, Turn, ledger_count  # noqa: E402
from ._strands_model import ScriptedStrandsModel  # noqa: E402
from .drivers.strands import agent, threads_left_alone  # noqa: E402


@pytest.fixture
def place(tmp_path: Path) -> Place:
    return Place(tmp_path, "", "thread-1")


@pytest.fixture(autouse=True)
def _threads_left_alone() -> Iterator[None]:
    """Each test's agents leave ``threading`` as they found it."""
    with threads_left_alone():
        yield


def _interrupts(result: Any) -> list[StrandsInterrupt]:
    return list(result.interrupts or ())


class TestStreaming:
    """The model stage's chunks are partials."""

    def test_chunks_reach_a_streaming_handler(self, place: Place) -> None:
        """Thinking, each word and each argument fragment arrive as partials,
        then the complete calls and the response."""
        stream = StreamLog()
        bot = agent(
            place, [Reviewer(), stream], turns=[TURNS[0], Turn(text="Done now.")]
        )
        bot("go")
        assert stream.heard == [
            ("thinking", "Two things at once."),
            ("text", "Let"),
            ("text", " me"),
            ("text", " check."),
            ("tool", ("get_weather", "")),
            ("tool", ("get_weather", '{"city":')),
            ("tool", ("get_weather", ' "Paris"}')),
            ("tool", ("delete_file", "")),
            ("tool", ("delete_file", '{"path": "/')),
            ("tool", ("delete_file", 'etc/passwd"}')),
            ("call", "get_weather"),
            ("call", "delete_file"),
            ("response", "Let me check."),
            ("text", "Done"),
            ("text", " now."),
            ("response", "Done now."),
        ]


class TestFailures:
    """Model and tool failures, each reported once."""

    def test_model_error_is_reported_once(self, place: Place) -> None:
        """Each attempt's ``on_llm_error``, the retry, then one ``on_error``."""
        records: list[EventRecord] = []
        model = ScriptedStrandsModel([], error=RuntimeError("the model is down"))
        bot = agent(place, [EventRecorder(records.append)], model=model, session=False)
        with pytest.raises(RuntimeError, match="the model is down"):
            bot("hello")
        assert names(records) == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_error",
        ]

    def test_a_call_to_an_unknown_tool_is_left_to_strands(self, place: Place) -> None:
        """No review for a tool the agent does not have: Strands answers it."""
        log = ReviewLog()
        turns = [
            Turn(calls=(ToolCall(call_id="c1", name="no_such_tool", arguments={}),)),
            Turn(text="ok"),
        ]
        bot = agent(place, [log], turns=turns, session=False)
        bot("go")
        assert log.reviews == []

    def test_a_tool_error_result_is_a_failure(self, place: Place) -> None:
        """A tool that answers with status "error" (without raising) is reported
        failed, not completed."""
        records: list[EventRecord] = []
        turns = [
            Turn(
                calls=(
                    ToolCall(call_id="c1", name="get_weather", arguments={"city": 3}),
                )
            ),
            Turn(text="ok"),
        ]
        spec: Any = {
            "name": "get_weather",
            "description": "",
            "inputSchema": {"json": {}},
        }
        bot = Agent(
            model=ScriptedStrandsModel(turns),
            tools=[PythonAgentTool("get_weather", spec, _error_tool)],
            hooks=[LangHooksHookProvider(EventRecorder(records.append))],
            callback_handler=None,
        )
        bot("go")
        assert "on_tool_execution_failed" in names(records)
        assert "on_tool_execution_completed" not in names(records)


def _error_tool(tool_use: Any, **_: Any) -> Any:
    return {
        "toolUseId": tool_use["toolUseId"],
        "status": "error",
        "content": [{"text": "bad"}],
    }


class TestReview:
    """The human's decision on an interrupted call, given as interrupt responses."""

    def _paused(self, place: Place) -> list[StrandsInterrupt]:
        result = agent(place, [Reviewer()], turns=TURNS[2:])("pay Bob")
        assert result.stop_reason == "interrupt"
        return _interrupts(result)

    def test_an_edit_runs_the_call_with_the_human_arguments(self, place: Place) -> None:
        """The review sees ``human_decision`` "edit" and the edited arguments."""
        paused = self._paused(place)
        log = ReviewLog()
        bot = agent(place, [log, Reviewer()], turns=TURNS[2:])
        bot(
            interrupt_responses(
                paused, {"call_4": Decision.edit({"to": "Alice", "amount": 5})}
            )
        )
        assert place.ledger.read_text() == "Alice 5\n"
        assert log.reviews[0] == (
            "transfer_money",
            {"to": "Alice", "amount": 5},
            "edit",
        )

    def test_a_rejection_never_runs_the_call(self, place: Place) -> None:
        """The call is reported failed with the human's reason; nothing runs."""
        paused = self._paused(place)
        records: list[EventRecord] = []
        bot = agent(place, [EventRecorder(records.append)], turns=TURNS[2:])
        bot(interrupt_responses(paused, {"call_4": Decision.reject("no")}))
        assert ledger_count(place.ledger) == 0
        failed = [r for r in records if r.event == "on_tool_execution_failed"]
        assert "no" in str(failed[0].payload)

    def test_a_plain_response_approves(self, place: Place) -> None:
        """A response written by hand (not by ``interrupt_responses``) is read
        as approval when truthy."""
        paused = self._paused(place)
        bot = agent(place, [Reviewer()], turns=TURNS[2:])
        answer: InterruptResponseContent = {
            "interruptResponse": {"interruptId": paused[0].id, "response": "yes"}
        }
        bot([answer])
        assert ledger_count(place.ledger) == 1

    def test_a_second_interrupt_fails_closed(self, place: Place) -> None:
        """Strands answers an interrupt once: a reviewer that interrupts after the
        human's approval gets the call denied, with a warning saying why."""

        class Stubborn(Reviewer):
            @override
            def on_tool_call_review(
                self, chain: Any, call: Any, tool: Any, review: Any, /
            ) -> Any:
                return Interrupt("still no")

        paused = self._paused(place)
        bot = agent(place, [Stubborn()], turns=TURNS[2:])
        with pytest.warns(BridgeWarning, match="Strands cannot pause a call twice"):
            bot(interrupt_responses(paused, {"call_4": Decision.approve()}))
        assert ledger_count(place.ledger) == 0

    def test_a_reviewer_denial_after_approval_holds(self, place: Place) -> None:
        """A reviewer may still deny a call the human approved."""

        class Late(Reviewer):
            @override
            def on_tool_call_review(
                self, chain: Any, call: Any, tool: Any, review: Any, /
            ) -> Any:
                return Deny("too late") if review.human_decision else Interrupt("ask")

        bot = agent(place, [Late()], turns=TURNS[2:])
        paused = _interrupts(bot("pay Bob"))
        bot(interrupt_responses(paused, {"call_4": Decision.approve()}))
        assert ledger_count(place.ledger) == 0

    def test_unknown_call_ids_are_refused(self) -> None:
        """``interrupt_responses`` names a call it cannot find."""
        other = StrandsInterrupt(
            id="i", name="someone-else", reason={"tool_call_id": "x"}
        )
        with pytest.raises(
            ValueError, match="no langhooks interrupt for tool call 'x'"
        ):
            interrupt_responses([other], {"x": Decision.approve()})

    def test_interrupts_survive_json(self, place: Place) -> None:
        """The paused run's interrupts, saved as dicts and read back, resume it."""
        paused = self._paused(place)
        saved = json.loads(json.dumps([i.to_dict() for i in paused]))
        again = [StrandsInterrupt(**fields) for fields in saved]
        bot = agent(place, [Reviewer()], turns=TURNS[2:])
        bot(interrupt_responses(again, {"call_4": Decision.approve()}))
        assert ledger_count(place.ledger) == 1


class TestHandlers:
    """What the provider takes and how it calls it."""

    def test_only_langhooks_handlers(self) -> None:
        """Anything else is refused when the provider is made."""
        with pytest.raises(
            TypeError, match="LangHooksHookProvider takes langhooks handlers"
        ):
            LangHooksHookProvider(object())

    def test_async_handlers_in_invoke_async(self, place: Place) -> None:
        """An async handler is awaited on the agent's loop."""
        log = AsyncChainLog()
        bot = agent(place, [log], turns=[Turn(text="Hi.")], session=False)
        asyncio.run(bot.invoke_async("hi"))
        assert log.events == [
            "on_run_start",
            "on_llm_call_complete",
            "on_run_complete ok",
        ]

    def test_stream_async_is_one_run(self, place: Place) -> None:
        """``stream_async`` hears the same events as ``agent(...)``."""
        records: list[EventRecord] = []
        stream = StreamLog()
        bot = agent(
            place,
            [EventRecorder(records.append), stream],
            turns=[Turn(text="Hi there.")],
            session=False,
        )

        async def go() -> None:
            async for _ in bot.stream_async("hi"):
                pass

        asyncio.run(go())
        assert names(records)[0] == "on_run_start"
        assert names(records)[-1] == "on_run_complete"
        assert stream.heard == [
            ("text", "Hi"),
            ("text", " there."),
            ("response", "Hi there."),
        ]

    def test_update_runs_the_call_with_new_arguments(self, place: Place) -> None:
        """``UpdateArguments`` rewrites the call's input."""

        class Rewrite(Reviewer):
            @override
            def on_tool_call_review(
                self, chain: Any, call: Any, tool: Any, review: Any, /
            ) -> Any:
                if call.name == "transfer_money":
                    return UpdateArguments({"to": "Carol", "amount": 1})
                return Allow()

        agent(place, [Rewrite()], turns=TURNS[2:], session=False)("pay")
        assert place.ledger.read_text() == "Carol 1\n"

    def test_one_provider_serves_two_agents(self, place: Place) -> None:
        """State is per agent: two agents' invocations each end once."""
        log = AsyncChainLog()
        provider = LangHooksHookProvider(log)
        first = Agent(
            model=ScriptedStrandsModel([Turn(text="a")]),
            hooks=[provider],
            callback_handler=None,
        )
        second = Agent(
            model=ScriptedStrandsModel([Turn(text="b")]),
            hooks=[provider],
            callback_handler=None,
        )

        async def both() -> None:
            await asyncio.gather(first.invoke_async("x"), second.invoke_async("y"))

        asyncio.run(both())
        assert log.events.count("on_run_complete ok") == 2


class TestConversations:
    """What the bridge reads of a conversation that goes on."""

    def test_a_second_invocation_starts_from_the_history(self, place: Place) -> None:
        """The chain of the second invocation holds the first one's messages,
        tool results included."""
        seen: list[Any] = []

        class Start(Reviewer):
            @override
            def on_run_start(self, chain: Any, /) -> None:
                seen.append(chain.messages)

        turns = [TURNS[3], Turn(text="Sorry."), Turn(text="Hello again.")]
        bot = agent(place, [Start()], turns=turns, session=False)
        bot("find order 7")
        bot("hi")
        roles = [m.role for m in seen[1]]
        assert roles == ["user", "assistant", "tool", "assistant", "user"]
        assert seen[1][2].tool_results[0].is_error

    def test_a_direct_tool_call_is_not_a_run(self, place: Place) -> None:
        """``agent.tool.name(...)`` runs outside any invocation: nothing is reported."""
        records: list[EventRecord] = []
        bot = agent(place, [EventRecorder(records.append)], session=False)
        bot.tool.get_weather(city="Paris")
        assert records == []


class TestNesting:
    """A run inside a tool call is a child of the call's invocation."""

    def test_an_agent_called_by_a_tool_is_a_child_of_the_call(
        self, place: Place
    ) -> None:
        """A tool that asks another agent: the helper's run has the call's
        invocation as parent, whose parent is the outer run's."""
        starts: list[Any] = []
        calls: list[Any] = []

        class Tree(ChainCallbackHandler):
            @override
            def on_run_start(self, chain: Any, /) -> None:
                starts.append(chain.invocation)

            @override
            def on_tool_pre_execution(
                self, chain: Any, call: Any, tool: Any, /
            ) -> None:
                calls.append(current_invocation())

        tree = Tree()
        helper = Agent(
            model=ScriptedStrandsModel([Turn(text="helped")]),
            hooks=[LangHooksHookProvider(tree)],
            callback_handler=None,
        )

        def ask(tool_use: Any, **_: Any) -> Any:
            answer = str(helper(tool_use["input"]["request"]))
            return {
                "toolUseId": tool_use["toolUseId"],
                "status": "success",
                "content": [{"text": answer}],
            }

        spec: Any = {"name": "ask", "description": "", "inputSchema": {"json": {}}}
        call = ToolCall(call_id="c1", name="ask", arguments={"request": "x"})
        main = Agent(
            model=ScriptedStrandsModel([Turn(calls=(call,)), Turn(text="done")]),
            tools=[PythonAgentTool("ask", spec, ask)],
            hooks=[LangHooksHookProvider(tree)],
            callback_handler=None,
        )
        main("go")
        outer, inner = starts
        (tool_call,) = calls
        assert tool_call.parent_id == outer.id
        assert inner.parent_id == tool_call.id
        assert current_invocation() is None


class TestConversions:
    """What the bridge reads from Strands' message shapes."""

    def test_no_usage_is_none(self) -> None:
        """A stream without a metadata block has no ``TokenUsage``."""
        assert usage_of(None) is None

    def test_json_tool_content_is_text(self) -> None:
        """A ``json`` content block of a tool result is its JSON text (an image
        block carries no text)."""
        blocks = [{"json": {"a": 1}}, {"image": {"format": "png"}}]
        result = {"toolUseId": "c", "status": "success", "content": blocks}
        assert tool_result_of(result, "t").content == (ContentPart.text('{"a": 1}'),)

    def test_blocks_without_text_say_nothing(self) -> None:
        """Empty reasoning, images and empty user messages carry nothing."""
        message = {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": ""}}},
                {"image": {"format": "png", "source": {"bytes": b"x"}}},
                {"text": "hi"},
            ],
        }
        assert message_of(message).text == "hi"
        assert message_of(message).content == (ContentPart.text("hi"),)
        assert messages_of([{"role": "user", "content": [{"image": {}}]}]) == []
