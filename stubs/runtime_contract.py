"""Typing contract: the runtime as a user integrates it (checked by mypy, never run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_type

import attrs
from typing_extensions import override

from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChainView,
    ChatResponse,
    FinishReason,
    Interrupt,
    LangHooksError,
    Message,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
    ToolContext,
    ToolResult,
)
from langhooks.chain import (
    Decision,
    LLMChain,
    MessageProcessor,
    Reject,
    RetryPolicy,
    RunResult,
    Tool,
    json_processor,
)
from langhooks.models import ChatModel, ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler


class EchoModel:
    """A custom model: answers with the last user message, not streamed."""

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        response = ChatResponse(message=Message.assistant(request.messages[-1].text))
        handler.on_complete_response(response)
        return response

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        return ChatResponse(message=Message.assistant(request.messages[-1].text))


def lookup(arguments: Mapping[str, Any], context: ToolContext) -> str:
    context.report_progress(1, 2, "searching")
    context.report_progress(0.5)
    context.report_progress("half")  # type: ignore[arg-type]
    context.report_progress(1, message=3)  # type: ignore[arg-type]
    return f"found {arguments['query']} for {context.custom_context.get('user')}"


async def remember(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult(tool_call_id=context.call.call_id, name="remember", content="ok")


class Gate(ChainCallbackHandler):
    """Interrupts lookups until a human decided."""

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        if review.human_decision is None and tool.name == "lookup":
            return Interrupt("approve?", {"query": call.arguments.get("query")})
        return None

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        status: str = result.status
        print(status, chain.invocation)

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        print(error.type, error.original)


def require_text(chain: LLMChain, message: Message) -> Message | Reject:
    """A message processor: reject empty answers, tag the others."""
    if not message.text:
        return Reject("Answer with some text.")
    return Message(
        role="assistant",
        content=message.content,
        metadata={**message.metadata, "checked_by": len(chain.messages)},
    )


processors: list[MessageProcessor] = [json_processor(fenced=True), require_text]
model: ChatModel = EchoModel()
scripted: ChatModel = ScriptedChatModel(
    [ScriptedTurn(text="hi"), LangHooksError("overloaded", "busy")], delay=0.0
)
tools = [
    Tool("lookup", lookup, parameters_schema={"required": ["query"]}),
    Tool("remember", remember, concurrent=True),
]
chain = LLMChain(
    model,
    tools=tools,
    callbacks=[Gate(), RecordingChainHandler()],
    custom_context={"user": "ada"},
    fallbacks=[scripted],
    retry=RetryPolicy(max_attempts=3, sleep=lambda seconds: None),
    message_processors=processors,
).add_message(Message.user("hello"))
chain = chain.add_message_processors([json_processor()])
# Changed copies with attrs.evolve: the converters' argument types are what mypy
# checks (a set or a list where the field holds a tuple or a frozenset).
chain = attrs.evolve(chain, callbacks=[RecordingChainHandler()], tools=tools)
patient = RetryPolicy(retry_types={"timeout", "stream_error"})
patient = attrs.evolve(patient, retry_types=["overloaded"])
chain = attrs.evolve(chain, retry=patient, custom_context={"user": "grace"})
parsed: object = chain.messages[-1].metadata.get("processed_content")
result: RunResult = chain.run()
if result.status == "interrupted":
    resumed = result.chain.execute_tool_calls_with_decisions(
        result.chain.pending_tool_calls, [Decision.approve()]
    )
    final = resumed.chain.run("until_tool_used", tool_name="lookup")
    edited = Decision.edit({"query": "x"})


async def main() -> RunResult:
    return await chain.arun("single")


chain.run(mode="forever")  # type: ignore[arg-type]


def text_only(message: Message) -> Message:
    return message


async def later(chain: LLMChain, message: Message) -> Message:
    return message


LLMChain(model, message_processors=[text_only])  # type: ignore[list-item]
chain.add_message_processors([later])  # type: ignore[list-item]
Reject(reply=3)  # type: ignore[arg-type]


def history_size(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool reads the chain it was called from: what every runtime's chain
    offers (ChainView), not Any."""
    if context.chain is None:
        return "0"
    assert_type(context.chain, ChainView)
    return str(len(context.chain.messages))


outside = ToolContext(call=ToolCall(call_id="c", name="n", arguments={}))
outside.chain.messages  # type: ignore[union-attr]
reason: str = FinishReason.STOP


def stopped(response: ChatResponse) -> bool:
    """A finish reason compares with its string value."""
    return response.finish_reason == "stop"
