"""The tool results a run makes, and what it tells the model about failures.

Pure functions, no events: what a tool's return value or exception becomes, the
stand-in of a call that waits for a human, the answer to a call that cannot run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from .._core._messages import ToolCall, ToolResult
from .._core._tools import Tool

if TYPE_CHECKING:
    from .._core._tools import ChainView

__all__ = [
    "INTERRUPT_STAND_IN",
    "check_arguments",
    "describe",
    "error_result",
    "interrupt_data",
    "interrupted_result",
    "not_run_result",
    "pending_results",
    "result_of",
    "short_description",
    "waiting_position",
]

#: What the model is told about a call that waits for a human (the stand-in).
INTERRUPT_STAND_IN: Final = "This tool call is waiting for a human decision."
# Longest exception message quoted to the model; the rest stays on the result.
_MAX_ERROR_TEXT: Final = 300


def check_arguments(tool: Tool, arguments: object) -> str | None:
    """What is wrong with ``arguments`` for ``tool``, or None when they are fine.

    Checks that the arguments are a JSON object and carry every key the tool's
    ``parameters_schema`` lists as ``required``.
    """
    if not isinstance(arguments, Mapping):
        return f"the arguments must be a JSON object, got {type(arguments).__name__}"
    schema = tool.parameters_schema or {}
    required = schema.get("required") or ()
    missing = [key for key in required if key not in arguments]
    if missing:
        return f"missing required argument(s): {', '.join(map(str, missing))}"
    return None


def waiting_position(chain: ChainView) -> int | None:
    """Where the tool message whose interrupted stand-ins still wait is: the last
    tool message, when it has stand-ins and no answer of the model follows it
    (messages a caller added after it, such as a new user message, do not settle
    its calls). None when no call waits."""
    messages = chain.messages
    for position in range(len(messages) - 1, -1, -1):
        role = messages[position].role
        if role == "tool":
            results = messages[position].tool_results
            return position if any(r.is_interrupt for r in results) else None
        if role == "assistant":
            return None
    return None


def pending_results(chain: ChainView) -> tuple[ToolResult, ...]:
    """The interrupted stand-in results that still wait (``waiting_position``)."""
    position = waiting_position(chain)
    if position is None:
        return ()
    return tuple(r for r in chain.messages[position].tool_results if r.is_interrupt)


def interrupt_data(results: Sequence[ToolResult]) -> Mapping[str, Any]:
    """``RunResult.interrupt_data`` for a batch's interrupted results.

    One interrupted call: its data plus ``tool_call_id``. Several:
    ``{"interrupts": (data_1, data_2, ...)}``, each with its ``tool_call_id``, in
    call order.
    """
    datas = tuple(
        dict(r.interrupt_data or {"tool_call_id": r.tool_call_id}) for r in results
    )
    return datas[0] if len(datas) == 1 else {"interrupts": datas}


def describe(exception: BaseException) -> str:
    """``"TypeName: message"`` for an exception; never raises, even when the
    exception's ``__str__`` does."""
    try:
        text = str(exception)
    except Exception as problem:
        text = f"<str() raised {type(problem).__name__}>"
    return f"{type(exception).__name__}: {text}"


def short_description(exception: BaseException) -> str:
    """``describe(exception)``, cut to a length fit to quote to a model."""
    text = describe(exception)
    if len(text) > _MAX_ERROR_TEXT:
        text = text[: _MAX_ERROR_TEXT - 3] + "..."
    return text


def interrupted_result(
    call: ToolCall, message: str, data: Mapping[str, Any]
) -> ToolResult:
    """The stand-in result of a call review sent to a human."""
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=INTERRUPT_STAND_IN,
        display_text=message or None,
        is_interrupt=True,
        interrupt_data={**data, "tool_call_id": call.call_id},
    )


def error_result(call: ToolCall, text: str, *, is_error: bool = True) -> ToolResult:
    """A result telling the model ``text`` (a denial or rejection is no error)."""
    return ToolResult(
        tool_call_id=call.call_id, name=call.name, content=text, is_error=is_error
    )


def not_run_result(call: ToolCall) -> ToolResult:
    """The answer to a call a handler fault kept from running, so the recorded tool
    message still answers every call of the batch."""
    return error_result(
        call, "Error: the tool was not run: the run ended on a handler error."
    )


def result_of(
    call: ToolCall, value: object, exception: Exception | None
) -> tuple[ToolResult, Exception | None]:
    """What a tool's return value or exception becomes.

    Args:
        call: the call that ran.
        value: what the tool returned (when it did not raise).
        exception: what it raised, or None.

    Returns:
        The result, and the exception behind a failure (also a ``TypeError``
        for a return value that is neither a str nor a ``ToolResult``), else None.
    """
    if exception is None and not isinstance(value, str | ToolResult):
        exception = TypeError(
            f"tool {call.name!r} returned {type(value).__name__}; a tool "
            f"function returns a str or a ToolResult"
        )
    if exception is not None:
        failed = ToolResult(
            tool_call_id=call.call_id,
            name=call.name,
            content=f"Error: the tool failed: {short_description(exception)}",
            is_error=True,
            exception=exception,
        )
        return failed, exception
    if isinstance(value, str):
        return ToolResult(
            tool_call_id=call.call_id, name=call.name, content=value
        ), None
    assert isinstance(value, ToolResult)  # checked above
    result = attrs.evolve(value, tool_call_id=call.call_id, name=call.name)
    if result.is_interrupt:
        result = attrs.evolve(
            result,
            content=result.content or INTERRUPT_STAND_IN,
            interrupt_data={
                **(result.interrupt_data or {}),
                "tool_call_id": call.call_id,
            },
        )
    return result, None
