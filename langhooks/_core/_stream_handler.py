"""Streaming handlers (after langchain4j's ``StreamingChatResponseHandler``).

``StreamingChatResponseHandler`` here is the spec of the stream events: the async
interface, the event names and the function handlers' keywords are generated from
it (``python scripts/generate.py``; import them from ``_streaming``).

The contract every stream keeps, for every provider:

- partials arrive in stream order; a tool call's fragments share an ``index``, and
  ``on_complete_tool_call`` for that index follows its last fragment;
- exactly one terminal call, ``on_complete_response`` or ``on_error``, and nothing
  after it;
- after ``StreamingHandle.cancel()``, no callback at all (no terminal call either);
  the driving call returns the partial response with status "cancelled";
- a provider event no typed method covers goes to ``on_unmapped_raw_event``, and an
  event that was mapped never does;
- the call that drives a stream also returns the response or raises the error, so an
  error is never lost when no handler overrides ``on_error``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import ClassVar, Final, final

import attrs

from ._handler import HandlerBase
from ._messages import (
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
)
from ._validators import instance_of
from ._values import _value_eq, _value_hash, _value_repr

__all__ = [
    "PartialResponseContext",
    "PartialThinkingContext",
    "PartialToolCallContext",
    "StreamingChatResponseHandler",
    "StreamingHandle",
]


# Threads that deliver events on a stream's behalf, after the stream handed them
# over (``in_background``'s workers). The stream's callback in flight may be waiting
# for such a thread (for room in its queue), so ``cancel()`` there must not wait for
# that callback.
_proxies: Final = threading.local()


def mark_delivery_proxy() -> None:
    """Mark this thread as delivering events a stream handed over (see ``cancel``)."""
    _proxies.active = True


@final
class StreamingHandle:
    """Cancels one stream, from a callback or from any thread.

    Create one and pass it to a model's ``stream`` to hold it before the first token
    arrives; otherwise every partial's context carries the stream's handle.
    """

    __slots__ = ("_callbacks", "_cancelled", "_delivery", "_lock")

    def __init__(self) -> None:
        self._lock: Final = threading.Lock()
        # Held by the thread that delivers the stream's events while it checks
        # this handle and runs a callback: cancel() takes it too, so it never
        # returns while a callback is running or about to begin. Re-entrant: a
        # callback may cancel its own stream.
        self._delivery: Final = threading.RLock()
        self._cancelled = False
        self._callbacks: list[Callable[[], object]] = []

    @property
    def is_cancelled(self) -> bool:
        """Whether ``cancel()`` has been called."""
        return self._cancelled

    def cancel(self) -> None:
        """Stop the stream: no further callback, the connection is closed.

        Once ``cancel()`` returns, no handler callback of the stream begins, the
        terminal ones included. Called from another thread while a callback is
        running, it first waits for that callback to return (so a callback must
        not wait for a thread that may cancel its stream); called from inside a
        callback, it returns at once and nothing is called after that callback.
        Called from a thread that delivers events the stream handed over (an
        ``in_background`` worker), it also returns at once: the callback in flight
        may be waiting for that thread, and nothing begins after it. A stream whose
        ``on_complete_response`` has begun stays complete.

        Idempotent and thread-safe; the callbacks registered with
        ``add_cancel_callback`` run once, on the first call, in this thread. A
        callback that raises is logged with its traceback on the ``langhooks``
        logger and the others still run: one failing callback must not leave a
        connection open.
        """
        if getattr(_proxies, "active", False):
            with self._lock:
                callbacks = self._mark_cancelled()
        else:
            with self._delivery, self._lock:
                callbacks = self._mark_cancelled()
        for callback in callbacks:
            _run_cancel_callback(callback)

    def _mark_cancelled(self) -> list[Callable[[], object]]:
        """Set the flag (under ``_lock``); the callbacks to run, once."""
        if self._cancelled:
            return []
        self._cancelled = True
        callbacks, self._callbacks = self._callbacks, []
        return callbacks

    def add_cancel_callback(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` when the handle is cancelled (now, if it already is).

        Stream implementations use it to close a connection that is blocked reading.

        Raises:
            TypeError: ``callback`` is not callable.
        """
        if not callable(callback):
            raise TypeError(f"add_cancel_callback takes a callable, got {callback!r}")
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        _run_cancel_callback(callback)


def _run_cancel_callback(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:
        import logging  # only on a failure: a plain import of langhooks skips it

        logging.getLogger("langhooks").exception(
            "langhooks: cancel callback %r raised", callback
        )


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PartialResponseContext:
    """Passed with each ``PartialResponse``: the stream's cancel handle."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    handle: StreamingHandle = attrs.field(validator=instance_of(StreamingHandle))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PartialThinkingContext:
    """Passed with each ``PartialThinking``: the stream's cancel handle."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    handle: StreamingHandle = attrs.field(validator=instance_of(StreamingHandle))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PartialToolCallContext:
    """Passed with each ``PartialToolCall``: the stream's cancel handle."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    handle: StreamingHandle = attrs.field(validator=instance_of(StreamingHandle))


class StreamingChatResponseHandler(HandlerBase, _langhooks_interface=True):
    """Receives one model stream's events. Override the methods you need.

    Every method is a no-op; a handler is never called for a method it does not
    override when it sits in a composite or wrapper. Defining an ``on_*`` method this
    interface lacks is a ``TypeError`` at class creation.

    Events are delivered with positional arguments, and the parameters are
    positional-only: an override may name them as it likes, and a call the type
    checker accepts also works through every composite and wrapper.
    """

    _langhooks_async: ClassVar[bool] = False

    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        """A piece of response text arrived (never empty), in stream order."""

    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext, /
    ) -> None:
        """A piece of thinking text arrived (never empty), in stream order."""

    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext, /
    ) -> None:
        """A fragment of a tool call's arguments arrived; fragments share ``index``."""

    def on_complete_tool_call(self, complete: CompleteToolCall, /) -> None:
        """A tool call is complete and parsed; follows its last fragment.

        A call cut off by a length limit never completes.
        """

    def on_unmapped_raw_event(self, raw_event: object, /) -> None:
        """A provider event that no other method covers (a ping, a new event type)."""

    def on_complete_response(self, response: ChatResponse, /) -> None:
        """The stream ended normally. Terminal: nothing follows it."""

    def on_error(self, error: LangHooksError, /) -> None:
        """The stream failed. Terminal.

        Every failure a stream reports is a ``LangHooksError`` (a transport or SDK
        exception is converted, keeping it as ``error.original``), as for a chain
        handler's ``on_error``. The error is also raised to the caller that drives
        the stream. An exception raised by a handler method is not reported here:
        it propagates to the caller unchanged and the stream stops.
        """
