"""One bridged run: a framework's hook calls become the contract's events, in order.

A bridge (one per framework) turns what its framework reports into calls of
``FrameworkRun``'s methods; ``FrameworkRun`` keeps the run's chain (an ``LLMChain``
snapshot) and fires chain events on the chain handlers and stream events on the
streaming handlers, as ``LLMChain`` and a model stream would: partials in stream
order, a call identified once, review before any call runs, exactly one terminal
call and nothing after it. Every method is async (both frameworks call their hooks
on an event loop); a sync handler is called inline.

Dispatches are serialised by a lock: a framework that runs tools (or gathers its
hooks) concurrently still gives each handler one event at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, final

import attrs

from ..._core._chain_callbacks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    Interrupt,
    ReviewContext,
    ReviewDecision,
)
from ..._core._invocation import Invocation
from ..._core._messages import (
    ChatResponse,
    CompleteToolCall,
    FinishReason,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from ..._core._model import ChatRequest
from ..._core._result import run_result
from ..._core._stream_handler import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingHandle,
)
from ..._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)
from ..._core._tools import Tool
from ..._wrap._compose import AsyncCompositeChainHandler, AsyncCompositeStreamingHandler
from ..._wrap._wrappers import HandlerWithoutInvocation
from ...chain._chain import LLMChain
from ...chain._tool_results import (
    interrupt_data,
    interrupted_result,
    pending_results,
)
from ...models._errors import error_from_exception
from ._chain import FrameworkModel, stand_in_tool, start_chain

__all__ = ["BridgeHandlers", "FrameworkRun"]

_CHAIN: Final = (ChainCallbackHandler, AsyncChainCallbackHandler)
_STREAM: Final = (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler)


@final
class BridgeHandlers:
    """A bridge's handlers, sorted once, each called as ``LLMChain`` would call
    it: chain handlers hear the chain events, without the current invocation
    (``on_tool_pre_execution`` with the tool's); a handler that is only a
    streaming handler hears each model call's stream. A handler of both kinds
    hears the chain events, as in ``LLMChain(callbacks=[...])``. Sync and async
    handlers mix (the composites are async and call a sync handler inline).
    """

    __slots__ = ("chain", "has_chain", "has_stream", "pre", "stream")

    def __init__(self, handlers: Iterable[object], owner: str) -> None:
        """Sort ``handlers``.

        Raises:
            TypeError: one is not a langhooks handler.
        """
        chain: list[Any] = []
        stream: list[Any] = []
        for handler in handlers:
            if not isinstance(handler, _CHAIN + _STREAM):
                raise TypeError(
                    f"{owner} takes langhooks handlers (ChainCallbackHandler, "
                    f"StreamingChatResponseHandler or their async twins), got "
                    f"{handler!r}"
                )
            if isinstance(handler, _CHAIN):
                chain.append(handler)
            else:
                stream.append(handler)
        self.chain: Final = AsyncCompositeChainHandler(
            HandlerWithoutInvocation.wrap(h) for h in chain
        )
        self.pre: Final = AsyncCompositeChainHandler(chain)
        self.stream: Final = AsyncCompositeStreamingHandler(
            HandlerWithoutInvocation.wrap(h) for h in stream
        )
        self.has_chain: Final = bool(chain)
        self.has_stream: Final = bool(stream)


@final
class _ModelCall:
    """One model call's stream, as far as the bridge has seen it."""

    __slots__ = ("calls", "handle", "identified", "streamed")

    def __init__(self) -> None:
        self.handle = StreamingHandle()
        self.identified: set[int] = set()
        self.streamed = False
        self.calls: dict[int, tuple[str | None, str]] = {}  # index: (id, name)


@final
class FrameworkRun:
    """The events of one framework run, fired on a bridge's handlers.

    Attributes:
        chain: the run's chain (an ``LLMChain`` snapshot, never run) as it
            stands.
        ended: whether the terminal call (``on_run_complete``/``on_error``) was
            made; nothing fires after it.
    """

    def __init__(
        self,
        handlers: BridgeHandlers,
        *,
        tools: Sequence[Tool],
        messages: Sequence[Message] = (),
        custom_context: Mapping[str, Any] | None = None,
        invocation: Invocation,
        model: FrameworkModel,
    ) -> None:
        self._h: Final = handlers
        self._tools = {tool.name: tool for tool in tools}
        self._sketched = False  # a tool known by name only (know_tool)
        self._lock: Final = asyncio.Lock()
        self._call: _ModelCall | None = None
        self.chain: LLMChain = start_chain(
            model,
            messages=messages,
            tools=tools,
            custom_context=custom_context or {},
            invocation=invocation,
        )
        self.started = False
        self.ended = False

    def tool(self, name: str) -> Tool | None:
        """The stand-in of the framework's tool ``name`` (None if unknown)."""
        return self._tools.get(name)

    def know_tool(self, name: str) -> None:
        """Make sure a tool called ``name`` is known (a stand-in without schema
        until the framework names its tools)."""
        if name not in self._tools:
            self._use((*self._tools.values(), stand_in_tool(name, "", None)))
            self._sketched = True

    def set_tools(self, tools: Sequence[tuple[str, str, Mapping[str, Any]]]) -> None:
        """The framework's tools for the coming steps, as ``(name, description,
        schema)`` (the stand-ins are only made again when they changed)."""
        if not self._sketched and tuple(self._tools) == tuple(t[0] for t in tools):
            return
        self._sketched = False
        self._use(tuple(stand_in_tool(*tool) for tool in tools))

    def _use(self, tools: tuple[Tool, ...]) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self.chain = attrs.evolve(self.chain, tools=tools)

    # --- the run -----------------------------------------------------------------

    async def start(self) -> None:
        """``on_run_start``, once."""
        if self.started:
            return
        self.started = True
        async with self._lock:
            await self._h.chain.on_run_start(self.chain)

    async def complete(self) -> None:
        """The run ended well: ``on_run_complete`` with status "ok", or
        "interrupted" when the last tool message holds interrupted calls."""
        if self.ended:
            return
        self.ended = True
        waiting = pending_results(self.chain)
        if waiting:
            result = run_result(
                status="interrupted",
                chain=self.chain,
                interrupt_data=interrupt_data(waiting),
            )
        else:
            result = run_result(status="ok", chain=self.chain)
        async with self._lock:
            await self._h.chain.on_run_complete(self.chain, result)

    async def fail(self, exc: BaseException) -> LangHooksError:
        """The run gave up: ``on_error``, once (nothing if it already ended). A
        model call still streaming failed with it (``on_llm_error`` first).

        Returns:
            The ``LangHooksError`` the handlers were given.
        """
        error = as_error(exc)
        if self.ended:
            return error
        if self._call is not None:
            await self.model_error(error)
        self.ended = True
        async with self._lock:
            await self._h.chain.on_error(self.chain, error)
        return error

    # --- one model call ------------------------------------------------------------

    async def model_start(self, model: FrameworkModel) -> None:
        """``on_llm_call_start`` for an attempt of ``model``."""
        self._call = _ModelCall()
        if self._h.has_chain:
            request = ChatRequest(messages=self.chain.messages, tools=self.chain.tools)
            async with self._lock:
                await self._h.chain.on_llm_call_start(self.chain, model, request)

    def _current(self) -> _ModelCall:
        if self._call is None:  # a framework streaming outside a model call
            self._call = _ModelCall()
        self._call.streamed = True
        return self._call

    async def text(self, text: str) -> None:
        """A piece of response text (ignored when empty)."""
        call = self._current()
        if not text or call.handle.is_cancelled:
            return
        async with self._lock:
            if self._h.has_chain:
                await self._h.chain.on_llm_new_delta(
                    self.chain, (MessageDelta(text=text),)
                )
            if self._h.has_stream:
                context = PartialResponseContext(handle=call.handle)
                await self._h.stream.on_partial_response(
                    PartialResponse(text=text), context
                )

    async def thinking(self, text: str) -> None:
        """A piece of thinking text (ignored when empty)."""
        call = self._current()
        if not text or call.handle.is_cancelled:
            return
        async with self._lock:
            if self._h.has_chain:
                await self._h.chain.on_llm_new_delta(
                    self.chain, (MessageDelta(thinking=text),)
                )
            if self._h.has_stream:
                context = PartialThinkingContext(handle=call.handle)
                await self._h.stream.on_partial_thinking(
                    PartialThinking(text=text), context
                )

    async def tool_fragment(
        self, index: int, call_id: str | None, name: str | None, arguments: str
    ) -> None:
        """A fragment of call ``index``; the first one that names the tool also
        identifies the call (``on_tool_call_identified``, for a known tool)."""
        call = self._current()
        known_id, known_name = call.calls.get(index, (None, ""))
        call_id, name = call_id or known_id, name or known_name
        call.calls[index] = (call_id, name)
        if not name or call.handle.is_cancelled:
            return
        partial = PartialToolCall(
            index=index, id=call_id, name=name, partial_arguments=arguments
        )
        async with self._lock:
            if self._h.has_chain:
                await self._h.chain.on_llm_new_delta(
                    self.chain, (MessageDelta(tool_call=partial),)
                )
            if self._h.has_stream:
                context = PartialToolCallContext(handle=call.handle)
                await self._h.stream.on_partial_tool_call(partial, context)
        await self._identify(
            call,
            index,
            ToolCall(call_id=call_id or f"pending-{index}", name=name, index=index),
        )

    async def tool_complete(self, tool_call: ToolCall) -> None:
        """A streamed call is complete: ``on_complete_tool_call`` (identifying it
        first if no fragment did)."""
        call = self._current()
        if call.handle.is_cancelled:
            return
        await self._identify(call, tool_call.index, tool_call)
        if self._h.has_stream:
            complete = CompleteToolCall(index=tool_call.index, tool_call=tool_call)
            async with self._lock:
                await self._h.stream.on_complete_tool_call(complete)

    async def _identify(
        self, call: _ModelCall, index: int, tool_call: ToolCall
    ) -> None:
        if index in call.identified:
            return
        call.identified.add(index)
        tool = self._tools.get(tool_call.name)
        if tool is not None and self._h.has_chain:
            async with self._lock:
                await self._h.chain.on_tool_call_identified(self.chain, tool_call, tool)

    async def model_complete(self, response: ChatResponse) -> None:
        """The attempt answered ``response``: the stream's end, then the chain's
        ``on_llm_call_complete``, the message (``on_llm_new_message`` when nothing
        was streamed), ``on_message_processed`` and the usage."""
        call, self._call = self._call or _ModelCall(), None
        message = response.message
        async with self._lock:
            if call.streamed and not call.handle.is_cancelled:
                if self._h.has_chain:
                    end = MessageDelta(
                        status=message.status, usage=response.token_usage
                    )
                    await self._h.chain.on_llm_new_delta(self.chain, (end,))
                if self._h.has_stream:
                    await self._h.stream.on_complete_response(response)
        if not call.streamed:
            for tool_call in message.tool_calls:
                await self._identify(call, tool_call.index, tool_call)
        chain = self._h.chain
        async with self._lock:
            await chain.on_llm_call_complete(self.chain, response)
            if not call.streamed:
                await chain.on_llm_new_message(self.chain, message)
            self.chain = self.chain.add_message(message)
            await chain.on_message_processed(self.chain, message)
            if response.token_usage is not None:
                await chain.on_llm_token_usage(self.chain, response.token_usage)

    async def model_error(self, exc: BaseException) -> LangHooksError:
        """The attempt failed: the stream's ``on_error`` (when it streamed) and
        the chain's ``on_llm_error``.

        Returns:
            The ``LangHooksError`` the handlers were given.
        """
        call, self._call = self._call, None
        error = as_error(exc)
        async with self._lock:
            if call is not None and call.streamed and self._h.has_stream:
                await self._h.stream.on_error(error)
            await self._h.chain.on_llm_error(self.chain, error)
        return error

    async def model_retry(self, error: LangHooksError, delay: float) -> None:
        """``on_llm_retry``: the failed call will be made again."""
        async with self._lock:
            await self._h.chain.on_llm_retry(self.chain, error, delay)

    # --- tools -----------------------------------------------------------------------

    async def review(
        self, call: ToolCall, human_decision: str | None = None
    ) -> ReviewDecision | None:
        """The handlers' settled decision on ``call`` (None for a tool the bridge
        does not know, which the framework answers itself)."""
        tool = self._tools.get(call.name)
        if tool is None:
            return None
        context = ReviewContext(
            human_decision=human_decision,  # type: ignore[arg-type]  # checked by attrs
            custom_context=self.chain.custom_context,
        )
        async with self._lock:
            return await self._h.chain.on_tool_call_review(
                self.chain, call, tool, context
            )

    async def tool_failed(self, call: ToolCall, result: ToolResult) -> None:
        """``on_tool_execution_failed`` (denied, rejected, raised, failed)."""
        async with self._lock:
            await self._h.chain.on_tool_execution_failed(self.chain, call, result)

    async def tool_started(self, call: ToolCall) -> None:
        """``on_tool_execution_started``: the call will run."""
        tool = self._tools.get(call.name)
        if tool is not None:
            async with self._lock:
                await self._h.chain.on_tool_execution_started(self.chain, call, tool)

    async def tool_pre_execution(self, call: ToolCall) -> None:
        """``on_tool_pre_execution``, in the tool's own task and invocation
        (called with the invocation current, as the runtime calls it)."""
        tool = self._tools.get(call.name)
        if tool is not None:
            async with self._lock:
                await self._h.pre.on_tool_pre_execution(self.chain, call, tool)

    async def tool_completed(self, call: ToolCall, result: ToolResult) -> None:
        """``on_tool_execution_completed``."""
        async with self._lock:
            await self._h.chain.on_tool_execution_completed(self.chain, call, result)

    async def tool_raised(
        self, call: ToolCall, result: ToolResult, exception: BaseException
    ) -> None:
        """``on_tool_execution_failed`` then ``on_tool_execution_exception``."""
        async with self._lock:
            await self._h.chain.on_tool_execution_failed(self.chain, call, result)
            await self._h.chain.on_tool_execution_exception(self.chain, call, exception)

    async def tools_done(
        self,
        results: Sequence[ToolResult],
        interrupts: Sequence[tuple[ToolCall, Interrupt]] = (),
    ) -> None:
        """The batch is settled: ``on_tool_interrupted`` (when calls wait for a
        human), then the tool message (``on_tool_response_created``,
        ``on_message_processed``)."""
        waiting = tuple(
            interrupted_result(call, decision.message, decision.data)
            for call, decision in interrupts
        )
        async with self._lock:
            if waiting:
                await self._h.chain.on_tool_interrupted(self.chain, waiting)
            message = Message.tool((*results, *waiting))
            self.chain = self.chain.add_message(message)
            await self._h.chain.on_tool_response_created(self.chain, message)
            await self._h.chain.on_message_processed(self.chain, message)


def as_error(exc: BaseException) -> LangHooksError:
    """A framework's exception as the ``LangHooksError`` handlers are given."""
    return error_from_exception(exc)


def response_of(
    message: Message,
    *,
    response_id: str | None,
    model_name: str | None,
    usage: TokenUsage | None,
) -> ChatResponse:
    """A model attempt's ``ChatResponse``; the finish reason follows the
    contract (TOOL_EXECUTION whenever the message asks for calls)."""
    finish = FinishReason.TOOL_EXECUTION if message.tool_calls else FinishReason.STOP
    return ChatResponse(
        message=message,
        id=response_id,
        model_name=model_name,
        token_usage=usage,
        finish_reason=finish,
    )
