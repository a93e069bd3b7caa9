"""``langhooks events FILE`` prints a recording; ``demo --record`` makes one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from langhooks import (
    ChatResponse,
    CompleteToolCall,
    FinishReason,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialThinkingContext,
    PartialToolCall,
    PartialToolCallContext,
    ReviewContext,
    StreamingHandle,
    TokenUsage,
    Tool,
    ToolCall,
    ToolProgress,
    ToolResult,
)
from langhooks.chain import LLMChain, OkResult
from langhooks.cli import main
from langhooks.cli.demo import WEATHER_TOOL
from langhooks.events import EventRecorder
from langhooks.models import ChatRequest, ScriptedChatModel


def show(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines ``langhooks events path`` prints."""
    assert main(["events", str(path)]) == 0
    return capsys.readouterr().out.splitlines()


class TestDemoRecord:
    def test_record_then_print(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """demo --record writes a recording that events prints like the demo."""
        path = tmp_path / "demo.jsonl"
        assert main(["demo", "--no-color", "--record", str(path)]) == 0
        capsys.readouterr()
        lines = show(path, capsys)
        assert lines[0].startswith("run ")
        assert sum(line.startswith("run ") for line in lines) == 1  # one run id
        expected = [
            "  on_run_start                 2 message(s)",
            "  on_llm_call_start            ScriptedChatModel, 2 message(s), 1 tool(s)",
            "  on_llm_new_delta             text: 'Let me check the weather in Paris.'",
            "  on_tool_call_identified      get_weather (Weather lookup)",
            "  on_llm_new_delta             stream complete (tokens in 48, out 36)",
            '  on_tool_call_review          get_weather {"city": "Paris"}',
            "  on_tool_interrupted          get_weather waits for a human",
            "  on_run_complete              status interrupted",
            '  on_tool_call_review          get_weather {"city": "Paris"} '
            "(human: approve)",
            "  on_tool_execution_completed  get_weather -> "
            "'Paris: 14°C, light rain until 16:00'",
            "  on_llm_token_usage           in 97, out 21, total 118",
        ]
        for line in expected:
            assert line in lines

    def test_unwritable_record_path(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A --record path that cannot be opened exits 2 with a message."""
        bad = tmp_path / "missing" / "demo.jsonl"
        assert main(["demo", "--no-color", "--record", str(bad)]) == 2
        assert "cannot record to" in capsys.readouterr().err


def chain() -> LLMChain:
    """A chain to record events of."""
    return LLMChain(ScriptedChatModel([])).add_message(Message.user("hi"))


CALL = ToolCall(call_id="c", name="get_weather", arguments={"city": "\x1b[31mRed"})
FAILED = ToolResult(
    tool_call_id="c", name="get_weather", content="\x1b[2Jdown", is_error=True
)


def record_everything(path: Path) -> None:
    """One record of every event, with text a terminal would obey."""
    c = chain()
    error = LangHooksError("timeout", "too \x1b[31mslow")
    response = ChatResponse(
        message=Message.assistant("x"), finish_reason=FinishReason.STOP
    )
    handle = StreamingHandle()
    with EventRecorder(path) as r:
        r.on_run_start(c)
        r.on_llm_call_start(
            c, ScriptedChatModel([]), ChatRequest(messages=[], tools=[WEATHER_TOOL])
        )
        r.on_llm_new_delta(c, [MessageDelta(thinking="hm"), MessageDelta(text="a")])
        r.on_llm_new_delta(c, [MessageDelta(text="\x1b[31m b")])
        r.on_llm_new_delta(
            c,
            [
                MessageDelta(
                    tool_call=PartialToolCall(
                        index=0, id=None, name="get_weather", partial_arguments=""
                    )
                )
            ],
        )
        r.on_llm_new_delta(c, [MessageDelta(status="complete")])
        r.on_llm_call_complete(c, response)
        r.on_llm_new_message(c, Message.user("x"))
        r.on_llm_ratelimit_info(c, {"remaining": 3})
        r.on_llm_response_headers(c, {"x-a": "1"})
        r.on_message_processing_error(c, Message.assistant("bad"))
        r.on_error_message_created(c, Message.user("fix it"))
        r.on_tool_call_identified(c, CALL, Tool("plain", WEATHER_TOOL.function))
        r.on_tool_call_review(c, CALL, WEATHER_TOOL, ReviewContext())
        r.on_tool_execution_started(c, CALL, WEATHER_TOOL)
        r.on_tool_pre_execution(c, CALL, WEATHER_TOOL)
        r.on_tool_progress(c, CALL, ToolProgress(3, 4, "\x1b[31mthree"))
        r.on_tool_progress(c, CALL, ToolProgress(0.5))
        r.on_tool_execution_failed(c, CALL, FAILED)
        r.on_tool_execution_exception(c, CALL, ValueError("\x1b[31mboom"))
        r.on_tool_interrupted(c, [FAILED])
        r.on_tool_response_created(c, Message.tool([FAILED]))
        r.on_llm_token_usage(c, TokenUsage(input_tokens=1, output_tokens=2))
        r.on_llm_error(c, error)
        r.on_retries_exceeded(c)
        r.on_error(c, error)
        r.on_run_complete(c, OkResult(chain=c))
        r.on_partial_thinking(
            PartialThinking(text="t"), PartialThinkingContext(handle=handle)
        )
        r.on_partial_response(
            PartialResponse(text="x" * 300), PartialResponseContext(handle=handle)
        )
        r.on_partial_tool_call(
            PartialToolCall(index=0, id="c", name="f", partial_arguments='{"a'),
            PartialToolCallContext(handle=handle),
        )
        r.on_complete_tool_call(CompleteToolCall(index=0, tool_call=CALL))
        r.on_unmapped_raw_event({"type": "ping", "long": "y" * 300})
        r.on_unmapped_raw_event(["ping", 1])
        r.on_complete_response(response)
        r.on_error(error)


class TestEventsCommand:
    def test_every_event_has_a_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every event prints one line under its name; streamed pieces join."""
        path = tmp_path / "all.jsonl"
        record_everything(path)
        lines = show(path, capsys)
        names = [line.split()[0] for line in lines]
        assert names[:6] == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_new_delta",
            "on_llm_new_delta",
            "on_llm_new_delta",
            "on_llm_call_complete",
        ]
        assert "  on_llm_new_delta             thinking: 'hm'" in lines
        assert "  on_llm_new_delta             text: 'a\\x1b[31m b'" in lines
        assert "  on_llm_new_delta             stream complete" in lines
        for name in [
            "on_llm_new_message",
            "on_llm_ratelimit_info",
            "on_llm_response_headers",
            "on_message_processing_error",
            "on_error_message_created",
            "on_tool_call_identified",
            "on_tool_execution_failed",
            "on_tool_execution_exception",
            "on_retries_exceeded",
            "on_run_complete",
            "on_partial_thinking",
            "on_partial_response",
            "on_partial_tool_call",
            "on_complete_tool_call",
            "on_unmapped_raw_event",
            "on_complete_response",
        ]:
            assert name in names, name
        assert names.count("on_error") == 2
        assert '  on_unmapped_raw_event        raw_event=["ping", 1]' in lines
        assert (
            "  on_tool_progress             get_weather 3/4 (75%) \\x1b[31mthree"
            in lines
        )
        assert "  on_tool_progress             get_weather 0.5" in lines

    def test_wire_text_escaped(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Text from the model or a tool cannot drive the terminal: it is shown
        escaped, and long values are cut."""
        path = tmp_path / "all.jsonl"
        record_everything(path)
        lines = show(path, capsys)
        assert not any("\x1b" in line for line in lines)
        assert any("too \\x1b[31mslow" in line for line in lines)
        assert any("\\u001b[31mRed" in line for line in lines)
        assert max(len(line) for line in lines) < 260

    def test_names_and_raw_text_escaped(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A tool's name and characters JSON leaves as they are (a C1 control,
        a line separator) are shown escaped too."""
        path = tmp_path / "names.jsonl"
        call = ToolCall(call_id="c", name="get\x1b[2Jweather", arguments={})
        with EventRecorder(path) as r:
            r.on_tool_call_review(chain(), call, WEATHER_TOOL, ReviewContext())
            r.on_unmapped_raw_event({"type": "\x9b31m\u2028"})
        lines = show(path, capsys)
        assert not any(c in "".join(lines) for c in "\x1b\x9b\u2028")
        assert any("get\\x1b[2Jweather {}" in line for line in lines)
        assert any("\\x9b31m\\u2028" in line for line in lines)

    def test_unreadable(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A file that cannot be read exits 2 with a message."""
        assert main(["events", str(tmp_path / "nope.jsonl")]) == 2
        assert "cannot read" in capsys.readouterr().err

    def test_not_a_recording(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A file that is not a recording exits 2 after what it could print."""
        path = tmp_path / "bad.jsonl"
        good = tmp_path / "good.jsonl"
        with EventRecorder(good) as recorder:
            recorder.on_partial_response(
                PartialResponse(text="hi"),
                PartialResponseContext(handle=StreamingHandle()),
            )
        path.write_text(good.read_text() + "not json\n" + good.read_text())
        assert main(["events", str(path)]) == 2
        captured = capsys.readouterr()
        assert "line 2 is not JSON" in captured.err
        assert "text: 'hi'" in captured.out


REPLAY_FIXTURE = (
    Path(__file__).parent / "models" / "fixtures" / "openai_chat_refusal.sse"
)


def long_recording(tmp_path: Path) -> Path:
    """A recording whose printout is far larger than a pipe holds."""
    one = tmp_path / "one.jsonl"
    assert main(["demo", "--no-color", "--record", str(one)]) == 0
    path = tmp_path / "long.jsonl"
    path.write_text(one.read_text() * 300)
    return path


class TestClosedPipe:
    def test_events_into_head_ends_quietly(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``langhooks events FILE | head``: when the reader closes the pipe the
        command ends with no message and the status of a SIGPIPE (141), not 2
        blaming the file."""
        path = long_recording(tmp_path)
        capsys.readouterr()
        with subprocess.Popen(
            [sys.executable, "-m", "langhooks", "events", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process:
            assert process.stdout is not None
            assert process.stderr is not None
            first = process.stdout.readline()
            process.stdout.close()  # what head does after its lines
            errors = process.stderr.read()
            status = process.wait()
        assert first.startswith(b"run ")
        assert errors == b""
        assert status == 141

    @pytest.mark.parametrize("buffering", [1, -1])
    def test_closed_pipe_in_process(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
        buffering: int,
    ) -> None:
        """main() turns a write into a closed pipe, while the command prints or
        when its output is flushed at the end, into status 141 and no message
        (a real pipe, in this process), for events and replay alike."""
        path = tmp_path / "one.jsonl"
        assert main(["demo", "--no-color", "--record", str(path)]) == 0
        capsys.readouterr()
        for argv in (
            ["events", str(path)],
            ["replay", "--format", "openai-chat", str(REPLAY_FIXTURE)],
        ):
            reader, writer = os.pipe()
            os.close(reader)
            with open(writer, "w", buffering=buffering, encoding="utf-8") as stdout:
                monkeypatch.setattr(sys, "stdout", stdout)
                assert main(argv) == 141
                monkeypatch.undo()
        assert capsys.readouterr().err == ""
