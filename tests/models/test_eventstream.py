"""The eventstream frame decoder: the format, both CRCs, limits, any split.

botocore's own parser (``botocore.eventstream``) is the reference: what the
encoder writes, it parses to the same headers and payload.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import Any

import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

import langhooks as lh
from langhooks.models import stream_events
from langhooks.models._eventstream import (
    END_OF_STREAM,
    MAX_HEADERS_BYTES,
    MAX_PAYLOAD_BYTES,
    BedrockEventDecoder,
    EventMessage,
    EventStreamDecoder,
    HeaderValue,
    encode_message,
)

from ._bedrock import event, exception

EVERY_TYPE: dict[str, HeaderValue | tuple[str, object]] = {
    "yes": True,
    "no": False,
    "byte": ("byte", -7),
    "short": ("short", 30000),
    "integer": 123456,
    "long": ("long", 2**40),
    "bytes": b"\x00\xff",
    "string": "héllo",
    "timestamp": ("timestamp", 1767261600000),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
}
DECODED: dict[str, HeaderValue] = {
    "yes": True,
    "no": False,
    "byte": -7,
    "short": 30000,
    "integer": 123456,
    "long": 2**40,
    "bytes": b"\x00\xff",
    "string": "héllo",
    "timestamp": 1767261600000,
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
}


def botocore_messages(data: bytes) -> list[tuple[dict[str, Any], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(dict(m.headers), m.payload) for m in buffer]


def prelude(total: int, headers_length: int) -> bytes:
    """A prelude with a correct CRC (for the size checks behind it)."""
    lengths = struct.pack(">II", total, headers_length)
    return lengths + struct.pack(">I", zlib.crc32(lengths))


def decode_all(data: bytes, piece: int) -> list[EventMessage]:
    decoder = EventStreamDecoder()
    out: list[EventMessage] = []
    for start in range(0, len(data), piece):
        out += decoder.feed(data[start : start + piece])
    assert decoder.end()
    return out


class TestFormat:
    def test_every_header_type_round_trips(self) -> None:
        """All ten header value types decode to what was encoded."""
        data = encode_message(EVERY_TYPE, b"payload")
        (message,) = EventStreamDecoder().feed(data)
        assert message == EventMessage(DECODED, b"payload")

    def test_botocore_parses_the_encoder(self) -> None:
        """botocore's parser reads the encoder's frames (CRCs included)."""
        data = encode_message(EVERY_TYPE, b"payload") * 2
        parsed = botocore_messages(data)
        assert len(parsed) == 2
        headers, payload = parsed[0]
        assert payload == b"payload"
        assert headers["string"] == "héllo"
        assert headers["long"] == 2**40
        assert headers["bytes"] == b"\x00\xff"

    def test_empty_headers_and_payload(self) -> None:
        """A message may have no headers and no payload (16 bytes)."""
        data = encode_message({}, b"")
        assert len(data) == 16
        assert EventStreamDecoder().feed(data) == [EventMessage({}, b"")]

    def test_pending_and_end(self) -> None:
        """An unfinished message is held, and the end says the body was cut."""
        data = encode_message({"a": "b"}, b"xyz")
        decoder = EventStreamDecoder()
        assert decoder.feed(data[:-1]) == []
        assert decoder.pending == len(data) - 1
        assert not decoder.end()
        assert len(decoder.feed(data[-1:])) == 1
        assert decoder.pending == 0
        assert decoder.end()

    def test_header_blocks_are_parsed_once_each(self) -> None:
        """Many distinct header blocks still decode right past the cache's size."""
        data = b"".join(encode_message({"n": str(i)}, b"") for i in range(100))
        got = EventStreamDecoder().feed(data * 2)
        assert [m.headers["n"] for m in got] == [str(i) for i in range(100)] * 2

    def test_chunks_must_be_bytes(self) -> None:
        """Text is not an eventstream chunk."""
        with pytest.raises(TypeError, match="bytes"):
            EventStreamDecoder().feed("text")  # type: ignore[arg-type]  # the error


class TestSplitAnywhere:
    @given(
        messages=st.lists(
            st.tuples(
                st.dictionaries(
                    st.text(min_size=1, max_size=8),
                    st.one_of(
                        st.text(max_size=20), st.binary(max_size=20), st.booleans()
                    ),
                    max_size=4,
                ),
                st.binary(max_size=200),
            ),
            min_size=1,
            max_size=6,
        ),
        piece=st.integers(min_value=1, max_value=64),
    )
    def test_any_split_gives_the_same_messages(
        self, messages: list[tuple[dict[str, HeaderValue], bytes]], piece: int
    ) -> None:
        """Messages cut into pieces of any size decode as botocore decodes them."""
        data = b"".join(encode_message(h, p) for h, p in messages)
        got = decode_all(data, piece)
        assert [(dict(m.headers), m.payload) for m in got] == [
            (dict(h), p) for h, p in messages
        ]
        assert [(dict(m.headers), m.payload) for m in got] == botocore_messages(data)

    @given(st.data())
    def test_any_flipped_bit_is_detected(self, data: st.DataObject) -> None:
        """Flipping any single bit of a message is a protocol_error, never a message."""
        body = event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}}
        )
        bit = data.draw(st.integers(min_value=0, max_value=len(body) * 8 - 1))
        corrupt = bytearray(body)
        corrupt[bit // 8] ^= 1 << (bit % 8)
        piece = data.draw(st.integers(min_value=1, max_value=len(body)))
        decoder = EventStreamDecoder()
        messages: list[EventMessage] = []
        error = None
        for start in range(0, len(corrupt), piece):
            got, error = decoder.decode(bytes(corrupt[start : start + piece]))
            messages += got
            if error is not None:
                break
        assert messages == []
        assert error is not None
        assert error.type == "protocol_error"


class TestRefused:
    def test_prelude_crc(self) -> None:
        """A prelude failing its CRC is refused before its length is trusted."""
        bad = bytearray(encode_message({}, b"x"))
        bad[2] ^= 0x40  # the total length: now megabytes long
        with pytest.raises(lh.LangHooksError, match="prelude fails its CRC32"):
            EventStreamDecoder().feed(bytes(bad[:12]))

    def test_message_crc(self) -> None:
        """A payload byte changed fails the message CRC."""
        bad = bytearray(encode_message({}, b"xyz"))
        bad[13] ^= 0x01
        with pytest.raises(lh.LangHooksError, match="message fails its CRC32"):
            EventStreamDecoder().feed(bytes(bad))

    @pytest.mark.parametrize(
        ("head", "says"),
        [
            (prelude(16 + MAX_HEADERS_BYTES + 1, MAX_HEADERS_BYTES + 1), "headers"),
            (prelude(17 + MAX_PAYLOAD_BYTES, 0), "payload"),
            (prelude(20, 8), "cannot hold"),
        ],
    )
    def test_size_limits(self, head: bytes, says: str) -> None:
        """Oversized or impossible lengths are refused at the prelude."""
        with pytest.raises(lh.LangHooksError, match=says) as raised:
            EventStreamDecoder().feed(head)
        assert raised.value.type == "protocol_error"

    @pytest.mark.parametrize(
        "block",
        [
            b"\x00\x07",  # no name
            b"\x01a",  # cut off before its type
            b"\x01a\x0a",  # an unknown type
            b"\x01a\x07\x00\x05ab",  # a string running past the block
            b"\x01a\x04\x00",  # an integer cut off
            b"\x01\xff\x00",  # a name that is not UTF-8
        ],
    )
    def test_malformed_header_blocks(self, block: bytes) -> None:
        """Header blocks that break the format are protocol errors."""
        total = 16 + len(block)
        head = prelude(total, len(block))
        body = head + block
        data = body + struct.pack(">I", zlib.crc32(body))
        with pytest.raises(lh.LangHooksError) as raised:
            EventStreamDecoder().feed(data)
        assert raised.value.type == "protocol_error"

    def test_nothing_after_an_error(self) -> None:
        """After a bad frame every call gives the same error, and nothing else."""
        good = encode_message({}, b"ok")
        decoder = EventStreamDecoder()
        messages, error = decoder.decode(good + b"\x00" * 12)
        assert [m.payload for m in messages] == [b"ok"]
        assert error is not None
        assert decoder.decode(good) == ([], error)
        with pytest.raises(lh.LangHooksError) as raised:
            decoder.end()
        assert raised.value is error


class TestEncoder:
    @pytest.mark.parametrize(
        ("headers", "error"),
        [
            ({"": "x"}, ValueError),
            ({"a" * 256: "x"}, ValueError),
            ({"a": ("float", 1)}, ValueError),
            ({"a": ("byte", 1000)}, ValueError),
            ({"a": 1.5}, TypeError),
        ],
    )
    def test_bad_headers(self, headers: dict[str, Any], error: type[Exception]) -> None:
        """Names and values no header can hold are refused."""
        with pytest.raises(error):
            encode_message(headers, b"")


class TestBedrockEvents:
    def feed(self, data: bytes) -> list[object]:
        decoder = BedrockEventDecoder()
        return decoder.feed(data) + decoder.end()

    def test_events_exceptions_and_the_end(self) -> None:
        """Events are payloads typed by ``:event-type``; exceptions by their type."""
        data = event("messageStart", {"role": "assistant"}) + exception(
            "throttlingException", "slow"
        )
        assert self.feed(data) == [
            {"type": "messageStart", "role": "assistant"},
            {"type": "throttlingException", "message": "slow"},
            END_OF_STREAM,
        ]

    def test_empty_and_text_payloads(self) -> None:
        """An empty payload is an event with no fields; an exception's text body is
        its message."""
        data = encode_message({":event-type": "ping"}, b"") + encode_message(
            {
                ":message-type": "exception",
                ":exception-type": "internalServerException",
            },
            b"Internal error",
        )
        assert self.feed(data) == [
            {"type": "ping"},
            {"type": "internalServerException", "message": "Internal error"},
            END_OF_STREAM,
        ]

    def test_json_with_whitespace(self) -> None:
        """A payload with whitespace around its object is still that object."""
        data = encode_message({":event-type": "metadata"}, b' {"a": 1}\n')
        assert self.feed(data)[0] == {"type": "metadata", "a": 1}

    def test_error_messages(self) -> None:
        """An error message's code and message come from its headers."""
        data = encode_message(
            {":message-type": "error", ":error-code": "Boom", ":error-message": "b"},
            b"",
        )
        assert self.feed(data)[0] == {"type": "error", "code": "Boom", "message": "b"}

    @pytest.mark.parametrize(
        ("headers", "payload", "says"),
        [
            ({":content-type": "application/json"}, b"{}", ":event-type"),
            ({":message-type": "exception"}, b"{}", ":exception-type"),
            ({":message-type": "error"}, b"", ":error-code"),
            ({":message-type": "surprise"}, b"", "surprise"),
            ({":event-type": "metadata"}, b"{nope", "not a JSON object"),
            ({":event-type": "metadata"}, b"[1]", "not a JSON object"),
        ],
    )
    def test_malformed(
        self, headers: dict[str, HeaderValue], payload: bytes, says: str
    ) -> None:
        """A message that is no ConverseStream event is one error, then nothing."""
        decoder = BedrockEventDecoder()
        good = event("messageStart", {})
        out = decoder.feed(good + encode_message(headers, payload) + good)
        assert out[0] == {"type": "messageStart"}
        (error,) = out[1:]
        assert isinstance(error, lh.LangHooksError)
        assert error.type == "protocol_error"
        assert says in error.message
        assert decoder.feed(good) == []
        assert decoder.end() == []

    def test_a_bad_frame_after_events(self) -> None:
        """Events before a corrupt frame are kept; the error follows them."""
        decoder = BedrockEventDecoder()
        out = decoder.feed(event("messageStart", {}) + b"\x00" * 12)
        assert out[0] == {"type": "messageStart"}
        assert isinstance(out[1], lh.LangHooksError)

    def test_a_cut_body_has_no_end(self) -> None:
        """A body cut inside a message gives no END_OF_STREAM."""
        decoder = BedrockEventDecoder()
        assert decoder.feed(event("messageStart", {})[:-1]) == []
        assert decoder.end() == []

    def test_text_is_refused(self) -> None:
        """A binary stream has no text form."""
        with pytest.raises(TypeError, match="binary"):
            BedrockEventDecoder().feed("data: {}")

    def test_stream_events_gives_it(self) -> None:
        """``stream_events("bedrock")`` is the eventstream decoder."""
        assert isinstance(stream_events("bedrock"), BedrockEventDecoder)
