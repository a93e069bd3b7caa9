"""langhooks.codec and read_events on deeply nested input: only the documented errors.

Python's ``json`` recurses once per level of nesting; text or data nested deeper
than the stack allows must give ``ValueError`` (never ``RecursionError``), and
caller data may nest ``MAX_DEPTH`` levels, whatever the caller's own stack depth.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from langhooks import Message, ToolCall, codec
from langhooks._persist._codec import MAX_DEPTH
from langhooks.chain import LLMChain
from langhooks.events import EventRecorder, read_events
from langhooks.models import ScriptedChatModel, ScriptedTurn


def nested(levels: int) -> list[Any]:
    """A list nested ``levels`` deep (``[[[...]]]``)."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def recorded_lines(tmp_path: Path) -> list[str]:
    """The lines of a short recorded run."""
    path = tmp_path / "run.jsonl"
    with EventRecorder(path) as recorder:
        chain = LLMChain(
            ScriptedChatModel([ScriptedTurn(text="Sunny.")]), callbacks=[recorder]
        )
        chain.add_message(Message.user("Weather?")).run()
    return path.read_text(encoding="utf-8").splitlines()


class TestLoads:
    """Text nested too deeply is not JSON langhooks reads: ValueError."""

    def test_hundred_thousand_brackets(self) -> None:
        """``loads('[' * 100000)`` raises ValueError saying it nests too deeply."""
        with pytest.raises(ValueError, match="nests too deeply"):
            codec.loads("[" * 100_000)

    def test_deep_but_closed_json(self) -> None:
        """A complete JSON document nested deeper than the interpreter's
        recursion limit is refused the same way."""
        depth = sys.getrecursionlimit() + 100
        with pytest.raises(ValueError, match="nests too deeply"):
            codec.loads("[" * depth + "]" * depth)


class TestDumps:
    """Caller data nests MAX_DEPTH levels at most; deeper is a ValueError."""

    def test_thousand_deep_arguments(self) -> None:
        """dumps of a call whose arguments nest 1,000 deep raises ValueError
        naming the limit."""
        call = ToolCall(call_id="c1", name="f", arguments={"x": nested(1000)})
        with pytest.raises(ValueError, match=f"nest {MAX_DEPTH} levels deep at most"):
            codec.dumps(call)

    def test_limit_is_kept_on_a_deep_stack(self) -> None:
        """Arguments exactly MAX_DEPTH deep round-trip, also when the caller is
        already 500 frames deep."""
        call = ToolCall(call_id="c1", name="f", arguments={"x": nested(MAX_DEPTH - 1)})

        def at_depth(frames: int) -> Any:
            return (
                codec.loads(codec.dumps(call)) if frames == 0 else at_depth(frames - 1)
            )

        assert at_depth(500) == call

    def test_one_level_too_deep(self) -> None:
        """Arguments one level deeper than MAX_DEPTH are refused."""
        call = ToolCall(call_id="c1", name="f", arguments={"x": nested(MAX_DEPTH)})
        with pytest.raises(ValueError, match="levels deep at most"):
            codec.dumps(call)


class TestReadEvents:
    """A deep line is a bad line: the first raises with its number, the last is
    skipped with a warning like any truncated line."""

    def test_deep_first_line(self, tmp_path: Path) -> None:
        """A 100,000-bracket first line raises ValueError naming line 1."""
        lines = ["[" * 100_000, *recorded_lines(tmp_path)]
        with pytest.raises(ValueError, match=r"line 1 is not JSON: .*nests too deeply"):
            list(read_events(lines))

    def test_deep_last_line(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A 100,000-bracket last line is skipped with a warning; every record
        before it is read."""
        good = recorded_lines(tmp_path)
        path = tmp_path / "deep.jsonl"
        path.write_text("\n".join([*good, "[" * 100_000]) + "\n", encoding="utf-8")
        with caplog.at_level(logging.WARNING, logger="langhooks"):
            records = list(read_events(path))
        assert len(records) == len(good)
        assert f"line {len(good) + 1}, the last line, is incomplete" in caplog.text
