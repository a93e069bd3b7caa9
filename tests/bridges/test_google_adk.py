"""The Google ADK bridge: ``LangHooksPlugin`` on real ADK runners.

Every run is ADK's own ``Runner`` on ``ScriptedGemini`` (Gemini's chunks through
ADK's own aggregator), with sessions in a SQLite file of the test's own.

The conformance script itself (paused here, resumed in a second process) runs
in ``test_conformance.py`` through ``drivers/google_adk.py``.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from typing_extensions import override

from tests.bridges._support import need_module

need_module("google.adk", "google-adk")

from google.adk.agents.llm_agent import LlmAgent  # noqa: E402
from google.adk.agents.run_config import RunConfig  # noqa: E402
from google.adk.agents.sequential_agent import SequentialAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.plugins.base_plugin import BasePlugin  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions.in_memory_session_service import (  # noqa: E402
    InMemorySessionService,
)
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.adk.tools.base_tool import BaseTool  # noqa: E402
from google.adk.tools.function_tool import FunctionTool  # noqa: E402
from google.genai import types  # noqa: E402

from langhooks import (  # noqa: E402
    Allow,
    ChainCallbackHandler,
    Deny,
    Interrupt,
    TokenUsage,
    ToolCall,
    UpdateArguments,
    current_invocation,
)
from langhooks.chain import Decision  # noqa: E402
from langhooks.events import EventRecord, EventRecorder  # noqa: E402
from langhooks.integrations._google_adk._convert import (  # noqa: E402
    pieces,
    spec_of,
    usage_of,
)
from langhooks.integrations.google_adk import (  # noqa: E402
    BridgeWarning,
    LangHooksPlugin,
    confirmations,
)

from ._adk_model import ScriptedGemini  # noqa: E402
from ._driver import Place  # noqa: E402
from ._recording import AsyncChainLog, ReviewLog, StreamLog, names  # noqa: E402
from ._script import TURNS, Reviewer, Turn, ledger_count  # noqa: E402
from .drivers.google_adk import APP, STREAM, USER, runner  # noqa: E402


def _message(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _run(
    run: Any, place: Place, message: types.Content, config: RunConfig = STREAM
) -> list[Any]:
    asyncio.run(
        run.session_service.create_session(
            app_name=APP, user_id=USER, session_id=place.thread
        )
    ) if not _exists(run, place) else None
    return list(
        run.run(
            user_id=USER,
            session_id=place.thread,
            new_message=message,
            run_config=config,
        )
    )


def _exists(run: Any, place: Place) -> bool:
    found = asyncio.run(
        run.session_service.get_session(
            app_name=APP, user_id=USER, session_id=place.thread
        )
    )
    return found is not None


def _events(run: Any, place: Place) -> list[Any]:
    session = asyncio.run(
        run.session_service.get_session(
            app_name=APP, user_id=USER, session_id=place.thread
        )
    )
    assert session is not None
    return list(session.events)


@pytest.fixture
def place(tmp_path: Path) -> Place:
    return Place(tmp_path, "", "thread-1")


class TestStreaming:
    """SSE chunks are partials; without SSE the answer is one message."""

    def test_sse_chunks_reach_a_streaming_handler(self, place: Place) -> None:
        """Thinking, each word and each (whole) call arrive as partials, then the
        complete calls and the response."""
        stream = StreamLog()
        turns = [TURNS[0], Turn(text="Done now.")]
        run = runner(place, [Reviewer(), stream], turns=turns)
        _run(run, place, _message("go"))
        assert stream.heard == [
            ("thinking", "Two things at once."),
            ("text", "Let"),
            ("text", " me"),
            ("text", " check."),
            ("tool", ("get_weather", '{"city": "Paris"}')),
            ("tool", ("delete_file", '{"path": "/etc/passwd"}')),
            ("call", "get_weather"),
            ("call", "delete_file"),
            ("response", "Let me check."),
            ("text", "Done"),
            ("text", " now."),
            ("response", "Done now."),
        ]

    def test_without_sse_the_answer_is_one_message(self, place: Place) -> None:
        """No partials: ``on_llm_new_message`` carries the answer."""
        records: list[EventRecord] = []
        stream = StreamLog()
        run = runner(
            place,
            [EventRecorder(records.append), stream],
            turns=[Turn(text="Hi there.")],
        )
        _run(run, place, _message("hello"), RunConfig())
        assert names(records) == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_call_complete",
            "on_llm_new_message",
            "on_message_processed",
            "on_llm_token_usage",
            "on_run_complete",
        ]
        assert stream.heard == []


class TestFailures:
    """A model that fails ends the run with one terminal ``on_error``."""

    def test_model_error_is_reported_once(self, place: Place) -> None:
        """``on_llm_error`` then one ``on_error``; no completion."""
        records: list[EventRecord] = []
        model = ScriptedGemini(error=RuntimeError("the model is down"))
        run = runner(place, [EventRecorder(records.append)], model=model)
        with pytest.raises(RuntimeError, match="the model is down"):
            _run(run, place, _message("hello"))
        assert names(records) == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_error",
        ]

    def test_a_cancelled_tool_fails_the_run(self, place: Place) -> None:
        """A tool call cancelled ends the run with ``on_error`` ("cancelled"),
        where ADK itself goes on to end the run as usual."""
        records: list[EventRecord] = []

        async def stop() -> str:
            """Stop."""
            raise asyncio.CancelledError

        turns = [Turn(calls=(ToolCall(call_id="c1", name="stop", arguments={}),))]
        agent = LlmAgent(
            name="assistant",
            model=ScriptedGemini(turns=turns),
            tools=[FunctionTool(stop)],
        )
        run = Runner(
            app=App(
                name=APP,
                root_agent=agent,
                plugins=[LangHooksPlugin(EventRecorder(records.append))],
            ),
            session_service=InMemorySessionService(),
        )
        _run(run, place, _message("go"))
        assert names(records)[-2:] == ["on_tool_pre_execution", "on_error"]
        assert records[-1].payload["error"]["error_type"] == "cancelled"
        assert current_invocation() is None

    def test_a_call_to_an_unknown_tool_is_left_to_adk(self, place: Place) -> None:
        """No review for a tool the agent does not have: ADK answers it."""
        log = ReviewLog()
        turns = [
            Turn(calls=(ToolCall(call_id="c1", name="no_such_tool", arguments={}),)),
            Turn(text="ok"),
        ]
        run = runner(place, [log], turns=turns)
        events = _run(run, place, _message("go"))
        assert log.reviews == []
        answers = [r.response for e in events for r in e.get_function_responses()]
        assert "no tool with that name is available" in str(answers)

    def test_calls_without_ids_are_reviewed(self, place: Place) -> None:
        """Gemini may send calls without ids: the bridge gives them ADK's ids
        before review, so a denial still holds."""
        turns = [
            Turn(
                calls=(
                    ToolCall(
                        call_id="c1", name="delete_file", arguments={"path": "/x"}
                    ),
                )
            ),
            Turn(text="ok"),
        ]
        run = runner(place, [Reviewer()], model=ScriptedGemini(turns=turns, ids=False))
        events = _run(run, place, _message("go"))
        (answer,) = [r for e in events for r in e.get_function_responses()]
        assert answer.id
        assert answer.id.startswith("adk-")
        assert "denied" in str(answer.response)


class TestReview:
    """The human's decision on an interrupted call, answered through ADK's
    confirmation."""

    def _paused(self, place: Place, handlers: list[Any]) -> Any:
        run = runner(place, [Reviewer(), *handlers], turns=TURNS[2:])
        events = _run(run, place, _message("pay Bob"))
        assert ledger_count(place.ledger) == 0
        return run, events

    def test_an_edit_runs_the_call_with_the_human_arguments(self, place: Place) -> None:
        """The review sees ``human_decision`` "edit" and the edited arguments."""
        log = ReviewLog()
        self._paused(place, [])
        again = runner(place, [log, Reviewer()], turns=TURNS[2:])
        answer = confirmations(
            _events(again, place),
            {"call_4": Decision.edit({"to": "Alice", "amount": 5})},
        )
        _run(again, place, answer)
        assert place.ledger.read_text() == "Alice 5\n"
        assert log.reviews[0] == (
            "transfer_money",
            {"to": "Alice", "amount": 5},
            "edit",
        )

    def test_a_rejection_never_runs_the_call(self, place: Place) -> None:
        """The call is reported failed with the human's reason; nothing runs."""
        records: list[EventRecord] = []
        self._paused(place, [])
        again = runner(place, [EventRecorder(records.append)], turns=TURNS[2:])
        answer = confirmations(_events(again, place), {"call_4": Decision.reject("no")})
        _run(again, place, answer)
        assert ledger_count(place.ledger) == 0
        failed = [r for r in records if r.event == "on_tool_execution_failed"]
        assert "no" in str(failed[0].payload)

    def test_a_second_interrupt_fails_closed(self, place: Place) -> None:
        """ADK asks for a confirmation once: a reviewer that interrupts after the
        human's approval gets the call denied, with a warning saying why."""

        class Stubborn(Reviewer):
            @override
            def on_tool_call_review(
                self, chain: Any, call: Any, tool: Any, review: Any, /
            ) -> Any:
                return Interrupt("still no")

        self._paused(place, [])
        again = runner(place, [Stubborn()], turns=TURNS[2:])
        answer = confirmations(_events(again, place), {"call_4": Decision.approve()})
        with pytest.warns(
            BridgeWarning, match="ADK cannot ask twice, so the call is denied"
        ):
            events = _run(again, place, answer)
        answers = [r.response for e in events for r in e.get_function_responses()]
        assert "denied" in str(answers)
        assert ledger_count(place.ledger) == 0

    def test_a_reviewer_denial_after_approval_holds(self, place: Place) -> None:
        """A reviewer may still deny a call the human approved."""

        class Late(Reviewer):
            @override
            def on_tool_call_review(
                self, chain: Any, call: Any, tool: Any, review: Any, /
            ) -> Any:
                return Deny("too late") if review.human_decision else Interrupt("ask")

        run = runner(place, [Late()], turns=TURNS[2:])
        _run(run, place, _message("pay Bob"))
        answer = confirmations(_events(run, place), {"call_4": Decision.approve()})
        _run(run, place, answer)
        assert ledger_count(place.ledger) == 0

    def test_unknown_call_ids_are_refused(self, place: Place) -> None:
        """``confirmations`` names a call it cannot find."""
        with pytest.raises(
            ValueError, match="no confirmation request for tool call 'x'"
        ):
            confirmations([], {"x": Decision.approve()})


class TestHandlers:
    """What the plugin takes and how it calls it."""

    def test_only_langhooks_handlers(self) -> None:
        """Anything else is refused when the plugin is made."""
        with pytest.raises(TypeError, match="LangHooksPlugin takes langhooks handlers"):
            LangHooksPlugin(object())

    def test_async_handlers_in_run_async(self, place: Place) -> None:
        """An async handler is awaited on ADK's loop."""
        log = AsyncChainLog()
        run = runner(place, [log], turns=[Turn(text="Hi.")])

        async def go() -> None:
            await run.session_service.create_session(
                app_name=APP, user_id=USER, session_id=place.thread
            )
            async for _ in run.run_async(
                user_id=USER,
                session_id=place.thread,
                new_message=_message("hi"),
                run_config=STREAM,
            ):
                pass

        asyncio.run(go())
        assert log.events == [
            "on_run_start",
            "on_llm_call_complete",
            "on_run_complete ok",
        ]

    def test_allow_and_update_run_the_call(self, place: Place) -> None:
        """``UpdateArguments`` runs the tool with the reviewer's arguments."""

        class Rewrite(Reviewer):
            @override
            def on_tool_call_review(
                self, chain: Any, call: Any, tool: Any, review: Any, /
            ) -> Any:
                if call.name == "transfer_money":
                    return UpdateArguments({"to": "Carol", "amount": 1})
                return Allow()

        run = runner(place, [Rewrite()], turns=TURNS[2:])
        _run(run, place, _message("pay"))
        assert place.ledger.read_text() == "Carol 1\n"


class TestAgents:
    """Runs the plugin hears, whatever runs them."""

    def test_a_run_another_plugin_halts_is_not_reported(self, place: Place) -> None:
        """A plugin before ours that answers the run itself: ours hears nothing."""

        class Halt(BasePlugin):
            @override
            async def before_run_callback(self, *, invocation_context: Any) -> Any:
                return types.Content(role="model", parts=[types.Part(text="closed")])

        records: list[EventRecord] = []
        agent = LlmAgent(
            name="assistant", model=ScriptedGemini(turns=[Turn(text="hi")])
        )
        plugins = [Halt(name="halt"), LangHooksPlugin(EventRecorder(records.append))]
        run = Runner(
            app=App(name=APP, root_agent=agent, plugins=plugins),
            session_service=InMemorySessionService(),
        )
        _run(run, place, _message("hello"))
        assert records == []

    # ADK 2 deprecates SequentialAgent for Workflow graphs, which cannot yet hold
    # an LlmAgent sub-agent; it is still how a sequence of model agents is built.
    def test_a_run_another_plugin_fails_is_not_reported(self, place: Place) -> None:
        """A plugin before ours that raises at the start: ours reports nothing."""

        class Broken(BasePlugin):
            @override
            async def before_run_callback(self, *, invocation_context: Any) -> Any:
                raise RuntimeError("broken plugin")

        records: list[EventRecord] = []
        agent = LlmAgent(
            name="assistant", model=ScriptedGemini(turns=[Turn(text="hi")])
        )
        plugins = [
            Broken(name="broken"),
            LangHooksPlugin(EventRecorder(records.append)),
        ]
        run = Runner(
            app=App(name=APP, root_agent=agent, plugins=plugins),
            session_service=InMemorySessionService(),
        )
        with pytest.raises(RuntimeError, match="broken plugin"):
            _run(run, place, _message("hello"))
        assert records == []

    def test_a_sequence_of_agents_is_one_run(self, place: Place) -> None:
        """A ``SequentialAgent`` of two model agents: one run, two model calls."""
        records: list[EventRecord] = []
        first = LlmAgent(name="first", model=ScriptedGemini(turns=[Turn(text="one")]))
        second = LlmAgent(
            name="second",
            model=ScriptedGemini(turns=[Turn(text="a"), Turn(text="two")]),
            tools=[FunctionTool(_lookup)],
        )
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", "SequentialAgent is deprecated", DeprecationWarning
            )
            root = SequentialAgent(name="both", sub_agents=[first, second])
        run = Runner(
            app=App(
                name=APP,
                root_agent=root,
                plugins=[LangHooksPlugin(EventRecorder(records.append))],
            ),
            session_service=InMemorySessionService(),
        )
        _run(run, place, _message("go"))
        assert names(records).count("on_run_start") == 1
        assert names(records).count("on_llm_call_complete") == 2
        assert names(records)[-1] == "on_run_complete"


class TestNesting:
    """A run inside a tool call is a child of the call's invocation."""

    def test_an_agent_tool_run_is_a_child_of_its_call(self, place: Place) -> None:
        """``AgentTool``: the helper's run has the call's invocation as parent,
        whose parent is the outer run's."""
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

        helper = LlmAgent(
            name="helper",
            description="helps",
            model=ScriptedGemini(turns=[Turn(text="helped")]),
        )
        ask = ToolCall(call_id="c1", name="helper", arguments={"request": "x"})
        main = LlmAgent(
            name="main",
            model=ScriptedGemini(turns=[Turn(calls=(ask,)), Turn(text="done")]),
            tools=[AgentTool(helper)],
        )
        run = Runner(
            app=App(name=APP, root_agent=main, plugins=[LangHooksPlugin(Tree())]),
            session_service=InMemorySessionService(),
        )
        with warnings.catch_warnings():
            # ADK's AgentTool makes its runner with the `plugins` argument ADK
            # itself deprecates (google-adk 2.13).
            warnings.filterwarnings(
                "ignore", "The `plugins` argument is deprecated", DeprecationWarning
            )
            _run(run, place, _message("go"))
        outer, inner = starts
        (call,) = calls
        assert call.parent_id == outer.id
        assert inner.parent_id == call.id
        assert current_invocation() is None


def _lookup(order: int) -> str:
    """Find an order."""
    return str(order)


class TestConversions:
    """What the bridge reads from ADK's and genai's types."""

    def test_no_usage_is_none(self) -> None:
        """A response without usage metadata has no ``TokenUsage``."""
        assert usage_of(None) is None

    def test_thinking_tokens_count_as_output(self) -> None:
        """As for the Gemini model: thoughts are output tokens."""
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=3, candidates_token_count=4, thoughts_token_count=5
        )
        assert usage_of(usage) == TokenUsage(input_tokens=3, output_tokens=9)

    def test_parts_without_text_or_calls_say_nothing(self) -> None:
        """Inline data and empty text are not pieces of the answer."""
        content = types.Content(
            role="model",
            parts=[
                types.Part(inline_data=types.Blob(mime_type="image/png", data=b"x")),
                types.Part(text=""),
                types.Part(text="hi"),
            ],
        )
        assert list(pieces(content)) == [("text", "hi")]
        assert list(pieces(None)) == []

    def test_a_function_tool_schema(self) -> None:
        """A ``FunctionTool`` declares its parameters as a genai ``Schema``."""

        def lookup(order: int) -> str:
            """Find an order."""
            return str(order)

        name, _, schema = spec_of(FunctionTool(lookup))
        assert name == "lookup"
        assert "order" in schema["properties"]

    def test_a_tool_declared_with_a_genai_schema(self) -> None:
        """Parameters given as a genai ``Schema`` become JSON schema."""

        class Declared(BaseTool):
            @override
            def _get_declaration(self) -> types.FunctionDeclaration:
                schema = types.Schema(
                    type=types.Type.OBJECT,
                    properties={"q": types.Schema(type=types.Type.STRING)},
                )
                return types.FunctionDeclaration(name="s", parameters=schema)

        assert spec_of(Declared(name="s", description="search"))[2] == {
            "type": "OBJECT",
            "properties": {"q": {"type": "STRING"}},
        }

    def test_a_tool_without_declaration(self) -> None:
        """A tool that declares nothing, or no parameters, has no schema."""

        class Bare(BaseTool):
            @override
            def _get_declaration(self) -> types.FunctionDeclaration:
                return types.FunctionDeclaration(name="bare")

        assert spec_of(BaseTool(name="x", description="d")) == ("x", "d", {})
        assert spec_of(Bare(name="bare", description="d"))[2] == {}
