"""The cost of ``LoggingHandler`` and ``ConsoleHandler`` per event, in one run.

Usage (from the repository root)::

    python bench/observers.py                        # this checkout's handlers
    python bench/observers.py --baseline OLD_DIR     # and a copy's, interleaved

``OLD_DIR`` holds an older ``console.py`` and ``logging.py`` (from
``langhooks/integrations/``), loaded beside this checkout's as
``langhooks.integrations._baseline_*``. Each case calls one handler method 10,000
times per round; rounds of all cases are interleaved and the median round is
reported, in ms per 10,000 calls. Exits 0 whatever the figures: a shared
machine's timings are reported, not asserted.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import io
import logging
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
from typing_extensions import override

import langhooks
from langhooks import Message, MessageDelta, ToolCall, ToolResult
from langhooks.chain import LLMChain, Tool
from langhooks.integrations import console
from langhooks.integrations import logging as logging_module
from langhooks.models import ScriptedChatModel

CALLS = 10_000


class Null(io.TextIOBase):
    """A text stream that drops what it is given."""

    @override
    def write(self, text: str) -> int:
        return len(text)


class Drop(logging.Handler):
    """A logging handler that formats nothing and keeps nothing."""

    @override
    def emit(self, record: logging.LogRecord) -> None:
        pass


def _load(directory: Path, name: str) -> Any:
    """``directory/name.py`` as a module of ``langhooks.integrations``."""
    spec = importlib.util.spec_from_file_location(
        f"langhooks.integrations._baseline_{name}", directory / f"{name}.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def cases(console_module: Any, logging_module_: Any) -> dict[str, Callable[[], None]]:
    """The timed calls, each a function making ``CALLS`` calls."""
    chain = LLMChain(ScriptedChatModel([]))
    call = ToolCall(call_id="c1", name="lookup", arguments={"q": 1})
    tool = Tool("lookup", lambda arguments, context: "x")
    result = ToolResult(tool_call_id="c1", name="lookup", content="found")
    deltas = [MessageDelta(text="word ")]
    message = Message.assistant("ok")
    quiet = logging.getLogger("bench.observers.quiet")
    quiet.setLevel(logging.WARNING)  # INFO records: not enabled
    quiet.propagate = False
    loud = logging.getLogger("bench.observers.loud")
    loud.setLevel(logging.DEBUG)
    loud.propagate = False
    loud.handlers[:] = [Drop()]
    off = logging_module_.LoggingHandler(quiet)
    on = logging_module_.LoggingHandler(loud)
    printer = console_module.ConsoleHandler(Null(), color=False)
    r = range(CALLS)

    def log_tool_off() -> None:
        method = off.on_tool_execution_started
        for _ in r:
            method(chain, call, tool)

    def log_delta_off() -> None:
        method = off.on_llm_new_delta
        for _ in r:
            method(chain, deltas)

    def log_tool_on() -> None:
        method = on.on_tool_execution_started
        for _ in r:
            method(chain, call, tool)

    def log_message_on() -> None:
        method = on.on_message_processed
        for _ in r:
            method(chain, message)

    def console_tool() -> None:
        method = printer.on_tool_execution_completed
        for _ in r:
            method(chain, call, result)

    def console_message() -> None:
        method = printer.on_message_processed
        for _ in r:
            method(chain, message)

    return {
        "logging tool event, INFO off": log_tool_off,
        "logging delta, DEBUG off": log_delta_off,
        "logging tool event, on": log_tool_on,
        "logging message event, on": log_message_on,
        "console tool event": console_tool,
        "console message event": console_message,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a folder of older modules")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    print(f"langhooks from {langhooks.__file__}")
    sets = {"now": cases(console, logging_module)}
    if args.baseline is not None:
        old = (_load(args.baseline, "console"), _load(args.baseline, "logging"))
        sets = {"baseline": cases(*old), **sets}
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for name in sets["now"]:
            for label, timed in sets.items():
                gc.disable()
                start = time.process_time()
                timed[name]()
                elapsed = time.process_time() - start
                gc.enable()
                times.setdefault((name, label), []).append(elapsed * 1000)
    labels = list(sets)
    print(f"{'ms per 10,000 calls (median)':<34}" + "".join(f"{x:>10}" for x in labels))
    for name in sets["now"]:
        row = "".join(f"{statistics.median(times[name, x]):>10.2f}" for x in labels)
        print(f"{name:<34}{row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
