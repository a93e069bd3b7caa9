"""``langhooks demo`` runs the scripted agent and prints each event."""

from __future__ import annotations

import argparse
import io
import pathlib
import re
import sys
import types

import pytest
from typing_extensions import override

from langhooks._core._terminal_style import Style
from langhooks.cli import demo as _demo
from langhooks.cli import main
from langhooks.events import read_events


class TestDemo:
    """The demo tells the whole story of a reviewed tool call."""

    def test_scripted_run(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The demo exits 0 and prints the key events in order."""
        assert main(["demo", "--no-color"]) == 0
        out = capsys.readouterr().out
        assert "\033[" not in out
        keys = [
            "on_run_start",
            "on_llm_call_start            ScriptedChatModel, 2 message(s), 1 tool(s)",
            "thinking: The user asks about rain in Paris.",
            "text: Let me check the weather in Paris.",
            "on_tool_call_identified      get_weather",
            "on_llm_call_complete         finish=tool_execution status=complete",
            "on_tool_call_review          get_weather(city='Paris')",
            "on_tool_interrupted          get_weather waits for a human",
            "run interrupted: {'tool': 'get_weather'",
            "human (scripted): approve get_weather(city='Paris')",
            "(human: approve)",
            "on_tool_pre_execution        get_weather in invocation get_weather",
            "on_tool_execution_completed  get_weather -> Paris: 14°C",
            "text: It is 14°C in Paris",
            "on_llm_token_usage           in 97, out 21, total 118",
            "answer: It is 14°C in Paris with light rain until 16:00",
        ]
        positions = [out.index(key) for key in keys]
        assert positions == sorted(positions)
        assert out.count("on_run_complete              status ok") == 2

    def test_each_run_is_named_before_its_events(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The three runs (three on_run_start) are each introduced by the call
        that makes them, so the first 'status ok' reads as the tools being done,
        before the model answers."""
        assert main(["demo", "--no-color", "--delay", "0"]) == 0
        out = capsys.readouterr().out
        keys = [
            "chain.run(): the model streams its step",
            "on_run_start",
            "on_run_complete              status interrupted",
            "chain.execute_tool_calls_with_decisions(...): runs the approved calls",
            "on_run_start",
            "on_tool_execution_completed",
            "on_run_complete              status ok",
            "chain.run(): the model answers with the results",
            "on_run_start",
            "text: It is 14°C in Paris",
            "on_run_complete              status ok",
        ]
        at = 0
        for key in keys:
            at = out.index(key, at) + len(key)
        assert out.count("on_run_start") == 3

    def test_closing_count(
        self, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The closing line counts the event lines printed and the events they
        show: one per line, plus one per streamed delta joined onto a line."""
        record = tmp_path / "events.jsonl"
        assert main(["demo", "--no-color", "--record", str(record)]) == 0
        out = capsys.readouterr().out.splitlines()
        found = re.fullmatch(
            r"(\d+) lines for (\d+) printed events "
            r"\(each streamed delta is one; deltas of one kind share a line\)",
            out[-1],
        )
        assert found is not None, out[-1]
        lines, events = int(found[1]), int(found[2])
        event_lines = [line for line in out if line.startswith("  ")]
        assert lines == len(event_lines)
        deltas = sum(
            len(record.payload["deltas"])
            for record in read_events(record)
            if record.event == "on_llm_new_delta"
        )
        delta_lines = [line for line in event_lines if "on_llm_new_delta" in line]
        assert events == len(event_lines) - len(delta_lines) + deltas
        assert events > lines

    def test_colour_on_a_terminal(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """On a TTY the output is coloured (unless NO_COLOR or --no-color)."""

        class Terminal(io.StringIO):
            @override
            def isatty(self) -> bool:
                return True

        monkeypatch.delenv("NO_COLOR", raising=False)
        out = Terminal()
        args = argparse.Namespace(
            no_color=False, delay=0.0, base_url=None, model=None, api_key=None
        )
        assert _demo.run(args, out) == 0
        assert "\033[35mon_run_start" in out.getvalue()

    @pytest.mark.parametrize(("no_color", "coloured"), [("1", False), ("", True)])
    def test_no_color_on_a_terminal(
        self, monkeypatch: pytest.MonkeyPatch, no_color: str, coloured: bool
    ) -> None:
        """NO_COLOR turns colour off as for ConsoleHandler: when set, non-empty."""

        class Terminal(io.StringIO):
            @override
            def isatty(self) -> bool:
                return True

        monkeypatch.setenv("NO_COLOR", no_color)
        out = Terminal()
        args = argparse.Namespace(
            no_color=False, delay=0.0, base_url=None, model=None, api_key=None
        )
        assert _demo.run(args, out) == 0
        assert ("\033[" in out.getvalue()) is coloured

    @pytest.mark.parametrize("delay", ["-1", "nan", "inf", "soon"])
    def test_a_delay_that_is_not_seconds_is_refused(
        self, delay: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--delay takes 0 or more seconds; anything else is a usage error."""
        with pytest.raises(SystemExit) as exited:
            main(["demo", "--delay", delay])
        assert exited.value.code == 2
        assert "expected a number of seconds, 0 or more" in capsys.readouterr().err

    @pytest.mark.parametrize(
        ("option", "value", "error"),
        [
            ("--model", "", "the model name must not be empty"),
            ("--base-url", "http://[::1", "not a URL"),
            ("--base-url", "http://x:99999", "not a URL"),
            ("--base-url", "ftp://x", "expected an http:// or https:// URL"),
            ("--base-url", "http://", "expected an http:// or https:// URL"),
        ],
    )
    def test_a_bad_server_option_is_a_usage_error(
        self, option: str, value: str, error: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An empty model name or a URL that does not parse: exit 2, no traceback."""
        argv = {"--model": "m", "--base-url": "http://127.0.0.1:9/v1", option: value}
        with pytest.raises(SystemExit) as exited:
            main(["demo", *[part for pair in argv.items() for part in pair]])
        assert exited.value.code == 2
        assert error in capsys.readouterr().err

    def test_options_go_together(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--base-url without --model is refused with status 2."""
        assert main(["demo", "--base-url", "http://127.0.0.1:9"]) == 2
        assert "go together" in capsys.readouterr().err

    def test_server_model_unavailable(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without OpenAIChatModel the server mode explains and exits 2."""
        monkeypatch.setitem(
            sys.modules, "langhooks.models", types.ModuleType("langhooks.models")
        )
        code = main(["demo", "--base-url", "http://127.0.0.1:9", "--model", "m"])
        assert code == 2
        assert "OpenAIChatModel is not available" in capsys.readouterr().err

    def test_server_model(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The server mode builds OpenAIChatModel with the URL, model and key."""
        built: list[tuple[str, str, str]] = []

        def fake(model: str, *, base_url: str, api_key: str) -> object:
            built.append((model, base_url, api_key))
            return _demo.scripted_model(0.0)

        fake_models = types.ModuleType("langhooks.models")
        fake_models.OpenAIChatModel = fake  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "langhooks.models", fake_models)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        code = main(["demo", "--no-color", "--base-url", "http://h/v1", "--model", "m"])
        assert code == 0
        assert built == [("m", "http://h/v1", "sk-test")]
        assert "an agent on m at http://h/v1" in capsys.readouterr().out

    def test_failure_exits_1(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A run that fails prints the error and exits 1."""
        from langhooks import LangHooksError
        from langhooks.models import ScriptedChatModel

        monkeypatch.setattr(
            _demo,
            "scripted_model",
            lambda delay: ScriptedChatModel([LangHooksError("authentication", "key")]),
        )
        assert main(["demo", "--no-color"]) == 1
        out = capsys.readouterr().out
        assert "on_error" in out
        assert "the agent failed: authentication: key" in out


class TestEventPrinter:
    """The printer gives every event a readable line."""

    def test_other_events(self) -> None:
        """Events the happy path does not show still print one line each."""
        from langhooks import LangHooksError, MessageDelta, ToolCall, ToolResult
        from langhooks.chain import LLMChain

        out = io.StringIO()
        printer = _demo.EventPrinter(out, Style(False))
        chain = LLMChain(_demo.scripted_model(0.0))
        call = ToolCall(call_id="c", name="get_weather", arguments={"city": "Rome"})
        failed = ToolResult(tool_call_id="c", name="get_weather", content="no")
        error = LangHooksError("timeout", "slow")
        printer.on_llm_new_delta(chain, [MessageDelta(status="complete")])
        printer.on_llm_response_headers(chain, {"x-request-id": "r"})
        printer.on_llm_ratelimit_info(chain, {"remaining": 3})
        printer.on_tool_execution_failed(chain, call, failed)
        printer.on_tool_execution_exception(chain, call, ValueError("v"))
        printer.on_llm_error(chain, error)
        printer.on_retries_exceeded(chain)
        printer.on_error(chain, error)
        assert out.getvalue().splitlines() == [
            "  on_llm_new_delta             stream complete",
            "  on_llm_response_headers      1 header(s)",
            "  on_llm_ratelimit_info        remaining=3",
            "  on_tool_execution_failed     get_weather: no",
            "  on_tool_execution_exception  ValueError('v')",
            "  on_llm_error                 timeout: slow",
            "  on_retries_exceeded          0 failures",
            "  on_error                     timeout: slow",
        ]

    def test_failed_resume_exits_1(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A resume that fails ends the demo with status 1."""

        def review(*args: object) -> None:
            raise RuntimeError("reviewer down")

        original = _demo.ApprovalGate.on_tool_call_review

        def gate(self: _demo.ApprovalGate, *args: object) -> object:
            if args[-1].human_decision:  # type: ignore[attr-defined]
                review()
            return original(self, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(_demo.ApprovalGate, "on_tool_call_review", gate)
        assert main(["demo", "--no-color"]) == 1
        assert "handler_error" in capsys.readouterr().out

    def test_import_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A langhooks.models without OpenAIChatModel means no server model."""
        monkeypatch.setitem(
            sys.modules, "langhooks.models", types.ModuleType("langhooks.models")
        )
        args = argparse.Namespace(base_url="http://h", model="m", api_key="k")
        assert _demo.server_model(args, "demo") is None


class TestApprovalRounds:
    """The demo stops approving after a few rounds."""

    def test_a_model_that_keeps_asking(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A model asking for the tool every time ends the demo with status 1."""
        from langhooks import ToolCall
        from langhooks.models import ScriptedChatModel, ScriptedTurn

        ask = ScriptedTurn(
            tool_calls=[
                ToolCall(call_id="c", name="get_weather", arguments={"city": "X"})
            ]
        )
        monkeypatch.setattr(
            _demo, "scripted_model", lambda delay: ScriptedChatModel([ask] * 9)
        )
        assert main(["demo", "--no-color"]) == 1
        out = capsys.readouterr().out
        assert f"after {_demo.MAX_APPROVALS} rounds" in out
