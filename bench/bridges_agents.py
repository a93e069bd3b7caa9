"""What a bridged run costs (issue 34): pydantic-ai and the OpenAI Agents SDK.

Usage (from the repository root)::

    python bench/bridges_agents.py            # about a minute
    python bench/bridges_agents.py --quick    # a smoke run

Each framework runs the same scripted conversation (a turn with thinking, text and
one tool call, then a text answer, ``--events`` words in all) on its own test model,
without langhooks and with its bridge carrying a handler that counts the deltas, in
interleaved rounds (``_harness.measure``; paired ratios). The runs without the bridge
stream as the bridged ones do: pydantic-ai's with a no-op ``event_stream_handler``
(a capability that listens to events makes pydantic-ai stream), the Agents SDK's
through ``Runner.run_streamed`` (and, not streamed, ``Runner.run``). Goal: a bridged
run at most 1.2x the same run without it.

Exits 0 whatever the figures: a shared machine's timings are reported, not asserted.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import _harness
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingPart,
    DeltaToolCall,
    FunctionModel,
)
from typing_extensions import override

from langhooks import ChainCallbackHandler, MessageDelta
from langhooks.integrations.openai_agents import LangHooksRunHooks
from langhooks.integrations.pydantic_ai import LangHooksCapability

set_tracing_disabled(True)

Item = str | dict[int, DeltaToolCall] | dict[int, DeltaThinkingPart]


class DeltaCounter(ChainCallbackHandler):
    """The least a handler does: count the deltas."""

    def __init__(self) -> None:
        self.n = 0

    @override
    def on_llm_new_delta(self, chain: Any, deltas: Sequence[MessageDelta], /) -> None:
        self.n += 1


def _words(count: int) -> list[str]:
    return [f"w{i} " for i in range(count)]


# --- pydantic-ai ---------------------------------------------------------------------


def _pydantic_agent(words: int, *capabilities: Any) -> PydanticAgent[None, str]:
    half = max(words // 2, 1)

    async def stream(
        messages: list[ModelMessage], _info: AgentInfo
    ) -> AsyncIterator[Item]:
        if not any(isinstance(m, ModelResponse) for m in messages):
            yield {0: DeltaThinkingPart(content="thinking")}
            for word in _words(half):
                yield word
            yield {1: DeltaToolCall("add", '{"a": 1, "b": 2}', tool_call_id="c1")}
        else:
            for word in _words(half):
                yield word

    agent: PydanticAgent[None, str] = PydanticAgent(
        FunctionModel(stream_function=stream), capabilities=list(capabilities)
    )

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return agent


async def _no_events(_ctx: Any, events: AsyncIterable[Any]) -> None:
    async for _event in events:
        pass


def pydantic_cases(words: int) -> list[_harness.Case]:
    plain = _pydantic_agent(words)
    bridged = _pydantic_agent(words, LangHooksCapability(DeltaCounter()))

    async def without() -> None:
        await plain.run("go", event_stream_handler=_no_events)

    async def with_bridge() -> None:
        await bridged.run("go")

    return [
        _harness.Case("pydantic-ai", without, words, is_async=True),
        _harness.Case("pydantic-ai + bridge", with_bridge, words, is_async=True),
    ]


# --- the OpenAI Agents SDK -----------------------------------------------------------


@function_tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def _agents_steps(words: int) -> list[ModelStep]:
    half = " ".join(_words(max(words // 2, 1)))
    reasoning = ResponseReasoningItem(
        id="r",
        type="reasoning",
        summary=[Summary(text="thinking", type="summary_text")],
    )
    return [
        ModelStep(
            output=[
                reasoning,
                assistant_message(half),
                function_call("add", {"a": 1, "b": 2}, call_id="c1"),
            ]
        ),
        ModelStep(output=[assistant_message(half)]),
    ]


def agents_cases(words: int) -> list[_harness.Case]:
    """One long-lived agent per case (as an application keeps its agents); its
    scripted model is given the conversation's two steps again before each run."""
    steps = _agents_steps(words)

    def agent() -> tuple[Agent[Any], ScriptedModel]:
        model = ScriptedModel()
        return Agent(name="a", model=model, tools=[add]), model

    plain, plain_model = agent()
    bridged, bridged_model = agent()
    hooks = LangHooksRunHooks(DeltaCounter())  # one run at a time, reused

    async def plain_run() -> None:
        plain_model.extend(steps)
        await Runner.run(plain, "go")

    async def bridged_run() -> None:
        bridged_model.extend(steps)
        await hooks.run(bridged, "go")

    async def plain_streamed() -> None:
        plain_model.extend(steps)
        result = Runner.run_streamed(plain, "go")
        async for _event in result.stream_events():
            pass

    async def bridged_streamed() -> None:
        bridged_model.extend(steps)
        result = hooks.run_streamed(bridged, "go")
        async for _event in result.stream_events():
            pass

    return [
        _harness.Case("agents run", plain_run, words, is_async=True),
        _harness.Case("agents run + bridge", bridged_run, words, is_async=True),
        _harness.Case("agents streamed", plain_streamed, words, is_async=True),
        _harness.Case(
            "agents streamed + bridge", bridged_streamed, words, is_async=True
        ),
    ]


PAIRS = (
    ("pydantic-ai + bridge", "pydantic-ai"),
    ("agents run + bridge", "agents run"),
    ("agents streamed + bridge", "agents streamed"),
)


def main(argv: Sequence[str] | None = None) -> None:
    settings = _harness.parse_settings(
        "What a bridged pydantic-ai / Agents SDK run costs.", None, argv
    )
    words = min(settings.events, 200)
    cases = [*pydantic_cases(words), *agents_cases(words)]
    results = _harness.measure(cases, settings, progress=print)
    rows = [
        (
            bridged,
            f"{results[plain].median / 1000:.1f}",
            f"{results[bridged].median / 1000:.1f}",
            f"{results[bridged].ratio(results[plain]):.2f}x",
        )
        for bridged, plain in PAIRS
    ]
    print(
        _harness.format_table(
            ["case", "without (µs/word)", "with (µs/word)", "ratio (goal ≤ 1.2x)"],
            rows,
        )
    )
    if settings.json_path is not None:
        _harness.save_json(
            settings.json_path,
            {
                "machine": _harness.machine_info(),
                "words": words,
                "ratios": {b: results[b].ratio(results[p]) for b, p in PAIRS},
            },
        )


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
