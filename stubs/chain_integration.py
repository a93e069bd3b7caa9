"""Typing contract: chain handlers and a review policy, as an integration writes them.

Checked by mypy and pyright (both strict, unused ignores rejected); never executed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, assert_type

from typing_extensions import override

from langhooks import (
    Allow,
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    ChatResponse,
    Deny,
    Interrupt,
    LangHooksError,
    Message,
    MessageDelta,
    ReviewContext,
    ReviewDecision,
    TokenUsage,
    Tool,
    ToolCall,
    ToolProgress,
    ToolResult,
    UpdateArguments,
)
from langhooks.chain import (
    ErrorResult,
    InterruptedResult,
    LLMChain,
    OkResult,
    RunResult,
)
from langhooks.models import ChatModel, ChatRequest

log = logging.getLogger("my_app")


class AuditTrail(ChainCallbackHandler):
    """Overrides every chain event of the sync interface."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.usage = TokenUsage()

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        self.lines.append(f"run {chain.invocation}")

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self.lines.append(f"call {model!r} with {len(request.messages)} messages")

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        self.lines.append(f"answered by {response.model_name}")

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        self.lines.append("".join(delta.text for delta in deltas))

    @override
    def on_llm_new_message(self, chain: LLMChain, message: Message) -> None:
        self.lines.append(message.text)

    @override
    def on_llm_ratelimit_info(
        self, chain: LLMChain, info: Mapping[str, object]
    ) -> None:
        self.lines.append(repr(dict(info)))

    @override
    def on_llm_token_usage(self, chain: LLMChain, usage: TokenUsage) -> None:
        self.usage = self.usage + usage

    @override
    def on_llm_response_headers(
        self, chain: LLMChain, headers: Mapping[str, str]
    ) -> None:
        self.lines.append(headers.get("x-request-id", ""))

    @override
    def on_message_processed(self, chain: LLMChain, message: Message) -> None:
        self.lines.append(message.role)

    @override
    def on_message_processing_error(self, chain: LLMChain, message: Message) -> None:
        self.lines.append(f"rejected {message.text}")

    @override
    def on_error_message_created(self, chain: LLMChain, message: Message) -> None:
        self.lines.append(message.text)

    @override
    def on_tool_call_identified(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.lines.append(tool.display_text or call.name)

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        return None

    @override
    def on_tool_execution_started(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.lines.append(f"start {call.call_id}")

    @override
    def on_tool_progress(
        self, chain: LLMChain, call: ToolCall, progress: ToolProgress
    ) -> None:
        total = "?" if progress.total is None else f"{progress.total:g}"
        self.lines.append(f"progress {call.call_id} {progress.progress:g}/{total}")

    @override
    def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self.lines.append(f"in worker {call.call_id}")

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.lines.append(result.text)

    @override
    def on_tool_execution_failed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self.lines.append(f"failed {result.is_error}")

    @override
    def on_tool_execution_exception(
        self, chain: LLMChain, call: ToolCall, exception: BaseException
    ) -> None:
        log.error("tool raised", exc_info=exception)

    @override
    def on_tool_interrupted(
        self, chain: LLMChain, results: Sequence[ToolResult]
    ) -> None:
        self.lines.extend(result.tool_call_id for result in results)

    @override
    def on_tool_response_created(self, chain: LLMChain, message: Message) -> None:
        self.lines.append(str(len(message.tool_results)))

    @override
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self.lines.append(f"{error.type} retryable={error.retryable}")

    @override
    def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        self.lines.append(f"retrying {error.type} in {delay:.1f}s")

    @override
    def on_retries_exceeded(self, chain: LLMChain) -> None:
        self.lines.append(str(chain.current_failure_count))

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self.lines.append(str(error))

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        # The status narrows the result: no cast, no assert.
        if result.status == "error":
            self.lines.append(result.error.type)
        elif result.status == "interrupted":
            self.lines.append(str(result.interrupt_data["tool_call_id"]))
        else:
            assert_type(result.error, None)


class ToolPolicy(ChainCallbackHandler):
    """A review policy that uses every decision type."""

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        if review.human_decision == "approve":
            return Allow()
        if call.name == "delete_everything":
            return Deny("this tool is not allowed here")
        if call.name == "transfer" and review.custom_context.get("role") != "admin":
            return Interrupt("approve the transfer?", data={"call": call.call_id})
        if "limit" not in call.arguments:
            return UpdateArguments({**call.arguments, "limit": 10})
        return None


class AsyncMetrics(AsyncChainCallbackHandler):
    """The async twin: every override is ``async def``."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[str] = asyncio.Queue()

    @override
    async def on_run_start(self, chain: LLMChain) -> None:
        await self.events.put("start")

    @override
    async def on_llm_new_delta(
        self, chain: LLMChain, deltas: Sequence[MessageDelta]
    ) -> None:
        await self.events.put(str(len(deltas)))

    @override
    async def on_llm_call_complete(
        self, chain: LLMChain, response: ChatResponse
    ) -> None:
        await self.events.put(str(response.id))

    @override
    async def on_llm_token_usage(self, chain: LLMChain, usage: TokenUsage) -> None:
        await self.events.put(str(usage.total_tokens))

    @override
    async def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        await asyncio.sleep(0)
        return Deny("read-only mode") if call.name.startswith("write") else None

    @override
    async def on_tool_pre_execution(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        await self.events.put(call.name)

    @override
    async def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        await self.events.put(error.type)

    @override
    async def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        await self.events.put(result.status)


def search(arguments: Mapping[str, Any], context: Any) -> str:
    return f"results for {arguments['q']}"


def run_with_handlers(model: ChatModel) -> RunResult:
    """Handlers go on the chain; run returns the result."""
    chain = LLMChain(
        model,
        tools=[Tool("search", search, description="search the web")],
        callbacks=[AuditTrail(), ToolPolicy()],
        custom_context={"role": "user"},
    ).add_message(Message.user("find langhooks"))
    result = chain.run()
    assert_type(result, RunResult)
    if result.status == "error":
        assert_type(result.error, LangHooksError)
        print(result.error.type, result.error.retryable)
    if result.status == "interrupted":
        print(result.interrupt_data["tool_call_id"])
    match result:
        case ErrorResult(error=error):
            assert_type(error, LangHooksError)
        case InterruptedResult(interrupt_data=data):
            assert_type(data, Mapping[str, Any])
        case OkResult():
            assert_type(result.interrupt_data, None)
    return result


async def arun_with_handlers(model: ChatModel) -> RunResult:
    """The async runtime takes async and sync handlers."""
    chain = LLMChain(model, callbacks=[AsyncMetrics(), AuditTrail()])
    return await chain.add_message(Message.user("hi")).arun()
