"""The runtime keeps its promises (issue #10).

Failure counter and fallbacks, bounded waits, nothing lost or delivered twice, and
mistakes caught when a value or class is built rather than during a run. Each
promise has a test that failed before the fix; the few that passed before guard the
other side of a change (a denial still does not count, a short retry-after is still
honoured, a right-shaped tool function is still accepted).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    Deny,
    Interrupt,
    LangHooksError,
    Message,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    Tool,
    ToolCall,
    ToolContext,
    UpdateArguments,
)
from langhooks.chain import (
    Decision,
    LLMChain,
    Reject,
    RetryPolicy,
    RunResult,
)
from langhooks.models import (
    ChatRequest,
    ScriptedChatModel,
    ScriptedTurn,
    replay_stream,
)
from langhooks.models._errors import retry_after_seconds
from langhooks.testing import RecordingChainHandler
from tests.chain.scenarios import (
    BROKEN,
    WEATHER,
    asks,
    call,
    make_chain,
    no_wait,
    says,
    transient,
)


class TestFailureCounterAndFallbacks:
    """Model failures are bounded by retries and fallbacks; conversation failures
    by the counter."""

    def test_every_fallback_is_tried_with_the_defaults(self) -> None:
        """With default settings the second fallback answers after the primary and
        the first fallback fail (before: exceeded_failure_count, m3 never called)."""
        m1 = ScriptedChatModel([transient(), transient()])
        m2 = ScriptedChatModel([transient(), transient()])
        m3 = ScriptedChatModel([says("Sunny.")])
        chain = LLMChain(m1, fallbacks=[m2, m3], retry=no_wait()).add_message(
            Message.user("Weather?")
        )
        result = chain.run()
        assert result.status == "ok"
        assert result.chain.messages[-1].text == "Sunny."
        assert (len(m1.requests), len(m2.requests), len(m3.requests)) == (2, 2, 1)
        assert result.chain.current_failure_count == 0

    def test_all_fallbacks_fail_with_the_defaults(self) -> None:
        """When every model fails the run ends "all_fallbacks_failed", with the last
        error as its original."""
        models = [ScriptedChatModel([transient(), transient()]) for _ in range(3)]
        chain = LLMChain(models[0], fallbacks=models[1:], retry=no_wait()).add_message(
            Message.user("Weather?")
        )
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "all_fallbacks_failed"
        assert isinstance(result.error.original, LangHooksError)
        assert [len(model.requests) for model in models] == [2, 2, 2]

    def test_a_broken_tool_is_stopped_after_max_retry_count_rounds(self) -> None:
        """In the default mode a model calling a raising tool again and again is
        stopped after max_retry_count rounds (before: after max_runs model calls)."""
        model = ScriptedChatModel([asks(call("get_weather", city="Paris"))] * 30)
        recorder = RecordingChainHandler()
        chain = LLMChain(
            model, tools=[BROKEN], callbacks=[recorder], retry=no_wait()
        ).add_message(Message.user("Weather?"))
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "exceeded_failure_count"
        assert len(model.requests) == 3
        assert recorder.names[-2:] == ["on_retries_exceeded", "on_error"]
        assert recorder.names.count("on_retries_exceeded") == 1
        assert recorder.names.count("on_error") == 1

    def test_a_clean_tool_message_resets_the_counter(self) -> None:
        """Failures must be consecutive: a clean batch between them starts over."""
        turns = [
            asks(call("broken", "1")),
            asks(call("broken", "2")),
            asks(call("get_weather", "3", city="Paris")),
            asks(call("broken", "4")),
            asks(call("broken", "5")),
            says("Sunny."),
        ]
        chain, recorder = make_chain(
            turns, tools=(WEATHER, Tool("broken", BROKEN.function))
        )
        result = chain.run()
        assert result.status == "ok"
        counts = [
            args[0].current_failure_count for args in recorder.of("on_llm_call_start")
        ]
        assert counts == [0, 1, 2, 0, 1, 2]
        assert result.chain.current_failure_count == 0

    def test_a_plain_answer_resets_the_counter(self) -> None:
        """An accepted answer after rejected ones leaves the counter at 0."""
        verdicts = iter([Reject("JSON, please."), Reject("JSON!")])

        def picky(chain: LLMChain, message: Message) -> Message | Reject:
            return next(verdicts, message)

        chain, _ = make_chain(
            [says("a"), says("b"), says("c")], message_processors=[picky]
        )
        result = chain.run()
        assert result.status == "ok"
        assert result.chain.current_failure_count == 0

    def test_model_failures_do_not_count(self) -> None:
        """A retried model failure leaves the failure counter alone."""
        chain, recorder = make_chain([transient(), says()], max_retry_count=1)
        result = chain.run()
        assert result.status == "ok"
        assert [
            a[0].current_failure_count for a in recorder.of("on_llm_call_start")
        ] == [0, 0]

    def test_denials_never_count(self) -> None:
        """A model whose calls are denied round after round is not stopped by the
        counter: a denial is not an error."""
        chain, _ = make_chain(
            [asks(call("get_weather", city="Paris"))] * 4 + [says("Fine.")],
            review=lambda c, t, r: Deny("no"),
            max_retry_count=2,
        )
        result = chain.run()
        assert result.status == "ok"
        assert result.chain.current_failure_count == 0

    async def test_async_runs_count_the_same_way(self) -> None:
        """arun stops a broken tool after max_retry_count rounds too."""
        chain, _ = make_chain(
            [asks(call("get_weather", city="Paris"))] * 10,
            tools=(BROKEN,),
            max_retry_count=2,
        )
        result = await chain.arun()
        assert result.error is not None
        assert result.error.type == "exceeded_failure_count"

    def test_resume_counts_only_new_errors(self) -> None:
        """A resumed batch counts an error it produced; the stand-ins it replaced
        were counted when the batch first ran."""

        def ask(
            call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision | None:
            return Interrupt("ok?") if review.human_decision is None else None

        chain, _ = make_chain(
            [asks(call("get_weather", "a", city="Paris"))],
            tools=(BROKEN,),
            review=ask,
        )
        first = chain.run()
        assert first.status == "interrupted"
        assert first.chain.current_failure_count == 0
        resumed = first.chain.execute_tool_calls_with_decisions(
            first.chain.pending_tool_calls, [Decision.approve()]
        )
        assert resumed.status == "ok"
        assert resumed.chain.current_failure_count == 1


class TestBoundedWaits:
    """No wait exceeds max_delay, and a huge retry-after never escapes run()."""

    def test_a_retry_after_over_max_delay_moves_on_without_sleeping(self) -> None:
        """retry-after: 86400 with max_delay=30 is not slept: without a fallback the
        run ends with the server's error (before: it slept a day)."""
        sleeps: list[float] = []
        error = LangHooksError(
            "rate_limited",
            "slow down",
            retry_after=retry_after_seconds({"retry-after": "86400"}),
        )
        chain, _ = make_chain([error, says()], retry=no_wait(sleeps))
        result = chain.run()
        assert sleeps == []
        assert result.error is error

    @pytest.mark.parametrize(
        "header", ["1e308", "Fri, 31 Dec 9999 23:59:59 GMT"], ids=["1e308", "year-9999"]
    )
    def test_an_enormous_retry_after_never_raises(self, header: str) -> None:
        """A retry-after too large for time.sleep ends the run with a RunResult
        (before: OverflowError escaped run())."""
        seconds = retry_after_seconds({"retry-after": header})
        error = LangHooksError("rate_limited", "slow down", retry_after=seconds)
        chain = LLMChain(ScriptedChatModel([error, says()])).add_message(
            Message.user("Weather?")
        )
        result = chain.run()  # the real time.sleep: it would overflow if called
        assert result.error is error

    async def test_async_runs_move_on_too(self) -> None:
        """arun moves on to the fallback at once as well."""
        sleeps: list[float] = []
        chain = LLMChain(
            ScriptedChatModel([LangHooksError("overloaded", "busy", retry_after=31)]),
            fallbacks=[ScriptedChatModel([says("Sunny.")])],
            retry=no_wait(sleeps),
        ).add_message(Message.user("Weather?"))
        result = await chain.arun()
        assert result.status == "ok"
        assert sleeps == []

    def test_a_retry_after_within_max_delay_is_honoured(self) -> None:
        """A retry-after under max_delay is waited exactly."""
        sleeps: list[float] = []
        error = LangHooksError("rate_limited", "slow down", retry_after=12.5)
        chain, _ = make_chain([error, says()], retry=no_wait(sleeps))
        assert chain.run().status == "ok"
        assert sleeps == [12.5]

    @pytest.mark.parametrize("value", [-1.0, math.nan, math.inf])
    def test_error_rejects_a_retry_after_that_is_no_duration(
        self, value: float
    ) -> None:
        """LangHooksError refuses a negative, NaN or infinite retry_after."""
        with pytest.raises(ValueError, match="retry_after must be a number of seconds"):
            LangHooksError("rate_limited", "x", retry_after=value)

    @pytest.mark.parametrize("field", ["max_delay", "initial_delay"])
    def test_policy_rejects_an_infinite_delay(self, field: str) -> None:
        """A RetryPolicy wait must be finite."""
        options: dict[str, Any] = {field: math.inf}
        with pytest.raises(ValueError, match=f"{field} must be a number >= 0 and"):
            RetryPolicy(**options)

    def test_policy_rejects_a_max_delay_no_platform_can_wait(self) -> None:
        """A max_delay past what time.sleep accepts is refused when the policy is
        built, so no retry wait can overflow inside run()."""
        with pytest.raises(ValueError, match="longest wait this platform can make"):
            RetryPolicy(max_delay=1e12)

    def test_the_wait_is_announced_before_it_starts(self) -> None:
        """on_llm_retry carries the error and the delay the run then waits."""
        sleeps: list[float] = []
        error = LangHooksError("rate_limited", "slow down", retry_after=2.0)
        chain, recorder = make_chain([error, says()], retry=no_wait(sleeps))
        chain.run()
        ((_, announced, delay),) = recorder.of("on_llm_retry")
        assert (announced, delay) == (error, 2.0)
        assert sleeps == [2.0]
        position = recorder.names.index("on_llm_retry")
        assert recorder.names[position - 1] == "on_llm_error"


class RaisesInPre(ChainCallbackHandler):
    """Raises in on_tool_pre_execution for call "b" only."""

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        if call.call_id == "b":
            raise RuntimeError("no tenant for b")


class AsyncRaisesInPre(AsyncChainCallbackHandler):
    """The async twin of RaisesInPre."""

    @override
    async def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        if call.call_id == "b":
            raise RuntimeError("no tenant for b")


def _counting_tool(ran: list[str], *, concurrent: bool) -> Tool:
    lock = threading.Lock()

    def count(arguments: Mapping[str, Any], context: ToolContext) -> str:
        with lock:
            ran.append(context.call.call_id)
        return f"done {context.call.call_id}"

    return Tool("count", count, concurrent=concurrent)


def _assert_ran_and_recorded(
    result: RunResult, recorder: RecordingChainHandler, ran: Sequence[str]
) -> None:
    assert result.error is not None
    assert result.error.type == "handler_error"
    tool_message = result.chain.messages[-1]
    assert tool_message.role == "tool"
    by_id = {r.tool_call_id: r for r in tool_message.tool_results}
    assert sorted(by_id) == ["a", "b", "c"]
    for call_id in ran:
        assert by_id[call_id].text == f"done {call_id}"
    assert by_id["b"].is_error
    completed = [args[1].call_id for args in recorder.of("on_tool_execution_completed")]
    assert completed == list(ran)
    assert recorder.names[-1] == "on_error"


class TestNothingLost:
    """Every tool that ran is recorded and reported; each handler sees one end."""

    def test_threads_a_pre_execution_fault_keeps_the_other_results(self) -> None:
        """Concurrent tools that ran beside a faulting pre-execution have their
        results recorded and reported (before: lost, a rerun would repeat them)."""
        ran: list[str] = []
        recorder = RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel(
                [asks(call("count", "a"), call("count", "b"), call("count", "c"))]
            ),
            tools=[_counting_tool(ran, concurrent=True)],
            callbacks=[recorder, RaisesInPre()],
        ).add_message(Message.user("go"))
        result = chain.run()
        assert sorted(ran) == ["a", "c"]
        _assert_ran_and_recorded(result, recorder, ["a", "c"])

    async def test_tasks_a_pre_execution_fault_keeps_the_other_results(self) -> None:
        """The same under arun, where concurrent calls are tasks."""
        ran: list[str] = []

        async def count(arguments: Mapping[str, Any], context: ToolContext) -> str:
            ran.append(context.call.call_id)
            return f"done {context.call.call_id}"

        recorder = RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel(
                [asks(call("count", "a"), call("count", "b"), call("count", "c"))]
            ),
            tools=[Tool("count", count, concurrent=True)],
            callbacks=[recorder, AsyncRaisesInPre()],
        ).add_message(Message.user("go"))
        result = await chain.arun()
        assert sorted(ran) == ["a", "c"]
        _assert_ran_and_recorded(result, recorder, ["a", "c"])

    def test_sequential_a_pre_execution_fault_stops_the_rest(self) -> None:
        """In sequence, the calls after the fault never start; the ones before it are
        recorded (before: the chain lost them)."""
        ran: list[str] = []
        recorder = RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel(
                [asks(call("count", "a"), call("count", "b"), call("count", "c"))]
            ),
            tools=[_counting_tool(ran, concurrent=False)],
            callbacks=[recorder, RaisesInPre()],
        ).add_message(Message.user("go"))
        result = chain.run()
        assert ran == ["a"]
        _assert_ran_and_recorded(result, recorder, ["a"])
        assert result.chain.messages[-1].tool_results[2].is_error  # "c" never ran

    def test_a_faulting_run_complete_gives_each_handler_one_end(self) -> None:
        """Handlers before the one raising in on_run_complete get only
        on_run_complete; those after it only on_error (before: the first got both)."""

        class Raises(ChainCallbackHandler):
            @override
            def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
                raise RuntimeError("cannot save")

        before, after = RecordingChainHandler(), RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel([says()]), callbacks=[before, Raises(), after]
        ).add_message(Message.user("Hi"))
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert before.names[-1] == "on_run_complete"
        assert "on_error" not in before.names
        assert after.names[-1] == "on_error"
        assert "on_run_complete" not in after.names

    async def test_async_a_faulting_run_complete_gives_each_handler_one_end(
        self,
    ) -> None:
        """The same under arun."""

        class Raises(AsyncChainCallbackHandler):
            @override
            async def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
                raise RuntimeError("cannot save")

        before, after = RecordingChainHandler(), RecordingChainHandler()
        chain = LLMChain(
            ScriptedChatModel([says()]), callbacks=[before, Raises(), after]
        ).add_message(Message.user("Hi"))
        result = await chain.arun()
        assert result.status == "error"
        assert before.names.count("on_run_complete") == 1
        assert "on_error" not in before.names
        assert after.names[-1] == "on_error"

    def test_a_tool_exception_that_cannot_be_described(self) -> None:
        """A tool raising an exception whose __str__ raises fails that call and the
        run goes on (before: RuntimeError out of run())."""

        class Mute(Exception):
            @override
            def __str__(self) -> str:
                raise RuntimeError("no words")

        def mute(arguments: Mapping[str, Any], context: ToolContext) -> str:
            raise Mute

        chain, recorder = make_chain(
            [asks(call("mute")), says("Sorry.")], tools=(Tool("mute", mute),)
        )
        result = chain.run()
        assert result.status == "ok"
        (failed,) = recorder.of("on_tool_execution_failed")
        assert "Mute: <str() raised RuntimeError>" in failed[2].text

    def test_a_handler_exception_that_cannot_be_described(self) -> None:
        """A handler raising such an exception ends the run with handler_error."""

        class Mute(Exception):
            @override
            def __str__(self) -> str:
                raise RuntimeError("no words")

        class Raises(ChainCallbackHandler):
            @override
            def on_run_start(self, chain: LLMChain) -> None:
                raise Mute

        chain = LLMChain(ScriptedChatModel([says()]), callbacks=[Raises()]).add_message(
            Message.user("Hi")
        )
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert "Mute: <str() raised RuntimeError>" in result.error.message


def _weather_fn(city: str) -> str:
    return city


class TestCheckedAtConstruction:
    """Mistakes fail where they are made, with a message saying what to write."""

    def test_a_tool_function_of_the_wrong_shape(self) -> None:
        """Tool("weather", fn) with fn(city) fails at once, naming the expected
        signature (before: the model got a TypeError at run time)."""
        with pytest.raises(TypeError, match=r"\(arguments, context\)"):
            Tool("weather", _weather_fn)  # type: ignore[arg-type]

    def test_tool_functions_of_the_right_shape(self) -> None:
        """Functions taking (arguments, context), also with defaults or *args, pass."""

        def extra(arguments: Any, context: Any, verbose: bool = False) -> str:
            return ""

        def star(*args: Any) -> str:
            return ""

        assert Tool("extra", extra).name == "extra"
        assert Tool("star", star).name == "star"
        # A builtin without a signature is trusted.
        assert Tool("builtin", max).name == "builtin"  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "build",
        [
            lambda: UpdateArguments({1: "x"}),  # type: ignore[dict-item]
            lambda: Decision.edit({1: "x"}),  # type: ignore[dict-item]
            lambda: ToolCall(call_id="c", name="t", arguments={1: "x"}),  # type: ignore[dict-item]
        ],
        ids=["UpdateArguments", "Decision.edit", "ToolCall"],
    )
    def test_arguments_keys_must_be_str(self, build: Any) -> None:
        """Arguments are a JSON object: a non-str key is refused."""
        with pytest.raises(TypeError, match="keys must be str, got the int key 1"):
            build()

    def test_a_sync_and_async_twin_together_are_refused(self) -> None:
        """A class subclassing both StreamingChatResponseHandler and its async twin
        fails at class creation."""
        with pytest.raises(TypeError, match="not both"):
            type(
                "Both",
                (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler),
                {},
            )
        with pytest.raises(TypeError, match="subclasses both ChainCallbackHandler"):
            type("Chain", (ChainCallbackHandler, AsyncChainCallbackHandler), {})

    def test_a_chain_and_a_streaming_handler_together_are_fine(self) -> None:
        """Two interfaces of different kinds may be combined."""
        both = type("Both", (ChainCallbackHandler, StreamingChatResponseHandler), {})
        assert isinstance(both(), StreamingChatResponseHandler)

    def test_one_handler_as_callbacks_says_to_pass_a_list(self) -> None:
        """LLMChain(callbacks=handler) says that callbacks takes a list (it used to
        say the handler is not iterable); a non-handler in the list is named."""
        model = ScriptedChatModel([])
        with pytest.raises(TypeError) as raised:
            LLMChain(model, callbacks=ChainCallbackHandler())  # type: ignore[arg-type]
        assert str(raised.value) == (
            "callbacks takes a list of chain handlers, got a ChainCallbackHandler: "
            "pass callbacks=[handler]"
        )
        with pytest.raises(TypeError, match="callbacks takes a list"):
            LLMChain(model, callbacks=42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="got StreamingChatResponseHandler"):
            LLMChain(model, callbacks=[StreamingChatResponseHandler()])  # type: ignore[list-item]

    def test_an_async_handler_in_stream_is_pointed_at_astream(self) -> None:
        """model.stream(req, async_handler) says to await model.astream(...)."""
        request = ChatRequest(messages=[Message.user("Hi")])
        with pytest.raises(TypeError) as raised:
            ScriptedChatModel([ScriptedTurn(text="x")]).stream(
                request,
                AsyncStreamingChatResponseHandler(),  # type: ignore[arg-type]
            )
        message = str(raised.value)
        assert "got AsyncStreamingChatResponseHandler" in message
        assert "'await model.astream(request, handler)'" in message

    def test_a_list_of_stream_handlers_says_to_compose_them(self) -> None:
        """model.stream(req, [h1, h2]) says to wrap them in a composite."""
        request = ChatRequest(messages=[Message.user("Hi")])
        handlers = [StreamingChatResponseHandler(), StreamingChatResponseHandler()]
        with pytest.raises(
            TypeError, match=r"wrap several in CompositeStreamingHandler"
        ):
            ScriptedChatModel([ScriptedTurn(text="x")]).stream(
                request,
                handlers,  # type: ignore[arg-type]
            )
        with pytest.raises(
            TypeError, match=r"wrap several in CompositeStreamingHandler"
        ):
            replay_stream(
                [],
                format="openai-chat",
                handler=handlers,  # type: ignore[arg-type]
            )

    def test_a_bad_review_names_the_users_handler(self) -> None:
        """A review returning False names the user's handler, not the runtime's
        HandlerWithoutInvocation wrapper."""

        class Sloppy(ChainCallbackHandler):
            @override
            def on_tool_call_review(
                self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                return False  # type: ignore[return-value]

            @override
            def __repr__(self) -> str:
                return "Sloppy()"

        chain = LLMChain(
            ScriptedChatModel([asks(call("get_weather", city="Paris"))]),
            tools=[WEATHER],
            callbacks=[Sloppy()],
        ).add_message(Message.user("Weather?"))
        result = chain.run()
        assert result.error is not None
        assert "Sloppy().on_tool_call_review returned False" in result.error.message
        assert "HandlerWithoutInvocation" not in result.error.message
