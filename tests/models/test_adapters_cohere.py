"""The Cohere v2 chat stream adapter: content, tool plans and calls, bad data."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

import pytest

import langhooks as lh
from langhooks.models import replay_stream

from . import Recorder, drive

FORMAT: Final = "cohere"


def _content(kind: str, index: int = 0, **content: Any) -> dict[str, Any]:
    return {"type": kind, "index": index, "delta": {"message": {"content": content}}}


def _end(reason: str | None = "COMPLETE", **delta: Any) -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason, **delta}}


def _call_start(index: int = 0, name: str = "f", **call: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": call.pop("arguments", "")}
    return {
        "type": "tool-call-start",
        "index": index,
        "delta": {"message": {"tool_calls": {"id": "c1", "function": function}}},
    }


def _fails(*events: object) -> lh.LangHooksError:
    with pytest.raises(lh.LangHooksError) as raised:
        drive(FORMAT, *events)
    return raised.value


class TestEvents:
    def test_content_start_may_carry_text(self) -> None:
        """Text or thinking in content-start is delivered like a delta."""
        recorder, response = drive(
            FORMAT,
            _content("content-start", type="thinking", thinking="Hm."),
            _content("content-start", 1, type="text", text="Hi"),
            _content("content-delta", 1, text=" there"),
            {"type": "content-end", "index": 1},
            {"type": "debug", "prompt": "x"},
            _end(usage={"tokens": {"input_tokens": 3.0, "output_tokens": 2}}),
        )
        assert (response.message.thinking, response.message.text) == (
            "Hm.",
            "Hi there",
        )
        assert recorder.payloads("unmapped_raw_event") == [
            {"type": "debug", "prompt": "x"}
        ]
        assert response.token_usage is not None
        assert (
            response.token_usage.input_tokens,
            response.token_usage.output_tokens,
        ) == (3, 2)
        assert response.id is None

    def test_empty_pieces_say_nothing(self) -> None:
        """Empty plan and argument pieces give no callback; initial arguments do."""
        recorder, response = drive(
            FORMAT,
            {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": ""}}},
            _call_start(arguments='{"a": 1}'),
            {
                "type": "tool-call-delta",
                "index": 0,
                "delta": {"message": {"tool_calls": {"function": {"arguments": ""}}}},
            },
            {"type": "tool-call-end", "index": 0},
            _end("TOOL_CALL"),
        )
        assert recorder.names == [
            "partial_tool_call",
            "complete_tool_call",
            "complete_response",
        ]
        assert dict(response.message.tool_calls[0].arguments) == {"a": 1}

    def test_finish_reasons(self) -> None:
        """MAX_TOKENS is LENGTH; an unknown or missing reason is OTHER."""
        for reason, want in (
            ("MAX_TOKENS", lh.FinishReason.LENGTH),
            ("STOP_SEQUENCE", lh.FinishReason.STOP),
            ("NEW", lh.FinishReason.OTHER),
            (None, lh.FinishReason.OTHER),
        ):
            _, response = drive(FORMAT, _end(reason))
            assert response.finish_reason is want
            assert response.token_usage is None

    def test_timeout_finish_is_raised(self) -> None:
        """finish_reason TIMEOUT is a retryable timeout error."""
        error = _fails(_end("TIMEOUT"))
        assert (error.type, error.retryable) == ("timeout", True)

    def test_other_shapes_of_content_delta(self) -> None:
        """Empty text, a thinking delta and a read-only mapping take the slow path."""
        recorder, response = drive(
            FORMAT,
            MappingProxyType(_content("content-delta", text="")),
            _content("content-delta", thinking="t"),
            {"type": "content-delta", "index": 0},
            {"type": "content-delta", "index": 0, "delta": {"message": None}},
            _content("content-delta", text="a", extra=None),
            _end(),
        )
        assert (response.message.thinking, response.message.text) == ("t", "a")
        assert recorder.names == [
            "partial_thinking",
            "partial_response",
            "complete_response",
        ]

    def test_event_names_without_a_space(self) -> None:
        """``event:name`` (no space after the colon) names the event too."""
        body = b'event:message-end\ndata: {"delta": {"finish_reason": "COMPLETE"}}\n\n'
        response = replay_stream([body], format=FORMAT, handler=Recorder())
        assert response.finish_reason is lh.FinishReason.STOP


class TestMalformed:
    @pytest.mark.parametrize(
        "events",
        [
            [{"type": 3}],
            [{"type": "tool-call-start", "delta": {}}],
            [_call_start(), _call_start()],
            [_call_start(name="")],
            [{"type": "tool-call-end", "index": 0}],
            [{"type": "tool-call-end"}],
            [
                _call_start(),
                {"type": "tool-call-end", "index": 0},
                {"type": "tool-call-end", "index": 0},
            ],
        ],
    )
    def test_malformed_data_is_a_protocol_error(self, events: list[object]) -> None:
        """Wrong shapes and out-of-order calls are protocol errors."""
        assert _fails(*events).type == "protocol_error"
