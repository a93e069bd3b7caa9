"""Driving a handler record by record, as ``replay_events`` does for a whole list.

``follow`` and the consumer receive records one read at a time, from a blocking
stream, and may start in the middle of a run; they also drive async handlers. So the
loop body of ``replay_events`` is here as a method, with its decoder (which rebuilds
each run's chain from the records before) kept between calls, and a way to feed
earlier records to that decoder without calling the handler.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Final, TypeAlias, final

from .._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._events import _CONTEXTS, _Decoder, _interface_of
from .._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)
from ..events import EventRecord

__all__ = ["Handler", "Replayer", "SyncHandler"]

#: What ``follow`` and the consumer drive.
SyncHandler: TypeAlias = ChainCallbackHandler | StreamingChatResponseHandler
#: What ``afollow`` drives.
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
    """Turns records into calls of one handler's ``on_*`` methods."""

    def __init__(self, handler: Handler, what: str, *, is_async: bool) -> None:
        if not isinstance(handler, _INTERFACES):
            raise TypeError(
                f"{what} drives a langhooks handler (a ChainCallbackHandler, a "
                f"StreamingChatResponseHandler or their Async twins), got {handler!r}"
            )
        if not is_async and isinstance(handler, _ASYNC):
            raise TypeError(
                f"{what} drives synchronous handlers; {handler!r} is async: use the "
                f"async twin (afollow)"
            )
        self._handler: Final = handler
        self._decoder = _Decoder()

    def call(self, record: EventRecord) -> tuple[Callable[..., Any], list[Any]] | None:
        """The handler's method for ``record`` and its arguments, or None when the
        handler does not implement the record's interface.

        Raises:
            ValueError: an unknown event, or a record that refers to messages the
                records before it did not carry.
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
                args.append(self._decoder.value(record.payload[param], record))
            elif param == "context" and record.event in _CONTEXTS:
                args.append(_CONTEXTS[record.event](handle=self._decoder.handle))
            else:
                raise ValueError(
                    f"record {record.seq} ({record.event}) has no {param!r} in its "
                    f"payload"
                )
        return getattr(self._handler, record.event), args

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
