"""The dispatch hot path against its targets (issue 2), in one run.

Usage (from the repository root)::

    python bench/dispatch.py            # about 15 seconds
    python bench/dispatch.py --quick    # a smoke run

Each case delivers the same stream of token partials to handlers that count them.
Ratios are medians over interleaved rounds; see ``_harness.py`` for the method and
``docs/guide/performance.md`` for what each figure means. Exits 0 whatever the
figures: a shared machine's timings are reported, not asserted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import _harness


def main(argv: Sequence[str] | None = None) -> int:
    """Run the dispatch benchmark and print (and optionally save) the targets.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status (0).
    """
    settings = _harness.parse_settings(
        "Time langhooks' dispatch hot path against its targets.", None, argv
    )
    workload = _harness.Workload(settings.events)
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
