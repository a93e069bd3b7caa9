"""``langhooks events FILE``: print a recording, one line per event.

The lines look like ``langhooks demo``'s: the event name padded to a column, then
what it carried; consecutive streamed pieces of one kind share a line::

    run 3f2a9c1e
      on_run_start                 2 message(s)
      on_llm_call_start            ScriptedChatModel, 2 message(s), 1 tool(s)
      on_llm_new_delta             thinking: 'The user asks about rain in Paris.'
      on_tool_call_review          get_weather {"city": "Paris"}
      on_run_complete              status interrupted

An event's line is its ``recorded`` row in ``integrations/_event_lines.py``; an
event without one (a newer event too) shows its recorded arguments as
``name=JSON``.

Text that came from a model or a tool is shown escaped (``repr`` for text, JSON
for data), as ``langhooks replay`` shows it, so a recording cannot drive the
terminal. Exit status: 0 when the recording was read, 2 when the file cannot be
read, holds no records (an empty file), or is not a recording: a line that is not a
record, or a record whose payload is not what its event records (the message gives
the line number). A last line that does not parse (a writer stopped mid-record) is
skipped with a warning, as ``read_events`` does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any, Final, TextIO

from .._core._terminal import escaped
from .._persist._events import read_numbered_events
from .._persist._records import EventRecord
from ..integrations._event_lines import LINES, short, text

__all__ = ["add_arguments", "run"]

_WIDTH: Final = 28


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the events command's arguments."""
    parser.add_argument(
        "file", help="a recording (JSON Lines written by EventRecorder or --record)"
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Print the recording ``args.file``.

    Returns:
        0 when it was read, 2 when it cannot be read, is empty or is not a
        recording.
    """
    out = sys.stdout if out is None else out
    printer = _Printer(out)
    count = 0
    try:
        for number, record in read_numbered_events(args.file):
            count += 1
            _print(printer, record, f"{args.file}: line {number}")
    except BrokenPipeError:  # the output's reader left: main() ends quietly
        raise
    except OSError as exc:
        print(
            f"langhooks events: cannot read {args.file!r}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    except ValueError as exc:
        printer.end()
        print(f"langhooks events: {exc}", file=sys.stderr)
        return 2
    printer.end()
    if not count:
        print(
            f"langhooks events: {args.file!r} holds no event records (an empty "
            f"recording)",
            file=sys.stderr,
        )
        return 2
    return 0


def _print(printer: _Printer, record: EventRecord, where: str) -> None:
    """Print ``record``; a payload of another shape than its event records (a
    file from elsewhere, or edited) is a ValueError naming ``where``."""
    try:
        printer.record(record)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        problem = f"no {exc}" if type(exc) is KeyError else str(exc)
        raise ValueError(
            f"{where}: record {record.seq} ({record.event}) does not carry what "
            f"that event records: {problem}"
        ) from None
    except RecursionError:  # json.dumps of a value nested deeper than it can go
        raise ValueError(
            f"{where}: record {record.seq} ({record.event}) nests too deeply to show"
        ) from None


def _value(value: Any) -> Any:
    """A payload value for the generic line: tagged data shown as the data."""
    if isinstance(value, Mapping) and value.get("type") == "Mapping":
        return value["value"]
    return value


#: The line of each event that has its own (``_event_lines.LINES``' ``recorded``).
_DETAILS: Final = {
    event: lines.recorded
    for event, lines in LINES.items()
    if lines.recorded is not None
}


class _Printer:
    """Prints records; joins consecutive streamed pieces of one kind."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._run: str | None = None
        self._open: tuple[str, str] | None = None  # (event, kind) being joined
        self._pieces: list[str] = []

    def record(self, record: EventRecord) -> None:
        if record.run_id is not None and record.run_id != self._run:
            self.end()
            self._run = record.run_id
            self._out.write(escaped(f"run {record.run_id}") + "\n")
        for kind, piece in _pieces(record):
            if self._open != (record.event, kind):
                self.end()
                self._open = (record.event, kind)
            self._pieces.append(piece)
        if not _pieces(record) or _ends_stream(record):
            self.end()
        detail = _detail(record)
        if detail is not None:
            self.line(record.event, detail)

    def line(self, event: str, detail: str) -> None:
        # Names in a recording (a tool's, a model's) are wire text too.
        line = f"  {event:<{_WIDTH}} {detail}".rstrip()
        self._out.write(escaped(line) + "\n")

    def end(self) -> None:
        """Print the streamed pieces joined so far, if any."""
        if self._open is None:
            return
        event, kind = self._open
        self.line(event, f"{kind}: {text(''.join(self._pieces))}")
        self._open = None
        self._pieces = []


def _pieces(record: EventRecord) -> list[tuple[str, str]]:
    """The streamed text a record carries, by kind."""
    payload = record.payload
    if record.event == "on_llm_new_delta":
        pieces: list[tuple[str, str]] = []
        for delta in payload["deltas"]:
            if delta["thinking"]:
                pieces.append(("thinking", delta["thinking"]))
            if delta["text"]:
                pieces.append(("text", delta["text"]))
            call = delta["tool_call"]
            if call is not None and call["partial_arguments"]:
                pieces.append((f"tool call {call['name']}", call["partial_arguments"]))
        return pieces
    if record.event == "on_partial_response":
        return [("text", payload["partial"]["text"])]
    if record.event == "on_partial_thinking":
        return [("thinking", payload["partial"]["text"])]
    if record.event == "on_partial_tool_call":
        partial = payload["partial"]
        return [(f"tool call {partial['name']}", partial["partial_arguments"])]
    return []


def _ends_stream(record: EventRecord) -> bool:
    return record.event == "on_llm_new_delta" and any(
        delta["status"] is not None for delta in record.payload["deltas"]
    )


def _detail(record: EventRecord) -> str | None:
    """The line for a record, or None for a delta that only streamed text."""
    if record.event == "on_llm_new_delta":
        ends = [d for d in record.payload["deltas"] if d["status"] is not None]
        if not ends:
            return None
        usage = ends[-1]["usage"]
        tokens = (
            ""
            if usage is None
            else f" (tokens in {usage['input_tokens']}, out {usage['output_tokens']})"
        )
        return f"stream {ends[-1]['status']}{tokens}"
    if _pieces(record):
        return None
    show = _DETAILS.get(record.event)
    if show is not None:
        return show(record.payload)
    # An event this command has no line for (a newer one): its arguments as data.
    return " ".join(
        f"{name}={short(_value(value))}"
        for name, value in record.payload.items()
        if name != "chain"
    )
