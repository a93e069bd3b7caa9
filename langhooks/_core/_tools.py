"""Tools: what a model may call, what a tool function receives, and what a tool
may read of the chain it was called from (``ChainView``).

Frozen attrs classes, as the messages are (``_messages``): bad values fail at
construction with a ``ValueError`` or ``TypeError`` that names the field.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

import attrs

from ._handler import arity_problem
from ._messages import Message, ToolCall, ToolResult, _tuple_of
from ._validators import callable_value, instance_of, optional_str
from ._values import (
    _EMPTY,
    _custom_context,
    _frozen_mapping,
    _reduce,
    _value_eq,
    _value_hash,
    _value_repr,
)

if TYPE_CHECKING:
    from ._invocation import Invocation

__all__ = [
    "ChainView",
    "ProgressSink",
    "Tool",
    "ToolContext",
    "ToolFunction",
    "ToolProgress",
    "tool_tuple",
]

_TOOL_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")


class ChainView(Protocol):
    """What a handler or a tool may read of a chain: every chain event's first
    argument and ``ToolContext.chain``. ``LLMChain`` is one; another runtime can
    fire the same events with its own chain."""

    __slots__ = ()

    @property
    def messages(self) -> Sequence[Message]:
        """The conversation so far."""

    @property
    def tools(self) -> Sequence[Tool]:
        """The tools the model may call."""

    @property
    def custom_context(self) -> Mapping[str, Any]:
        """The caller data of the run."""

    @property
    def invocation(self) -> Invocation | None:
        """The run's ``Invocation`` (None outside a run)."""

    @property
    def current_failure_count(self) -> int:
        """Consecutive failures counted so far in the run."""

    @property
    def max_retry_count(self) -> int:
        """The consecutive failures the run may have before it gives up."""

    @property
    def pending_tool_calls(self) -> Sequence[ToolCall]:
        """The calls an interrupted run left waiting for a human decision."""


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def _progress(value: float) -> float:
    return _finite(value, "progress")


def _total(value: float | None) -> float | None:
    return None if value is None else _finite(value, "total")


@attrs.frozen(repr=False, eq=False)
class ToolProgress:
    """How far a running tool call has got: the value of ``on_tool_progress``.

    Attributes:
        progress: the work done so far, in the tool's own unit (a count, bytes,
            a fraction); it should grow from one report to the next.
        total: the work there is in all, in the same unit, when known.
        message: what the tool is doing now, for a human.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    progress: float = attrs.field(converter=_progress)
    total: float | None = attrs.field(default=None, converter=_total)
    message: str | None = attrs.field(default=None, validator=optional_str)

    __reduce__ = _reduce


#: Where ``ToolContext.report_progress`` sends a call's progress: the runtime's
#: delivery to the chain's handlers.
ProgressSink: TypeAlias = Callable[[ToolProgress], None]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolContext:
    """What a tool function receives beside its arguments.

    Attributes:
        call: the call being run.
        custom_context: the run's ``custom_context``.
        invocation: the tool execution's ``Invocation`` (a child of the run's).
        chain: the chain snapshot the call came from (None for a tool run
            outside a chain).
        progress_sink: where ``report_progress`` sends the call's progress (set
            by the runtime; None outside a run).
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    call: ToolCall
    custom_context: Mapping[str, Any] = attrs.field(
        default=_EMPTY, converter=_custom_context
    )
    invocation: Invocation | None = None
    chain: ChainView | None = None
    progress_sink: Callable[[ToolProgress], None] | None = attrs.field(
        default=None, eq=False, repr=False
    )

    __reduce__ = _reduce

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the run's handlers how far this call has got (``on_tool_progress``).

        Safe from any thread the tool runs or starts, and from a sync or an async
        tool; the run delivers the event on its own thread or task, in the order
        reported, after the call's ``on_tool_execution_started`` and before its
        result. Outside a run (no ``progress_sink``) it does nothing.

        Args:
            progress: the work done so far.
            total: the work there is in all, when known.
            message: what the tool is doing now.

        Raises:
            TypeError: a value is not a number (or ``message`` not a str).
            ValueError: a number is not finite.
        """
        report = ToolProgress(progress, total, message)
        if self.progress_sink is not None:
            self.progress_sink(report)


ToolFunction: TypeAlias = Callable[
    [Mapping[str, Any], ToolContext],
    "str | ToolResult | Awaitable[str | ToolResult]",
]


def _tool_name(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not _TOOL_NAME.fullmatch(value):
        raise ValueError(
            f"{attribute.name} must be 1-64 letters, digits, '_' or '-', got {value!r}"
        )


def _tool_function(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    problem = arity_problem(value, 2)
    if problem is not None:
        raise TypeError(
            f"{attribute.name} {value!r} cannot take the two arguments a tool "
            f"function is called with, (arguments, context): {problem}; write it "
            f"as def {getattr(value, '__name__', 'tool')}(arguments, context)"
        )


def _schema(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else _frozen_mapping(value, "parameters_schema")


@attrs.frozen(repr=False, eq=False)
class Tool:
    """A tool a model may call, and the function that runs it.

    Args:
        name: what the model calls it (1-64 letters, digits, ``_`` or ``-``).
        function: ``(arguments, context) -> str | ToolResult``, sync or async.
        description: what the tool does, for the model.
        parameters_schema: a JSON Schema object for the arguments.
        display_text: a human-readable label for calls of this tool.
        concurrent: may run in a worker alongside other calls of the batch.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    name: str = attrs.field(validator=_tool_name)
    function: ToolFunction = attrs.field(validator=[callable_value, _tool_function])
    description: str = attrs.field(default="", kw_only=True, validator=instance_of(str))
    parameters_schema: Mapping[str, Any] | None = attrs.field(
        default=None, kw_only=True, converter=_schema
    )
    display_text: str | None = attrs.field(
        default=None, kw_only=True, validator=optional_str
    )
    concurrent: bool = attrs.field(default=False, kw_only=True)

    __reduce__ = _reduce

    @property
    def is_async(self) -> bool:
        """Whether ``function`` is a coroutine function."""
        return inspect.iscoroutinefunction(self.function)


def tool_tuple(value: Sequence[Tool]) -> tuple[Tool, ...]:
    """Validate and freeze a sequence of tools (names must be unique)."""
    tools = _tuple_of(value, Tool, "tools", "Tools")
    names = [tool.name for tool in tools]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"tool names must be unique, repeated: {duplicated}")
    return tools
