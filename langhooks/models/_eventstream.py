"""The binary ``application/vnd.amazon.eventstream`` framing, incrementally.

AWS streams (Bedrock's ConverseStream among them) send a body of messages, each:

- a 12-byte prelude: total length, headers length (both big-endian uint32) and
  the CRC32 of those 8 bytes;
- the headers: each a 1-byte name length, the name (UTF-8), a 1-byte value type
  and the value (``HEADER_TYPES`` lists the ten types);
- the payload (the rest), then the CRC32 of everything before it.

``EventStreamDecoder`` takes the body in chunks split anywhere (one byte at a
time if need be), checks both CRCs and the size limits (128 KiB of headers,
24 MiB of payload: AWS's own), and returns each complete ``EventMessage``; a
corrupt or oversized frame raises a ``LangHooksError`` of type
``protocol_error``, and nothing is decoded after it. ``BedrockEventDecoder``
turns the messages into what the ``"bedrock"`` stream adapter takes: the JSON
payload with ``"type"`` set from the ``:event-type`` header (or, for an
exception message, from ``:exception-type``). ``encode_message`` writes a
message (tests and benchmarks build streams with it).
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias, final

import attrs

from .._core._messages import LangHooksError
from ._adapters._base import malformed

__all__ = [
    "END_OF_STREAM",
    "HEADER_TYPES",
    "MAX_HEADERS_BYTES",
    "MAX_PAYLOAD_BYTES",
    "BedrockEventDecoder",
    "EventMessage",
    "EventStreamDecoder",
    "HeaderValue",
    "encode_message",
]

#: The most header bytes one message may carry (128 KiB, as AWS's SDKs allow).
MAX_HEADERS_BYTES: Final = 128 * 1024
#: The largest payload one message may carry (24 MiB, as AWS's SDKs allow).
MAX_PAYLOAD_BYTES: Final = 24 * 1024 * 1024
#: What ``BedrockEventDecoder.end`` gives after a body that ended cleanly on a
#: message boundary: the ``"bedrock"`` adapter ends a stream whose
#: ``messageStop`` arrived without a ``metadata`` event after it.
END_OF_STREAM: Final = "end-of-stream"

#: Header value type codes and their names.
HEADER_TYPES: Final[Mapping[int, str]] = {
    0: "true",
    1: "false",
    2: "byte",
    3: "short",
    4: "integer",
    5: "long",
    6: "bytes",
    7: "string",
    8: "timestamp",
    9: "uuid",
}

#: A decoded header value: bool, int (byte, short, integer, long and timestamp,
#: the timestamp in milliseconds since the epoch), bytes, str or ``uuid.UUID``.
HeaderValue: TypeAlias = bool | int | bytes | str | uuid.UUID

_PRELUDE: Final = struct.Struct(">III")
_LENGTHS: Final = struct.Struct(">II")
_CRC: Final = struct.Struct(">I")
_PRELUDE_BYTES: Final = 12
_OVERHEAD: Final = 16  # prelude and message CRC
# Header blocks recur (one per event type): parsed once, up to this many kept.
_CACHE_SIZE: Final = 64
_crc32: Final = zlib.crc32
_loads: Final = json.loads
# The json module's own scanner, without ``loads``'s wrapping (a type check, a
# decode call and two whitespace matches): payloads are compact JSON objects.
_scan: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # not in the stubs

_INT_FORMATS: Final[Mapping[int, struct.Struct]] = {
    2: struct.Struct(">b"),
    3: struct.Struct(">h"),
    4: struct.Struct(">i"),
    5: struct.Struct(">q"),
    8: struct.Struct(">q"),
}
_LENGTH16: Final = struct.Struct(">H")


@attrs.frozen
class EventMessage:
    """One eventstream message: its headers and its payload bytes."""

    headers: Mapping[str, HeaderValue]
    payload: bytes


def _headers(data: bytes) -> dict[str, HeaderValue]:
    """Parse a header block.

    Raises:
        LangHooksError: ``protocol_error`` for a block that breaks the format.
    """
    headers: dict[str, HeaderValue] = {}
    position = 0
    end = len(data)
    try:
        while position < end:
            size = data[position]
            position += 1
            name = data[position : position + size].decode("utf-8")
            position += size
            if not name or position >= end:
                raise malformed("an eventstream header is cut off or has no name")
            kind = data[position]
            position += 1
            value: HeaderValue
            if kind == 7 or kind == 6:
                (length,) = _LENGTH16.unpack_from(data, position)
                position += 2
                raw = data[position : position + length]
                position += length
                value = raw.decode("utf-8") if kind == 7 else bytes(raw)
            elif kind in _INT_FORMATS:
                number = _INT_FORMATS[kind]
                (value,) = number.unpack_from(data, position)
                position += number.size
            elif kind == 0 or kind == 1:
                value = kind == 0
            elif kind == 9:
                value = uuid.UUID(bytes=bytes(data[position : position + 16]))
                position += 16
            else:
                raise malformed(f"unknown eventstream header value type {kind}")
            headers[name] = value
        if position != end:
            raise malformed("an eventstream header runs past its header block")
    except (struct.error, ValueError, IndexError) as exc:
        raise malformed(
            f"an eventstream header block is malformed: {exc}", original=exc
        ) from exc
    return headers


class _Head:
    """A parsed header block, kept per distinct block: its headers and, once a
    ``BedrockEventDecoder`` looked, the event type of a plain event."""

    __slots__ = ("event", "headers", "seen")

    def __init__(self, headers: dict[str, HeaderValue]) -> None:
        self.headers = headers
        self.seen = False  # whether ``event`` was worked out
        self.event: str | None = None


@final
class EventStreamDecoder:
    """Eventstream messages from a body read in chunks split anywhere.

    Memory holds at most one unfinished message (bounded by the size limits).
    """

    __slots__ = ("_buffer", "_cache", "_error")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._cache: dict[bytes, _Head] = {}
        self._error: LangHooksError | None = None

    @property
    def pending(self) -> int:
        """How many bytes of an unfinished message are held."""
        return len(self._buffer)

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[EventMessage]:
        """The messages ``chunk`` completes.

        Raises:
            LangHooksError: ``protocol_error`` for a frame that fails a CRC, a
                size limit or the header format (and on every call after).
            TypeError: ``chunk`` is not bytes.
        """
        messages, error = self.decode(chunk)
        if error is not None:
            raise error
        return messages

    def decode(
        self, chunk: bytes | bytearray | memoryview
    ) -> tuple[list[EventMessage], LangHooksError | None]:
        """Like ``feed``, but a bad frame is returned after the messages completed
        before it, not raised; nothing is decoded after it.

        Raises:
            TypeError: ``chunk`` is not bytes.
        """
        frames, error = self._frames(chunk, False)
        messages = [
            EventMessage(head.headers, payload)  # type: ignore[arg-type]  # bytes here
            for head, payload in frames
        ]
        return messages, error

    def _frames(
        self, chunk: bytes | bytearray | memoryview, text: bool
    ) -> tuple[list[tuple[_Head, bytes | str]], LangHooksError | None]:
        """The (header block, payload) of each message ``chunk`` completes; the
        payload decoded as UTF-8 when ``text`` (straight from the buffer: one
        copy fewer for what is JSON anyway)."""
        if not isinstance(chunk, bytes | bytearray | memoryview):
            raise TypeError(
                f"eventstream chunks must be bytes, got {type(chunk).__name__}"
            )
        if self._error is not None:
            return [], self._error
        buffer = self._buffer
        buffer += chunk
        frames: list[tuple[_Head, bytes | str]] = []
        append = frames.append
        position = 0
        available = len(buffer)
        cache = self._cache
        crc32 = _crc32
        prelude = _PRELUDE.unpack_from
        checksum = _CRC.unpack_from
        # The view is released before the buffer is resized (a resize with a
        # view exported fails).
        with memoryview(buffer) as view:
            try:
                while available - position >= _PRELUDE_BYTES:
                    total, headers_length, prelude_crc = prelude(view, position)
                    if crc32(view[position : position + 8]) != prelude_crc:
                        raise malformed(
                            "an eventstream prelude fails its CRC32 check "
                            "(corrupt data)"
                        )
                    payload_length = total - headers_length - _OVERHEAD
                    if (
                        headers_length > MAX_HEADERS_BYTES
                        or payload_length < 0
                        or payload_length > MAX_PAYLOAD_BYTES
                    ):
                        raise _bad_lengths(total, headers_length)
                    end = position + total
                    if end > available:
                        break
                    if (
                        crc32(view[position + 8 : end - 4], prelude_crc)
                        != checksum(view, end - 4)[0]
                    ):
                        raise malformed(
                            "an eventstream message fails its CRC32 check "
                            "(corrupt data)"
                        )
                    split = position + _PRELUDE_BYTES + headers_length
                    block = view[position + _PRELUDE_BYTES : split].tobytes()
                    head = cache.get(block)
                    if head is None:
                        head = _Head(_headers(block))
                        if len(cache) < _CACHE_SIZE:
                            cache[block] = head
                    append(
                        (
                            head,
                            str(view[split : end - 4], "utf-8", "replace")
                            if text
                            else view[split : end - 4].tobytes(),
                        )
                    )
                    position = end
            except LangHooksError as error:
                self._error = error
        failed = self._error
        if failed is not None:
            buffer.clear()
            return frames, failed
        if position:
            del buffer[:position]
        return frames, None

    def end(self) -> bool:
        """End of input: whether the body ended on a message boundary.

        Raises:
            LangHooksError: a bad frame was met before.
        """
        if self._error is not None:
            raise self._error
        return not self._buffer


def _bad_lengths(total: int, headers_length: int) -> LangHooksError:
    if headers_length > MAX_HEADERS_BYTES:
        return malformed(
            f"an eventstream message has {headers_length} bytes of headers, over "
            f"the {MAX_HEADERS_BYTES}-byte limit"
        )
    payload_length = total - headers_length - _OVERHEAD
    if payload_length < 0:
        return malformed(
            f"an eventstream message of {total} bytes cannot hold "
            f"{headers_length} bytes of headers"
        )
    return malformed(
        f"an eventstream message has a {payload_length}-byte payload, over the "
        f"{MAX_PAYLOAD_BYTES}-byte limit"
    )


def _event_type(headers: Mapping[str, HeaderValue]) -> str | LangHooksError:
    """The ``"type"`` of a message's event, or the error its headers are."""
    kind = headers.get(":message-type", "event")
    if kind == "event":
        name = headers.get(":event-type")
        if type(name) is str and name:
            return name
        return malformed("an eventstream event has no :event-type header")
    if kind == "exception":
        name = headers.get(":exception-type")
        if type(name) is str and name:
            return name
        return malformed("an eventstream exception has no :exception-type header")
    if kind == "error":
        code = headers.get(":error-code")
        text = headers.get(":error-message")
        return (
            "error"
            if type(code) is str or type(text) is str
            else malformed(
                "an eventstream error has neither :error-code nor :error-message"
            )
        )
    return malformed(f"unknown eventstream :message-type {kind!r}")


@final
class BedrockEventDecoder:
    """Chunks of a ConverseStream body -> what the "bedrock" adapter takes.

    Each message becomes its JSON payload (an object) with ``"type"`` set from
    the ``:event-type`` header; an exception message becomes its payload with
    ``"type"`` set from ``:exception-type`` (``throttlingException``, ...), an
    error message ``{"type": "error", "code": ..., "message": ...}`` from its
    headers. Malformed input (a bad frame, a payload that is not a JSON object)
    gives one ``LangHooksError`` (``protocol_error``), after which nothing more:
    a driver reports it through ``on_error``. At the end of input,
    ``END_OF_STREAM`` when the body ended on a message boundary, else nothing (a
    message was cut off: the driver reports the stream as truncated).
    """

    __slots__ = ("_failed", "_frames")

    def __init__(self) -> None:
        self._frames = EventStreamDecoder()
        self._failed = False

    def feed(self, chunk: bytes | bytearray | memoryview | str) -> list[object]:
        """The decoded events ``chunk`` completes.

        Raises:
            TypeError: ``chunk`` is not bytes (a binary stream has no text form).
        """
        if isinstance(chunk, str):
            raise TypeError(
                "a bedrock stream is binary: read it as bytes (open the file 'rb')"
            )
        if self._failed:
            return []
        frames, error = self._frames._frames(chunk, True)
        out: list[object] = []
        for head, payload in frames:
            if not head.seen:
                kind = _event_type(head.headers)
                # Plain events and exceptions take the hot path; error
                # messages (their fields are headers) and bad headers do not.
                head.event = kind if isinstance(kind, str) and kind != "error" else None
                head.seen = True
            name = head.event
            if name is not None and payload:
                # The hot path: a plain event with a JSON object payload.
                try:
                    value, stop = _scan(payload, 0)  # type: ignore[arg-type]  # str here
                except (ValueError, RecursionError, StopIteration):
                    stop = -1
                if stop != len(payload):  # whitespace around it, or not JSON
                    try:
                        value = _loads(payload)
                    except (ValueError, RecursionError):
                        value = None
                if type(value) is dict:
                    value["type"] = name
                    out.append(value)
                    continue
            event = self._event(head.headers, str(payload))
            out.append(event)
            if isinstance(event, LangHooksError):
                self._failed = True
                return out
        if error is not None:
            self._failed = True
            out.append(error)
        return out

    def end(self) -> list[object]:
        """The events left at the end of input."""
        if self._failed or not self._frames.end():
            return []
        return [END_OF_STREAM]

    @staticmethod
    def _event(
        headers: Mapping[str, HeaderValue], payload: str
    ) -> dict[str, Any] | LangHooksError:
        """The event for a message the hot path did not take: an error message,
        an empty payload, or a payload that is no JSON object."""
        kind = _event_type(headers)
        if isinstance(kind, LangHooksError):
            return kind
        if kind == "error":
            return {
                "type": "error",
                "code": headers.get(":error-code"),
                "message": headers.get(":error-message"),
            }
        if not payload:
            return {"type": kind}
        if kind.endswith("Exception"):
            # An exception whose body is not a JSON object: its text says why.
            return {"type": kind, "message": payload}
        return malformed(f"a {kind} payload is not a JSON object: {payload[:120]!r}")


def _header_bytes(name: str, value: HeaderValue | tuple[str, object]) -> bytes:
    encoded = name.encode("utf-8")
    if not 0 < len(encoded) < 256:
        raise ValueError(f"a header name must be 1 to 255 bytes, got {name!r}")
    head = bytes([len(encoded)]) + encoded
    if isinstance(value, tuple):
        kind, number = value
        codes = {"byte": 2, "short": 3, "integer": 4, "long": 5, "timestamp": 8}
        if kind not in codes or type(number) is not int:
            raise ValueError(f"a typed header is (kind, int), got {value!r}")
        code = codes[kind]
        return head + bytes([code]) + _INT_FORMATS[code].pack(number)
    if isinstance(value, bool):
        return head + bytes([0 if value else 1])
    if isinstance(value, int):
        return head + b"\x04" + _INT_FORMATS[4].pack(value)
    if isinstance(value, str):
        data = value.encode("utf-8")
        return head + b"\x07" + _LENGTH16.pack(len(data)) + data
    if isinstance(value, bytes):
        return head + b"\x06" + _LENGTH16.pack(len(value)) + value
    if isinstance(value, uuid.UUID):
        return head + b"\x09" + value.bytes
    raise TypeError(f"cannot encode a header value of type {type(value).__name__}")


def encode_message(
    headers: Mapping[str, HeaderValue | tuple[str, object]], payload: bytes
) -> bytes:
    """One eventstream message, both CRCs computed.

    Args:
        headers: name -> value, in order: a str is a string header, bytes a byte
            array, a bool, an int a 32-bit integer, a ``uuid.UUID``, or
            ``(kind, int)`` with kind "byte", "short", "integer", "long" or
            "timestamp".
        payload: the payload bytes.

    Raises:
        ValueError: a header name or typed value is out of range.
        TypeError: a header value has a type no header has.
    """
    try:
        block = b"".join(_header_bytes(n, v) for n, v in headers.items())
    except struct.error as exc:
        raise ValueError(f"a header value is out of range: {exc}") from exc
    total = _OVERHEAD + len(block) + len(payload)
    lengths = _LENGTHS.pack(total, len(block))
    prelude = lengths + _CRC.pack(_crc32(lengths))
    body = prelude + block + payload
    return body + _CRC.pack(_crc32(body))
