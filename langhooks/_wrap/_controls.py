"""What a type checker sees of an ``in_background`` wrapper: the wrapped handler's
interfaces plus the controls that apply to it.

A wrapper of a handler with sync events has ``flush()`` and ``close()``; one of an
async-only handler has just ``aflush()`` and ``aclose()`` (its ``flush()`` would
always raise). The wrapper at run time is ``_background._Background``.
"""

from __future__ import annotations

from typing import Any, Protocol, overload

from typing_extensions import override

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._handler import HandlerBase
from .._core._messages import LangHooksError, PartialResponse
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    StreamingChatResponseHandler,
)

__all__ = [
    "AsyncControls",
    "ChainAndStreaming",
    "SyncControls",
    "_AsyncChainBackground",
    "_AsyncStreamingBackground",
    "_ChainAndStreamingBackground",
    "_ChainBackground",
    "_StreamingBackground",
]


class AsyncControls(Protocol):
    """The controls of every ``in_background`` wrapper."""

    @property
    def error_count(self) -> int:
        """How many events the handler raised on (each was logged)."""

    @property
    def dropped_count(self) -> int:
        """How many events ``overflow="drop_oldest"`` dropped."""

    @property
    def wrapped(self) -> HandlerBase:
        """The handler this wrapper forwards to."""

    async def aflush(self) -> None:
        """Wait until every event queued so far was delivered."""

    async def aclose(self) -> None:
        """Take no more events, deliver the queued ones, and end the workers."""


class SyncControls(AsyncControls, Protocol):
    """The controls of a wrapper whose handler has sync events."""

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event queued so far was delivered (sync events)."""

    def close(self, timeout: float | None = None) -> bool:
        """Take no more events, deliver the queued ones, and end the worker."""


class _StreamingBackground(SyncControls, StreamingChatResponseHandler):
    """``in_background`` of a streaming handler."""


class _AsyncStreamingBackground(AsyncControls, AsyncStreamingChatResponseHandler):
    """``in_background`` of an async streaming handler: no ``flush``/``close``."""


class _ChainBackground(SyncControls, ChainCallbackHandler):
    """``in_background`` of a chain handler."""


class _AsyncChainBackground(AsyncControls, AsyncChainCallbackHandler):
    """``in_background`` of an async chain handler: no ``flush``/``close``."""


class ChainAndStreaming(Protocol):
    """A handler of both sync interfaces (it has an event of each)."""

    def on_run_start(self, chain: Any, /) -> None:
        """A chain event."""

    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        """A stream event."""


class _ChainAndStreamingBackground(
    SyncControls, ChainCallbackHandler, StreamingChatResponseHandler
):
    """``in_background`` of a handler of both sync interfaces: it fits a chain's
    callbacks and a stream alike."""

    @overload
    def on_error(self, error: LangHooksError, /) -> None: ...
    @overload
    def on_error(self, chain: Any, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        """A stream's ``on_error(error)`` or a run's ``on_error(chain, error)``."""
