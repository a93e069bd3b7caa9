"""The LangChain / LangGraph bridge beyond the conformance script: each entry point,
nested runs, failures, the human's other answers, and what a run downstream gives."""

from __future__ import annotations

import asyncio
import inspect
import io
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    Deny,
    Interrupt,
    LangHooksError,
    ReviewContext,
    ReviewDecision,
    Tool,
    ToolCall,
    UpdateArguments,
)
from langhooks.events import EventRecorder, read_events, replay_events
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler
from tests.bridges._support import need_module

need_module("langchain", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import AgentMiddleware, AgentState  # noqa: E402
from langchain_core.callbacks import BaseCallbackManager  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages.tool import tool_call_chunk  # noqa: E402
from langchain_core.outputs import LLMResult  # noqa: E402
from langchain_core.runnables.config import ensure_config  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

from langhooks import Invocation, ToolContext  # noqa: E402
from langhooks.chain import Decision  # noqa: E402
from langhooks.integrations._langchain._callbacks import _nested_node  # noqa: E402
from langhooks.integrations._langchain._convert import (  # noqa: E402
    as_error,
    as_message,
    as_response,
    as_tool,
    model_name,
)
from langhooks.integrations._langchain._middleware import _observed  # noqa: E402
from langhooks.integrations._langchain._run import BridgedRun, pause_data  # noqa: E402
from langhooks.integrations.langchain import (  # noqa: E402
    AsyncLangHooksCallbackHandler,
    BridgeWarning,
    FrameworkModel,
    LangHooksCallbackHandler,
    LangHooksMiddleware,
    resume_command,
)
from langhooks.models import ChatRequest  # noqa: E402
from tests.bridges._langchain_model import ScriptedChatModel  # noqa: E402
from tests.bridges._script import Turn  # noqa: E402

LEDGER: list[str] = []


@tool
def pay(to: str) -> str:
    """Pay someone."""
    LEDGER.append(to)
    return f"paid {to}"


@tool
def ask_helper(question: str) -> str:
    """Ask a helper model (a nested model call)."""
    helper = ScriptedChatModel(turns=[Turn(text="helper says hi")], streaming=True)
    return str(helper.invoke([HumanMessage(question)]).content)


def _pay(call_id: str = "c1", to: str = "Bob") -> Turn:
    return Turn(calls=(ToolCall(call_id=call_id, name="pay", arguments={"to": to}),))


def _names(recorder: RecordingChainHandler) -> list[str]:
    return [name for name, _ in recorder.events]


def _graph(model: ScriptedChatModel, tools: Sequence[Any], saver: Any = None) -> Any:
    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    async def acall_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    sync_builder = StateGraph(MessagesState)
    sync_builder.add_node("model", call_model)
    sync_builder.add_node("tools", ToolNode(list(tools)))
    sync_builder.add_edge(START, "model")
    sync_builder.add_conditional_edges("model", route, ["tools", END])
    sync_builder.add_edge("tools", "model")
    return sync_builder.compile(checkpointer=saver)


_INPUT: Any = {"messages": [{"role": "user", "content": "go"}]}
_THREAD: Any = {"configurable": {"thread_id": "t1"}}


class Refuser(ChainCallbackHandler):
    """Denies every call."""

    @override
    def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext, /
    ) -> ReviewDecision:
        return Deny("no")


class Pauser(ChainCallbackHandler):
    """Interrupts a call until a human decided, then lets it through."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    @override
    def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext, /
    ) -> ReviewDecision | None:
        self.seen.append(review.human_decision)
        return Interrupt("ok?") if review.human_decision is None else None


class TestCallbackHandler:
    """LangHooksCallbackHandler observes any Runnable or graph."""

    def test_a_graph_run_streams_identifies_and_ends_once(self) -> None:
        """A graph's run gives the run, model and tool events, one terminal."""
        chain = RecordingChainHandler()
        stream = RecordingStreamingHandler()
        model = ScriptedChatModel(
            turns=[
                Turn(thinking="hm", text="Paying now.", calls=_pay().calls),
                Turn(text="Done."),
            ],
            streaming=True,
        )
        _graph(model, [pay]).invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(chain, stream)]}
        )
        names = _names(chain)
        assert names[0] == "on_run_start"
        assert names[-1] == "on_run_complete"
        assert names.count("on_run_complete") == 1
        assert "on_tool_call_identified" in names
        assert "on_tool_response_created" in names
        assert stream.text == "Paying now.Done."
        assert [a[0].text for a in stream.of("on_partial_thinking")] == ["hm"]
        assert len(stream.of("on_complete_response")) == 2

    def test_stream_mode_messages_makes_the_model_stream(self) -> None:
        """Under stream_mode="messages" a model that would answer whole streams, and
        the handler hears the deltas."""
        chain = RecordingChainHandler()
        model = ScriptedChatModel(turns=[Turn(text="one two")])
        graph = _graph(model, [pay])
        config: Any = {"callbacks": [LangHooksCallbackHandler(chain)]}
        list(graph.stream(_INPUT, config, stream_mode="messages"))
        assert "on_llm_new_delta" in _names(chain)
        assert "on_llm_new_message" not in _names(chain)

    def test_a_whole_answer_is_a_new_message(self) -> None:
        """A model that does not stream gives on_llm_new_message, no delta."""
        chain = RecordingChainHandler()
        model = ScriptedChatModel(turns=[Turn(text="whole")])
        _graph(model, [pay]).invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(chain)]}
        )
        assert "on_llm_new_message" in _names(chain)
        assert "on_llm_new_delta" not in _names(chain)

    def test_async_handlers_are_awaited_under_astream(self) -> None:
        """AsyncLangHooksCallbackHandler awaits async handlers in ainvoke/astream."""
        heard: list[str] = []

        class Async(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: Any, /) -> None:
                heard.append("start")

            @override
            async def on_run_complete(self, chain: Any, result: Any, /) -> None:
                heard.append(result.status)

        model = ScriptedChatModel(turns=[Turn(text="hi")], streaming=True)
        graph = _graph(model, [pay])

        async def main() -> None:
            config: Any = {"callbacks": [AsyncLangHooksCallbackHandler(Async())]}
            async for _ in graph.astream(_INPUT, config):
                pass

        asyncio.run(main())
        assert heard == ["start", "ok"]

    def test_a_nested_model_call_is_its_own_run(self) -> None:
        """A model called inside a tool is a run of its own, a child of the run's,
        and its tokens stay out of the run's stream."""
        buffer = io.StringIO()
        model = ScriptedChatModel(
            turns=[
                Turn(
                    calls=(
                        ToolCall(
                            call_id="c1", name="ask_helper", arguments={"question": "?"}
                        ),
                    )
                ),
                Turn(text="Done."),
            ],
            streaming=True,
        )
        _graph(model, [ask_helper]).invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(EventRecorder(buffer))]}
        )
        records = list(read_events(buffer.getvalue().splitlines()))
        runs = {r.run_id for r in records if r.event == "on_run_start"}
        assert len(runs) == 2
        outer = records[0].run_id
        (inner,) = runs - {outer}
        inner_start = next(r for r in records if r.run_id == inner)
        assert inner_start.parent_id == outer
        deltas = [
            r for r in records if r.event == "on_llm_new_delta" and r.run_id == outer
        ]
        texts = "".join(r.payload["deltas"][0].get("text", "") for r in deltas)
        assert "helper" not in texts

    def test_a_model_alone_is_a_run(self) -> None:
        """A chat model invoked on its own with the handler is a run."""
        chain = RecordingChainHandler()
        model = ScriptedChatModel(turns=[Turn(text="alone")])
        model.invoke(
            [HumanMessage("x")], {"callbacks": [LangHooksCallbackHandler(chain)]}
        )
        assert _names(chain)[0] == "on_run_start"
        assert _names(chain)[-1] == "on_run_complete"

    def test_a_failed_run_ends_with_on_error(self) -> None:
        """A model error nobody retries ends the run with on_llm_error, on_error."""
        chain = RecordingChainHandler()
        model = ScriptedChatModel(
            turns=[Turn(fail_first="rate_limited")], streaming=True
        )
        with pytest.raises(LangHooksError):
            _graph(model, [pay]).invoke(
                _INPUT, {"callbacks": [LangHooksCallbackHandler(chain)]}
            )
        names = _names(chain)
        assert names[-2:] == ["on_llm_error", "on_error"]

    def test_a_decision_it_cannot_honour_fails_closed(self) -> None:
        """A denial refuses the call with a warning naming why; the tool never runs."""
        LEDGER.clear()
        model = ScriptedChatModel(turns=[_pay(), Turn(text="Done.")], streaming=True)
        handler = LangHooksCallbackHandler(Refuser())
        with (
            pytest.warns(BridgeWarning, match="cannot honour Deny"),
            pytest.raises(LangHooksError),
        ):
            _graph(model, [pay]).invoke(_INPUT, {"callbacks": [handler]})
        assert LEDGER == []

    def test_a_model_in_another_middleware_hook_is_nested(self) -> None:
        """A model another middleware calls in its before_model is a run of its
        own, not part of the agent's."""
        buffer = io.StringIO()

        class Summarize(AgentMiddleware[AgentState[Any], Any, Any]):
            @override
            def before_model(
                self, state: AgentState[Any], runtime: Any
            ) -> dict[str, Any] | None:
                helper = ScriptedChatModel(turns=[Turn(text="summary")])
                helper.invoke([HumanMessage("summarize")])
                return None

        agent = create_agent(
            ScriptedChatModel(turns=[Turn(text="Done.")]), [], middleware=[Summarize()]
        )
        agent.invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(EventRecorder(buffer))]}
        )
        records = list(read_events(buffer.getvalue().splitlines()))
        starts = [r for r in records if r.event == "on_run_start"]
        assert len(starts) == 2
        assert starts[1].parent_id == starts[0].run_id

    def test_a_subgraph_model_is_nested(self) -> None:
        """A model in a sub-graph is a run of its own."""
        buffer = io.StringIO()
        inner = _graph(ScriptedChatModel(turns=[Turn(text="inner")]), [pay])
        outer = StateGraph(MessagesState)
        outer.add_node("inner", inner)
        outer.add_edge(START, "inner")
        outer.add_edge("inner", END)
        outer.compile().invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(EventRecorder(buffer))]}
        )
        records = list(read_events(buffer.getvalue().splitlines()))
        assert len({r.run_id for r in records if r.event == "on_run_start"}) == 2

    def test_a_tool_that_pauses_the_graph_ends_the_run_interrupted(self) -> None:
        """A tool calling interrupt() pauses the graph: the run ends "interrupted"
        with the interrupt's value, and the tool did not fail."""

        @tool
        def confirm(what: str) -> str:
            """Ask the user."""
            return str(interrupt({"question": what}))

        chain = RecordingChainHandler()
        turns = [
            Turn(
                calls=(ToolCall(call_id="c1", name="confirm", arguments={"what": "?"}),)
            ),
            Turn(text="ok"),
        ]
        graph = _graph(ScriptedChatModel(turns=turns), [confirm], InMemorySaver())
        config: Any = {**_THREAD, "callbacks": [LangHooksCallbackHandler(chain)]}
        graph.invoke(_INPUT, config)
        ((_, result),) = chain.of("on_run_complete")
        assert result.status == "interrupted"
        assert result.interrupt_data == {"question": "?"}
        assert chain.of("on_tool_execution_failed") == []

    def test_a_cancelled_stream_stops_its_partials(self) -> None:
        """After cancel(), the streaming handler hears nothing more of that call."""

        class Canceller(RecordingStreamingHandler):
            @override
            def on_partial_response(self, partial: Any, context: Any) -> None:
                super().on_partial_response(partial, context)
                context.handle.cancel()

        stream = Canceller()
        chain = RecordingChainHandler()
        model = ScriptedChatModel(turns=[Turn(text="one two three")], streaming=True)
        _graph(model, [pay]).invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(chain, stream)]}
        )
        assert stream.text == "one "
        assert stream.of("on_complete_response") == []
        assert _names(chain)[-1] == "on_run_complete"

    def test_a_tool_a_node_calls_is_reported(self) -> None:
        """A tool a node calls itself (not through a ToolNode) is reported, with
        its plain output."""
        chain = RecordingChainHandler()

        def node(state: MessagesState) -> dict[str, Any]:
            pay.invoke({"to": "Zoe"})
            return {"messages": [AIMessage("paid")]}

        builder = StateGraph(MessagesState)
        builder.add_node("node", node)
        builder.add_edge(START, "node")
        builder.compile().invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(chain)]}
        )
        ((_, call, result),) = chain.of("on_tool_execution_completed")
        assert call.arguments == {"to": "Zoe"}
        assert result.content[0].content == "paid Zoe"

    @pytest.mark.asyncio
    async def test_events_of_runs_it_never_saw_are_ignored(self) -> None:
        """Ends of runs the handler never saw start (it was attached mid-run) say
        nothing."""
        chain = RecordingChainHandler()
        unknown = uuid.uuid4()
        for handler in (
            LangHooksCallbackHandler(chain),
            AsyncLangHooksCallbackHandler(chain),
        ):
            calls = [
                handler.on_chain_end({}, run_id=unknown),
                handler.on_chain_error(RuntimeError("x"), run_id=unknown),
                handler.on_llm_new_token("x", run_id=unknown),
                handler.on_llm_end(LLMResult(generations=[]), run_id=unknown),
                handler.on_llm_error(RuntimeError("x"), run_id=unknown),
                handler.on_tool_start({"name": "pay"}, "", run_id=unknown),
                handler.on_tool_end("x", run_id=unknown),
                handler.on_tool_error(RuntimeError("x"), run_id=unknown),
            ]
            for call in calls:
                if inspect.isawaitable(call):
                    await call
        assert chain.events == []

    def test_async_runs_report_failures(self) -> None:
        """Under astream a raising tool and a failing model are reported, and a
        handler that does not review is not asked."""
        heard: list[str] = []

        class Failures(ChainCallbackHandler):
            @override
            def on_tool_execution_exception(
                self, chain: Any, call: ToolCall, exception: BaseException, /
            ) -> None:
                heard.append(f"tool: {exception}")

            @override
            def on_error(self, chain: Any, error: LangHooksError, /) -> None:
                heard.append(f"run: {error.type}")

        @tool
        def broken() -> str:
            """Always fails."""
            raise RuntimeError("boom")

        turns = [
            Turn(calls=(ToolCall(call_id="c1", name="broken", arguments={}),)),
            Turn(fail_first="rate_limited"),
        ]
        model = ScriptedChatModel(turns=turns, streaming=True).bind_tools([broken])

        async def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        def route(state: MessagesState) -> str:
            last = state["messages"][-1]
            return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

        builder = StateGraph(MessagesState)
        builder.add_node("model", call_model)
        builder.add_node("tools", ToolNode([broken], handle_tool_errors=True))
        builder.add_edge(START, "model")
        builder.add_conditional_edges("model", route, ["tools", END])
        builder.add_edge("tools", "model")
        graph = builder.compile()
        handler = AsyncLangHooksCallbackHandler(Failures(), RecordingStreamingHandler())

        async def main() -> None:
            async for _ in graph.astream(_INPUT, {"callbacks": [handler]}):
                pass

        with pytest.raises(LangHooksError):
            asyncio.run(main())
        assert heard == ["tool: boom", "run: rate_limited"]

    def test_a_handler_that_does_not_review_is_not_asked(self) -> None:
        """Tools run unreviewed when no handler overrides on_tool_call_review."""
        stream = RecordingStreamingHandler()
        model = ScriptedChatModel(turns=[_pay("c1", "Sam"), Turn(text="ok")])
        LEDGER.clear()
        _graph(model, [pay]).invoke(
            _INPUT, {"callbacks": [LangHooksCallbackHandler(stream)]}
        )
        assert LEDGER == ["Sam"]

    def test_handlers_are_checked(self) -> None:
        """A non-handler, or an async one in the sync handler, is a TypeError."""
        with pytest.raises(TypeError, match="takes langhooks handlers"):
            LangHooksCallbackHandler(object())
        with pytest.raises(TypeError, match="AsyncLangHooksCallbackHandler"):
            LangHooksCallbackHandler(AsyncChainCallbackHandler())


def _agent(model: ScriptedChatModel, *handlers: Any, saver: Any = None) -> Any:
    return create_agent(
        model, [pay], middleware=[LangHooksMiddleware(*handlers)], checkpointer=saver
    )


def _run(agent: Any, value: Any, config: Any, mode: str) -> Any:
    """``agent.invoke`` or, for mode "async", ``agent.ainvoke`` in an event loop."""
    if mode == "async":
        return asyncio.run(agent.ainvoke(value, config))
    return agent.invoke(value, config)


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


class Approver(ChainCallbackHandler):
    """Interrupts a call, then answers the human's approval with ``then``."""

    def __init__(self, *then: ReviewDecision | None) -> None:
        self.then = list(then)
        self.seen: list[str | None] = []

    @override
    def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext, /
    ) -> ReviewDecision | None:
        self.seen.append(review.human_decision)
        if review.human_decision is None:
            return Interrupt("ok?")
        return self.then.pop(0) if self.then else None


class TestMiddleware:
    """LangHooksMiddleware reviews, pauses and resumes create_agent runs."""

    @MODES
    def test_a_human_rejection_answers_without_running(self, mode: str) -> None:
        """Rejecting an interrupted call answers the model, and the tool never runs."""
        LEDGER.clear()
        recorder = RecordingChainHandler()
        agent = _agent(
            ScriptedChatModel(turns=[_pay(), Turn(text="ok")], streaming=True),
            recorder,
            Pauser(),
            saver=InMemorySaver(),
        )
        paused = _run(agent, _INPUT, _THREAD, mode)["__interrupt__"]
        reject = resume_command(paused, {"c1": Decision.reject("not today")})
        result = _run(agent, reject, _THREAD, mode)
        assert LEDGER == []
        tool_message = result["messages"][-2]
        assert tool_message.content == "not today"
        assert tool_message.status == "error"
        failed = recorder.of("on_tool_execution_failed")
        assert [f[2].is_error for f in failed] == [False]

    @MODES
    def test_a_human_edit_is_reviewed_again_and_runs(self, mode: str) -> None:
        """An edit runs with the human's arguments after review sees "edit"."""
        LEDGER.clear()
        pauser = Pauser()
        agent = _agent(
            ScriptedChatModel(turns=[_pay(), Turn(text="ok")], streaming=True),
            pauser,
            saver=InMemorySaver(),
        )
        paused = _run(agent, _INPUT, _THREAD, mode)["__interrupt__"]
        edit = resume_command(paused, {"c1": Decision.edit({"to": "Ann"})})
        _run(agent, edit, _THREAD, mode)
        assert LEDGER == ["Ann"]
        assert pauser.seen == [None, "edit"]

    @MODES
    def test_review_may_still_deny_or_pause_after_a_human(self, mode: str) -> None:
        """After an approval the reviewers decide again: a second interrupt pauses
        the run again, and a denial then answers without running."""
        LEDGER.clear()
        recorder = RecordingChainHandler()
        approver = Approver(Interrupt("sure?"), Deny("changed my mind"))
        agent = _agent(
            ScriptedChatModel(turns=[_pay(), Turn(text="ok")]),
            recorder,
            approver,
            saver=InMemorySaver(),
        )
        paused = _run(agent, _INPUT, _THREAD, mode)["__interrupt__"]
        again = _run(
            agent, resume_command(paused, {"c1": Decision.approve()}), _THREAD, mode
        )
        paused = again["__interrupt__"]
        _run(agent, resume_command(paused, {"c1": Decision.approve()}), _THREAD, mode)
        assert LEDGER == []
        assert approver.seen == [None, "approve", "approve"]
        (failed,) = recorder.of("on_tool_execution_failed")
        assert "changed my mind" in failed[2].content[0].content

    @MODES
    def test_a_rewrite_runs_with_the_new_arguments(self, mode: str) -> None:
        """UpdateArguments runs the call with the reviewer's arguments."""
        LEDGER.clear()

        class Rewriter(ChainCallbackHandler):
            @override
            def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext, /
            ) -> ReviewDecision:
                return UpdateArguments({"to": "Eve"})

        agent = _agent(ScriptedChatModel(turns=[_pay(), Turn(text="ok")]), Rewriter())
        _run(agent, _INPUT, None, mode)
        assert LEDGER == ["Eve"]

    @MODES
    def test_a_raising_tool_is_an_error_result_and_the_run_goes_on(
        self, mode: str
    ) -> None:
        """A tool that raises answers the model with the error, as LLMChain does."""
        recorder = RecordingChainHandler()
        turns = [
            Turn(calls=(ToolCall(call_id="c1", name="broken", arguments={}),)),
            Turn(text="ok"),
        ]

        @tool
        def broken() -> str:
            """Always fails."""
            raise RuntimeError("boom")

        agent = create_agent(
            ScriptedChatModel(turns=turns),
            [broken],
            middleware=[LangHooksMiddleware(recorder)],
        )
        result = _run(agent, _INPUT, None, mode)
        assert (
            result["messages"][-2].content
            == "Error: the tool failed: RuntimeError: boom"
        )
        names = _names(recorder)
        assert names.index("on_tool_execution_exception") < names.index(
            "on_run_complete"
        )

    @MODES
    def test_a_call_of_an_unknown_tool_is_not_reviewed(self, mode: str) -> None:
        """A call naming no tool is answered by LangChain and reported as failed."""
        recorder = RecordingChainHandler(review=lambda *a: Deny("never asked"))
        turns = [
            Turn(calls=(ToolCall(call_id="c1", name="nope", arguments={}),)),
            Turn(text="ok"),
        ]
        agent = _agent(ScriptedChatModel(turns=turns), recorder)
        _run(agent, _INPUT, None, mode)
        assert recorder.of("on_tool_call_review") == []
        assert [f[1].name for f in recorder.of("on_tool_execution_failed")] == ["nope"]

    @MODES
    def test_a_tool_that_pauses_the_graph_pauses_the_run(self, mode: str) -> None:
        """A tool's own interrupt() makes its call wait: the run ends "interrupted"."""

        @tool
        def confirm(what: str) -> str:
            """Ask the user."""
            return str(interrupt({"message": "sure?", "what": what}))

        recorder = RecordingChainHandler()
        turns = [
            Turn(
                calls=(ToolCall(call_id="c1", name="confirm", arguments={"what": "x"}),)
            ),
            Turn(text="ok"),
        ]
        agent = create_agent(
            ScriptedChatModel(turns=turns),
            [confirm],
            middleware=[LangHooksMiddleware(recorder)],
            checkpointer=InMemorySaver(),
        )
        _run(agent, _INPUT, _THREAD, mode)
        ((_, result),) = recorder.of("on_run_complete")
        assert result.status == "interrupted"
        ((_, waiting),) = recorder.of("on_tool_interrupted")
        assert waiting[0].display_text == "sure?"

    @MODES
    def test_a_pause_inside_the_model_step_ends_the_run_interrupted(
        self, mode: str
    ) -> None:
        """A middleware inside this one that pauses the model step ends the run
        "interrupted", once."""

        class Gate(AgentMiddleware[AgentState[Any], Any, Any]):
            @override
            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                interrupt({"message": "go on?"})
                return handler(request)

            @override
            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                interrupt({"message": "go on?"})
                return await handler(request)

        recorder = RecordingChainHandler()
        agent = create_agent(
            ScriptedChatModel(turns=[Turn(text="ok")]),
            [],
            middleware=[LangHooksMiddleware(recorder), Gate()],
            checkpointer=InMemorySaver(),
        )
        _run(agent, _INPUT, _THREAD, mode)
        ((_, result),) = recorder.of("on_run_complete")
        assert result.status == "interrupted"
        assert result.interrupt_data == {"message": "go on?"}

    def test_a_run_nobody_reviews_asks_nothing(self) -> None:
        """Without a reviewer every call is allowed, sync and async, and no review
        event is built."""
        LEDGER.clear()
        stream = RecordingStreamingHandler()
        for mode in ("sync", "async"):
            agent = _agent(ScriptedChatModel(turns=[_pay(), Turn(text="ok")]), stream)
            _run(agent, _INPUT, None, mode)
        assert LEDGER == ["Bob", "Bob"]

    def test_review_adds_no_graph_node_per_turn(self) -> None:
        """The review runs inside the model step: the middleware's only nodes are
        the run's start and end, none per model turn."""
        agent = _agent(
            ScriptedChatModel(turns=[Turn(text="ok")]), RecordingChainHandler()
        )
        ours = {name for name in agent.get_graph().nodes if "LangHooks" in name}
        assert ours == {
            "LangHooksMiddleware.before_agent",
            "LangHooksMiddleware.after_agent",
        }

    def test_model_callbacks_are_added_outside_a_graph_too(self) -> None:
        """The model step's callbacks are added whatever the config holds."""
        observer = LangHooksCallbackHandler()
        with _observed(observer):
            callbacks = ensure_config()["callbacks"]
        assert isinstance(callbacks, BaseCallbackManager)
        assert observer in callbacks.handlers

    def test_stream_and_astream_give_the_same_events(self) -> None:
        """stream (stream_mode="messages") and astream hear what invoke hears."""

        def events(run: Any) -> list[str]:
            recorder = RecordingChainHandler()
            agent = _agent(
                ScriptedChatModel(turns=[_pay(), Turn(text="ok")], streaming=True),
                recorder,
            )
            run(agent)
            return _names(recorder)

        async def consume(agent: Any) -> None:
            async for _ in agent.astream(_INPUT):
                pass

        invoked = events(lambda agent: agent.invoke(_INPUT))
        streamed = events(
            lambda agent: list(agent.stream(_INPUT, stream_mode="messages"))
        )
        astreamed = events(lambda agent: asyncio.run(consume(agent)))
        assert invoked == streamed == astreamed
        assert invoked.count("on_run_complete") == 1

    def test_async_handlers_need_the_async_entry_points(self) -> None:
        """An async handler serves ainvoke; invoke says what to do instead."""
        heard: list[str] = []

        class Async(AsyncChainCallbackHandler):
            @override
            async def on_run_complete(self, chain: Any, result: Any, /) -> None:
                heard.append(result.status)

        agent = _agent(
            ScriptedChatModel(turns=[Turn(text="hi")], streaming=True), Async()
        )
        with pytest.raises(TypeError, match="ainvoke"):
            agent.invoke(_INPUT)
        asyncio.run(agent.ainvoke(_INPUT))
        assert heard == ["ok"]

    @MODES
    def test_a_model_step_that_gives_up_ends_with_on_error(self, mode: str) -> None:
        """A model failure that is not retried ends the run with on_error, once."""
        recorder = RecordingChainHandler()
        agent = _agent(
            ScriptedChatModel(turns=[Turn(fail_first="rate_limited")]), recorder
        )
        with pytest.raises(LangHooksError):
            _run(agent, _INPUT, None, mode)
        assert _names(recorder)[-2:] == ["on_llm_error", "on_error"]

    def test_resume_needs_a_decision_per_interrupt(self) -> None:
        """resume_command refuses an interrupt without a decision; a resume that is
        not a Decision is a TypeError."""
        agent = _agent(
            ScriptedChatModel(turns=[_pay(), Turn(text="ok")]),
            Pauser(),
            saver=InMemorySaver(),
        )
        paused = agent.invoke(_INPUT, _THREAD)["__interrupt__"]
        with pytest.raises(ValueError, match="no decision"):
            resume_command(paused, {})
        with pytest.raises(TypeError, match="Decision"):
            agent.invoke(Command(resume="yes"), _THREAD)

    @MODES
    def test_a_resume_in_this_process_keeps_the_run_id(self, mode: str) -> None:
        """The resumed run has the paused run's id, as LLMChain's resume does."""
        buffer = io.StringIO()
        agent = _agent(
            ScriptedChatModel(turns=[_pay(), Turn(text="ok")]),
            EventRecorder(buffer),
            Pauser(),
            saver=InMemorySaver(),
        )
        paused = _run(agent, _INPUT, _THREAD, mode)["__interrupt__"]
        _run(agent, resume_command(paused, {"c1": Decision.approve()}), _THREAD, mode)
        runs = {r.run_id for r in read_events(buffer.getvalue().splitlines())}
        assert len(runs) == 1


class TestDownstream:
    """What works on an LLMChain run works on a bridged one."""

    def test_a_recording_replays_to_the_same_events(self) -> None:
        """EventRecorder's recording of an agent run replays to equal events."""
        buffer = io.StringIO()
        agent = _agent(
            ScriptedChatModel(turns=[_pay(), Turn(text="ok")], streaming=True),
            EventRecorder(buffer),
        )
        agent.invoke(_INPUT)
        live = list(read_events(buffer.getvalue().splitlines()))
        again = io.StringIO()
        with warnings.catch_warnings():
            replay_events(live, EventRecorder(again))
        replayed = list(read_events(again.getvalue().splitlines()))

        def without_model(payload: Any) -> dict[str, Any]:
            # A replayed chain's model is the recording's stand-in, as for LLMChain.
            return {k: v for k, v in payload.items() if k != "model"}

        assert [(r.event, without_model(r.payload)) for r in replayed] == [
            (r.event, without_model(r.payload)) for r in live
        ]
        model = next(r.payload["model"] for r in live if r.event == "on_llm_call_start")
        assert model["class"] == "FrameworkModel"
        assert model["name"] == "scripted"

    def test_the_redis_publisher_streams_the_run(self) -> None:
        """RedisEventPublisher writes a bridged run's records, which follow()
        re-drives into another handler, to the run's end."""
        need_module("redis", "redis")
        import redis

        from langhooks.integrations.redis import RedisEventPublisher, follow
        from tests._services import need_redis

        client = redis.Redis.from_url(need_redis())
        prefix = f"langhooks-test:{uuid.uuid4().hex}:"
        try:
            publisher = RedisEventPublisher(client, prefix=prefix)
            buffer = io.StringIO()
            agent = _agent(
                ScriptedChatModel(turns=[_pay(), Turn(text="ok")], streaming=True),
                publisher,
                EventRecorder(buffer),
            )
            agent.invoke(_INPUT)
            assert publisher.flush(timeout=10)
            live = list(read_events(buffer.getvalue().splitlines()))
            followed = RecordingChainHandler()
            follow(client, live[0].run_id or "", followed, prefix=prefix, block_ms=100)
            assert _names(followed) == [r.event for r in live]
        finally:
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()


class TestFrameworkModel:
    """The model handlers see for a framework's model."""

    def test_it_cannot_be_streamed(self) -> None:
        """stream and astream refuse, saying why."""
        model = FrameworkModel("gpt", "LangChain")
        request = ChatRequest(messages=())
        with pytest.raises(LangHooksError, match="LangChain calls"):
            model.stream(request, RecordingStreamingHandler())
        with pytest.raises(LangHooksError, match="LangChain calls"):
            asyncio.run(model.astream(request, RecordingStreamingHandler()))
        assert repr(model) == "FrameworkModel('gpt', framework='LangChain')"


def _span_tree(
    spans: Sequence[Any],
) -> list[tuple[int, str, tuple[tuple[str, Any], ...]]]:
    """Each span as (depth, name, its GenAI attributes but ids and model names)."""
    by_id = {s.context.span_id: s for s in spans}

    def depth(span: Any) -> int:
        parent = span.parent
        return (
            0
            if parent is None or parent.span_id not in by_id
            else 1 + depth(by_id[parent.span_id])
        )

    skipped = ("id", "model", "conversation", "provider", "time_to_first_chunk")
    out = []
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        attributes = tuple(
            sorted(
                (k, v)
                for k, v in (span.attributes or {}).items()
                if k.startswith("gen_ai.") and not any(word in k for word in skipped)
            )
        )
        name = span.name.split(" ")[0] if span.name.startswith("chat") else span.name
        out.append((depth(span), name, attributes))
    return out


class TestOpenTelemetry:
    """OpenTelemetryHandler gives a bridged run the span tree of an LLMChain run."""

    def test_the_span_tree_is_llmchains(self) -> None:
        """invoke_agent, chat, execute_tool, chat: the same tree and attributes."""
        need_module("opentelemetry.sdk", "opentelemetry")
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        from langhooks import Message
        from langhooks.chain import LLMChain
        from langhooks.integrations.opentelemetry import OpenTelemetryHandler
        from langhooks.models import ScriptedChatModel as LangHooksModel
        from langhooks.models import ScriptedTurn

        def traced() -> tuple[InMemorySpanExporter, OpenTelemetryHandler]:
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            return exporter, OpenTelemetryHandler(tracer_provider=provider)

        turns = [_pay(), Turn(text="Done.")]
        ours, handler = traced()
        model = LangHooksModel(
            [
                ScriptedTurn(tool_calls=t.calls, text=t.text, usage=t.usage)
                for t in turns
            ]
        )
        tool_ = Tool(
            "pay",
            lambda arguments, _c: f"paid {arguments['to']}",
            description="Pay someone.",
        )
        LLMChain(model, tools=[tool_], callbacks=[handler]).add_message(
            Message.user("go")
        ).run()
        theirs, handler = traced()
        _agent(ScriptedChatModel(turns=turns, streaming=True), handler).invoke(_INPUT)
        assert _span_tree(theirs.get_finished_spans()) == _span_tree(
            ours.get_finished_spans()
        )
        assert [
            s.name.split(" ")[0]
            for s in sorted(
                theirs.get_finished_spans(), key=lambda s: s.start_time or 0
            )
        ] == ["invoke_agent", "chat", "execute_tool", "chat"]


class TestTranslation:
    """LangChain's values as langhooks values, and the guards of a bridged run."""

    def test_content_blocks_become_text_and_thinking(self) -> None:
        """Strings, text, reasoning and thinking blocks map; others are dropped."""
        message = AIMessage(
            content=[
                "a",
                "",
                {"type": "text", "text": "b"},
                {"type": "reasoning", "reasoning": "r"},
                {"type": "thinking", "thinking": "t"},
                {"type": "image", "url": "x"},
            ]
        )
        converted = as_message(message)
        assert converted.text == "ab"
        assert converted.thinking == "rt"
        assert as_message(SystemMessage("s")).role == "system"
        assert as_message(HumanMessage("h")).role == "user"

    def test_a_response_says_why_it_stopped(self) -> None:
        """finish_reason and stop_reason map to FinishReason; usage may be absent."""
        cases = {"length": "length", "content_filter": "content_filter", None: "stop"}
        for reason, expected in cases.items():
            message = AIMessage("x", response_metadata={"finish_reason": reason})
            response = as_response(message, "m")
            assert response.finish_reason == expected
            assert response.token_usage is None
            assert response.model_name == "m"

    def test_errors_are_classified(self) -> None:
        """An exception with an HTTP status is classified; others are stream errors."""

        class Limited(Exception):
            status_code = 429

        assert as_error(Limited("slow")).type == "rate_limited"
        assert as_error(RuntimeError("x")).type == "stream_error"
        error = LangHooksError("timeout", "t")
        assert as_error(error) is error

    def test_a_tool_runs_through_langchain(self) -> None:
        """A LangChain tool's Tool runs it; a schema-only tool says it cannot."""
        context = ToolContext(call=ToolCall(call_id="c", name="pay"))
        assert as_tool(pay).function({"to": "Al"}, context) == "paid Al"

        @tool
        def listing() -> list[int]:
            """A list."""
            return [1, 2]

        assert as_tool(listing).function({}, context) == "[1, 2]"
        schema_only = as_tool({"name": "far", "parameters": {}})
        with pytest.raises(LangHooksError, match="only known by its schema"):
            schema_only.function(
                {}, ToolContext(call=ToolCall(call_id="c", name="far"))
            )
        assert model_name(object(), {"model": "gpt"}) == "gpt"
        assert model_name(object(), None) is None

    def test_the_metadata_of_a_run_outside_a_graph_is_not_nested(self) -> None:
        """Without LangGraph metadata a run is nobody's nested part."""
        assert not _nested_node(None, chain=True)

    def test_interrupt_data_of_several_interrupts(self) -> None:
        """Several interrupts are listed, as LLMChain lists several calls."""
        assert pause_data(["a", "b"]) == {"interrupts": ("a", "b")}

    def test_the_guards_of_a_run(self) -> None:
        """Events for attempts or tools the run does not know say nothing, and a
        run ends once."""
        run = BridgedRun(Invocation(name="run"))
        assert run.token("x", None, "t") == []
        assert run.model_end("x", AIMessage("a")) == []
        assert run.model_error("x", RuntimeError()) == []
        assert run.tool_end("x", "out") == []
        assert run.tool_error("x", RuntimeError()) == []
        run.model_start("k", [])
        assert run.model_end("k", None) == []  # a text LLM's answer
        run.model_start("k", [])
        assert run.tool_error("k", KeyboardInterrupt()) == []
        # a chunk without a message (a text LLM's token), then a nameless fragment
        names = [name for _, name, _ in run.token("k", None, "hi")]
        assert names == ["on_partial_response", "on_llm_new_delta"]
        early = AIMessageChunk(
            content="", tool_call_chunks=[tool_call_chunk(args="{", index=0)]
        )
        assert run.token("k", early, "") == []
        run.model_start("quiet", [])
        ended = [name for _, name, _ in run.model_end("quiet", AIMessage("done"))]
        assert "on_llm_token_usage" not in ended  # the answer reported no usage
        run.model_start("gone", [])
        run.calls["gone"].handle.cancel()
        failed = [name for _, name, _ in run.model_error("gone", RuntimeError())]
        assert failed == ["on_llm_error"]  # nothing to the cancelled stream
        assert [name for _, name, _ in run.fail(RuntimeError("x"))] == ["on_error"]
        assert run.fail(RuntimeError("x")) == []
        assert run.complete() == []
