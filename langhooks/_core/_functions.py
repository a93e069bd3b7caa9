"""Handlers built from plain functions (the Elixir LangChain / Nous style).

``chain_callbacks(on_llm_new_delta=fn, ...)`` returns a ``ChainCallbackHandler`` whose
events are the given functions; ``streaming_callbacks(...)`` does the same for
``StreamingChatResponseHandler``, and the ``async_`` variants build the async twins.

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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, TypedDict, final

from typing_extensions import TypeVar, Unpack, override

from ._chain_callbacks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    ReviewContext,
    ReviewDecision,
)
from ._handler import HandlerBase, arity_problem, event_hint
from ._messages import (
    ChainView,
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    Tool,
    ToolCall,
    ToolResult,
)
from ._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)

if TYPE_CHECKING:
    from ._model import ChatModel, ChatRequest
    from ._result import RunResult

__all__ = [
    "AsyncChainCallbackFunctions",
    "AsyncStreamingCallbackFunctions",
    "ChainCallbackFunctions",
    "StreamingCallbackFunctions",
    "async_chain_callbacks",
    "async_streaming_callbacks",
    "chain_callbacks",
    "streaming_callbacks",
]


# --- the typed keyword sets ---------------------------------------------------------
# One key per event of the interface, valued with the method's signature minus self.
# Sync functions return None: mypy then also rejects an ``async def`` (which returns
# a coroutine) where a plain function is expected. The chain parameter is generic
# as the interfaces are (see ChainT_contra): unparameterized, a function may take
# any chain, an ``LLMChain`` too.

ChainT = TypeVar("ChainT", bound=ChainView, default=Any)


class ChainCallbackFunctions(TypedDict, Generic[ChainT], total=False):
    """The keywords ``chain_callbacks`` accepts: ``ChainCallbackHandler``'s events."""

    on_run_start: Callable[[ChainT], None]
    on_llm_call_start: Callable[[ChainT, ChatModel, ChatRequest], None]
    on_llm_call_complete: Callable[[ChainT, ChatResponse], None]
    on_llm_new_delta: Callable[[ChainT, Sequence[MessageDelta]], None]
    on_llm_new_message: Callable[[ChainT, Message], None]
    on_llm_ratelimit_info: Callable[[ChainT, Mapping[str, object]], None]
    on_llm_token_usage: Callable[[ChainT, TokenUsage], None]
    on_llm_response_headers: Callable[[ChainT, Mapping[str, str]], None]
    on_message_processed: Callable[[ChainT, Message], None]
    on_message_processing_error: Callable[[ChainT, Message], None]
    on_error_message_created: Callable[[ChainT, Message], None]
    on_tool_call_identified: Callable[[ChainT, ToolCall, Tool], None]
    on_tool_call_review: Callable[
        [ChainT, ToolCall, Tool, ReviewContext], ReviewDecision | None
    ]
    on_tool_execution_started: Callable[[ChainT, ToolCall, Tool], None]
    on_tool_pre_execution: Callable[[ChainT, ToolCall, Tool], None]
    on_tool_execution_completed: Callable[[ChainT, ToolCall, ToolResult], None]
    on_tool_execution_failed: Callable[[ChainT, ToolCall, ToolResult], None]
    on_tool_execution_exception: Callable[[ChainT, ToolCall, BaseException], None]
    on_tool_interrupted: Callable[[ChainT, Sequence[ToolResult]], None]
    on_tool_response_created: Callable[[ChainT, Message], None]
    on_llm_error: Callable[[ChainT, LangHooksError], None]
    on_llm_retry: Callable[[ChainT, LangHooksError, float], None]
    on_retries_exceeded: Callable[[ChainT], None]
    on_error: Callable[[ChainT, LangHooksError], None]
    on_run_complete: Callable[[ChainT, RunResult[ChainT]], None]


# An async variant's function may be ``async def`` or plain (called inline).
_Async = Awaitable[None] | None


class AsyncChainCallbackFunctions(TypedDict, Generic[ChainT], total=False):
    """The keywords ``async_chain_callbacks`` accepts (async or plain functions)."""

    on_run_start: Callable[[ChainT], _Async]
    on_llm_call_start: Callable[[ChainT, ChatModel, ChatRequest], _Async]
    on_llm_call_complete: Callable[[ChainT, ChatResponse], _Async]
    on_llm_new_delta: Callable[[ChainT, Sequence[MessageDelta]], _Async]
    on_llm_new_message: Callable[[ChainT, Message], _Async]
    on_llm_ratelimit_info: Callable[[ChainT, Mapping[str, object]], _Async]
    on_llm_token_usage: Callable[[ChainT, TokenUsage], _Async]
    on_llm_response_headers: Callable[[ChainT, Mapping[str, str]], _Async]
    on_message_processed: Callable[[ChainT, Message], _Async]
    on_message_processing_error: Callable[[ChainT, Message], _Async]
    on_error_message_created: Callable[[ChainT, Message], _Async]
    on_tool_call_identified: Callable[[ChainT, ToolCall, Tool], _Async]
    on_tool_call_review: Callable[
        [ChainT, ToolCall, Tool, ReviewContext],
        Awaitable[ReviewDecision | None] | ReviewDecision | None,
    ]
    on_tool_execution_started: Callable[[ChainT, ToolCall, Tool], _Async]
    on_tool_pre_execution: Callable[[ChainT, ToolCall, Tool], _Async]
    on_tool_execution_completed: Callable[[ChainT, ToolCall, ToolResult], _Async]
    on_tool_execution_failed: Callable[[ChainT, ToolCall, ToolResult], _Async]
    on_tool_execution_exception: Callable[[ChainT, ToolCall, BaseException], _Async]
    on_tool_interrupted: Callable[[ChainT, Sequence[ToolResult]], _Async]
    on_tool_response_created: Callable[[ChainT, Message], _Async]
    on_llm_error: Callable[[ChainT, LangHooksError], _Async]
    on_llm_retry: Callable[[ChainT, LangHooksError, float], _Async]
    on_retries_exceeded: Callable[[ChainT], _Async]
    on_error: Callable[[ChainT, LangHooksError], _Async]
    on_run_complete: Callable[[ChainT, RunResult[ChainT]], _Async]


class StreamingCallbackFunctions(TypedDict, total=False):
    """The keywords ``streaming_callbacks`` accepts."""

    on_partial_response: Callable[[PartialResponse, PartialResponseContext], None]
    on_partial_thinking: Callable[[PartialThinking, PartialThinkingContext], None]
    on_partial_tool_call: Callable[[PartialToolCall, PartialToolCallContext], None]
    on_complete_tool_call: Callable[[CompleteToolCall], None]
    on_unmapped_raw_event: Callable[[object], None]
    on_complete_response: Callable[[ChatResponse], None]
    on_error: Callable[[LangHooksError], None]


class AsyncStreamingCallbackFunctions(TypedDict, total=False):
    """The keywords ``async_streaming_callbacks`` accepts (async or plain)."""

    on_partial_response: Callable[[PartialResponse, PartialResponseContext], _Async]
    on_partial_thinking: Callable[[PartialThinking, PartialThinkingContext], _Async]
    on_partial_tool_call: Callable[[PartialToolCall, PartialToolCallContext], _Async]
    on_complete_tool_call: Callable[[CompleteToolCall], _Async]
    on_unmapped_raw_event: Callable[[object], _Async]
    on_complete_response: Callable[[ChatResponse], _Async]
    on_error: Callable[[LangHooksError], _Async]


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
    _langhooks_factory = "async_chain_callbacks"


@final
class _StreamingFunctions(_FunctionHandler, StreamingChatResponseHandler):
    _langhooks_factory = "streaming_callbacks"


@final
class _AsyncStreamingFunctions(_FunctionHandler, AsyncStreamingChatResponseHandler):
    _langhooks_factory = "async_streaming_callbacks"


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
    "async_chain_callbacks": (AsyncChainCallbackHandler, _AsyncChainFunctions),
    "streaming_callbacks": (StreamingChatResponseHandler, _StreamingFunctions),
    "async_streaming_callbacks": (
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
                f"{interface.__name__} is synchronous: use async_{factory}(), or "
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
            an ``async def`` function (use ``async_chain_callbacks``).
    """
    handler: ChainCallbackHandler = _build("chain_callbacks", functions)
    return handler


def async_chain_callbacks(
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
    handler: AsyncChainCallbackHandler = _build("async_chain_callbacks", functions)
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
            an ``async def`` function (use ``async_streaming_callbacks``).
    """
    handler: StreamingChatResponseHandler = _build("streaming_callbacks", functions)
    return handler


def async_streaming_callbacks(
    **functions: Unpack[AsyncStreamingCallbackFunctions],
) -> AsyncStreamingChatResponseHandler:
    """An ``AsyncStreamingChatResponseHandler`` whose events are the functions.

    Like ``streaming_callbacks``, for async streams; functions may be ``async def``
    or plain, as in ``async_chain_callbacks``.

    Returns:
        A new handler.

    Raises:
        TypeError: a keyword is not an event (the message names the closest one),
            or a value is not callable or cannot take the event's arguments.
    """
    handler: AsyncStreamingChatResponseHandler = _build(
        "async_streaming_callbacks", functions
    )
    return handler
