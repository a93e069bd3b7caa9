"""The OpenAI Chat Completions adapter: fixtures, quirks and malformed chunks."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

import langhooks as lh
from langhooks.models import StreamDriver, replay_stream

from . import Recorder, drive, local_fixture

FORMAT: Final = "openai-chat"


def _chunk(delta: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    finish = fields.pop("finish_reason", None)
    chunk: dict[str, Any] = {"id": "chatcmpl-1", "model": "m", **fields}
    if delta is not None or finish is not None:
        chunk["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return chunk


def _drive(*events: object) -> tuple[Recorder, lh.ChatResponse]:
    return drive(FORMAT, *events)


class TestFixtures:
    """The shared OpenAI fixtures replay to the aggregates the README gives."""

    def test_parallel_tool_calls(self) -> None:
        """Text, then two tool calls split across chunks, then usage and [DONE]."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_chat_tools.sse"), format=FORMAT, handler=recorder
        )
        text = "I'll check the weather in Edinburgh and the latest AAPL price for you."
        assert response.message.text == text
        assert recorder.text == text
        assert len(recorder.payloads("partial_response")) == 14
        assert response.message.thinking == ""
        calls = response.message.tool_calls
        assert [(c.index, c.call_id, c.name, dict(c.arguments)) for c in calls] == [
            (
                0,
                "call_Qx3mVb7LhT2nK9pWcR4sYfZd",
                "get_weather",
                {"city": "Edinburgh", "units": "c"},
            ),
            (
                1,
                "call_8HdN2fLkPq5tWz1XmJv6RcBe",
                "get_stock_price",
                {"ticker": "AAPL", "exchange": "NASDAQ"},
            ),
        ]
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION
        assert response.metadata["stop_reason"] == "tool_calls"
        assert response.message.status == "complete"
        assert response.id == "chatcmpl-CZ3kq7pW2TnX9vFhYb8rLmQe4sJdA"
        assert response.model_name == "gpt-4o-2024-08-06"
        usage = response.token_usage
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
            149,
            71,
            220,
        )
        assert usage.raw["prompt_tokens_details"]["cached_tokens"] == 0
        assert usage.raw["completion_tokens_details"]["reasoning_tokens"] == 0
        assert recorder.violations == []
        assert recorder.terminal_calls == [("complete_response", response)]

    def test_tool_call_events_in_order(self) -> None:
        """Each call's fragments share its index; its completion follows them."""
        recorder = Recorder()
        replay_stream(
            local_fixture("openai_chat_tools.sse"), format=FORMAT, handler=recorder
        )
        tool_events = [
            (name, payload.index)
            for name, payload in recorder.events
            if name in ("partial_tool_call", "complete_tool_call")
        ]
        first_complete = tool_events.index(("complete_tool_call", 0))
        assert all(index == 0 for _, index in tool_events[:first_complete])
        assert tool_events[first_complete + 1 :][-1] == ("complete_tool_call", 1)
        assert {index for _, index in tool_events[first_complete + 1 :]} == {1}
        partials = recorder.payloads("partial_tool_call")
        assert "".join(p.partial_arguments for p in partials if p.index == 0) == (
            '{"city": "Edinburgh", "units": "c"}'
        )
        assert partials[0].id == "call_Qx3mVb7LhT2nK9pWcR4sYfZd"
        assert partials[1].id == "call_Qx3mVb7LhT2nK9pWcR4sYfZd"
        assert recorder.names[-1] == "complete_response"
        assert "unmapped_raw_event" not in recorder.names

    def test_error_midstream(self) -> None:
        """A mid-stream error object is on_error once, then raised; no [DONE]."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError) as caught:
            replay_stream(
                local_fixture("openai_chat_error_midstream.sse"),
                format=FORMAT,
                handler=recorder,
            )
        error = caught.value
        assert error.type == "stream_error"
        assert error.retryable is True
        assert error.metadata["error_code"] == "server_error"
        assert recorder.text == "Here is a short summary"
        assert recorder.terminal_calls == [("error", error)]
        assert recorder.violations == []

    def test_reasoning_content(self) -> None:
        """DeepSeek reasoning_content is thinking; usage rides on the finish chunk."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_compat_reasoning_content.sse"),
            format=FORMAT,
            handler=recorder,
        )
        thinking = (
            "We need to compare 9.11 and 9.8. 9.8 is 9.80, and 0.80 > 0.11, so 9.8 "
            "is larger."
        )
        assert response.message.thinking == thinking
        assert recorder.thinking == thinking
        assert response.message.text == "9.8 is greater than 9.11."
        assert response.message.content == (
            lh.ContentPart.thinking(thinking),
            lh.ContentPart.text("9.8 is greater than 9.11."),
        )
        assert response.finish_reason is lh.FinishReason.STOP
        usage = response.token_usage
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens) == (17, 64)
        assert usage.raw["completion_tokens_details"]["reasoning_tokens"] == 52
        first_text = recorder.names.index("partial_response")
        assert set(recorder.names[:first_text]) == {"partial_thinking"}
        assert recorder.violations == []


class TestQuirks:
    """The quirks of OpenAI-compatible servers, from fixtures written for them."""

    def test_interleaved_tool_calls(self) -> None:
        """Fragments of two calls interleaved, id on every one, accumulate by index."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_chat_interleaved_tools.sse"),
            format=FORMAT,
            handler=recorder,
        )
        calls = response.message.tool_calls
        assert [(c.call_id, c.name, dict(c.arguments)) for c in calls] == [
            ("call_lh_interleave_a", "get_weather", {"city": "Oslo"}),
            ("call_lh_interleave_b", "get_time", {"zone": "Europe/Oslo"}),
        ]
        # Neither call could complete before the finish chunk.
        names = recorder.names
        assert names[-3:] == [
            "complete_tool_call",
            "complete_tool_call",
            "complete_response",
        ]
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION
        assert recorder.violations == []

    def test_whole_tool_calls_in_one_chunk(self) -> None:
        """Two whole calls in one delta (Ollama's /v1), thinking in delta.reasoning."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_chat_whole_tool_call.sse"),
            format=FORMAT,
            handler=recorder,
        )
        assert response.message.thinking == "Two cities, two calls."
        assert [dict(c.arguments) for c in response.message.tool_calls] == [
            {"city": "Rome"},
            {"city": "Lima"},
        ]
        assert recorder.names == [
            "partial_thinking",
            "partial_thinking",
            "partial_tool_call",
            "complete_tool_call",
            "partial_tool_call",
            "complete_tool_call",
            "complete_response",
        ]
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION

    def test_keepalive_comments_and_crlf(self) -> None:
        """Keep-alive comments are ignored; CRLF line ends decode like LF."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_chat_keepalive_crlf.sse"),
            format=FORMAT,
            handler=recorder,
        )
        assert recorder.names == [
            "partial_response",
            "partial_response",
            "complete_response",
        ]
        assert response.message.text == "Kept alive."
        assert response.model_name == "openrouter/auto"

    def test_tool_call_cut_off_by_length(self) -> None:
        """A call open at finish_reason "length" never completes; reason LENGTH."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_chat_length_tool.sse"),
            format=FORMAT,
            handler=recorder,
        )
        assert "complete_tool_call" not in recorder.names
        assert len(recorder.payloads("partial_tool_call")) == 2
        assert response.message.tool_calls == ()
        assert response.finish_reason is lh.FinishReason.LENGTH
        assert response.message.status == "length"

    def test_refusal(self) -> None:
        """Refusal text streams as response text and is reported as content filter."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_chat_refusal.sse"), format=FORMAT, handler=recorder
        )
        refusal = "I'm sorry, I can't help with that."
        assert recorder.text == refusal
        assert response.message.metadata["refusal"] == refusal
        assert response.finish_reason is lh.FinishReason.CONTENT_FILTER
        assert response.message.status == "content_filtered"

    def test_refusal_cut_off_by_length(self) -> None:
        """A refusal cut off by the length limit keeps the reason LENGTH."""
        _, response = _drive(
            _chunk({"refusal": "No"}), _chunk(finish_reason="length"), "[DONE]"
        )
        assert response.message.metadata["refusal"] == "No"
        assert response.finish_reason is lh.FinishReason.LENGTH

    def test_truncated_stream(self) -> None:
        """A stream that ends without [DONE] is a retryable stream_error."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError) as caught:
            replay_stream(
                local_fixture("openai_chat_truncated.sse"),
                format=FORMAT,
                handler=recorder,
            )
        assert caught.value.type == "stream_error"
        assert caught.value.retryable is True
        assert "[DONE]" in caught.value.message
        assert recorder.text == "Cut off"
        assert recorder.terminal_calls == [("error", caught.value)]


class TestChunks:
    """Single chunks: what each field becomes."""

    def test_same_index_new_id_starts_a_new_call(self) -> None:
        """Servers that number every call 0 still give two calls, by their ids."""
        recorder, response = _drive(
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "a",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ]
                }
            ),
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "b",
                            "function": {"name": "g", "arguments": ""},
                        }
                    ]
                }
            ),
            _chunk(finish_reason="tool_calls"),
            "[DONE]",
        )
        assert [(c.index, c.call_id, c.name) for c in response.message.tool_calls] == [
            (0, "a", "f"),
            (1, "b", "g"),
        ]
        assert recorder.names.count("complete_tool_call") == 2

    def test_fragments_without_index(self) -> None:
        """Without an index, a named fragment starts a call and others continue it."""
        _, response = _drive(
            _chunk({"tool_calls": [{"id": "a", "function": {"name": "f"}}]}),
            _chunk({"tool_calls": [{"function": {"arguments": '{"x": 1}'}}]}),
            _chunk({"tool_calls": [{"id": "b", "function": {"name": "g"}}]}),
            _chunk(finish_reason="tool_calls"),
            "[DONE]",
        )
        assert [(c.name, dict(c.arguments)) for c in response.message.tool_calls] == [
            ("f", {"x": 1}),
            ("g", {}),
        ]

    def test_missing_call_id_is_generated(self) -> None:
        """A call whose id never arrives gets call_<index>; a late id is kept."""
        _, response = _drive(
            _chunk({"tool_calls": [{"index": 0, "function": {"name": "f"}}]}),
            _chunk({"tool_calls": [{"index": 0, "id": "late", "function": {}}]}),
            _chunk({"tool_calls": [{"index": 1, "function": {"name": "g"}}]}),
            _chunk(finish_reason="tool_calls"),
            "[DONE]",
        )
        assert [c.call_id for c in response.message.tool_calls] == ["late", "call_1"]

    def test_done_without_finish_reason_completes_open_calls(self) -> None:
        """[DONE] with no finish chunk completes the open calls; the reason is OTHER."""
        _, response = _drive(
            _chunk(
                {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}
            ),
            "[DONE]",
        )
        assert len(response.message.tool_calls) == 1
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION

    def test_stop_without_anything(self) -> None:
        """An empty stream with [DONE] completes with no content and reason OTHER."""
        recorder, response = _drive(_chunk({"content": ""}), "[DONE]")
        assert response.message.content == ()
        assert response.finish_reason is lh.FinishReason.OTHER
        assert recorder.names == ["complete_response"]

    def test_other_choices_are_unmapped(self) -> None:
        """A chunk for choice 1 (n > 1) goes to on_unmapped_raw_event."""
        other = {"id": "c", "choices": [{"index": 1, "delta": {"content": "B"}}]}
        recorder, response = _drive(_chunk({"content": "A"}), other, "[DONE]")
        assert recorder.payloads("unmapped_raw_event") == [other]
        assert response.message.text == "A"

    def test_unknown_delta_fields_are_unmapped(self) -> None:
        """A chunk with only a delta field nobody maps (audio) goes to unmapped."""
        chunk = _chunk({"audio": {"id": "x"}, "content": None})
        recorder, _ = _drive(chunk, _chunk({"annotations": None}), "[DONE]")
        assert recorder.names == ["unmapped_raw_event", "complete_response"]
        assert recorder.payloads("unmapped_raw_event") == [chunk]

    def test_a_mapped_chunk_is_never_unmapped(self) -> None:
        """A chunk that gave text, thinking or a finish is not also sent unmapped,
        whatever unknown fields ride along (OpenRouter's reasoning_details)."""
        details = [{"type": "reasoning.text", "text": "hm"}]
        recorder, response = _drive(
            _chunk({"reasoning": "hm", "reasoning_details": details}),
            _chunk({"audio": {"id": "x"}, "content": "hi"}),
            _chunk({"audio": {"id": "y"}}, finish_reason="stop"),
            "[DONE]",
        )
        assert recorder.names == [
            "partial_thinking",
            "partial_response",
            "complete_response",
        ]
        assert response.message.text == "hi"

    def test_choice_zero_after_another_choice_is_kept(self) -> None:
        """A chunk carrying choice 1 before choice 0 still delivers choice 0."""
        chunk = {
            "id": "c",
            "choices": [
                {"index": 1, "delta": {"content": "B"}},
                {"index": 0, "delta": {"content": "A"}},
            ],
        }
        recorder, response = _drive(chunk, "[DONE]")
        assert response.message.text == "A"
        assert "unmapped_raw_event" not in recorder.names

    def test_fragment_after_completion_is_malformed(self) -> None:
        """Arguments for a call that already completed are a protocol_error."""
        recorder = Recorder()
        driver = StreamDriver(FORMAT, recorder)
        call = {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}
        driver.feed(_chunk({"tool_calls": [call]}))
        driver.feed(
            _chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]})
        )
        driver.feed(
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "  "}}]})
        )
        with pytest.raises(lh.LangHooksError) as caught:
            driver.feed(
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "x"}}]})
            )
        assert caught.value.type == "protocol_error"
        assert recorder.names[-1] == "error"

    @pytest.mark.parametrize(
        ("event", "message"),
        [
            ("nonsense", "not a JSON object"),
            ({"choices": {"index": 0}}, "'choices' must be a list"),
            ({"choices": [{"delta": {"content": 5}}]}, "'delta.content'"),
            ({"choices": [{"delta": {"reasoning": 5}}]}, "reasoning_content"),
            ({"choices": [{"delta": {"refusal": ["x"]}}]}, "'delta.refusal'"),
            ({"choices": [{"delta": {"tool_calls": {"a": 1}}}]}, "'delta.tool_calls'"),
            ({"choices": [{"finish_reason": 3}]}, "'finish_reason'"),
            (
                {"choices": [{"delta": {"tool_calls": [{"index": 0}]}}]},
                "function.name",
            ),
            ({"choices": [{"delta": "x"}]}, "'delta' must be a JSON object"),
            ({"usage": {"prompt_tokens": -1}}, "prompt_tokens"),
            ({"choices": [3]}, "a choice"),
        ],
    )
    def test_malformed_chunks(self, event: object, message: str) -> None:
        """A chunk that breaks the schema is one protocol_error naming the field."""
        recorder = Recorder()
        driver = StreamDriver(FORMAT, recorder)
        with pytest.raises(lh.LangHooksError) as caught:
            driver.feed(event)
        assert caught.value.type == "protocol_error"
        assert message in caught.value.message
        assert recorder.terminal_calls == [("error", caught.value)]

    def test_tool_call_after_finish_is_malformed(self) -> None:
        """A tool call fragment after the finish chunk is a protocol_error."""
        with pytest.raises(lh.LangHooksError, match="after the finish_reason"):
            _drive(
                _chunk(finish_reason="stop"),
                _chunk({"tool_calls": [{"index": 0, "function": {"name": "f"}}]}),
            )

    @pytest.mark.parametrize(
        ("arguments", "error"),
        [("[1, 2]", "must be a JSON object"), ("{nope", "not valid JSON")],
    )
    def test_bad_arguments_at_finish(self, arguments: str, error: str) -> None:
        """Arguments that are not a JSON object fail as delta_conversion_failed."""
        fragment = {"index": 0, "id": "a", "function": {"name": "f"}}
        fragment["function"]["arguments"] = arguments  # type: ignore[index]
        with pytest.raises(lh.LangHooksError, match=error) as caught:
            _drive(
                _chunk({"tool_calls": [fragment]}), _chunk(finish_reason="tool_calls")
            )
        assert caught.value.type == "delta_conversion_failed"

    def test_error_object_that_is_a_string(self) -> None:
        """An error that is a bare string is still classified and raised."""
        with pytest.raises(lh.LangHooksError, match="boom") as caught:
            _drive({"error": "boom"})
        assert caught.value.type == "stream_error"

    def test_error_with_rate_limit_code(self) -> None:
        """A mid-stream error's code decides its type."""
        error = {
            "message": "slow down",
            "type": "tokens",
            "code": "rate_limit_exceeded",
        }
        with pytest.raises(lh.LangHooksError) as caught:
            _drive(_chunk({"content": "x"}), {"error": error})
        assert caught.value.type == "rate_limited"
        assert caught.value.retryable is True
        assert json.loads(json.dumps(caught.value.original)) == error


class TestCompatibleDialects:
    """Fields compatible servers add (seen in the real-world corpus)."""

    def test_mistral_content_parts(self) -> None:
        """A content list gives its thinking and text parts, in order."""
        recorder, response = _drive(
            _chunk(
                {
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": [{"type": "text", "text": "a"}],
                        },
                        {"type": "thinking", "thinking": "b"},
                        {"type": "thinking", "thinking": None},
                        {"type": "text", "text": "c"},
                        {"type": "text", "text": ""},
                    ]
                }
            ),
            _chunk(finish_reason="stop"),
            "[DONE]",
        )
        assert recorder.names[:3] == [
            "partial_thinking",
            "partial_thinking",
            "partial_response",
        ]
        assert (response.message.thinking, response.message.text) == ("ab", "c")

    def test_unknown_content_part_alone_is_unmapped(self) -> None:
        """A chunk holding only a content part nobody maps goes to unmapped."""
        chunk = _chunk({"content": [{"type": "reference", "ids": [1]}]})
        recorder, _ = _drive(chunk, _chunk(finish_reason="stop"), "[DONE]")
        assert recorder.payloads("unmapped_raw_event") == [chunk]

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (5, "a string or a list of parts"),
            ([5], "a content part"),
            ([{"type": "thinking", "thinking": 5}], "a string or a list"),
            ([{"type": "thinking", "thinking": [5]}], "a thinking part"),
        ],
    )
    def test_malformed_content(self, content: object, message: str) -> None:
        """Content that is neither text nor a list of parts is a protocol_error."""
        with pytest.raises(lh.LangHooksError, match=message) as caught:
            _drive(_chunk({"content": content}))
        assert caught.value.type == "protocol_error"

    def test_azure_prompt_filter_chunk(self) -> None:
        """Azure's leading prompt-filter chunk is unmapped; the id comes after."""
        head = {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": [{"prompt_index": 0}],
        }
        recorder, response = _drive(
            head, _chunk({"content": "hi"}), _chunk(finish_reason="stop"), "[DONE]"
        )
        assert recorder.payloads("unmapped_raw_event") == [head]
        assert (response.id, response.model_name) == ("chatcmpl-1", "m")

    def test_extra_field_on_a_mapped_chunk_is_not_unmapped(self) -> None:
        """Groq's x_groq is unmapped on a role chunk, never on a text chunk."""
        role = _chunk({"role": "assistant", "content": ""}, x_groq={"id": "r"})
        recorder, _ = _drive(
            role,
            _chunk({"content": "hi"}, x_groq={"id": "r"}),
            _chunk(finish_reason="stop", x_groq={"id": "r"}),
            "[DONE]",
        )
        assert recorder.payloads("unmapped_raw_event") == [role]

    def test_perplexity_annotations_in_metadata(self) -> None:
        """citations and search_results go to response.metadata, last one winning."""
        _, response = _drive(
            _chunk({"content": "a"}, citations=["u1"], search_results=[{"u": 1}]),
            _chunk({"content": "b"}, citations=["u1", "u2"]),
            _chunk(finish_reason="stop", citations=[]),
            "[DONE]",
        )
        assert response.metadata["citations"] == ["u1", "u2"]
        assert response.metadata["search_results"] == [{"u": 1}]

    def test_openrouter_reasoning_details_joined_with_signature(self) -> None:
        """Pieces of one reasoning detail join; the signature-only piece lands on it."""

        def detail(**fields: Any) -> dict[str, Any]:
            return _chunk({"reasoning_details": [fields]})

        _, response = _drive(
            detail(type="reasoning.text", text="Hel", format="f", index=0),
            detail(type="reasoning.text", text="lo", index=0, signature=None),
            detail(type="reasoning.text", signature="sig", index=0),
            detail(type="reasoning.encrypted", data="xyz", index=1),
            detail(type="reasoning.encrypted", text="t", index=1),
            _chunk(finish_reason="stop"),
            "[DONE]",
        )
        assert response.message.metadata["reasoning_details"] == [
            {
                "type": "reasoning.text",
                "text": "Hello",
                "format": "f",
                "index": 0,
                "signature": "sig",
            },
            {"type": "reasoning.encrypted", "data": "xyz", "index": 1, "text": "t"},
        ]

    def test_malformed_reasoning_details(self) -> None:
        """reasoning_details that is not a list is a protocol_error."""
        with pytest.raises(lh.LangHooksError, match="reasoning_details"):
            _drive(_chunk({"reasoning_details": {"type": "x"}}))

    @pytest.mark.parametrize(
        ("usage", "output"),
        [
            # xAI: completion_tokens leaves the reasoning out; the total shows it.
            (
                {
                    "prompt_tokens": 291,
                    "completion_tokens": 26,
                    "total_tokens": 513,
                    "completion_tokens_details": {"reasoning_tokens": 196},
                },
                222,
            ),
            # OpenAI: completion_tokens already includes the reasoning.
            (
                {
                    "prompt_tokens": 176,
                    "completion_tokens": 228,
                    "total_tokens": 404,
                    "completion_tokens_details": {"reasoning_tokens": 192},
                },
                228,
            ),
            ({"prompt_tokens": 1, "completion_tokens": 2}, 2),
        ],
    )
    def test_output_tokens_include_reasoning(
        self, usage: dict[str, Any], output: int
    ) -> None:
        """TokenUsage.output_tokens counts thinking, whichever way it was reported."""
        _, response = _drive(
            _chunk(finish_reason="stop"), _chunk(choices=[], usage=usage), "[DONE]"
        )
        assert response.token_usage is not None
        assert response.token_usage.output_tokens == output
