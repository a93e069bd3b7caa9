"""``LoggingHandler``: one stdlib ``logging`` record per event, with structured extras.

Every record carries, in its ``extra``:

- ``langhooks_event``: the handler method's name (``on_tool_execution_completed``);
- ``run_id``: the chain run's id (its invocation's), None for a bare stream;
- ``invocation_id``: the invocation current where the event fired (a tool's own
  invocation in ``on_tool_pre_execution``), else the run's id;

and, where the event has them, ``tool``, ``tool_call_id``, ``input_tokens``,
``output_tokens``, ``error_type`` and ``retry_delay`` (seconds). The key is
``langhooks_event`` rather than ``event`` because structlog keeps the message under
``event``.

Levels: streamed increments, the start of each model call and raw provider details
at DEBUG; runs, model answers, messages, tool calls and the retry of a failed model
call (``on_llm_retry``) at the handler's ``level`` (INFO by default); failures that
a run may survive (a model error, a failed tool call, a rejected answer) at WARNING;
a run or stream that gives up, and a tool's exception, at ERROR with the exception
attached. Message content (prompts, answers, tool arguments and results, also the
text of a failed tool's result) is never logged, except the streamed text of DEBUG
records. Needs no optional library.

Every message is one line: a value that came from a model, a tool, a provider or a
user (a tool's name, a model's name, an error's text, streamed text) has its control
characters escaped in the message (a newline as ``\n``, an ANSI escape as
``\x1b``), so it cannot forge a record of its own or drive a terminal; the extras
keep the raw values. The traceback of an attached exception is the formatter's
(``logging.Formatter.formatException``), as Python prints it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, overload

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._event_fields import CHAIN_FIELDS, STREAM_FIELDS, Field
from .._core._invocation import current_invocation
from .._core._messages import LangHooksError, MessageDelta
from .._core._streaming import StreamingChatResponseHandler
from .._core._terminal import escaped
from ._event_lines import (
    LINES,
    Lines,
    Log,
    field_values,
    method_factory,
    pairs_text,
    params_of,
    usage_extra,
)

if TYPE_CHECKING:
    from ..chain import LLMChain

__all__ = ["LoggingHandler"]

DEBUG: Final = logging.DEBUG
ERROR: Final = logging.ERROR


def record_methods(
    fields: Mapping[str, tuple[Field, ...]],
    params: Mapping[str, tuple[str, ...]],
    lines: Mapping[str, Lines],
    *,
    chain: bool,
) -> dict[str, Callable[..., None]]:
    """One method per event of ``fields``, logging its record: its row in
    ``lines``, else its data fields in the message and the extras. ``chain``: the
    events are chain events (the chain their first argument). Built once, when the
    module is imported."""
    methods: dict[str, Callable[..., None]] = {}
    for event, row in fields.items():
        log = lines.get(event, Lines()).log
        if log is None:
            values = field_values(row, params[event], data_only=True)
            log = Log(
                lambda *args, v=values: pairs_text(v(*args)),
                extra=lambda *args, v=values: dict(v(*args)),
            )
        attach = params[event].index(log.attach) if log.attach else None
        methods[event] = _record_method(event, log, attach, chain, len(params[event]))
    return methods


def _nothing(*args: object) -> str:
    return ""


def _record_method(
    event: str, log: Log, attach: int | None, chain: bool, arity: int
) -> Callable[..., None]:
    # Specialised per row when made: no test of the row's parts per event.
    level = "self.level" if log.level is None else "fixed"
    extra = "None" if log.extra is None else "extra({args})"
    source = (
        "def factory(event, fixed, detail, extra):\n"
        "    def method(self, {args}):\n"
        f"        level = {level}\n"
        "        if self.logger.isEnabledFor(level):  # else no work at all\n"
        "            self._emit(level, event, detail({args}), "
        f"{'a0' if chain else 'None'}, {extra}, "
        f"{'None' if attach is None else f'a{attach}'})\n"
        "    return method\n"
    )
    detail = _nothing if log.detail is None else log.detail
    method: Callable[..., None] = method_factory(source, arity)(
        event, log.level, detail, log.extra
    )
    method.__name__ = method.__qualname__ = event
    return method


class LoggingHandler(ChainCallbackHandler, StreamingChatResponseHandler):
    """Logs every chain and streaming event through stdlib ``logging``.

    A record's level, message and extras are its event's row in
    ``_event_lines.LINES`` (or its data fields); the methods here are the events
    with more than one record to write or of two specs.

    Works as a chain handler (``LLMChain(callbacks=[...])``, also for ``arun()``)
    and as a streaming handler (``model.stream(request, handler)``). Thread-safe:
    it keeps no state besides its logger.

    Args:
        logger: where records go (default: the ``langhooks.events`` logger).
        level: the level of ordinary events (runs, messages, tool calls).

    Raises:
        TypeError: ``logger`` is not a ``logging.Logger`` or ``level`` not an int.
    """

    # The table's methods, made once, in the class body (not a base class, which the
    # API docs would show); a method below replaces the table's for its event. An
    # event of both specs (on_error) is the class's own method.
    vars().update(
        {
            event: method
            for fields, interface, chain in (
                (STREAM_FIELDS, StreamingChatResponseHandler, False),
                (CHAIN_FIELDS, ChainCallbackHandler, True),
            )
            for event, method in record_methods(
                fields, params_of(interface), LINES, chain=chain
            ).items()
            if event not in CHAIN_FIELDS.keys() & STREAM_FIELDS.keys()
        }
    )

    def __init__(
        self, logger: logging.Logger | None = None, *, level: int = logging.INFO
    ) -> None:
        if logger is not None and not isinstance(logger, logging.Logger):
            raise TypeError(
                f"logger must be a logging.Logger (logging.getLogger(name)), got "
                f"{logger!r}"
            )
        if isinstance(level, bool) or not isinstance(level, int):
            raise TypeError(f"level must be a logging level (int), got {level!r}")
        self.logger: Final = logger or logging.getLogger("langhooks.events")
        self.level: Final = level

    def _log(
        self,
        level: int,
        event: str,
        detail: str,
        chain: LLMChain | None,
        extra: Mapping[str, Any] | None = None,
        exc_info: BaseException | None = None,
    ) -> None:
        if self.logger.isEnabledFor(level):
            self._emit(level, event, detail, chain, extra, exc_info)

    def _emit(
        self,
        level: int,
        event: str,
        detail: str,
        chain: LLMChain | None,
        extra: Mapping[str, Any] | None,
        exc_info: BaseException | None,
    ) -> None:
        """Log a record (``level`` already known to be enabled)."""
        run = None if chain is None or chain.invocation is None else chain.invocation
        current = current_invocation()
        run_id = None if run is None else run.id
        fields: dict[str, Any] = {
            "langhooks_event": event,
            "run_id": run_id,
            "invocation_id": run_id if current is None else current.id,
        }
        if extra:
            fields.update(extra)
        # One line whatever the values in ``detail`` (a model picks a tool's
        # name; a provider writes an error's text): escaped here, raw in extras.
        message = escaped(f"{event} {detail}") if detail else event
        self.logger.log(level, message, extra=fields, exc_info=exc_info)

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        if not self.logger.isEnabledFor(DEBUG):
            return  # the common case, per token: decided before any work
        for delta in deltas:
            detail = delta.text or delta.thinking
            if delta.tool_call is not None:
                detail = f"{delta.tool_call.name}: {delta.tool_call.partial_arguments}"
            if delta.status is not None:
                detail = f"stream {delta.status}"
            self._log(
                DEBUG, "on_llm_new_delta", detail, chain, usage_extra(delta.usage)
            )

    @overload
    def on_error(self, error: BaseException, /) -> None: ...
    @overload
    def on_error(self, chain: LLMChain, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        """A stream's ``on_error(error)`` or a run's ``on_error(chain, error)``:
        logged at ERROR with the exception attached.

        Raises:
            TypeError: not called with one or two arguments.
        """
        if not 1 <= len(args) <= 2:
            raise TypeError(
                "LoggingHandler.on_error takes (error) as a streaming handler or "
                f"(chain, error) as a chain handler, got {len(args)} arguments"
            )
        error: BaseException = args[-1]
        chain = args[0] if len(args) == 2 else None
        error_type = getattr(error, "type", type(error).__name__)
        extra = {"error_type": error_type}
        self._log(ERROR, "on_error", str(error), chain, extra, error)
