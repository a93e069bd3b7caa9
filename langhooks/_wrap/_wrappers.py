"""Wrappers: handlers that change how another handler is called.

Each wrapper is an instance of the wrapped handler's own class (so ``isinstance``
and composites keep working, and a wrapper typed as that class is one), reads and
writes every attribute but the events on the wrapped handler, and handles exactly
the events the wrapped handler handles: an event it does not override stays free.
"""

from __future__ import annotations

import contextvars
import threading
import types
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    TypeVar,
    overload,
)

from typing_extensions import override

if TYPE_CHECKING:
    import asyncio

from .._core._chain_callbacks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    ChainEventName,
)
from .._core._handler import (
    HandlerBase,
    bound_event,
    event_hint,
    event_is_async,
    interfaces_of,
    overridden_events,
)
from .._core._invocation import _CURRENT
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingEventName,
)

__all__ = [
    "HandlerWithoutInvocation",
    "Synchronized",
    "filtered",
    "isolate",
]

H = TypeVar("H", bound=HandlerBase)
_Streaming = TypeVar(
    "_Streaming",
    bound=StreamingChatResponseHandler | AsyncStreamingChatResponseHandler,
)
_Chain = TypeVar("_Chain", bound=ChainCallbackHandler | AsyncChainCallbackHandler)


_SPECIALIZED: Final[dict[tuple[type, tuple[type, ...]], type]] = {}
_SPECIALIZED_LOCK: Final = threading.Lock()


def _check_handler(handler: object, what: str) -> HandlerBase:
    if not isinstance(handler, HandlerBase):
        raise TypeError(
            f"{what} wraps a handler (an instance of StreamingChatResponseHandler, "
            f"ChainCallbackHandler or their Async twins), got {handler!r}"
        )
    return handler


class _Wrapper(HandlerBase):
    """A handler that forwards to ``_langhooks_inner`` in some way.

    Its class adds the wrapped handler's interfaces; its ``__class__`` is the
    wrapped handler's own class, so ``isinstance(wrapper, HandlerClass)`` holds,
    and every attribute but its events and its own API is read and written on the
    wrapped handler: ``isolate(p)`` is what its static type, ``p``'s class, says.
    ``dir()`` and ``help()`` show the wrapper's own API too (``type(wrapper)`` is
    its real class, named after the wrapper and documented as it).
    """

    _langhooks_inner: HandlerBase
    _langhooks_wrapped: frozenset[str]
    #: Names of the wrapper's class this wrapper does not offer (dir() omits them).
    _langhooks_hidden: frozenset[str] = frozenset()

    @classmethod
    def _specialize(cls, handler: HandlerBase) -> Any:
        """A new, uninitialised instance of ``cls`` that also implements every
        interface ``handler`` does."""
        interfaces = interfaces_of(handler)
        key = (cls, interfaces)
        specialized = _SPECIALIZED.get(key)
        if specialized is None:
            with _SPECIALIZED_LOCK:
                specialized = _SPECIALIZED.get(key)
                # False only when another thread built it while this one waited.
                if specialized is None:  # pragma: no branch
                    name = getattr(cls, "_langhooks_name", cls.__name__)
                    # The wrapper's own docstring, so help() documents it.
                    namespace = {"__doc__": cls.__doc__}
                    specialized = type(name, (cls, *interfaces), namespace)
                    specialized.__qualname__ = name
                    specialized.__module__ = cls.__module__
                    _SPECIALIZED[key] = specialized
        return object.__new__(specialized)

    def _langhooks_install(
        self,
        handler: HandlerBase,
        events: Iterable[str],
        make: Callable[[str, Callable[..., Any], bool], Callable[..., Any]],
    ) -> None:
        # Set on the wrapper itself (``__setattr__`` writes to the handler): an
        # event is then an instance attribute, found with no Python-level lookup.
        setattr_ = object.__setattr__
        setattr_(self, "_langhooks_inner", handler)
        wrapped = frozenset(events)
        setattr_(self, "_langhooks_wrapped", wrapped)
        for name in wrapped:
            setattr_(
                self,
                name,
                make(name, bound_event(handler, name), event_is_async(handler, name)),
            )

    @override
    def _langhooks_overridden_events(self) -> frozenset[str]:
        return self._langhooks_wrapped

    @property
    def wrapped(self) -> HandlerBase:
        """The handler this wrapper forwards to."""
        return self._langhooks_inner

    @override
    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._langhooks_inner!r})"

    @override
    def __dir__(self) -> list[str]:
        """The wrapper's own API (its real class's names, as ``type(wrapper)``
        has them), its installed events, and what it forwards to the handler."""
        names = {*dir(type(self)), *vars(self), *dir(self._langhooks_inner)}
        return sorted(names - self._langhooks_hidden)

    if not TYPE_CHECKING:  # pragma: no branch  # always true at runtime
        # Hidden from the checker, which would otherwise accept any attribute of
        # any wrapper.

        @property
        def __class__(self) -> type:
            # What ``isinstance`` consults when the wrapper's own type does not
            # match: the wrapped handler's class (at the bottom of any nesting).
            return self._langhooks_inner.__class__

        # Reached only when ordinary lookup fails, so events pay nothing for it.
        def __getattr__(self, name: str) -> Any:
            if name.startswith(("_langhooks", "__")):
                raise AttributeError(name)
            return getattr(self._langhooks_inner, name)

        def __setattr__(self, name: str, value: Any) -> None:
            if name.startswith("_langhooks"):
                object.__setattr__(self, name, value)
            else:
                setattr(self._langhooks_inner, name, value)

        def __delattr__(self, name: str) -> None:
            delattr(self._langhooks_inner, name)


# --- HandlerWithoutInvocation -----------------------------------------------------


def _run_without_invocation(method: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    _CURRENT.set(None)
    return method(*args)


# What ``next(steps, _DONE)`` returns once the handler has finished: the common
# step (a handler that does not suspend) then ends without StopIteration, whose
# raising and catching in Python would cost more than the handler call itself.
_DONE: Final = object()


async def _steps(
    method: Callable[..., Awaitable[Any]], args: tuple[Any, ...], outcome: list[Any]
) -> None:
    # Returns None, so ``next`` can end it quietly; the result goes in ``outcome``
    # (``next`` with a default would drop a StopIteration's value).
    outcome.append(await method(*args))


@types.coroutine
def _await_without_invocation(
    context: contextvars.Context,
    method: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
) -> Generator[Any, Any, Any]:
    """Await ``method(*args)`` with each of its steps run inside ``context``."""
    run = context.run
    if context.get(_CURRENT) is not None:
        run(_CURRENT.set, None)
    outcome: list[Any] = []
    steps = _steps(method, args, outcome).__await__()
    try:
        yielded = run(next, steps, _DONE)
        while yielded is not _DONE:
            try:
                sent = yield yielded
            except BaseException as thrown:
                yielded = run(steps.throw, thrown)
            else:
                yielded = run(steps.send, sent)
    except StopIteration:  # a resumed handler finished
        return outcome[0]
    return outcome[0]


_WITHOUT_INVOCATION_FACTORIES: Final[dict[tuple[str, ...], Callable[..., Any]]] = {}


def _event_params(handler: HandlerBase, name: str) -> tuple[str, ...] | None:
    """Event ``name``'s parameter names, unless ``handler``'s interfaces disagree."""
    params = {spec.params for spec in type(handler)._langhooks_events[name]}
    return params.pop() if len(params) == 1 else None


def _without_invocation_sync(
    params: tuple[str, ...], method: Callable[..., Any]
) -> Callable[..., Any]:
    # Generated once per parameter list, so a call neither packs nor unpacks
    # *args. The context copy is what keeps the handler's own context-variable
    # writes from leaking back; it stays per call. Clearing the invocation is
    # skipped when none is current (the copy then already has none), and done
    # with a C-level call into the copy rather than a Python function around the
    # handler (measured faster in bench/dispatch.py).
    factory = _WITHOUT_INVOCATION_FACTORIES.get(params)
    if factory is None:
        args = ", ".join(params)
        source = (
            "def factory(_lh_method, _lh_copy, _lh_current, _lh_set_current):\n"
            f"    def without_invocation({args}):\n"
            "        _lh_context = _lh_copy()\n"
            "        if _lh_current() is not None:\n"
            "            _lh_context.run(_lh_set_current, None)\n"
            f"        return _lh_context.run(_lh_method, {args})\n"
            "    return without_invocation\n"
        )
        namespace: dict[str, Any] = {}
        exec(compile(source, "<langhooks without-invocation>", "exec"), namespace)
        factory = namespace["factory"]
        _WITHOUT_INVOCATION_FACTORIES[params] = factory
    return factory(  # type: ignore[no-any-return]  # generated above
        method, contextvars.copy_context, _CURRENT.get, _CURRENT.set
    )


def _without_invocation(
    _name: str,
    method: Callable[..., Any],
    is_async: bool,
    params: tuple[str, ...] | None = None,
) -> Callable[..., Any]:
    copy = contextvars.copy_context
    if is_async:
        # An ``async def``, so a call returns a real coroutine as the wrapped
        # method's does: from Python 3.12 ``asyncio.run`` and ``create_task``
        # reject the generator-based one ``_await_without_invocation`` returns.

        async def call_async(*args: Any) -> Any:
            return await _await_without_invocation(copy(), method, args)

        return call_async

    if params is not None:
        return _without_invocation_sync(params, method)

    def call(*args: Any) -> Any:
        return copy().run(_run_without_invocation, method, args)

    return call


class HandlerWithoutInvocation(_Wrapper):
    """Runs every method of a handler with no current invocation.

    Inside the handler ``current_invocation()`` is None, so code it calls (another
    chain run, say) starts a fresh root invocation instead of joining the caller's.
    Each call runs in a copy of the caller's context: the handler sees the caller's
    other context variables, and nothing it sets leaks back, also when it raises.

    Works for all four handler interfaces. The result is an instance of the
    wrapped handler's class, and reads and writes every attribute but the events
    on the wrapped handler. Wrapping twice is a no-op. The constructor's static
    type is the handler's interface; use ``wrap`` to keep the handler's own class
    (for a handler of two interfaces, so that either composite takes it).
    """

    @overload
    def __new__(
        cls, handler: StreamingChatResponseHandler
    ) -> _StreamingWithoutInvocation: ...
    @overload
    def __new__(
        cls, handler: AsyncStreamingChatResponseHandler
    ) -> _AsyncStreamingWithoutInvocation: ...
    @overload
    def __new__(cls, handler: ChainCallbackHandler) -> _ChainWithoutInvocation: ...
    @overload
    def __new__(
        cls, handler: AsyncChainCallbackHandler
    ) -> _AsyncChainWithoutInvocation: ...
    def __new__(cls, handler: HandlerBase) -> HandlerWithoutInvocation:
        _check_handler(handler, "HandlerWithoutInvocation")
        if isinstance(handler, HandlerWithoutInvocation):
            return handler
        self: HandlerWithoutInvocation = cls._specialize(handler)
        self._langhooks_install(
            handler,
            overridden_events(handler),
            lambda name, method, is_async: _without_invocation(
                name, method, is_async, _event_params(handler, name)
            ),
        )
        return self

    @classmethod
    def wrap(cls, handler: H) -> H:
        """``HandlerWithoutInvocation(handler)``, typed as ``handler``'s own class
        (which the wrapper is an instance of)."""
        return cls(handler)  # type: ignore[call-overload, no-any-return]  # see __new__


if TYPE_CHECKING:
    # What the checker sees: each overload of __new__ returns one of these.
    class _StreamingWithoutInvocation(
        HandlerWithoutInvocation, StreamingChatResponseHandler
    ): ...

    class _AsyncStreamingWithoutInvocation(
        HandlerWithoutInvocation, AsyncStreamingChatResponseHandler
    ): ...

    class _ChainWithoutInvocation(HandlerWithoutInvocation, ChainCallbackHandler): ...

    class _AsyncChainWithoutInvocation(
        HandlerWithoutInvocation, AsyncChainCallbackHandler
    ): ...


# --- isolate ----------------------------------------------------------------------


def _isolated(
    name: str, method: Callable[..., Any], is_async: bool, owner: HandlerBase
) -> Callable[..., Any]:
    # An event that answers has its spec's answer for a failed handler (a review
    # handler that fails has made no safe decision: it denies, failing closed).
    fold = type(owner)._langhooks_events[name][0].fold
    fallback = None if fold is None else fold.failed()

    def report() -> None:
        import logging  # only on a failure: a plain import of langhooks skips it

        logging.getLogger("langhooks").exception(
            "langhooks: %r.%s raised; the exception is isolated and the run goes on%s",
            owner,
            name,
            "" if fallback is None else f" (its answer is {fallback!r})",
        )

    if is_async:

        async def call_async(*args: Any) -> Any:
            try:
                return await method(*args)
            except Exception:
                report()
                return fallback

        return call_async

    def call(*args: Any) -> Any:
        try:
            return method(*args)
        except Exception:
            report()
            return fallback

    return call


def isolate(handler: H) -> H:
    """Log a handler's exceptions instead of raising them.

    Each exception is logged with its traceback on the ``langhooks`` logger and the
    caller carries on. A raising ``on_tool_call_review`` counts as a ``Deny``: a
    failed policy must not let a call through.

    Args:
        handler: any handler.

    Returns:
        A wrapper that is an instance of ``handler``'s class, reads and writes
        every attribute but the events on ``handler``, and is typed as it.
    """
    checked = _check_handler(handler, "isolate")
    wrapper = _Isolated._specialize(checked)
    wrapper._langhooks_install(
        checked,
        overridden_events(checked),
        lambda name, method, is_async: _isolated(name, method, is_async, checked),
    )
    return wrapper  # type: ignore[no-any-return]


class _Isolated(_Wrapper):
    """The wrapper ``isolate`` returns."""


# --- Synchronized -----------------------------------------------------------------


class Synchronized(_Wrapper):
    """Calls a handler's methods one at a time.

    For a handler shared across threads whose state is not thread-safe. Sync
    methods take a re-entrant lock, so a handler may trigger its own events. Async
    methods take an ``asyncio.Lock`` per event loop: they run one at a time among
    the tasks of a loop, and the handler may be used from any number of loops (but
    two loops in two threads are not kept apart, and an async method must not await
    another event of the same wrapper: that lock is not re-entrant).

    Like ``HandlerWithoutInvocation``, the result is an instance of the handler's
    class; ``wrap`` keeps that class as the static type.
    """

    @overload
    def __new__(
        cls, handler: StreamingChatResponseHandler
    ) -> _StreamingSynchronized: ...
    @overload
    def __new__(
        cls, handler: AsyncStreamingChatResponseHandler
    ) -> _AsyncStreamingSynchronized: ...
    @overload
    def __new__(cls, handler: ChainCallbackHandler) -> _ChainSynchronized: ...
    @overload
    def __new__(cls, handler: AsyncChainCallbackHandler) -> _AsyncChainSynchronized: ...
    def __new__(cls, handler: HandlerBase) -> Synchronized:
        _check_handler(handler, "Synchronized")
        self: Synchronized = cls._specialize(handler)
        lock = threading.RLock()
        acquire, release = lock.acquire, lock.release
        # An asyncio.Lock belongs to the first event loop that waits on it, so a
        # handler used from several loops (one asyncio.run after another, or a
        # loop per thread) gets one lock per loop.
        async_locks: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Lock
        ] = weakref.WeakKeyDictionary()
        guard = threading.Lock()

        def loop_lock() -> asyncio.Lock:
            import asyncio  # only an async method gets here: asyncio is loaded

            loop = asyncio.get_running_loop()
            with guard:
                async_lock = async_locks.get(loop)
                if async_lock is None:
                    async_lock = async_locks[loop] = asyncio.Lock()
                return async_lock

        def make(_name: str, method: Callable[..., Any], is_async: bool) -> Any:
            if is_async:

                async def call_async(*args: Any) -> Any:
                    async with loop_lock():
                        return await method(*args)

                return call_async

            def call(*args: Any) -> Any:
                acquire()  # (cheaper than ``with``, which costs as much again)
                try:
                    return method(*args)
                finally:
                    release()

            return call

        self._langhooks_install(handler, overridden_events(handler), make)
        return self

    @classmethod
    def wrap(cls, handler: H) -> H:
        """``Synchronized(handler)``, typed as ``handler``'s own class (which the
        wrapper is an instance of)."""
        return cls(handler)  # type: ignore[call-overload, no-any-return]  # see __new__


if TYPE_CHECKING:

    class _StreamingSynchronized(Synchronized, StreamingChatResponseHandler): ...

    class _AsyncStreamingSynchronized(
        Synchronized, AsyncStreamingChatResponseHandler
    ): ...

    class _ChainSynchronized(Synchronized, ChainCallbackHandler): ...

    class _AsyncChainSynchronized(Synchronized, AsyncChainCallbackHandler): ...


# --- filtered ---------------------------------------------------------------------


@overload
def filtered(
    handler: _Streaming, *, events: Iterable[StreamingEventName]
) -> _Streaming: ...
@overload
def filtered(handler: _Chain, *, events: Iterable[ChainEventName]) -> _Chain: ...
def filtered(handler: HandlerBase, *, events: Iterable[str]) -> HandlerBase:
    """Deliver only the named events to ``handler``.

    The names are checked statically too: a misspelled name, another interface's
    event or a plain ``str`` is a type error (for a handler of two interfaces, the
    names of one of them per call).

    The result calls the handler's own bound methods: filtering adds no cost.

    Args:
        handler: any handler.
        events: event method names (``"on_partial_response"``, ...).

    Returns:
        A wrapper that is an instance of ``handler``'s class (see ``isolate``).

    Raises:
        TypeError: a name is not an event of the handler's interfaces.
    """
    checked = _check_handler(handler, "filtered")
    if isinstance(events, str):
        raise TypeError(f"events must be a collection of names, got the str {events!r}")
    wanted = frozenset(events)
    known = type(checked)._langhooks_events
    for name in sorted(wanted):
        if name not in known:
            raise TypeError(
                f"filtered: {name!r} is not an event of {type(checked).__name__}: "
                f"{event_hint(name, known)}"
            )
    wrapper = _Filtered._specialize(checked)
    wrapper._langhooks_install(
        checked,
        overridden_events(checked) & wanted,
        lambda _name, method, _is_async: method,
    )
    return wrapper  # type: ignore[no-any-return]


class _Filtered(_Wrapper):
    """The wrapper ``filtered`` returns."""
