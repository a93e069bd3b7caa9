"""``langhooks replay FILE [--format FORMAT]``: the events a recorded stream produces.

Each handler event is one line, the handler method's name (as ``langhooks demo``
and ``langhooks events`` print it) padded to a column and then its payload, so a
stream reads top to bottom in a terminal::

    on_partial_thinking     'The user is asking'
    on_partial_response     'Hello'
    on_partial_tool_call    #0 get_weather call_Qx3m '{"ci'
    on_complete_tool_call   #0 get_weather call_Qx3m {"city": "Edinburgh"}
    on_unmapped_raw_event   {"type": "ping"}
    on_complete_response    finish=tool_execution status=complete

then the assembled response. ``FILE`` may be ``-`` for standard input; a
``.ndjson`` file is Ollama's format unless ``--format`` says otherwise. Every
value that comes from the wire is printed escaped (control characters, lone
surrogates and other unprintable characters as ``\\x1b``-style escapes), so a
capture cannot drive the terminal. Exit status: 0 for a stream that completed,
1 for one that failed (the on_error is printed, with a hint when the format looks
wrong), 2 for a file or format that cannot be used (nothing in it decodes).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any, Final

from typing_extensions import override

from .._core._messages import (
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
)
from .._core._streaming import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)
from .._core._terminal import escaped, short_json
from ..models._drive_sync import StreamDriver
from ..models._formats import FORMATS, StreamFormat, looks_like
from ..models._replay import _read_error
from ..models._run_sync import pump
from ..models._sse import Chunk, stream_events

__all__ = ["add_arguments", "run"]

_WIDTH: Final = 21
_RAW_LIMIT: Final = 200
_READ_SIZE: Final = 64 * 1024
# How much of the input is kept to guess its format for a hint.
_HEAD: Final = 64 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the replay command's arguments."""
    parser.add_argument(
        "file", help="a recorded stream body (.sse or .ndjson), or - for stdin"
    )
    parser.add_argument(
        "--format",
        metavar="FORMAT",
        help=f"the stream's wire format: {_names()} (default: {_implied()})",
    )


def _names() -> str:
    """The formats' names, for a message."""
    return ", ".join(FORMATS)


def _implied() -> str:
    """Which file names imply which format ("ollama for a .ndjson or .jsonl file")."""
    return "; ".join(
        f"{entry.name} for a {' or '.join(entry.suffixes)} file"
        for entry in FORMATS.values()
        if entry.suffixes
    )


def _error(message: str) -> None:
    print(f"langhooks replay: {message}", file=sys.stderr)


def _format(args: argparse.Namespace) -> StreamFormat | None:
    """The format given, or implied by the file name; None (said why) if neither."""
    given = args.format
    if given is None:
        name = args.file.lower()
        for entry in FORMATS.values():
            if name.endswith(entry.suffixes):
                return entry.name
        _error(
            f"give the stream's format: --format FORMAT, one of "
            f"{_names()} (only these imply one: {_implied()})"
        )
        return None
    named = FORMATS.get(given)
    if named is None:
        _error(f"unknown format {escaped(given)!r}; use one of: {_names()}")
        return None
    return named.name


class _Head:
    """Keeps the start of the input, to guess its format."""

    def __init__(self) -> None:
        self.data = b""

    def reading(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """``chunks``, unchanged, keeping the first ``_HEAD`` bytes."""
        for chunk in chunks:
            self.data += chunk[: _HEAD - len(self.data)]
            yield chunk


class _Counting:
    """A wire decoder that counts the events it decoded."""

    def __init__(self, format: StreamFormat) -> None:
        self._decoder = stream_events(format)
        self.decoded = 0

    def feed(self, chunk: Chunk) -> list[object]:
        events = self._decoder.feed(chunk)
        self.decoded += len(events)
        return events

    def end(self) -> list[object]:
        events = self._decoder.end()
        self.decoded += len(events)
        return events


@contextlib.contextmanager
def _opened(name: str) -> Iterator[Iterator[bytes]]:
    """The bytes of the file ``name`` (``-``: standard input), in pieces.

    Raises:
        OSError: the file cannot be opened.
    """
    if name == "-":
        # read1: what has arrived, so a piped live stream shows as it comes.
        stdin: Any = sys.stdin.buffer
        yield iter(lambda: stdin.read1(_READ_SIZE), b"")
        return
    with open(name, "rb") as file:
        yield iter(lambda: file.read(_READ_SIZE), b"")


def _a(format: str) -> str:
    """The article before a format's name ("an openai-chat", "a gemini")."""
    return "an" if format[:1] in "aeiou" else "a"


def _hint(format: StreamFormat, head: bytes) -> str | None:
    """A hint for a stream that failed, unless it looks like ``format``."""
    entry = looks_like(head)
    if entry is not None and entry.name == format:
        return None  # the format is right: the stream itself is broken
    if entry is not None:
        guess = entry.name
        return f"hint: this looks like {_a(guess)} {guess} stream: try --format {guess}"
    return f"hint: check that --format {format} matches the capture (one of {_names()})"


def run(args: argparse.Namespace) -> int:
    """Replay ``args.file`` and print each handler event, then the response.

    Returns:
        0 when the stream completed, 1 when it failed, 2 for an unusable file or
        format.
    """
    for stream in (sys.stdout, sys.stderr):
        # A last guard: text the terminal cannot encode is escaped, not fatal.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    format = _format(args)
    if format is None:
        return 2
    shown = "standard input" if args.file == "-" else repr(escaped(args.file))
    decoder = _Counting(format)
    head = _Head()
    try:
        with _opened(args.file) as chunks:
            driver = StreamDriver(format, _Printer())
            response = pump(driver, head.reading(chunks), decoder, _read_error)
    except LangHooksError as error:
        _error(f"the stream failed: {escaped(str(error))}")
        hint = _hint(format, head.data)
        if decoder.decoded == 0:
            _error(f"nothing in {shown} decodes as {_a(format)} {format} stream")
            if hint is not None:
                _error(hint)
            return 2
        if hint is not None and error.type in ("protocol_error", "stream_error"):
            _error(hint)
        return 1
    except BrokenPipeError:  # the output's reader left: main() ends quietly
        raise
    except OSError as exc:
        _error(f"cannot read {shown}: {escaped(str(exc.strerror or exc))}")
        return 2
    _print_response(response)
    return 0


def _line(event: str, payload: str) -> None:
    # The handler method's name, as `langhooks demo` and `langhooks events` print it.
    print(f"{'on_' + event:<{_WIDTH + 3}}{payload}")


def _short(value: object) -> str:
    return short_json(value, _RAW_LIMIT)


class _Printer(StreamingChatResponseHandler):
    """Prints one line per event."""

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        _line("partial_response", repr(partial.text))

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        _line("partial_thinking", repr(partial.text))

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        _line(
            "partial_tool_call",
            f"#{partial.index} {escaped(partial.name)} {escaped(partial.id or '-')} "
            f"{partial.partial_arguments!r}",
        )

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        call = complete.tool_call
        _line(
            "complete_tool_call",
            f"#{complete.index} {escaped(call.name)} {escaped(call.call_id)} "
            f"{_short(call.arguments)}",
        )

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        _line("unmapped_raw_event", _short(raw_event))

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        reason = response.finish_reason.value if response.finish_reason else "-"
        _line(
            "complete_response",
            f"finish={reason} status={response.message.status}",
        )

    @override
    def on_error(self, error: BaseException) -> None:
        _line("error", escaped(str(error)))


def _print_response(response: ChatResponse) -> None:
    message = response.message
    usage = response.token_usage
    print()
    print("response")
    rows: list[tuple[str, str]] = [
        ("id", escaped(response.id or "-")),
        ("model", escaped(response.model_name or "-")),
        (
            "finish_reason",
            response.finish_reason.value if response.finish_reason else "-",
        ),
        ("status", message.status),
        (
            "usage",
            "-"
            if usage is None
            else f"input {usage.input_tokens}, output {usage.output_tokens}, "
            f"total {usage.total_tokens}",
        ),
    ]
    if message.thinking:
        rows.append(("thinking", repr(message.thinking)))
    rows.append(("text", repr(message.text)))
    for call in message.tool_calls:
        rows.append(
            (
                f"tool_call #{call.index}",
                f"{escaped(call.name)} {escaped(call.call_id)} "
                f"{_short(call.arguments)}",
            )
        )
    for name, value in rows:
        print(f"  {name + ':':<{_WIDTH - 2}}{value}")
