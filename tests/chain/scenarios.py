"""The documented scenarios: each builds a chain, runs it and returns the recording.

The firing-order tests assert each scenario's exact event sequence, and
``test_docs_firing_order`` checks the same sequences against docs/guide/runtime.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langhooks import (
    Deny,
    Interrupt,
    LangHooksError,
    Message,
    ReviewContext,
    ReviewDecision,
    TokenUsage,
    ToolCall,
    ToolContext,
)
from langhooks.chain import (
    Decision,
    LLMChain,
    RetryPolicy,
    RunResult,
    Tool,
    json_processor,
)
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler

USAGE = TokenUsage(input_tokens=10, output_tokens=5)


def collapse(lines: Sequence[str]) -> list[str]:
    """Join runs of one repeated line into ``"line x N"``."""
    out: list[str] = []
    count = 0
    for position, line in enumerate(lines):
        count += 1
        if position + 1 < len(lines) and lines[position + 1] == line:
            continue
        out.append(line if count == 1 else f"{line} x{count}")
        count = 0
    return out


def no_wait(sleeps: list[float] | None = None) -> RetryPolicy:
    """A retry policy that records its waits instead of sleeping."""
    waits = [] if sleeps is None else sleeps

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(sleep=waits.append, async_sleep=async_sleep)


def weather(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool: the weather in a city."""
    return f"18C and sunny in {arguments['city']}"


def clock(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool: the time."""
    return "12:00"


def broken(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that raises."""
    raise RuntimeError("the weather service is down")


WEATHER = Tool(
    "get_weather",
    weather,
    description="The weather in a city.",
    parameters_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
CLOCK = Tool("get_time", clock, description="The time.")
BROKEN = Tool("get_weather", broken)


def call(name: str, call_id: str = "call_1", **arguments: Any) -> ToolCall:
    """A tool call."""
    return ToolCall(call_id=call_id, name=name, arguments=arguments)


def asks(*calls: ToolCall) -> ScriptedTurn:
    """A turn asking for tool calls (no text)."""
    return ScriptedTurn(tool_calls=calls, usage=USAGE)


def says(text: str = "Done.") -> ScriptedTurn:
    """A turn answering with text."""
    return ScriptedTurn(text=text, usage=USAGE)


def make_chain(
    turns: Sequence[ScriptedTurn | LangHooksError],
    tools: Sequence[Tool] = (WEATHER,),
    review: Callable[[ToolCall, Tool, ReviewContext], ReviewDecision | None]
    | None = None,
    **options: Any,
) -> tuple[LLMChain, RecordingChainHandler]:
    """A chain on a scripted model with a recording handler and one user message."""
    recorder = RecordingChainHandler(review=review)
    options.setdefault("retry", no_wait())
    chain = LLMChain(
        ScriptedChatModel(turns), tools=tools, callbacks=[recorder], **options
    ).add_message(Message.user("What is the weather in Paris?"))
    return chain, recorder


def transient() -> LangHooksError:
    """A retryable model error."""
    return LangHooksError("overloaded", "the server is busy")


# --- the scenarios ----------------------------------------------------------------


def plain_reply() -> tuple[RunResult, RecordingChainHandler]:
    """Thinking and a one-word answer, no tools."""
    chain, recorder = make_chain(
        [ScriptedTurn(thinking="Easy.", text="Sunny.", usage=USAGE)]
    )
    return chain.run(), recorder


def two_tools() -> tuple[RunResult, RecordingChainHandler]:
    """One answer asks for two tools; both run; then a final answer."""
    chain, recorder = make_chain(
        [
            asks(
                call("get_weather", "call_1", city="Paris"), call("get_time", "call_2")
            ),
            says("Sunny."),
        ],
        tools=(WEATHER, CLOCK),
    )
    return chain.run(), recorder


def tool_raises() -> tuple[RunResult, RecordingChainHandler]:
    """The tool raises; the model gets a short error and answers."""
    chain, recorder = make_chain(
        [asks(call("get_weather", city="Paris")), says("Sorry.")], tools=(BROKEN,)
    )
    return chain.run(), recorder


def unknown_tool() -> tuple[RunResult, RecordingChainHandler]:
    """The model calls a tool the chain does not have."""
    chain, recorder = make_chain([asks(call("get_moon")), says("Sorry.")])
    return chain.run(), recorder


def denied() -> tuple[RunResult, RecordingChainHandler]:
    """Review denies the call (not a failure)."""
    chain, recorder = make_chain(
        [asks(call("get_weather", city="Paris")), says("I may not.")],
        review=lambda c, t, r: Deny("weather is off limits"),
    )
    return chain.run(), recorder


def _ask_human(
    call: ToolCall, tool: Tool, review: ReviewContext
) -> ReviewDecision | None:
    return None if review.human_decision else Interrupt("Allow?", {"risk": "low"})


def interrupted(decision: Decision) -> tuple[list[RunResult], RecordingChainHandler]:
    """Review interrupts; a human decides; the run continues to the answer."""
    chain, recorder = make_chain(
        [asks(call("get_weather", city="Paris")), says("Sunny.")], review=_ask_human
    )
    first = chain.run()
    second = first.chain.execute_tool_calls_with_decisions(
        first.chain.pending_tool_calls, [decision]
    )
    third = second.chain.run()
    return [first, second, third], recorder


def retry_recovered() -> tuple[RunResult, RecordingChainHandler]:
    """The model fails transiently once; the retry succeeds."""
    chain, recorder = make_chain([transient(), says("Sunny.")])
    return chain.run(), recorder


def fallback() -> tuple[RunResult, RecordingChainHandler]:
    """The model fails twice (its attempts); the fallback answers."""
    recorder = RecordingChainHandler()
    chain = LLMChain(
        ScriptedChatModel([transient(), transient()]),
        fallbacks=[ScriptedChatModel([says("Sunny.")])],
        callbacks=[recorder],
        retry=no_wait(),
    ).add_message(Message.user("Weather?"))
    return chain.run(), recorder


def all_fallbacks_failed() -> tuple[RunResult, RecordingChainHandler]:
    """The model and its fallback both fail (one attempt each)."""
    recorder = RecordingChainHandler()
    chain = LLMChain(
        ScriptedChatModel([transient()]),
        fallbacks=[ScriptedChatModel([transient()])],
        callbacks=[recorder],
        retry=RetryPolicy(max_attempts=1),
    ).add_message(Message.user("Weather?"))
    return chain.run(), recorder


def retries_exceeded() -> tuple[RunResult, RecordingChainHandler]:
    """The model keeps calling a broken tool until the failure counter reaches
    max_retry_count (in the default mode)."""
    chain, recorder = make_chain(
        [asks(call("get_weather", city="Paris"))] * 3,
        tools=(BROKEN,),
        max_retry_count=2,
    )
    return chain.run(), recorder


def retry_after_too_long() -> tuple[RunResult, RecordingChainHandler]:
    """The model asks to wait longer than max_delay; the fallback answers at once."""
    recorder = RecordingChainHandler()
    chain = LLMChain(
        ScriptedChatModel(
            [LangHooksError("rate_limited", "slow down", retry_after=86400)]
        ),
        fallbacks=[ScriptedChatModel([says("Sunny.")])],
        callbacks=[recorder],
        retry=no_wait(),
    ).add_message(Message.user("Weather?"))
    return chain.run(), recorder


def non_retryable() -> tuple[RunResult, RecordingChainHandler]:
    """An invalid request is neither retried nor failed over."""
    recorder = RecordingChainHandler()
    chain = LLMChain(
        ScriptedChatModel([LangHooksError("invalid_request", "bad schema")]),
        fallbacks=[ScriptedChatModel([says()])],
        callbacks=[recorder],
    ).add_message(Message.user("Weather?"))
    return chain.run(), recorder


def stream_dies() -> tuple[RunResult, RecordingChainHandler]:
    """The stream dies after its first words; the retry completes."""
    died = LangHooksError("stream_error", "stream cut mid-way", retryable=True)
    chain, recorder = make_chain([ScriptedTurn(text="Sun", error=died), says("Sunny.")])
    return chain.run(), recorder


def headers_and_usage() -> tuple[RunResult, RecordingChainHandler]:
    """A response carrying headers and rate-limit info."""
    turn = ScriptedTurn(
        text="Sunny.",
        usage=USAGE,
        metadata={
            "response_headers": {"x-request-id": "req_1"},
            "ratelimit": {"requests_remaining": 99},
        },
    )
    chain, recorder = make_chain([turn])
    return chain.run(), recorder


def until_success_exceeded() -> tuple[RunResult, RecordingChainHandler]:
    """mode="until_success": a tool fails in every batch until the budget is spent."""
    chain, recorder = make_chain(
        [asks(call("get_weather", city="Paris"))] * 2,
        tools=(BROKEN,),
        max_retry_count=2,
    )
    return chain.run("until_success"), recorder


def processor_rejected() -> tuple[RunResult, RecordingChainHandler]:
    """A JSON processor rejects a prose answer; the model answers again in JSON."""
    chain, recorder = make_chain(
        [says("Sunny."), says('{"weather": "sunny"}')],
        message_processors=[json_processor()],
    )
    return chain.run(), recorder


def processor_retries_exceeded() -> tuple[RunResult, RecordingChainHandler]:
    """The model keeps answering prose until the failure counter is spent."""
    chain, recorder = make_chain(
        [says("Sunny."), says("Still sunny.")],
        message_processors=[json_processor()],
        max_retry_count=2,
    )
    return chain.run(), recorder


SCENARIOS: dict[str, Callable[[], tuple[Any, RecordingChainHandler]]] = {
    "plain_reply": plain_reply,
    "two_tools": two_tools,
    "tool_raises": tool_raises,
    "unknown_tool": unknown_tool,
    "denied": denied,
    "interrupt_approve": lambda: interrupted(Decision.approve()),
    "interrupt_edit": lambda: interrupted(Decision.edit({"city": "Lyon"})),
    "interrupt_reject": lambda: interrupted(Decision.reject()),
    "retry_recovered": retry_recovered,
    "stream_dies": stream_dies,
    "fallback": fallback,
    "all_fallbacks_failed": all_fallbacks_failed,
    "retries_exceeded": retries_exceeded,
    "retry_after_too_long": retry_after_too_long,
    "non_retryable": non_retryable,
    "headers_and_usage": headers_and_usage,
    "until_success_exceeded": until_success_exceeded,
    "processor_rejected": processor_rejected,
    "processor_retries_exceeded": processor_retries_exceeded,
}


def recorded(name: str) -> list[str]:
    """The collapsed event summary of scenario ``name``."""
    _, recorder = SCENARIOS[name]()
    return collapse(recorder.summary())
