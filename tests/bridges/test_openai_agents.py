"""The OpenAI Agents SDK bridge on the SDK's own ``ScriptedModel``: runs, streamed
partials, review through approvals and guardrails, ``RunState`` resumes, failures.

The SDK's tracing is off: its exporter would try the network.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from typing_extensions import override

from tests.bridges._loops import closes_sync_loop
from tests.bridges._support import need_module

need_module("agents", "openai-agents")

from agents import (  # noqa: E402
    Agent,
    ModelSettings,
    Runner,
    RunState,
    function_tool,
    set_tracing_disabled,
)
from agents.models.interface import Model, ModelProvider  # noqa: E402
from agents.retry import ModelRetrySettings, RetryDecision  # noqa: E402
from agents.testing import (  # noqa: E402
    ModelStep,
    ScriptedModel,
    assistant_message,
    function_call,
)
from agents.tool import Tool as Tool_  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import ResponseReasoningItem  # noqa: E402
from openai.types.responses.response_reasoning_item import Summary  # noqa: E402

from langhooks import (  # noqa: E402
    AsyncChainCallbackHandler,
    Deny,
    Interrupt,
    ReviewContext,
    ReviewDecision,
    Tool,
    ToolCall,
    UpdateArguments,
)
from langhooks.chain import Decision  # noqa: E402
from langhooks.events import EventRecorder, read_events, replay_events  # noqa: E402
from langhooks.integrations.openai_agents import (  # noqa: E402
    BridgeWarning,
    LangHooksRunHooks,
    apply_decisions,
)
from langhooks.testing import (  # noqa: E402
    RecordingChainHandler,
    RecordingStreamingHandler,
)

__all__ = ["closes_sync_loop"]  # the fixture, used by every test here

set_tracing_disabled(True)


class Reviewing(RecordingChainHandler):
    """Records every event and answers review with ``decide``."""

    def __init__(self, decide: Any = None) -> None:
        super().__init__()
        self.decide = decide
        self.reviews: list[tuple[str, dict[str, Any], str | None]] = []

    @override
    def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        super().on_tool_call_review(chain, call, tool, review)
        self.reviews.append((call.name, dict(call.arguments), review.human_decision))
        return None if self.decide is None else self.decide(call, review)


def tools(ran: list[Any]) -> list[Tool_]:
    """``add`` records its calls; ``boom`` raises."""

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    @function_tool
    def boom() -> str:
        """Fail."""
        raise ValueError("kaput")

    return [add, boom]


def call_id(item: Any) -> str:
    """An interruption's tool call id."""
    return str(item.raw_item.call_id)


REASONING = ResponseReasoningItem(
    id="r1",
    type="reasoning",
    summary=[Summary(text="let me think", type="summary_text")],
)
USAGE = Usage(requests=1, input_tokens=5, output_tokens=7, total_tokens=12)


def tool_step(*calls: tuple[str, dict[str, Any], str]) -> ModelStep:
    return ModelStep(
        output=[
            REASONING,
            assistant_message("Adding now."),
            *(function_call(n, a, call_id=i) for n, a, i in calls),
        ],
        usage=USAGE,
    )


ANSWER = ModelStep(output=[assistant_message("The answer is 3.")], usage=USAGE)


def agent(*steps: Any, ran: list[Any], **kwargs: Any) -> Agent[Any]:
    return Agent(name="a", model=ScriptedModel(steps), tools=tools(ran), **kwargs)


EXPECTED = [
    "on_run_start",
    "on_llm_call_start",
    "on_tool_call_identified add",
    "on_llm_call_complete",
    "on_llm_new_message",
    "on_message_processed",
    "on_llm_token_usage",
    "on_tool_call_review add",
    "on_tool_execution_started add",
    "on_tool_pre_execution add",
    "on_tool_execution_completed add",
    "on_tool_response_created",
    "on_message_processed",
    "on_llm_call_start",
    "on_llm_call_complete",
    "on_llm_new_message",
    "on_message_processed",
    "on_llm_token_usage",
    "on_run_complete",
]


class TestRuns:
    """Each way of running an agent gives the contract's events."""

    def test_run(self) -> None:
        """``hooks.run``: the events in the contract's order."""
        recorder = Reviewing()
        ran: list[Any] = []
        hooks = LangHooksRunHooks(recorder)
        a = agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ANSWER, ran=ran)
        result = asyncio.run(hooks.run(a, "add"))
        assert result.final_output == "The answer is 3."
        assert recorder.summary() == EXPECTED
        assert ran == [(1, 2)]
        ((_, done),) = recorder.of("on_run_complete")
        assert done.status == "ok"
        roles = [m.role for m in done.chain.messages]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert done.chain.messages[1].thinking == "let me think"

    def test_run_sync_and_runner_directly(self) -> None:
        """``hooks.run_sync`` and ``Runner.run_sync(hooks.install(agent), ...)``
        give the same events."""
        first, second = Reviewing(), Reviewing()
        step = tool_step(("add", {"a": 1, "b": 2}, "c1"))
        LangHooksRunHooks(first).run_sync(agent(step, ANSWER, ran=[]), "add")
        hooks = LangHooksRunHooks(second)
        Runner.run_sync(hooks.install(agent(step, ANSWER, ran=[])), "add", hooks=hooks)
        assert first.summary() == second.summary() == EXPECTED

    def test_streamed_partials(self) -> None:
        """``run_streamed``: deltas for chain handlers, partials for a streaming
        handler, from the SDK's raw response events."""
        recorder, stream = Reviewing(), RecordingStreamingHandler()
        hooks = LangHooksRunHooks(recorder, stream)
        a = agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ANSWER, ran=[])

        async def main() -> None:
            result = hooks.run_streamed(a, "add")
            async for _event in result.stream_events():
                pass

        asyncio.run(main())
        assert "on_llm_new_message" not in recorder.names
        assert recorder.names.count("on_llm_new_delta") > 4
        assert stream.names[0] == "on_partial_thinking"
        assert "on_partial_response" in stream.names
        (partial, _), *_ = stream.of("on_partial_tool_call")
        assert (partial.id, partial.name) == ("c1", "add")
        ((complete,),) = stream.of("on_complete_tool_call")
        assert complete.tool_call.arguments == {"a": 1, "b": 2}
        assert stream.names.count("on_complete_response") == 2
        assert "".join(p.text for p, _ in stream.of("on_partial_response")) == (
            "Adding now.The answer is 3."
        )

    def test_async_handlers_one_event_at_a_time(self) -> None:
        """Concurrent tools and gathered hooks: an async handler that yields
        still hears each event whole, in order, with one terminal call."""
        log: list[str] = []

        class Slow(AsyncChainCallbackHandler):
            @override
            async def on_tool_pre_execution(
                self, chain: Any, call: Any, tool: Any
            ) -> None:
                log.append(f"pre {call.call_id}")
                await asyncio.sleep(0.01)
                log.append(f"pre {call.call_id} done")

            @override
            async def on_tool_execution_completed(
                self, chain: Any, call: Any, result: Any
            ) -> None:
                log.append(f"done {call.call_id}")

            @override
            async def on_run_complete(self, chain: Any, result: Any) -> None:
                log.append("end")

        hooks = LangHooksRunHooks(Slow())
        step = tool_step(
            ("add", {"a": 1, "b": 1}, "c1"), ("add", {"a": 2, "b": 2}, "c2")
        )
        asyncio.run(hooks.run(agent(step, ANSWER, ran=[]), "add"))
        for call_id in ("c1", "c2"):
            start = log.index(f"pre {call_id}")
            assert log[start + 1] == f"pre {call_id} done"
        assert log[-1] == "end"
        assert log.count("end") == 1

    def test_a_model_by_name_is_resolved(self) -> None:
        """``install`` resolves a model name with the given provider."""

        class Provider(ModelProvider):
            @override
            def get_model(self, model_name: str | None) -> Model:
                assert model_name == "scripted"
                return ScriptedModel([ANSWER])

        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        installed = hooks.install(
            Agent(name="a", model="scripted"), model_provider=Provider()
        )
        asyncio.run(Runner.run(installed, "hi", hooks=hooks))
        ((_, model, _),) = recorder.of("on_llm_call_start")
        assert model.model == "ScriptedModel"
        assert recorder.names[-1] == "on_run_complete"

    def test_not_a_handler(self) -> None:
        """Anything but a langhooks handler is refused, naming it."""
        with pytest.raises(TypeError, match="LangHooksRunHooks takes langhooks"):
            LangHooksRunHooks("print")


class TestReview:
    """Review through the approvals and guardrails ``install`` puts on tools."""

    def test_deny(self) -> None:
        """``Deny``: not run, the model is told, ``on_tool_execution_failed``."""
        recorder = Reviewing(lambda c, r: Deny("no"))
        ran: list[Any] = []
        hooks = LangHooksRunHooks(recorder)
        asyncio.run(
            hooks.run(
                agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ANSWER, ran=ran),
                "add",
            )
        )
        assert ran == []
        ((_, _, result),) = recorder.of("on_tool_execution_failed")
        assert result.content[0].content == "The tool call was denied: no"
        assert not result.is_error

    def test_update_arguments_fails_closed(self) -> None:
        """``UpdateArguments``: the SDK cannot rewrite a call, so it is denied
        and a warning says why."""
        recorder = Reviewing(lambda c, r: UpdateArguments({"a": 9, "b": 9}))
        ran: list[Any] = []
        hooks = LangHooksRunHooks(recorder)
        with pytest.warns(BridgeWarning, match="cannot run a tool call with other"):
            asyncio.run(
                hooks.run(
                    agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ANSWER, ran=ran),
                    "add",
                )
            )
        assert ran == []
        ((_, _, result),) = recorder.of("on_tool_execution_failed")
        assert "fail closed" in result.content[0].content

    def test_interrupt_and_resume_from_a_serialised_state(self) -> None:
        """``Interrupt``: the run ends interrupted (other calls of the turn ran);
        its ``RunState``, as a string, resumes with the approval in a new run:
        review sees "approve" and the tool runs once."""

        def decide(c: ToolCall, review: ReviewContext) -> ReviewDecision | None:
            wait = c.call_id == "c2" and review.human_decision is None
            return Interrupt("ok?", {"why": "big"}) if wait else None

        recorder = Reviewing(decide)

        ran: list[Any] = []
        step = tool_step(
            ("add", {"a": 1, "b": 1}, "c1"), ("add", {"a": 5, "b": 5}, "c2")
        )
        hooks = LangHooksRunHooks(recorder)
        first = asyncio.run(hooks.run(agent(step, ran=ran), "add"))
        assert [call_id(i) for i in first.interruptions] == ["c2"]
        assert ran == [(1, 1)]
        ((_, done),) = recorder.of("on_run_complete")
        assert done.status == "interrupted"
        assert done.interrupt_data == {"why": "big", "tool_call_id": "c2"}
        saved = first.to_state().to_string()

        second_recorder = Reviewing(decide)
        hooks = LangHooksRunHooks(second_recorder)
        resumed = agent(ANSWER, ran=ran)

        async def resume() -> Any:
            state = await RunState.from_string(hooks.install(resumed), saved)
            apply_decisions(state, {"c2": Decision.approve()})
            return await hooks.run(resumed, state)

        assert asyncio.run(resume()).final_output == "The answer is 3."
        assert ran == [(1, 1), (5, 5)]
        assert second_recorder.reviews == [("add", {"a": 5, "b": 5}, "approve")]
        assert second_recorder.names[-1] == "on_run_complete"

    @pytest.mark.parametrize(
        ("decision", "told"),
        [
            (Decision.reject("no way"), "no way"),
            (Decision.edit({"a": 0, "b": 0}), "fail closed"),
        ],
    )
    def test_a_rejection_or_an_edit_does_not_run(
        self, decision: Decision, told: str
    ) -> None:
        """A human rejection, or an edit the SDK cannot honour: not run."""
        recorder = Reviewing(lambda c, r: Interrupt("ok?"))
        ran: list[Any] = []
        hooks = LangHooksRunHooks(recorder)
        first = asyncio.run(
            hooks.run(agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ran=ran), "add")
        )
        seen: list[str] = []

        def answer(call: Any) -> ModelStep:
            seen.append(str(call.input[-1]))
            return ANSWER

        resumed = Agent(
            name="a", model=ScriptedModel([ModelStep.respond(answer)]), tools=tools(ran)
        )

        async def resume() -> Any:
            state = await RunState.from_string(
                hooks.install(resumed), first.to_state().to_string()
            )
            warned = (
                pytest.warns(BridgeWarning, match="'c1': the OpenAI Agents SDK cannot")
                if decision.kind == "edit"
                else contextlib.nullcontext()
            )
            with warned:
                apply_decisions(state, {"c1": decision, "other": Decision.approve()})
            return await hooks.run(resumed, state)

        asyncio.run(resume())
        assert ran == []
        assert told in seen[0]

    def test_without_install_the_run_is_only_observed(self) -> None:
        """``Runner.run(agent, hooks=hooks)`` on an agent not installed: events,
        no review (nothing could honour it)."""
        recorder = Reviewing(lambda c, r: Deny("no"))
        hooks = LangHooksRunHooks(recorder)
        ran: list[Any] = []
        a = agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ANSWER, ran=ran)
        asyncio.run(Runner.run(a, "add", hooks=hooks))
        assert ran == [(1, 2)]
        assert recorder.reviews == []
        assert recorder.names[-1] == "on_run_complete"


def _retry_any(_context: Any) -> RetryDecision:
    return RetryDecision(retry=True, delay=0.0)


class TestFailures:
    """Tool failures, model failures and retries, one terminal call."""

    def test_a_tool_that_raises(self) -> None:
        """The SDK answers the model with its error text; the bridge reports
        the failure and the exception the tool raised."""
        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        asyncio.run(
            hooks.run(agent(tool_step(("boom", {}, "c9")), ANSWER, ran=[]), "go")
        )
        ((_, _, exception),) = recorder.of("on_tool_execution_exception")
        assert isinstance(exception, ValueError)
        ((_, _, result),) = recorder.of("on_tool_execution_failed")
        assert result.is_error

    def test_a_retried_model_attempt(self) -> None:
        """A failed attempt the SDK retries: ``on_llm_error``, ``on_llm_retry``,
        a new ``on_llm_call_start``."""
        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        settings = ModelSettings(
            retry=ModelRetrySettings(max_retries=1, policy=_retry_any)
        )
        a = agent(
            ModelStep.raise_error(RuntimeError("busy")),
            ANSWER,
            ran=[],
            model_settings=settings,
        )
        asyncio.run(hooks.run(a, "hi"))
        assert recorder.summary()[:5] == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_llm_retry",
            "on_llm_call_start",
        ]
        assert recorder.names[-1] == "on_run_complete"

    def test_a_streamed_attempt_that_fails(self) -> None:
        """A stream the model breaks: the stream's ``on_error``, ``on_llm_error``."""
        recorder, stream = Reviewing(), RecordingStreamingHandler()
        hooks = LangHooksRunHooks(recorder, stream)
        settings = ModelSettings(
            retry=ModelRetrySettings(max_retries=1, policy=_retry_any)
        )
        a = agent(
            ModelStep.raise_error(RuntimeError("busy")),
            ANSWER,
            ran=[],
            model_settings=settings,
        )

        async def main() -> None:
            result = hooks.run_streamed(a, "hi")
            async for _event in result.stream_events():
                pass

        asyncio.run(main())
        assert "on_llm_error" in recorder.names
        assert stream.names[-1] == "on_complete_response"

    @pytest.mark.parametrize("sync", [False, True], ids=["run", "run_sync"])
    def test_a_run_that_raises_ends_once(self, sync: bool) -> None:
        """A model error nobody retries: ``on_llm_error``, then one ``on_error``
        (through ``hooks.run``), and the caller gets the exception."""
        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        a = agent(ModelStep.raise_error(RuntimeError("down")), ran=[])

        def run() -> object:
            return hooks.run_sync(a, "hi") if sync else asyncio.run(hooks.run(a, "hi"))

        with pytest.raises(RuntimeError, match="down"):
            run()
        assert recorder.summary() == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_error",
        ]


class TestDownstream:
    """What langhooks builds on events works on a bridged run."""

    def test_a_recording_replays_to_the_same_events(self, tmp_path: Any) -> None:
        """``EventRecorder`` → ``replay_events``: the same methods in order."""
        path = tmp_path / "run.jsonl"
        with path.open("w") as sink:
            hooks = LangHooksRunHooks(EventRecorder(sink))
            a = agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ANSWER, ran=[])
            asyncio.run(hooks.run(a, "add"))
        replayed = RecordingChainHandler()
        replay_events(read_events(path), replayed)
        assert replayed.summary() == EXPECTED


class TestEdges:
    """What the bridge does with less common shapes of a run."""

    def test_a_tool_s_own_approval_interrupts_the_run(self) -> None:
        """A tool whose own ``needs_approval`` holds a call: the run ends
        interrupted, as for review's ``Interrupt``."""

        async def always(_context: Any, _arguments: Any, _call_id: str) -> bool:
            return True

        @function_tool(needs_approval=always)
        def pay(amount: int) -> str:
            """Pay."""
            return "paid"

        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        step = ModelStep(output=[function_call("pay", {"amount": 5}, call_id="p1")])
        a = Agent(name="a", model=ScriptedModel([step]), tools=[pay])
        result = asyncio.run(hooks.run(a, "pay"))
        assert [call_id(i) for i in result.interruptions] == ["p1"]
        ((_, done),) = recorder.of("on_run_complete")
        assert done.status == "interrupted"

    def test_a_tool_without_a_failure_formatter_ends_the_run(self) -> None:
        """``failure_error_function=None``: the SDK raises; one ``on_error``."""

        def fails() -> str:
            """Fail."""
            raise ValueError("kaput")

        strict = function_tool(fails, failure_error_function=None)
        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        step = ModelStep(output=[function_call("fails", {}, call_id="f1")])
        a = Agent(name="a", model=ScriptedModel([step]), tools=[strict])
        with pytest.raises(Exception, match="kaput"):
            asyncio.run(hooks.run(a, "go"))
        assert recorder.names.count("on_error") == 1
        assert recorder.names[-1] == "on_error"

    def test_a_run_that_fails_before_it_starts(self) -> None:
        """A run the SDK refuses before any hook: nothing to report, the
        exception propagates."""
        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        with pytest.raises(Exception):  # noqa: B017, PT011 - whatever the SDK raises
            asyncio.run(hooks.run(agent(ANSWER, ran=[]), "hi", max_turns=-1))
        assert recorder.names == []

    def test_a_call_of_a_tool_the_agent_lacks(self) -> None:
        """An unknown tool's call is not reviewed; the SDK ends the run."""
        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        step = ModelStep(output=[function_call("nope", {}, call_id="n1")])
        with pytest.raises(Exception, match="nope"):
            asyncio.run(hooks.run(agent(step, ran=[]), "go"))
        assert recorder.reviews == []
        assert recorder.names[-1] == "on_error"

    def test_review_cannot_interrupt_a_call_a_human_approved(self) -> None:
        """Resumed, a review that interrupts again is a denial (the human
        already answered)."""
        recorder = Reviewing(lambda c, r: Interrupt("ok?"))
        ran: list[Any] = []
        hooks = LangHooksRunHooks(recorder)
        step = tool_step(("add", {"a": 1, "b": 2}, "c1"))
        first = asyncio.run(hooks.run(agent(step, ran=ran), "add"))
        resumed = agent(ANSWER, ran=ran)

        async def resume() -> Any:
            saved = first.to_state().to_string()
            state = await RunState.from_string(hooks.install(resumed), saved)
            apply_decisions(state, {"c1": Decision.approve()})
            return await hooks.run(resumed, state)

        asyncio.run(resume())
        assert ran == []
        (*_, (_, _, result)) = recorder.of("on_tool_execution_failed")
        assert "a human approved" in result.content[0].content

    def test_a_call_without_a_decision_stays_pending(self) -> None:
        """``apply_decisions`` leaves a call it has no decision for waiting."""
        hooks = LangHooksRunHooks(Reviewing(lambda c, r: Interrupt("ok?")))
        a = agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ran=[])
        first = asyncio.run(hooks.run(a, "add"))
        state = first.to_state()
        apply_decisions(state, {})
        assert len(state.get_interruptions()) == 1

    def test_an_installed_agent_run_without_the_hooks(self) -> None:
        """Run without ``hooks=``, the installed agent works and nobody hears."""
        recorder = Reviewing()
        hooks = LangHooksRunHooks(recorder)
        settings = ModelSettings(
            retry=ModelRetrySettings(max_retries=1, policy=_retry_any)
        )
        a = agent(
            ModelStep.raise_error(RuntimeError("busy")),
            ANSWER,
            ran=[],
            model_settings=settings,
        )
        installed = hooks.install(a)

        async def main() -> None:
            result = Runner.run_streamed(installed, "hi")
            async for _event in result.stream_events():
                pass
            await installed.model.close()  # type: ignore[union-attr]

        asyncio.run(main())
        assert recorder.names == []


class TestConvert:
    """The SDK's items as langhooks values."""

    def test_arguments_that_are_not_an_object(self) -> None:
        """Broken or non-object JSON arguments are empty."""
        from langhooks.integrations._openai_agents._convert import arguments_of

        assert arguments_of("{broken") == {}
        assert arguments_of("[1]") == {}

    def test_items_with_nothing_to_say(self) -> None:
        """Empty summaries, refusals and other items are left out; no usage is
        None."""
        from agents.items import ModelResponse
        from openai.types.responses import (
            ResponseFileSearchToolCall,
            ResponseOutputMessage,
            ResponseOutputRefusal,
        )

        from langhooks.integrations._openai_agents._convert import (
            message_of,
            usage_of,
        )

        refusal = ResponseOutputMessage(
            id="m",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputRefusal(refusal="no", type="refusal")],
        )
        empty = ResponseReasoningItem(
            id="r", type="reasoning", summary=[Summary(text="", type="summary_text")]
        )
        other = ResponseFileSearchToolCall(
            id="f", queries=[], status="completed", type="file_search_call"
        )
        response = ModelResponse(
            output=[empty, refusal, other],
            usage=Usage(),
            response_id=None,
        )
        message = message_of(response)
        assert (message.content, message.tool_calls) == ((), ())
        assert usage_of(response) is None


class TestInstall:
    """``install`` copies an agent once while it is unchanged."""

    def test_the_same_agent_twice(self) -> None:
        """Installing the same, unchanged agent again gives the same copy; a
        changed one, a new copy."""
        hooks = LangHooksRunHooks(Reviewing())
        a = agent(ANSWER, ran=[])
        first = hooks.install(a)
        assert hooks.install(a) is first
        a.tools = [*a.tools]
        assert hooks.install(a) is first  # the same tool objects
        a.tools = a.tools[:1]
        assert hooks.install(a) is not first


class TestSpans:
    """``OpenTelemetryHandler`` on a bridged run makes ``LLMChain``'s span tree."""

    def test_the_span_tree(self) -> None:
        """``invoke_agent`` over two ``chat`` spans and one ``execute_tool``."""
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        from langhooks.integrations.opentelemetry import OpenTelemetryHandler

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        hooks = LangHooksRunHooks(OpenTelemetryHandler(tracer_provider=provider))
        a = agent(tool_step(("add", {"a": 1, "b": 2}, "c1")), ANSWER, ran=[])
        asyncio.run(hooks.run(a, "add"))
        spans = exporter.get_finished_spans()
        (root,) = [s for s in spans if s.parent is None]
        assert root.name == "invoke_agent langhooks"
        children = sorted(s.name.split()[0] for s in spans if s.parent is not None)
        assert children == ["chat", "chat", "execute_tool"]


class TestToolContext:
    """``on_tool_pre_execution`` runs where the tool runs."""

    @pytest.mark.parametrize("is_async", [False, True], ids=["def", "async def"])
    def test_the_tool_sees_its_invocation_and_what_the_hook_set(
        self, is_async: bool
    ) -> None:
        """The call's invocation is current in the tool's code, and a context
        variable the hook set reaches it (and nothing after it)."""
        import contextvars

        from langhooks import current_invocation

        tenant: contextvars.ContextVar[str] = contextvars.ContextVar(
            "tenant", default=""
        )
        seen: list[tuple[str | None, str]] = []

        class SetsTenant(RecordingChainHandler):
            @override
            def on_tool_pre_execution(self, chain: Any, call: Any, tool: Any) -> None:
                tenant.set("acme")

        def whoami() -> str:
            """Who is calling."""
            current = current_invocation()
            seen.append((None if current is None else current.name, tenant.get()))
            return "ok"

        async def awhoami() -> str:
            """Who is calling."""
            return whoami()

        tool = function_tool(awhoami if is_async else whoami, name_override="whoami")

        step = ModelStep(output=[function_call("whoami", {}, call_id="w1")])
        a = Agent(name="a", model=ScriptedModel([step, ANSWER]), tools=[tool])
        asyncio.run(LangHooksRunHooks(SetsTenant()).run(a, "who"))
        assert seen == [("whoami", "acme")]
        assert tenant.get() == ""
