"""The model protocol every chat model implements, and its request type.

In the core (not in ``langhooks.models``) so the runtime, the streams and
``langhooks.testing`` depend on the protocol without loading the provider models.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from ._messages import ChatResponse, Message, message_tuple
from ._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._tools import Tool, tool_tuple

__all__ = ["ChatModel", "ChatRequest"]


@attrs.frozen
class ChatRequest:
    """What to send to a model: the conversation and the tools it may call."""

    messages: tuple[Message, ...] = attrs.field(converter=message_tuple)
    tools: tuple[Tool, ...] = attrs.field(default=(), converter=tool_tuple)


@runtime_checkable
class ChatModel(Protocol):
    """A chat model that streams into a handler.

    ``stream`` drives the handler through the streaming contract (partials in
    order, exactly one terminal call, nothing after cancel) and returns the
    response, or calls ``handler.on_error`` once and raises the ``LangHooksError``.
    Pass ``handle`` to hold the stream's cancel handle before the first token; by
    default the model creates one and each partial's context carries it.
    """

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Stream one response into ``handler`` and return it."""
        ...

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin of ``stream``; a sync handler is called inline."""
        ...
