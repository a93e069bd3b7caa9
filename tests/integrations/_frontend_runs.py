"""Recorded runs the frontend translations are tested on, made by real chain runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import override

from langhooks import (
    ChainCallbackHandler,
    ChatResponse,
    ContentPart,
    Deny,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    PartialToolCall,
    PartialToolCallContext,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
    ToolContext,
)
from langhooks.chain import Decision, LLMChain, RetryPolicy, RunResult, Tool
from langhooks.events import EventRecord, EventRecorder
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

from ._frontend_agent import QUESTION, WeatherAgent, weather_turns


def recorded(chain: LLMChain) -> tuple[RunResult, list[EventRecord]]:
    """Run ``chain`` with an ``EventRecorder``; its result and records."""
    records: list[EventRecord] = []
    return chain.add_callback(EventRecorder(records.append)).run(), records


def weather_run() -> tuple[WeatherAgent, RunResult, list[EventRecord]]:
    """The weather agent's first request: it stops at the review."""
    agent = WeatherAgent()
    result, records = recorded(agent([Message.user(QUESTION)]))
    return agent, result, records


def resumed(
    agent: WeatherAgent, result: RunResult, decision: Decision
) -> list[EventRecord]:
    """The records of resuming ``result`` with ``decision`` on to the answer."""
    records: list[EventRecord] = []
    chain = result.chain.add_callback(EventRecorder(records.append))
    after = chain.execute_tool_calls_with_decisions(
        chain.pending_tool_calls, [decision]
    )
    after.chain.run()
    return records


def denied_run() -> list[EventRecord]:
    """A run whose review denies the weather call, then answers."""

    class Denier(ChainCallbackHandler):
        @override
        def on_tool_call_review(
            self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision | None:
            return Deny("Weather lookups are switched off.")

    agent = WeatherAgent(gate=False)
    chain = agent([Message.user(QUESTION)]).add_callback(Denier())
    return recorded(chain)[1]


def failing_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that raises."""
    raise RuntimeError("the weather service is down")


def two_calls_run(*, failing: bool = False) -> list[EventRecord]:
    """One answer that calls two tools at once (the second one raising when
    ``failing``), then the answer."""
    turns = [
        ScriptedTurn(
            text="Checking both cities.",
            tool_calls=[
                ToolCall(call_id="a", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(
                    call_id="b", name="get_weather", arguments={"city": "Lyon"}, index=1
                ),
            ],
        ),
        ScriptedTurn(text="Rain in both."),
    ]
    agent = WeatherAgent(turns, gate=False)
    chain = agent([Message.user("Paris and Lyon?")])
    if failing:
        chain = LLMChain(
            chain.model,
            tools=[Tool("get_weather", failing_tool)],
            messages=chain.messages,
        )
    return recorded(chain)[1]


def error_run() -> list[EventRecord]:
    """A run whose only model call fails for good."""
    model = ScriptedChatModel([LangHooksError("authentication", "the key is wrong")])
    return recorded(LLMChain(model).add_message(Message.user("Hi")))[1]


class StopButton:
    """A model whose answer is cancelled after its first words (a stop button)."""

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Stream "Sun", then cancel: no terminal callback, status "cancelled"."""
        handle = handle or StreamingHandle()
        handler.on_partial_response(
            PartialResponse(text="Sun"), PartialResponseContext(handle=handle)
        )
        handle.cancel()
        message = Message(role="assistant", content="Sun", status="cancelled")
        return ChatResponse(message=message)

    async def astream(
        self, request: ChatRequest, handler: Any, *, handle: Any = None
    ) -> ChatResponse:  # pragma: no cover - the tests run chains with run()
        """Not used: the tests run chains with ``run()``."""
        raise NotImplementedError


def cancelled_run() -> list[EventRecord]:
    """A run whose answer is cancelled while it streams."""
    return recorded(LLMChain(StopButton()).add_message(Message.user("Weather?")))[1]


class WholeAnswers:
    """A model that answers whole (nothing streamed): thinking, text and a call;
    a call alone; then a plain answer."""

    def __init__(self) -> None:
        self.answers = [
            Message(
                role="assistant",
                content=[
                    ContentPart.thinking("Look it up."),
                    ContentPart.text("One moment."),
                ],
                tool_calls=[
                    ToolCall(
                        call_id="w", name="get_weather", arguments={"city": "Oslo"}
                    )
                ],
            ),
            Message.assistant(
                "",
                tool_calls=[
                    ToolCall(
                        call_id="v", name="get_weather", arguments={"city": "Bergen"}
                    )
                ],
            ),
            Message.assistant("Snow."),
        ]

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The next answer, whole."""
        response = ChatResponse(message=self.answers.pop(0))
        handler.on_complete_response(response)
        return response

    async def astream(
        self, request: ChatRequest, handler: Any, *, handle: Any = None
    ) -> ChatResponse:  # pragma: no cover - the tests run chains with run()
        """Not used: the tests run chains with ``run()``."""
        raise NotImplementedError


def whole_run() -> list[EventRecord]:
    """A run on ``WholeAnswers`` with the weather tool."""
    agent = WeatherAgent(gate=False)
    chain = LLMChain(WholeAnswers(), tools=[agent.tool])
    return recorded(chain.add_message(Message.user("Oslo?")))[1]


class Flaky:
    """A model whose first call streams text and half a tool call, then fails
    (retryable); its second call answers with a call whose fragments carry no id
    (the id comes with the complete call)."""

    def __init__(self) -> None:
        self.calls = 0

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """First call: fail midway; second: a call whose id comes late."""
        self.calls += 1
        handle = handle or StreamingHandle()
        text = PartialResponseContext(handle=handle)
        tool = PartialToolCallContext(handle=handle)
        handler.on_partial_response(PartialResponse(text="Let me"), text)
        if self.calls == 1:
            handler.on_partial_tool_call(
                PartialToolCall(
                    index=0, id="x", name="get_weather", partial_arguments='{"ci'
                ),
                tool,
            )
            error = LangHooksError("overloaded", "try again")
            handler.on_error(error)
            raise error
        handler.on_partial_tool_call(
            PartialToolCall(
                index=0, id=None, name="get_weather", partial_arguments='{"city"'
            ),
            tool,
        )
        handler.on_partial_tool_call(
            PartialToolCall(
                index=0, id=None, name="get_weather", partial_arguments=':"Rome"}'
            ),
            tool,
        )
        call = ToolCall(call_id="y", name="get_weather", arguments={"city": "Rome"})
        response = ChatResponse(message=Message.assistant("Let me", tool_calls=[call]))
        handler.on_complete_response(response)
        return response

    async def astream(
        self, request: ChatRequest, handler: Any, *, handle: Any = None
    ) -> ChatResponse:  # pragma: no cover - the tests run chains with run()
        """Not used: the tests run chains with ``run()``."""
        raise NotImplementedError


def flaky_run() -> list[EventRecord]:
    """A run on ``Flaky``, retried at once, stopping at the weather review."""
    agent = WeatherAgent()
    retry = RetryPolicy(initial_delay=0.0, jitter=0.0, sleep=lambda seconds: None)
    chain = LLMChain(
        Flaky(), tools=[agent.tool], callbacks=agent([]).callbacks, retry=retry
    )
    return recorded(chain.add_message(Message.user("Rome?")))[1]


__all__ = [
    "QUESTION",
    "StopButton",
    "cancelled_run",
    "denied_run",
    "error_run",
    "flaky_run",
    "recorded",
    "resumed",
    "two_calls_run",
    "weather_run",
    "weather_turns",
    "whole_run",
]


def progressing_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that reports two steps of progress."""
    context.report_progress(1, 2, "fetching")
    context.report_progress(2, 2)
    return "Rain."


def progress_run() -> list[EventRecord]:
    """One call of a tool that reports progress twice, then the answer."""
    turns = [
        ScriptedTurn(
            tool_calls=[
                ToolCall(call_id="a", name="get_weather", arguments={"city": "Paris"})
            ]
        ),
        ScriptedTurn(text="Rain."),
    ]
    chain = LLMChain(
        ScriptedChatModel(turns),
        tools=[Tool("get_weather", progressing_tool)],
        messages=[Message.user("Paris?")],
    )
    return recorded(chain)[1]
