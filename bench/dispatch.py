"""The dispatch hot path against its targets (issue 2), in one run.

Usage (from the repository root)::

    python bench/dispatch.py            # about ten seconds
    python bench/dispatch.py --quick    # a smoke run
    python bench/dispatch.py --profile without_invocation_in_run   # pyinstrument

Each case delivers the same stream of token partials to handlers that count them.
Ratios are medians over interleaved rounds; see ``_harness.py`` for the method and
``docs/performance.md`` for what each figure means. Exits 0 whatever the
figures: a shared machine's timings are reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Sequence
from typing import cast

import _checkout  # noqa: F401  # this checkout's langhooks first
import _harness


def profile(case: _harness.Case, seconds: float) -> str:
    """A pyinstrument report of ``case`` run over and over for ``seconds``.

    Args:
        case: the case to profile.
        seconds: how long to keep running it.

    Returns:
        The report, as text.
    """
    from pyinstrument import Profiler

    deadline = time.perf_counter() + seconds

    async def repeat() -> None:
        while time.perf_counter() < deadline:
            await cast(Awaitable[object], case.run())

    profiler = Profiler(interval=0.0001)
    profiler.start()
    if case.is_async:
        asyncio.run(repeat())
    else:
        while time.perf_counter() < deadline:
            case.run()
    profiler.stop()
    return str(profiler.output_text(unicode=False, color=False))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the dispatch benchmark and print (and optionally save) the targets.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0, or 2 for an unknown ``--profile`` case.
    """
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--profile", metavar="CASE")
    known, rest = extra.parse_known_args(argv)
    settings = _harness.parse_settings(
        "Time langhooks' dispatch hot path against its targets. "
        "--profile CASE prints a pyinstrument profile of one case instead.",
        None,
        rest,
    )
    workload = _harness.Workload(settings.events)
    if known.profile is not None:
        cases = {case.name: case for case in _harness.target_cases(workload)}
        if known.profile not in cases:
            print(
                f"unknown case {known.profile!r}: choose one of {', '.join(cases)}",
                file=sys.stderr,
            )
            return 2
        print(profile(cases[known.profile], 1.0 if settings.quick else 3.0))
        return 0
    print(
        f"{settings.rounds} rounds of >= {settings.min_round_s * 1000:.0f} ms, "
        f"{workload.events} partials per stream",
        file=sys.stderr,
    )
    results = _harness.measure(
        _harness.target_cases(workload),
        settings,
        progress=lambda note: print(note, file=sys.stderr),
    )
    print(
        _harness.format_table(
            _harness.TARGET_HEADERS,
            [target.row(results) for target in _harness.TARGETS],
        )
    )
    print("\nWhat HandlerWithoutInvocation's guarantee costs at the least:")
    print(
        _harness.format_table(
            ("floor", "ns/event", "baseline ns/event", "ratio"),
            _harness.floor_rows(results),
        )
    )
    print()
    print(
        _harness.format_table(
            ("case", "median ns/event", "fastest", "slowest"),
            [
                [
                    result.name,
                    f"{result.median:.1f}",
                    f"{result.spread[0]:.1f}",
                    f"{result.spread[1]:.1f}",
                ]
                for result in results.values()
            ],
        )
    )
    if settings.json_path is not None:
        _harness.save_json(
            settings.json_path,
            {
                "machine": _harness.machine_info(),
                "settings": {"rounds": settings.rounds, "events": settings.events},
                "targets": [target.as_json(results) for target in _harness.TARGETS],
                "cases": {name: r.as_json() for name, r in results.items()},
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
