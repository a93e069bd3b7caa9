"""The data of a chain: ``ChainSnapshot``, the immutable state a run reads and evolves.

``LLMChain`` (in ``_chain``) adds running and saving to it; the runtime's modules
are typed against this class, so none of them imports the chain they run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

import attrs
from typing_extensions import override

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._handler import HandlerBase
from .._core._invocation import Invocation
from .._core._messages import Message, ToolCall, ToolResult, message_tuple
from .._core._model import ChatModel
from .._core._tools import ChainView, Tool, tool_tuple
from .._core._validators import count, positive_int
from .._core._values import _frozen_mapping
from ._decision import RetryPolicy
from ._processors import MessageProcessor, processor_tuple
from ._tool_results import pending_results

__all__ = ["ChainSnapshot", "Handler", "handler_tuple"]

#: A chain handler as the runtime sees it: of either interface, for any chain.
Handler = ChainCallbackHandler | AsyncChainCallbackHandler


def handler_tuple(values: Iterable[Handler]) -> tuple[Handler, ...]:
    """``values`` as a tuple, each checked to be a chain handler.

    Raises:
        TypeError: ``values`` is not iterable (a single handler, say), or one of
            them is not a chain handler.
    """
    if isinstance(values, HandlerBase) or not isinstance(values, Iterable):
        raise TypeError(
            f"callbacks takes a list of chain handlers, got a "
            f"{type(values).__name__}: pass callbacks=[handler]"
        )
    handlers = tuple(values)
    for handler in handlers:
        if not isinstance(handler, ChainCallbackHandler | AsyncChainCallbackHandler):
            raise TypeError(
                f"callbacks must be ChainCallbackHandler or AsyncChainCallbackHandler "
                f"instances, got {type(handler).__name__}"
            )
    return handlers


def _model(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, ChatModel):
        raise TypeError(
            f"{attribute.name} must be a ChatModel (with stream() and astream()), "
            f"got {value!r}"
        )


def _models(values: Iterable[ChatModel]) -> tuple[ChatModel, ...]:
    models = tuple(values)
    for model in models:
        if not isinstance(model, ChatModel):
            raise TypeError(f"fallbacks must be ChatModels, got {model!r}")
    return models


@attrs.frozen(kw_only=True)
class ChainSnapshot(ChainView):
    """The fields and copies of ``LLMChain`` (which documents them), apart from
    running and saving, so the runtime is typed against it without a circle."""

    model: ChatModel = attrs.field(kw_only=False, validator=_model)
    tools: tuple[Tool, ...] = attrs.field(default=(), converter=tool_tuple)
    messages: tuple[Message, ...] = attrs.field(default=(), converter=message_tuple)
    callbacks: tuple[Handler, ...] = attrs.field(default=(), converter=handler_tuple)
    message_processors: tuple[MessageProcessor, ...] = attrs.field(
        default=(), converter=processor_tuple
    )
    custom_context: Mapping[str, Any] = attrs.field(
        default=None, converter=_frozen_mapping
    )
    max_retry_count: int = attrs.field(default=3, validator=positive_int)
    current_failure_count: int = attrs.field(default=0, validator=count)
    fallbacks: tuple[ChatModel, ...] = attrs.field(default=(), converter=_models)
    retry: RetryPolicy | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(RetryPolicy)),
    )
    invocation: Invocation | None = None

    def add_message(self, message: Message) -> Self:
        """A copy with ``message`` appended."""
        return attrs.evolve(self, messages=(*self.messages, message))

    def add_messages(self, messages: Sequence[Message]) -> Self:
        """A copy with ``messages`` appended."""
        return attrs.evolve(self, messages=(*self.messages, *messages))

    def add_tools(self, tools: Sequence[Tool]) -> Self:
        """A copy with ``tools`` added.

        Raises:
            ValueError: a tool name is already taken.
        """
        return attrs.evolve(self, tools=(*self.tools, *tools))

    def add_callback(
        self,
        handler: ChainCallbackHandler[Self] | AsyncChainCallbackHandler[Self],
    ) -> Self:
        """A copy with ``handler`` called after the chain's other handlers.

        Raises:
            TypeError: ``handler`` is not a chain handler.
        """
        return attrs.evolve(self, callbacks=(*self.callbacks, handler))

    def add_message_processors(self, processors: Sequence[MessageProcessor]) -> Self:
        """A copy with ``processors`` run after the chain's other processors.

        Raises:
            TypeError: a processor is not callable.
        """
        return attrs.evolve(
            self, message_processors=(*self.message_processors, *processors)
        )

    @property
    @override
    def pending_tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls an interrupted run left waiting for a human decision (also
        when messages, such as a new user message, were added after them: they
        wait until decided or abandoned)."""
        waiting = {result.tool_call_id for result in pending_results(self)}
        # The calls of the answer the last tool message replies to: an earlier
        # answer may have used the same ids (Ollama numbers calls per turn).
        for message in reversed(self.messages):
            if message.role == "assistant":
                return tuple(c for c in message.tool_calls if c.call_id in waiting)
        return ()

    def replace_tool_result(self, tool_call_id: str, result: ToolResult) -> Self:
        """A copy with the result for ``tool_call_id`` swapped for ``result``.

        Use it to settle an interrupted call yourself (no tool runs and no event
        fires): the stand-in result of the last tool message is replaced.

        Raises:
            ValueError: no tool message carries a result for ``tool_call_id``.
            TypeError: ``result`` is not a ``ToolResult``.
        """
        if not isinstance(result, ToolResult):
            raise TypeError(f"result must be a ToolResult, got {result!r}")
        for position in range(len(self.messages) - 1, -1, -1):
            message = self.messages[position]
            ids = [r.tool_call_id for r in message.tool_results]
            if tool_call_id in ids:
                fixed = attrs.evolve(result, tool_call_id=tool_call_id)
                results = tuple(
                    fixed if r.tool_call_id == tool_call_id else r
                    for r in message.tool_results
                )
                swapped = attrs.evolve(message, tool_results=results)
                messages = list(self.messages)
                messages[position] = swapped
                return attrs.evolve(self, messages=messages)
        raise ValueError(
            f"no tool message carries a result for tool_call_id {tool_call_id!r}"
        )
