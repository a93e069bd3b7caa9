"""Benchmark: the cost of ``import langhooks``, against its own dependencies.

Run by hand (not a test)::

    python bench/imports.py [--rounds 15]

Each round starts fresh interpreters (``python -X importtime -c ...``) and reads the
cumulative import time the interpreter itself reports, for:

- the reference: ``import attrs, typing_extensions`` (langhooks' two dependencies,
  the least any import of langhooks can cost);
- ``import langhooks``;
- ``import langhooks`` followed by defining and using a plain sync handler (what a
  user who never touches the runtime, the models or asyncio pays).

Every interpreter reads bytecode from a cache (in a temporary ``PYTHONPYCACHEPREFIX``,
warmed by one run of each import first, ``PYTHONDONTWRITEBYTECODE`` unset), as an
installed package does: otherwise langhooks, imported from a checkout, would be
compiled from source each time while its dependencies' bytecode is cached.

The runs of one round are interleaved, so a slow patch of the shared machine slows
them alike. A result is the median over the rounds; the ratio is the median of the
per-round ratios. ``--compare DIR`` also measures the langhooks found in ``DIR`` (a
checkout of another commit, or a directory holding another version's ``langhooks``)
in the same rounds: a before/after in one run. The goal is at most 1.5. It also
lists how many modules each import loads and which heavy standard-library modules
(asyncio, ssl, socket, subprocess, concurrent.futures) ``import langhooks`` pulls in.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import Final

_REFERENCE: Final = "import attrs, typing_extensions"
_LANGHOOKS: Final = "import langhooks"
_HANDLER: Final = (
    "import langhooks as lh\n"
    "class H(lh.StreamingChatResponseHandler):\n"
    "    def on_partial_response(self, partial, context): pass\n"
    "lh.CompositeStreamingHandler([H()])"
)
_HEAVY: Final = ("asyncio", "ssl", "socket", "subprocess", "concurrent.futures")


def cached_bytecode_env(prefix: str) -> dict[str, str]:
    """This process's environment, with bytecode written to and read from ``prefix``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = prefix
    return env


def import_time_us(code: str, env: Mapping[str, str] | None = None) -> int:
    """The cumulative import time, in microseconds, of ``code`` in a new interpreter.

    Only top-level imports are summed: each one's cumulative time already includes
    the modules it imported.
    """
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    # The interpreter's own start-up imports (encodings, site) come first: count
    # only the packages the code imports itself.
    names = {
        word.strip(",")
        for line in code.splitlines()
        if line.startswith("import ")
        for word in line.split()[1:]
        if word.strip(",") not in ("as", "lh")
    }
    total = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        # A nested import is indented under its importer, whose cumulative time
        # already counts it: sum the top-level lines only.
        if not name[1:].startswith(" ") and name.strip() in names:
            total += int(cumulative)
    return total


def loaded_modules(code: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The modules loaded by ``code`` beyond a bare interpreter's own."""
    probe = (
        "import sys; before = set(sys.modules)\n"
        f"{code}\n"
        "import json; print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


def main() -> None:
    """Measure, print a table, and the modules the import loads."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--compare",
        metavar="DIR",
        help="also measure the langhooks in DIR, in the same rounds",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="langhooks-pycache-") as prefix:
        env = cached_bytecode_env(prefix)
        others = {}
        if args.compare:
            path = os.pathsep.join(filter(None, [args.compare, env.get("PYTHONPATH")]))
            others[args.compare] = {**env, "PYTHONPATH": path}
        measure(args.rounds, env, others)


def measure(
    rounds: int,
    env: Mapping[str, str],
    others: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Run ``rounds`` interleaved rounds in ``env`` and print the results; also of
    the langhooks each of ``others`` (label: environment) imports."""
    cases = [
        ("import langhooks", _LANGHOOKS, env),
        ("plain sync handler", _HANDLER, env),
    ]
    for label, other in (others or {}).items():
        cases += [
            (f"import langhooks ({label})", _LANGHOOKS, other),
            (f"plain sync handler ({label})", _HANDLER, other),
        ]
    import_time_us(_REFERENCE, env)  # warm the bytecode cache
    for _, code, case_env in cases:
        import_time_us(code, case_env)
    reference: list[int] = []
    runs: dict[str, list[int]] = {name: [] for name, _, _ in cases}
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        base = import_time_us(_REFERENCE, env)
        reference.append(base)
        for name, code, case_env in cases:
            took = import_time_us(code, case_env)
            runs[name].append(took)
            ratios[name].append(took / base)
    width = max(32, *(len(name) for name in runs))
    print(f"{'what':<{width}} {'median ms':>10} {'ratio':>7}  modules")
    print(
        f"{_REFERENCE:<{width}} {statistics.median(reference) / 1000:>10.1f} "
        f"{'1.00':>7}  {len(loaded_modules(_REFERENCE))}"
    )
    for name, code, case_env in cases:
        print(
            f"{name:<{width}} {statistics.median(runs[name]) / 1000:>10.1f} "
            f"{statistics.median(ratios[name]):>7.2f}  "
            f"{len(loaded_modules(code, case_env))}"
        )
    loaded = set(loaded_modules(_LANGHOOKS))
    heavy = [name for name in _HEAVY if name in loaded]
    print(f"heavy modules loaded by import langhooks: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
