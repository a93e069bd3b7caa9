"""What the LangChain bridge costs a run (issue 33), in one process.

Usage (from the repository root)::

    python bench/bridges.py            # about a minute
    python bench/bridges.py --quick    # a smoke run

Timed with ``_harness.measure`` (interleaved rounds, median of paired ratios; see
``_harness.py`` and ``docs/performance.md``): the same ``create_agent`` run (a
streaming scripted model, ``TURNS`` turns of one tool call each, then an answer)

- with no callbacks at all (the baseline);
- with a no-op LangChain ``BaseCallbackHandler`` (what any callback costs);
- through ``LangHooksCallbackHandler`` with a langhooks handler that counts the
  streamed deltas and tool results;
- through ``LangHooksMiddleware`` with the same handler (review included: the
  handler allows every call), and with a no-op middleware that has the same hooks
  (the graph's extra nodes cost by themselves).

Goal: a bridged run at most 1.2x the run with no callbacks. Exits 0 whatever the
figures: a shared machine's timings are reported, not asserted.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import _harness
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool
from typing_extensions import override

from langhooks import ChainCallbackHandler, MessageDelta, ToolCall, ToolResult
from langhooks.integrations.langchain import (
    LangHooksCallbackHandler,
    LangHooksMiddleware,
)
from tests.bridges._langchain_model import ScriptedChatModel
from tests.bridges._script import Turn

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bridges.json"
TURNS = 10
_TEXT = "Let me look that up for you, one moment please."


@tool
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


class NoOp(BaseCallbackHandler):
    """LangChain's own callback interface, every method its no-op."""


class NoOpMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware with LangHooksMiddleware's hooks, each doing nothing: what the
    graph's extra nodes and wrappers cost by themselves."""

    @override
    def before_agent(self, state: AgentState[Any], runtime: Any) -> None:
        return None

    @override
    def after_agent(self, state: AgentState[Any], runtime: Any) -> None:
        return None

    @override
    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    @override
    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


def _turns(turns: int) -> list[Turn]:
    script = [
        Turn(
            text=_TEXT,
            calls=(ToolCall(call_id=f"c{t}", name="lookup", arguments={"turn": t}),),
        )
        for t in range(turns)
    ]
    return [*script, Turn(text="All done.")]


def case(
    name: str,
    turns: int,
    *,
    callbacks: Sequence[BaseCallbackHandler] = (),
    middleware: Sequence[Any] = (),
) -> _harness.Case:
    """A case: one scripted ``turns``-turn agent run (ns per model turn)."""
    model = ScriptedChatModel(turns=_turns(turns), streaming=True)
    agent = create_agent(model, [lookup], middleware=list(middleware))
    config: Any = {"callbacks": list(callbacks), "recursion_limit": 4 * turns + 10}
    question: Any = {"messages": [{"role": "user", "content": "go"}]}

    def run() -> None:
        result = agent.invoke(question, config)
        assert result["messages"][-1].content == "All done."

    return _harness.Case(name, run, turns + 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print (and save) the figures.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0.
    """
    settings = _harness.parse_settings(
        "Time a LangChain agent run bridged to langhooks against the bare run.",
        DEFAULT_JSON,
        argv,
    )
    turns = 3 if settings.quick else TURNS
    cases = [
        case("bare", turns),
        case("noop_callback", turns, callbacks=[NoOp()]),
        case(
            "callback_handler", turns, callbacks=[LangHooksCallbackHandler(Counting())]
        ),
        case("noop_middleware", turns, middleware=[NoOpMiddleware()]),
        case("middleware", turns, middleware=[LangHooksMiddleware(Counting())]),
    ]
    print(
        f"{settings.rounds} rounds of >= {settings.min_round_s * 1000:.0f} ms; "
        f"{turns}-turn agent runs",
        file=sys.stderr,
    )
    results = _harness.measure(
        cases, settings, progress=lambda note: print(note, file=sys.stderr)
    )
    targets = (
        _harness.Target(
            "LangHooksCallbackHandler vs no callbacks (ns per model turn)",
            "callback_handler",
            "bare",
            1.2,
        ),
        _harness.Target(
            "LangHooksMiddleware vs no middleware (ns per model turn)",
            "middleware",
            "bare",
            1.2,
        ),
        _harness.Target(
            "LangHooksMiddleware vs a no-op middleware with the same hooks",
            "middleware",
            "noop_middleware",
            1.2,
        ),
        _harness.Target(
            "a no-op BaseCallbackHandler vs no callbacks (for comparison)",
            "noop_callback",
            "bare",
            1.2,
        ),
    )
    print(
        _harness.format_table(
            _harness.TARGET_HEADERS, [target.row(results) for target in targets]
        )
    )
    bridged, noop = results["callback_handler"], results["noop_callback"]
    print(
        f"\nLangHooksCallbackHandler vs a no-op BaseCallbackHandler: "
        f"{bridged.ratio(noop):.2f}x"
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
