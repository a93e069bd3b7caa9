"""Typing contract: gaps found by checking against code nobody here wrote (issue 27).

A class that is both a chain and a streaming handler, the codec's typed functions,
``EventRecord.event`` and ``NotifyingHandler``'s ``loop=`` (checked by mypy and
pyright, never run).
"""

from __future__ import annotations

import asyncio
from typing import Any, assert_type, overload

from typing_extensions import override

from langhooks import (
    AsyncChainStreamingHandler,
    ChainCallbackHandler,
    ChainStreamingHandler,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    ToolCall,
)
from langhooks.chain import LLMChain, RunResult
from langhooks.codec import Encodable, decode, dumps, encode, loads
from langhooks.events import EventRecord
from langhooks.models import ChatRequest, ScriptedChatModel
from langhooks.notify import NotifyingHandler


class Printer(ChainStreamingHandler):
    """Both interfaces in one class, checked as written."""

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        print(partial.text, end="")

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult, /) -> None:
        print()


class Failures(ChainStreamingHandler):
    """Handling failures of both kinds: on_error with both overloads."""

    @overload
    def on_error(self, error: LangHooksError, /) -> None: ...
    @overload
    def on_error(self, chain: LLMChain, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        print(args[-1])


class AsyncPrinter(AsyncChainStreamingHandler):
    """The async twin."""

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        print(partial.text, end="")


def both(model: ScriptedChatModel) -> None:
    """One handler in a chain's callbacks and in a bare stream."""
    handler = Printer()
    LLMChain(model, callbacks=[handler, Failures()]).run()
    model.stream(ChatRequest([Message.user("hi")]), handler)
    model.stream(ChatRequest([Message.user("hi")]), Failures())


async def aboth(model: ScriptedChatModel) -> None:
    """The async twin in arun() and astream()."""
    await LLMChain(model, callbacks=[AsyncPrinter()]).arun()
    await model.astream(ChatRequest([Message.user("hi")]), AsyncPrinter())


class Naive(  # type: ignore[misc]  # on_error of the two bases conflict
    ChainCallbackHandler, StreamingChatResponseHandler
):
    """Subclassing the two interfaces directly is what ChainStreamingHandler fixes."""


def codec_types(text: str, data: dict[str, Any]) -> None:
    """encode/dumps take value types; decode/loads give the class asked for."""
    value: Encodable = Message.user("hi")
    assert_type(encode(value), dict[str, Any])
    assert_type(dumps(ToolCall(call_id="c", name="f", arguments={})), str)
    assert_type(loads(text, type=Message), Message)
    assert_type(loads(text, Message), Message)
    assert_type(decode(data, type=ToolCall), ToolCall)
    assert_type(loads(text), Encodable)
    encode({"role": "user"})  # type: ignore[arg-type]
    dumps(object())  # type: ignore[arg-type]
    loads(text, type="Message")  # type: ignore[call-overload]


def records(record: EventRecord) -> None:
    """EventRecord.event is an event name, not any str."""
    EventRecord(seq=0, event="on_run_start")
    EventRecord(seq=0, event="on_partial_response")
    EventRecord(seq=0, event="on_nothing")  # type: ignore[arg-type]
    name: str = record.event
    print(name)


def notify(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
    """loop= only with an asyncio.Queue."""
    NotifyingHandler(notify=queue, loop=loop)
    NotifyingHandler(None, queue, loop=loop)
    NotifyingHandler(notify=queue)
    NotifyingHandler(loop=loop)  # type: ignore[call-overload]
    NotifyingHandler(notify=print, loop=loop)  # type: ignore[call-overload]
