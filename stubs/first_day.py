"""Typing contract: what a newcomer writes on the first day (issue 40), accepted.

Checked by mypy and pyright, never run. Every lazily loaded name of ``langhooks``
keeps its real type (the package's ``__getattr__`` is invisible to the checkers);
the codec's results are value types; the provider models take the model name
positionally and their SDK's own client; ``LLMChain`` takes handlers written for
it, for any chain, or unparameterised. ``first_day_rejected.py`` is the other side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_type

import cohere
import google.genai
import mistralai.client
from typing_extensions import override

import langhooks
from langhooks import (
    AsyncChainCallbackHandler,
    AsyncChainStreamingHandler,
    AsyncCompositeChainHandler,
    AsyncCompositeStreamingHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChainStreamingHandler,
    ChainView,
    CoalescingDeltas,
    CompositeChainHandler,
    CompositeStreamingHandler,
    HandlerWithoutInvocation,
    Message,
    StreamEvent,
    StreamingChatResponseHandler,
    Synchronized,
    Tool,
    ToolContext,
    ToolResult,
)
from langhooks.chain import LLMChain, OkResult
from langhooks.codec import SCHEMA_VERSION, Encodable, decode, dumps, encode, loads
from langhooks.events import EventRecord
from langhooks.models import (
    AnthropicChatModel,
    BedrockChatModel,
    ChatRequest,
    CohereChatModel,
    GeminiChatModel,
    MistralChatModel,
    OllamaChatModel,
    OpenAIChatModel,
    ScriptedChatModel,
)
from langhooks.notify import NotifyingHandler, to_message

# --- every lazily loaded name keeps its type ------------------------------------------

assert_type(langhooks.AsyncCompositeChainHandler, type[AsyncCompositeChainHandler])
assert_type(
    langhooks.AsyncCompositeStreamingHandler, type[AsyncCompositeStreamingHandler]
)
assert_type(langhooks.ChainView, type[ChainView])
assert_type(langhooks.CompositeChainHandler, type[CompositeChainHandler])
assert_type(langhooks.CompositeStreamingHandler, type[CompositeStreamingHandler])
assert_type(langhooks.Tool, type[Tool])
assert_type(langhooks.ToolContext, type[ToolContext])
# (Classes with overloaded constructors: an assignment, which an ``object`` fails.)
coalescing: type[CoalescingDeltas] = langhooks.CoalescingDeltas
without: type[HandlerWithoutInvocation] = langhooks.HandlerWithoutInvocation
synchronized: type[Synchronized] = langhooks.Synchronized


def lazy_functions(
    event: langhooks.StreamEvent, model: ScriptedChatModel, request: ChatRequest
) -> None:
    """The lazily loaded functions and alias, used as their real selves."""
    assert_type(event, StreamEvent)
    assert_type(langhooks.chain_callbacks(), ChainCallbackHandler)
    assert_type(langhooks.achain_callbacks(), AsyncChainCallbackHandler)
    assert_type(langhooks.streaming_callbacks(), StreamingChatResponseHandler)
    assert_type(langhooks.astreaming_callbacks(), AsyncStreamingChatResponseHandler)
    printer = StreamingChatResponseHandler()
    assert_type(langhooks.isolate(printer), StreamingChatResponseHandler)
    assert_type(
        langhooks.filtered(printer, events=["on_error"]), StreamingChatResponseHandler
    )
    langhooks.in_background(printer).close()
    with langhooks.iterate_stream(model, request) as items:
        for item in items:
            assert_type(item, StreamEvent)


async def lazy_async_iterator(model: ScriptedChatModel, request: ChatRequest) -> None:
    async with langhooks.aiterate_stream(model, request) as items:
        async for item in items:
            assert_type(item, StreamEvent)


# --- the codec: value types in, value types out ---------------------------------------

message = Message.user("hi")
assert_type(loads(dumps(message), type=Message), Message)
assert_type(decode(encode(message), type=Message), Message)
assert_type(loads(dumps(message), type=EventRecord), EventRecord)
assert_type(loads(dumps(message)), Encodable)
assert_type(decode(encode(message)), Encodable)
anything = loads(dumps(message))
if isinstance(anything, Message):
    assert_type(anything.text, str)
assert_type(SCHEMA_VERSION, int)

# --- declared types, no bare Any ------------------------------------------------------

assert_type(ToolResult(tool_call_id="c", name="f").processed_content, object)
assert_type(to_message("on_tool_call", {"id": 1}), tuple[str, dict[str, int]])
NotifyingHandler().execute("on_agent_start", ["any", "payload"])
NotifyingHandler().execute_many([("on_error", 1), ("on_tool_call", "x")])


class Both(ChainStreamingHandler[LLMChain]):
    """Generic in the chain like the two interfaces it joins."""

    @override
    def on_run_start(self, chain: LLMChain, /) -> None:
        chain.to_state()


class AsyncBoth(AsyncChainStreamingHandler[ChainView]):
    @override
    async def on_run_start(self, chain: ChainView, /) -> None:
        assert_type(chain.messages, Sequence[Message])


def results(chain: LLMChain) -> None:
    assert_type(OkResult(chain=chain), OkResult[LLMChain])


# --- LLMChain takes handlers for it, for any chain, or unparameterised ----------------


class ForLLMChain(ChainCallbackHandler[LLMChain]):
    pass


class ForAnyChain(AsyncChainCallbackHandler[ChainView]):
    pass


class Plain(ChainCallbackHandler):
    pass


chain = LLMChain(
    ScriptedChatModel([]),
    callbacks=[ForLLMChain(), ForAnyChain(), Plain(), Both(), AsyncBoth()],
)
chain = chain.add_callback(ForLLMChain()).add_callback(ForAnyChain())
chain = chain.add_callback(Plain()).add_callback(Both())
chain = LLMChain.from_state(chain.to_state(), chain.model, callbacks=[ForLLMChain()])

# --- one constructor convention: the model name positionally or by keyword ------------

OpenAIChatModel("gpt-5-mini")
AnthropicChatModel("claude-sonnet-4-5")
OllamaChatModel("llama3.2")
GeminiChatModel("gemini-2.5-flash")
GeminiChatModel(model="gemini-2.5-flash")
CohereChatModel("command-a-03-2025")
MistralChatModel("mistral-small-latest")
bedrock = BedrockChatModel("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
BedrockChatModel(model="us.anthropic.claude-sonnet-4-5-20250929-v1:0")


def sdk_clients() -> None:
    """Each model takes its SDK's own client class."""
    GeminiChatModel("gemini-2.5-flash", client=google.genai.Client(api_key="k"))
    CohereChatModel("command-a-03-2025", client=cohere.ClientV2(api_key="k"))
    MistralChatModel("mistral-small-latest", client=mistralai.client.Mistral())
    response = bedrock.client.converse_stream(modelId="m", messages=[])
    assert_type(response["stream"], Any)
