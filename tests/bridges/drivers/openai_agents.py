"""The OpenAI Agents SDK: the script on an ``Agent`` with ``LangHooksRunHooks``.

The model is the SDK's own ``agents.testing.ScriptedModel``, one step per turn
(a reasoning item, the text, the function calls; a turn that fails first is an
error step before it, retried by the SDK's runner-managed retry). The run is the
SDK's non-streamed one (``Runner.run_sync`` / ``Runner.run``; streamed partials
are tested in ``tests/bridges/test_openai_agents.py``). The paused run is its
``RunState`` as a string, resumed in the second process with ``apply_decisions``.
The SDK's tracing is off: its exporter would try the network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.bridges._support import need_module

need_module("agents", "openai-agents")

from agents import (  # noqa: E402
    Agent,
    FunctionTool,
    ModelSettings,
    RunState,
    function_tool,
    set_tracing_disabled,
)
from agents.items import TResponseOutputItem  # noqa: E402
from agents.retry import ModelRetrySettings, RetryDecision  # noqa: E402
from agents.testing import (  # noqa: E402
    ModelStep,
    ScriptedModel,
    assistant_message,
    function_call,
)
from agents.usage import Usage  # noqa: E402
from openai.types.responses import ResponseReasoningItem  # noqa: E402
from openai.types.responses.response_reasoning_item import Summary  # noqa: E402

from langhooks.chain import Decision  # noqa: E402
from langhooks.integrations.openai_agents import (  # noqa: E402
    LangHooksRunHooks,
    apply_decisions,
)

from .._driver import Place  # noqa: E402
from .._loops import close_sync_loop  # noqa: E402
from .._script import PROMPT, TURNS, Turn, script_tools  # noqa: E402

set_tracing_disabled(True)

#: The turns up to the interrupt (the first process) and after it (the second).
_PAUSE = 3


class ScriptedError(RuntimeError):
    """What a turn that fails first raises."""


def _output(turn: Turn) -> list[TResponseOutputItem]:
    items: list[TResponseOutputItem] = []
    if turn.thinking:
        items.append(
            ResponseReasoningItem(
                id="reasoning",
                type="reasoning",
                summary=[Summary(text=turn.thinking, type="summary_text")],
            )
        )
    if turn.text:
        items.append(assistant_message(turn.text))
    items.extend(
        function_call(c.name, dict(c.arguments), call_id=c.call_id) for c in turn.calls
    )
    return items


def _model(turns: Sequence[Turn]) -> ScriptedModel:
    steps: list[ModelStep] = []
    for turn in turns:
        if turn.fail_first:
            steps.append(ModelStep.raise_error(ScriptedError("scripted: slow down")))
        usage = turn.usage
        steps.append(
            ModelStep(
                output=_output(turn),
                usage=Usage(
                    requests=1,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    total_tokens=usage.total_tokens,
                ),
            )
        )
    return ScriptedModel(steps)


def _tools(ledger: Path) -> list[FunctionTool]:
    """The script's tools as the SDK's decorated functions (a raised exception
    becomes the SDK's error text for the model, as for any ``function_tool``)."""
    run = {tool.name: tool for tool in script_tools()}

    def get_weather(city: str) -> str:
        return run["get_weather"].run({"city": city}, ledger)

    def delete_file(path: str) -> str:
        return run["delete_file"].run({"path": path}, ledger)

    def transfer_money(to: str, amount: int) -> str:
        return run["transfer_money"].run({"to": to, "amount": amount}, ledger)

    def lookup_order(id: int) -> str:
        return run["lookup_order"].run({"id": id}, ledger)

    functions = (get_weather, delete_file, transfer_money, lookup_order)
    return [
        function_tool(f, description_override=run[f.__name__].description)
        for f in functions
    ]


def _retry_any(_context: Any) -> RetryDecision:
    return RetryDecision(retry=True, delay=0.0)


def _agent(place: Place, turns: Sequence[Turn]) -> Agent[Any]:
    return Agent(
        name="script",
        model=_model(turns),
        tools=list(_tools(place.ledger)),
        model_settings=ModelSettings(
            retry=ModelRetrySettings(max_retries=1, policy=_retry_any)
        ),
    )


def _run(use_async: bool, run: Callable[[], Any], arun: Callable[[], Any]) -> Any:
    if use_async:
        return asyncio.run(arun())
    try:
        return run()
    finally:
        close_sync_loop()  # the one Runner.run_sync leaves open (see _loops)


class OpenAIAgentsDriver:
    """The OpenAI Agents SDK driver (see ``tests/bridges/_driver.py``)."""

    name = "openai_agents"

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        hooks = LangHooksRunHooks(*handlers)
        agent = _agent(place, TURNS[:_PAUSE])
        result = _run(
            use_async,
            lambda: hooks.run_sync(agent, PROMPT),
            lambda: hooks.run(agent, PROMPT),
        )
        calls = [item.raw_item.call_id for item in result.interruptions]
        assert calls == ["call_4"], calls
        (place.directory / "openai_agents.json").write_text(
            result.to_state().to_string()
        )

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        hooks = LangHooksRunHooks(*handlers)
        agent = _agent(place, TURNS[_PAUSE:])
        saved = (place.directory / "openai_agents.json").read_text()

        async def load() -> RunState[Any, Any]:
            state = await RunState.from_string(hooks.install(agent), saved)
            apply_decisions(state, {"call_4": Decision.approve()})
            return state

        async def arun() -> Any:
            return await hooks.run(agent, await load())

        result = _run(
            use_async, lambda: hooks.run_sync(agent, asyncio.run(load())), arun
        )
        return str(result.final_output)


DRIVER = OpenAIAgentsDriver()
