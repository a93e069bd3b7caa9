"""Handlers that write down what they hear, for the bridge tests."""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    StreamingChatResponseHandler,
)

__all__ = ["AsyncChainLog", "ReviewLog", "StreamLog", "names"]


class ReviewLog(ChainCallbackHandler):
    """Every review it is asked (tool, arguments, the human's decision); allows."""

    def __init__(self) -> None:
        self.reviews: list[tuple[str, dict[str, Any], str | None]] = []

    @override
    def on_tool_call_review(
        self, chain: Any, call: Any, tool: Any, review: Any, /
    ) -> Any:
        self.reviews.append((call.name, dict(call.arguments), review.human_decision))
        return super().on_tool_call_review(chain, call, tool, review)


class AsyncChainLog(AsyncChainCallbackHandler):
    """The async handler's events, by name."""

    def __init__(self) -> None:
        self.events: list[str] = []

    @override
    async def on_run_start(self, chain: Any, /) -> None:
        self.events.append("on_run_start")

    @override
    async def on_llm_call_complete(self, chain: Any, response: Any, /) -> None:
        self.events.append("on_llm_call_complete")

    @override
    async def on_run_complete(self, chain: Any, result: Any, /) -> None:
        self.events.append(f"on_run_complete {result.status}")


class StreamLog(StreamingChatResponseHandler):
    """What a streaming handler hears, as (event, detail) pairs."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, Any]] = []

    @override
    def on_partial_response(self, partial: Any, context: Any, /) -> None:
        self.heard.append(("text", partial.text))

    @override
    def on_partial_thinking(self, partial: Any, context: Any, /) -> None:
        self.heard.append(("thinking", partial.text))

    @override
    def on_partial_tool_call(self, partial: Any, context: Any, /) -> None:
        self.heard.append(("tool", (partial.name, partial.partial_arguments)))

    @override
    def on_complete_tool_call(self, complete: Any, /) -> None:
        self.heard.append(("call", complete.tool_call.name))

    @override
    def on_complete_response(self, response: Any, /) -> None:
        self.heard.append(("response", response.message.text))

    @override
    def on_error(self, error: Any, /) -> None:
        self.heard.append(("error", error.error_type))


def names(records: list[Any]) -> list[str]:
    """The event names of an ``EventRecorder``'s records."""
    return [record.event for record in records]
