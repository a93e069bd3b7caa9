"""The incremental SSE and NDJSON decoders, and the wire decoder over them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import langhooks as lh
from langhooks.models import replay_stream
from langhooks.models._sse import (
    MAX_LINE_BYTES,
    Chunk,
    NDJSONDecoder,
    SSEDecoder,
    WireDecoder,
    stream_events,
)

from . import Recorder, local_fixture


def _sse(*chunks: Chunk) -> list[tuple[str | None, str]]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.end()


def _split_everywhere(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


class TestSSEDecoder:
    """The WHATWG event-stream rules, over chunks split anywhere."""

    def test_data_lines_join_with_newline(self) -> None:
        """Several data: lines of one event join with \\n."""
        assert _sse(b"data: a\ndata: b\n\n") == [(None, "a\nb")]

    def test_comments_are_ignored(self) -> None:
        """Lines starting with a colon (keep-alives) are not data."""
        assert _sse(b": OPENROUTER PROCESSING\n\n:\ndata: x\n\n") == [(None, "x")]

    def test_event_names_and_ids(self) -> None:
        """event: names the next event only; id: sets last_event_id."""
        decoder = SSEDecoder()
        events = decoder.feed(b"event: ping\nid: 42\ndata: {}\n\ndata: y\n\n")
        assert events == [("ping", "{}"), (None, "y")]
        assert decoder.last_event_id == "42"

    def test_id_with_nul_is_ignored(self) -> None:
        """An id containing NUL does not change last_event_id."""
        decoder = SSEDecoder()
        decoder.feed(b"id: 1\n\nid: a\0b\n\n")
        assert decoder.last_event_id == "1"

    def test_one_leading_space_is_dropped(self) -> None:
        """Only the first space after the colon goes; no colon means empty value."""
        assert _sse(b"data:x\n\ndata:  y\n\ndata\n\n") == [
            (None, "x"),
            (None, " y"),
            (None, ""),
        ]

    def test_unknown_fields_and_retry_are_ignored(self) -> None:
        """retry: and unknown fields change nothing."""
        assert _sse(b"retry: 1000\nfoo: bar\ndata: z\n\n") == [(None, "z")]

    def test_event_without_data_is_not_dispatched(self) -> None:
        """A blank line after only an event: name dispatches nothing."""
        assert _sse(b"event: ping\n\ndata: a\n\n") == [(None, "a")]

    @pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
    def test_line_endings(self, newline: bytes) -> None:
        """LF, CRLF and CR all end lines, also split between chunks."""
        body = b"event: e" + newline + b"data: 1" + newline + newline + b"data: 2"
        body += newline + newline
        expected = [("e", "1"), (None, "2")]
        assert _sse(body) == expected
        assert _sse(*_split_everywhere(body)) == expected

    def test_crlf_split_between_chunks(self) -> None:
        """A CR at the end of one chunk and LF at the start of the next is one end."""
        assert _sse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [
            (None, "a"),
            (None, "b"),
        ]

    def test_multibyte_character_split(self) -> None:
        """A UTF-8 character split across chunks decodes whole."""
        body = "data: 17 \u00d7 23 → 391 🎉\n\n".encode()
        assert _sse(*_split_everywhere(body)) == [(None, "17 \u00d7 23 → 391 🎉")]

    def test_str_chunks(self) -> None:
        """str chunks decode like their UTF-8 bytes."""
        assert _sse("data: é", "\n\n") == [(None, "é")]

    def test_byte_order_mark(self) -> None:
        """A leading UTF-8 BOM is dropped, also when split."""
        assert _sse(b"\xef\xbb\xbfdata: a\n\n") == [(None, "a")]
        assert _sse(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == [(None, "a")]
        assert _sse(b"\xef\xbb", b"x: 1\ndata: b\n\n") == [(None, "b")]

    def test_end_dispatches_unterminated_event(self) -> None:
        """At the end, a last event without its blank line, or its newline, counts."""
        assert _sse(b"data: a\n") == [(None, "a")]
        assert _sse(b"data: a") == [(None, "a")]
        assert _sse(b"") == []

    def test_bytearray_and_memoryview_chunks(self) -> None:
        """bytearray and memoryview chunks are accepted."""
        assert _sse(bytearray(b"data: a\n"), memoryview(b"\n")) == [(None, "a")]

    def test_other_chunk_types_are_rejected(self) -> None:
        """A chunk that is neither bytes nor str is a TypeError."""
        with pytest.raises(TypeError, match="bytes or str"):
            SSEDecoder().feed(5)  # type: ignore[arg-type]

    def test_fixture_split_everywhere(self) -> None:
        """A recorded stream decodes the same in one chunk and byte by byte."""
        body = local_fixture("anthropic_thinking_tool.sse").read_bytes()
        whole = _sse(body)
        assert len(whole) == 22
        assert _sse(*_split_everywhere(body)) == whole

    @given(st.data())
    def test_random_splits(self, data: st.DataObject) -> None:
        """Any split of a stream decodes to the same events."""
        body = "event: a\r\ndata: x\r\ndata: ü\r\n\r\n: c\n\ndata: 😀\r\r".encode()
        cuts = sorted(data.draw(st.sets(st.integers(0, len(body)))))
        pieces = [
            body[i:j] for i, j in zip([0, *cuts], [*cuts, len(body)], strict=True)
        ]
        assert _sse(*pieces) == [("a", "x\nü"), (None, "😀")]


class TestLimits:
    """A line or event over MAX_LINE_BYTES is a protocol_error, not a hang."""

    def test_limit_is_documented_size(self) -> None:
        """The limit is 8 MiB."""
        assert MAX_LINE_BYTES == 8 * 1024 * 1024

    def test_ten_megabyte_line_in_pieces(self) -> None:
        """A 10 MB line fed in 64 KiB pieces fails once it passes the limit."""
        decoder = SSEDecoder()
        decoder.feed(b"data: ")
        piece = b"x" * 65536
        fed = 0
        error: lh.LangHooksError | None = None
        while fed < 10_000_000 and error is None:
            try:
                decoder.feed(piece)
            except lh.LangHooksError as exc:
                error = exc
            fed += len(piece)
        assert error is not None
        assert error.type == "protocol_error"
        assert fed < 10_000_000

    def test_ten_megabyte_line_in_one_chunk(self) -> None:
        """A 10 MB line arriving whole with more after it fails too."""
        with pytest.raises(lh.LangHooksError, match="limit"):
            SSEDecoder().feed(b"data: " + b"x" * 10_000_000 + b"\ndata")

    def test_event_built_of_many_lines(self) -> None:
        """Many data: lines adding up past the limit fail."""
        line = b"data: " + b"y" * (1024 * 1024) + b"\n"
        with pytest.raises(lh.LangHooksError, match="limit"):
            SSEDecoder().feed(line * 9)
        unspaced = b"data:" + b"y" * (1024 * 1024) + b"\n"
        with pytest.raises(lh.LangHooksError, match="limit"):
            SSEDecoder().feed(unspaced * 9)

    def test_unfinished_line_after_a_newline(self) -> None:
        """An unfinished line over the limit after a complete one fails too."""
        with pytest.raises(lh.LangHooksError, match="limit"):
            NDJSONDecoder().feed(b"{}\n" + b" " * (MAX_LINE_BYTES + 1))

    def test_ndjson_line(self) -> None:
        """An NDJSON line over the limit fails."""
        with pytest.raises(lh.LangHooksError, match="limit"):
            NDJSONDecoder().feed(b"{" + b" " * (MAX_LINE_BYTES + 1))


class TestOutputBeforeALineOverTheLimit:
    """What the stream sent before a line over the limit is delivered, then the
    error: an oversized line never swallows the events before it."""

    _BIG = b"x" * (MAX_LINE_BYTES + 1)

    @pytest.mark.parametrize("newline", [b"", b"\n\n"])
    def test_sse_event_in_the_same_chunk(self, newline: bytes) -> None:
        """An SSE event and an oversized line in one chunk: the event, one error."""
        decoder = WireDecoder("openai-chat")
        event, error = decoder.feed(b'data: {"a": 1}\n\ndata: ' + self._BIG + newline)
        assert event == {"a": 1}
        assert isinstance(error, lh.LangHooksError)
        assert error.type == "protocol_error"
        assert decoder.feed(b'data: {"b": 2}\n\n') == []
        assert decoder.end() == []

    @pytest.mark.parametrize("newline", [b"", b"\n"])
    def test_ndjson_line_in_the_same_chunk(self, newline: bytes) -> None:
        """An NDJSON line and an oversized one in one chunk: the line, one error."""
        decoder = WireDecoder("ollama")
        line, error = decoder.feed(b'{"a": 1}\n' + self._BIG + newline + b'{"b": 2}\n')
        assert line == {"a": 1}
        assert isinstance(error, lh.LangHooksError)
        assert "limit" in str(error)

    def test_replay_delivers_the_text_then_on_error(self) -> None:
        """replay_stream delivers the text before the bad line, then on_error."""
        recorder = Recorder()
        chunk = (
            b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
            b"data: " + self._BIG
        )
        with pytest.raises(lh.LangHooksError, match="limit") as caught:
            replay_stream([chunk], format="openai-chat", handler=recorder)
        assert recorder.text == "Hi"
        assert recorder.terminal_calls == [("error", caught.value)]

    def test_standalone_decoders_stay_failed(self) -> None:
        """After a line over the limit, a decoder's next feed and end raise it too."""
        for decoder in (SSEDecoder(), NDJSONDecoder()):
            with pytest.raises(lh.LangHooksError, match="limit"):
                decoder.feed(self._BIG)
            with pytest.raises(lh.LangHooksError, match="limit"):
                decoder.feed(b"{}\n\n")
            with pytest.raises(lh.LangHooksError, match="limit"):
                decoder.end()


class TestNDJSONDecoder:
    """One payload per line, over chunks split anywhere."""

    def test_lines_and_blank_lines(self) -> None:
        """Lines split on LF or CRLF; blank lines are skipped."""
        decoder = NDJSONDecoder()
        assert decoder.feed(b'{"a":1}\r\n\n{"b"') == ['{"a":1}']
        assert decoder.feed(b":2}\n") == ['{"b":2}']
        assert decoder.end() == []

    def test_end_returns_unterminated_line(self) -> None:
        """A last line without its newline is returned at the end."""
        decoder = NDJSONDecoder()
        assert decoder.feed("{}") == []
        assert decoder.end() == ["{}"]

    def test_split_everywhere(self) -> None:
        """A recorded stream decodes the same byte by byte."""
        body = local_fixture("ollama_chat_tools.ndjson").read_bytes()
        decoder = NDJSONDecoder()
        lines = [
            line for piece in _split_everywhere(body) for line in decoder.feed(piece)
        ]
        assert lines == body.decode().splitlines()


class TestWireDecoder:
    """JSON parsing over the decoders: what a driver's feed takes."""

    def test_done_sentinel_and_objects(self) -> None:
        """[DONE] passes as a string; data is parsed to objects."""
        decoder = stream_events("openai-chat")
        assert decoder.feed(b'data: {"a": 1}\n\ndata: [DONE]\n\n') == [
            {"a": 1},
            "[DONE]",
        ]

    def test_event_name_fills_missing_type(self) -> None:
        """An event: name becomes the object's type when it has none."""
        decoder = stream_events("anthropic")
        assert decoder.feed(
            b'event: ping\ndata: {}\n\nevent: x\ndata: {"type": "y"}\n\n'
        ) == [
            {"type": "ping"},
            {"type": "y"},
        ]

    @pytest.mark.parametrize(
        ("format", "body"),
        [
            ("openai-chat", b"data: {nope\n\ndata: {}\n\n"),
            ("openai-chat", b"data: [1]\n\n"),
            ("ollama", b"{nope\n{}\n"),
            ("ollama", b'"text"\n'),
        ],
    )
    def test_malformed_payload_is_one_error(self, format: str, body: bytes) -> None:
        """Bad JSON or a non-object yields one protocol_error, then nothing."""
        decoder = WireDecoder(format)
        (error,) = decoder.feed(body)
        assert isinstance(error, lh.LangHooksError)
        assert error.type == "protocol_error"
        assert decoder.feed(b"data: {}\n\n{}\n") == []
        assert decoder.end() == []

    def test_too_long_line_is_one_error(self) -> None:
        """A line over the limit yields one protocol_error item."""
        decoder = WireDecoder("ollama")
        (error,) = decoder.feed(b"x" * (MAX_LINE_BYTES + 1))
        assert isinstance(error, lh.LangHooksError)

    @pytest.mark.parametrize(
        ("format", "body"),
        [
            ("openai-chat", b'data: {"a": 1}\n\ndata: {"cut'),
            ("ollama", b'{"a": 1}\n{"cut'),
        ],
    )
    def test_cut_off_last_payload_is_dropped(self, format: str, body: bytes) -> None:
        """At the end, a last payload that does not parse was cut off: dropped."""
        decoder = WireDecoder(format)
        assert decoder.feed(body) == [{"a": 1}]
        assert decoder.end() == []

    def test_complete_last_payload_at_end(self) -> None:
        """At the end, a last payload that parses is delivered."""
        decoder = WireDecoder("ollama")
        assert decoder.feed(b'{"a": 1}') == []
        assert decoder.end() == [{"a": 1}]
        sse = WireDecoder("openai-responses")
        assert sse.feed(b'data: {"b": 2}') == []
        assert sse.end() == [{"b": 2}]

    def test_unknown_format(self) -> None:
        """stream_events rejects an unknown format by name."""
        with pytest.raises(ValueError, match="grpc"):
            stream_events("grpc")

    def test_non_object_at_end_is_an_error(self) -> None:
        """At the end, a last payload that parses to a non-object is an error."""
        decoder = WireDecoder("ollama")
        decoder.feed(b"[1]")
        (error,) = decoder.end()
        assert isinstance(error, lh.LangHooksError)
