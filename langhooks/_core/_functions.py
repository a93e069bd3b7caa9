"""Handlers built from plain functions (the Elixir LangChain / Nous style).

``chain_callbacks(on_llm_new_delta=fn, ...)`` returns a ``ChainCallbackHandler`` whose
events are the given functions; ``streaming_callbacks(...)`` does the same for
``StreamingChatResponseHandler``, and the ``a``-prefixed variants build the async twins.

Each function is stored on the instance under its event's name, so calling the event
calls the user's function directly (no wrapper, no lookup), and the handler reports
exactly the given names as the events it handles: in a composite or wrapper an event
that was not given is never called at all.

The keyword names and the functions' signatures are typed with a ``TypedDict`` per
interface and ``Unpack``, so mypy rejects an unknown keyword and a function of the
wrong shape; the same mistakes fail at runtime with a ``TypeError``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, final

from typing_extensions import Unpack, override

from ._chain_callbacks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
)
from ._function_keywords import (
    AsyncChainCallbackFunctions,
    AsyncStreamingCallbackFunctions,
    ChainCallbackFunctions,
    StreamingCallbackFunctions,
)
from ._handler import HandlerBase, arity_problem, event_hint
from ._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)

__all__ = [
    "AsyncChainCallbackFunctions",
    "AsyncStreamingCallbackFunctions",
    "ChainCallbackFunctions",
    "StreamingCallbackFunctions",
    "achain_callbacks",
    "astreaming_callbacks",
    "chain_callbacks",
    "streaming_callbacks",
]


# --- the typed keyword sets: generated (scripts/generate.py) into _function_keywords


# --- the handlers -------------------------------------------------------------------


class _FunctionHandler(HandlerBase):
    """A handler whose events are per-instance functions.

    The class overrides no event; ``__init__`` stores each given function as an
    instance attribute under its event name (an instance attribute is not bound, so
    it is called exactly with the event's arguments) and the handler reports those
    names, and only those, as handled.
    """

    _langhooks_factory: str

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        for name, function in functions.items():
            setattr(self, name, function)
        self._langhooks_given: Final = frozenset(functions)

    @override
    def _langhooks_overridden_events(self) -> frozenset[str]:
        return self._langhooks_given

    @override
    def __repr__(self) -> str:
        given = ", ".join(
            f"{name}={vars(self)[name]!r}" for name in sorted(self._langhooks_given)
        )
        return f"{self._langhooks_factory}({given})"


@final
class _ChainFunctions(_FunctionHandler, ChainCallbackHandler):
    _langhooks_factory = "chain_callbacks"


@final
class _AsyncChainFunctions(_FunctionHandler, AsyncChainCallbackHandler):
    _langhooks_factory = "achain_callbacks"


@final
class _StreamingFunctions(_FunctionHandler, StreamingChatResponseHandler):
    _langhooks_factory = "streaming_callbacks"


@final
class _AsyncStreamingFunctions(_FunctionHandler, AsyncStreamingChatResponseHandler):
    _langhooks_factory = "astreaming_callbacks"


def _awaiting(function: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """An ``async def`` that calls a plain function and awaits what it returns, if
    that is awaitable (a lambda returning a coroutine, say)."""

    async def call(*args: Any) -> Any:
        result = function(*args)
        if inspect.isawaitable(result):
            result = await result
        return result

    call.__name__ = getattr(function, "__name__", "call")
    call.__qualname__ = getattr(function, "__qualname__", call.__name__)
    call.__wrapped__ = function  # type: ignore[attr-defined]  # for inspect.unwrap
    return call


def _check_arity(
    factory: str, name: str, function: Callable[..., object], arity: int
) -> None:
    problem = arity_problem(function, arity)
    if problem is not None:
        raise TypeError(
            f"{factory}(): {name} is called with {arity} argument(s) "
            f"(the method's signature minus self), but {function!r} cannot take "
            f"them: {problem}"
        )


_FACTORY_KINDS: Final[dict[str, tuple[type[HandlerBase], type[_FunctionHandler]]]] = {
    "chain_callbacks": (ChainCallbackHandler, _ChainFunctions),
    "achain_callbacks": (AsyncChainCallbackHandler, _AsyncChainFunctions),
    "streaming_callbacks": (StreamingChatResponseHandler, _StreamingFunctions),
    "astreaming_callbacks": (
        AsyncStreamingChatResponseHandler,
        _AsyncStreamingFunctions,
    ),
}


def _build(factory: str, functions: Mapping[str, object]) -> Any:
    interface, handler_class = _FACTORY_KINDS[factory]
    events = interface._langhooks_own_events
    is_async = interface is AsyncChainCallbackHandler or (
        interface is AsyncStreamingChatResponseHandler
    )
    installed: dict[str, Callable[..., Any]] = {}
    for name, function in functions.items():
        spec = events.get(name)
        if spec is None:
            raise TypeError(
                f"{factory}() got an unexpected keyword argument {name!r}: it is not "
                f"an event of {interface.__name__} ({event_hint(name, events)})"
            )
        if not callable(function):
            raise TypeError(
                f"{factory}(): {name} must be a function taking "
                f"({', '.join(spec.params)}), got {function!r}"
            )
        _check_arity(factory, name, function, len(spec.params))
        coroutine = inspect.iscoroutinefunction(function)
        if is_async:
            installed[name] = function if coroutine else _awaiting(function)
        elif coroutine:
            raise TypeError(
                f"{factory}(): {name} is an 'async def' function, but "
                f"{interface.__name__} is synchronous: use a{factory}(), or "
                f"pass a plain function"
            )
        else:
            installed[name] = function
    return handler_class(installed)


def chain_callbacks(
    **functions: Unpack[ChainCallbackFunctions],
) -> ChainCallbackHandler:
    """A ``ChainCallbackHandler`` whose events are the given plain functions.

    Each keyword is an event method's name, and its function takes that method's
    arguments minus ``self``::

        handler = chain_callbacks(
            on_llm_new_delta=lambda chain, deltas: print(*(d.text for d in deltas)),
            on_tool_call_review=lambda chain, call, tool, review: Deny("read only"),
        )

    Events not given stay no-ops and are never called by composites and wrappers
    (``overridden_events(handler)`` is exactly the given names). The value an
    ``on_tool_call_review`` function returns is the handler's decision (folded
    with the others' by a composite).

    Returns:
        A new handler; the functions are called directly, in the calling thread.

    Raises:
        TypeError: a keyword is not an event (the message names the closest one),
            a value is not callable or cannot take the event's arguments, or it is
            an ``async def`` function (use ``achain_callbacks``).
    """
    handler: ChainCallbackHandler = _build("chain_callbacks", functions)
    return handler


def achain_callbacks(
    **functions: Unpack[AsyncChainCallbackFunctions],
) -> AsyncChainCallbackHandler:
    """An ``AsyncChainCallbackHandler`` whose events are the given functions.

    Like ``chain_callbacks``, for async runs. A function may be ``async def`` (it is
    installed as is, so awaiting the event awaits it with no wrapper) or a plain
    function: that one is called inline, as an async composite calls a sync handler,
    and an awaitable it returns is awaited. Plain functions are allowed because a
    quick side effect (a print, an append) should not need an ``async def``.

    Returns:
        A new handler.

    Raises:
        TypeError: a keyword is not an event (the message names the closest one),
            or a value is not callable or cannot take the event's arguments.
    """
    handler: AsyncChainCallbackHandler = _build("achain_callbacks", functions)
    return handler


def streaming_callbacks(
    **functions: Unpack[StreamingCallbackFunctions],
) -> StreamingChatResponseHandler:
    """A ``StreamingChatResponseHandler`` whose events are the given functions.

    Each keyword is an event method's name, and its function takes that method's
    arguments minus ``self``::

        handler = streaming_callbacks(
            on_partial_response=lambda partial, context: print(partial.text, end=""),
        )

    Events not given stay no-ops and are never called by composites and wrappers.

    Returns:
        A new handler.

    Raises:
        TypeError: a keyword is not an event (the message names the closest one),
            a value is not callable or cannot take the event's arguments, or it is
            an ``async def`` function (use ``astreaming_callbacks``).
    """
    handler: StreamingChatResponseHandler = _build("streaming_callbacks", functions)
    return handler


def astreaming_callbacks(
    **functions: Unpack[AsyncStreamingCallbackFunctions],
) -> AsyncStreamingChatResponseHandler:
    """An ``AsyncStreamingChatResponseHandler`` whose events are the functions.

    Like ``streaming_callbacks``, for async streams; functions may be ``async def``
    or plain, as in ``achain_callbacks``.

    Returns:
        A new handler.

    Raises:
        TypeError: a keyword is not an event (the message names the closest one),
            or a value is not callable or cannot take the event's arguments.
    """
    handler: AsyncStreamingChatResponseHandler = _build(
        "astreaming_callbacks", functions
    )
    return handler
