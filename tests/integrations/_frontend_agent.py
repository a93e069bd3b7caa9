"""The agent the frontend-protocol tests serve: scripted thinking, text, a weather
tool call that a review sends to a human, then the answer; it counts tool runs."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from langhooks import LangHooksError, Message, TokenUsage, Tool, ToolCall, ToolContext
from langhooks.chain import LLMChain
from langhooks.cli.demo import SYSTEM, ApprovalGate
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore, PendingRun

QUESTION = "What's the weather in Paris? Do I need an umbrella?"
THINKING = "I should look up the weather before answering."
FIRST_TEXT = "Let me check the weather in Paris."
FORECAST = "Paris: 14°C, light rain until 16:00"
ANSWER = "It is 14°C in Paris with light rain until 16:00, so yes: take an umbrella."
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def weather_turns(call_id: str = "call_1") -> list[ScriptedTurn]:
    """A tool call (with thinking and text), then the answer."""
    return [
        ScriptedTurn(
            thinking=THINKING,
            text=FIRST_TEXT,
            tool_calls=[
                ToolCall(
                    call_id=call_id, name="get_weather", arguments={"city": "Paris"}
                )
            ],
            usage=TokenUsage(input_tokens=48, output_tokens=36),
        ),
        ScriptedTurn(text=ANSWER, usage=TokenUsage(input_tokens=97, output_tokens=21)),
    ]


class WeatherAgent:
    """``agent(messages)`` for the apps: one scripted model across requests (a
    resume continues its script) and a weather tool that counts its runs."""

    def __init__(
        self, turns: Sequence[ScriptedTurn] | None = None, *, gate: bool = True
    ) -> None:
        self.model = ScriptedChatModel(
            list(weather_turns() if turns is None else turns)
        )
        self.gate = gate
        self.runs: list[dict[str, Any]] = []
        self.conversations: list[list[Message]] = []
        self._lock = threading.Lock()
        self.tool = Tool(
            "get_weather",
            self._weather,
            description="The current weather in a city.",
            parameters_schema=WEATHER_SCHEMA,
        )

    def _weather(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        with self._lock:
            self.runs.append(dict(arguments))
        return FORECAST

    def __call__(self, messages: Sequence[Message]) -> LLMChain:
        self.conversations.append(list(messages))
        callbacks = [ApprovalGate()] if self.gate else []
        chain = LLMChain(self.model, tools=[self.tool], callbacks=callbacks)
        return chain.add_messages([Message.system(SYSTEM), *messages])


class UnsavingStore:
    """A ``RunStore`` whose ``save`` fails (the store is down); the rest is a
    ``MemoryRunStore``'s."""

    def __init__(self) -> None:
        self.inner = MemoryRunStore()

    def save(self, chain: LLMChain, **options: Any) -> str:
        """Fail as a store that cannot be reached."""
        raise LangHooksError("connection", "the store is down")

    def load(self, run_id: str, model: Any, **options: Any) -> LLMChain:
        """As ``MemoryRunStore.load``."""
        return self.inner.load(run_id, model, **options)

    def resume(self, run_id: str, decisions: Any, model: Any, **options: Any) -> Any:
        """As ``MemoryRunStore.resume``."""
        return self.inner.resume(run_id, decisions, model, **options)

    def pending(self, **options: Any) -> list[PendingRun]:
        """As ``MemoryRunStore.pending``."""
        return self.inner.pending(**options)

    def delete(self, run_id: str) -> bool:
        """As ``MemoryRunStore.delete``."""
        return self.inner.delete(run_id)


class StalePendingStore:
    """A ``MemoryRunStore`` whose approval inbox can be frozen: ``pending()``
    then answers what it held when frozen, as a worker whose read raced with
    another worker's resume would see it."""

    def __init__(self) -> None:
        self.inner = MemoryRunStore()
        self.frozen: list[PendingRun] | None = None

    def save(self, chain: LLMChain, **options: Any) -> str:
        """As ``MemoryRunStore.save``."""
        return self.inner.save(chain, **options)

    def load(self, run_id: str, model: Any, **options: Any) -> LLMChain:
        """As ``MemoryRunStore.load``."""
        return self.inner.load(run_id, model, **options)

    def resume(self, run_id: str, decisions: Any, model: Any, **options: Any) -> Any:
        """As ``MemoryRunStore.resume``."""
        return self.inner.resume(run_id, decisions, model, **options)

    def pending(self, **options: Any) -> list[PendingRun]:
        """The frozen inbox, or ``MemoryRunStore.pending``."""
        if self.frozen is not None:
            return list(self.frozen)
        return self.inner.pending(**options)

    def delete(self, run_id: str) -> bool:
        """As ``MemoryRunStore.delete``."""
        return self.inner.delete(run_id)
