"""pydantic-ai: the script on an ``Agent`` with ``LangHooksCapability``.

The model is pydantic-ai's own ``FunctionModel`` with a stream function that answers
the script's turns (thinking, text word by word, tool-call fragments). A turn that
fails first raises ``ModelHTTPError`` (429); a small capability retries it with
``RetryModelRequest``, as pydantic-ai's docs show. A tool that raises reports the
failure to the model as pydantic-ai tools do, with ``ToolFailed``. The paused run is
its message history (``ModelMessagesTypeAdapter``), resumed in the second process
with ``deferred_tool_results``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from typing_extensions import override

from tests.bridges._support import need_module

need_module("pydantic_ai", "pydantic-ai")

from pydantic_ai import (  # noqa: E402
    Agent,
    DeferredToolRequests,
    RetryModelRequest,
    RunContext,
    Tool,
    ToolFailed,
)
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.exceptions import ModelHTTPError  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
)
from pydantic_ai.models import ModelRequestContext  # noqa: E402
from pydantic_ai.models.function import (  # noqa: E402
    AgentInfo,
    DeltaThinkingPart,
    DeltaToolCall,
    FunctionModel,
)

from langhooks.chain import Decision  # noqa: E402
from langhooks.integrations.pydantic_ai import (  # noqa: E402
    LangHooksCapability,
    deferred_tool_results,
)

from .._driver import Place  # noqa: E402
from .._loops import close_sync_loop  # noqa: E402
from .._script import PROMPT, TURNS, ScriptTool, script_tools  # noqa: E402

Item = str | dict[int, DeltaToolCall] | dict[int, DeltaThinkingPart]


class _Script:
    """The stream function: the next turn of the script, by the answers so far."""

    def __init__(self) -> None:
        self.failed: set[int] = set()

    async def __call__(
        self, messages: list[ModelMessage], _info: AgentInfo
    ) -> AsyncIterator[Item]:
        number = sum(isinstance(m, ModelResponse) for m in messages)
        turn = TURNS[number]
        if turn.fail_first and number not in self.failed:
            self.failed.add(number)
            raise ModelHTTPError(429, "scripted", body="scripted: slow down")
        for word in _words(turn.thinking):
            yield {0: DeltaThinkingPart(content=word)}
        for word in _words(turn.text):
            yield word
        for offset, call in enumerate(turn.calls, start=1):
            text = json.dumps(dict(call.arguments))
            half = len(text) // 2
            yield {
                offset: DeltaToolCall(call.name, text[:half], tool_call_id=call.call_id)
            }
            yield {offset: DeltaToolCall(json_args=text[half:])}


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]] if text else []


class _RetryOnce(AbstractCapability[Any]):
    """Retries a failed model attempt once on the same model."""

    @override
    async def on_model_request_error(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        error: Exception,
    ) -> ModelResponse:
        if request_context.attempt == 1:
            raise RetryModelRequest()
        raise error


def _tool(tool: ScriptTool, ledger: Path) -> Tool[Any]:
    def run(**arguments: Any) -> str:
        try:
            return tool.run(arguments, ledger)
        except Exception as exc:
            raise ToolFailed(f"Error: the tool failed: {exc}") from exc

    return Tool.from_schema(
        _as_any(run),
        name=tool.name,
        description=tool.description,
        json_schema=dict(tool.parameters),
    )


def _as_any(function: Callable[..., str]) -> Any:
    return function


def _agent(
    place: Place, handlers: Sequence[Any]
) -> Agent[None, str | DeferredToolRequests]:
    return Agent(
        FunctionModel(stream_function=_Script()),
        tools=[_tool(t, place.ledger) for t in script_tools()],
        output_type=[str, DeferredToolRequests],
        capabilities=[_RetryOnce(), LangHooksCapability(*handlers)],
    )


def _sync(agent: Agent[None, Any], *args: Any, **kwargs: Any) -> Any:
    """``run_sync``, then the event loop it leaves open closed (see _loops)."""
    try:
        return agent.run_sync(*args, **kwargs)
    finally:
        close_sync_loop()


class PydanticAIDriver:
    """The pydantic-ai driver (see ``tests/bridges/_driver.py``)."""

    name = "pydantic_ai"

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        agent = _agent(place, handlers)
        result = asyncio.run(agent.run(PROMPT)) if use_async else _sync(agent, PROMPT)
        output = result.output
        assert isinstance(output, DeferredToolRequests), output
        assert [c.tool_call_id for c in output.approvals] == ["call_4"], output
        (place.directory / "pydantic_ai.json").write_bytes(
            ModelMessagesTypeAdapter.dump_json(result.all_messages())
        )

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        history = ModelMessagesTypeAdapter.validate_json(
            (place.directory / "pydantic_ai.json").read_bytes()
        )
        agent = _agent(place, handlers)
        results = deferred_tool_results({"call_4": Decision.approve()})
        kwargs: Mapping[str, Any] = {
            "message_history": history,
            "deferred_tool_results": results,
        }
        result = (
            asyncio.run(agent.run(**kwargs)) if use_async else _sync(agent, **kwargs)
        )
        assert isinstance(result.output, str), result.output
        return result.output


DRIVER = PydanticAIDriver()
