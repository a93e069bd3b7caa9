"""``in_background``: deliver a handler's events on its own worker.

A slow handler (a webhook, a push service, a database write per token) called
inline slows the stream or the run that calls it. Wrapped with ``in_background``,
each event is put on a bounded queue and returns at once; a worker (a thread for the
synchronous events, a task on the caller's event loop for the asynchronous ones)
delivers them to the handler in order, exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, overload

from typing_extensions import override

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._handler import interfaces_of, overridden_events
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)
from ._counters import Counters as _Counters
from ._workers import _Workers
from ._wrappers import _check_handler, _Wrapper

__all__ = ["in_background"]

logger: Final = logging.getLogger("langhooks")

Overflow: TypeAlias = Literal["block", "drop_oldest"]

if TYPE_CHECKING:
    from . import _controls  # what each overload of in_background returns

# Events whose caller needs what the handler does, now: a review's decision, and the
# context ``on_llm_call_start`` and ``on_tool_pre_execution`` set up for the model
# attempt or the tool that runs next (a current span, per-thread state). They run
# inline, after everything queued before them was delivered.
_INLINE: Final = frozenset(
    {"on_tool_call_review", "on_llm_call_start", "on_tool_pre_execution"}
)


# --- the wrapper ------------------------------------------------------------------


def _sync_event(
    workers: _Workers, name: str, method: Callable[..., Any]
) -> Callable[..., Any]:
    thread = workers.thread
    if name in _INLINE:

        def inline(*args: Any) -> Any:
            thread.flush(None)
            return method(*args)

        return inline
    put = thread.put

    def queued(*args: Any) -> None:
        put((name, method, args))

    return queued


def _async_event(
    workers: _Workers, name: str, method: Callable[..., Coroutine[Any, Any, Any]]
) -> Callable[..., Any]:
    for_loop = workers.for_loop
    if name in _INLINE:

        async def inline(*args: Any) -> Any:
            await workers.flush_loop()
            return await method(*args)

        return inline

    async def queued(*args: Any) -> None:
        worker = for_loop()
        item = (name, method, args)
        if not worker.offer(item):  # (no coroutine per event unless it waits)
            await worker.put(item)

    return queued


class _Background(_Wrapper):
    """The wrapper ``in_background`` returns: the wrapped handler's interfaces, plus
    ``flush``/``close`` (sync events) and ``aflush``/``aclose`` (all events)."""

    _langhooks_name = "in_background"

    _langhooks_workers: _Workers
    # Whether the handler implements a sync interface (so a thread may deliver).
    _langhooks_has_sync: bool

    @property
    def error_count(self) -> int:
        """How many events the handler raised on (each was logged)."""
        return self._langhooks_workers.counters.errors

    @property
    def dropped_count(self) -> int:
        """How many events ``overflow="drop_oldest"`` dropped."""
        return self._langhooks_workers.counters.dropped

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event queued so far was delivered (sync events).

        Args:
            timeout: seconds to wait at most; None waits as long as it takes.

        Returns:
            True when everything queued before the call was delivered (or dropped
            and counted); False when ``timeout`` passed first.

        Raises:
            TypeError: the handler's events are all ``async def`` (await
                ``aflush()``).
        """
        self._require_sync("flush", "aflush")
        return self._langhooks_workers.thread.flush(timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Take no more events, deliver the queued ones, and end the worker.

        Further events raise a ``LangHooksError`` (type handler_error).
        Idempotent.

        Args:
            timeout: seconds to wait at most; None waits as long as it takes.

        Returns:
            True when everything queued was delivered and the worker ended; False
            when ``timeout`` passed first (the worker goes on in the background).

        Raises:
            TypeError: the handler's events are all ``async def`` (await
                ``aclose()``).
        """
        self._require_sync("close", "aclose")
        self._langhooks_workers.stop()
        return self._langhooks_workers.thread.close(timeout)

    async def aflush(self) -> None:
        """Wait until every event queued so far was delivered.

        Covers this event loop's async events and, without blocking the loop, the
        sync events (delivered by a thread).
        """
        workers = self._langhooks_workers
        await workers.flush_loop()
        if self._langhooks_has_sync:
            await asyncio.to_thread(workers.thread.flush, None)

    async def aclose(self) -> None:
        """Take no more events, deliver the queued ones, and end the workers.

        Waits for this event loop's worker and the thread; workers on other loops
        end there once their queues are empty. Idempotent.
        """
        workers = self._langhooks_workers
        worker = workers.loops.get(asyncio.get_running_loop())
        workers.stop()
        if worker is not None:
            await worker.close()
        if self._langhooks_has_sync:
            await asyncio.to_thread(workers.thread.close, None)

    def _require_sync(self, name: str, twin: str) -> None:
        if not self._langhooks_has_sync:
            raise TypeError(
                f"{name}() is for handlers with sync events; this one's are all "
                f"'async def': await {twin}() instead"
            )

    @override
    def __repr__(self) -> str:
        return f"in_background({self._langhooks_inner!r})"


@overload
def in_background(
    handler: _controls.ChainAndStreaming,
    *,
    maxsize: int = ...,
    overflow: Overflow = ...,
) -> _controls._ChainAndStreamingBackground: ...
@overload
def in_background(
    handler: StreamingChatResponseHandler,
    *,
    maxsize: int = ...,
    overflow: Overflow = ...,
) -> _controls._StreamingBackground: ...
@overload
def in_background(
    handler: AsyncStreamingChatResponseHandler,
    *,
    maxsize: int = ...,
    overflow: Overflow = ...,
) -> _controls._AsyncStreamingBackground: ...
@overload
def in_background(
    handler: ChainCallbackHandler,
    *,
    maxsize: int = ...,
    overflow: Overflow = ...,
) -> _controls._ChainBackground: ...
@overload
def in_background(
    handler: AsyncChainCallbackHandler,
    *,
    maxsize: int = ...,
    overflow: Overflow = ...,
) -> _controls._AsyncChainBackground: ...
def in_background(
    handler: object,
    *,
    maxsize: int = 10_000,
    overflow: Overflow = "block",
) -> Any:
    """Deliver a handler's events on its own worker, so it never slows the caller.

    Each event the handler handles is queued and the call returns at once; a worker
    delivers the events to the handler in order, each exactly once: a thread for
    ``def`` events, a task on the calling event loop for ``async def`` ones. The
    handler runs there in an empty context (``current_invocation()`` is None, as
    under ``HandlerWithoutInvocation``; chain events carry ``chain.invocation``).

    ``on_tool_call_review`` (its decision is needed) and ``on_tool_pre_execution``
    (it belongs to the tool's own thread) run inline instead, after everything
    queued before them was delivered; their exceptions propagate as usual. An
    exception from a queued event is logged with its traceback on the
    ``langhooks`` logger and counted in ``error_count``; the worker goes on.

    Call ``flush()`` to wait for what was queued and ``close()`` when done (for an
    async handler, ``await aflush()`` / ``await aclose()``). A wrapper nobody
    closes stops its worker once it is garbage-collected and its queue is empty;
    at interpreter exit a thread worker gets up to 10 seconds to deliver the rest.

    Args:
        handler: any handler (streaming or chain, sync or async).
        maxsize: how many events may wait, per worker (at least 1).
        overflow: when the queue is full, "block" waits for room (back-pressure on
            the caller) and "drop_oldest" drops the oldest waiting event, counted in
            ``dropped_count`` and logged once.

    Returns:
        A handler of the same interfaces, with ``flush``, ``close``, ``aflush``,
        ``aclose``, ``error_count`` and ``dropped_count``.

    Raises:
        TypeError: ``handler`` is not a handler.
        ValueError: ``maxsize`` is not an int >= 1, or ``overflow`` is unknown.
    """
    checked = _check_handler(handler, "in_background")
    if type(maxsize) is not int or maxsize < 1:
        raise ValueError(f"maxsize must be an int >= 1, got {maxsize!r}")
    if overflow not in ("block", "drop_oldest"):
        raise ValueError(f"overflow must be 'block' or 'drop_oldest', got {overflow!r}")
    counters = _Counters(type(checked).__name__)
    workers = _Workers(maxsize, overflow == "drop_oldest", counters)
    wrapper: _Background = _Background._specialize(checked)
    wrapper._langhooks_workers = workers
    wrapper._langhooks_has_sync = any(
        not getattr(interface, "_langhooks_async", False)
        for interface in interfaces_of(checked)
    )
    if not wrapper._langhooks_has_sync:  # no flush()/close() to offer: dir() hides them
        wrapper._langhooks_hidden = frozenset({"flush", "close"})
    wrapper._langhooks_install(
        checked,
        overridden_events(checked),
        lambda name, method, is_async: (
            _async_event(workers, name, method)
            if is_async
            else _sync_event(workers, name, method)
        ),
    )
    weakref.finalize(wrapper, workers.stop)
    return wrapper
