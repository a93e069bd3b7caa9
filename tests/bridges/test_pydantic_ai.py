"""The pydantic-ai bridge on pydantic-ai's own test models (``FunctionModel``,
``TestModel``): every way of driving a run, review, deferred interrupts, failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from typing_extensions import override

from tests.bridges._loops import close_sync_loop, closes_sync_loop
from tests.bridges._support import need_module

need_module("pydantic_ai", "pydantic-ai")

from pydantic_ai import (  # noqa: E402
    Agent,
    DeferredToolRequests,
    ModelRetry,
    RetryModelRequest,
    RunContext,
    ToolFailed,
)
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.exceptions import ModelHTTPError  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse  # noqa: E402
from pydantic_ai.models import ModelRequestContext  # noqa: E402
from pydantic_ai.models.function import (  # noqa: E402
    AgentInfo,
    DeltaThinkingPart,
    DeltaToolCall,
    FunctionModel,
)
from pydantic_ai.models.test import TestModel  # noqa: E402

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
from langhooks.integrations.pydantic_ai import (  # noqa: E402
    LangHooksCapability,
    deferred_tool_results,
)
from langhooks.testing import (  # noqa: E402
    RecordingChainHandler,
    RecordingStreamingHandler,
)

__all__ = ["closes_sync_loop"]  # the fixture, used by every test here

Item = str | dict[int, DeltaToolCall] | dict[int, DeltaThinkingPart]


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


def turns(*answers: Sequence[Item] | Exception) -> Any:
    """A stream function answering each model request with the next item list
    (an exception raises instead)."""
    queue = list(answers)

    async def stream(
        _messages: list[ModelMessage], _info: AgentInfo
    ) -> AsyncIterator[Item]:
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        for item in answer:
            yield item

    return stream


def call(index: int, name: str, arguments: dict[str, Any], call_id: str) -> Item:
    return {index: DeltaToolCall(name, json.dumps(arguments), tool_call_id=call_id)}


TOOL_TURN: list[Item] = [
    {0: DeltaThinkingPart(content="let me ")},
    {0: DeltaThinkingPart(content="think")},
    "Adding ",
    "now.",
    call(1, "add", {"a": 1, "b": 2}, "c1"),
]
ANSWER: list[Item] = ["The answer ", "is 3."]


def agent_with(
    *handlers: object, model: Any, **kwargs: Any
) -> tuple[Agent[None, Any], list[Any]]:
    """An agent with an ``add`` tool that records its calls."""
    ran: list[Any] = []
    agent: Agent[None, Any] = Agent(
        model, capabilities=[LangHooksCapability(*handlers)], **kwargs
    )

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    return agent, ran


EXPECTED = [
    "on_run_start",
    "on_llm_call_start",
    *["on_llm_new_delta"] * 4,
    "on_llm_new_delta",
    "on_tool_call_identified add",
    "on_llm_new_delta",
    "on_llm_call_complete",
    "on_message_processed",
    "on_llm_token_usage",
    "on_tool_call_review add",
    "on_tool_execution_started add",
    "on_tool_pre_execution add",
    "on_tool_execution_completed add",
    "on_tool_response_created",
    "on_message_processed",
    "on_llm_call_start",
    "on_llm_new_delta",
    "on_llm_new_delta",
    "on_llm_new_delta",
    "on_llm_call_complete",
    "on_message_processed",
    "on_llm_token_usage",
    "on_run_complete",
]


class TestRunModes:
    """Every way pydantic-ai drives a run gives the handlers the same events."""

    def test_run_sync(self) -> None:
        """``run_sync``: the contract's events in LLMChain's order."""
        recorder = Reviewing()
        agent, ran = agent_with(
            recorder, model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER))
        )
        assert agent.run_sync("add").output == "The answer is 3."
        assert recorder.summary() == EXPECTED
        assert ran == [(1, 2)]
        ((_, result),) = recorder.of("on_run_complete")
        assert result.status == "ok"
        assert [m.role for m in result.chain.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        assert result.chain.messages[1].thinking == "let me think"

    def test_run_async(self) -> None:
        """``run`` (awaited), with an async handler beside a sync one."""
        recorder = Reviewing()
        seen: list[str] = []

        class Async(AsyncChainCallbackHandler):
            @override
            async def on_tool_execution_completed(
                self, chain: Any, call: ToolCall, result: Any
            ) -> None:
                await asyncio.sleep(0)
                seen.append(result.content[0].content)

        agent, _ = agent_with(
            recorder,
            Async(),
            model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER)),
        )
        asyncio.run(agent.run("add"))
        assert recorder.summary() == EXPECTED
        assert seen == ["3"]

    def test_run_stream(self) -> None:
        """``run_stream``: the same events, the run ending when the stream is read
        (a turn with text is the final answer there, so the tool turn has none)."""
        recorder = Reviewing()
        tool_turn = [TOOL_TURN[0], TOOL_TURN[1], TOOL_TURN[4]]
        agent, _ = agent_with(
            recorder, model=FunctionModel(stream_function=turns(tool_turn, ANSWER))
        )

        async def main() -> str:
            async with agent.run_stream("add") as stream:
                return "".join([t async for t in stream.stream_text(delta=True)])

        assert asyncio.run(main()) == "The answer is 3."
        print(recorder.summary())
        assert recorder.summary() == [
            name for i, name in enumerate(EXPECTED) if i not in (4, 5)
        ]

    def test_iter(self) -> None:
        """``iter``, node by node: the same events."""
        recorder = Reviewing()
        agent, _ = agent_with(
            recorder, model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER))
        )

        async def main() -> None:
            async with agent.iter("add") as run:
                async for _node in run:
                    pass

        asyncio.run(main())
        assert recorder.summary() == EXPECTED

    def test_test_model(self) -> None:
        """pydantic-ai's ``TestModel`` (calls every tool, then answers)."""
        recorder = Reviewing()
        agent, ran = agent_with(recorder, model=TestModel())
        agent.run_sync("go")
        assert ran == [(0, 0)]
        assert recorder.names[0] == "on_run_start"
        assert recorder.names[-1] == "on_run_complete"
        assert "on_tool_execution_completed" in recorder.names

    def test_a_streaming_handler_hears_each_model_call(self) -> None:
        """A handler that is only a streaming handler hears partials and the
        end of each model call's stream."""
        stream = RecordingStreamingHandler()
        agent, _ = agent_with(
            stream, model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER))
        )
        agent.run_sync("add")
        assert stream.names == [
            "on_partial_thinking",
            "on_partial_thinking",
            "on_partial_response",
            "on_partial_response",
            "on_partial_tool_call",
            "on_complete_tool_call",
            "on_complete_response",
            "on_partial_response",
            "on_partial_response",
            "on_complete_response",
        ]
        ((partial, _),) = stream.of("on_partial_tool_call")
        assert (partial.index, partial.id, partial.name) == (0, "c1", "add")

    def test_a_cancelled_stream_says_nothing_more(self) -> None:
        """After ``cancel()`` from a partial, that call's stream is silent (the
        model call itself goes on: pydantic-ai's)."""

        class Cancelling(RecordingStreamingHandler):
            @override
            def on_partial_thinking(self, partial: Any, context: Any) -> None:
                super().on_partial_thinking(partial, context)
                context.handle.cancel()

        stream = Cancelling()
        agent, _ = agent_with(
            stream, model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER))
        )
        agent.run_sync("add")
        assert stream.names[:2] == ["on_partial_thinking", "on_partial_response"]

    def test_not_a_handler(self) -> None:
        """Anything but a langhooks handler is refused, naming it."""
        with pytest.raises(
            TypeError, match="LangHooksCapability takes langhooks handlers"
        ):
            LangHooksCapability(object())


class TestReview:
    """Review decides each call of a turn before any runs."""

    def test_update_arguments_runs_the_call_with_them(self) -> None:
        """``UpdateArguments``: the tool runs with the new arguments."""
        recorder = Reviewing(lambda c, r: UpdateArguments({"a": 10, "b": 20}))
        agent, ran = agent_with(
            recorder, model=FunctionModel(stream_function=turns(TOOL_TURN, ["done"]))
        )
        agent.run_sync("add")
        assert ran == [(10, 20)]
        ((_, started, _),) = recorder.of("on_tool_execution_started")
        assert started.arguments == {"a": 10, "b": 20}

    def test_deny_answers_the_model_without_running(self) -> None:
        """``Deny``: not run; the model is told the reason as the tool's failure."""
        told: list[str] = []

        async def second(
            messages: list[ModelMessage], info: AgentInfo
        ) -> AsyncIterator[str]:
            told.append(str(messages[-1].parts[0].content))  # type: ignore[union-attr]
            yield "ok"

        recorder = Reviewing(lambda c, r: Deny("not today"))
        answers = iter([turns(TOOL_TURN), second])

        async def stream(
            messages: list[ModelMessage], info: AgentInfo
        ) -> AsyncIterator[Item]:
            async for item in next(answers)(messages, info):
                yield item

        agent, ran = agent_with(recorder, model=FunctionModel(stream_function=stream))
        agent.run_sync("add")
        assert ran == []
        assert told == ["The tool call was denied: not today"]
        ((_, failed, result),) = recorder.of("on_tool_execution_failed")
        assert (failed.name, result.is_error) == ("add", False)
        assert "on_tool_execution_started" not in recorder.names

    def test_interrupt_defers_and_a_human_decision_resumes(self) -> None:
        """``Interrupt``: the run ends with ``DeferredToolRequests``; resumed with
        the human's edit, review sees ``"edit"`` and the tool runs once."""

        def decide(c: ToolCall, review: ReviewContext) -> ReviewDecision | None:
            return None if review.human_decision else Interrupt("ok?", {"why": "money"})

        recorder = Reviewing(decide)
        agent, ran = agent_with(
            recorder,
            model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER)),
            output_type=[str, DeferredToolRequests],
        )
        first = agent.run_sync("add")
        assert isinstance(first.output, DeferredToolRequests)
        assert first.output.metadata["c1"] == {
            "message": "ok?",
            "data": {"why": "money"},
        }
        ((_, result),) = recorder.of("on_run_complete")
        assert result.status == "interrupted"
        assert result.interrupt_data == {"why": "money", "tool_call_id": "c1"}
        assert ran == []
        recorder.clear()
        recorder.reviews.clear()
        second = agent.run_sync(
            message_history=first.all_messages(),
            deferred_tool_results=deferred_tool_results(
                {"c1": Decision.edit({"a": 4, "b": 4})}
            ),
        )
        assert second.output == "The answer is 3."
        assert ran == [(4, 4)]
        assert recorder.reviews == [("add", {"a": 4, "b": 4}, "edit")]
        ((_, result),) = recorder.of("on_run_complete")
        assert result.status == "ok"

    def test_a_human_approval_is_seen_as_approve(self) -> None:
        """Approved with ``True`` (no langhooks decision): review sees "approve"."""
        recorder = Reviewing(
            lambda c, r: None if r.human_decision else Interrupt("ok?")
        )
        agent, ran = agent_with(
            recorder,
            model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER)),
            output_type=[str, DeferredToolRequests],
        )
        first = agent.run_sync("add")
        from pydantic_ai import DeferredToolResults

        agent.run_sync(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
        )
        assert recorder.reviews[-1] == ("add", {"a": 1, "b": 2}, "approve")
        assert ran == [(1, 2)]

    def test_a_human_rejection_is_a_failed_call(self) -> None:
        """Rejected: not run; ``on_tool_execution_failed`` with the reason."""
        recorder = Reviewing(lambda c, r: Interrupt("ok?"))
        agent, ran = agent_with(
            recorder,
            model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER)),
            output_type=[str, DeferredToolRequests],
        )
        first = agent.run_sync("add")
        recorder.clear()
        agent.run_sync(
            message_history=first.all_messages(),
            deferred_tool_results=deferred_tool_results({"c1": Decision.reject("no")}),
        )
        assert ran == []
        ((_, failed, result),) = recorder.of("on_tool_execution_failed")
        assert (failed.name, result.content[0].content, result.is_error) == (
            "add",
            "no",
            False,
        )


class TestFailures:
    """Tool failures, model failures and retries, and the run's one terminal call."""

    def test_a_tool_that_raises_ends_the_run(self) -> None:
        """A raised exception: failed, exception, then ``on_error`` (pydantic-ai
        ends the run); the caller gets the exception."""
        recorder = Reviewing()
        agent: Agent[None, str] = Agent(
            FunctionModel(stream_function=turns([call(0, "boom", {}, "c9")])),
            capabilities=[LangHooksCapability(recorder)],
        )

        @agent.tool_plain
        def boom() -> str:
            """Fail."""
            raise ValueError("kaput")

        with pytest.raises(ValueError, match="kaput"):
            agent.run_sync("go")
        names = recorder.summary()
        assert names[-3:] == [
            "on_tool_execution_failed boom",
            "on_tool_execution_exception boom",
            "on_error",
        ]
        assert names.count("on_error") == 1

    @pytest.mark.parametrize("signal", [ModelRetry("try again"), ToolFailed("gone")])
    def test_a_tool_that_asks_for_a_retry_or_fails(self, signal: Exception) -> None:
        """``ModelRetry`` / ``ToolFailed``: a failed call (an error result), the
        run goes on."""
        recorder = Reviewing()
        agent: Agent[None, str] = Agent(
            FunctionModel(
                stream_function=turns([call(0, "flaky", {}, "c9")], ["fine"])
            ),
            capabilities=[LangHooksCapability(recorder)],
        )

        @agent.tool_plain
        def flaky() -> str:
            """Fail softly."""
            raise signal

        assert agent.run_sync("go").output == "fine"
        ((_, _, result),) = recorder.of("on_tool_execution_failed")
        assert result.is_error
        assert "on_tool_execution_exception" not in recorder.names
        assert recorder.names[-1] == "on_run_complete"

    def test_a_failed_attempt_retried_by_a_capability(self) -> None:
        """A failed model attempt is ``on_llm_error``; the attempt a retrying
        capability asks for is ``on_llm_retry`` and a new ``on_llm_call_start``."""

        class RetryOnce(AbstractCapability[Any]):
            @override
            async def on_model_request_error(
                self,
                ctx: RunContext[Any],
                *,
                request_context: ModelRequestContext,
                error: Exception,
            ) -> ModelResponse:
                if request_context.attempt == 1:
                    raise RetryModelRequest()
                raise error

        recorder = Reviewing()
        stream = RecordingStreamingHandler()
        agent: Agent[None, str] = Agent(
            FunctionModel(stream_function=turns(ModelHTTPError(429, "m"), ANSWER)),
            capabilities=[RetryOnce(), LangHooksCapability(recorder, stream)],
        )
        agent.run_sync("go")
        names = recorder.summary()
        assert names[:5] == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_llm_retry",
            "on_llm_call_start",
        ]
        assert names[-1] == "on_run_complete"
        ((_, error),) = recorder.of("on_llm_error")
        assert error.type == "stream_error"

    def test_a_model_error_ends_the_run_once(self) -> None:
        """An attempt nobody retries: ``on_llm_error`` then one ``on_error``."""
        recorder = Reviewing()
        agent, _ = agent_with(
            recorder,
            model=FunctionModel(stream_function=turns(ModelHTTPError(500, "m"))),
        )
        with pytest.raises(ModelHTTPError):
            agent.run_sync("go")
        assert recorder.summary() == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_error",
        ]

    def test_a_streamed_attempt_that_fails_ends_its_stream(self) -> None:
        """A stream that fails mid-way: the streaming handler's ``on_error``."""

        async def dies(_m: list[ModelMessage], _i: AgentInfo) -> AsyncIterator[str]:
            yield "partial "
            raise ModelHTTPError(502, "m")

        stream = RecordingStreamingHandler()
        agent, _ = agent_with(stream, model=FunctionModel(stream_function=dies))
        with pytest.raises(ModelHTTPError):
            agent.run_sync("go")
        assert stream.names == ["on_partial_response", "on_error"]


class TestDownstream:
    """What langhooks builds on events works on a bridged run."""

    def test_a_recording_replays_to_the_same_events(self, tmp_path: Any) -> None:
        """``EventRecorder`` → ``replay_events``: the same methods in the same order."""
        path = tmp_path / "run.jsonl"
        with path.open("w") as sink:
            agent, _ = agent_with(
                EventRecorder(sink),
                model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER)),
            )
            agent.run_sync("add")
        replayed = RecordingChainHandler()
        replay_events(read_events(path), replayed)
        assert replayed.summary() == EXPECTED


class TestEdges:
    """What the bridge does with less common shapes of a run."""

    def test_fragments_of_a_call_stream_in_order(self) -> None:
        """A call's arguments in several fragments: each is a partial."""
        stream = RecordingStreamingHandler()
        split: list[Item] = [
            {0: DeltaToolCall("add", '{"a": 1', tool_call_id="c1")},
            {0: DeltaToolCall(json_args=', "b": 2}')},
        ]
        agent, ran = agent_with(
            stream, model=FunctionModel(stream_function=turns(split, ANSWER))
        )
        agent.run_sync("add")
        partials = [p.partial_arguments for p, _ in stream.of("on_partial_tool_call")]
        assert partials == ['{"a": 1', ', "b": 2}']
        assert ran == [(1, 2)]

    def test_a_tool_failure_raised_from_an_exception_reports_it(self) -> None:
        """``raise ToolFailed(...) from error``: the exception event has ``error``."""
        recorder = Reviewing()
        agent: Agent[None, str] = Agent(
            FunctionModel(
                stream_function=turns([call(0, "lookup", {}, "c9")], ["sorry"])
            ),
            capabilities=[LangHooksCapability(recorder)],
        )

        @agent.tool_plain
        def lookup() -> str:
            """Look up."""
            try:
                raise KeyError("order 7")
            except KeyError as error:
                raise ToolFailed("not found") from error

        agent.run_sync("go")
        ((_, _, exception),) = recorder.of("on_tool_execution_exception")
        assert isinstance(exception, KeyError)

    def test_a_tool_that_defers_itself_interrupts_the_run(self) -> None:
        """A tool raising ``ApprovalRequired``: the run ends interrupted."""
        from pydantic_ai import ApprovalRequired

        recorder = Reviewing()
        agent: Agent[None, Any] = Agent(
            FunctionModel(stream_function=turns([call(0, "pay", {}, "c9")])),
            capabilities=[LangHooksCapability(recorder)],
            output_type=[str, DeferredToolRequests],
        )

        @agent.tool
        def pay(ctx: RunContext[None]) -> str:
            """Pay."""
            if not ctx.tool_call_approved:
                raise ApprovalRequired({"amount": 5})
            return "paid"

        assert isinstance(agent.run_sync("go").output, DeferredToolRequests)
        ((_, result),) = recorder.of("on_run_complete")
        assert result.status == "interrupted"
        assert result.interrupt_data == {"amount": 5, "tool_call_id": "c9"}

    def test_history_becomes_the_chain_s_messages(self) -> None:
        """A run continuing a conversation starts from its messages."""
        recorder = Reviewing()
        agent, _ = agent_with(
            recorder,
            model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER, ["again"])),
            system_prompt="Be brief.",
        )
        first = agent.run_sync("add")
        recorder.clear()
        agent.run_sync("more", message_history=first.all_messages())
        ((chain,),) = recorder.of("on_run_start")
        roles = [m.role for m in chain.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
        assert chain.messages[3].tool_results[0].content[0].content == "3"

    def test_the_stand_ins_refuse_to_run(self) -> None:
        """The chain's model and tools stand for pydantic-ai's: calling them is
        a clear error."""
        from langhooks import LangHooksError, ToolContext
        from langhooks.models import ChatRequest

        recorder = Reviewing()
        agent, _ = agent_with(
            recorder, model=FunctionModel(stream_function=turns(TOOL_TURN, ANSWER))
        )
        agent.run_sync("add")
        ((chain, _),) = recorder.of("on_run_complete")
        request = ChatRequest(messages=chain.messages)
        with pytest.raises(LangHooksError, match="langhooks cannot call it"):
            chain.model.stream(request, RecordingStreamingHandler())
        close_sync_loop()  # before asyncio.run unsets it
        with pytest.raises(LangHooksError, match="langhooks cannot call it"):
            asyncio.run(chain.model.astream(request, RecordingStreamingHandler()))
        (tool,) = chain.tools
        context = ToolContext(call=ToolCall(call_id="x", name="add", arguments={}))
        with pytest.raises(LangHooksError, match="belongs to the framework"):
            tool.function({}, context)

    def test_output_tools_are_not_reviewed(self) -> None:
        """A structured answer's output-tool call is the answer, not a call to
        review or run."""
        recorder = Reviewing()
        agent, _ = agent_with(recorder, model=TestModel(), output_type=int)
        assert isinstance(agent.run_sync("go").output, int)
        assert [name for name, _, _ in recorder.reviews] == ["add"]

    def test_a_resumed_turn_runs_only_the_waiting_calls(self) -> None:
        """Resuming a turn whose other call already ran: only the waiting one is
        reviewed again and run."""
        two: list[Item] = [
            call(0, "add", {"a": 1, "b": 1}, "c1"),
            call(1, "add", {"a": 2, "b": 2}, "c2"),
        ]

        def decide(c: ToolCall, review: ReviewContext) -> ReviewDecision | None:
            wait = c.call_id == "c2" and review.human_decision is None
            return Interrupt("ok?") if wait else None

        recorder = Reviewing(decide)
        agent, ran = agent_with(
            recorder,
            model=FunctionModel(stream_function=turns(two, ANSWER)),
            output_type=[str, DeferredToolRequests],
        )
        first = agent.run_sync("add")
        recorder.reviews.clear()
        agent.run_sync(
            message_history=first.all_messages(),
            deferred_tool_results=deferred_tool_results({"c2": Decision.approve()}),
        )
        assert ran == [(1, 1), (2, 2)]
        assert recorder.reviews == [("add", {"a": 2, "b": 2}, "approve")]

    def test_not_built_from_a_spec(self) -> None:
        """It holds handler objects, so it opts out of pydantic-ai's agent specs."""
        assert LangHooksCapability.get_serialization_name() is None


class TestMessages:
    """pydantic-ai's messages as langhooks messages."""

    def test_a_response_and_its_usage(self) -> None:
        """Empty parts and parts with no langhooks content are left out; no
        usage is None."""
        from pydantic_ai.messages import BinaryContent, FilePart, TextPart
        from pydantic_ai.usage import RequestUsage

        from langhooks.integrations._pydantic_ai._messages import (
            message_of_response,
            usage_of,
        )

        response = ModelResponse(
            parts=[TextPart(""), FilePart(BinaryContent(b"x", media_type="image/png"))]
        )
        message = message_of_response(response)
        assert (message.content, message.tool_calls) == ((), ())
        assert usage_of(RequestUsage()) is None

    def test_a_retry_in_history_is_left_out(self) -> None:
        """A retry prompt of the history has no langhooks message of its own."""
        from pydantic_ai import RetryInfo
        from pydantic_ai.messages import ModelRequest, RetryFeedbackPart

        from langhooks.integrations._pydantic_ai._messages import messages_of

        history = [
            ModelRequest(
                parts=[RetryFeedbackPart("again", retry=RetryInfo(cause="model_retry"))]
            )
        ]
        assert messages_of(history) == []


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
        handler = OpenTelemetryHandler(tracer_provider=provider)
        model = FunctionModel(stream_function=turns(TOOL_TURN, ANSWER))
        agent, _ = agent_with(handler, model=model)
        agent.run_sync("add")
        spans = exporter.get_finished_spans()
        (root,) = [s for s in spans if s.parent is None]
        assert root.name == "invoke_agent langhooks"
        children = sorted(s.name.split()[0] for s in spans if s.parent is not None)
        assert children == ["chat", "chat", "execute_tool"]
        assert all(s.parent.span_id == root.context.span_id for s in spans if s.parent)


class TestToolContext:
    """``on_tool_pre_execution`` runs where the tool runs."""

    def test_the_tool_sees_its_invocation_and_what_the_hook_set(self) -> None:
        """The call's invocation is current in the tool's code (a sync tool runs
        in a worker thread), and a context variable the hook set reaches it."""
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

        agent: Agent[None, str] = Agent(
            FunctionModel(stream_function=turns([call(0, "whoami", {}, "w1")], ["ok"])),
            capabilities=[LangHooksCapability(SetsTenant())],
        )

        @agent.tool_plain
        def whoami() -> str:
            """Who is calling."""
            current = current_invocation()
            seen.append((None if current is None else current.name, tenant.get()))
            return "ok"

        agent.run_sync("who")
        assert seen == [("whoami", "acme")]
