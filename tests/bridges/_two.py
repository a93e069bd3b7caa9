"""Running a driver's script in two processes, for the bridge tests of this
folder (the conformance suite does the same for every driver)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

from langhooks.events import EventRecorder, read_events

from ._compare import Entry, project
from ._driver import Place
from ._script import Reviewer, ledger_count

__all__ = ["run_two"]

_ROOT = Path(__file__).parents[2]


def run_two(
    name: str, directory: Path, *, use_async: bool, postgres: str = ""
) -> list[Entry]:
    """Run driver ``name`` from the prompt to the interrupt here, resume it in a
    second process, check the approved call ran once; the entries of both."""
    driver: Any = importlib.import_module(f"tests.bridges.drivers.{name}").DRIVER
    place = Place(directory, postgres, "thread-1")
    with (directory / "first.jsonl").open("w") as sink:
        driver.start(place, [Reviewer(), EventRecorder(sink)], use_async=use_async)
    assert ledger_count(place.ledger) == 0
    mode = "async" if use_async else "sync"
    second = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.bridges._second",
            name,
            str(directory),
            postgres,
            place.thread,
            mode,
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=_ROOT,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "All done."
    assert ledger_count(place.ledger) == 1
    return project(
        [
            *read_events(directory / "first.jsonl"),
            *read_events(directory / "second.jsonl"),
        ]
    )
