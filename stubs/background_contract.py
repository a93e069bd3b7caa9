"""Typing contract: ``in_background`` keeps the handler's interface, and the items of
``iterate_stream`` / ``aiterate_stream`` narrow with ``match``.

Checked by mypy and pyright (both strict, unused ignores rejected); never executed.
A line ending in ``# type: ignore[<code>]`` is misuse the checker must keep
rejecting.
"""

from __future__ import annotations

from typing import assert_type

from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChatResponse,
    CompleteToolCall,
    CompositeChainHandler,
    CompositeStreamingHandler,
    HandlerWithoutInvocation,
    Message,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialToolCall,
    StreamEvent,
    StreamingChatResponseHandler,
    aiterate_stream,
    in_background,
    iterate_stream,
)
from langhooks.chain import LLMChain
from langhooks.integrations.logging import LoggingHandler
from langhooks.models import ChatModel, ChatRequest


class PushTokens(StreamingChatResponseHandler):
    """Sends each token to a push service."""

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        print(partial.text)


class AsyncPushTokens(AsyncStreamingChatResponseHandler):
    """The same, with an async client."""

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        print(partial.text)


class Audit(ChainCallbackHandler):
    """Writes each run's start to an audit log."""

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        print(chain.invocation)


class AsyncAudit(AsyncChainCallbackHandler):
    """The same, with an async client."""

    @override
    async def on_run_start(self, chain: LLMChain) -> None:
        print(chain.invocation)


def background_keeps_the_interface(model: ChatModel, request: ChatRequest) -> None:
    push = in_background(PushTokens(), maxsize=100, overflow="drop_oldest")
    model.stream(request, push)
    flushed: bool = push.flush(timeout=1.0)
    closed: bool = push.close()
    assert_type(push.error_count + push.dropped_count, int)
    audit = in_background(Audit())
    LLMChain(model, callbacks=[audit, HandlerWithoutInvocation(audit)])
    print(flushed, closed)


async def async_background_keeps_the_interface(
    model: ChatModel, request: ChatRequest
) -> None:
    push = in_background(AsyncPushTokens())
    await model.astream(request, push)
    await push.aflush()
    await push.aclose()
    audit = in_background(AsyncAudit())
    LLMChain(model, callbacks=[audit])
    assert_type(audit.error_count + audit.dropped_count, int)
    # An async handler's wrapper has no flush()/close(): they would always raise.
    push.flush()  # type: ignore[attr-defined]
    audit.close()  # type: ignore[attr-defined]


def two_interfaces_fit_both(model: ChatModel, request: ChatRequest) -> None:
    """A handler of a chain's and a stream's events, wrapped, fits either."""
    both = in_background(LoggingHandler())
    LLMChain(model, callbacks=[both])
    CompositeChainHandler([both])
    model.stream(request, CompositeStreamingHandler([both]))
    assert_type(both.flush(), bool)


def background_misuse() -> None:
    in_background(PushTokens(), overflow="newest")  # type: ignore[call-overload]
    in_background(print)  # type: ignore[call-overload]


def describe(item: StreamEvent) -> str:
    match item:
        case PartialThinking(text=text) | PartialResponse(text=text):
            assert_type(item, PartialThinking | PartialResponse)
            return text
        case PartialToolCall():
            return item.partial_arguments
        case CompleteToolCall():
            return item.tool_call.name
        case ChatResponse():
            assert_type(item.message, Message)
            return item.message.text


def iterate(model: ChatModel, request: ChatRequest) -> str:
    with iterate_stream(model, request) as items:
        return "".join(describe(item) for item in items)


async def aiterate(model: ChatModel, request: ChatRequest) -> list[str]:
    async with aiterate_stream(model, request) as items:
        return [describe(item) async for item in items]
