"""What a handler or a tool may read of the chain it was called from (``ChainView``).

Its own module, with nothing to import at run time: the chain interfaces are typed
against it (their chain type variable's bound) while ``import langhooks`` runs, and
the tools' module, which builds two attrs classes, loads on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._invocation import Invocation
    from ._messages import Message, ToolCall
    from ._tools import Tool

__all__ = ["ChainView"]


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
