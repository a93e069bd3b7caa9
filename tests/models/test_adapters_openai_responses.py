"""The OpenAI Responses adapter: fixtures, error shapes and malformed events."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

import langhooks as lh
from langhooks.models import StreamDriver, replay_stream

from . import Recorder, drive, local_fixture

FORMAT: Final = "openai-responses"
_RESPONSE = {"id": "resp_1", "model": "gpt-x", "status": "in_progress", "output": []}


def _drive(*events: object) -> tuple[Recorder, lh.ChatResponse]:
    return drive(FORMAT, *events)


def _completed(**response: Any) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "response": {**_RESPONSE, "status": "completed", **response},
    }


def _call_added(item_id: str = "fc_1", **item: Any) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {
            "id": item_id,
            "type": "function_call",
            "call_id": "call_1",
            "name": "f",
            "arguments": "",
            **item,
        },
    }


class TestFixture:
    """openai_responses.sse replays to the README's aggregates."""

    def test_aggregates(self) -> None:
        """Reasoning summary, text and a function call, usage at completion."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_responses.sse"), format=FORMAT, handler=recorder
        )
        summary = (
            "**Checking the weather**\n\nThe user asks about Paris; I'll call "
            "get_weather with city Paris."
        )
        assert response.message.thinking == summary
        assert recorder.thinking == summary
        assert response.message.text == "Let me check the current weather in Paris."
        (call,) = response.message.tool_calls
        assert (call.index, call.call_id, call.name, dict(call.arguments)) == (
            0,
            "call_Vn4pR8tY2mKq6sXw9bZc1LdH",
            "get_weather",
            {"city": "Paris"},
        )
        partials = recorder.payloads("partial_tool_call")
        assert [p.partial_arguments for p in partials] == [
            "",
            '{"',
            "city",
            '":"',
            "Paris",
            '"}',
        ]
        assert {p.id for p in partials} == {"call_Vn4pR8tY2mKq6sXw9bZc1LdH"}
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION
        assert response.metadata["stop_reason"] == "completed"
        assert response.id == "resp_0d3f6a1c9e2b47580068f1c2a9b4e08190a7d3c5e1f2b4a6"
        assert response.model_name == "gpt-5-mini-2025-08-07"
        usage = response.token_usage
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens) == (86, 131)
        assert usage.raw["output_tokens_details"]["reasoning_tokens"] == 64
        assert usage.raw["input_tokens_details"]["cached_tokens"] == 0
        (reasoning,) = response.message.metadata["reasoning_items"]
        assert reasoning["id"].startswith("rs_")
        assert response.message.metadata["response_id"] == response.id
        assert recorder.names.count("complete_tool_call") == 1
        assert recorder.names[-2:] == ["complete_tool_call", "complete_response"]
        assert "unmapped_raw_event" not in recorder.names
        assert recorder.violations == []


class TestErrorShapes:
    """Both shapes of the error event, and response.failed, are raised once."""

    @pytest.mark.parametrize(
        ("fixture", "error_type", "retryable"),
        [
            ("openai_responses_error_nested.sse", "rate_limited", True),
            ("openai_responses_error_flat.sse", "stream_error", True),
            ("openai_responses_failed.sse", "stream_error", True),
        ],
    )
    def test_error_events(self, fixture: str, error_type: str, retryable: bool) -> None:
        """The error is classified, delivered to on_error once, then raised."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError) as caught:
            replay_stream(local_fixture(fixture), format=FORMAT, handler=recorder)
        assert caught.value.type == error_type
        assert caught.value.retryable is retryable
        assert recorder.text == "Hello"
        assert recorder.terminal_calls == [("error", caught.value)]
        assert recorder.violations == []

    def test_flat_error_without_code(self) -> None:
        """A flat error with a null code is a stream_error with its message."""
        with pytest.raises(lh.LangHooksError, match="went away") as caught:
            _drive({"type": "error", "code": None, "message": "went away"})
        assert caught.value.type == "stream_error"

    def test_incomplete_is_length(self) -> None:
        """response.incomplete for max_output_tokens completes with LENGTH."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_responses_incomplete.sse"),
            format=FORMAT,
            handler=recorder,
        )
        assert response.finish_reason is lh.FinishReason.LENGTH
        assert response.message.status == "length"
        assert response.metadata["stop_reason"] == "max_output_tokens"
        assert recorder.names[-1] == "complete_response"


class TestEvents:
    """Single events: what each becomes."""

    def test_refusal(self) -> None:
        """Refusal deltas are response text and the reason is CONTENT_FILTER."""
        recorder, response = _drive(
            {"type": "response.refusal.delta", "delta": "No."},
            {"type": "response.refusal.delta", "delta": ""},
            _completed(),
        )
        assert recorder.text == "No."
        assert response.message.metadata["refusal"] == "No."
        assert response.finish_reason is lh.FinishReason.CONTENT_FILTER

    def test_refusal_cut_off(self) -> None:
        """A refusal in an incomplete response keeps the reason LENGTH."""
        _, response = _drive(
            {"type": "response.refusal.delta", "delta": "No"},
            {
                "type": "response.incomplete",
                "response": {
                    "status": "incomplete",
                    "incomplete_details": {"reason": "max_output_tokens"},
                },
            },
        )
        assert response.finish_reason is lh.FinishReason.LENGTH

    def test_incomplete_content_filter(self) -> None:
        """response.incomplete for content_filter is CONTENT_FILTER."""
        _, response = _drive(
            {
                "type": "response.incomplete",
                "response": {
                    **_RESPONSE,
                    "status": "incomplete",
                    "incomplete_details": {"reason": "content_filter"},
                },
            }
        )
        assert response.finish_reason is lh.FinishReason.CONTENT_FILTER

    def test_incomplete_without_reason(self) -> None:
        """response.incomplete with no reason is OTHER."""
        _, response = _drive(
            {"type": "response.incomplete", "response": {"status": "incomplete"}}
        )
        assert response.finish_reason is lh.FinishReason.OTHER

    def test_raw_reasoning_text(self) -> None:
        """reasoning_text deltas (models that expose raw reasoning) are thinking."""
        recorder, _ = _drive(
            {"type": "response.reasoning_text.delta", "delta": "hmm"},
            {"type": "response.reasoning_text.delta", "delta": ""},
            {"type": "response.output_text.delta", "delta": ""},
            _completed(),
        )
        assert recorder.names == ["partial_thinking", "complete_response"]

    def test_other_items_and_events_are_unmapped(self) -> None:
        """Web search items and unknown events go to on_unmapped_raw_event."""
        added = {
            "type": "response.output_item.added",
            "item": {"id": "ws_1", "type": "web_search_call"},
        }
        done = {**added, "type": "response.output_item.done"}
        searching = {"type": "response.web_search_call.searching", "item_id": "ws_1"}
        recorder, _ = _drive(added, searching, done, _completed())
        assert recorder.payloads("unmapped_raw_event") == [added, searching, done]

    def test_call_completed_by_item_done(self) -> None:
        """Without arguments.done, the item's .done completes the call."""
        recorder, response = _drive(
            _call_added(),
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "delta": "",
            },
            {
                "type": "response.output_item.done",
                "item": {
                    "id": "fc_1",
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": '{"a": 1}',
                },
            },
            {"type": "response.function_call_arguments.done", "item_id": "fc_1"},
            _completed(),
        )
        assert [dict(c.arguments) for c in response.message.tool_calls] == [{"a": 1}]
        assert recorder.names.count("complete_tool_call") == 1

    @pytest.mark.parametrize(
        ("events", "message"),
        [
            ([{"type": 5}], "string 'type'"),
            (
                [{"type": "response.function_call_arguments.delta", "item_id": "x"}],
                "unknown tool call item",
            ),
            ([_call_added(name=None)], "needs an 'id' and a 'name'"),
            ([_call_added(), _call_added()], "added twice"),
            (
                [
                    {
                        "type": "response.output_item.done",
                        "item": {"type": "function_call", "id": "nope"},
                    }
                ],
                "unknown tool call item",
            ),
            ([{"type": "response.output_text.delta", "delta": 1}], "'delta'"),
            ([{"type": "response.created", "response": None}], "'response'"),
            (
                [
                    _call_added(),
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": "fc_1",
                    },
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": "fc_1",
                        "delta": "x",
                    },
                ],
                "after function call",
            ),
        ],
    )
    def test_malformed(self, events: list[object], message: str) -> None:
        """Events that break the format are one protocol_error."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match=message) as caught:
            _drive_into(recorder, events)
        assert caught.value.type == "protocol_error"
        assert recorder.terminal_calls == [("error", caught.value)]

    def test_queued_and_message_items(self) -> None:
        """queued, message items and content parts are mapped without a callback."""
        recorder, response = _drive(
            {"type": "response.queued", "response": _RESPONSE},
            {"type": "response.output_item.added", "item": {"type": "message"}},
            {"type": "response.content_part.added"},
            {"type": "response.output_item.done", "item": {"type": "message"}},
            _completed(usage=None),
        )
        assert recorder.names == ["complete_response"]
        assert response.token_usage is None
        assert response.id == "resp_1"


def _drive_into(recorder: Recorder, events: list[object]) -> None:
    driver = StreamDriver(FORMAT, recorder)
    for event in events:
        driver.feed(event)


def _custom_added(**item: Any) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "item": {
            "type": "custom_tool_call",
            "id": "ct_1",
            "call_id": "call_c",
            "name": "write_sql",
            "input": "",
            **item,
        },
    }


def _custom_delta(delta: str) -> dict[str, Any]:
    return {
        "type": "response.custom_tool_call_input.delta",
        "item_id": "ct_1",
        "delta": delta,
    }


def _custom_done(**item: Any) -> dict[str, Any]:
    return {
        "type": "response.output_item.done",
        "item": {
            "type": "custom_tool_call",
            "id": "ct_1",
            "call_id": "call_c",
            "name": "write_sql",
            **item,
        },
    }


def _spelled(recorder: Recorder) -> str:
    return "".join(p.partial_arguments for p in recorder.payloads("partial_tool_call"))


class TestToolCallEnds:
    """Arguments only restated at the end, and custom (freeform) tool calls."""

    def test_arguments_only_in_done(self) -> None:
        """LM Studio's arguments, sent only in .done, still arrive as a fragment."""
        recorder, response = _drive(
            _call_added(),
            {
                "type": "response.function_call_arguments.done",
                "item_id": "fc_1",
                "arguments": '{"location": "SF"}',
            },
            _completed(),
        )
        assert _spelled(recorder) == '{"location": "SF"}'
        assert recorder.names[-3:] == [
            "partial_tool_call",
            "complete_tool_call",
            "complete_response",
        ]
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION

    def test_rest_of_arguments_in_item_done(self) -> None:
        """A restatement that extends the fragments delivers only the rest."""
        recorder, _ = _drive(
            _call_added(arguments='{"a"'),
            {
                "type": "response.output_item.done",
                "item": {
                    "type": "function_call",
                    "id": "fc_1",
                    "arguments": '{"a": 1}',
                },
            },
            _completed(),
        )
        assert [
            p.partial_arguments for p in recorder.payloads("partial_tool_call")
        ] == [
            '{"a"',
            ": 1}",
        ]

    def test_restatement_reformatted_is_accepted(self) -> None:
        """A restatement equal as JSON (other spacing) completes with no fragment."""
        recorder, response = _drive(
            _call_added(arguments='{"a": 1}'),
            {
                "type": "response.function_call_arguments.done",
                "item_id": "fc_1",
                "arguments": '{"a":1}',
            },
            _completed(),
        )
        assert _spelled(recorder) == '{"a": 1}'
        assert dict(response.message.tool_calls[0].arguments) == {"a": 1}

    @pytest.mark.parametrize("sent", ['{"a": 2}', '{"a'])
    def test_contradicting_restatement(self, sent: str) -> None:
        """A restatement that contradicts the fragments is a protocol_error."""
        with pytest.raises(lh.LangHooksError, match="differ from the fragments"):
            _drive(
                _call_added(arguments=sent),
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": "fc_1",
                    "arguments": '{"b": 1}',
                },
            )

    def test_custom_tool_call(self) -> None:
        """A custom tool call is a tool call with its input under "input"."""
        recorder, response = _drive(
            _custom_added(),
            _custom_delta('SELECT "x" '),
            _custom_delta(""),
            _custom_delta("FROM t"),
            _custom_done(input='SELECT "x" FROM t'),
            _completed(),
        )
        (call,) = response.message.tool_calls
        assert (call.call_id, call.name) == ("call_c", "write_sql")
        assert dict(call.arguments) == {"input": 'SELECT "x" FROM t'}
        assert json.loads(_spelled(recorder)) == dict(call.arguments)
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION
        assert response.message.metadata["custom_tool_calls"] == ("call_c",)

    def test_custom_tool_call_input_done_event(self) -> None:
        """custom_tool_call_input.done completes it; the item's done adds nothing."""
        recorder, response = _drive(
            _custom_added(input="ab"),
            {
                "type": "response.custom_tool_call_input.done",
                "item_id": "ct_1",
                "input": "abc",
            },
            {"type": "response.custom_tool_call_input.done", "item_id": "ct_1"},
            _custom_done(input="abc"),
            _completed(),
        )
        assert dict(response.message.tool_calls[0].arguments) == {"input": "abc"}
        assert recorder.names.count("complete_tool_call") == 1

    def test_custom_tool_call_done_without_input(self) -> None:
        """Without a restated input, the input streamed so far is the input."""
        _, response = _drive(
            _custom_added(), _custom_delta("q"), _custom_done(), _completed()
        )
        assert dict(response.message.tool_calls[0].arguments) == {"input": "q"}

    def test_custom_input_after_done(self) -> None:
        """Input after the call completed is a protocol_error."""
        with pytest.raises(lh.LangHooksError, match="after custom tool call 0"):
            _drive(_custom_added(), _custom_done(input=""), _custom_delta("late"))
