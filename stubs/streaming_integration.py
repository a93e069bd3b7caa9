"""Typing contract: streaming handlers, as a third-party integration writes them.

Checked by mypy and pyright (both strict, unused ignores rejected); never executed.
"""

from __future__ import annotations

import asyncio
from typing import assert_type

from typing_extensions import override

from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialThinkingContext,
    PartialToolCall,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
)
from langhooks.models import ChatModel, ChatRequest


class TranscriptHandler(StreamingChatResponseHandler):
    """Collects a transcript and stops the stream at a stop word."""

    def __init__(self, stop_word: str) -> None:
        self.stop_word = stop_word
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []
        self.fragments: dict[int, str] = {}
        self.raw: list[object] = []
        self.result: ChatResponse | None = None
        self.failure: LangHooksError | None = None

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.text.append(partial.text)
        if self.stop_word in partial.text:
            context.handle.cancel()

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        self.thinking.append(partial.text)

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        self.fragments[partial.index] = (
            self.fragments.get(partial.index, "") + partial.partial_arguments
        )
        if context.handle.is_cancelled:
            return

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        self.calls.append(complete.tool_call)

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        self.raw.append(raw_event)

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        self.result = response
        assert_type(response.message, Message)

    @override
    def on_error(self, error: LangHooksError) -> None:
        # The natural override: every error a stream reports is a LangHooksError.
        if error.retryable:
            self.failure = error


class RenamedParameters(StreamingChatResponseHandler):
    """Event parameters are positional-only: an override may rename them."""

    @override
    def on_partial_response(
        self, piece: PartialResponse, ctx: PartialResponseContext
    ) -> None:
        print(piece.text, end="")


class AsyncPrinter(AsyncStreamingChatResponseHandler):
    """The async twin: every override is ``async def``."""

    def __init__(self, out: asyncio.Queue[str]) -> None:
        self.out = out

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        await self.out.put(partial.text)

    @override
    async def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        await self.out.put(partial.text)

    @override
    async def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        await asyncio.sleep(0)

    @override
    async def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        await self.out.put(complete.tool_call.name)

    @override
    async def on_unmapped_raw_event(self, raw_event: object) -> None:
        await asyncio.sleep(0)

    @override
    async def on_complete_response(self, response: ChatResponse) -> None:
        await self.out.put(response.message.text)

    @override
    async def on_error(self, error: LangHooksError) -> None:
        await self.out.put(error.type)


def ask(model: ChatModel, question: str) -> str:
    """Drive a stream with a handler and a handle held before the first token."""
    handle = StreamingHandle()
    handler = TranscriptHandler(stop_word="STOP")
    response = model.stream(
        ChatRequest([Message.user(question)]), handler, handle=handle
    )
    assert_type(response, ChatResponse)
    if handle.is_cancelled:
        return "".join(handler.text)
    return response.message.text


async def ask_async(model: ChatModel, question: str) -> str:
    """astream takes an async handler, or a sync one that is called inline."""
    out: asyncio.Queue[str] = asyncio.Queue()
    request = ChatRequest([Message.user(question)])
    await model.astream(request, TranscriptHandler(stop_word="STOP"))
    response = await model.astream(request, AsyncPrinter(out))
    return response.message.text


class WiderError(StreamingChatResponseHandler):
    """An override may still accept more than the stream sends."""

    @override
    def on_error(self, error: BaseException) -> None:
        print(error)
