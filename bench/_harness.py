"""What the benchmark scripts share: the workload, the timer and the reports.

Both ``dispatch.py`` and ``peers.py`` time *cases*: a callable that delivers the same
workload (``events`` token partials) once. A case is timed timeit-style: it is run
``number`` times per round (``number`` chosen once so that a round lasts at least
``min_round_s``), with the garbage collector off during a round, for several rounds,
on this thread's CPU-time clock (``--wall-clock`` for the wall clock).
Rounds of all the cases of one comparison are interleaved, so a slow patch of the
shared machine slows every case alike instead of one. A result is the median time
per event over the rounds, with the fastest and the slowest round as its spread; a
ratio is the median of the per-round ratios.

Not part of the package and never run by the test suite: timings on a shared
machine are not assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
from typing_extensions import override

import langhooks
from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChatResponse,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from langhooks._core import _invocation

__all__ = [
    "FLOORS",
    "TARGETS",
    "TARGET_HEADERS",
    "AsyncCountingHandler",
    "Case",
    "CountingHandler",
    "IdleHandler",
    "Result",
    "Settings",
    "Target",
    "Workload",
    "floor_rows",
    "format_table",
    "machine_info",
    "measure",
    "parse_settings",
    "save_json",
    "target_cases",
]

# --- the workload -----------------------------------------------------------------


class CountingHandler(StreamingChatResponseHandler):
    """A handler doing the least realistic work for a token: counting it."""

    def __init__(self) -> None:
        self.n = 0

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.n += 1


class AsyncCountingHandler(AsyncStreamingChatResponseHandler):
    """The async twin of ``CountingHandler``."""

    def __init__(self) -> None:
        self.n = 0

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.n += 1


class IdleHandler(StreamingChatResponseHandler):
    """A handler registered for another event: a composite never calls it for
    partials."""

    def __init__(self) -> None:
        self.responses = 0

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        self.responses += 1


@dataclass(frozen=True)
class Workload:
    """``events`` token partials of one stream, built once and shared by all cases."""

    events: int
    partials: tuple[PartialResponse, ...] = field(init=False)
    context: PartialResponseContext = field(init=False)

    def __post_init__(self) -> None:
        # Token-sized texts (~4 characters), as a model streams them.
        words = ("The ", "quick", " brow", "n fox", " jump", "s ove", "r the", " dog")
        partials = tuple(
            PartialResponse(text=words[i % len(words)]) for i in range(self.events)
        )
        object.__setattr__(self, "partials", partials)
        object.__setattr__(
            self, "context", PartialResponseContext(handle=StreamingHandle())
        )

    def limit(self, methods: Sequence[Callable[..., object]]) -> Callable[[], None]:
        """The physical limit: a plain loop over a precomputed tuple of bound
        methods."""
        partials, context, fixed = self.partials, self.context, tuple(methods)

        def run() -> None:
            for partial in partials:
                for method in fixed:
                    method(partial, context)

        return run

    def through(self, handler: StreamingChatResponseHandler) -> Callable[[], None]:
        """Each partial delivered as a stream driver does:
        ``handler.on_partial_response(partial, context)``."""
        partials, context = self.partials, self.context

        def run() -> None:
            for partial in partials:
                handler.on_partial_response(partial, context)

        return run

    def async_limit(
        self, methods: Sequence[Callable[..., Awaitable[object]]]
    ) -> Callable[[], Awaitable[None]]:
        """The async limit: a plain loop awaiting each bound method in turn."""
        partials, context, fixed = self.partials, self.context, tuple(methods)

        async def run() -> None:
            for partial in partials:
                for method in fixed:
                    await method(partial, context)

        return run

    def async_through(
        self, handler: AsyncStreamingChatResponseHandler
    ) -> Callable[[], Awaitable[None]]:
        """Each partial awaited as an async stream driver does."""
        partials, context = self.partials, self.context

        async def run() -> None:
            for partial in partials:
                await handler.on_partial_response(partial, context)

        return run


# --- timing -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One thing to time.

    Attributes:
        name: a unique key (also the JSON key).
        run: delivers the workload once; for an async case, returns an awaitable.
        events: how many events one ``run`` delivers (for the time per event).
        is_async: whether ``run`` returns an awaitable to run on the event loop.
    """

    name: str
    run: Callable[[], object]
    events: int
    is_async: bool = False


@dataclass(frozen=True)
class Result:
    """The timing of one case: nanoseconds per event, one sample per round."""

    name: str
    samples: tuple[float, ...]
    number: int
    events: int

    @property
    def median(self) -> float:
        """The median nanoseconds per event over the rounds."""
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        """The fastest and the slowest round, in nanoseconds per event."""
        return min(self.samples), max(self.samples)

    def ratio(self, baseline: Result) -> float:
        """The median, over rounds, of this case's time over ``baseline``'s.

        Both were timed in the same rounds (see ``measure``), so each round gives
        a paired ratio: a burst of load from another process slows both sides
        of a pair alike, and the median discards the rounds it hit unevenly.
        """
        return statistics.median(
            mine / theirs
            for mine, theirs in zip(self.samples, baseline.samples, strict=True)
        )

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        low, high = self.spread
        return {
            "median_ns_per_event": round(self.median, 2),
            "min_ns_per_event": round(low, 2),
            "max_ns_per_event": round(high, 2),
            "rounds": len(self.samples),
            "runs_per_round": self.number,
            "events_per_run": self.events,
        }


@dataclass(frozen=True)
class Settings:
    """Command-line settings both scripts take."""

    rounds: int
    min_round_s: float
    events: int
    quick: bool
    json_path: Path | None
    wall_clock: bool = False

    @property
    def clock(self) -> Callable[[], int]:
        """The clock rounds are timed with, in nanoseconds.

        By default the CPU time of this thread: on a shared machine the wall clock
        also counts the time the scheduler gives other processes, which is noise
        here (the benchmark is single-threaded; asyncio runs in the same thread).
        """
        return time.perf_counter_ns if self.wall_clock else time.thread_time_ns


def parse_settings(
    description: str, default_json: Path | None, argv: Sequence[str] | None = None
) -> Settings:
    """Parse the common options (``--quick``, ``--rounds``, ``--events``,
    ``--json``).

    Args:
        description: the script's one-line description.
        default_json: where results go unless ``--json`` says otherwise (None: not
            saved unless asked).
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        The settings.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="a fast smoke run (few, short rounds)"
    )
    parser.add_argument("--rounds", type=int, help="rounds per case (default 15)")
    parser.add_argument(
        "--events", type=int, default=1000, help="token partials per stream"
    )
    parser.add_argument(
        "--wall-clock",
        action="store_true",
        help="time rounds with the wall clock instead of this thread's CPU time",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=default_json,
        help=f"where to save the results (default {default_json})",
    )
    args = parser.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (3 if args.quick else 15)
    if rounds < 1 or args.events < 1:
        parser.error("--rounds and --events must be at least 1")
    return Settings(
        rounds=rounds,
        min_round_s=0.005 if args.quick else 0.02,
        events=args.events,
        quick=args.quick,
        json_path=args.json,
        wall_clock=args.wall_clock,
    )


def _once(
    case: Case, number: int, runner: asyncio.Runner, clock: Callable[[], int]
) -> int:
    """Nanoseconds for ``number`` runs of ``case``, with the collector off."""
    run = case.run
    if case.is_async:

        async def timed() -> int:
            start = clock()
            for _ in range(number):
                await run()  # type: ignore[misc]  # is_async: run returns an awaitable
            return clock() - start

        gc.collect()
        gc.disable()
        try:
            return runner.run(timed())
        finally:
            gc.enable()
    gc.collect()
    gc.disable()
    try:
        start = clock()
        for _ in range(number):
            run()
        return clock() - start
    finally:
        gc.enable()


def _calibrate(
    case: Case, min_round_s: float, runner: asyncio.Runner, clock: Callable[[], int]
) -> int:
    """How many runs make a round last at least ``min_round_s`` (timeit's
    autorange)."""
    _once(case, 1, runner, clock)  # warm up: first-call costs are not what is measured
    number = 1
    while True:
        elapsed = _once(case, number, runner, clock)
        if elapsed >= min_round_s * 1e9:
            return number
        number *= 2 if elapsed * 4 >= min_round_s * 1e9 else 8


def measure(
    cases: Iterable[Case],
    settings: Settings,
    *,
    progress: Callable[[str], object] | None = None,
) -> dict[str, Result]:
    """Time every case, with their rounds interleaved.

    Args:
        cases: what to time (unique names).
        settings: rounds and round length.
        progress: called with a short note as work proceeds (e.g. ``print``).

    Returns:
        The results by case name, in the order given.

    Raises:
        ValueError: two cases share a name.
    """
    chosen = list(cases)
    names = [case.name for case in chosen]
    if len(set(names)) != len(names):
        raise ValueError(f"case names must be unique: {names}")
    samples: dict[str, list[float]] = {name: [] for name in names}
    with asyncio.Runner() as runner:
        numbers = {
            case.name: _calibrate(case, settings.min_round_s, runner, settings.clock)
            for case in chosen
        }
        for round_index in range(settings.rounds):
            if progress is not None:
                progress(f"round {round_index + 1}/{settings.rounds}")
            # Rotate the order so no case always runs right after the same other.
            shift = round_index % len(chosen)
            for case in chosen[shift:] + chosen[:shift]:
                number = numbers[case.name]
                elapsed = _once(case, number, runner, settings.clock)
                samples[case.name].append(elapsed / (number * case.events))
    return {
        case.name: Result(
            name=case.name,
            samples=tuple(samples[case.name]),
            number=numbers[case.name],
            events=case.events,
        )
        for case in chosen
    }


# --- reports ----------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table (readable as plain text too)."""
    text_rows = [[str(cell) for cell in row] for row in rows]
    widths = [
        max(len(headers[i]), *(len(row[i]) for row in text_rows))
        if text_rows
        else len(headers[i])
        for i in range(len(headers))
    ]

    def line(cells: Sequence[str]) -> str:
        padded = (c.ljust(w) for c, w in zip(cells, widths, strict=True))
        return "| " + " | ".join(padded) + " |"

    separator = "| " + " | ".join("-" * w for w in widths) + " |"
    return "\n".join([line(headers), separator, *(line(row) for row in text_rows)])


def machine_info() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "langhooks": langhooks.__version__,
    }


def save_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as indented JSON, creating the folder if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")


# --- the four targets (issue 2 and issue 6) ---------------------------------------


@dataclass(frozen=True)
class Target:
    """A ratio the hot path must stay under, measured in one run.

    Attributes:
        label: what is compared with what.
        subject: the case measured.
        baseline: the case it is divided by.
        goal: the largest acceptable ratio.
    """

    label: str
    subject: str
    baseline: str
    goal: float

    def row(self, results: Mapping[str, Result]) -> list[object]:
        """A table row: label, both medians, the ratio, the goal and the verdict."""
        subject, baseline = results[self.subject], results[self.baseline]
        ratio = subject.ratio(baseline)
        return [
            self.label,
            f"{subject.median:.0f}",
            f"{baseline.median:.0f}",
            f"{ratio:.2f}x",
            f"<= {self.goal}x",
            "met" if ratio <= self.goal else "MISSED",
        ]

    def as_json(self, results: Mapping[str, Result]) -> dict[str, Any]:
        """A JSON-ready verdict."""
        ratio = results[self.subject].ratio(results[self.baseline])
        return {
            "label": self.label,
            "subject": self.subject,
            "baseline": self.baseline,
            "ratio": round(ratio, 3),
            "goal": self.goal,
            "met": ratio <= self.goal,
        }


TARGET_HEADERS: tuple[str, ...] = (
    "target",
    "ns/event",
    "baseline ns/event",
    "ratio",
    "goal",
    "verdict",
)

TARGETS: tuple[Target, ...] = (
    Target(
        "composite of 3 overriding handlers vs plain loop over 3 bound methods",
        "composite_3",
        "limit_3",
        1.3,
    ),
    Target(
        "composite of 10, 1 overriding, vs one direct call",
        "composite_10_1_overriding",
        "direct_call",
        1.6,
    ),
    Target(
        "HandlerWithoutInvocation vs a plain call (no invocation current)",
        "without_invocation",
        "direct_call",
        2.0,
    ),
    Target(
        "HandlerWithoutInvocation vs a plain call (inside an invocation)",
        "without_invocation_in_run",
        "direct_call_in_run",
        2.0,
    ),
    Target(
        "async composite of 3 vs plain await loop over 3 bound methods",
        "async_composite_3",
        "async_limit_3",
        1.3,
    ),
)


def _inside_invocation(run: Callable[[], None]) -> Callable[[], None]:
    def inside() -> None:
        with langhooks.invocation("bench run"):
            run()

    return inside


def _copied_context_calls(
    workload: Workload, handler: CountingHandler, *, clear: bool
) -> Callable[[], None]:
    """The least ``HandlerWithoutInvocation``'s guarantee costs, written inline:
    each call in a fresh copy of the context (with the invocation cleared in it
    when ``clear``), and no wrapper function around it."""
    partials, context = workload.partials, workload.context
    method, copy = handler.on_partial_response, contextvars.copy_context
    set_invocation = _invocation._CURRENT.set

    def copied() -> None:
        for partial in partials:
            copy().run(method, partial, context)

    def copied_and_cleared() -> None:
        for partial in partials:
            fresh = copy()
            fresh.run(set_invocation, None)
            fresh.run(method, partial, context)

    return copied_and_cleared if clear else copied


FLOORS: tuple[tuple[str, str, str], ...] = (
    (
        "a context copy per call, inline (no invocation current)",
        "copy_floor",
        "direct_call",
    ),
    (
        "a context copy and clearing the invocation, inline (inside one)",
        "copy_clear_floor_in_run",
        "direct_call_in_run",
    ),
)


def floor_rows(results: Mapping[str, Result]) -> list[list[object]]:
    """Table rows for ``FLOORS``: label, both medians and the ratio."""
    return [
        [
            label,
            f"{results[subject].median:.0f}",
            f"{results[baseline].median:.0f}",
            f"{results[subject].ratio(results[baseline]):.2f}x",
        ]
        for label, subject, baseline in FLOORS
    ]


def target_cases(workload: Workload) -> list[Case]:
    """The cases ``TARGETS`` refer to, over ``workload``."""
    counting = [CountingHandler() for _ in range(3)]
    async_counting = [AsyncCountingHandler() for _ in range(3)]
    one_of_ten: list[StreamingChatResponseHandler] = [CountingHandler()]
    one_of_ten += [IdleHandler() for _ in range(9)]
    events = workload.events
    return [
        Case(
            "limit_3",
            workload.limit([h.on_partial_response for h in counting]),
            events,
        ),
        Case(
            "composite_3",
            workload.through(langhooks.CompositeStreamingHandler(counting)),
            events,
        ),
        Case("direct_call", workload.through(CountingHandler()), events),
        Case(
            "composite_10_1_overriding",
            workload.through(langhooks.CompositeStreamingHandler(one_of_ten)),
            events,
        ),
        Case(
            "without_invocation",
            workload.through(langhooks.HandlerWithoutInvocation(CountingHandler())),
            events,
        ),
        Case(
            "direct_call_in_run",
            _inside_invocation(workload.through(CountingHandler())),
            events,
        ),
        Case(
            "without_invocation_in_run",
            _inside_invocation(
                workload.through(langhooks.HandlerWithoutInvocation(CountingHandler()))
            ),
            events,
        ),
        Case(
            "copy_floor",
            _copied_context_calls(workload, CountingHandler(), clear=False),
            events,
        ),
        Case(
            "copy_clear_floor_in_run",
            _inside_invocation(
                _copied_context_calls(workload, CountingHandler(), clear=True)
            ),
            events,
        ),
        Case(
            "async_limit_3",
            workload.async_limit([h.on_partial_response for h in async_counting]),
            events,
            is_async=True,
        ),
        Case(
            "async_composite_3",
            workload.async_through(
                langhooks.AsyncCompositeStreamingHandler(async_counting)
            ),
            events,
            is_async=True,
        ),
    ]
