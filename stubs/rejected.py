"""Typing contract: misuse that mypy and pyright must reject.

Checked by mypy (strict, explicit-override, warn_unused_ignores) and by pyright
(strict, reportImplicitOverride, reportUnnecessaryTypeIgnoreComment); never
executed. Each ``# type: ignore[<code>]`` marks a line that must stay an error in
both: if either checker ever accepts one, its unused-ignore check fails. (The code
is mypy's; pyright honours any ``# type: ignore``.) A line only one checker can
reject goes in that checker's own file, such as ``mypy_only.py``.
"""

from __future__ import annotations

from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    CoalescingDeltas,
    CompositeChainHandler,
    CompositeStreamingHandler,
    Deny,
    HandlerWithoutInvocation,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    Synchronized,
    Tool,
    ToolCall,
    UpdateArguments,
    filtered,
    isolate,
)
from langhooks.chain import LLMChain

# --- overrides ---------------------------------------------------------------------


class Misspelled(StreamingChatResponseHandler):
    @override
    def on_partial_respnse(  # type: ignore[misc]
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None: ...


class WrongSignature(StreamingChatResponseHandler):
    @override
    def on_partial_response(self, partial: str) -> None:  # type: ignore[override]
        ...


class WrongParameterType(ChainCallbackHandler):
    @override
    def on_llm_error(self, chain: LLMChain, error: str) -> None:  # type: ignore[override]
        ...


class MissingOverrideDecorator(StreamingChatResponseHandler):
    def on_error(self, error: BaseException) -> None:  # type: ignore[explicit-override]
        ...


class NarrowerError(StreamingChatResponseHandler):
    @override
    def on_error(self, error: TimeoutError) -> None:  # type: ignore[override]
        ...


class AsyncOnSyncBase(StreamingChatResponseHandler):
    @override
    async def on_error(self, error: BaseException) -> None:  # type: ignore[override]
        ...


class SyncOnAsyncBase(AsyncStreamingChatResponseHandler):
    @override
    def on_error(self, error: BaseException) -> None:  # type: ignore[override]
        ...


# --- review ------------------------------------------------------------------------


class ReviewReturnsBool(ChainCallbackHandler):
    @override
    def on_tool_call_review(  # type: ignore[override]
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> bool:
        return True


class ReviewReturnsString(ChainCallbackHandler):
    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        return "allow"  # type: ignore[return-value]


class AsyncReviewReturnsDict(AsyncChainCallbackHandler):
    @override
    async def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        return {"arguments": {}}  # type: ignore[return-value]


Deny()  # type: ignore[call-arg]
UpdateArguments(["not", "a", "mapping"])  # type: ignore[arg-type]
ReviewContext(human_decision="reject")  # type: ignore[arg-type]

# --- composites --------------------------------------------------------------------

CompositeStreamingHandler([AsyncStreamingChatResponseHandler()])  # type: ignore[list-item]
CompositeStreamingHandler([ChainCallbackHandler()])  # type: ignore[list-item]
CompositeChainHandler([AsyncChainCallbackHandler()])  # type: ignore[list-item]
CompositeChainHandler([]).add(StreamingChatResponseHandler())  # type: ignore[arg-type]
CompositeStreamingHandler([], errors="ignore")  # type: ignore[arg-type]


async def await_sync_composite(composite: CompositeStreamingHandler) -> None:
    await composite.on_error(LangHooksError("timeout", "t"))  # type: ignore[func-returns-value, misc]


# --- wrappers ----------------------------------------------------------------------

HandlerWithoutInvocation(object())  # type: ignore[call-overload]
HandlerWithoutInvocation.wrap("handler")  # type: ignore[type-var]
isolate(42)  # type: ignore[type-var]
Synchronized(None)  # type: ignore[call-overload]
filtered(print, events=["on_error"])  # type: ignore[call-overload]
filtered(StreamingChatResponseHandler(), events=["on_eror"])  # type: ignore[list-item]
filtered(StreamingChatResponseHandler(), events=["on_run_start"])  # type: ignore[list-item]
filtered(ChainCallbackHandler(), events=["on_partial_response"])  # type: ignore[list-item]
filtered(StreamingChatResponseHandler(), events="on_error")  # type: ignore[arg-type]
any_names: list[str] = ["on_error"]
filtered(StreamingChatResponseHandler(), events=any_names)  # type: ignore[arg-type]
CoalescingDeltas(ChainCallbackHandler())  # type: ignore[call-overload]
CoalescingDeltas(StreamingChatResponseHandler(), max_chars="64")  # type: ignore[call-overload]
CoalescingDeltas(StreamingChatResponseHandler()).aflush  # type: ignore[attr-defined]
CoalescingDeltas(AsyncStreamingChatResponseHandler()).flush  # type: ignore[attr-defined]


class Counter(StreamingChatResponseHandler):
    count = 0


HandlerWithoutInvocation.wrap(Counter()).total  # type: ignore[attr-defined]
HandlerWithoutInvocation(Counter()).count  # type: ignore[attr-defined]

# --- events are delivered positionally -----------------------------------------------

StreamingChatResponseHandler().on_error(error=LangHooksError("timeout", "t"))  # type: ignore[call-arg]

# --- value types -------------------------------------------------------------------

Message(role="robot", content="hi")  # type: ignore[arg-type]
LangHooksError("oops", "unknown type")  # type: ignore[arg-type]
PartialResponse(text=None)  # type: ignore[arg-type]
