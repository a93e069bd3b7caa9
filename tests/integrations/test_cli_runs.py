"""``langhooks runs``: the inbox of a Redis or PostgreSQL run store."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from langhooks.cli import main
from langhooks.cli.runs import run

from ._store_agent import waiting_chain
from .test_run_stores import ROOT, Place, place


@pytest.fixture(params=["redis", "postgres"])
def shared(request: pytest.FixtureRequest) -> Iterator[Place]:
    """Each store kind a URL names, in turn."""
    with place(request.param) as here:
        yield here


def options(where: Place) -> list[str]:
    """--store and its namespace option for ``where``."""
    spot = "--prefix" if where.kind == "redis" else "--schema"
    return ["--store", where.url, spot, where.namespace]


def langhooks(*argv: str) -> tuple[int, str, str]:
    """Run the command line in this process: status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    parsed = (
        __import__("langhooks.cli", fromlist=["_parser"])._parser().parse_args(argv)
    )
    return run(parsed, out, err), out.getvalue(), err.getvalue()


class TestPending:
    def test_lists_waiting_runs_newest_first(
        self, shared: Place, tmp_path: Path
    ) -> None:
        """pending prints one line per waiting run, newest first, filtered by
        --metadata (JSON values or text)."""
        store = shared.make()
        older = store.save(
            waiting_chain(tmp_path / "a", calls=2), metadata={"tenant": "a", "n": 1}
        )
        newer = store.save(waiting_chain(tmp_path / "b"), metadata={"tenant": "b"})
        status, out, err = langhooks("runs", "pending", *options(shared))
        assert (status, err) == (0, "")
        lines = out.splitlines()
        assert [line.split()[0] for line in lines[:2]] == [newer, older]
        assert "2 call(s): book, book" in lines[1]
        assert '"tenant": "a"' in lines[1]
        assert lines[-1] == "2 run(s) waiting"
        status, out, _ = langhooks(
            "runs",
            "pending",
            *options(shared),
            "--metadata",
            "tenant=a",
            "--metadata",
            "n=1",
            "--limit",
            "5",
        )
        assert status == 0
        assert out.splitlines()[0].startswith(older)
        assert out.splitlines()[-1] == "1 run(s) waiting"

    def test_a_store_that_cannot_be_read_is_exit_1(self) -> None:
        """A store that is not set up (or not reachable) is one line and exit 1."""
        with place("postgres") as here:
            status, out, err = langhooks("runs", "pending", *options(here))
        assert (status, out) == (1, "")
        assert err.count("\n") == 1
        assert "pass --schema SCHEMA" in err


class TestShow:
    def test_prints_a_waiting_run(self, shared: Place, tmp_path: Path) -> None:
        """show prints the run, when it was saved, its metadata and each waiting
        call with its arguments."""
        store = shared.make()
        run_id = store.save(
            waiting_chain(tmp_path / "log", calls=2),
            metadata={"tenant": "a"},
            expires_in=3600,
        )
        status, out, err = langhooks("runs", "show", run_id, *options(shared))
        assert (status, err) == (0, "")
        lines = out.splitlines()
        assert lines[0] == f"run {run_id}"
        assert lines[1].startswith("  saved    ")
        assert lines[2].startswith("  expires  ")
        assert lines[3] == '  metadata {"tenant": "a"}'
        assert lines[4] == '  call_1  book {"seconds": 0.0}'
        plain = store.save(waiting_chain(tmp_path / "log"))  # no metadata
        status, out, _ = langhooks("runs", "show", plain, *options(shared))
        assert status == 0
        assert "metadata" not in out
        assert ("expires" in out) is (shared.kind == "redis")  # Redis: expire_after

    def test_a_run_that_does_not_wait_is_exit_1(self, shared: Place) -> None:
        """An unknown run is one line and exit 1."""
        shared.make()  # sets the store up
        status, out, err = langhooks("runs", "show", "nope", *options(shared))
        assert (status, out) == (1, "")
        assert "does not wait for a decision" in err


class TestUsage:
    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            (["runs"], "say what to do"),
            (["runs", "pending"], "--store URL is required"),
            (["runs", "pending", "--store", "http://x"], "redis:// or postgresql://"),
            (["runs", "pending", "--store", "redis://x", "--limit", "0"], "--limit"),
            (
                ["runs", "pending", "--store", "redis://x", "--metadata", "x"],
                "KEY=VALUE",
            ),
        ],
    )
    def test_usage_errors_are_one_line_and_exit_2(
        self, argv: list[str], message: str
    ) -> None:
        """A bad or missing option is one line on stderr and exit 2."""
        status, out, err = langhooks(*argv)
        assert (status, out) == (2, "")
        assert err.count("\n") == 1
        assert message in err

    def test_is_a_command_of_langhooks(self) -> None:
        """`python -m langhooks runs pending --store ...` runs the command."""
        done = subprocess.run(
            [sys.executable, "-m", "langhooks", "runs", "pending", "--store", "x://"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr.startswith("langhooks runs: --store takes")
        assert main(["runs"]) == 2
