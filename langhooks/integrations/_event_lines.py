"""What each observer shows of an event, where it is not the default: one table.

The observers are ``ConsoleHandler`` (``integrations/console.py``),
``LoggingHandler`` (``integrations/logging.py``) and ``langhooks events``
(``cli/print_events.py``). Each builds its per-event methods or lines once, when
it is imported, from two tables: the fields of every event
(``_core/_event_fields.py``) and the rows here. For an event without a row of its
own an observer shows the default:

- ``ConsoleHandler``: the event's fields as ``name=value`` (``cyan``);
- ``LoggingHandler``: a record at the handler's level whose message names the
  event's *data* fields as ``name=value`` and whose extras carry them (content is
  never logged);
- ``langhooks events``: the recorded arguments as ``name=JSON``.

So adding an event is its spec method and its fields' row; a row here only when an
observer wants its own words. What an observer does beyond one line per event
stays in its class: the console's streamed lines and attempt numbers, logging's
per-delta records and its ``on_error`` of both specs, and the events command's
joining of streamed pieces.

Each observer turns a row into its method once (``method_factory``: a method with
the event's arity, calling the row's functions with no test of the row per event),
so a table-made method costs what a hand-written one did.

A ``Console`` row's ``detail`` takes the console's ``Style`` and the event's
arguments (the chain first); a ``Log`` row's functions take the event's arguments
as delivered (the chain first for a chain event); a ``recorded`` function takes a
record's payload (the arguments by name, as the recorder encoded them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Final

from .._core._event_fields import Field
from .._core._handler import HandlerBase
from .._core._invocation import current_invocation
from .._core._messages import TokenUsage, ToolCall
from .._core._terminal import short_json
from .._core._terminal_style import call_arguments, progress_text

__all__ = [
    "LIMIT",
    "LINES",
    "Console",
    "Lines",
    "Log",
    "call_extra",
    "field_values",
    "method_factory",
    "pairs_text",
    "params_of",
    "short",
    "text",
    "usage_extra",
]

#: How long the events command lets a value's text run.
LIMIT: Final = 200


@dataclass(frozen=True, slots=True)
class Console:
    """The console's line for an event: ``detail(style, chain, *arguments)``, with
    the event's name in ``color``."""

    detail: Callable[..., str]
    color: str = "cyan"


@dataclass(frozen=True, slots=True)
class Log:
    """Logging's record of an event.

    Attributes:
        detail: the message after the event's name, from the event's arguments
            (None: the name alone).
        level: the record's level (None: the handler's ``level``).
        extra: the record's extras besides the ids, from the event's arguments.
        attach: the argument attached as the record's exception ("": none).
    """

    detail: Callable[..., str] | None = None
    level: int | None = None
    extra: Callable[..., Mapping[str, Any]] | None = None
    attach: str = ""


@dataclass(frozen=True, slots=True)
class Lines:
    """An event's own rows: a None part means that observer's default."""

    console: Console | None = None
    log: Log | None = None
    recorded: Callable[[Mapping[str, Any]], str] | None = None


# --- the logging extras -------------------------------------------------------------


def usage_extra(usage: TokenUsage | None) -> dict[str, Any]:
    """A token usage's extras (none when there is no usage)."""
    if usage is None:
        return {}
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def call_extra(call: ToolCall) -> dict[str, Any]:
    """A tool call's extras: a dict literal, not the fields read per event (half
    the cost on a hot path)."""
    return {"tool": call.name, "tool_call_id": call.call_id}


# --- the events command's words -----------------------------------------------------


def short(value: object) -> str:
    """Data as short JSON."""
    return short_json(value, LIMIT)


def text(value: str) -> str:
    """Text from a model or a tool, as a short ``repr``."""
    shown = repr(value)
    return shown if len(shown) <= LIMIT else shown[: LIMIT - 4] + "...'"


def _call(payload: Mapping[str, Any]) -> str:
    call = payload["call"]
    return f"{call['name']} {short(call['arguments'])}"


def _result_text(result: Mapping[str, Any]) -> str:
    return "".join(
        part["content"] for part in result["content"] if part["content_type"] == "text"
    )


def _message(message: Mapping[str, Any]) -> str:
    if message["role"] == "tool":
        return f"tool message, {len(message['tool_results'])} result(s)"
    calls = len(message["tool_calls"])
    return f"{message['role']} message, {calls} tool call(s)"


def _error(error: Mapping[str, Any]) -> str:
    if error.get("type") == "LangHooksError":
        return f"{error['error_type']}: {text(error['message'])}"
    return f"{error.get('class', '?')}: {text(str(error.get('message', '')))}"


def _usage(usage: Mapping[str, Any]) -> str:
    total = usage["input_tokens"] + usage["output_tokens"]
    return f"in {usage['input_tokens']}, out {usage['output_tokens']}, total {total}"


def _model_call(payload: Mapping[str, Any]) -> str:
    model, request = payload["model"], payload["request"]
    name = model.get("name")
    count = (
        payload["chain"]["message_count"]
        if request.get("messages_of_chain")
        else len(request["messages"])
    )
    label = model.get("class", "?") + (f" {name!r}" if name else "")
    return f"{label}, {count} message(s), {len(request['tools'])} tool(s)"


def _response(response: Mapping[str, Any]) -> str:
    reason = response["finish_reason"] or "-"
    return f"finish={reason} status={response['message']['status']}"


def _human(decision: object) -> str:
    return f" (human: {decision})" if decision else ""


# --- the console's words ------------------------------------------------------------


def _run_name(style: Any, chain: Any) -> str:
    invocation = chain.invocation
    name = "" if invocation is None else f"{invocation.name} {invocation.id[:8]}"
    return str(style(name, "dim"))


def _processed(style: Any, chain: Any, message: Any) -> str:
    if message.role == "tool":
        return f"tool message, {len(message.tool_results)} result(s)"
    return f"assistant message, {len(message.tool_calls)} tool call(s)"


def _where(style: Any, chain: Any, call: Any, tool: Any) -> str:
    current = current_invocation()
    where = "" if current is None else f"in invocation {current.name}"
    return f"{call.name} {style(where, 'dim')}"


def _finish(response: Any) -> str:
    reason = response.finish_reason
    return "" if reason is None else f"finish {reason.value}"


def _answer(chain: Any, response: Any) -> str:
    reason = response.finish_reason
    detail = f"{response.model_name or 'model'}"
    return detail if reason is None else f"{detail}, finish {reason.value}"


def _progress(chain: Any, call: Any, progress: Any) -> str:
    # The message is the tool's own words about its work: only the numbers.
    total = "" if progress.total is None else f" of {progress.total:g}"
    return f"{call.name} at {progress.progress:g}{total}"


def _pairs(info: Mapping[str, object]) -> str:
    return ", ".join(f"{key}={value}" for key, value in info.items())


_DEBUG: Final = logging.DEBUG
_WARNING: Final = logging.WARNING
_ERROR: Final = logging.ERROR
#: A record about one tool call, named in the message and the extras.
_TOOL_LOG: Final = Log(
    lambda chain, call, other: call.name,
    extra=lambda chain, call, other: call_extra(call),
)

# The rows, in the specs' order (chain events, then streaming events).
LINES: Final[Mapping[str, Lines]] = {
    "on_run_start": Lines(
        Console(_run_name, "magenta"),
        Log(),
        lambda p: f"{p['chain']['message_count']} message(s)",
    ),
    "on_llm_call_start": Lines(
        log=Log(
            lambda chain, model, request: (
                f"{type(model).__name__}, {len(request.messages)} message(s)"
            ),
            _DEBUG,
        ),
        recorded=_model_call,
    ),
    "on_llm_call_complete": Lines(
        Console(
            lambda s, chain, response: (
                f"finish={response.finish_reason or '-'} "
                f"status={response.message.status}"
            ),
            "dim",
        ),
        Log(_answer, extra=lambda chain, response: usage_extra(response.token_usage)),
        lambda p: _response(p["response"]),
    ),
    "on_llm_new_message": Lines(
        Console(lambda s, chain, message: f"{len(message.tool_calls)} tool call(s)"),
        Log(lambda chain, message: f"{len(message.tool_calls)} tool call(s)"),
        lambda p: _message(p["message"]),
    ),
    "on_llm_ratelimit_info": Lines(
        Console(lambda s, chain, info: _pairs(info)),
        Log(lambda chain, info: _pairs(info), _DEBUG),
    ),
    "on_llm_token_usage": Lines(
        Console(
            lambda s, chain, usage: (
                f"in {usage.input_tokens}, out {usage.output_tokens}, "
                f"total {usage.total_tokens}"
            )
        ),
        Log(
            lambda chain, usage: f"in {usage.input_tokens}, out {usage.output_tokens}",
            extra=lambda chain, usage: usage_extra(usage),
        ),
        lambda p: _usage(p["usage"]),
    ),
    "on_llm_response_headers": Lines(
        Console(lambda s, chain, headers: f"{len(headers)} header(s)"),
        Log(lambda chain, headers: f"{len(headers)} header(s)", _DEBUG),
        lambda p: f"{len(p['headers']['value'])} header(s)",
    ),
    "on_message_processed": Lines(
        Console(_processed),
        Log(lambda chain, message: f"{message.role} message"),
        lambda p: _message(p["message"]),
    ),
    "on_message_processing_error": Lines(
        Console(lambda s, chain, message: "a processor rejected it", "red"),
        Log(lambda chain, message: "a message processor rejected the answer", _WARNING),
        lambda p: _message(p["message"]),
    ),
    "on_error_message_created": Lines(
        Console(lambda s, chain, message: message.text, "yellow"),
        Log(lambda chain, message: "the reply to a rejected answer was added"),
        lambda p: _message(p["message"]),
    ),
    "on_tool_call_identified": Lines(
        Console(lambda s, chain, call, tool: f"{tool.name} ({tool.display_text})"),
        Log(
            lambda chain, call, tool: tool.name,
            extra=lambda chain, call, tool: call_extra(call),
        ),
        lambda p: (
            p["tool"]["name"]
            + (f" ({p['tool']['display_text']})" if p["tool"]["display_text"] else "")
        ),
    ),
    "on_tool_call_review": Lines(
        Console(
            lambda s, chain, call, tool, review: (
                f"{call.name}({call_arguments(call)}){_human(review.human_decision)}"
            )
        ),
        Log(
            lambda chain, call, tool, review: (
                f"{call.name}{_human(review.human_decision)}"
            ),
            extra=lambda chain, call, tool, review: call_extra(call),
        ),
        lambda p: _call(p) + _human(p["review"]["human_decision"]),
    ),
    "on_tool_execution_started": Lines(
        Console(lambda s, chain, call, tool: f"{call.name}({call_arguments(call)})"),
        _TOOL_LOG,
        _call,
    ),
    "on_tool_pre_execution": Lines(
        Console(_where), _TOOL_LOG, lambda p: str(p["call"]["name"])
    ),
    "on_tool_progress": Lines(
        Console(
            lambda s, chain, call, progress: (
                f"{call.name} "
                + progress_text(progress.progress, progress.total, progress.message)
            )
        ),
        Log(_progress, extra=lambda chain, call, progress: call_extra(call)),
        lambda p: (
            f"{p['call']['name']} "
            + progress_text(
                p["progress"]["progress"],
                p["progress"]["total"],
                p["progress"]["message"],
            )
        ),
    ),
    "on_tool_execution_completed": Lines(
        Console(
            lambda s, chain, call, result: f"{call.name} -> {result.text}", "green"
        ),
        _TOOL_LOG,
        lambda p: f"{p['call']['name']} -> {text(_result_text(p['result']))}",
    ),
    "on_tool_execution_failed": Lines(
        Console(lambda s, chain, call, result: f"{call.name}: {result.text}", "red"),
        # The result's text is content (a tool's or a reviewer's words): not logged.
        Log(
            lambda chain, call, result: f"{call.name} failed",
            _WARNING,
            lambda chain, call, result: call_extra(call),
        ),
        lambda p: f"{p['call']['name']}: {text(_result_text(p['result']))}",
    ),
    "on_tool_execution_exception": Lines(
        Console(lambda s, chain, call, exception: repr(exception), "red"),
        Log(
            lambda chain, call, exception: (
                f"{call.name} raised {type(exception).__name__}: {exception}"
            ),
            _ERROR,
            lambda chain, call, exception: call_extra(call),
            attach="exception",
        ),
        lambda p: _error(p["exception"]),
    ),
    "on_tool_interrupted": Lines(
        Console(
            lambda s, chain, results: (
                ", ".join(result.name for result in results) + " waits for a human"
            ),
            "yellow",
        ),
        Log(
            lambda chain, results: (
                ", ".join(result.name for result in results) + " wait(s) for a human"
            )
        ),
        lambda p: ", ".join(r["name"] for r in p["results"]) + " waits for a human",
    ),
    "on_tool_response_created": Lines(
        Console(lambda s, chain, message: f"{len(message.tool_results)} result(s)"),
        Log(lambda chain, message: f"{len(message.tool_results)} result(s)"),
        lambda p: f"{len(p['message']['tool_results'])} result(s)",
    ),
    "on_llm_error": Lines(
        Console(lambda s, chain, error: str(error), "red"),
        Log(
            lambda chain, error: str(error),
            _WARNING,
            lambda chain, error: {"error_type": error.type},
        ),
        lambda p: _error(p["error"]),
    ),
    "on_llm_retry": Lines(
        # At ``level``, not WARNING: the failure already has its WARNING record;
        # this one says the run is recovering from it.
        log=Log(
            lambda chain, error, delay: f"retrying in {delay:.2f} s after {error.type}",
            extra=lambda chain, error, delay: {
                "error_type": error.type,
                "retry_delay": delay,
            },
        ),
    ),
    "on_retries_exceeded": Lines(
        Console(lambda s, chain: f"{chain.current_failure_count} failures", "red"),
        Log(lambda chain: f"{chain.current_failure_count} failure(s)", _WARNING),
        lambda p: f"{p['chain']['current_failure_count']} failures",
    ),
    "on_error": Lines(recorded=lambda p: _error(p["error"])),
    "on_run_complete": Lines(
        log=Log(lambda chain, result: f"status {result.status}"),
        recorded=lambda p: f"status {p['result']['status']}",
    ),
    "on_partial_response": Lines(
        log=Log(lambda partial, context: partial.text, _DEBUG)
    ),
    "on_partial_thinking": Lines(
        log=Log(lambda partial, context: partial.text, _DEBUG)
    ),
    "on_partial_tool_call": Lines(
        log=Log(
            lambda partial, context: f"{partial.name}: {partial.partial_arguments}",
            _DEBUG,
        )
    ),
    "on_complete_tool_call": Lines(
        log=Log(
            lambda complete: complete.tool_call.name,
            extra=lambda complete: call_extra(complete.tool_call),
        ),
        recorded=lambda p: (
            f"#{p['complete']['index']} {p['complete']['tool_call']['name']} "
            f"{short(p['complete']['tool_call']['arguments'])}"
        ),
    ),
    "on_unmapped_raw_event": Lines(
        log=Log(lambda raw_event: type(raw_event).__name__, _DEBUG)
    ),
    "on_complete_response": Lines(
        log=Log(_finish, extra=lambda response: usage_extra(response.token_usage)),
        recorded=lambda p: _response(p["response"]),
    ),
}


def field_values(
    fields: tuple[Field, ...], params: tuple[str, ...], *, data_only: bool
) -> Callable[..., list[tuple[str, object]]]:
    """A function of an event's arguments (as delivered) giving its fields' names
    and values: the default observers' words for an event without a row. Built
    once per event; each field's argument position and attribute are found here."""
    getters = tuple(
        (
            field.name,
            params.index(field.param),
            attrgetter(field.attribute) if field.attribute else None,
        )
        for field in fields
        if not (data_only and field.content)
    )

    def values(*args: object) -> list[tuple[str, object]]:
        return [
            (name, args[at] if get is None else get(args[at]))
            for name, at, get in getters
        ]

    return values


def pairs_text(values: list[tuple[str, object]]) -> str:
    """Fields as ``name=value`` words."""
    return " ".join(f"{name}={value}" for name, value in values)


def params_of(interface: type[HandlerBase]) -> dict[str, tuple[str, ...]]:
    """The parameter names of each of ``interface``'s own events."""
    return {e: spec.params for e, spec in interface._langhooks_own_events.items()}


def method_factory(source: str, arity: int) -> Callable[..., Any]:
    """``factory`` from ``source``, with ``{args}`` standing for an event's
    ``arity`` arguments (``a0, a1, ...``) and ``{aN}`` for one of them.

    An observer's method per event is made by such a factory once, when its module
    is imported: with the event's own parameters rather than ``*args``, it runs as
    fast as a hand-written method (as ``_core._handler``'s fan-outs do).
    """
    names = [f"a{i}" for i in range(arity)]
    text = source.replace("{args}", ", ".join(names))
    namespace: dict[str, Any] = {}
    exec(compile(text, "<langhooks observer>", "exec"), namespace)
    return namespace["factory"]  # type: ignore[no-any-return]
