"""replay_stream over paths and chunk iterables, and the ``langhooks replay`` CLI."""

from __future__ import annotations

import io
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import langhooks as lh
from langhooks.cli import main
from langhooks.models import replay_stream

from . import Recorder, local_fixture

RECORDED = [
    ("openai_chat_tools.sse", "openai-chat"),
    ("openai_chat_error_midstream.sse", "openai-chat"),
    ("openai_compat_reasoning_content.sse", "openai-chat"),
    ("openai_responses.sse", "openai-responses"),
    ("anthropic_thinking_tool.sse", "anthropic"),
    ("ollama_chat.ndjson", "ollama"),
    ("ollama_chat_tools.ndjson", "ollama"),
]
LOCAL = [
    ("openai_chat_keepalive_crlf.sse", "openai-chat"),
    ("openai_chat_interleaved_tools.sse", "openai-chat"),
    ("anthropic_max_tokens_tool.sse", "anthropic"),
    ("openai_responses_error_flat.sse", "openai-responses"),
    ("ollama_error_midstream.ndjson", "ollama"),
]


def _outcome(source: object, format: str) -> tuple[list[tuple[str, object]], object]:
    """The events a replay delivers and what it returns or raises."""
    recorder = Recorder()
    try:
        result: object = replay_stream(
            source,  # type: ignore[arg-type]
            format=format,  # type: ignore[arg-type]
            handler=recorder,
        )
    except lh.LangHooksError as error:
        result = (error.type, error.message)
    assert recorder.violations == []
    assert len(recorder.terminal_calls) <= 1
    events = [
        (name, (payload.type, payload.message) if name == "error" else payload)
        for name, payload in recorder.events
    ]
    return events, result


class TestSources:
    """Paths, str and bytes chunks give the same replay."""

    @pytest.mark.parametrize(("name", "format"), RECORDED + LOCAL)
    def test_split_at_every_byte(self, name: str, format: str) -> None:
        """Byte-sized chunks replay exactly like the whole file."""
        path = local_fixture(name)
        data = path.read_bytes()
        whole = _outcome(path, format)
        assert _outcome([data[i : i + 1] for i in range(len(data))], format) == whole

    @pytest.mark.parametrize(("name", "format"), RECORDED + LOCAL)
    def test_random_splits(self, name: str, format: str) -> None:
        """Random splits, as bytes or as str, replay like the whole file."""
        path = local_fixture(name)
        data = path.read_bytes()
        text = data.decode()
        whole = _outcome(str(path), format)
        rng = random.Random(name)
        for _ in range(5):
            cuts = sorted(rng.sample(range(1, len(data)), 12))
            edges = list(zip([0, *cuts], [*cuts, len(data)], strict=True))
            assert _outcome([data[i:j] for i, j in edges], format) == whole
            text_cuts = sorted(rng.sample(range(1, len(text)), 12))
            text_edges = zip([0, *text_cuts], [*text_cuts, len(text)], strict=True)
            assert _outcome((text[i:j] for i, j in text_edges), format) == whole

    def test_pathlike_and_str_path(self) -> None:
        """A pathlib.Path and a str path are both files to read."""
        path = local_fixture("ollama_chat.ndjson")
        assert _outcome(path, "ollama") == _outcome(str(path), "ollama")

    def test_bytes_source_is_rejected(self) -> None:
        """A bare bytes object is not a source (it would iterate ints)."""
        with pytest.raises(TypeError, match="got bytes"):
            replay_stream(b"data: x", format="openai-chat", handler=Recorder())  # type: ignore[arg-type]

    def test_unknown_format(self) -> None:
        """An unknown format is a ValueError naming the known ones."""
        with pytest.raises(ValueError, match="openai-responses"):
            replay_stream([], format="openai", handler=Recorder())  # type: ignore[arg-type]

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file is an OSError from open, before any callback."""
        recorder = Recorder()
        with pytest.raises(FileNotFoundError):
            replay_stream(tmp_path / "none.sse", format="anthropic", handler=recorder)
        assert recorder.events == []

    def test_failing_source(self) -> None:
        """A source that raises mid-way is one stream_error, after on_error."""

        def chunks() -> Iterator[bytes]:
            yield b'{"message": {"content": "a"}, "done": false}\n'
            raise ConnectionResetError("peer reset")

        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match="peer reset") as caught:
            replay_stream(chunks(), format="ollama", handler=recorder)
        assert caught.value.type == "stream_error"
        assert isinstance(caught.value.original, ConnectionResetError)
        assert recorder.names == ["partial_response", "error"]

    def test_failing_source_after_cancel(self) -> None:
        """A source that fails after a cancel returns the partial response."""

        handle = lh.StreamingHandle()

        def cancelling() -> Iterator[bytes]:
            yield b'{"message": {"content": "a"}, "done": false}\n'
            handle.cancel()  # as another thread would, closing the connection
            raise ConnectionResetError("closed because cancelled")

        recorder = Recorder()
        response = replay_stream(
            cancelling(), format="ollama", handler=recorder, handle=handle
        )
        assert response.message.status == "cancelled"
        assert response.message.text == "a"
        assert recorder.names == ["partial_response"]

    def test_events_after_terminal_are_not_read(self) -> None:
        """Replay stops at the terminal event; later chunks are not consumed."""
        consumed: list[str] = []

        def chunks() -> Iterator[str]:
            for chunk in ('{"done": true}\n', '{"message": {"content": "late"}}\n'):
                consumed.append(chunk)
                yield chunk

        recorder = Recorder()
        replay_stream(chunks(), format="ollama", handler=recorder)
        assert len(consumed) == 1
        assert recorder.names == ["complete_response"]

    def test_a_generator_source_is_closed_at_the_end(self) -> None:
        """A generator source the stream ended before exhausting is closed when
        replay_stream returns (its cleanup runs then, not at garbage collection)."""
        closed: list[bool] = []

        def chunks() -> Iterator[str]:
            try:
                yield '{"done": true}\n'
                yield '{"message": {"content": "late"}}\n'
            finally:
                closed.append(True)

        source = chunks()
        replay_stream(source, format="ollama", handler=Recorder())
        assert closed == [True]

    def test_terminal_event_in_last_unterminated_line(self) -> None:
        """A final line without its newline still ends the stream."""
        response = replay_stream(
            ['{"message": {"content": "x"}, "done": true}'],
            format="ollama",
            handler=Recorder(),
        )
        assert response.message.text == "x"

    def test_unterminated_last_line_that_does_not_end_the_stream(self) -> None:
        """A final line that parses but is no terminal event leaves it truncated."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match="ended before"):
            replay_stream(
                ['{"message": {"content": "x"}}'], format="ollama", handler=recorder
            )
        assert recorder.names == ["partial_response", "error"]

    def test_events_after_terminal_in_the_same_chunk(self) -> None:
        """Events after [DONE] in the same chunk are ignored."""
        chunk = "data: [DONE]\n\ndata: {nope\n\n"
        recorder = Recorder()
        replay_stream([chunk], format="openai-chat", handler=recorder)
        assert recorder.names == ["complete_response"]

    def test_ten_megabyte_line(self) -> None:
        """A 10 MB line is a protocol_error through on_error, not a hang."""

        def chunks() -> Iterator[bytes]:
            yield b'data: {"choices": [{"delta": {"content": "'
            for _ in range(160):
                yield b"x" * 65536

        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match="limit") as caught:
            replay_stream(chunks(), format="openai-chat", handler=recorder)
        assert caught.value.type == "protocol_error"
        assert recorder.names == ["error"]

    def test_malformed_json_line(self) -> None:
        """A data line that is not JSON is one protocol_error through on_error."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match="not valid JSON"):
            replay_stream(
                ["event: message_start\ndata: {oops}\n\n"],
                format="anthropic",
                handler=recorder,
            )
        assert recorder.names == ["error"]


class TestCLI:
    """``langhooks replay FILE --format FORMAT``."""

    def test_prints_each_event_and_the_response(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """One line per event, then the aggregate; exit 0."""
        path = local_fixture("anthropic_thinking_tool.sse")
        status = main(["replay", str(path), "--format", "anthropic"])
        out = capsys.readouterr().out
        assert status == 0
        lines = out.splitlines()
        assert lines[0] == 'on_unmapped_raw_event   {"type": "ping"}'
        assert lines[1] == (
            "on_partial_thinking     "
            "'The user is asking for the current weather in Paris.'"
        )
        assert 'on_partial_response     "I\'ll check"' in lines
        assert (
            "on_complete_tool_call   #0 get_weather toolu_01T1x1fJ34qAmk2tNTrN7Up6 "
            '{"city": "Paris", "unit": "celsius"}'
        ) in lines
        assert "on_complete_response    finish=tool_execution status=complete" in lines
        assert "  finish_reason:     tool_execution" in lines
        assert "  usage:             input 2660, output 163, total 2823" in lines
        assert "  id:                msg_01Jc7XqRwq2TtHn8bV5kZs3M" in lines

    def test_partial_tool_call_line(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Tool fragments show index, name, id and the fragment."""
        path = local_fixture("ollama_tool_on_final_line.ndjson")
        assert main(["replay", str(path), "--format", "ollama"]) == 0
        out = capsys.readouterr().out
        line = 'on_partial_tool_call    #0 get_weather - \'{"city": "Oslo"}\''
        assert line in out.splitlines()
        assert "  id:                -" in out.splitlines()

    def test_stream_error_exits_1(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A failing stream prints the error event and the error; exit 1."""
        path = local_fixture("openai_chat_error_midstream.sse")
        status = main(["replay", str(path), "--format", "openai-chat"])
        captured = capsys.readouterr()
        assert status == 1
        assert captured.out.splitlines()[-1].startswith(
            "on_error                stream_error:"
        )
        assert "the stream failed: stream_error" in captured.err

    def test_unknown_format_exits_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An unknown format is a clear message and exit 2."""
        path = local_fixture("ollama_chat.ndjson")
        assert main(["replay", str(path), "--format", "grpc"]) == 2
        err = capsys.readouterr().err
        assert "unknown format 'grpc'" in err
        assert "openai-chat" in err

    def test_missing_file_exits_2(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A missing file is a clear message and exit 2."""
        missing = tmp_path / "nope.sse"
        assert main(["replay", str(missing), "--format", "anthropic"]) == 2
        assert "cannot read" in capsys.readouterr().err

    def test_long_raw_events_are_shortened(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """An unmapped event is shown on one line of at most 200 characters."""
        body = (
            'event: x\ndata: {"type": "x", "pad": "' + "p" * 500 + '"}\n\n'
            'event: message_stop\ndata: {"type": "message_stop"}\n\n'
        )
        path = tmp_path / "long.sse"
        path.write_text(body)
        assert main(["replay", str(path), "--format", "anthropic"]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        assert first.startswith("on_unmapped_raw_event")
        assert first.endswith("...")
        assert len(first) == 24 + 200


def _write(tmp_path: Path, name: str, body: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    path.write_bytes(body)
    return str(path)


_HOSTILE = (
    'data: {"id": "chatcmpl-\\u001b[2J\\ud800", "model": "m\\u009b31m",'
    ' "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,'
    ' "id": "c\\u001b]0;title\\u0007", "function": {"name": "f\\u2028x",'
    ' "arguments": "{\\"a\\": \\"\\\\ud800\\\\u001b\\"}"}}]},'
    ' "finish_reason": "tool_calls"}]}\n\n'
    "data: [DONE]\n\n"
)


class TestCLIHardening:
    """``langhooks replay`` on hostile or mistaken input: one-line messages."""

    def test_wire_fields_are_escaped(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Ids, names, model and arguments print escaped: no escape sequence
        reaches the terminal and a lone surrogate is no traceback."""
        path = _write(tmp_path, "hostile.sse", _HOSTILE)
        assert main(["replay", path, "--format", "openai-chat"]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out
        assert "\x07" not in out
        assert "\x9b" not in out
        assert "\u2028" not in out
        assert "\ud800" not in out
        assert "#0 f\\u2028x c\\x1b]0;title\\x07 " in out
        assert "  id:                chatcmpl-\\x1b[2J\\ud800" in out.splitlines()
        assert "  model:             m\\x9b31m" in out.splitlines()
        assert '{"a": "\\ud800\\u001b"}' in out

    def test_error_message_with_a_surrogate(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """An error message holding a lone surrogate prints escaped; exit 1."""
        body = 'data: {"error": {"message": "bad \\ud800\\u001b[0m", "code": "x"}}\n\n'
        path = _write(tmp_path, "error.sse", body)
        assert main(["replay", path, "--format", "openai-chat"]) == 1
        captured = capsys.readouterr()
        assert "bad \\ud800\\x1b[0m" in captured.err
        assert "bad \\ud800\\x1b[0m" in captured.out
        assert "\x1b" not in captured.out + captured.err

    def test_unencodable_output_is_escaped(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Text an ASCII terminal cannot show is escaped instead of failing."""
        out = io.BytesIO()
        wrapper = io.TextIOWrapper(out, encoding="ascii")
        monkeypatch.setattr(sys, "stdout", wrapper)
        body = '{"message": {"content": "h\\u00e9"}, "done": true}\n'
        assert main(["replay", _write(tmp_path, "t.ndjson", body)]) == 0
        wrapper.flush()
        assert b"'h\\xe9'" in out.getvalue()

    def test_output_without_reconfigure(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """A stdout that cannot be reconfigured (a StringIO) is written as it is."""
        out = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        body = '{"message": {"content": "hi"}, "done": true}\n'
        assert main(["replay", _write(tmp_path, "t.ndjson", body)]) == 0
        assert "on_partial_response     'hi'" in out.getvalue()

    def test_stdin(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``-`` reads the capture from standard input."""
        data = local_fixture("ollama_chat.ndjson").read_bytes()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        assert main(["replay", "-", "--format", "ollama"]) == 0
        assert "complete_response" in capsys.readouterr().out

    def test_ndjson_implies_ollama(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A .ndjson file needs no --format: it is Ollama's."""
        assert main(["replay", str(local_fixture("ollama_chat.ndjson"))]) == 0
        assert "finish_reason:     stop" in capsys.readouterr().out

    def test_format_needed(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Any other file without --format is a one-line message; exit 2."""
        path = str(local_fixture("anthropic_thinking_tool.sse"))
        assert main(["replay", path]) == 2
        assert "give the stream's format: --format FORMAT" in capsys.readouterr().err

    @pytest.mark.parametrize(
        ("fixture", "given", "guess"),
        [
            ("anthropic_thinking_tool.sse", "openai-chat", "anthropic"),
            ("openai_chat_tools.sse", "anthropic", "openai-chat"),
            ("openai_responses.sse", "anthropic", "openai-responses"),
            ("anthropic_thinking_tool.sse", "openai-responses", "anthropic"),
            ("gemini_thinking_tool.sse", "openai-chat", "gemini"),
            ("cohere_thinking_text.sse", "gemini", "cohere"),
        ],
    )
    def test_wrong_format_suggests_the_right_one(
        self,
        capsys: pytest.CaptureFixture[str],
        fixture: str,
        given: str,
        guess: str,
    ) -> None:
        """A capture replayed in the wrong format says which one it looks like."""
        path = str(local_fixture(fixture))
        assert main(["replay", path, "--format", given]) == 1
        err = capsys.readouterr().err
        article = "an" if guess[0] in "ao" else "a"
        hint = f"hint: this looks like {article} {guess} stream: try --format {guess}"
        assert hint in err

    def test_ndjson_as_sse_decodes_nothing(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An Ollama capture read as SSE decodes nothing, and says so; exit 2."""
        path = str(local_fixture("ollama_chat.ndjson"))
        assert main(["replay", path, "--format", "openai-chat"]) == 2
        err = capsys.readouterr().err
        assert "decodes as an openai-chat stream" in err
        assert "try --format ollama" in err

    def test_empty_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """An empty file decodes nothing: said, with the generic hint; exit 2."""
        path = _write(tmp_path, "empty.sse", b"")
        assert main(["replay", path, "--format", "anthropic"]) == 2
        err = capsys.readouterr().err
        assert "nothing in" in err
        assert "check that --format anthropic matches the capture" in err

    def test_broken_stream_of_the_right_format_has_no_hint(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A truncated stream that looks like its format gets no format hint."""
        path = str(local_fixture("openai_chat_truncated.sse"))
        assert main(["replay", path, "--format", "openai-chat"]) == 1
        assert "hint" not in capsys.readouterr().err

    def test_nothing_decodes_from_a_capture_of_the_format(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Event names without data decode to nothing; no format hint then."""
        path = _write(tmp_path, "names.sse", "event: message_start\n\n" * 3)
        assert main(["replay", path, "--format", "anthropic"]) == 2
        err = capsys.readouterr().err
        assert "decodes as an anthropic stream" in err
        assert "hint" not in err

    def test_a_long_capture_is_guessed_from_its_start(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Only the start of a long capture is kept to guess its format."""
        line = '{"message": {"content": "' + "x" * 1000 + '"}, "done": false}\n'
        path = _write(tmp_path, "long.ndjson", line * 200)
        assert main(["replay", path, "--format", "anthropic"]) == 2
        assert "try --format ollama" in capsys.readouterr().err
