"""LLMChain: the snapshot API, modes, tools, review, decisions and retries."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChatResponse,
    Deny,
    Interrupt,
    LangHooksError,
    Message,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
    ToolContext,
    ToolResult,
    UpdateArguments,
    current_invocation,
)
from langhooks.chain import Decision, LLMChain, RetryPolicy, Tool
from langhooks.chain._run_loop import INTERRUPT_STAND_IN, check_arguments
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler
from tests.chain.scenarios import (
    BROKEN,
    CLOCK,
    USAGE,
    WEATHER,
    asks,
    call,
    collapse,
    make_chain,
    no_wait,
    says,
    transient,
)


class SilentModel:
    """A ChatModel that answers without streaming (only the terminal call)."""

    def __init__(self, response: object) -> None:
        self.response = response

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Deliver the whole answer at once."""
        if isinstance(self.response, ChatResponse):
            handler.on_complete_response(self.response)
        return self.response  # type: ignore[return-value]

    async def astream(
        self,
        request: ChatRequest,
        handler: Any,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin: ``stream``'s answer, its terminal call awaited."""
        response = self.stream(request, StreamingChatResponseHandler())
        if isinstance(response, ChatResponse):
            done = handler.on_complete_response(response)
            if inspect.isawaitable(done):
                await done
        return response


class BrokenModel(SilentModel):
    """A ChatModel with a bug: it raises a plain exception."""

    def __init__(self) -> None:
        super().__init__(None)

    @override
    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Fail like a bug would."""
        raise ZeroDivisionError("oops")


class TestSnapshot:
    """LLMChain is an immutable, validated snapshot."""

    def test_add_returns_new_chains(self) -> None:
        """add_message(s), add_tools and add_callback leave the original alone."""
        chain = LLMChain(ScriptedChatModel([]))
        handler = RecordingChainHandler()
        grown = (
            chain.add_message(Message.user("a"))
            .add_messages([Message.user("b")])
            .add_tools([WEATHER])
            .add_callback(handler)
        )
        assert chain.messages == ()
        assert chain.tools == ()
        assert chain.callbacks == ()
        assert [m.text for m in grown.messages] == ["a", "b"]
        assert grown.tools == (WEATHER,)
        assert grown.callbacks == (handler,)

    def test_duplicate_tools_are_rejected(self) -> None:
        """Tool names must be unique."""
        with pytest.raises(ValueError, match="unique"):
            LLMChain(ScriptedChatModel([]), tools=[WEATHER]).add_tools([BROKEN])

    @pytest.mark.parametrize(
        ("options", "error"),
        [
            ({"model": "gpt"}, TypeError),
            ({"callbacks": [object()]}, TypeError),
            ({"fallbacks": ["gpt"]}, TypeError),
            ({"max_retry_count": 0}, ValueError),
            ({"current_failure_count": -1}, ValueError),
            ({"retry": 3}, TypeError),
        ],
    )
    def test_bad_fields(self, options: dict[str, Any], error: type[Exception]) -> None:
        """Each field says what it needs."""
        arguments: dict[str, Any] = {"model": ScriptedChatModel([]), **options}
        model = arguments.pop("model")
        with pytest.raises(error):
            LLMChain(model, **arguments)


class TestProgrammingErrors:
    """Mistakes in how run() is called raise before anything fires."""

    @pytest.mark.parametrize(
        ("mode", "options", "match"),
        [
            ("forever", {}, "mode must be"),
            ("single", {"tool_name": "get_weather"}, "tool_name goes"),
            ("until_tool_used", {}, "tool_name goes"),
            ("until_tool_used", {"tool_name": "nope"}, "not one of"),
            ("single", {"max_runs": 0}, "max_runs"),
        ],
    )
    def test_bad_arguments(
        self, mode: Any, options: dict[str, Any], match: str
    ) -> None:
        """Bad modes, tool names and max_runs are ValueErrors."""
        chain, recorder = make_chain([says()])
        with pytest.raises(ValueError, match=match):
            chain.run(mode, **options)
        assert recorder.events == []

    def test_async_handler_needs_arun(self) -> None:
        """run() refuses an async handler and names arun()."""

        class Async(AsyncChainCallbackHandler):
            pass

        chain = LLMChain(ScriptedChatModel([says()]), callbacks=[Async()])
        with pytest.raises(TypeError, match="arun"):
            chain.run()
        with pytest.raises(TypeError, match="arun"):
            chain.execute_tool_calls_with_decisions([], [])

    def test_waiting_calls_block_run(self) -> None:
        """A chain with calls waiting for a human cannot simply run again."""
        chain, _ = make_chain(
            [asks(call("get_weather", city="Paris"))],
            review=lambda c, t, r: Interrupt("?"),
        )
        result = chain.run()
        with pytest.raises(ValueError, match="execute_tool_calls_with_decisions"):
            result.chain.run()


class TestModes:
    """Each mode stops where its documentation says."""

    def test_single_runs_the_tools_but_calls_the_model_once(self) -> None:
        """single: one model call and its tools."""
        chain, _ = make_chain([asks(call("get_weather", city="Paris")), says()])
        result = chain.run("single")
        assert result.status == "ok"
        assert [m.role for m in result.chain.messages] == ["user", "assistant", "tool"]
        assert chain.model.remaining == 1  # type: ignore[attr-defined]

    def test_single_without_tools(self) -> None:
        """single with a plain answer ends after it."""
        chain, _ = make_chain([says("Hi.")])
        assert chain.run("single").chain.messages[-1].text == "Hi."

    def test_while_needs_response_sends_results_back(self) -> None:
        """The default mode calls the model again with the tool results."""
        chain, _ = make_chain([asks(call("get_weather", city="Paris")), says()])
        result = chain.run()
        second = chain.model.requests[1]  # type: ignore[attr-defined]
        assert second.messages[-1].tool_results[0].text == "18C and sunny in Paris"
        assert second.tools == (WEATHER,)
        assert result.chain.messages[-1].text == "Done."

    def test_until_success_stops_after_a_good_batch(self) -> None:
        """until_success: a batch that fully succeeds ends the run."""
        chain, _ = make_chain([asks(call("get_weather", city="Paris")), says()])
        result = chain.run("until_success")
        assert result.status == "ok"
        assert result.chain.messages[-1].role == "tool"
        assert chain.model.remaining == 1  # type: ignore[attr-defined]

    def test_until_success_retries_after_a_failed_batch(self) -> None:
        """A failed batch is counted and the model is called again."""
        chain, recorder = make_chain(
            [asks(call("get_moon")), asks(call("get_weather", city="Paris"))]
        )
        result = chain.run("until_success")
        assert result.status == "ok"
        second_call = recorder.of("on_llm_call_start")[1]
        assert second_call[0].current_failure_count == 1
        assert result.chain.current_failure_count == 0  # the clean batch reset it

    def test_until_success_plain_answer(self) -> None:
        """An answer without tool calls is a success."""
        chain, _ = make_chain([says()])
        assert chain.run("until_success").status == "ok"

    def test_until_tool_used(self) -> None:
        """The run goes on through answers and other tools until the tool ran."""
        chain, _ = make_chain(
            [
                says("Thinking about it."),
                asks(call("get_time")),
                asks(call("get_weather", city="Paris")),
                says("unused"),
            ],
            tools=(WEATHER, CLOCK),
        )
        result = chain.run("until_tool_used", tool_name="get_weather")
        assert result.status == "ok"
        assert result.chain.messages[-1].tool_results[0].name == "get_weather"
        assert chain.model.remaining == 1  # type: ignore[attr-defined]

    def test_max_runs(self) -> None:
        """A run that keeps calling tools stops at max_runs with an error."""
        chain, recorder = make_chain([asks(call("get_time"))] * 3, tools=(CLOCK,))
        result = chain.run(max_runs=2)
        assert result.status == "error"
        assert result.error is not None
        assert result.error.type == "exceeded_max_runs"
        assert recorder.names[-1] == "on_error"


def record_arguments(seen: list[Mapping[str, Any]]) -> Tool:
    """A weather tool that records the arguments it ran with."""

    def function(arguments: Mapping[str, Any], context: ToolContext) -> str:
        seen.append(dict(arguments))
        return "ok"

    return Tool("get_weather", function, parameters_schema=WEATHER.parameters_schema)


class TestTools:
    """How tool functions are called and their outcomes reported."""

    def test_missing_required_argument(self) -> None:
        """A call missing a required key fails without calling the tool."""
        seen: list[Mapping[str, Any]] = []
        chain, recorder = make_chain(
            [asks(call("get_weather")), says()], tools=(record_arguments(seen),)
        )
        result = chain.run()
        assert seen == []
        failed = recorder.of("on_tool_execution_failed")[0][2]
        assert failed.is_error
        assert "missing required argument(s): city" in failed.text
        assert "on_tool_execution_started" not in recorder.names
        assert result.status == "ok"

    def test_check_arguments(self) -> None:
        """Non-object arguments and missing keys are reported; good ones pass."""
        assert check_arguments(WEATHER, [1, 2]) == (
            "the arguments must be a JSON object, got list"
        )
        assert check_arguments(WEATHER, {"city": "Paris"}) is None
        assert check_arguments(CLOCK, {}) is None

    def test_tool_context(self) -> None:
        """The tool gets its call, custom_context, own invocation and the chain."""
        contexts: list[ToolContext] = []

        def spy(arguments: Mapping[str, Any], context: ToolContext) -> str:
            contexts.append(context)
            assert current_invocation() is context.invocation
            return "ok"

        chain, _ = make_chain(
            [asks(call("spy")), says()],
            tools=(Tool("spy", spy),),
            custom_context={"user": "ada"},
        )
        chain.run()
        (context,) = contexts
        assert context.call.name == "spy"
        assert dict(context.custom_context) == {"user": "ada"}
        assert context.invocation is not None
        assert context.chain is not None
        assert context.chain.invocation is not None
        assert context.invocation.name == "spy"
        assert context.invocation.parent_id == context.chain.invocation.id
        assert current_invocation() is None

    def test_tool_result_is_kept_and_bound_to_the_call(self) -> None:
        """A returned ToolResult keeps its content but gets the call's id."""
        result = ToolResult(
            tool_call_id="x", name="x", content="fine", processed_content={"t": 1}
        )
        chain, recorder = make_chain(
            [asks(call("t")), says()], tools=(Tool("t", lambda a, c: result),)
        )
        chain.run()
        done = recorder.of("on_tool_execution_completed")[0][2]
        assert (done.tool_call_id, done.name, done.text) == ("call_1", "t", "fine")
        assert done.processed_content == {"t": 1}

    def test_error_result_fails_without_exception(self) -> None:
        """A ToolResult with is_error fires failed but no exception event."""
        bad = ToolResult(tool_call_id="x", name="x", content="no", is_error=True)
        chain, recorder = make_chain(
            [asks(call("t")), says()], tools=(Tool("t", lambda a, c: bad),)
        )
        chain.run()
        assert "on_tool_execution_failed t" in recorder.summary()
        assert "on_tool_execution_exception" not in recorder.names

    def test_wrong_return_type(self) -> None:
        """A tool returning neither str nor ToolResult fails with a TypeError."""
        chain, recorder = make_chain(
            [asks(call("t")), says()],
            tools=(Tool("t", lambda a, c: 42),),  # type: ignore[arg-type,return-value]
        )
        chain.run()
        exception = recorder.of("on_tool_execution_exception")[0][2]
        assert isinstance(exception, TypeError)
        assert "returned int" in str(exception)

    def test_exception_reaches_handlers_not_the_model(self) -> None:
        """The model sees a short message; the exception rides on the result."""

        def explode(arguments: Mapping[str, Any], context: ToolContext) -> str:
            raise ValueError("x" * 1000)

        chain, recorder = make_chain(
            [asks(call("t")), says()], tools=(Tool("t", explode),)
        )
        chain.run()
        result = recorder.of("on_tool_execution_failed")[0][2]
        assert result.text.startswith("Error: the tool failed: ValueError: xxx")
        assert len(result.text) < 350
        assert result.text.endswith("...")
        assert isinstance(result.exception, ValueError)
        assert result.exception.__traceback__ is not None
        sent = chain.model.requests[1].messages[-1]  # type: ignore[attr-defined]
        assert "Traceback" not in sent.tool_results[0].text

    def test_unknown_tool_names_the_available_ones(self) -> None:
        """The model is told which tools exist."""
        chain, recorder = make_chain([asks(call("get_moon")), says()])
        chain.run()
        result = recorder.of("on_tool_execution_failed")[0][2]
        assert result.is_error
        assert result.text == (
            "Error: there is no tool named 'get_moon'; available: get_weather."
        )

    def test_async_tool_in_a_sync_run(self) -> None:
        """An async tool runs to completion under run()."""

        async def later(arguments: Mapping[str, Any], context: ToolContext) -> str:
            await asyncio.sleep(0)
            return "later"

        chain, recorder = make_chain(
            [asks(call("t")), says()], tools=(Tool("t", later),)
        )
        chain.run()
        assert recorder.of("on_tool_execution_completed")[0][2].text == "later"

    async def test_async_tool_in_a_sync_run_inside_a_loop(self) -> None:
        """run() called from async code still finishes an async tool."""

        async def later(arguments: Mapping[str, Any], context: ToolContext) -> str:
            return "later"

        chain, recorder = make_chain(
            [asks(call("t")), says()], tools=(Tool("t", later),)
        )
        chain.run()
        assert recorder.of("on_tool_execution_completed")[0][2].text == "later"

    def test_tool_asks_for_a_human(self) -> None:
        """A tool returning an interrupt result interrupts the run."""
        ask = ToolResult(
            tool_call_id="x", name="x", is_interrupt=True, interrupt_data={"q": 1}
        )
        chain, recorder = make_chain(
            [asks(call("t"))], tools=(Tool("t", lambda a, c: ask),)
        )
        result = chain.run()
        assert result.status == "interrupted"
        assert result.interrupt_data == {"q": 1, "tool_call_id": "call_1"}
        stand_in = result.chain.messages[-1].tool_results[0]
        assert stand_in.text == INTERRUPT_STAND_IN
        assert collapse(recorder.summary())[-6:] == [
            "on_tool_execution_started t",
            "on_tool_pre_execution t",
            "on_tool_interrupted",
            "on_tool_response_created",
            "on_message_processed",
            "on_run_complete",
        ]


class TestReview:
    """Review decisions shape what runs."""

    def test_update_arguments(self) -> None:
        """UpdateArguments runs the call with the new arguments."""
        seen: list[Mapping[str, Any]] = []
        chain, _ = make_chain(
            [asks(call("get_weather", city="Paris")), says()],
            tools=(record_arguments(seen),),
            review=lambda c, t, r: UpdateArguments({"city": "Lyon"}),
        )
        chain.run()
        assert seen == [{"city": "Lyon"}]

    def test_rewritten_arguments_are_checked(self) -> None:
        """Arguments a reviewer rewrote must still satisfy the schema."""
        chain, recorder = make_chain(
            [asks(call("get_weather", city="Paris")), says()],
            review=lambda c, t, r: UpdateArguments({}),
        )
        chain.run()
        assert "missing required" in recorder.of("on_tool_execution_failed")[0][2].text

    def test_deny_is_not_an_error(self) -> None:
        """A denial's result carries the reason with is_error False."""
        chain, recorder = make_chain(
            [asks(call("get_weather", city="Paris")), says()],
            review=lambda c, t, r: Deny("not today"),
        )
        result = chain.run("until_success")
        denied = recorder.of("on_tool_execution_failed")[0][2]
        assert not denied.is_error
        assert denied.text == "The tool call was denied: not today"
        assert result.status == "ok"
        assert result.chain.current_failure_count == 0

    def test_interrupt_data_and_stand_in(self) -> None:
        """One interrupt: its data plus tool_call_id; the model never sees it."""
        chain, recorder = make_chain(
            [asks(call("get_weather", city="Paris"))],
            review=lambda c, t, r: Interrupt("Allow?", {"secret": 7}),
        )
        result = chain.run()
        assert result.status == "interrupted"
        assert result.interrupt_data == {"secret": 7, "tool_call_id": "call_1"}
        (stand_in,) = recorder.of("on_tool_interrupted")[0][1]
        assert stand_in.is_interrupt
        assert not stand_in.is_error
        assert stand_in.display_text == "Allow?"
        assert stand_in.text == INTERRUPT_STAND_IN
        assert result.chain.pending_tool_calls == (
            result.chain.messages[1].tool_calls[0],
        )

    def test_several_interrupts_combine(self) -> None:
        """Several interrupts: {"interrupts": (...)} in call order; others ran."""

        def review(c: Any, t: Tool, r: Any) -> Interrupt | None:
            return Interrupt("?", {"n": c.call_id}) if t is WEATHER else None

        chain, recorder = make_chain(
            [
                asks(
                    call("get_weather", "a", city="Paris"),
                    call("get_time", "b"),
                    call("get_weather", "c", city="Lyon"),
                )
            ],
            tools=(WEATHER, CLOCK),
            review=review,
        )
        result = chain.run()
        assert result.interrupt_data == {
            "interrupts": (
                {"n": "a", "tool_call_id": "a"},
                {"n": "c", "tool_call_id": "c"},
            )
        }
        assert recorder.summary().count("on_tool_execution_completed get_time") == 1
        assert [c.call_id for c in result.chain.pending_tool_calls] == ["a", "c"]

    def test_no_pending_calls_on_a_plain_chain(self) -> None:
        """A chain that is not interrupted has nothing pending."""
        chain, _ = make_chain([says()])
        assert chain.pending_tool_calls == ()
        assert chain.run().chain.pending_tool_calls == ()

    def test_a_waiting_result_without_its_answer(self) -> None:
        """A stand-in result with no answer before it has no pending call."""
        stand_in = ToolResult(
            tool_call_id="call_1", name="get_weather", content="?", is_interrupt=True
        )
        chain, _ = make_chain([says()])
        assert chain.add_message(Message.tool([stand_in])).pending_tool_calls == ()


def interrupted_chain(
    *calls: ToolCall, tools: tuple[Tool, ...] = (WEATHER,)
) -> tuple[LLMChain, RecordingChainHandler]:
    """A chain interrupted on ``calls``, and its recorder."""
    chain, recorder = make_chain(
        [asks(*calls), says()],
        tools=tools,
        review=lambda c, t, r: None if r.human_decision else Interrupt("?"),
    )
    result = chain.run()
    assert result.status == "interrupted"
    return result.chain, recorder


class TestDecisions:
    """Resuming interrupted calls with human decisions."""

    def test_decision_values(self) -> None:
        """approve, edit and reject build the right decisions."""
        assert Decision.approve().kind == "approve"
        assert Decision.edit({"a": 1}).arguments == {"a": 1}
        assert Decision.reject("no").reason == "no"
        with pytest.raises(ValueError, match="edit"):
            Decision(kind="approve", arguments={"a": 1})
        with pytest.raises(ValueError, match="edit"):
            Decision(kind="edit")
        with pytest.raises(TypeError, match="mapping"):
            Decision.edit([1])  # type: ignore[arg-type]

    def test_edit_runs_with_new_arguments(self) -> None:
        """An edit reaches the reviewer as "edit" and the tool with new args."""
        seen: list[Mapping[str, Any]] = []
        chain, recorder = interrupted_chain(
            call("get_weather", city="Paris"), tools=(record_arguments(seen),)
        )
        resumed = chain.execute_tool_calls_with_decisions(
            chain.pending_tool_calls, [Decision.edit({"city": "Lyon"})]
        )
        assert resumed.status == "ok"
        assert seen == [{"city": "Lyon"}]
        review = recorder.of("on_tool_call_review")[-1][3]
        assert review.human_decision == "edit"
        assert resumed.chain.messages[-1].tool_results[0].text == "ok"
        assert len(resumed.chain.messages) == len(chain.messages)

    def test_reject_is_not_an_error(self) -> None:
        """A rejection answers with its reason, is_error False."""
        chain, _ = interrupted_chain(call("get_weather", city="Paris"))
        resumed = chain.execute_tool_calls_with_decisions(
            chain.pending_tool_calls, [Decision.reject("Not now.")]
        )
        result = resumed.chain.messages[-1].tool_results[0]
        assert (result.text, result.is_error) == ("Not now.", False)

    def test_partial_decisions_keep_the_rest_waiting(self) -> None:
        """Deciding one of two waiting calls leaves the other interrupted."""
        chain, _ = interrupted_chain(
            call("get_weather", "a", city="Paris"),
            call("get_weather", "b", city="Rome"),
        )
        first, second = chain.pending_tool_calls
        resumed = chain.execute_tool_calls_with_decisions([first], [Decision.approve()])
        assert resumed.status == "interrupted"
        assert resumed.interrupt_data == {"tool_call_id": "b"}
        assert resumed.chain.pending_tool_calls == (second,)

    async def test_async_resume(self) -> None:
        """aexecute_tool_calls_with_decisions is the async twin."""
        chain, _ = interrupted_chain(call("get_weather", city="Paris"))
        resumed = await chain.aexecute_tool_calls_with_decisions(
            chain.pending_tool_calls, [Decision.approve()]
        )
        assert resumed.status == "ok"
        final = await resumed.chain.arun()
        assert final.chain.messages[-1].text == "Done."

    def test_bad_resumes(self) -> None:
        """Mismatched counts, unknown calls and bad decisions are refused."""
        chain, _ = interrupted_chain(call("get_weather", city="Paris"))
        (waiting,) = chain.pending_tool_calls
        with pytest.raises(ValueError, match="one decision per call"):
            chain.execute_tool_calls_with_decisions([waiting], [])
        with pytest.raises(ValueError, match="not waiting"):
            chain.execute_tool_calls_with_decisions(
                [call("get_weather", "zzz")], [Decision.approve()]
            )
        with pytest.raises(TypeError, match="Decision"):
            chain.execute_tool_calls_with_decisions([waiting], ["yes"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="ToolCalls"):
            chain.execute_tool_calls_with_decisions(["c"], [Decision.approve()])  # type: ignore[list-item]

    def test_a_changed_call_is_refused(self) -> None:
        """A call whose name or arguments differ from the waiting one is refused:
        an approval applies to the call the model made (edits: Decision.edit)."""
        chain, recorder = interrupted_chain(call("get_weather", city="Paris"))
        (waiting,) = chain.pending_tool_calls
        count = len(recorder.events)
        changed = ToolCall(
            call_id=waiting.call_id, name="get_weather", arguments={"city": "Lyon"}
        )
        with pytest.raises(ValueError, match=r"Decision\.edit"):
            chain.execute_tool_calls_with_decisions([changed], [Decision.approve()])
        assert len(recorder.events) == count
        same = ToolCall(
            call_id=waiting.call_id, name="get_weather", arguments={"city": "Paris"}
        )
        resumed = chain.execute_tool_calls_with_decisions([same], [Decision.approve()])
        assert resumed.status == "ok"

    def test_pending_calls_come_from_the_last_answer(self) -> None:
        """A call id reused by an earlier answer is not pending a second time."""
        again = call("get_weather", city="Lyon")
        chain, _ = make_chain(
            [asks(call("get_weather", city="Paris")), asks(again), says()],
            review=lambda c, t, r: (
                Interrupt("?") if c.arguments["city"] == "Lyon" else None
            ),
        )
        result = chain.run()
        assert result.status == "interrupted"
        assert result.chain.pending_tool_calls == (again,)

    def test_a_call_given_twice_is_refused(self) -> None:
        """A call listed twice is refused before anything runs (it would run twice)."""
        runs: list[str] = []

        def count(arguments: Mapping[str, Any], context: ToolContext) -> str:
            runs.append(context.call.call_id)
            return "done"

        tool = Tool("get_weather", count)
        chain, _ = interrupted_chain(call("get_weather", city="Paris"), tools=(tool,))
        (waiting,) = chain.pending_tool_calls
        with pytest.raises(ValueError, match="more than once"):
            chain.execute_tool_calls_with_decisions(
                [waiting, waiting], [Decision.approve(), Decision.approve()]
            )
        assert runs == []

    def test_replace_tool_result(self) -> None:
        """replace_tool_result swaps the stand-in and unblocks run()."""
        chain, recorder = interrupted_chain(call("get_weather", city="Paris"))
        count = len(recorder.events)
        answer = ToolResult(tool_call_id="ignored", name="get_weather", content="Rain")
        fixed = chain.replace_tool_result("call_1", answer)
        assert len(recorder.events) == count
        assert fixed.messages[-1].tool_results[0].tool_call_id == "call_1"
        assert fixed.pending_tool_calls == ()
        assert fixed.run().status == "ok"
        with pytest.raises(ValueError, match="no tool message"):
            chain.replace_tool_result("nope", answer)
        with pytest.raises(TypeError, match="ToolResult"):
            chain.replace_tool_result("call_1", "Rain")  # type: ignore[arg-type]


class TestRetryPolicy:
    """The backoff arithmetic and validation."""

    def test_exponential_backoff_with_jitter(self) -> None:
        """Delays grow by the multiplier, are capped, and spread by jitter."""
        error = transient()
        middle = RetryPolicy(
            initial_delay=1, multiplier=2, max_delay=5, random=lambda: 0.5
        )
        assert [middle.delay(n, error) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]
        low = RetryPolicy(initial_delay=1, jitter=0.5, random=lambda: 0.0)
        assert low.delay(1, error) == 0.5
        high = RetryPolicy(
            initial_delay=1, jitter=0.5, max_delay=1.2, random=lambda: 1.0
        )
        assert high.delay(1, error) == 1.2

    def test_retry_after_wins(self) -> None:
        """The provider's retry_after is the wait."""
        error = LangHooksError("rate_limited", "slow", retry_after=7.5)
        assert RetryPolicy().delay(1, error) == 7.5

    def test_what_is_retried(self) -> None:
        """Errors flagged retryable are retried, others (by default) not."""
        policy = RetryPolicy()
        assert policy.should_retry(transient())
        assert policy.should_retry(
            LangHooksError("stream_error", "cut", retryable=True)
        )
        assert not policy.should_retry(LangHooksError("authentication", "key"))

    def test_a_stream_error_the_server_says_not_to_retry(self) -> None:
        """A stream_error the provider marked non-retryable (x-should-retry: false)
        is neither retried nor failed over."""
        from langhooks.models._errors import classify_error

        error = classify_error(
            status=500, code=None, message="down", headers={"x-should-retry": "false"}
        )
        assert (error.type, error.retryable) == ("stream_error", False)
        fallback = ScriptedChatModel([says()])
        chain, recorder = make_chain([error, says()], fallbacks=[fallback])
        result = chain.run()
        assert result.error is error
        assert recorder.names.count("on_llm_error") == 1
        assert fallback.remaining == 1

    def test_retry_types_take_any_iterable_of_error_types(self) -> None:
        """retry_types accepts a set or a list of error types and keeps them."""
        assert RetryPolicy(retry_types={"timeout"}).retry_types == {"timeout"}
        policy = RetryPolicy(retry_types=["protocol_error"])
        assert policy.should_retry(LangHooksError("protocol_error", "odd"))
        assert not policy.should_retry(LangHooksError("stream_error", "cut"))

    def test_retry_types_refuse_a_bare_string_and_unknown_types(self) -> None:
        """A bare string (not split into letters) and unknown types are refused."""
        with pytest.raises(TypeError, match="retry_types"):
            RetryPolicy(retry_types="timeout")
        with pytest.raises(ValueError, match="rate_limit"):
            RetryPolicy(retry_types={"rate_limit"})

    @pytest.mark.parametrize(
        "options",
        [
            {"max_attempts": 0},
            {"initial_delay": -1},
            {"jitter": 2},
            {"jitter": "a"},
            {"multiplier": True},
        ],
    )
    def test_validation(self, options: dict[str, Any]) -> None:
        """Bad numbers are ValueErrors."""
        with pytest.raises(ValueError, match=next(iter(options))):
            RetryPolicy(**options)


class TestModelCallEvents:
    """on_llm_call_start / on_llm_call_complete bracket every model attempt."""

    def test_each_attempt_and_fallback_starts_with_its_model(self) -> None:
        """Every attempt (retries, fallbacks) starts with its model and request."""
        primary = ScriptedChatModel([transient(), transient()])
        backup = ScriptedChatModel([says("Sunny.")])
        recorder = RecordingChainHandler()
        chain = LLMChain(
            primary, fallbacks=[backup], callbacks=[recorder], retry=no_wait()
        ).add_message(Message.user("Weather?"))
        result = chain.run()
        assert result.status == "ok"
        starts = recorder.of("on_llm_call_start")
        assert [args[1] for args in starts] == [primary, primary, backup]
        for args in starts:
            assert args[2] == ChatRequest(messages=chain.messages, tools=())
        (complete,) = recorder.of("on_llm_call_complete")
        assert complete[1].message == result.chain.messages[-1]
        assert complete[0].messages == chain.messages  # before the answer is added

    async def test_async_attempts(self) -> None:
        """Under arun each attempt starts once and the successful one completes."""
        chain, recorder = make_chain([transient(), says()])
        assert (await chain.arun()).status == "ok"
        names = [
            name
            for name in recorder.names
            if name.startswith("on_llm_call") or name == "on_llm_error"
        ]
        assert names == [
            "on_llm_call_start",
            "on_llm_error",
            "on_llm_call_start",
            "on_llm_call_complete",
        ]


class TestModelFailures:
    """How model failures are retried, failed over and reported."""

    def test_backoff_waits(self) -> None:
        """Retries wait per the policy; retry_after is honoured."""
        waits: list[float] = []
        limited = LangHooksError("rate_limited", "slow", retry_after=3.0)
        chain, _ = make_chain(
            [transient(), limited, says()],
            retry=RetryPolicy(
                max_attempts=3, initial_delay=1, jitter=0, sleep=waits.append
            ),
            max_retry_count=5,
        )
        assert chain.run().status == "ok"
        assert waits == [1.0, 3.0]

    def test_error_headers_fire_before_on_llm_error(self) -> None:
        """A failed call's headers and rate-limit info are reported first."""
        error = LangHooksError(
            "rate_limited",
            "slow",
            metadata={"response_headers": {"retry-after": "1"}, "ratelimit": {"a": 1}},
        )
        chain, recorder = make_chain([error, says()])
        chain.run()
        assert recorder.names[1:5] == [
            "on_llm_call_start",
            "on_llm_response_headers",
            "on_llm_ratelimit_info",
            "on_llm_error",
        ]

    def test_all_fallbacks_failed_carries_the_last_error(self) -> None:
        """The give-up error wraps the last model error."""
        from tests.chain.scenarios import all_fallbacks_failed

        result, recorder = all_fallbacks_failed()
        assert result.status == "error"
        assert result.error is not None
        assert result.error.type == "all_fallbacks_failed"
        assert isinstance(result.error.original, LangHooksError)
        assert recorder.of("on_error") == [(result.chain, result.error)]

    def test_retries_exceeded_error(self) -> None:
        """Reaching max_retry_count ends with exceeded_failure_count."""
        from tests.chain.scenarios import retries_exceeded

        result, _ = retries_exceeded()
        assert result.error is not None
        assert result.error.type == "exceeded_failure_count"
        assert result.chain.current_failure_count == 2

    def test_non_retryable_keeps_its_type(self) -> None:
        """An invalid request ends the run with that very error."""
        from tests.chain.scenarios import non_retryable

        result, _ = non_retryable()
        assert result.error is not None
        assert result.error.type == "invalid_request"
        assert result.chain.current_failure_count == 0  # model failures never count

    def test_single_model_out_of_attempts(self) -> None:
        """Without fallbacks, the last error is the run's error."""
        chain, _ = make_chain([transient(), transient()], max_retry_count=9)
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "overloaded"

    def test_a_buggy_model(self) -> None:
        """A model raising a plain exception is a non-retried protocol_error."""
        recorder = RecordingChainHandler()
        chain = LLMChain(
            BrokenModel(), fallbacks=[ScriptedChatModel([says()])], callbacks=[recorder]
        )
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "protocol_error"
        assert isinstance(result.error.original, ZeroDivisionError)
        assert recorder.names == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_error",
        ]

    def test_a_model_returning_garbage(self) -> None:
        """A model whose stream returns a non-response is a protocol_error."""
        chain = LLMChain(SilentModel("nonsense"), retry=RetryPolicy(max_attempts=1))
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "protocol_error"

    @pytest.mark.parametrize("runner", ["run", "arun"])
    async def test_a_failed_stream_returned_is_not_a_success(self, runner: str) -> None:
        """A model returning a response whose stream failed (instead of raising)
        gets on_llm_error and is failed over, never a silent success."""
        died = Message(role="assistant", content="Half an ans", status="stream_error")
        recorder = RecordingChainHandler()
        chain = LLMChain(
            SilentModel(ChatResponse(message=died)),
            fallbacks=[ScriptedChatModel([says("Whole.")])],
            callbacks=[recorder],
            retry=no_wait(),
        )
        result = await chain.arun() if runner == "arun" else chain.run()
        assert result.status == "ok"
        assert result.chain.messages[-1].text == "Whole."
        errors = [args[1] for args in recorder.of("on_llm_error")]
        assert [error.type for error in errors] == ["stream_error"] * 2  # + a retry
        assert all(m.status == "complete" for m in result.chain.messages)

    def test_a_non_streaming_model(self) -> None:
        """A model that delivers its answer whole fires on_llm_new_message."""
        message = Message.assistant("Whole.")
        recorder = RecordingChainHandler()
        chain = LLMChain(
            SilentModel(ChatResponse(message=message, token_usage=USAGE)),
            callbacks=[recorder],
        )
        chain.run()
        assert recorder.names == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_call_complete",
            "on_llm_new_message",
            "on_message_processed",
            "on_llm_token_usage",
            "on_run_complete",
        ]

    async def test_async_model_failures(self) -> None:
        """arun retries with async_sleep and reports bugs like run."""
        waits: list[float] = []
        chain, _ = make_chain([transient(), says()], retry=no_wait(waits))
        assert (await chain.arun()).status == "ok"
        assert len(waits) == 1
        broken = await LLMChain(BrokenModel()).arun()
        assert broken.error is not None
        assert broken.error.type == "protocol_error"
        garbage = await LLMChain(
            SilentModel(3), retry=RetryPolicy(max_attempts=1)
        ).arun()
        assert garbage.error is not None
        assert garbage.error.type == "protocol_error"


class CompleteOnlyModel(SilentModel):
    """A model that reports tool calls only as complete calls (no fragments)."""

    @override
    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Send each complete call, then the response (no usage)."""
        from langhooks import CompleteToolCall

        response = self.response
        assert isinstance(response, ChatResponse)
        for index, tool_call in enumerate(response.message.tool_calls):
            handler.on_complete_tool_call(
                CompleteToolCall(index=index, tool_call=tool_call)
            )
        handler.on_complete_response(response)
        return response


class TestIdentification:
    """Tool calls are identified once, as soon as their name is known."""

    def test_identified_from_complete_calls(self) -> None:
        """A model without fragments identifies each known call on completion."""
        calls = [call("get_weather", "a", city="Paris"), call("get_moon", "b")]
        message = Message.assistant("", tool_calls=calls)
        recorder = RecordingChainHandler()
        chain = LLMChain(
            CompleteOnlyModel(ChatResponse(message=message)),
            tools=[WEATHER],
            callbacks=[recorder],
        )
        chain.run("single")
        identified = recorder.of("on_tool_call_identified")
        assert [args[1] for args in identified] == [calls[0]]
        assert recorder.names[1:6] == [
            "on_llm_call_start",
            "on_tool_call_identified",
            "on_llm_call_complete",
            "on_llm_new_message",
            "on_message_processed",
        ]
        assert "on_llm_token_usage" not in recorder.names

    def test_identified_from_a_whole_message(self) -> None:
        """A model that delivers its answer whole identifies each known call once."""
        calls = [
            call("get_weather", "a", city="Paris"),
            call("get_moon", "b"),
            call("get_time", "c"),
        ]
        message = Message.assistant("", tool_calls=calls)
        recorder = RecordingChainHandler()
        chain = LLMChain(
            SilentModel(ChatResponse(message=message)),
            tools=[WEATHER, CLOCK],
            callbacks=[recorder],
        )
        chain.run("single")
        identified = recorder.of("on_tool_call_identified")
        assert [args[1] for args in identified] == [calls[0], calls[2]]
        assert recorder.names[3:7] == [
            "on_llm_new_message",
            "on_tool_call_identified",
            "on_tool_call_identified",
            "on_message_processed",
        ]

    async def test_async_stream_events(self) -> None:
        """Under arun thinking deltas stream and raising async tools fail."""

        async def explode(arguments: Mapping[str, Any], context: ToolContext) -> str:
            raise ValueError("async boom")

        chain, recorder = make_chain(
            [
                ScriptedTurn(thinking="Hm.", tool_calls=[call("t")], usage=USAGE),
                says(),
            ],
            tools=(Tool("t", explode),),
        )
        result = await chain.arun()
        assert result.status == "ok"
        first_delta = recorder.of("on_llm_new_delta")[0][1][0]
        assert first_delta.thinking == "Hm."
        exception = recorder.of("on_tool_execution_exception")[0][2]
        assert str(exception) == "async boom"


class TestUntilSuccessFailures:
    """until_success gives up with the failed results as the cause."""

    def test_exceeded_carries_the_failed_results(self) -> None:
        """The exceeded_failure_count error names the tools and holds the results."""
        from tests.chain.scenarios import until_success_exceeded

        result, _ = until_success_exceeded()
        assert result.error is not None
        assert result.error.type == "exceeded_failure_count"
        assert "1 tool call(s) failed (get_weather)" in result.error.message
        original = result.error.original
        assert isinstance(original, tuple)
        (failed,) = original
        assert isinstance(failed, ToolResult)
        assert failed.is_error
