"""The second process of a conformance run: resume the paused run and record it.

``python -m tests.bridges._second DRIVER DIRECTORY POSTGRES THREAD sync|async``
imports ``tests.bridges.drivers.DRIVER``, resumes the run with the script's
``Reviewer`` and an ``EventRecorder`` writing ``DIRECTORY/second.jsonl``, and prints
the final answer.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from langhooks.events import EventRecorder

from ._driver import Place
from ._script import Reviewer


def main(argv: list[str]) -> None:
    name, directory, postgres, thread, mode = argv
    driver = importlib.import_module(f"tests.bridges.drivers.{name}").DRIVER
    place = Place(Path(directory), postgres, thread)
    with (place.directory / "second.jsonl").open("w") as sink:
        recorder = EventRecorder(sink)
        answer = driver.resume(place, [recorder, Reviewer()], use_async=mode == "async")
    print(answer)


if __name__ == "__main__":
    main(sys.argv[1:])
