"""What observing an agent run costs: OpenTelemetry, an event recording, or both.

Usage (from the repository root)::

    python bench/observed_turn.py            # about half a minute
    python bench/observed_turn.py --quick    # a smoke run
    python bench/observed_turn.py --profile recorder   # a cProfile of one case

The workload is an agent run of ``TURNS`` model turns on ``ScriptedChatModel``, each
turn streaming a sentence of text and two tool calls (both tools run and answer),
then a final answer. Four cases run it, their rounds interleaved in one process
(``_harness.measure``: timeit-style rounds on this thread's CPU clock, median of
the per-round ratios):

- ``bare``: no handler;
- ``otel``: ``OpenTelemetryHandler`` with the real SDK (a ``TracerProvider`` with a
  ``SimpleSpanProcessor`` into an ``InMemorySpanExporter``, cleared after each run,
  and a ``MeterProvider`` with an ``InMemoryMetricReader``);
- ``recorder``: ``EventRecorder`` to a file (a path sink, opened once, in a
  temporary directory);
- ``both``: the two together.

``--cases all`` adds, for reference, the same spans written by hand against the SDK
(``otel_hand_made``), the handler with a ``BatchSpanProcessor`` (``otel_batch``),
and two floors under any recorder: a handler that receives every chain event and
does nothing (``floor_events``), and one that for every event also takes a lock,
numbers the record, reads the clock and writes a fixed line of a record's average
size to the file (``floor_write``: a record with no content made).

Figures are microseconds per model turn; ratios are to ``bare``. Goals: recorder
at most 1.5x, OpenTelemetry at most 1.3x, both at most 1.8x.

Exits 0 whatever the figures: a shared machine's timings are reported, not asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import _harness
import otel
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from typing_extensions import override

import langhooks
from langhooks import ChainCallbackHandler, Tool, ToolCall
from langhooks.chain import LLMChain
from langhooks.events import EventRecorder
from langhooks.integrations.opentelemetry import OpenTelemetryHandler
from langhooks.models import ScriptedChatModel, ScriptedTurn

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "observed_turn.json"
TURNS = 20
CASES = ("bare", "otel", "recorder", "both")
#: Shown for reference: the same spans and metrics written by hand against the same
#: SDK (``otel.HandMadeSpans``), the handler's exact output through the cheapest SDK
#: calls (``otel.FloorSpans``: the SDK's own cost, the floor for ``otel``), the same
#: three spans a turn with no attributes or metrics (``otel.BareSpans``), the
#: handler with a ``BatchSpanProcessor`` (spans exported from its thread), and the
#: floors under a recorder (``EveryEvent``, ``FixedLines``).
EXTRA = (
    "otel_hand_made",
    "otel_floor",
    "otel_bare_spans",
    "otel_batch",
    "floor_events",
    "floor_write",
)
GOALS: Mapping[str, float] = {"otel": 1.3, "recorder": 1.5, "both": 1.8}


def script(turns: int) -> list[ScriptedTurn]:
    """``turns`` turns of text and two tool calls, then a final answer."""
    out = [
        ScriptedTurn(
            text="Let me check both.",
            tool_calls=[
                ToolCall(
                    call_id=f"call-{turn}-{tool}",
                    name=tool,
                    arguments={"turn": turn, "query": "weather in Paris"},
                    index=position,
                )
                for position, tool in enumerate(("lookup", "compute"))
            ],
            usage=langhooks.TokenUsage(input_tokens=100, output_tokens=20),
        )
        for turn in range(turns)
    ]
    out.append(ScriptedTurn(text="All done: take an umbrella."))
    return out


def _ignore(self: ChainCallbackHandler, *args: Any) -> None:
    """Receive an event and do nothing."""


class EveryEvent(ChainCallbackHandler):
    """A handler of every chain event that does nothing: what any recorder pays to
    be called for each event."""

    locals().update(dict.fromkeys(ChainCallbackHandler._langhooks_own_events, _ignore))


#: A record's text without its number and time: the average size of this run's.
_FIXED_LINE = '"type":"EventRecord","payload":"' + "x" * 520 + '"}\n'


def _write_fixed(self: FixedLines, *args: Any) -> None:
    """Number the record, read the clock, write a line of the average size."""
    with self.lock:
        seq = self.seq
        self.file.write(f'{{"seq":{seq},"time":{time.time_ns()},{_FIXED_LINE}')
        self.seq = seq + 1


class FixedLines(ChainCallbackHandler):
    """A recorder with no content: for every event, what ``EventRecorder`` does
    besides making the record's text (a lock, a number, the time, a line of the
    average size written to the file, flushed when the run ends)."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115  # close()
        self.lock = threading.Lock()
        self.seq = 0

    def close(self) -> None:
        """Close the file."""
        self.file.close()

    locals().update(
        dict.fromkeys(ChainCallbackHandler._langhooks_own_events, _write_fixed)
    )

    @override
    def on_run_complete(self, *args: Any) -> None:
        _write_fixed(self, *args)
        self.file.flush()


class Observers:
    """The handlers of each case, made once and reused by every run."""

    def __init__(self, directory: str) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        meter = MeterProvider(metric_readers=[InMemoryMetricReader()])
        self.otel = OpenTelemetryHandler(tracer_provider=provider, meter_provider=meter)
        self.hand_made = otel.HandMadeSpans(provider, meter)
        self.floor = otel.FloorSpans(provider, meter)
        self.bare_spans = otel.BareSpans(provider)
        self.batch_exporter = InMemorySpanExporter()
        batched = TracerProvider()
        batched.add_span_processor(BatchSpanProcessor(self.batch_exporter))
        self.batch_provider = batched
        self.otel_batch = OpenTelemetryHandler(
            tracer_provider=batched, meter_provider=meter
        )
        self.paths = {
            name: os.path.join(directory, f"{name}.jsonl")
            for name in ("recorder", "both", "floor_write")
        }
        self.recorders = {
            name: EventRecorder(self.paths[name]) for name in ("recorder", "both")
        }
        self.every_event = EveryEvent()
        self.fixed_lines = FixedLines(self.paths["floor_write"])

    def handlers(self, case: str) -> list[ChainCallbackHandler]:
        """The handlers ``case`` runs with."""
        if case == "bare":
            return []
        if case == "otel":
            return [self.otel]
        if case == "recorder":
            return [self.recorders["recorder"]]
        if case == "otel_hand_made":
            return [self.hand_made]
        if case == "otel_floor":
            return [self.floor]
        if case == "otel_bare_spans":
            return [self.bare_spans]
        if case == "otel_batch":
            return [self.otel_batch]
        if case == "floor_events":
            return [self.every_event]
        if case == "floor_write":
            return [self.fixed_lines]
        return [self.otel, self.recorders["both"]]

    def after_run(self) -> None:
        """Drop the exported spans (the exporter would keep them all)."""
        self.exporter.clear()
        self.batch_exporter.clear()

    def close(self) -> None:
        """Close the recorders' files."""
        for recorder in self.recorders.values():
            recorder.close()
        self.fixed_lines.close()
        self.batch_provider.shutdown()


def make_run(
    turns: int, handlers: Sequence[ChainCallbackHandler], after: Callable[[], None]
) -> Callable[[], None]:
    """One scripted ``turns``-turn run with two tool calls a turn."""
    tools = [
        Tool(name, lambda arguments, context: "sunny, 21 degrees")
        for name in ("lookup", "compute")
    ]
    turns_script = script(turns)
    question = langhooks.Message.user("What is the weather in Paris?")

    def run() -> None:
        chain = LLMChain(
            ScriptedChatModel(turns_script), tools=tools, callbacks=handlers
        )
        result = chain.add_message(question).run(max_runs=turns + 1)
        assert result.status == "ok", result.error
        after()

    return run


def profile(case: str, observers: Observers, turns: int, runs: int) -> None:
    """Print a cProfile of ``runs`` runs of ``case``, by own time and cumulative."""
    run = make_run(turns, observers.handlers(case), observers.after_run)
    run()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        run()
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(40)


def main(argv: Sequence[str] | None = None) -> int:
    """Time the four cases and print (and save) the table.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--profile", choices=CASES + EXTRA)
    parser.add_argument(
        "--cases", choices=("main", "all"), default="all", help="main: the four cases"
    )
    parser.add_argument("--profile-runs", type=int, default=50)
    chosen, rest = parser.parse_known_args(args)
    settings = _harness.parse_settings(
        "Time an agent run bare, with OpenTelemetry, with an EventRecorder, and both.",
        DEFAULT_JSON,
        rest,
    )
    turns = 5 if settings.quick else TURNS
    with tempfile.TemporaryDirectory() as directory:
        observers = Observers(directory)
        try:
            if chosen.profile is not None:
                profile(chosen.profile, observers, turns, chosen.profile_runs)
                return 0
            cases = [
                _harness.Case(
                    name,
                    make_run(turns, observers.handlers(name), observers.after_run),
                    turns,
                )
                for name in (CASES if chosen.cases == "main" else CASES + EXTRA)
            ]
            load = os.getloadavg()
            print(
                f"{settings.rounds} rounds of >= {settings.min_round_s * 1000:.0f} ms;"
                f" {turns}-turn runs; load average {load[0]:.2f} {load[1]:.2f} "
                f"{load[2]:.2f}",
                file=sys.stderr,
            )
            results = _harness.measure(
                cases, settings, progress=lambda note: print(note, file=sys.stderr)
            )
            bare = results["bare"]
            rows = []
            for name in results:
                result = results[name]
                low, high = result.spread
                goal = GOALS.get(name)
                rows.append(
                    (
                        name,
                        f"{result.median / 1000:.0f}",
                        f"{low / 1000:.0f}-{high / 1000:.0f}",
                        f"{result.ratio(bare):.2f}",
                        "" if goal is None else f"<= {goal}",
                    )
                )
            print(
                _harness.format_table(
                    ("case", "us/turn", "spread", "x bare", "goal"), rows
                )
            )
            sizes = {
                name: os.path.getsize(path) for name, path in observers.paths.items()
            }
            print(f"recording sizes so far (bytes): {sizes}", file=sys.stderr)
            print(
                "load average after: "
                + " ".join(f"{value:.2f}" for value in os.getloadavg()),
                file=sys.stderr,
            )
            if settings.json_path is not None:
                payload: Mapping[str, Any] = {
                    "machine": _harness.machine_info(),
                    "turns": turns,
                    "load_average": load,
                    "ratios": {name: results[name].ratio(bare) for name in results},
                    "results": {
                        name: result.as_json() for name, result in results.items()
                    },
                }
                _harness.save_json(settings.json_path, payload)
                print(f"saved {settings.json_path}", file=sys.stderr)
        finally:
            observers.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
