"""The Gemini streamGenerateContent adapter: parts, finishes, errors, bad data."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

import pytest

import langhooks as lh
from langhooks.models import replay_stream
from langhooks.models._transport import google_retry_delay, http_error

from . import Recorder, drive, local_fixture

FORMAT: Final = "gemini"


def _chunk(*parts: dict[str, Any], **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"parts": list(parts), "role": "model"}, **candidate}
        ],
        "modelVersion": "gemini-test",
        "responseId": "r1",
    }


def _drive(*events: object) -> tuple[Recorder, lh.ChatResponse]:
    return drive(FORMAT, *events)


def _fails(*events: object) -> lh.LangHooksError:
    recorder = Recorder()
    with pytest.raises(lh.LangHooksError) as raised:
        drive(FORMAT, *events)
    assert recorder.violations == []
    return raised.value


class TestParts:
    def test_fixture_replays(self) -> None:
        """The local fixture: thinking, text, one whole call, usage with thoughts."""
        recorder = Recorder()
        response = replay_stream(
            local_fixture("gemini_thinking_tool.sse"), format=FORMAT, handler=recorder
        )
        assert recorder.names.count("partial_tool_call") == 1
        assert response.token_usage is not None
        assert response.token_usage.output_tokens == 24 + 57
        assert response.message.metadata["response_id"] == "gmR3sp0nse1d"

    def test_finish_reasons(self) -> None:
        """MAX_TOKENS is LENGTH, SAFETY is CONTENT_FILTER, others OTHER."""
        for reason, want, status in (
            ("MAX_TOKENS", lh.FinishReason.LENGTH, "length"),
            ("SAFETY", lh.FinishReason.CONTENT_FILTER, "content_filtered"),
            ("MALFORMED_FUNCTION_CALL", lh.FinishReason.OTHER, "complete"),
        ):
            _, response = _drive(
                _chunk(
                    {"text": "a"},
                    finishReason=reason,
                    finishMessage="why",
                    index=0,
                )
            )
            assert response.finish_reason is want
            assert response.message.status == status
            assert response.metadata["stop_reason"] == reason
            assert response.metadata["finish_message"] == "why"

    def test_other_candidates_are_unmapped(self) -> None:
        """A second candidate's chunk (candidateCount > 1) goes to unmapped."""
        second = _chunk({"text": "b"}, index=1)
        recorder, response = _drive(second, _chunk({"text": "a"}, finishReason="STOP"))
        assert recorder.payloads("unmapped_raw_event") == [second]
        assert response.message.text == "a"

    def test_grounding_only_chunk_is_unmapped(self) -> None:
        """A chunk that only carries grounding is unmapped and kept."""
        grounding = {"candidates": [{"groundingMetadata": {"webSearchQueries": ["q"]}}]}
        recorder, response = _drive(
            grounding, _chunk({"text": "a"}, finishReason="STOP")
        )
        assert recorder.payloads("unmapped_raw_event") == [grounding]
        assert response.metadata["grounding_metadata"] == {"webSearchQueries": ["q"]}

    def test_empty_usage_and_thought_without_text(self) -> None:
        """An empty thought part is typed but says nothing; usage may lack counts."""
        recorder, response = _drive(
            {
                **_chunk({"text": "", "thought": True}),
                "usageMetadata": {},
                "promptFeedback": {"safetyRatings": []},
            },
            _chunk({"functionCall": {"name": "f"}}, finishReason="STOP"),
        )
        assert recorder.names == [
            "partial_tool_call",
            "complete_tool_call",
            "complete_response",
        ]
        assert response.message.tool_calls[0].call_id == "call_0"
        assert response.token_usage == lh.TokenUsage()

    def test_several_parts_in_a_chunk(self) -> None:
        """A chunk of several parts delivers each, in order."""
        recorder, response = _drive(
            _chunk({"text": "a"}, {"text": "b", "thought": True}, index=0),
            _chunk({"text": "c"}, finishReason="STOP", index=0),
        )
        assert recorder.names[:3] == [
            "partial_response",
            "partial_thinking",
            "partial_response",
        ]
        assert (response.message.text, response.message.thinking) == ("ac", "b")

    def test_untyped_parts_are_unmapped(self) -> None:
        """Code, images and server parts alone send their chunk to unmapped."""
        code = _chunk({"executableCode": {"language": "PYTHON", "code": "1"}}, index=0)
        image = _chunk(
            {
                "inlineData": {"mimeType": "image/png", "data": "AA=="},
                "thoughtSignature": "s",
            },
            {"codeExecutionResult": {"outcome": "OUTCOME_OK"}},
            index=0,
        )
        recorder, response = _drive(
            code, image, _chunk({"text": ""}, finishReason="STOP", index=0)
        )
        assert recorder.payloads("unmapped_raw_event") == [code, image]
        assert recorder.names[-1] == "complete_response"
        assert response.message.metadata["thinking_signature"] == "s"
        assert response.message.text == ""

    def test_read_only_mappings(self) -> None:
        """Events given as other mappings (an SDK's, say) map the same."""
        chunk = _chunk({"text": "a"}, finishReason="STOP")
        candidate = MappingProxyType(
            {
                **chunk["candidates"][0],
                "content": MappingProxyType({"parts": [{"text": "a"}]}),
            }
        )
        _, response = _drive(MappingProxyType({**chunk, "candidates": [candidate]}))
        assert response.message.text == "a"

    def test_prompt_blocked(self) -> None:
        """promptFeedback.blockReason ends the stream as CONTENT_FILTER."""
        _, response = _drive({"promptFeedback": {"blockReason": "SAFETY"}})
        assert response.finish_reason is lh.FinishReason.CONTENT_FILTER
        assert response.metadata["block_reason"] == "SAFETY"
        assert response.id is None


class TestErrors:
    def test_error_event_by_status(self) -> None:
        """The error's status string is its code; its code the HTTP status."""
        error = _fails(
            {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}
        )
        assert (error.type, error.retryable) == ("overloaded", True)
        assert error.metadata["error_code"] == "UNAVAILABLE"
        assert error.metadata["status_code"] == 503

    def test_error_event_without_details(self) -> None:
        """An error that is a bare string or lacks a message is still raised."""
        assert _fails({"error": "boom"}).message == "boom"
        assert _fails({"error": {"code": "x"}}).message == "the stream failed"

    @pytest.mark.parametrize(
        "event",
        [
            {"candidates": {"a": 1}},
            {"candidates": [{"content": {"parts": {"a": 1}}}]},
            {"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]},
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": {"name": "f", "args": 1}}]}}
                ]
            },
        ],
    )
    def test_malformed_data_is_a_protocol_error(self, event: object) -> None:
        """Wrong shapes are protocol errors, reported once."""
        assert _fails(event).type == "protocol_error"

    def test_no_finish_is_truncated(self) -> None:
        """A stream that ends without a finishReason is a retryable stream_error."""
        error = _fails(_chunk({"text": "a"}))
        assert (error.type, error.retryable) == ("stream_error", True)


class TestRetryInfo:
    @pytest.mark.parametrize(
        ("details", "seconds"),
        [
            (
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": "1.5s",
                    }
                ],
                1.5,
            ),
            (
                [
                    "junk",
                    {"@type": "type.googleapis.com/google.rpc.Help"},
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": "2s",
                    },
                ],
                2.0,
            ),
            (
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": "xs",
                    }
                ],
                None,
            ),
            (
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": "-1s",
                    }
                ],
                None,
            ),
            (
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": 3,
                    }
                ],
                None,
            ),
            ([{"@type": "type.googleapis.com/google.rpc.RetryInfo"}], None),
            ({"not": "a list"}, None),
        ],
    )
    def test_retry_delay(self, details: object, seconds: float | None) -> None:
        """google.rpc.RetryInfo's retryDelay gives the wait; anything else none."""
        assert google_retry_delay({"details": details}) == seconds


class TestHttpErrors:
    def test_google_error_body_without_a_string_code(self) -> None:
        """An error whose only code is the HTTP status is classified by the status."""
        body = b'{"error": {"code": 503, "message": "The model is overloaded."}}'
        error = http_error(503, {}, body)
        assert (error.type, error.retryable) == ("overloaded", True)
        assert "error_code" not in error.metadata
        assert error.message.startswith("The model is overloaded.")
