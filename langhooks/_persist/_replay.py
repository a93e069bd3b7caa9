"""Replay of event records: ``Replayer`` turns each record back into a call of a
handler's ``on_*`` method with arguments equal to the recorded ones (a chain
argument rebuilt from the recorded messages, a tool from its description), and
``replay_events``/``areplay_events`` run it over a recording.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias, final

from typing_extensions import override

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._handler import HandlerBase
from .._core._invocation import Invocation
from .._core._messages import ChatResponse, LangHooksError, Message
from .._core._model import ChatRequest
from .._core._result import run_result
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from .._core._tools import Tool, ToolContext
from ..chain._chain import LLMChain
from . import _codec
from ._records import _CHAIN_EVENTS, _CONTEXTS, _STREAM_EVENTS, EventRecord

__all__ = [
    "Handler",
    "Replayer",
    "SyncHandler",
    "areplay_events",
    "replay_events",
]


class _RecordedModel:
    """A recorded model, replayed: its description, and a model that cannot be
    called.

    Attributes:
        recorded_class: the recorded model's class name, if known.
        model: the recorded model's name (its ``model`` attribute), if any.
    """

    def __init__(
        self, recorded_class: str | None = None, model: str | None = None
    ) -> None:
        self.recorded_class = recorded_class
        self.model = model
        self.description = (
            "the recorded model"
            if recorded_class is None
            else f"the recorded {recorded_class}" + (f" {model!r}" if model else "")
        )

    def _fail(self) -> LangHooksError:
        return LangHooksError(
            "invalid_request",
            f"{self.description} is a recording: a replayed chain cannot call it; "
            f"build the chain with a real model (LLMChain.from_state)",
        )

    def stream(self, request: object, handler: object, **_: object) -> ChatResponse:
        raise self._fail()

    async def astream(
        self, request: object, handler: object, **_: object
    ) -> ChatResponse:
        raise self._fail()

    @override
    def __repr__(self) -> str:
        return f"<{self.description}>"


def _recorded_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
    raise RuntimeError("a recorded tool stands in for the real one: it cannot run")


class _Chains:
    """Rebuilds each run's chain snapshots from its records, in order."""

    def __init__(self) -> None:
        self._messages: dict[str | None, list[Message]] = {}
        self._last: dict[str | None, tuple[dict[str, Any], LLMChain]] = {}

    def current(self, record: EventRecord) -> LLMChain:
        """The chain of the record's run as its ``chain`` argument rebuilt it (the
        chain is every chain event's first argument, so it is decoded first)."""
        return self._last[record.run_id][1]

    def chain(self, ref: Mapping[str, Any], record: EventRecord) -> LLMChain:
        run_id = record.run_id
        messages = self._messages.setdefault(run_id, [])
        if "messages" in ref:
            start = ref["messages_from"]
            del messages[start:]
            messages.extend(_codec.message_from_data(m) for m in ref["messages"])
        elif run_id in self._last:
            last_ref, chain = self._last[run_id]
            if (
                last_ref["message_count"] == ref["message_count"]
                and last_ref["current_failure_count"] == ref["current_failure_count"]
            ):
                return chain
        if len(messages) != ref["message_count"]:
            raise ValueError(
                f"record {record.seq} ({record.event}) refers to {ref['message_count']}"
                f" message(s) of run {run_id}, but the records before it carried "
                f"{len(messages)}: replay a recording from its start"
            )
        chain = LLMChain(
            _RecordedModel(),
            messages=tuple(messages),
            current_failure_count=ref["current_failure_count"],
            invocation=Invocation(
                id=run_id or "unknown", name="run", parent_id=record.parent_id
            )
            if record.run_id is not None
            else None,
        )
        self._last[run_id] = (dict(ref), chain)
        return chain


class _Decoder:
    """Turns payload values back into arguments."""

    def __init__(self) -> None:
        self.chains = _Chains()
        self.handle = StreamingHandle()

    def value(self, value: Any, record: EventRecord, depth: int = 0) -> Any:
        if isinstance(value, list):
            if depth >= _codec.MAX_DEPTH:
                raise ValueError(
                    f"payload data may nest {_codec.MAX_DEPTH} levels deep at most"
                )
            return tuple(self.value(item, record, depth + 1) for item in value)
        if not isinstance(value, Mapping) or "type" not in value:
            return value
        tag = value["type"]
        if tag == "LLMChain":
            return self.chains.chain(value, record)
        if tag == "Mapping":
            return dict(value["value"])
        if tag == "Tool":
            return Tool(
                value["name"],
                _recorded_tool,
                description=value["description"],
                parameters_schema=value["parameters_schema"],
                display_text=value["display_text"],
                concurrent=value["concurrent"],
            )
        if tag == "RunResult":
            error = value["error"]
            return run_result(
                status=value["status"],
                chain=self.chains.current(record),
                interrupt_data=value["interrupt_data"],
                error=None if error is None else self.value(error, record),
            )
        if tag == "Exception":
            return _rebuilt_exception(value["class"], value["message"])
        if tag == "Repr":
            return value["repr"]
        if tag == "ChatModel":
            return _RecordedModel(value["class"], value["name"])
        if tag == "ChatRequest":
            messages = (
                self.chains.current(record).messages
                if value.get("messages_of_chain")
                else [_codec.message_from_data(m) for m in value["messages"]]
            )
            return ChatRequest(
                messages=messages,
                tools=[self.value(tool, record) for tool in value["tools"]],
            )
        return _codec.decode_fields(tag, value)


def _rebuilt_exception(qualified: object, message: object) -> BaseException:
    """A builtin ``Exception`` class that takes a message alone comes back as
    itself; any other (``UnicodeDecodeError``, ``ExceptionGroup``, a class of the
    application: never imported from a record) as an ``Exception`` naming it."""
    if not isinstance(qualified, str) or not isinstance(message, str):
        raise TypeError(
            f"a recorded exception's class and message are str, got {qualified!r} "
            f"and {message!r}"
        )
    module, _, name = qualified.rpartition(".")
    if module == "builtins":
        import builtins

        kind = getattr(builtins, name, None)
        if isinstance(kind, type) and issubclass(kind, Exception):
            # A class with another constructor gets the stand-in below.
            with contextlib.suppress(Exception):
                return kind(message)
    return Exception(f"{qualified}: {message}")


def _interface_of(record: EventRecord) -> tuple[type[HandlerBase], ...] | None:
    name = record.event
    if name in _CHAIN_EVENTS and (
        name not in _STREAM_EVENTS or "chain" in record.payload
    ):
        return (ChainCallbackHandler, AsyncChainCallbackHandler)
    if name in _STREAM_EVENTS:
        return (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler)
    return None


#: What ``replay_events`` (and ``follow``, the consumer) drive.
SyncHandler: TypeAlias = ChainCallbackHandler | StreamingChatResponseHandler
#: What ``areplay_events`` (and ``afollow``) drive.
Handler: TypeAlias = (
    ChainCallbackHandler
    | StreamingChatResponseHandler
    | AsyncChainCallbackHandler
    | AsyncStreamingChatResponseHandler
)

_ASYNC: Final = (AsyncChainCallbackHandler, AsyncStreamingChatResponseHandler)
_INTERFACES: Final = (
    ChainCallbackHandler,
    AsyncChainCallbackHandler,
    StreamingChatResponseHandler,
    AsyncStreamingChatResponseHandler,
)


@final
class Replayer:
    """Turns records, one at a time, into calls of one handler's ``on_*`` methods.

    The one replay loop body: ``replay_events`` and ``areplay_events`` run it over a
    list, ``follow`` and the Redis consumer over a stream read piece by piece (they
    may start in the middle of a run, so ``prime`` feeds earlier records to the
    decoder, which rebuilds each run's chain, without calling the handler).

    Args:
        handler: the handler to drive.
        what: the caller's name, for error messages.
        twin: the async twin to name when ``handler`` is async and this replayer
            drives sync handlers only; None when async handlers are welcome.

    Raises:
        TypeError: ``handler`` is not a langhooks handler, or is async where only
            sync handlers are driven.
    """

    def __init__(self, handler: Handler, what: str, *, twin: str | None) -> None:
        if not isinstance(handler, _INTERFACES):
            raise TypeError(
                f"{what} drives a langhooks handler (a ChainCallbackHandler, a "
                f"StreamingChatResponseHandler or their Async twins), got {handler!r}"
            )
        if twin is not None and isinstance(handler, _ASYNC):
            raise TypeError(
                f"{what} drives synchronous handlers; {handler!r} is async: use the "
                f"async twin ({twin})"
            )
        self._handler: Final = handler
        self._decoder = _Decoder()

    def call(self, record: EventRecord) -> tuple[Callable[..., Any], list[Any]] | None:
        """The handler's method for ``record`` and its arguments, or None when the
        handler does not implement the record's interface.

        Raises:
            ValueError: an unknown event, a record that refers to messages the
                records before it did not carry, or a payload that is not what
                the event records (a value of the wrong shape).
        """
        interfaces = _interface_of(record)
        if interfaces is None:
            raise ValueError(
                f"record {record.seq} names {record.event!r}, which is not an event "
                f"of a chain or streaming handler"
            )
        if not isinstance(self._handler, interfaces):
            return None
        spec = interfaces[0]._langhooks_own_events[record.event]
        args: list[Any] = []
        for param in spec.params:
            if param in record.payload:
                args.append(self._decoded(record, param))
            elif param == "context" and record.event in _CONTEXTS:
                args.append(_CONTEXTS[record.event](handle=self._decoder.handle))
            else:
                raise ValueError(
                    f"record {record.seq} ({record.event}) has no {param!r} in its "
                    f"payload"
                )
        return getattr(self._handler, record.event), args

    def _decoded(self, record: EventRecord, param: str) -> Any:
        # A record comes from outside (a file, a stream): a payload value of the
        # wrong shape is a bad record, reported as such, never a crash.
        try:
            return self._decoder.value(record.payload[param], record)
        except (KeyError, TypeError, AttributeError, IndexError) as error:
            detail = (
                f"the field {error} is missing" if type(error) is KeyError else error
            )
            raise ValueError(
                f"record {record.seq} ({record.event}): its {param!r} is not a "
                f"valid recorded value: {detail}"
            ) from None

    def prime(self, record: EventRecord) -> None:
        """Take in a record delivered before (its messages), calling nothing."""
        self.call(record)

    def replay(self, record: EventRecord) -> None:
        """Deliver ``record`` to a synchronous handler."""
        call = self.call(record)
        if call is not None:
            method, args = call
            method(*args)

    async def areplay(self, record: EventRecord) -> None:
        """Deliver ``record``, awaiting an async handler's method."""
        call = self.call(record)
        if call is not None:
            method, args = call
            result = method(*args)
            if inspect.isawaitable(result):
                await result


def replay_events(records: Iterable[EventRecord], handler: SyncHandler) -> None:
    """Drive ``handler`` with recorded events: the same methods, in the same order,
    with arguments equal to the recorded ones.

    A chain argument is rebuilt from the recorded messages (its model and tools are
    stand-ins that cannot be called); a tool is rebuilt from its description; a
    stream's context carries a fresh cancel handle. Events of an interface the
    handler does not implement are skipped (a chain handler gets a mixed
    recording's chain events).

    Args:
        records: the records, in ``seq`` order (``read_events(...)``).
        handler: a synchronous chain and/or streaming handler (for an async one,
            ``await areplay_events(...)``).

    Raises:
        TypeError: ``handler`` is async, or not a handler.
        ValueError: a record names an unknown event, or refers to messages the
            records before it did not carry.
    """
    replayer = Replayer(handler, "replay_events", twin="areplay_events")
    for record in records:
        replayer.replay(record)


async def areplay_events(records: Iterable[EventRecord], handler: Handler) -> None:
    """``replay_events`` for any handler: an async handler's methods are awaited.

    Args:
        records: the records, in ``seq`` order (``read_events(...)``).
        handler: a chain and/or streaming handler, sync or async.

    Raises:
        TypeError: ``handler`` is not a handler.
        ValueError: as ``replay_events``.
    """
    replayer = Replayer(handler, "areplay_events", twin=None)
    for record in records:
        await replayer.areplay(record)
