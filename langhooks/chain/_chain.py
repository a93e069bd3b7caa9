"""The reference chain runtime: ``LLMChain`` and ``RunResult``.

The run loop is built by the runtime issue; this module pins the snapshot type that
chain handlers receive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs

from .._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._invocation import Invocation
from .._messages import (
    LangHooksError,
    Message,
    Tool,
    _frozen_mapping,
    message_tuple,
    tool_tuple,
)

if TYPE_CHECKING:
    from ..models import ChatModel

__all__ = ["LLMChain", "RunResult"]

RunStatus = Literal["ok", "interrupted", "error"]
_T = TypeVar("_T")


def _tuple(values: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True)
class LLMChain:
    """An immutable snapshot of a conversation with a model and its tools."""

    model: ChatModel = attrs.field(kw_only=False)
    tools: tuple[Tool, ...] = attrs.field(default=(), converter=tool_tuple)
    messages: tuple[Message, ...] = attrs.field(default=(), converter=message_tuple)
    callbacks: tuple[ChainCallbackHandler | AsyncChainCallbackHandler, ...] = (
        attrs.field(default=(), converter=_tuple)
    )
    custom_context: Mapping[str, Any] = attrs.field(
        default=None, converter=_frozen_mapping
    )
    max_retry_count: int = 3
    current_failure_count: int = 0
    fallbacks: tuple[ChatModel, ...] = attrs.field(default=(), converter=_tuple)
    retry: Any = None
    invocation: Invocation | None = None

    def add_message(self, message: Message) -> LLMChain:
        """A copy with ``message`` appended."""
        return attrs.evolve(self, messages=(*self.messages, message))

    def add_messages(self, messages: Sequence[Message]) -> LLMChain:
        """A copy with ``messages`` appended."""
        return attrs.evolve(self, messages=(*self.messages, *messages))


@attrs.frozen(kw_only=True)
class RunResult:
    """How a run ended."""

    status: RunStatus
    chain: LLMChain
    interrupt_data: Mapping[str, Any] | None = None
    error: LangHooksError | None = None
