"""Stream drivers: deliver one stream's wire events to a handler, keeping the contract.

A driver owns one stream. The caller reads the wire (an HTTP response, an SDK
iterator, a recorded file), decodes each event and passes it to ``feed``; at the
end of input it calls ``finish``, and on a transport failure ``fail``. The
driver turns events into handler calls through the format's pure adapter
(``langhooks.models._adapters``) and guarantees, whatever the input:

- partials in stream order; ``on_complete_tool_call`` after the call's last
  fragment;
- exactly one terminal call (``on_complete_response`` or ``on_error``) and nothing
  after it;
- after ``handle.cancel()``, no callback at all, and ``finish`` returns the
  partial response with message status ``"cancelled"``. The driver holds the
  handle's delivery lock while it checks the handle and runs callbacks, and
  ``cancel()`` takes it: a cancel from another thread waits for the callback in
  progress, and once it returned no callback begins. One that lands after
  ``on_complete_response`` began is too late: the response stays complete, as
  the handler was told;
- nothing but ``LangHooksError`` escapes ``feed``/``finish``/``fail``, except an
  exception raised by the handler itself, which propagates unchanged (the driver
  then calls nothing more);
- the response assembled holds exactly what the handler was given.

**The one place no raw exception escapes a model's stream** is ``guard``
(``StreamDriver.guard`` / ``AsyncStreamDriver.guard``): a model runs its whole
stream (opening the request, reading, closing) as ``driver.guard(work)``. Any
``Exception`` that ``work`` lets out and the driver did not already report, from
an SDK, a transport, code wrapping them (an instrumentation patching the SDK), an
adapter bug or an exception class nobody here wrote, becomes a classified
``LangHooksError`` (``error_from_exception``; the original kept as
``original`` and ``__cause__``), goes to ``on_error`` exactly once and is raised.
The handler's own exceptions still propagate unchanged, a failure after the
stream completed is logged (the handler was told it completed), and after a
cancel the cancelled response is returned. Every model streams through a driver
this way: ``run_stream``/``arun_stream`` (the SDK and HTTP models),
``ScriptedChatModel``, ``replay_stream``; a new model does the same.

A handler is only called for the events it overrides (a composite or wrapper for
all of them), so an event nobody listens to costs no object construction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeAlias, get_args

from .._core._handler import HandlerBase, bound_event, event_is_async, overridden_events
from .._core._messages import (
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    MessageStatus,
    PartialThinking,
    PartialToolCall,
    ToolCall,
)
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingEventName,
    StreamingHandle,
)
from ._adapters._base import (
    THINKING,
    TOOL_COMPLETE,
    TOOL_PARTIAL,
    Action,
    StreamAdapter,
    finish_status,
    malformed,
    wire_event,
)
from ._errors import describe_exception, error_from_exception
from ._formats import StreamFormat, format_named

__all__ = ["StreamFormat"]

# Driver states.
_OPEN: Final = 0  # reading
_ENDED: Final = 1  # the format's terminal event arrived; finish() completes
_COMPLETED: Final = 2  # on_complete_response was called
_FAILED: Final = 3  # on_error was called (or is being raised)
_CANCELLED: Final = 4  # the handle was cancelled: nothing more is called
_BROKEN: Final = 5  # the handler raised: nothing more is called

_EVENTS: Final[tuple[str, ...]] = get_args(StreamingEventName)

# Join every this many pieces of a content run into one block: pieces are a few
# bytes of text each against ~50 bytes of overhead per str object.
_COMPACT_AT: Final = 1024

_Call: TypeAlias = "tuple[Callable[..., Any], tuple[Any, ...], bool]"

_log: Final = logging.getLogger("langhooks.models")


class _Driver:
    """What the sync and async drivers share: state, assembly, checks.

    The drivers themselves are ``AsyncStreamDriver`` (``_drive_async``, written by
    hand) and ``StreamDriver`` (``_drive_sync``, generated from it by
    ``scripts/unasync.py``)."""

    def __init__(
        self,
        format: StreamFormat,
        handler: HandlerBase,
        handle: StreamingHandle | None,
        metadata: Mapping[str, Any] | None,
        *,
        allow_async: bool,
    ) -> None:
        factory = format_named(format).adapter
        accepted: tuple[type, ...] = (
            (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler)
            if allow_async
            else (StreamingChatResponseHandler,)
        )
        if not isinstance(handler, accepted):
            hint = ""
            if isinstance(handler, AsyncStreamingChatResponseHandler):
                hint = (
                    " (an async handler is streamed to with 'await "
                    "model.astream(request, handler)'; a stream you drive yourself "
                    "takes one in AsyncStreamDriver)"
                )
            elif isinstance(handler, list | tuple):
                hint = " (wrap several in CompositeStreamingHandler)"
            raise TypeError(
                f"handler must be a {' or '.join(c.__name__ for c in accepted)}, got "
                f"{type(handler).__name__}{hint}"
            )
        if handle is None:
            handle = StreamingHandle()
        elif not isinstance(handle, StreamingHandle):
            raise TypeError(f"handle must be a StreamingHandle, got {handle!r}")
        self.format: Final[StreamFormat] = format
        #: The stream's cancel handle; every partial's context carries it.
        self.handle: Final[StreamingHandle] = handle
        self._metadata: Final = dict(metadata or {})
        self._adapter: StreamAdapter = factory()
        self._state: int = _OPEN
        self._error: LangHooksError | None = None
        # What the handler raised, if it did: it propagates unchanged.
        self._raised: BaseException | None = None
        # The error ``fail`` last raised (reported or not): it propagates too.
        self._failed: LangHooksError | None = None
        self._final: ChatResponse | None = None
        # Content as delivered: runs of (type, pieces), consecutive same-type
        # pieces joined into one part at the end.
        self._segments: list[tuple[Literal["text", "thinking"], list[str]]] = []
        self._last_kind: str | None = None
        self._last_pieces: list[str] = []
        self._loose = 0  # pieces of the last run not yet joined into a block
        self._tool_calls: list[ToolCall] = []
        self._text_context: Final = PartialResponseContext(handle=handle)
        self._thinking_context: Final = PartialThinkingContext(handle=handle)
        self._tool_context: Final = PartialToolCallContext(handle=handle)
        events = overridden_events(handler)
        dynamic = bool(getattr(handler, "_langhooks_dynamic", False))
        methods: dict[str, tuple[Callable[..., Any], bool] | None] = {}
        for name in _EVENTS:
            if dynamic or name in events:
                methods[name] = (
                    bound_event(handler, name),
                    event_is_async(handler, name),
                )
            else:
                methods[name] = None
        self._methods: Final = methods

    def _use_adapter(self, adapter: StreamAdapter) -> None:
        """Take ``adapter``'s actions instead of the format's adapter's, before the
        first event: ``ScriptedChatModel``'s turns are no wire format, but they are
        delivered, assembled and cancelled by the same driver."""
        self._adapter = adapter

    def _add_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Add response details learnt after the driver was made (the headers)."""
        self._metadata.update(metadata)

    @property
    def response(self) -> ChatResponse:
        """The response as assembled so far (exactly what the handler was given)."""
        if self._final is not None:
            return self._final
        return self._build()

    def _build(self) -> ChatResponse:
        adapter = self._adapter
        reason = adapter.finish_reason
        if (
            reason is not None
            and self._tool_calls
            and reason is not FinishReason.LENGTH
        ):
            reason = FinishReason.TOOL_EXECUTION
        status: MessageStatus
        if self._state == _CANCELLED or (
            self._state in (_OPEN, _ENDED) and self.handle.is_cancelled
        ):
            status = "cancelled"
        elif self._state == _FAILED or self._state == _BROKEN:
            status = "stream_error"
        else:
            status = finish_status(reason)
        message = Message(
            role="assistant",
            content=[
                ContentPart(type=kind, content="".join(pieces))
                for kind, pieces in self._segments
            ],
            tool_calls=self._tool_calls,
            status=status,
            metadata=adapter.message_metadata,
        )
        return ChatResponse(
            message=message,
            id=adapter.id,
            model_name=adapter.model_name,
            token_usage=adapter.usage,
            finish_reason=reason,
            metadata={**self._metadata, **adapter.response_metadata},
        )

    def _actions(self, event: object) -> list[Action] | LangHooksError:
        """The adapter's actions for ``event``, or the error it stands for."""
        if type(event) is not dict:
            if isinstance(event, LangHooksError):
                return event  # a decoder's verdict on malformed wire data
            try:
                event = wire_event(event)
            except LangHooksError as error:
                return error
        try:
            return self._adapter.feed(event)  # type: ignore[arg-type]  # a dict, a Mapping or a str
        except LangHooksError as error:
            return error
        except Exception as exc:
            # The adapters call no user code: anything they raise is a symptom of
            # input that breaks the format (a wrong type deep in an event, ...).
            return malformed(
                f"malformed {self.format} event: {type(exc).__name__}: {exc}",
                original=exc,
            )

    def _append(self, kind: Literal["text", "thinking"], text: str) -> None:
        """Add delivered text to the response being assembled."""
        if kind == self._last_kind:
            pieces = self._last_pieces
            pieces.append(text)
            self._loose += 1
            if self._loose >= _COMPACT_AT:
                # Many small str objects cost ~50 bytes each: join the latest
                # ones into one block, so memory grows with the text itself
                # (blocks are never joined again: no quadratic copying).
                start = len(pieces) - self._loose
                pieces[start:] = ["".join(pieces[start:])]
                self._loose = 0
        else:
            self._last_kind = kind
            self._last_pieces = [text]
            self._loose = 1
            self._segments.append((kind, self._last_pieces))

    def _accept(self, action: Action) -> _Call | None:
        """Record ``action`` in the response; the handler call it needs, if any.

        Text, the hot path, never comes here: the drivers deliver it inline."""
        methods = self._methods
        if action[0] is THINKING:
            text = action[1]
            self._append("thinking", text)
            method = methods["on_partial_thinking"]
            if method is None:
                return None
            return (
                method[0],
                (PartialThinking(text=text), self._thinking_context),
                method[1],
            )
        if action[0] is TOOL_PARTIAL:
            method = methods["on_partial_tool_call"]
            if method is None:
                return None
            _, index, call_id, name, arguments = action
            partial = PartialToolCall(
                index=index, id=call_id, name=name, partial_arguments=arguments
            )
            return (method[0], (partial, self._tool_context), method[1])
        if action[0] is TOOL_COMPLETE:
            _, call = action
            self._tool_calls.append(call)
            method = methods["on_complete_tool_call"]
            if method is None:
                return None
            complete = CompleteToolCall(index=call.index, tool_call=call)
            return (method[0], (complete,), method[1])
        method = methods["on_unmapped_raw_event"]
        if method is None:
            return None
        return (method[0], (action[1],), method[1])  # (UNMAPPED, raw_event)

    def _settled(self) -> ChatResponse | None:
        """The start of ``finish`` for both drivers: the response of a stream that
        needs no terminal call now (completed before, or cancelled), or None.

        Raises:
            LangHooksError: the stream failed, or the handler broke it.
        """
        state = self._state
        if state == _COMPLETED:
            assert self._final is not None
            return self._final
        if state == _FAILED:
            assert self._error is not None
            raise self._error
        if state == _BROKEN:
            raise self._abandoned()
        if state == _CANCELLED or self.handle.is_cancelled:
            self._state = _CANCELLED
            return self._build()
        return None

    def _complete(self) -> tuple[ChatResponse, tuple[Callable[..., Any], bool] | None]:
        """Complete the stream: the response, and the ``on_complete_response``
        method to call with it (if the handler has one)."""
        # Completed from here: a cancel landing now (from another thread) is too
        # late, and the response must say "complete" as the handler is told.
        self._state = _COMPLETED
        response = self._final = self._build()
        return response, self._methods["on_complete_response"]

    def _escaped(self, exc: Exception) -> ChatResponse | LangHooksError:
        """What ``guard`` does with ``exc``, which the stream's work let out: the
        response to return, or the error still to report (through ``fail``).

        Raises:
            BaseException: the handler's own exception (``exc``, or the one a
                later failure while closing replaced), or the error already
                reported.
        """
        if self._raised is not None:
            raise self._raised
        if exc is self._error or exc is self._failed:
            raise exc
        state = self._state
        if state == _FAILED:
            # Closing failed after the stream had failed: the reported error
            # stands (with this failure as its context).
            assert self._error is not None
            raise self._error
        if state == _COMPLETED:
            assert self._final is not None
            _log.warning(
                "the %s stream completed (the handler was told) but closing it "
                "failed: %s",
                self.format,
                describe_exception(exc),
                exc_info=exc,
            )
            return self._final
        if state == _CANCELLED or self.handle.is_cancelled:
            self._state = _CANCELLED
            return self._build()
        return error_from_exception(exc)

    def _truncated(self) -> LangHooksError:
        return LangHooksError(
            "stream_error",
            f"the {self.format} stream ended before its terminal event "
            f"({self._adapter.terminal})",
            retryable=True,
        )

    def _abandoned(self) -> LangHooksError:
        return LangHooksError(
            "handler_error",
            "the stream was abandoned because the handler raised an exception",
        )
