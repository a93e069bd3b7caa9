"""Nous-style notification: map callbacks plus ``(tag, payload)`` messages to a queue.

This mirrors ``Nous.Agent.Callbacks`` (Elixir). Nous has eight agent events; for
each one it calls the function registered under the event's name in a map with
``(event, payload)``, then sends ``{tag, payload}`` to a process mailbox. Here the
mailbox is a ``queue.Queue``, an ``asyncio.Queue`` or any callable, and
``NotifyingHandler`` is also a chain and a streaming handler that turns langhooks'
events into Nous's.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Literal,
    TypeAlias,
    TypedDict,
    TypeVar,
    final,
    get_args,
    overload,
)

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._handler import closest_event
from .._core._messages import (
    ChatResponse,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    ToolCall,
    ToolResult,
)
from .._core._streaming import (
    PartialResponseContext,
    PartialThinkingContext,
    StreamingChatResponseHandler,
)
from .._core._tools import Tool
from ._notify_sinks import Sink as _Sink
from ._notify_sinks import sink as _sink

if TYPE_CHECKING:
    from .._core._result import RunResult
    from .._core._tools import ChainView

__all__ = [
    "AgentStartPayload",
    "Callback",
    "Notify",
    "NotifyingHandler",
    "NousCallbacks",
    "NousEvent",
    "ToolCallPayload",
    "ToolResponsePayload",
    "events",
    "to_message",
]

logger: Final = logging.getLogger("langhooks")

NousEvent: TypeAlias = Literal[
    "on_agent_start",
    "on_llm_new_delta",
    "on_llm_new_thinking_delta",
    "on_llm_new_message",
    "on_tool_call",
    "on_tool_response",
    "on_agent_complete",
    "on_error",
]
"""The name of one of Nous's eight events."""


class AgentStartPayload(TypedDict):
    """The payload of ``on_agent_start``."""

    chain: ChainView


class ToolCallPayload(TypedDict):
    """The payload of ``on_tool_call``: the call about to run."""

    id: str
    name: str
    arguments: dict[str, Any]


class ToolResponsePayload(TypedDict):
    """The payload of ``on_tool_response``: a call's result (an error too)."""

    id: str
    name: str
    result: ToolResult


class NousCallbacks(TypedDict, total=False):
    """``NotifyingHandler``'s ``callbacks``: per Nous event, a function of
    ``(event, payload)`` typed with that event's payload."""

    on_agent_start: Callable[[str, AgentStartPayload], object]
    on_llm_new_delta: Callable[[str, str], object]
    on_llm_new_thinking_delta: Callable[[str, str], object]
    on_llm_new_message: Callable[[str, Message], object]
    on_tool_call: Callable[[str, ToolCallPayload], object]
    on_tool_response: Callable[[str, ToolResponsePayload], object]
    on_agent_complete: Callable[[str, RunResult[Any]], object]
    on_error: Callable[[str, LangHooksError], object]


# Nous's events, in Nous's order, with the tag of the message each one sends.
_TAGS: Final[Mapping[str, str]] = types.MappingProxyType(
    {
        "on_agent_start": "agent_start",
        "on_llm_new_delta": "agent_delta",
        "on_llm_new_thinking_delta": "agent_thinking",
        "on_llm_new_message": "agent_message",
        "on_tool_call": "tool_call",
        "on_tool_response": "tool_result",
        "on_agent_complete": "agent_complete",
        "on_error": "agent_error",
    }
)

_EVENTS: Final[tuple[NousEvent, ...]] = get_args(NousEvent)

# The Nous events each handler method of NotifyingHandler produces.
_PRODUCES: Final[Mapping[str, tuple[str, ...]]] = types.MappingProxyType(
    {
        "on_run_start": ("on_agent_start",),
        "on_llm_new_delta": ("on_llm_new_thinking_delta", "on_llm_new_delta"),
        "on_partial_response": ("on_llm_new_delta",),
        "on_partial_thinking": ("on_llm_new_thinking_delta",),
        "on_message_processed": ("on_llm_new_message",),
        "on_complete_response": ("on_llm_new_message",),
        "on_tool_execution_started": ("on_tool_call",),
        "on_tool_execution_completed": ("on_tool_response",),
        "on_tool_execution_failed": ("on_tool_response",),
        "on_run_complete": ("on_agent_complete",),
        "on_error": ("on_error",),
    }
)

Callback: TypeAlias = Callable[[str, Any], object]
"""A map callback: called with ``(event, payload)``; its return value is ignored."""

Notify: TypeAlias = (
    queue.Queue[Any] | asyncio.Queue[Any] | Callable[[tuple[str, Any]], object]
)
"""Where ``(tag, payload)`` messages go: a queue, an asyncio queue or a callable."""


_Payload = TypeVar("_Payload")


def events() -> list[NousEvent]:
    """Nous's eight event names, in Nous's order.

    Returns:
        ``["on_agent_start", "on_llm_new_delta", "on_llm_new_thinking_delta",
        "on_llm_new_message", "on_tool_call", "on_tool_response",
        "on_agent_complete", "on_error"]`` (a new list each call).
    """
    return list(_EVENTS)


def to_message(event: str, payload: _Payload) -> tuple[str, _Payload]:
    """The ``(tag, payload)`` message an event sends, as in Nous.

    ``on_agent_start`` -> ``agent_start``, ``on_llm_new_delta`` -> ``agent_delta``,
    ``on_llm_new_thinking_delta`` -> ``agent_thinking``, ``on_llm_new_message`` ->
    ``agent_message``, ``on_tool_call`` -> ``tool_call``, ``on_tool_response`` ->
    ``tool_result``, ``on_agent_complete`` -> ``agent_complete``, ``on_error`` ->
    ``agent_error``; any other event is sent as ``(event, payload)``.

    Args:
        event: the event name.
        payload: the event's data, passed through unchanged.

    Returns:
        The message tuple.
    """
    return (_TAGS.get(event, event), payload)


def _check_event(what: str, event: object) -> str:
    if not isinstance(event, str):
        raise TypeError(f"{what}: the event must be a str, got {event!r}")
    if event not in _TAGS:
        raise ValueError(
            f"{what}: {event!r} is not a Nous event ({closest_event(event, _TAGS)}); "
            f"the events are {', '.join(_TAGS)}"
        )
    return event


def _check_callback(event: str, callback: object) -> Callback:
    if not callable(callback):
        raise TypeError(
            f"the callback for {event} must be a function of (event, payload), "
            f"got {callback!r}"
        )
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):  # some builtins have no signature: trust them
        return callback
    try:
        signature.bind(event, None)
    except TypeError as error:
        raise TypeError(
            f"the callback for {event} is called with (event, payload), but "
            f"{callback!r} cannot take them: {error}"
        ) from None
    return callback


# --- the handler --------------------------------------------------------------------

_NO_CALLBACKS: Final[Mapping[str, Callback]] = types.MappingProxyType({})


@final
class NotifyingHandler(ChainCallbackHandler, StreamingChatResponseHandler):
    """Nous's callbacks: map callbacks, then ``(tag, payload)`` messages to a queue.

    Each event is delivered as ``Nous.Agent.Callbacks.execute`` does: first the
    callback registered under the event's name is called with ``(event,
    payload)`` (an exception it raises is logged with its traceback on the
    ``langhooks`` logger, and delivery goes on), then the message
    ``to_message(event, payload)`` goes to ``notify``.

    ``notify`` may be:

    - a ``queue.Queue``: the message is put without blocking, from any thread;
    - an ``asyncio.Queue``: from the loop's own thread the message is put at once;
      from any other thread it is handed to the loop with
      ``loop.call_soon_threadsafe``, so it arrives after every message handed
      over before it (messages from one thread keep their order). The loop is the
      ``loop`` argument, else the loop running when the handler is created, else
      the one the queue is bound to, else the one running where the first message
      is sent; when none is known the delivery raises ``RuntimeError``, and so
      does delivery to a closed loop;
    - any callable: it is called with the message (an exception it raises
      propagates; ``notify=q.put`` blocks, ``notify=q.put_nowait`` raises
      ``queue.Full``, if that is the policy you want);
    - None: callbacks only.

    A bounded queue that is full drops its *oldest* message to make room, counts
    it in ``dropped``, and logs a warning the first time. Why: the caller is the
    model's stream or the chain run, and it must never wait on a slow reader (a
    blocking put would stall the stream and the connection, and deadlocks outright
    when the reader is the same event loop); failing the run because a UI lags is
    worse than losing a stale message, the newest messages are the ones a live
    view needs, and the same policy works in every thread (a put handed to an
    event loop could not raise to the caller anyway). Nothing is lost silently:
    check ``dropped``, or use an unbounded queue (the default ``maxsize=0``).

    As a chain handler and a streaming handler it turns langhooks events into Nous
    events (register it in one role per run, or events arrive twice):

    ========================================  ======================================
    langhooks event                           Nous event, payload
    ========================================  ======================================
    ``on_run_start(chain)``                   ``on_agent_start``, ``{"chain": chain}``
    ``on_llm_new_delta(chain, deltas)``       per delta, ``on_llm_new_thinking_delta``
                                              with its thinking, then
                                              ``on_llm_new_delta`` with its text
    ``on_partial_response(partial, ctx)``     ``on_llm_new_delta``, the text
    ``on_partial_thinking(partial, ctx)``     ``on_llm_new_thinking_delta``, the text
    ``on_message_processed`` (assistant)      ``on_llm_new_message``, the message
    ``on_complete_response(response)``        ``on_llm_new_message``, its message
    ``on_tool_execution_started``             ``on_tool_call``,
                                              ``{"id", "name", "arguments"}``
    ``on_tool_execution_completed/failed``    ``on_tool_response``,
                                              ``{"id", "name", "result"}`` (the
                                              ``ToolResult``)
    ``on_run_complete(chain, result)``        ``on_agent_complete``, the ``RunResult``
    ``on_error`` (either interface)           ``on_error``, the error
    ``on_tool_progress``                      none: Nous has no progress event
    ========================================  ======================================

    It handles only the events that can reach a callback or ``notify``: with no
    ``notify``, composites do not call it for events whose Nous event has no
    callback.

    Args:
        callbacks: Nous event name -> function of ``(event, payload)``.
        notify: where messages go (see above), or None.
        loop: the event loop that reads ``notify`` when it is an
            ``asyncio.Queue`` created outside that loop (only with one: the
            overloads reject ``loop=`` without an ``asyncio.Queue``).

    Raises:
        ValueError: a callback's key is not a Nous event (the message names the
            closest one).
        TypeError: a callback is not a function of two arguments, ``notify`` is of
            an unsupported kind, or ``loop`` is given without an ``asyncio.Queue``.
    """

    _callbacks: Mapping[str, Callback]
    _sink: _Sink | None
    _handled: frozenset[str]

    @overload
    def __init__(
        self, callbacks: NousCallbacks | None = None, notify: Notify | None = None
    ) -> None: ...
    @overload
    def __init__(
        self,
        callbacks: NousCallbacks | None,
        notify: asyncio.Queue[Any],
        *,
        loop: asyncio.AbstractEventLoop | None,
    ) -> None: ...
    @overload
    def __init__(
        self,
        callbacks: NousCallbacks | None = None,
        *,
        notify: asyncio.Queue[Any],
        loop: asyncio.AbstractEventLoop | None,
    ) -> None: ...
    def __init__(
        self,
        callbacks: NousCallbacks | None = None,
        notify: Notify | None = None,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        given: Mapping[str, object] = _NO_CALLBACKS if callbacks is None else callbacks
        if not isinstance(given, Mapping):
            raise TypeError(
                f"callbacks must be a mapping of event name to function, got {given!r}"
            )
        checked = {
            _check_event("NotifyingHandler", event): _check_callback(event, callback)
            for event, callback in given.items()
        }
        self._setup(checked, _sink(notify, loop))

    def _setup(self, callbacks: dict[str, Callback], sink: _Sink | None) -> None:
        self._callbacks = types.MappingProxyType(callbacks)
        self._sink = sink
        self._handled = frozenset(
            method
            for method, produced in _PRODUCES.items()
            if sink is not None or any(event in callbacks for event in produced)
        )

    def _with_callbacks(self, callbacks: dict[str, Callback]) -> NotifyingHandler:
        copy = object.__new__(NotifyingHandler)
        copy._setup(callbacks, self._sink)
        return copy

    @override
    def _langhooks_overridden_events(self) -> frozenset[str]:
        return self._handled

    @override
    def __repr__(self) -> str:
        notify = None if self._sink is None else self._sink.target
        return (
            f"NotifyingHandler(callbacks={dict(self._callbacks)!r}, notify={notify!r})"
        )

    # --- Nous.Agent.Callbacks ---------------------------------------------------

    @property
    def callbacks(self) -> Mapping[str, Callback]:
        """The map callbacks, by Nous event name (read-only)."""
        return self._callbacks

    @property
    def notify(self) -> object:
        """The ``notify`` target, or None."""
        return None if self._sink is None else self._sink.target

    @property
    def dropped(self) -> int:
        """How many messages a full bounded queue has dropped (oldest first).

        Shared with the handlers ``put_callback`` and ``remove_callback`` return,
        as they send to the same queue.
        """
        return 0 if self._sink is None else self._sink.dropped

    def execute(self, event: str, payload: object) -> None:
        """Deliver one event: its callback first, then its message.

        A callback that raises is logged with its traceback on the ``langhooks``
        logger and the message is still sent. Any event name may be executed (as
        in Nous); one that is not a Nous event has no callback and is sent as
        ``(event, payload)``.

        Args:
            event: the event name.
            payload: the event's data.

        Raises:
            TypeError: ``event`` is not a str.
            RuntimeError: ``notify`` is an ``asyncio.Queue`` whose loop is unknown
                or closed.
        """
        if not isinstance(event, str):
            raise TypeError(f"execute: the event must be a str, got {event!r}")
        callback = self._callbacks.get(event)
        if callback is not None:
            try:
                callback(event, payload)
            except Exception:
                logger.exception(
                    "langhooks: the %s callback raised; the message is still sent "
                    "and the run goes on",
                    event,
                )
        if self._sink is not None:
            self._sink.deliver((_TAGS.get(event, event), payload))

    def execute_many(self, events: Iterable[tuple[str, object]]) -> None:
        """``execute`` each ``(event, payload)`` pair, in order.

        Args:
            events: the pairs.
        """
        for event, payload in events:
            self.execute(event, payload)

    def has_callback(self, event: str) -> bool:
        """Whether a callback is registered for ``event``."""
        return callable(self._callbacks.get(event))

    def has_notification(self) -> bool:
        """Whether messages are sent to a ``notify`` target."""
        return self._sink is not None

    @overload
    def put_callback(
        self,
        event: Literal["on_agent_start"],
        callback: Callable[[str, AgentStartPayload], object],
    ) -> NotifyingHandler: ...
    @overload
    def put_callback(
        self, event: Literal["on_llm_new_delta"], callback: Callable[[str, str], object]
    ) -> NotifyingHandler: ...
    @overload
    def put_callback(
        self,
        event: Literal["on_llm_new_thinking_delta"],
        callback: Callable[[str, str], object],
    ) -> NotifyingHandler: ...
    @overload
    def put_callback(
        self,
        event: Literal["on_llm_new_message"],
        callback: Callable[[str, Message], object],
    ) -> NotifyingHandler: ...
    @overload
    def put_callback(
        self,
        event: Literal["on_tool_call"],
        callback: Callable[[str, ToolCallPayload], object],
    ) -> NotifyingHandler: ...
    @overload
    def put_callback(
        self,
        event: Literal["on_tool_response"],
        callback: Callable[[str, ToolResponsePayload], object],
    ) -> NotifyingHandler: ...
    @overload
    def put_callback(
        self,
        event: Literal["on_agent_complete"],
        callback: Callable[[str, RunResult[Any]], object],
    ) -> NotifyingHandler: ...
    @overload
    def put_callback(
        self,
        event: Literal["on_error"],
        callback: Callable[[str, LangHooksError], object],
    ) -> NotifyingHandler: ...
    def put_callback(
        self, event: str, callback: Callable[..., object]
    ) -> NotifyingHandler:
        """A new handler with ``callback`` registered for ``event`` (replacing any).

        The original is unchanged; the new one sends to the same ``notify``.

        Raises:
            ValueError: ``event`` is not a Nous event.
            TypeError: ``callback`` is not a function of ``(event, payload)``.
        """
        name = _check_event("put_callback", event)
        checked = _check_callback(name, callback)
        return self._with_callbacks({**self._callbacks, name: checked})

    def remove_callback(self, event: NousEvent) -> NotifyingHandler:
        """A new handler without a callback for ``event`` (the same if it had none).

        The original is unchanged; the new one sends to the same ``notify``.

        Raises:
            ValueError: ``event`` is not a Nous event.
        """
        name = _check_event("remove_callback", event)
        return self._with_callbacks(
            {key: value for key, value in self._callbacks.items() if key != name}
        )

    # --- chain events -------------------------------------------------------------

    @override
    def on_run_start(self, chain: ChainView) -> None:
        """Nous ``on_agent_start`` with ``{"chain": chain}``."""
        self.execute("on_agent_start", {"chain": chain})

    @override
    def on_llm_new_delta(self, chain: object, deltas: Sequence[MessageDelta]) -> None:
        """Per delta: ``on_llm_new_thinking_delta`` with its thinking, then
        ``on_llm_new_delta`` with its text (each only when not empty)."""
        for delta in deltas:
            if delta.thinking:
                self.execute("on_llm_new_thinking_delta", delta.thinking)
            if delta.text:
                self.execute("on_llm_new_delta", delta.text)

    @override
    def on_message_processed(self, chain: ChainView, message: Message) -> None:
        """Nous ``on_llm_new_message`` for an assistant message (not a tool one)."""
        if message.role == "assistant":
            self.execute("on_llm_new_message", message)

    @override
    def on_tool_execution_started(
        self, chain: ChainView, call: ToolCall, tool: Tool
    ) -> None:
        """Nous ``on_tool_call`` with ``{"id", "name", "arguments"}``."""
        self.execute(
            "on_tool_call",
            {"id": call.call_id, "name": call.name, "arguments": dict(call.arguments)},
        )

    @override
    def on_tool_execution_completed(
        self, chain: ChainView, call: ToolCall, result: ToolResult
    ) -> None:
        """Nous ``on_tool_response`` with ``{"id", "name", "result"}``."""
        self.execute(
            "on_tool_response",
            {"id": call.call_id, "name": call.name, "result": result},
        )

    @override
    def on_tool_execution_failed(
        self, chain: ChainView, call: ToolCall, result: ToolResult
    ) -> None:
        """Nous ``on_tool_response``; ``result`` says why the call failed."""
        self.execute(
            "on_tool_response",
            {"id": call.call_id, "name": call.name, "result": result},
        )

    @override
    def on_run_complete(self, chain: ChainView, result: RunResult[Any]) -> None:
        """Nous ``on_agent_complete`` with the ``RunResult``."""
        self.execute("on_agent_complete", result)

    # --- streaming events ---------------------------------------------------------

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        """Nous ``on_llm_new_delta`` with the text."""
        self.execute("on_llm_new_delta", partial.text)

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        """Nous ``on_llm_new_thinking_delta`` with the text."""
        self.execute("on_llm_new_thinking_delta", partial.text)

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        """Nous ``on_llm_new_message`` with the response's message."""
        self.execute("on_llm_new_message", response.message)

    # --- on_error, shared by both interfaces --------------------------------------
    # The two interfaces declare on_error with different (positional-only)
    # arguments: (error) for a stream, (chain, error) for a chain. One method takes
    # both shapes; the overloads give each caller its own signature, and the error
    # is always the last argument.

    @overload
    def on_error(self, error: LangHooksError, /) -> None: ...
    @overload
    def on_error(self, chain: ChainView, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        """Nous ``on_error`` with the error: a stream's ``on_error(error)`` or a
        run's ``on_error(chain, error)``.

        Raises:
            TypeError: not called with one or two arguments.
        """
        if not 1 <= len(args) <= 2:
            raise TypeError(
                "NotifyingHandler.on_error takes (error) as a streaming handler or "
                f"(chain, error) as a chain handler, got {len(args)} arguments"
            )
        self.execute("on_error", args[-1])
