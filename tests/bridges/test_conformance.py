"""The conformance suite: the script through LLMChain and every bridged framework.

Each driver under ``tests/bridges/drivers/`` runs the script (``_script.py``) in
this process up to the interrupt and resumes it in a second process; both
processes record the events. Every difference from LLMChain's events must be
documented in docs/guide/bridges.md, and every documented one must still be one.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langhooks.events import EventRecorder, read_events
from langhooks.integrations.langchain import BridgeWarning
from tests._services import need_postgres

from . import drivers
from ._compare import ROWS, Entry, documented, project, statuses
from ._driver import Driver, Place
from ._script import Reviewer, ledger_count

DRIVERS = sorted(
    m.name for m in pkgutil.iter_modules(drivers.__path__) if not m.name.startswith("_")
)
BRIDGED = [name for name in DRIVERS if name != "llmchain"]

#: The script's review decisions a framework cannot honour, so its bridge fails
#: closed with a ``BridgeWarning`` (documented in docs/guide/bridges.md): what the
#: warning says, per driver. Every other driver gives none.
FAILS_CLOSED = {
    "openai_agents": ["cannot run a tool call with other arguments"],
}


@pytest.fixture
def postgres() -> Iterator[str]:
    """A conninfo whose search_path is a schema of this test's own (dropped after)."""
    import psycopg

    url = need_postgres()
    schema = f"bridges_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{url}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")


def _driver(name: str) -> Driver:
    module: Any = importlib.import_module(f"{drivers.__name__}.{name}")
    driver: Driver = module.DRIVER
    return driver


def run_script(
    name: str, directory: Path, postgres: str, *, use_async: bool
) -> list[Entry]:
    """Run the script through driver ``name`` in two processes; its entries.

    Also checks what every driver must do: the run paused, resumed in another
    process to the final answer, and the approved call ran exactly once.
    """
    driver = _driver(name)
    place = Place(directory, postgres, f"thread-{uuid.uuid4().hex}")
    with (
        (directory / "first.jsonl").open("w") as sink,
        warnings.catch_warnings(record=True) as warned,
    ):
        warnings.simplefilter("always", BridgeWarning)
        driver.start(place, [EventRecorder(sink), Reviewer()], use_async=use_async)
    told = [str(w.message) for w in warned if issubclass(w.category, BridgeWarning)]
    expected = FAILS_CLOSED.get(name, [])
    assert len(told) == len(expected), told
    assert all(part in text for part, text in zip(expected, told, strict=True)), told
    assert ledger_count(place.ledger) == 0  # interrupted before it ran
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
        cwd=Path(__file__).parents[2],
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "All done."
    assert ledger_count(place.ledger) == 1  # the approved call ran once
    records = [
        *read_events(directory / "first.jsonl"),
        *read_events(directory / "second.jsonl"),
    ]
    return project(records)


_REFERENCE: dict[bool, list[Entry]] = {}


def reference(
    tmp_path_factory: pytest.TempPathFactory, postgres: str, use_async: bool
) -> list[Entry]:
    if use_async not in _REFERENCE:
        directory = tmp_path_factory.mktemp("llmchain")
        _REFERENCE[use_async] = run_script(
            "llmchain", directory, postgres, use_async=use_async
        )
    return _REFERENCE[use_async]


class TestConformance:
    """Each bridge hears the contract's events; differences are documented."""

    @pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
    @pytest.mark.parametrize("name", BRIDGED)
    def test_events_match_llmchain_or_are_documented(
        self,
        name: str,
        use_async: bool,
        tmp_path: Path,
        tmp_path_factory: pytest.TempPathFactory,
        postgres: str,
    ) -> None:
        """The framework's events equal LLMChain's but for the documented rows."""
        ours = reference(tmp_path_factory, postgres, use_async)
        theirs = run_script(name, tmp_path, postgres, use_async=use_async)
        found = statuses(ours, theirs)
        ROWS[f"{name} {'async' if use_async else 'sync'}"] = found
        differences = {(name, e): s for e, s in found.items() if s != "same"}
        docs = {k: v for k, v in documented().items() if k[0] == name}
        assert differences == docs
        # The events that are the same come in the same order.
        same = {e for e, s in found.items() if s == "same"}
        assert [x for x in theirs if x[0] in same] == [x for x in ours if x[0] in same]
