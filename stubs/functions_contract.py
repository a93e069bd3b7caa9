"""Typing contract: function handlers and Nous notification, as a user writes them.

Checked by mypy (strict, warn_unused_ignores); never executed. Each line carrying
``# type: ignore[<code>]`` is misuse that mypy must keep rejecting.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Sequence
from typing import Any, assert_type

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncCompositeChainHandler,
    AsyncCompositeStreamingHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    CompositeChainHandler,
    CompositeStreamingHandler,
    Deny,
    LangHooksError,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    Tool,
    ToolCall,
    UpdateArguments,
    achain_callbacks,
    astreaming_callbacks,
    chain_callbacks,
    isolate,
    streaming_callbacks,
)
from langhooks.chain import LLMChain
from langhooks.notify import (
    NotifyingHandler,
    NousEvent,
    ToolCallPayload,
    events,
    to_message,
)

# --- functions a user writes ----------------------------------------------------------


def print_deltas(chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
    print("".join(delta.text for delta in deltas), end="")


def read_only(
    chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
) -> ReviewDecision | None:
    if call.name.startswith("delete"):
        return Deny("read only")
    return UpdateArguments({**call.arguments, "dry_run": True})


async def log_error(chain: LLMChain, error: LangHooksError) -> None:
    await asyncio.sleep(0)


def print_partial(partial: PartialResponse, context: PartialResponseContext) -> None:
    print(partial.text, end="")


# Wrong shapes.
def deltas_as_text(chain: LLMChain, deltas: str) -> None: ...


def review_says_yes(
    chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
) -> str:
    return "yes"


async def async_start(chain: LLMChain) -> None: ...


def payload_only(payload: Any) -> None: ...


def chain_functions() -> None:
    handler = chain_callbacks(
        on_llm_new_delta=print_deltas,
        on_tool_call_review=read_only,
        on_run_start=lambda chain: print("start", chain.messages),
        on_error=lambda chain, error: print(error.type, error.retryable),
    )
    assert_type(handler, ChainCallbackHandler)
    composite = CompositeChainHandler([handler, isolate(handler)])
    composite.add(chain_callbacks())
    chain_callbacks(on_llm_new_delt=print_deltas)  # type: ignore[call-arg]
    chain_callbacks(on_partial_response=print_partial)  # type: ignore[call-arg]
    chain_callbacks(on_llm_new_delta=deltas_as_text)  # type: ignore[arg-type]
    chain_callbacks(on_tool_call_review=review_says_yes)  # type: ignore[arg-type]
    chain_callbacks(on_run_start=async_start)  # type: ignore[arg-type]
    chain_callbacks(on_run_start="start")  # type: ignore[arg-type]


async def async_chain_functions() -> None:
    handler = achain_callbacks(
        on_error=log_error,  # async def
        on_llm_new_delta=print_deltas,  # a plain function is allowed too
        on_run_start=async_start,
        on_tool_call_review=read_only,
    )
    assert_type(handler, AsyncChainCallbackHandler)
    composite = AsyncCompositeChainHandler([handler, chain_callbacks()])
    await composite.on_run_start(LLMChain(model=_model()))
    achain_callbacks(on_eror=log_error)  # type: ignore[call-arg]
    achain_callbacks(on_tool_call_review=review_says_yes)  # type: ignore[arg-type]


def streaming_functions() -> None:
    handler = streaming_callbacks(
        on_partial_response=print_partial,
        on_complete_response=lambda response: print(response.finish_reason),
        on_error=lambda error: print(repr(error)),
    )
    assert_type(handler, StreamingChatResponseHandler)
    CompositeStreamingHandler([handler])
    streaming_callbacks(on_partial_respons=print_partial)  # type: ignore[call-arg]
    streaming_callbacks(on_partial_response=print_deltas)  # type: ignore[arg-type]
    async_handler = astreaming_callbacks(
        on_partial_response=print_partial, on_error=lambda error: None
    )
    assert_type(async_handler, AsyncStreamingChatResponseHandler)
    AsyncCompositeStreamingHandler([async_handler, handler])


# --- Nous-style notification ----------------------------------------------------------


async def notification() -> None:
    mailbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=100)
    handler = NotifyingHandler(
        callbacks={"on_llm_new_delta": lambda event, text: print(text, end="")},
        notify=mailbox,
    )
    # Both interfaces: a chain run's callbacks and a model stream's handler.
    CompositeChainHandler([handler])
    CompositeStreamingHandler([handler])
    chain_side: ChainCallbackHandler = handler
    stream_side: StreamingChatResponseHandler = handler
    error = LangHooksError("timeout", "slow")
    stream_side.on_error(error)
    chain_side.on_error(LLMChain(model=_model()), error)
    handler.on_error(error)
    handler.on_error(LLMChain(model=_model()), error)
    handler.on_error()  # type: ignore[call-overload]

    tag, _payload = await mailbox.get()
    assert_type(tag, str)
    updated = handler.put_callback("on_error", lambda event, error: print(error))
    assert_type(updated, NotifyingHandler)
    assert_type(updated.remove_callback("on_error"), NotifyingHandler)
    assert_type(handler.dropped, int)
    assert_type(events(), list[NousEvent])
    assert_type(to_message("on_tool_call", {"id": "1"}), tuple[str, dict[str, str]])
    handler.execute_many([("on_tool_call", {"id": "1", "name": "search"})])

    # Each event's callback gets that event's payload type.
    typed = NotifyingHandler(
        callbacks={
            "on_agent_start": lambda event, payload: print(payload["chain"].messages),
            "on_tool_call": on_tool_call,
            "on_tool_response": lambda event, payload: print(
                payload["result"].is_error
            ),
            "on_agent_complete": lambda event, result: print(result.status),
            "on_error": lambda event, error: print(error.type),
        }
    )
    typed.put_callback("on_llm_new_message", lambda event, message: print(message.text))
    typed.put_callback("on_llm_new_delta", lambda event, text: print(text.upper()))
    NotifyingHandler(callbacks={"on_llm_new_delta": on_tool_call})  # type: ignore[call-overload]
    typed.put_callback("on_tool_call", print_text)  # type: ignore[call-overload]
    NotifyingHandler(callbacks={"on_agent_stat": print_text})  # type: ignore[call-overload]
    typed.remove_callback("on_run_start")  # type: ignore[arg-type]

    NotifyingHandler(notify=queue.Queue())
    NotifyingHandler(notify=print)
    NotifyingHandler(notify=["not", "a", "queue"])  # type: ignore[call-overload]
    NotifyingHandler(callbacks={"on_error": payload_only})  # type: ignore[call-overload]
    handler.put_callback("on_error", payload_only)  # type: ignore[call-overload]


def on_tool_call(event: str, payload: ToolCallPayload) -> None:
    print(payload["name"], payload["arguments"])


def print_text(event: str, text: str) -> None:
    print(text)


def _model() -> Any:
    return None
