"""The stream bridge: a model's streaming callbacks become chain events, live.

A run gives the model a ``SyncBridge`` (``run()``) or an ``AsyncBridge``
(``arun()``); both turn partials into ``on_llm_new_delta`` and name resolutions into
``on_tool_call_identified`` through one ``BridgeState``. A partial is a call of the
handlers' ``on_llm_new_delta`` straight away, with no operation object built per
token (the rarer events go through ``deliver_sync``/``deliver_async``). The
model's answer is checked here too: a model that breaks the ``ChatModel``
protocol becomes a "protocol_error", a dead stream passed off as an answer a
"stream_error".
"""

from __future__ import annotations

from typing import Final, final

from typing_extensions import override

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._messages import (
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    ToolCall,
)
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)
from ._calls_async import deliver_async
from ._calls_sync import deliver_sync
from ._ops import Fire, HandlerFault, RunState, fire
from ._tool_results import short_description

__all__ = [
    "AsyncBridge",
    "BridgeState",
    "SyncBridge",
    "checked_response",
    "model_failure",
]

_H = ChainCallbackHandler
_DELTA: Final = "on_llm_new_delta"


@final
class BridgeState:
    """Turns one stream's callbacks into chain events (shared by both bridges)."""

    __slots__ = ("identified", "run", "streamed")

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.identified: set[int] = set()
        self.streamed = False

    def identify(
        self, index: int, call_id: str | None, name: str, call: ToolCall | None
    ) -> Fire | None:
        """The event identifying call ``index`` the first time its name is known
        (None after that, or when no tool has that name)."""
        if index in self.identified:
            return None
        self.identified.add(index)
        tool = self.run.tools.get(name)
        if tool is None:
            return None
        if call is None:
            call = ToolCall(
                call_id=call_id or f"pending-{index}", name=name, index=index
            )
        return fire(_H.on_tool_call_identified, self.run.chain, call, tool)

    def end(self, response: ChatResponse) -> Fire | None:
        """The last delta of a stream, with its status and usage (None when the
        model streamed nothing)."""
        if not self.streamed:
            return None
        delta = MessageDelta(status=response.message.status, usage=response.token_usage)
        return fire(_H.on_llm_new_delta, self.run.chain, (delta,))


@final
class SyncBridge(StreamingChatResponseHandler):
    """The streaming handler a sync run gives the model."""

    def __init__(self, state: BridgeState, handlers: ChainCallbackHandler) -> None:
        self.state = state
        self._handlers = handlers

    def _delta(self, delta: MessageDelta) -> None:
        """``on_llm_new_delta`` of one streamed increment, called directly.

        Raises:
            HandlerFault: a handler raised.
        """
        state = self.state
        state.streamed = True
        try:
            self._handlers.on_llm_new_delta(state.run.chain, (delta,))
        except Exception as exc:
            raise HandlerFault(_DELTA, exc) from exc

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self._delta(MessageDelta(text=partial.text))

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        self._delta(MessageDelta(thinking=partial.text))

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        self._delta(MessageDelta(tool_call=partial))
        deliver_sync(
            self._handlers,
            self.state.identify(partial.index, partial.id, partial.name, None),
        )

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        call = complete.tool_call
        deliver_sync(
            self._handlers,
            self.state.identify(complete.index, call.call_id, call.name, call),
        )

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        deliver_sync(self._handlers, self.state.end(response))


@final
class AsyncBridge(AsyncStreamingChatResponseHandler):
    """The streaming handler an async run gives the model."""

    def __init__(self, state: BridgeState, handlers: AsyncChainCallbackHandler) -> None:
        self.state = state
        self._handlers = handlers

    async def _delta(self, delta: MessageDelta) -> None:
        """``on_llm_new_delta`` of one streamed increment, awaited directly.

        Raises:
            HandlerFault: a handler raised.
        """
        state = self.state
        state.streamed = True
        try:
            await self._handlers.on_llm_new_delta(state.run.chain, (delta,))
        except Exception as exc:
            raise HandlerFault(_DELTA, exc) from exc

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        await self._delta(MessageDelta(text=partial.text))

    @override
    async def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        await self._delta(MessageDelta(thinking=partial.text))

    @override
    async def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        await self._delta(MessageDelta(tool_call=partial))
        await deliver_async(
            self._handlers,
            self.state.identify(partial.index, partial.id, partial.name, None),
        )

    @override
    async def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        call = complete.tool_call
        await deliver_async(
            self._handlers,
            self.state.identify(complete.index, call.call_id, call.name, call),
        )

    @override
    async def on_complete_response(self, response: ChatResponse) -> None:
        await deliver_async(self._handlers, self.state.end(response))


def model_failure(model: object, exc: Exception) -> LangHooksError:
    """A model broke the protocol: it raised something other than LangHooksError."""
    return LangHooksError(
        "protocol_error",
        f"{model!r} raised {short_description(exc)}; a ChatModel reports failures "
        f"as LangHooksError",
        original=exc,
    )


def checked_response(model: object, response: object) -> ChatResponse:
    """``response`` when it is a ChatResponse of a stream that did not fail.

    Raises:
        LangHooksError: "protocol_error" for anything but a ChatResponse;
            "stream_error" (retryable) for a response whose stream failed.
    """
    if not isinstance(response, ChatResponse):
        raise LangHooksError(
            "protocol_error",
            f"{model!r}.stream returned {type(response).__name__}, not a ChatResponse",
        )
    if response.message.status == "stream_error":
        # A model should raise when its stream dies; returning the remains must not
        # make a silent success either.
        raise LangHooksError(
            "stream_error",
            f"{model!r} returned a response whose stream failed (message status "
            f"'stream_error'); a ChatModel raises LangHooksError when that happens",
            retryable=True,  # as a stream cut mid-way, which providers retry
            metadata=response.metadata,
        )
    return response
