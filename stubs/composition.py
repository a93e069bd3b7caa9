"""Typing contract: composing and wrapping handlers keeps their types.

Checked by mypy and pyright (both strict, unused ignores rejected); never executed.
"""

from __future__ import annotations

from typing import assert_type

from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncCompositeChainHandler,
    AsyncCompositeStreamingHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChatResponse,
    CoalescingDeltas,
    CompositeChainHandler,
    CompositeStreamingHandler,
    HandlerWithoutInvocation,
    PartialResponse,
    PartialResponseContext,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    Synchronized,
    Tool,
    ToolCall,
    filtered,
    isolate,
)
from langhooks.chain import LLMChain
from langhooks.notify import NotifyingHandler


class Printer(StreamingChatResponseHandler):
    def __init__(self) -> None:
        self.count = 0

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.count += 1


class AsyncPrinter(AsyncStreamingChatResponseHandler):
    @override
    async def on_complete_response(self, response: ChatResponse) -> None:
        print(response.message.text)


class Policy(ChainCallbackHandler):
    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        return None


class AsyncPolicy(AsyncChainCallbackHandler):
    @override
    async def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        return None


# --- wrappers keep the type ---------------------------------------------------------

printer = Printer()

# .wrap keeps the handler's own class, so its attributes stay visible.
assert_type(HandlerWithoutInvocation.wrap(printer), Printer)
print(HandlerWithoutInvocation.wrap(printer).count)
assert_type(HandlerWithoutInvocation.wrap(AsyncPolicy()), AsyncPolicy)

# The constructor gives a handler of the wrapped interface.
without: StreamingChatResponseHandler = HandlerWithoutInvocation(printer)
async_without: AsyncStreamingChatResponseHandler = HandlerWithoutInvocation(
    AsyncPrinter()
)
chain_without: ChainCallbackHandler = HandlerWithoutInvocation(Policy())
async_chain_without: AsyncChainCallbackHandler = HandlerWithoutInvocation(AsyncPolicy())
twice: HandlerWithoutInvocation = HandlerWithoutInvocation(
    HandlerWithoutInvocation(printer)
)

assert_type(isolate(printer), Printer)
# ... and is one at runtime: the count it reads and writes is the printer's.
isolated_printer = isolate(printer)
isolated_printer.count += 5
assert_type(Synchronized.wrap(printer), Printer)
assert_type(isolate(AsyncPolicy()), AsyncPolicy)
assert_type(filtered(Policy(), events=["on_tool_call_review"]), Policy)
assert_type(filtered(printer, events={"on_partial_response"}), Printer)

synchronized: StreamingChatResponseHandler = Synchronized(printer)
async_synchronized: AsyncChainCallbackHandler = Synchronized(AsyncPolicy())
locked_chain: Synchronized = Synchronized(Policy())

coalesced = CoalescingDeltas(printer, max_chars=128, max_interval=0.1)
coalesced.flush()
coalesced_stream: StreamingChatResponseHandler = coalesced
async_coalesced = CoalescingDeltas(AsyncPrinter(), max_interval=None)
async_coalesced_stream: AsyncStreamingChatResponseHandler = async_coalesced


async def flush_async() -> None:
    await async_coalesced.aflush()


# --- composites take handlers and wrapped handlers --------------------------------

stream_composite = CompositeStreamingHandler(
    [
        printer,
        HandlerWithoutInvocation(Printer()),
        isolate(Printer()),
        Synchronized(Printer()),
        filtered(Printer(), events=["on_partial_response"]),
        CoalescingDeltas(Printer()),
    ],
    errors="log",
)
stream_composite.add(HandlerWithoutInvocation.wrap(Printer()))
stream_composite.remove(printer)
assert_type(stream_composite.handlers, tuple[StreamingChatResponseHandler, ...])

# A composite is a handler: it nests and wraps like any other.
outer = CompositeStreamingHandler([stream_composite, isolate(stream_composite)])
as_handler: StreamingChatResponseHandler = outer

async_stream_composite = AsyncCompositeStreamingHandler(
    [AsyncPrinter(), printer, HandlerWithoutInvocation(AsyncPrinter())]
)
async_stream_composite.add(CoalescingDeltas(AsyncPrinter()))
async_stream_composite.add(Printer())

chain_composite = CompositeChainHandler([Policy(), HandlerWithoutInvocation(Policy())])
chain_composite.add(isolate(Policy()))


def review(chain: LLMChain, call: ToolCall, tool: Tool) -> ReviewDecision:
    """A composite's review returns the settled decision, never None."""
    return chain_composite.on_tool_call_review(chain, call, tool, ReviewContext())


async_chain_composite = AsyncCompositeChainHandler(
    [AsyncPolicy(), Policy(), Synchronized(AsyncPolicy()), chain_composite]
)


async def review_async(chain: LLMChain, call: ToolCall, tool: Tool) -> ReviewDecision:
    return await async_chain_composite.on_tool_call_review(
        chain, call, tool, ReviewContext()
    )


# --- a handler of two interfaces, wrapped, goes in either composite ----------------

notifying = NotifyingHandler()
for both in (
    HandlerWithoutInvocation.wrap(notifying),
    Synchronized.wrap(notifying),
    isolate(notifying),
    filtered(notifying, events=["on_error", "on_partial_response"]),
):
    CompositeStreamingHandler([both])
    CompositeChainHandler([both])
