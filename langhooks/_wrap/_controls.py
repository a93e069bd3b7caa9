"""What a type checker sees of an ``in_background`` wrapper: the wrapped handler's
interfaces plus the controls that apply to it.

A wrapper of a handler with sync events has ``flush()`` and ``close()``; one of an
async-only handler has just ``aflush()`` and ``aclose()`` (its ``flush()`` would
always raise). The wrapper at run time is ``_background._Background``.
"""

from __future__ import annotations

from typing import Protocol

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._handler import HandlerBase
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)

__all__ = [
    "AsyncControls",
    "SyncControls",
    "_AsyncChainBackground",
    "_AsyncStreamingBackground",
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
