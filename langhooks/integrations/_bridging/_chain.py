"""The chain a bridged run shows its handlers, and what stands in for the
framework's model and tools (which langhooks does not run)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, final

import attrs

from ..._core._invocation import Invocation
from ..._core._messages import ChatResponse, LangHooksError, Message, ToolCall
from ..._core._model import ChatRequest
from ..._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ..._core._tools import Tool, ToolContext

__all__ = ["BridgedChain", "FrameworkModel", "stand_in_tool", "stand_in_tools"]


@final
@attrs.frozen(kw_only=True)
class BridgedChain:
    """A ``ChainView`` of a run another framework drives: every chain event's
    first argument in a bridged run, evolved as the run goes (never mutated).

    Attributes:
        messages: the conversation as the bridge saw it: the run's input, then
            each assistant and tool message as it completed.
        tools: stand-ins for the framework's tools (their names, descriptions
            and schemas; langhooks cannot run them).
        custom_context: the caller data given to the bridge.
        invocation: the run's ``Invocation``.
        current_failure_count: always 0 (the framework counts its own retries).
        max_retry_count: the framework's retry bound where it has one, else 0.
        pending_tool_calls: the calls an interrupted run left waiting.
    """

    messages: tuple[Message, ...] = ()
    tools: tuple[Tool, ...] = ()
    custom_context: Mapping[str, Any] = attrs.field(factory=dict)
    invocation: Invocation | None = None
    current_failure_count: int = 0
    max_retry_count: int = 0
    pending_tool_calls: tuple[ToolCall, ...] = ()

    def with_message(self, message: Message) -> BridgedChain:
        """This chain with ``message`` added."""
        return attrs.evolve(self, messages=(*self.messages, message))


@final
@attrs.frozen
class FrameworkModel:
    """The model a framework calls, as ``on_llm_call_start`` names it.

    It has ``stream``/``astream`` only to be a ``ChatModel``: the framework calls
    its model itself, and calling these raises.

    Attributes:
        model: the model's name, as the framework reports it.
        system: the framework and provider ("pydantic-ai:openai", ...).
    """

    model: str
    system: str

    def _refuse(self) -> NoReturn:
        raise LangHooksError(
            "invalid_request",
            f"{self!r} stands for a model that {self.system.split(':')[0]} calls; "
            f"langhooks cannot call it (call the framework's agent instead)",
        )

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Refused: the framework calls its model itself."""
        self._refuse()

    async def astream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler | AsyncStreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Refused: the framework calls its model itself."""
        self._refuse()


def _run_by_framework(arguments: Mapping[str, Any], context: ToolContext) -> str:
    raise LangHooksError(
        "invalid_request",
        f"tool {context.call.name!r} belongs to the framework that runs it; "
        f"langhooks cannot call it",
    )


def stand_in_tool(
    name: str, description: str, schema: Mapping[str, Any] | None
) -> Tool:
    """The ``Tool`` that stands for a framework's tool in handlers' events."""
    return Tool(
        name,
        _run_by_framework,
        description=description,
        parameters_schema=schema,
    )


def stand_in_tools(
    tools: Sequence[tuple[str, str, Mapping[str, Any] | None]],
) -> tuple[Tool, ...]:
    """Stand-ins for ``(name, description, schema)`` triples."""
    return tuple(stand_in_tool(*tool) for tool in tools)
