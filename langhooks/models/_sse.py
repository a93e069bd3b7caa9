"""Incremental decoders for streamed wire formats: SSE and NDJSON.

Both take the body in chunks split anywhere, as read from a socket (also inside
a line, a CRLF pair, or a multi-byte UTF-8 character) and keep only the
unfinished line between calls, so memory stays flat however long the stream.
A line longer than ``MAX_LINE_BYTES`` (8 MiB) is a ``protocol_error``: a broken
or hostile server cannot make the client hang or run out of memory.

``stream_events(format)`` combines the right decoder with JSON parsing and gives
what a stream driver's ``feed`` takes.
"""

from __future__ import annotations

import json
from typing import Final, TypeAlias, final

from .._core._messages import LangHooksError
from ._adapters._base import malformed
from ._eventstream import BedrockEventDecoder
from ._formats import format_named

__all__ = [
    "MAX_LINE_BYTES",
    "Chunk",
    "NDJSONDecoder",
    "SSEDecoder",
    "WireDecoder",
    "stream_events",
]

#: The longest line (and the largest SSE event) a decoder accepts: 8 MiB.
MAX_LINE_BYTES: Final = 8 * 1024 * 1024

#: What a decoder accepts: bytes as read from a socket, or text.
Chunk: TypeAlias = bytes | bytearray | memoryview | str

_BOM: Final = b"\xef\xbb\xbf"
_loads: Final = json.loads


def _too_long(size: int) -> LangHooksError:
    return malformed(
        f"a line or event of {size} bytes or more exceeds the {MAX_LINE_BYTES}-byte "
        "limit of the stream decoder"
    )


class _Lines:
    """Splits chunks into lines ending in LF, CRLF or CR; keeps the unfinished one.

    A line over the limit sets ``error``; the lines before it are still returned
    (a stream's output before the bad line is never lost), nothing after it.
    """

    __slots__ = ("_cr", "_parts", "_size", "_started", "error")

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # the unfinished line, in pieces
        self._size = 0
        self._cr = False  # the last chunk ended in CR: drop a LF that follows
        self._started = False
        #: The line over the limit, once one arrived; nothing is split after it.
        self.error: LangHooksError | None = None

    def split(self, data: Chunk) -> list[bytes]:
        """The lines ``data`` completes (without their terminators)."""
        if self.error is not None:
            return []
        chunk: object = data
        if type(chunk) is not bytes:
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8", "surrogatepass")
            elif isinstance(chunk, bytearray | memoryview):
                chunk = bytes(chunk)
            else:
                raise TypeError(
                    f"stream chunks must be bytes or str, got {type(chunk).__name__}"
                )
        assert isinstance(chunk, bytes)
        if not chunk:
            return []
        if not self._started:
            # A UTF-8 byte-order mark may open the stream; it is not data.
            if self._parts:
                chunk = b"".join(self._parts) + chunk
                self._parts.clear()
                self._size = 0
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._parts.append(chunk)
                self._size = len(chunk)
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if self._cr:
            self._cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            self._size += len(chunk)
            if self._size > MAX_LINE_BYTES:
                return self._overflow(self._size, [])
            self._parts.append(chunk)
            return []
        if self._parts:
            self._parts.append(chunk)
            chunk = b"".join(self._parts)
            self._parts.clear()
        lines = chunk.split(b"\n")
        rest = lines.pop()
        if len(chunk) > MAX_LINE_BYTES:
            # Only a chunk this large can hold a complete line over the limit.
            for position, line in enumerate(lines):
                if len(line) > MAX_LINE_BYTES:
                    return self._overflow(len(line), lines[:position])
        self._size = len(rest)
        if rest:
            if self._size > MAX_LINE_BYTES:
                return self._overflow(self._size, lines)
            self._parts.append(rest)
        return lines

    def _overflow(self, size: int, lines: list[bytes]) -> list[bytes]:
        self.error = _too_long(size)
        self._parts.clear()
        self._size = 0
        return lines

    def rest(self) -> bytes:
        """The unfinished line at the end of input (and forget it)."""
        rest = b"".join(self._parts)
        self._parts.clear()
        self._size = 0
        return rest


@final
class SSEDecoder:
    """Server-sent events, incrementally (the WHATWG ``text/event-stream`` rules).

    ``data:`` lines join with ``\\n``; a line starting with ``:`` is a comment
    (keep-alives); ``event:`` names the event; ``id:`` sets ``last_event_id``;
    ``retry:`` and unknown fields are ignored; one leading space after the colon
    is dropped; a blank line dispatches the event, unless it has no data.
    """

    __slots__ = ("_data", "_data_size", "_error", "_event", "_lines", "last_event_id")

    def __init__(self) -> None:
        self._lines = _Lines()
        self._data: list[bytes] = []
        self._data_size = 0
        self._event: bytes | None = None
        self._error: LangHooksError | None = None
        #: The last ``id:`` the stream sent (for reconnecting), or None.
        self.last_event_id: str | None = None

    def feed(self, chunk: Chunk) -> list[tuple[str | None, str]]:
        """The events ``chunk`` completes, as ``(event name or None, data)``.

        Raises:
            LangHooksError: ``protocol_error`` for a line or event over
                ``MAX_LINE_BYTES``.
            TypeError: ``chunk`` is neither bytes nor str.
        """
        events, error = self.decode(chunk)
        if error is not None:
            raise error
        return events

    def decode(
        self, chunk: Chunk
    ) -> tuple[list[tuple[str | None, str]], LangHooksError | None]:
        """Like ``feed``, but a line or event over the limit is returned, not
        raised, after the events completed before it; nothing is decoded after.

        Raises:
            TypeError: ``chunk`` is neither bytes nor str.
        """
        if self._error is not None:
            return [], self._error
        lines = self._lines.split(chunk)
        events = self._events(lines) if lines else []
        if self._error is None:
            self._error = self._lines.error
        return events, self._error

    def end(self) -> list[tuple[str | None, str]]:
        """End of input: the event the last lines hold, if any.

        A final line without its terminator is taken as complete; an event
        without its closing blank line is still dispatched (servers that close
        right after the last ``data:`` line exist).

        Raises:
            LangHooksError: the stream already had a line over the limit.
        """
        if self._error is not None:
            raise self._error
        rest = self._lines.rest()
        return self._events([rest, b""] if rest else [b""])

    def _events(self, lines: list[bytes]) -> list[tuple[str | None, str]]:
        events: list[tuple[str | None, str]] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    name = self._event
                    events.append(
                        (
                            None if name is None else name.decode("utf-8", "replace"),
                            b"\n".join(data).decode("utf-8", "replace"),
                        )
                    )
                    data.clear()
                    self._data_size = 0
                self._event = None
                continue
            if line[:6] == b"data: ":  # the common case, first
                self._data_size += len(line) - 5
                if self._data_size > MAX_LINE_BYTES:
                    self._error = _too_long(self._data_size)
                    break
                data.append(line[6:])
                continue
            if line[:7] == b"event: ":  # named events (Anthropic, Cohere, ...)
                self._event = line[7:]
                continue
            if line[0] == 0x3A:  # ":" a comment or keep-alive
                continue
            field, colon, value = line.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if field == b"data":
                self._data_size += len(value) + 1
                if self._data_size > MAX_LINE_BYTES:
                    self._error = _too_long(self._data_size)
                    break
                data.append(value)
            elif field == b"event":
                self._event = value
            elif field == b"id" and b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        return events


@final
class NDJSONDecoder:
    """Newline-delimited JSON, incrementally: one payload per non-blank line."""

    __slots__ = ("_lines",)

    def __init__(self) -> None:
        self._lines = _Lines()

    def feed(self, chunk: Chunk) -> list[str]:
        """The non-blank lines ``chunk`` completes.

        Raises:
            LangHooksError: ``protocol_error`` for a line over ``MAX_LINE_BYTES``.
            TypeError: ``chunk`` is neither bytes nor str.
        """
        lines, error = self.decode(chunk)
        if error is not None:
            raise error
        return lines

    def decode(self, chunk: Chunk) -> tuple[list[str], LangHooksError | None]:
        """Like ``feed``, but a line over the limit is returned, not raised, after
        the lines completed before it; nothing is decoded after.

        Raises:
            TypeError: ``chunk`` is neither bytes nor str.
        """
        lines = [
            line.decode("utf-8", "replace")
            for line in self._lines.split(chunk)
            if line.strip()
        ]
        return lines, self._lines.error

    def end(self) -> list[str]:
        """End of input: the last line, if it had no terminator.

        Raises:
            LangHooksError: the stream already had a line over the limit.
        """
        if self._lines.error is not None:
            raise self._lines.error
        rest = self._lines.rest()
        return [rest.decode("utf-8", "replace")] if rest.strip() else []


@final
class WireDecoder:
    """Chunks of one stream's body -> what a stream driver's ``feed`` takes.

    Yields JSON objects, the ``"[DONE]"`` sentinel, or, for malformed input (a
    line that is not a JSON object, a line over the limit), one
    ``LangHooksError`` (``protocol_error``), after which it yields nothing more:
    a driver given that error reports it through ``on_error`` and raises it, so
    the handler learns of it whoever drives the stream. It never raises for
    malformed input. At the end of input, a last payload that does not parse is
    dropped as cut off, so the driver reports the stream as truncated.
    """

    __slots__ = ("_failed", "_ndjson", "_sse")

    def __init__(self, format: str) -> None:
        ndjson = format_named(format).framing == "ndjson"
        self._ndjson = NDJSONDecoder() if ndjson else None
        self._sse = None if ndjson else SSEDecoder()
        self._failed = False

    def feed(self, chunk: Chunk) -> list[object]:
        """The decoded events ``chunk`` completes.

        Raises:
            TypeError: ``chunk`` is neither bytes nor str.
        """
        if self._failed:
            return []
        out: list[object]
        if self._sse is not None:
            events, error = self._sse.decode(chunk)
            out = self._parse_sse(events, at_end=False)
        else:
            assert self._ndjson is not None
            lines, error = self._ndjson.decode(chunk)
            out = self._parse_lines(lines, at_end=False)
        if error is not None and not self._failed:
            # After the events completed before the bad line, so none is lost.
            self._failed = True
            out.append(error)
        return out

    def end(self) -> list[object]:
        """The events left at the end of input."""
        if self._failed:
            return []
        if self._sse is not None:
            return self._parse_sse(self._sse.end(), at_end=True)
        assert self._ndjson is not None
        return self._parse_lines(self._ndjson.end(), at_end=True)

    def _parse_sse(
        self, events: list[tuple[str | None, str]], *, at_end: bool
    ) -> list[object]:
        out: list[object] = []
        for name, data in events:
            if data == "[DONE]":
                out.append(data)
                continue
            try:
                value = _loads(data)
            except (ValueError, RecursionError) as exc:
                error = self._bad_json(data, exc, at_end=at_end)
                if error is not None:
                    out.append(error)
                break
            if type(value) is not dict:
                self._failed = True
                out.append(malformed(f"expected a JSON object, got {data[:120]!r}"))
                break
            if name is not None and "type" not in value:
                value["type"] = name
            out.append(value)
        return out

    def _parse_lines(self, lines: list[str], *, at_end: bool) -> list[object]:
        out: list[object] = []
        for line in lines:
            try:
                value = _loads(line)
            except (ValueError, RecursionError) as exc:
                error = self._bad_json(line, exc, at_end=at_end)
                if error is not None:
                    out.append(error)
                break
            if type(value) is not dict:
                self._failed = True
                out.append(malformed(f"expected a JSON object, got {line[:120]!r}"))
                break
            out.append(value)
        return out

    def _bad_json(
        self, data: str, exc: Exception, *, at_end: bool
    ) -> LangHooksError | None:
        if at_end:
            return None  # the stream was cut inside its last payload
        self._failed = True
        return malformed(f"not valid JSON: {data[:120]!r} ({exc})", original=exc)


def stream_events(format: str) -> WireDecoder | BedrockEventDecoder:
    """A decoder for the body of a stream of ``format``.

    Feed it the body's chunks as they arrive (``decoder.feed(chunk)``), and call
    ``decoder.end()`` at the end of input; both return the decoded events, ready
    for ``StreamDriver.feed``. "ollama" is NDJSON, "bedrock" the binary
    eventstream framing (``BedrockEventDecoder``), the other formats SSE.

    Args:
        format: one of ``STREAM_FORMATS`` ("openai-chat", "openai-responses",
            "anthropic", "ollama", "gemini", "cohere", ...).

    Raises:
        ValueError: ``format`` is unknown.
    """
    framing = format_named(format).framing
    if framing == "eventstream":
        return BedrockEventDecoder()
    return WireDecoder(format)
