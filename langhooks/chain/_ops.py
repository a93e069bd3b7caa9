"""The operations a run yields, and how a chain event is named.

A run is a generator (``_run.Run``) that yields these operations and receives their
results; the drivers (see ``_drive``) perform them, delivering events with
``deliver_async`` and ``deliver_sync`` (``_calls_async``, ``_calls_sync``). Every
chain event goes through ``fire``, which takes the interface method itself, so the
type checker checks each firing site's arguments against the event's signature, and
"find usages" of an event method lands on the places that fire it::

    yield fire(ChainCallbackHandler.on_tool_execution_completed, chain, call, result)
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    ParamSpec,
    Protocol,
    TypeAlias,
    TypeVar,
    final,
)

import attrs

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._messages import LangHooksError, ToolCall
from .._core._tools import Tool
from ._tool_results import describe

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .._core._invocation import Invocation
    from .._core._model import ChatModel, ChatRequest
    from .._core._result import RunResult
    from .._core._tools import ProgressSink, ToolContext
    from ._snapshot import ChainSnapshot

__all__ = [
    "Complete",
    "Execute",
    "Fire",
    "GiveUp",
    "HandlerFault",
    "Op",
    "Outcome",
    "Planned",
    "Sleep",
    "Steps",
    "Stream",
    "fire",
    "handler_error",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")


@final
@attrs.frozen
class Fire:
    """Deliver a chain event to the (invocation-free) handlers; build with ``fire``.

    ``skip`` leaves out the chain's first handlers (those that already ended the
    run with ``on_run_complete``).
    """

    name: str
    args: tuple[Any, ...]
    skip: int = 0


class RunState(Protocol):
    """What a tool batch, the stream bridge and the tool executors read of the run
    (``Run`` in ``_run``, which builds them): typed here, so none imports it."""

    chain: ChainSnapshot

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The chain's tools by name."""

    def count_failure(self, reason: str, original: object) -> Steps[None]:
        """Count one conversation failure (see ``Run.count_failure``)."""

    def tool_context(
        self, call: ToolCall, current: Invocation, progress: ProgressSink
    ) -> ToolContext:
        """What the tool function of ``call`` receives beside its arguments."""


def fire(
    event: Callable[Concatenate[ChainCallbackHandler, _P], object],
    /,
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> Fire:
    """The operation that delivers ``event`` with ``args`` to every handler.

    Args:
        event: the interface method, such as
            ``ChainCallbackHandler.on_tool_execution_completed``; the async
            interface's twin is called under ``arun``.
        *args: the event's arguments, checked against its signature.
        **kwargs: none: event parameters are positional-only.

    Returns:
        The ``Fire`` operation.

    Raises:
        TypeError: keyword arguments were given.
    """
    if kwargs:
        raise TypeError(
            f"{event.__name__} takes positional arguments only, got {sorted(kwargs)}"
        )
    return Fire(event.__name__, args)


@final
@attrs.frozen
class Complete:
    """Deliver ``on_run_complete`` handler by handler.

    The result is None, or ``(index, fault)`` for the handler that raised: the
    ones before it received the event, the ones after it did not.
    """

    chain: ChainSnapshot
    result: RunResult[ChainSnapshot]


@final
@attrs.frozen
class Stream:
    """One model attempt: in its own copy of the context, deliver ``start``
    (``on_llm_call_start``) there, then stream the call; the result is
    ``(response, bridge state)``.

    What ``start`` sets in a context variable (the current tracing span) is seen
    by the model's code during this attempt and by nothing after it.
    """

    model: ChatModel
    request: ChatRequest
    start: Fire


@final
@attrs.frozen
class Sleep:
    """Wait before a retry."""

    seconds: float


@final
@attrs.frozen
class Planned:
    """A call that will run, with its tool."""

    call: ToolCall
    tool: Tool


@final
@attrs.frozen
class Execute:
    """Run tool calls: in workers when ``parallel``; the result is ``Outcome``s."""

    planned: tuple[Planned, ...]
    parallel: bool


Op: TypeAlias = Fire | Complete | Stream | Sleep | Execute
Steps: TypeAlias = Generator[Op, Any, _T]


@final
@attrs.frozen
class Outcome:
    """What running one tool produced: a value, an exception or a handler fault."""

    value: object = None
    exception: Exception | None = None
    fault: HandlerFault | None = None


@final
class HandlerFault(Exception):
    """A chain handler raised; carries the original exception out of the loop."""

    def __init__(self, event: str, original: Exception) -> None:
        super().__init__(event, original)
        self.event = event
        self.original = original


@final
class GiveUp(Exception):
    """The run cannot go on; ``on_error(error)`` ends it."""

    def __init__(self, error: LangHooksError) -> None:
        super().__init__(error)
        self.error = error


def handler_error(fault: HandlerFault) -> LangHooksError:
    """The "handler_error" a handler fault ends a run with."""
    return LangHooksError(
        "handler_error",
        f"a chain handler's {fault.event} raised {describe(fault.original)}",
        original=fault.original,
    )
