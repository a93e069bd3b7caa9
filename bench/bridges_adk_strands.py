"""What the Google ADK and Strands bridges cost a run (issue 35), in one process.

Usage (from the repository root)::

    python bench/bridges_adk_strands.py            # about a minute
    python bench/bridges_adk_strands.py --quick    # a smoke run

Timed with ``_harness.measure`` (interleaved rounds, median of paired ratios; see
``_harness.py`` and ``docs/performance.md``): the same run of each framework (a
streaming scripted model, ``TURNS`` turns of one tool call each, then an answer)

- with nothing attached (the baseline);
- with a no-op plugin / hook provider that registers the same callbacks (what
  the framework's own callback machinery costs);
- through ``LangHooksPlugin`` / ``LangHooksHookProvider`` with a langhooks handler
  that counts the streamed deltas and tool results (review included: the handler
  allows every call).

Goal: a bridged run at most 1.2x the run with nothing attached. Exits 0 whatever
the figures: a shared machine's timings are reported, not asserted.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import _harness
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.run_config import (  # type: ignore[attr-defined]  # ADK's documented import
    RunConfig,
    StreamingMode,
)
from google.adk.apps import App
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import InMemoryRunner
from google.adk.tools.function_tool import FunctionTool
from google.genai import types
from opentelemetry.instrumentation.threading import ThreadingInstrumentor
from strands import Agent
from strands.hooks import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterToolCallEvent,
    AfterToolsEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    BeforeToolsEvent,
    HookRegistry,
)
from strands.tools.decorator import tool
from typing_extensions import override

from langhooks import ChainCallbackHandler, MessageDelta, ToolCall, ToolResult
from langhooks.integrations.google_adk import LangHooksPlugin
from langhooks.integrations.strands import LangHooksHookProvider
from tests.bridges._adk_model import ScriptedGemini
from tests.bridges._script import Turn
from tests.bridges._strands_model import ScriptedStrandsModel

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bridges_adk_strands.json"
TURNS = 10
_TEXT = "Let me look that up for you, one moment please."


def lookup(turn: int) -> str:
    """Look something up."""
    return f"result {turn}"


class Counting(ChainCallbackHandler):
    """A langhooks handler doing the least work: counting deltas and results."""

    def __init__(self) -> None:
        self.deltas = 0
        self.results = 0

    @override
    def on_llm_new_delta(self, chain: Any, deltas: Sequence[MessageDelta], /) -> None:
        self.deltas += 1

    @override
    def on_tool_execution_completed(
        self, chain: Any, call: ToolCall, result: ToolResult, /
    ) -> None:
        self.results += 1


class NoOpPlugin(BasePlugin):
    """An ADK plugin with the bridge's callbacks, each doing nothing."""

    @override
    async def before_run_callback(self, *, invocation_context: Any) -> None:
        return None

    @override
    async def before_model_callback(
        self, *, callback_context: Any, llm_request: Any
    ) -> None:
        return None

    @override
    async def after_model_callback(
        self, *, callback_context: Any, llm_response: Any
    ) -> None:
        return None

    @override
    async def before_tool_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any
    ) -> None:
        return None

    @override
    async def after_tool_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
    ) -> None:
        return None

    @override
    async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
        return None

    @override
    async def after_run_callback(self, *, invocation_context: Any) -> None:
        return None


class NoOpHooks:
    """A Strands hook provider with the bridge's events, each doing nothing."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        for event in (
            BeforeInvocationEvent,
            AfterInvocationEvent,
            BeforeModelCallEvent,
            AfterModelCallEvent,
            BeforeToolsEvent,
            BeforeToolCallEvent,
            AfterToolCallEvent,
            AfterToolsEvent,
        ):
            registry.add_callback(event, self._nothing)

    async def _nothing(self, event: Any) -> None:
        return None


def _turns(turns: int) -> list[Turn]:
    script = [
        Turn(
            text=_TEXT,
            calls=(ToolCall(call_id=f"c{t}", name="lookup", arguments={"turn": t}),),
        )
        for t in range(turns)
    ]
    return [*script, Turn(text="All done.")]


def adk_case(name: str, turns: int, plugins: Sequence[BasePlugin]) -> _harness.Case:
    """One ADK run on a new in-memory session (ns per model turn)."""
    agent = LlmAgent(
        name="bench",
        model=ScriptedGemini(turns=_turns(turns)),
        tools=[FunctionTool(lookup)],
    )
    runner = InMemoryRunner(
        app=App(name="bench", root_agent=agent, plugins=list(plugins))
    )
    config = RunConfig(streaming_mode=StreamingMode.SSE)
    message = types.UserContent("go")

    async def one() -> str:
        session = await runner.session_service.create_session(
            app_name="bench", user_id="u"
        )
        last = ""
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message, run_config=config
        ):
            if event.content and event.content.parts and not event.partial:
                last = event.content.parts[0].text or last
        return last

    def run() -> None:
        assert asyncio.run(one()) == "All done."

    return _harness.Case(name, run, turns + 1)


strands_lookup = tool(lookup)


def strands_case(name: str, turns: int, hooks: Sequence[Any]) -> _harness.Case:
    """One Strands invocation on a fresh agent (ns per model turn)."""

    def run() -> None:
        agent = Agent(
            model=ScriptedStrandsModel(_turns(turns)),
            tools=[strands_lookup],
            hooks=list(hooks),
            callback_handler=None,
        )
        assert str(agent("go")).strip() == "All done."

    return _harness.Case(name, run, turns + 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print (and save) the figures.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0.
    """
    settings = _harness.parse_settings(
        "Time ADK and Strands runs bridged to langhooks against the bare runs.",
        DEFAULT_JSON,
        argv,
    )
    turns = 3 if settings.quick else TURNS
    cases = [
        adk_case("adk_bare", turns, []),
        adk_case("adk_noop_plugin", turns, [NoOpPlugin(name="noop")]),
        adk_case("adk_bridged", turns, [LangHooksPlugin(Counting())]),
        strands_case("strands_bare", turns, []),
        strands_case("strands_noop_hooks", turns, [NoOpHooks()]),
        strands_case("strands_bridged", turns, [LangHooksHookProvider(Counting())]),
    ]
    print(
        f"{settings.rounds} rounds of >= {settings.min_round_s * 1000:.0f} ms; "
        f"{turns}-turn agent runs",
        file=sys.stderr,
    )
    results = _harness.measure(
        cases, settings, progress=lambda note: print(note, file=sys.stderr)
    )
    ThreadingInstrumentor().uninstrument()
    targets = (
        _harness.Target("LangHooksPlugin vs no plugin", "adk_bridged", "adk_bare", 1.2),
        _harness.Target(
            "LangHooksPlugin vs a no-op plugin", "adk_bridged", "adk_noop_plugin", 1.2
        ),
        _harness.Target(
            "LangHooksHookProvider vs no hooks", "strands_bridged", "strands_bare", 1.2
        ),
        _harness.Target(
            "LangHooksHookProvider vs no-op hooks",
            "strands_bridged",
            "strands_noop_hooks",
            1.2,
        ),
    )
    print(
        _harness.format_table(
            _harness.TARGET_HEADERS, [target.row(results) for target in targets]
        )
    )
    if settings.json_path is not None:
        payload: Mapping[str, Any] = {
            "machine": _harness.machine_info(),
            "turns": turns,
            "targets": [target.as_json(results) for target in targets],
            "results": {name: result.as_json() for name, result in results.items()},
        }
        _harness.save_json(settings.json_path, payload)
        print(f"saved {settings.json_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
