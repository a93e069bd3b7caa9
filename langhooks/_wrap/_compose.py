"""Composites: one handler that calls every registered handler.

Per event, a composite holds one precomputed callable over the bound methods of the
handlers that override that event, in registration order (see
``_handler.sync_fanout``). ``add`` and ``remove`` rebuild all those callables under
a lock and swap them in together with one assignment of the instance dictionary, so
a dispatch running in another thread sees every event's old set or every event's
new one, never a mix (a handler being removed could otherwise still get one event
after missing another).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Literal, TypeVar, final

from typing_extensions import override

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._handler import (
    Fold,
    HandlerBase,
    async_fanout,
    bound_event,
    event_is_async,
    overridden_events,
    sync_fanout,
)
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)
from ._wrappers import _Wrapper, isolate

if TYPE_CHECKING:
    from .._core._chain_callbacks import ReviewContext, ReviewDecision
    from .._core._messages import ToolCall
    from .._core._tools import ChainView, Tool

__all__ = [
    "AsyncCompositeChainHandler",
    "AsyncCompositeStreamingHandler",
    "CompositeChainHandler",
    "CompositeStreamingHandler",
]

ErrorPolicy = Literal["raise", "log"]
_H = TypeVar("_H", bound=HandlerBase)


class _Composite(HandlerBase, Generic[_H]):
    """What the four composites share: registration and fan-out building."""

    # The interfaces a composite accepts, and whether it awaits.
    _accepts: ClassVar[tuple[type[HandlerBase], ...]]
    _is_async: ClassVar[bool]
    # Lets wrappers and parent composites bind late (see _handler.bound_event).
    _langhooks_dynamic: ClassVar[bool] = True

    def __init__(self, handlers: Iterable[_H] = (), *, errors: ErrorPolicy = "raise"):
        """Create a composite.

        Args:
            handlers: the handlers to call, in order.
            errors: "raise" (default) lets a handler's exception propagate to the
                caller; "log" wraps each handler with ``isolate``.

        Raises:
            TypeError: a handler has the wrong interface.
            ValueError: ``errors`` is unknown, a handler is given twice, or a
                handler would call this composite (a cycle).
        """
        if errors not in ("raise", "log"):
            raise ValueError(f"errors must be 'raise' or 'log', got {errors!r}")
        self._errors: Final = errors
        self._lock: Final = threading.Lock()
        self._registered: tuple[tuple[_H, HandlerBase], ...] = ()
        for handler in handlers:
            self._registered = self._with(handler)
        self._install(self._registered)

    @property
    def handlers(self) -> tuple[_H, ...]:
        """The registered handlers, in calling order."""
        return tuple(original for original, _ in self._registered)

    def add(self, handler: _H) -> None:
        """Register ``handler`` after the others.

        Raises:
            TypeError: the handler has the wrong interface.
            ValueError: the handler is already registered, or it would call this
                composite (it is this composite, or contains or wraps it).
        """
        with self._lock:
            self._install(self._with(handler))

    def remove(self, handler: _H) -> None:
        """Unregister ``handler``.

        Raises:
            ValueError: the handler is not registered.
        """
        with self._lock:
            kept = tuple(pair for pair in self._registered if pair[0] is not handler)
            if len(kept) == len(self._registered):
                raise ValueError(f"{handler!r} is not registered in {self!r}")
            self._install(kept)

    def _with(self, handler: _H) -> tuple[tuple[_H, HandlerBase], ...]:
        if not isinstance(handler, self._accepts):
            accepted = " or ".join(a.__name__ for a in self._accepts)
            raise TypeError(
                f"{type(self).__name__} takes {accepted} instances, got "
                f"{handler!r}{_composite_hint(handler)}"
            )
        if _reaches(handler, self):
            raise ValueError(
                f"{type(self).__name__} cannot contain itself, directly or through "
                f"a composite or wrapper it would call: {handler!r}"
            )
        if any(original is handler for original, _ in self._registered):
            raise ValueError(f"{handler!r} is already registered in {self!r}")
        effective = isolate(handler) if self._errors == "log" else handler
        return (*self._registered, (handler, effective))

    def _install(self, registered: tuple[tuple[_H, HandlerBase], ...]) -> None:
        """Make ``registered`` the handlers: every fan-out swapped in at once."""
        state = dict(vars(self))
        state["_registered"] = registered
        effective = [handler for _, handler in registered]
        overrides = [overridden_events(handler) for handler in effective]
        for name, specs in type(self)._langhooks_events.items():
            chosen = [h for h, o in zip(effective, overrides, strict=True) if name in o]
            methods = tuple(bound_event(h, name) for h in chosen)
            fold = specs[0].fold
            if fold is not None:
                # An event that answers: its spec's fold combines the answers.
                answering = tuple(
                    (_users(h), m, event_is_async(h, name))
                    for h, m in zip(chosen, methods, strict=True)
                )
                state[name] = (
                    _async_folding(fold, answering)
                    if self._is_async
                    else _sync_folding(fold, answering)
                )
                continue
            if self._is_async:
                fanout: Callable[..., Any] = async_fanout(
                    specs[0].params,
                    methods,
                    tuple(event_is_async(h, name) for h in chosen),
                )
            else:
                fanout = sync_fanout(specs[0].params, methods)
            state[name] = fanout
        # One assignment, atomic under the GIL (see the module docstring). Every
        # other attribute is only written under the lock, so none is lost here.
        self.__dict__ = state

    @override
    def _langhooks_overridden_events(self) -> frozenset[str]:
        # Handlers may be added later, so a composite takes every event.
        return frozenset(type(self)._langhooks_events)

    @override
    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.handlers)!r})"


def _reaches(handler: HandlerBase, target: HandlerBase) -> bool:
    """Whether calling ``handler`` may call ``target`` (a cycle if it is a parent)."""
    if handler is target:
        return True
    if isinstance(handler, _Wrapper):
        return _reaches(handler.wrapped, target)
    if isinstance(handler, _Composite):
        return any(_reaches(inner, target) for inner, _ in handler._registered)
    return False


@final
class CompositeStreamingHandler(
    _Composite[StreamingChatResponseHandler], StreamingChatResponseHandler
):
    """A streaming handler that calls every registered streaming handler, in order.

    A handler is only called for the events it overrides. Safe to ``add`` and
    ``remove`` while another thread dispatches.
    """

    _accepts = (StreamingChatResponseHandler,)
    _is_async = False


@final
class AsyncCompositeStreamingHandler(
    _Composite[StreamingChatResponseHandler | AsyncStreamingChatResponseHandler],
    AsyncStreamingChatResponseHandler,
):
    """The async composite: awaits async handlers in order, calls sync ones inline."""

    _accepts = (AsyncStreamingChatResponseHandler, StreamingChatResponseHandler)
    _is_async = True


def _composite_hint(handler: object) -> str:
    """Which composite takes ``handler``, for an error message ("" if none)."""
    for interface, composite, what in (
        (
            StreamingChatResponseHandler,
            "CompositeStreamingHandler",
            "a StreamingChatResponseHandler",
        ),
        (
            AsyncStreamingChatResponseHandler,
            "AsyncCompositeStreamingHandler",
            "an async handler",
        ),
        (ChainCallbackHandler, "CompositeChainHandler", "a ChainCallbackHandler"),
        (AsyncChainCallbackHandler, "AsyncCompositeChainHandler", "an async handler"),
    ):
        if isinstance(handler, interface):
            return f" ({what} needs {composite})"
    return ""


def _users(handler: object) -> object:
    """The user's handler inside any wrappers, to name it in an error message."""
    while isinstance(handler, _Wrapper):
        handler = handler.wrapped
    return handler


_Answering = tuple[tuple[object, Callable[..., Any], bool], ...]


def _sync_folding(fold: Fold, answering: _Answering) -> Callable[..., object]:
    """One call of an answering event over ``answering``, combined by ``fold``."""

    def folding(*args: Any) -> object:
        first = args
        for owner, method, _ in answering:
            args, settled = fold.step(owner, method(*args), args)
            if settled is not None:
                return settled
        return fold.end(first, args)

    return folding


def _async_folding(fold: Fold, answering: _Answering) -> Callable[..., Any]:
    """The async ``_sync_folding``: awaits the async handlers' answers."""

    async def folding(*args: Any) -> object:
        first = args
        for owner, method, is_async in answering:
            answer = method(*args)
            if is_async:
                answer = await answer
            args, settled = fold.step(owner, answer, args)
            if settled is not None:
                return settled
        return fold.end(first, args)

    return folding


@final
class CompositeChainHandler(_Composite[ChainCallbackHandler], ChainCallbackHandler):
    """A chain handler that calls every registered chain handler, in order.

    The answers to an event that answers are combined as its spec's ``Fold``
    says. For review: each reviewer sees the arguments as rewritten by those before
    it; the first ``Deny`` or ``Interrupt`` settles the call (later reviewers are
    not asked); otherwise the result is ``UpdateArguments`` with the final
    arguments if any reviewer rewrote them, else ``Allow()``. An exception from a
    reviewer propagates.
    """

    _accepts = (ChainCallbackHandler,)
    _is_async = False

    if TYPE_CHECKING:  # each instance holds its fold (see _install)

        @override
        def on_tool_call_review(
            self, chain: ChainView, call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision:
            """The settled decision of the reviewers (never None)."""
            ...


@final
class AsyncCompositeChainHandler(
    _Composite[ChainCallbackHandler | AsyncChainCallbackHandler],
    AsyncChainCallbackHandler,
):
    """The async composite chain handler; review folds as in the sync one."""

    _accepts = (AsyncChainCallbackHandler, ChainCallbackHandler)
    _is_async = True

    if TYPE_CHECKING:  # each instance holds its fold (see _install)

        @override
        async def on_tool_call_review(
            self, chain: ChainView, call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision:
            """The settled decision of the reviewers (never None)."""
            ...
