"""The model wrapper ``LangHooksRunHooks.install`` puts on an agent.

The Agents SDK gives ``RunHooks`` no stream and no failed attempt, so the bridge
listens where the SDK meets the model: each ``get_response`` / ``stream_response``
call is one attempt (a second call in one model turn is the SDK's retry), a raised
exception is that attempt's failure, and each raw Responses event of a stream is
translated into partials. Everything else is the wrapped model's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, final

from agents.models.interface import Model
from agents.retry import ModelRetryAdvice, ModelRetryAdviceRequest
from typing_extensions import override

from ..._core._messages import ToolCall
from ._convert import arguments_of

if TYPE_CHECKING:
    from agents.items import ModelResponse, TResponseStreamEvent

    from .._bridging._run import FrameworkRun

__all__ = ["ListenedModel", "Listener"]


class Listener(Protocol):
    """What the wrapper reports to (``LangHooksRunHooks``)."""

    @property
    def _current(self) -> FrameworkRun | None: ...

    async def _attempt(self) -> None: ...

    async def _attempt_failed(self, exc: Exception) -> None: ...


@final
class ListenedModel(Model):
    """A ``Model`` that reports each attempt and its stream to a bridge."""

    def __init__(self, model: Model, hooks: Listener) -> None:
        self.model = model
        self._hooks = hooks

    @override
    def get_retry_advice(
        self, request: ModelRetryAdviceRequest
    ) -> ModelRetryAdvice | None:
        return self.model.get_retry_advice(request)

    @override
    async def close(self) -> None:
        await self.model.close()

    @override
    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        await self._hooks._attempt()
        try:
            return await self.model.get_response(*args, **kwargs)
        except Exception as exc:
            await self._hooks._attempt_failed(exc)
            raise

    @override
    async def stream_response(
        self, *args: Any, **kwargs: Any
    ) -> AsyncIterator[TResponseStreamEvent]:
        await self._hooks._attempt()
        run = self._hooks._current
        calls: dict[int, int] = {}  # output index: call index
        try:
            async for event in self.model.stream_response(*args, **kwargs):
                if run is not None:
                    await _translate(run, event, calls)
                yield event
        except Exception as exc:
            await self._hooks._attempt_failed(exc)
            raise


async def _translate(run: Any, event: Any, calls: dict[int, int]) -> None:
    """One raw Responses event as partials (an event with none is left alone)."""
    kind = getattr(event, "type", None)
    if kind == "response.output_text.delta":
        await run.text(event.delta)
    elif kind in (
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
    ):
        await run.thinking(event.delta)
    elif kind == "response.output_item.added" and event.item.type == "function_call":
        index = calls.setdefault(event.output_index, len(calls))
        await run.tool_fragment(
            index, event.item.call_id, event.item.name, event.item.arguments or ""
        )
    elif (
        kind == "response.function_call_arguments.delta" and event.output_index in calls
    ):
        await run.tool_fragment(calls[event.output_index], None, None, event.delta)
    elif kind == "response.output_item.done" and event.output_index in calls:
        item = event.item
        await run.tool_complete(
            ToolCall(
                call_id=item.call_id,
                name=item.name,
                arguments=arguments_of(item.arguments),
                index=calls[event.output_index],
            )
        )
