"""The Anthropic Messages adapter: fixtures, quirks and malformed events."""

from __future__ import annotations

from typing import Any, Final

import pytest

import langhooks as lh
from langhooks.models import StreamDriver, replay_stream

from . import Recorder, drive, local_fixture

FORMAT: Final = "anthropic"
_START = {
    "type": "message_start",
    "message": {"id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 10}},
}
_STOP = {"type": "message_stop"}


def _block(index: int, **block: Any) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, **delta: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def _drive(*events: object) -> tuple[Recorder, lh.ChatResponse]:
    return drive(FORMAT, *events)


class TestSharedFixture:
    """anthropic_thinking_tool.sse replays to the README's aggregates."""

    def test_aggregates(self) -> None:
        """Thinking with signature, text, a tool call, cumulative usage."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("anthropic_thinking_tool.sse"),
            format=FORMAT,
            handler=recorder,
        )
        thinking = recorder.payloads("partial_thinking")
        assert len(thinking) == 3
        assert response.message.thinking == "".join(thinking)
        assert response.message.thinking.startswith("The user is asking")
        assert response.message.text == (
            "I'll check the current weather in Paris for you."
        )
        (call,) = response.message.tool_calls
        assert (call.call_id, call.name, dict(call.arguments)) == (
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            "get_weather",
            {"city": "Paris", "unit": "celsius"},
        )
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION
        assert response.metadata["stop_reason"] == "tool_use"
        signature = response.message.metadata["thinking_signature"]
        assert len(signature) == 400
        (block,) = response.message.metadata["thinking_blocks"]
        assert block == {
            "type": "thinking",
            "thinking": response.message.thinking,
            "signature": signature,
        }
        usage = response.token_usage
        assert usage is not None
        # Replaced, not added: message_delta repeats the input counts.
        assert usage.output_tokens == 163
        assert usage.input_tokens == 612 + 2048 + 0
        assert usage.raw["input_tokens"] == 612
        assert usage.raw["cache_read_input_tokens"] == 2048
        assert usage.raw["cache_creation_input_tokens"] == 0
        # The adapter already merged the running totals: the response's usage is
        # one final figure, which adds up with other responses' usage.
        assert usage.cumulative is False
        assert response.id == "msg_01Jc7XqRwq2TtHn8bV5kZs3M"
        assert response.model_name == "claude-sonnet-4-5-20250929"

    def test_event_sequence(self) -> None:
        """The ping is unmapped; thinking, text, tool fragments, then completion."""
        recorder = Recorder()
        replay_stream(
            local_fixture("anthropic_thinking_tool.sse"),
            format=FORMAT,
            handler=recorder,
        )
        assert recorder.names == [
            "unmapped_raw_event",
            "partial_thinking",
            "partial_thinking",
            "partial_thinking",
            "partial_response",
            "partial_response",
            "partial_tool_call",
            "partial_tool_call",
            "partial_tool_call",
            "partial_tool_call",
            "partial_tool_call",
            "partial_tool_call",
            "complete_tool_call",
            "complete_response",
        ]
        assert recorder.payloads("unmapped_raw_event") == [{"type": "ping"}]
        fragments = [
            p.partial_arguments for p in recorder.payloads("partial_tool_call")
        ]
        assert fragments[0] == ""
        assert "".join(fragments) == '{"city": "Paris", "unit": "celsius"}'
        assert recorder.violations == []


class TestQuirks:
    """Quirks from fixtures written for them."""

    def test_tool_block_cut_off_by_max_tokens(self) -> None:
        """A tool block with no stop never completes; the reason is LENGTH."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("anthropic_max_tokens_tool.sse"),
            format=FORMAT,
            handler=recorder,
        )
        assert "complete_tool_call" not in recorder.names
        assert recorder.names.count("partial_tool_call") == 2
        assert response.message.tool_calls == ()
        assert response.finish_reason is lh.FinishReason.LENGTH
        assert response.message.status == "length"
        assert response.message.text == "Writing the file."
        usage = response.token_usage
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens) == (410, 64)

    def test_error_event_after_200(self) -> None:
        """An error event is classified by its type, on_error once, raised."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError) as caught:
            replay_stream(
                local_fixture("anthropic_error_midstream.sse"),
                format=FORMAT,
                handler=recorder,
            )
        assert caught.value.type == "overloaded"
        assert caught.value.retryable is True
        assert caught.value.message == "Overloaded"
        assert recorder.text == "Partial"
        assert recorder.terminal_calls == [("error", caught.value)]

    def test_refusal_and_repeated_cumulative_usage(self) -> None:
        """refusal is CONTENT_FILTER with stop_details; usage replaces each time."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("anthropic_refusal.sse"), format=FORMAT, handler=recorder
        )
        assert response.finish_reason is lh.FinishReason.CONTENT_FILTER
        assert response.message.status == "content_filtered"
        assert response.metadata["stop_details"]["category"] == "cyber"
        usage = response.token_usage
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens) == (410, 9)
        assert recorder.text == "I can't help with that."


class TestUsage:
    """The response's usage is the stream's final figure."""

    def test_usage_of_two_responses_adds_up(self) -> None:
        """Summing two Anthropic responses' usage adds them, as for any provider."""
        path = local_fixture("anthropic_thinking_tool.sse")
        first = replay_stream(path, format=FORMAT, handler=Recorder())
        second = replay_stream(path, format=FORMAT, handler=Recorder())
        assert first.token_usage is not None
        assert second.token_usage is not None
        total = first.token_usage + second.token_usage
        assert (total.input_tokens, total.output_tokens) == (
            2 * (612 + 2048),
            2 * 163,
        )


class TestEvents:
    """Single events: what each becomes."""

    def test_redacted_thinking_and_initial_text(self) -> None:
        """Redacted thinking is kept for sending back; start text is delivered."""
        recorder, response = _drive(
            _START,
            _block(0, type="redacted_thinking", data="opaque"),
            _stop(0),
            _block(1, type="thinking", thinking="pre", signature="sig"),
            _delta(1, type="thinking_delta", thinking=""),
            _stop(1),
            _block(2, type="text", text="Hi"),
            _delta(2, type="text_delta", text=""),
            _stop(2),
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            _STOP,
        )
        assert recorder.names == [
            "partial_thinking",
            "partial_response",
            "complete_response",
        ]
        assert response.message.metadata["thinking_blocks"] == (
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "thinking", "thinking": "pre", "signature": "sig"},
        )
        assert response.finish_reason is lh.FinishReason.STOP

    def test_thinking_without_signature(self) -> None:
        """A thinking block that never got a signature records none."""
        _, response = _drive(
            _START,
            _block(0, type="thinking", thinking=""),
            _delta(0, type="thinking_delta", thinking="hm"),
            _stop(0),
            _STOP,
        )
        assert "thinking_signature" not in response.message.metadata
        assert response.message.metadata["thinking_blocks"] == (
            {"type": "thinking", "thinking": "hm", "signature": ""},
        )

    def test_tool_use_with_input_at_start(self) -> None:
        """A tool_use block that starts with its input needs no deltas."""
        recorder, response = _drive(
            _START,
            _block(0, type="tool_use", id="t1", name="f", input={"a": 1}),
            _delta(0, type="input_json_delta", partial_json=""),
            _stop(0),
            _STOP,
        )
        assert [dict(c.arguments) for c in response.message.tool_calls] == [{"a": 1}]
        assert recorder.payloads("partial_tool_call")[0].partial_arguments == '{"a": 1}'

    def test_server_tool_blocks_and_citations_are_unmapped(self) -> None:
        """Server tool blocks (start, delta, stop) and citations go to unmapped."""
        start = _block(0, type="server_tool_use", id="s1", name="web_search")
        citation = _delta(1, type="citations_delta", citation={"x": 1})
        recorder, _ = _drive(
            _START,
            start,
            _stop(0),
            _block(1, type="text", text=""),
            citation,
            _stop(1),
            {"type": "brand_new_event"},
            _STOP,
        )
        assert recorder.payloads("unmapped_raw_event") == [
            start,
            _stop(0),
            citation,
            {"type": "brand_new_event"},
        ]

    def test_server_block_delta_is_unmapped(self) -> None:
        """A delta for a server tool block is unmapped, not a tool fragment."""
        start = _block(0, type="server_tool_use", id="s1", name="web_search")
        delta = _delta(0, type="server_thing", value=1)
        recorder, _ = _drive(_START, start, delta, _stop(0), _STOP)
        assert delta in recorder.payloads("unmapped_raw_event")

    def test_server_tool_input_is_unmapped(self) -> None:
        """A server tool block's input_json_delta is unmapped, not a protocol error."""
        start = _block(0, type="server_tool_use", id="s1", name="web_search", input={})
        delta = _delta(0, type="input_json_delta", partial_json='{"query": "x"}')
        recorder, response = _drive(_START, start, delta, _stop(0), _STOP)
        assert recorder.payloads("unmapped_raw_event") == [start, delta, _stop(0)]
        assert recorder.terminal_calls == [("complete_response", response)]
        assert response.message.tool_calls == ()

    def test_other_stop_reasons(self) -> None:
        """pause_turn is OTHER; no stop reason at all is OTHER too."""
        _, paused = _drive(
            _START,
            {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}},
            _STOP,
        )
        assert paused.finish_reason is lh.FinishReason.OTHER
        _, silent = _drive(_START, _STOP)
        assert silent.finish_reason is lh.FinishReason.OTHER

    @pytest.mark.parametrize(
        ("events", "message"),
        [
            ([_delta(0, type="text_delta", text="x")], "was not started"),
            ([_block(0, type="text"), _block(0, type="text")], "started twice"),
            ([_block(0, type="text"), _stop(0), _stop(0)], "already stopped"),
            ([_block(0, type="text"), _delta(0, type="thinking_delta")], "for a text"),
            (
                [{"type": "content_block_start", "content_block": {}}],
                "needs an 'index'",
            ),
            ([_block(0, type="tool_use", id="t")], "needs an 'id' and a 'name'"),
            ([_block(0, type=7)], "string 'type'"),
            ([{"type": None}], "string 'type'"),
            ([{"type": "message_start", "message": []}], "'message'"),
            (
                [_block(0, type="tool_use", id="t", name="f", input=[1])],
                "'input'",
            ),
        ],
    )
    def test_malformed(self, events: list[object], message: str) -> None:
        """Events that break the format are one protocol_error."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match=message) as caught:
            _feed_all(recorder, events)
        assert caught.value.type == "protocol_error"
        assert recorder.terminal_calls == [("error", caught.value)]

    def test_bad_tool_json_at_stop(self) -> None:
        """Tool input that is not JSON fails as delta_conversion_failed at its stop."""
        with pytest.raises(lh.LangHooksError) as caught:
            _drive(
                _START,
                _block(0, type="tool_use", id="t", name="f", input={}),
                _delta(0, type="input_json_delta", partial_json='{"a": '),
                _stop(0),
            )
        assert caught.value.type == "delta_conversion_failed"

    def test_error_without_details(self) -> None:
        """An error event with no error object is still a stream_error."""
        with pytest.raises(lh.LangHooksError, match="the stream failed"):
            _drive({"type": "error"})


def _feed_all(recorder: Recorder, events: list[object]) -> None:
    driver = StreamDriver(FORMAT, recorder)
    for event in events:
        driver.feed(event)
