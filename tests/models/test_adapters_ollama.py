"""The Ollama /api/chat adapter: fixtures, complete tool calls, errors."""

from __future__ import annotations

from typing import Final

import pytest

import langhooks as lh
from langhooks.models import StreamDriver, replay_stream

from . import Recorder, drive, local_fixture

FORMAT: Final = "ollama"


def _line(content: str = "", **fields: object) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": content}
    message.update(fields.pop("message", {}))  # type: ignore[call-overload]
    return {"model": "m", "message": message, "done": False, **fields}


def _done(**fields: object) -> dict[str, object]:
    return {"model": "m", "message": {"content": ""}, "done": True, **fields}


def _drive(*events: object) -> tuple[Recorder, lh.ChatResponse]:
    return drive(FORMAT, *events)


class TestSharedFixtures:
    """The shared Ollama fixtures replay to the README's aggregates."""

    def test_thinking_then_text(self) -> None:
        """message.thinking then message.content; usage from the final line."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("ollama_chat.ndjson"), format=FORMAT, handler=recorder
        )
        assert response.message.thinking == (
            "Okay, the user asks for 17 \u00d7 23. 17 \u00d7 20 = 340, "
            "17 \u00d7 3 = 51, total 391."
        )
        assert response.message.text == "17 \u00d7 23 = **391**"
        assert response.finish_reason is lh.FinishReason.STOP
        usage = response.token_usage
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens) == (18, 34)
        assert usage.raw["total_duration"] == 1873920417
        assert response.model_name == "qwen3:8b"
        assert response.id is None
        first_text = recorder.names.index("partial_response")
        assert set(recorder.names[:first_text]) == {"partial_thinking"}
        assert recorder.names[-1] == "complete_response"
        assert recorder.violations == []

    def test_complete_tool_calls(self) -> None:
        """Two complete calls on two lines; Ollama's "stop" becomes TOOL_EXECUTION."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("ollama_chat_tools.ndjson"), format=FORMAT, handler=recorder
        )
        assert response.message.thinking == (
            "The user wants the weather in Tokyo and Paris. I'll call get_weather "
            "twice."
        )
        assert response.message.text == ""
        calls = response.message.tool_calls
        assert [(c.index, c.call_id, c.name, dict(c.arguments)) for c in calls] == [
            (0, "call_4xq9m2rd", "get_weather", {"city": "Tokyo"}),
            (1, "call_p7t1w8zc", "get_weather", {"city": "Paris"}),
        ]
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION
        assert response.metadata["stop_reason"] == "stop"
        usage = response.token_usage
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens) == (169, 58)
        tail = recorder.names[recorder.names.index("partial_tool_call") :]
        assert tail == [
            "partial_tool_call",
            "complete_tool_call",
            "partial_tool_call",
            "complete_tool_call",
            "complete_response",
        ]
        partial = recorder.payloads("partial_tool_call")[0]
        assert partial.partial_arguments == '{"city": "Tokyo"}'


class TestQuirks:
    """Quirks from fixtures written for them."""

    def test_error_midstream(self) -> None:
        """A {"error": ...} line after some text is on_error once, then raised."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match="unexpected EOF") as caught:
            replay_stream(
                local_fixture("ollama_error_midstream.ndjson"),
                format=FORMAT,
                handler=recorder,
            )
        assert caught.value.type == "stream_error"
        assert recorder.text == "The answer"
        assert recorder.terminal_calls == [("error", caught.value)]

    def test_tool_call_on_final_line_without_id(self) -> None:
        """An old-style call without id/index on the done line gets call_0."""
        response = replay_stream(
            local_fixture("ollama_tool_on_final_line.ndjson"),
            format=FORMAT,
            handler=Recorder(),
        )
        (call,) = response.message.tool_calls
        assert (call.call_id, call.index, dict(call.arguments)) == (
            "call_0",
            0,
            {"city": "Oslo"},
        )
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION


class TestLines:
    """Single lines: what each becomes."""

    def test_string_arguments_and_length(self) -> None:
        """String arguments are parsed; done_reason "length" is LENGTH."""
        call = {"function": {"name": "f", "arguments": '{"a": 2}'}}
        _, response = _drive(
            _line(message={"tool_calls": [call]}), _done(done_reason="length")
        )
        assert [dict(c.arguments) for c in response.message.tool_calls] == [{"a": 2}]
        assert response.finish_reason is lh.FinishReason.LENGTH

    def test_done_without_reason_or_metrics(self) -> None:
        """A bare done line completes with STOP and no usage; load is OTHER."""
        _, bare = _drive(_done())
        assert bare.finish_reason is lh.FinishReason.STOP
        assert bare.token_usage is None
        _, load = _drive(_done(done_reason="load"))
        assert load.finish_reason is lh.FinishReason.OTHER

    def test_error_object(self) -> None:
        """An error that is an object is reported with its JSON."""
        with pytest.raises(lh.LangHooksError, match="nope"):
            _drive({"error": {"message": "nope"}})

    @pytest.mark.parametrize(
        ("event", "message"),
        [
            ("[DONE]", "must be a JSON object"),
            (_line(message={"tool_calls": {"a": 1}}), "must be a list"),
            (_line(message={"tool_calls": [{"function": {}}]}), "function.name"),
            (
                _line(
                    message={
                        "tool_calls": [{"function": {"name": "f", "arguments": 3}}]
                    }
                ),
                "must be an object",
            ),
            ({"done": "yes"}, "must be a boolean"),
            ({"message": "hi"}, "'message'"),
            ({"message": {"content": 3}}, "'content'"),
        ],
    )
    def test_malformed(self, event: object, message: str) -> None:
        """Lines that break the format are one protocol_error."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match=message) as caught:
            StreamDriver(FORMAT, recorder).feed(event)
        assert caught.value.type == "protocol_error"
        assert recorder.terminal_calls == [("error", caught.value)]
