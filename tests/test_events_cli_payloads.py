"""``langhooks events`` on records whose payload is not what their event records.

A line that decodes as a record but carries a payload of another shape (a file from
elsewhere, or edited by hand) is a bad recording: exit status 2 and a message with
the line number, never a traceback. An empty file says so and exits 2.
"""

from __future__ import annotations

import datetime
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from langhooks.cli import main
from langhooks.cli.print_events import _print, _Printer
from langhooks.events import EventRecord


def line(event: str, payload: dict[str, Any], seq: int = 0) -> str:
    """A JSON Lines record of ``event`` carrying ``payload``."""
    return json.dumps(
        {
            "type": "EventRecord",
            "version": 1,
            "seq": seq,
            "event": event,
            "run_id": "r1",
            "invocation_id": "r1",
            "parent_id": None,
            "time": "2026-01-01T00:00:00+00:00",
            "payload": payload,
        }
    )


GOOD = line("on_run_start", {"chain": {"message_count": 2}})


def events(
    path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """Write ``text`` to ``path``; the exit status, stdout and stderr of
    ``langhooks events path``."""
    path.write_text(text, encoding="utf-8")
    status = main(["events", str(path)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


class TestUnexpectedPayloads:
    """Exit 2 with the line number, after printing the records before it."""

    @pytest.mark.parametrize(
        ("bad", "says"),
        [
            (line("on_run_start", {}, seq=1), "no 'chain'"),
            (line("on_error", {"chain": {}, "error": "boom"}, seq=1), "boom|str"),
            (line("on_llm_new_delta", {"deltas": [{}]}, seq=1), "no 'thinking'"),
            (line("on_llm_new_delta", {"deltas": 5}, seq=1), "int"),
            (
                line("on_some_newer_event", {"data": {"type": "Mapping"}}, seq=1),
                "no 'value'",
            ),
            (
                line("on_llm_call_complete", {"chain": {}, "response": []}, seq=1),
                "list",
            ),
        ],
        ids=[
            "empty-payload",
            "on_error-string",
            "delta-without-fields",
            "deltas-not-a-list",
            "untagged-mapping",
            "response-a-list",
        ],
    )
    def test_bad_shape(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, says: str
    ) -> None:
        """The record on line 2 has a payload of another shape: exit 2, the line
        and the record named, the good line 1 printed."""
        status, out, err = events(tmp_path / "r.jsonl", f"{GOOD}\n{bad}\n", capsys)
        assert status == 2
        assert "line 2: record 1" in err
        assert "does not carry what that event records" in err
        assert re.search(says, err)
        assert "Traceback" not in err
        assert "on_run_start                 2 message(s)" in out

    def test_deep_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A 200,000-bracket line before a good one: exit 2 naming line 1."""
        status, _, err = events(
            tmp_path / "r.jsonl", "[" * 200_000 + f"\n{GOOD}\n", capsys
        )
        assert status == 2
        assert "line 1 is not JSON" in err
        assert "nests too deeply" in err

    def test_deep_last_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A 200,000-bracket last line is skipped like a truncated one: the
        records before it are printed, exit 0."""
        status, out, _ = events(
            tmp_path / "r.jsonl", f"{GOOD}\n" + "[" * 200_000 + "\n", capsys
        )
        assert status == 0
        assert "on_run_start" in out


class TestEmpty:
    """A file without records is not a recording."""

    @pytest.mark.parametrize("text", ["", "\n\n  \n"])
    def test_empty_file(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
    ) -> None:
        """An empty (or blank) file prints nothing and exits 2 saying it holds no
        event records."""
        status, out, err = events(tmp_path / "r.jsonl", text, capsys)
        assert status == 2
        assert out == ""
        assert "holds no event records" in err


class TestTooDeepToShow:
    """A value the printer cannot serialise for its nesting is a bad record."""

    def test_deep_value(self) -> None:
        """A payload list nested deeper than the interpreter's recursion limit
        (made in Python, not parsed) is a ValueError naming where it was, never
        RecursionError."""
        deep: list[Any] = []
        for _ in range(sys.getrecursionlimit() + 100):
            deep = [deep]
        record = EventRecord(
            seq=4,
            event="on_some_newer_event",  # type: ignore[arg-type]  # a newer name
            time=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
            payload={"x": deep},
        )
        with pytest.raises(ValueError, match=r"line 9: record 4 .* too deeply"):
            _print(_Printer(io.StringIO()), record, "r.jsonl: line 9")
