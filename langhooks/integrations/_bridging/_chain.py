"""The chain a bridged run shows its handlers, and what stands in for the
framework's model and tools (which langhooks does not run).

A bridged run's chain is an ``LLMChain`` snapshot (never run): every chain event's
first argument, evolved as the run goes, so ``EventRecorder``, the OpenTelemetry
handler and the Redis publisher read it as they read a chain run's."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, final

import attrs

from ..._core._invocation import Invocation
from ..._core._messages import ChatResponse, LangHooksError, Message
from ..._core._model import ChatRequest
from ..._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ..._core._tools import Tool, ToolContext
from ...chain._chain import LLMChain

__all__ = ["FrameworkModel", "stand_in_tool", "start_chain"]


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
    """The ``Tool`` that stands for a framework's tool in handlers' events
    (made once per name, description and schema: runs reuse it)."""
    text = None if schema is None else json.dumps(schema, sort_keys=True, default=str)
    return _stand_in(name, description, text)


@functools.lru_cache(maxsize=512)
def _stand_in(name: str, description: str, schema: str | None) -> Tool:
    return Tool(
        name,
        _run_by_framework,
        description=description,
        parameters_schema=None if schema is None else json.loads(schema),
    )


def start_chain(
    model: FrameworkModel,
    *,
    messages: Sequence[Message],
    tools: Sequence[Tool],
    custom_context: Mapping[str, Any],
    invocation: Invocation,
) -> LLMChain:
    """The chain a bridged run starts from."""
    chain = LLMChain(model, tools=tools, custom_context=custom_context)
    return attrs.evolve(chain, messages=tuple(messages), invocation=invocation)
