"""``ConsoleHandler`` prints every chain event on a readable line."""

from __future__ import annotations

import io
import threading

import pytest
from typing_extensions import override

from langhooks import (
    LangHooksError,
    Message,
    MessageDelta,
    TokenUsage,
    ToolCall,
    ToolProgress,
    ToolResult,
)
from langhooks.chain import LLMChain, RetryPolicy, Tool
from langhooks.integrations.console import ConsoleHandler
from langhooks.models import ScriptedChatModel, ScriptedTurn


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    @override
    def isatty(self) -> bool:
        return True


def echo(arguments: object, context: object) -> str:
    """A tool that answers 'echoed'."""
    return "echoed"


ECHO = Tool("echo", echo, display_text="Echo")


def run_once(handler: ConsoleHandler) -> None:
    """One run: a tool call, its result, then an answer."""
    model = ScriptedChatModel(
        [
            ScriptedTurn(
                thinking="Need it.",
                text="Calling it.",
                tool_calls=[ToolCall(call_id="c1", name="echo", arguments={"x": 1})],
                usage=TokenUsage(input_tokens=3, output_tokens=2),
            ),
            ScriptedTurn(text="Done."),
        ]
    )
    chain = LLMChain(model, tools=[ECHO], callbacks=[handler])
    result = chain.add_message(Message.user("go")).run()
    assert result.status == "ok"


class TestOutput:
    """Each event gets one line; streamed text continues its line."""

    def test_a_run(self) -> None:
        """A run with a tool prints its events in order, without colour."""
        out = io.StringIO()
        handler = ConsoleHandler(out, color=False)
        run_once(handler)
        lines = out.getvalue().splitlines()
        assert lines[0].startswith("  on_run_start                 run ")
        assert lines[1] == (
            "  on_llm_call_start            ScriptedChatModel, 1 message(s), 1 tool(s)"
        )
        assert lines[2:6] == [
            "  on_llm_new_delta             thinking: Need it.",
            "  on_llm_new_delta             text: Calling it.",
            '  on_llm_new_delta             tool call echo: {"x":1}',
            "  on_tool_call_identified      echo (Echo)",
        ]
        assert "  on_tool_execution_started    echo(x=1)" in lines
        assert "  on_tool_pre_execution        echo in invocation echo" in lines
        assert "  on_tool_execution_completed  echo -> echoed" in lines
        assert "  on_llm_token_usage           in 3, out 2, total 5" in lines
        assert (
            "  on_llm_call_complete         finish=tool_execution status=complete"
            in lines
        )
        assert lines[-1] == "  on_run_complete              status ok"
        assert handler.lines == len(lines)
        assert handler.count > handler.lines

    def test_retries_are_numbered(self) -> None:
        """Each retry prints a line with the attempt it will make and the wait,
        numbered per model (a fallback starts again at 1) and per model step."""
        out = io.StringIO()
        handler = ConsoleHandler(out, color=False)
        busy = LangHooksError("overloaded", "busy", retryable=True)
        model = ScriptedChatModel(
            [
                busy,
                ScriptedTurn(
                    tool_calls=[ToolCall(call_id="c1", name="echo", arguments={})]
                ),
                busy,
                busy,
            ]
        )
        chain = LLMChain(
            model,
            tools=[ECHO],
            fallbacks=[ScriptedChatModel([busy, ScriptedTurn(text="Done.")])],
            callbacks=[handler],
            retry=RetryPolicy(initial_delay=0.5, jitter=0.0, sleep=lambda s: None),
        )
        assert chain.add_message(Message.user("go")).run().status == "ok"
        retries = [
            line for line in out.getvalue().splitlines() if "on_llm_retry" in line
        ]
        assert retries == [
            "  on_llm_retry                 attempt 2 in 0.50 s (after overloaded)",
            "  on_llm_retry                 attempt 2 in 0.50 s (after overloaded)",
            "  on_llm_retry                 attempt 2 in 0.50 s (after overloaded)",
        ]

    def test_retries_count_up(self) -> None:
        """A call retried twice says attempt 2, then attempt 3, with growing waits."""
        out = io.StringIO()
        handler = ConsoleHandler(out, color=False)
        busy = LangHooksError("timeout", "slow", retryable=True)
        chain = LLMChain(
            ScriptedChatModel([busy, busy, ScriptedTurn(text="Done.")]),
            callbacks=[handler],
            retry=RetryPolicy(
                max_attempts=3, initial_delay=0.5, jitter=0.0, sleep=lambda s: None
            ),
        )
        assert chain.add_message(Message.user("go")).run().status == "ok"
        lines = out.getvalue().splitlines()
        model_lines = [line for line in lines if "on_llm_" in line]
        start = (
            "  on_llm_call_start            ScriptedChatModel, 1 message(s), 0 tool(s)"
        )
        assert [line for line in model_lines if "delta" not in line] == [
            start,
            "  on_llm_error                 timeout: slow",
            "  on_llm_retry                 attempt 2 in 0.50 s (after timeout)",
            start,
            "  on_llm_error                 timeout: slow",
            "  on_llm_retry                 attempt 3 in 1.00 s (after timeout)",
            start,
            "  on_llm_call_complete         finish=stop status=complete",
        ]

    def test_default_stream_is_stdout(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Without a stream the handler writes to sys.stdout."""
        handler = ConsoleHandler(color=False)
        handler.note("hello")
        assert capsys.readouterr().out == "hello\n"

    def test_events_the_happy_path_skips(self) -> None:
        """A whole message, a rejected answer and its reply print a line each."""
        out = io.StringIO()
        handler = ConsoleHandler(out, color=False)
        chain = LLMChain(ScriptedChatModel([]))
        call = ToolCall(call_id="c", name="echo", arguments={})
        handler.on_llm_new_message(chain, Message.assistant("hi", tool_calls=[call]))
        handler.on_message_processing_error(chain, Message.assistant("bad"))
        handler.on_error_message_created(chain, Message.user("answer in JSON"))
        handler.on_llm_error(chain, LangHooksError("timeout", "slow"))
        handler.on_tool_progress(chain, call, ToolProgress(1, 4, "one"))
        handler.on_tool_progress(chain, call, ToolProgress(2, 0))
        assert out.getvalue().splitlines() == [
            "  on_llm_new_message           1 tool call(s)",
            "  on_message_processing_error  a processor rejected it",
            "  on_error_message_created     answer in JSON",
            "  on_llm_error                 timeout: slow",
            "  on_tool_progress             echo 1/4 (25%) one",
            "  on_tool_progress             echo 2/0",
        ]

    def test_failures_and_provider_details(self) -> None:
        """Headers, rate limits, failures, retries and errors print in red lines."""
        out = io.StringIO()
        handler = ConsoleHandler(out, color=False)
        chain = LLMChain(ScriptedChatModel([]))
        call = ToolCall(call_id="c", name="echo", arguments={})
        failed = ToolResult(tool_call_id="c", name="echo", content="no", is_error=True)
        error = LangHooksError("timeout", "slow")
        handler.on_llm_new_delta(chain, [MessageDelta(status="complete")])
        handler.on_llm_response_headers(chain, {"x-request-id": "r"})
        handler.on_llm_ratelimit_info(chain, {"remaining": 3})
        handler.on_tool_execution_failed(chain, call, failed)
        handler.on_tool_execution_exception(chain, call, ValueError("v"))
        handler.on_tool_interrupted(chain, [failed, failed])
        handler.on_retries_exceeded(chain)
        handler.on_error(chain, error)
        assert out.getvalue().splitlines() == [
            "  on_llm_new_delta             stream complete",
            "  on_llm_response_headers      1 header(s)",
            "  on_llm_ratelimit_info        remaining=3",
            "  on_tool_execution_failed     echo: no",
            "  on_tool_execution_exception  ValueError('v')",
            "  on_tool_interrupted          echo, echo waits for a human",
            "  on_retries_exceeded          0 failures",
            "  on_error                     timeout: slow",
        ]

    def test_lines_stay_whole_across_threads(self) -> None:
        """Lines written from many threads at once are never interleaved."""
        out = io.StringIO()
        handler = ConsoleHandler(out, color=False)

        def write(number: int) -> None:
            for _ in range(50):
                handler.line("event", f"from thread {number}")

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        lines = out.getvalue().splitlines()
        assert len(lines) == 400
        assert all(line.startswith("  event") for line in lines)
        assert handler.count == 400


class TestColour:
    """Colour only on a terminal, and never with NO_COLOR."""

    def test_terminal(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """On a terminal the event names are coloured."""
        monkeypatch.delenv("NO_COLOR", raising=False)
        out = Terminal()
        run_once(ConsoleHandler(out))
        assert "\033[35mon_run_start" in out.getvalue()

    def test_no_color(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """NO_COLOR set to a non-empty value turns colour off on a terminal."""
        monkeypatch.setenv("NO_COLOR", "1")
        out = Terminal()
        run_once(ConsoleHandler(out))
        assert "\033[" not in out.getvalue()

    def test_not_a_terminal(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A file or pipe gets no colour."""
        monkeypatch.delenv("NO_COLOR", raising=False)
        out = io.StringIO()
        run_once(ConsoleHandler(out))
        assert "\033[" not in out.getvalue()

    def test_forced(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """color=True colours even a file, whatever NO_COLOR says."""
        monkeypatch.setenv("NO_COLOR", "1")
        out = io.StringIO()
        ConsoleHandler(out, color=True).note("hi", "green")
        assert out.getvalue() == "\033[32mhi\033[0m\n"

    def test_bad_color(self) -> None:
        """A color that is not a bool or None is a TypeError."""
        with pytest.raises(TypeError, match="color must be True, False or None"):
            ConsoleHandler(io.StringIO(), color="yes")  # type: ignore[arg-type]
