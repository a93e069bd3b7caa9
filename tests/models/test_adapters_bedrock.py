"""The Bedrock ConverseStream adapter: the pinned mapping, quirks, malformed events."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

import langhooks as lh
from langhooks.cli import main
from langhooks.models import StreamDriver, replay_stream
from langhooks.models._adapters.bedrock import bedrock_error
from langhooks.models._eventstream import END_OF_STREAM

from . import Recorder, drive
from ._bedrock import TEXT_STREAM, THINKING_STREAM, TOOL_STREAM, event, exception

FORMAT: Final = "bedrock"
START: Final = {"type": "messageStart", "role": "assistant"}
METADATA: Final = {
    "type": "metadata",
    "usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
}


def stop(reason: str | None = "end_turn", **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "messageStop", **fields}
    if reason is not None:
        event["stopReason"] = reason
    return event


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"type": "contentBlockDelta", "contentBlockIndex": index, "delta": fields}


def block_start(index: int, **start: Any) -> dict[str, Any]:
    return {"type": "contentBlockStart", "contentBlockIndex": index, "start": start}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "contentBlockStop", "contentBlockIndex": index}


def fails(*events: object) -> tuple[Recorder, lh.LangHooksError]:
    """Drive ``events``; the recorder and the error the stream ended with."""
    recorder = Recorder()
    driver = StreamDriver(FORMAT, recorder)

    def run() -> None:
        for item in events:
            if not driver.feed(item):
                break
        driver.finish()

    with pytest.raises(lh.LangHooksError) as raised:
        run()
    assert recorder.errors == [raised.value]
    return recorder, raised.value


class TestMapping:
    """What DESIGN.md pins, event by event."""

    def test_text_usage_and_latency(self) -> None:
        """Text deltas are partials; metadata gives usage and latency."""
        recorder, response = drive(
            FORMAT,
            START,
            delta(0, text="Hi"),
            delta(0, text=""),
            delta(0, text=" you"),
            block_stop(0),
            stop(additionalModelResponseFields={"x": 1}),
            {**METADATA, "metrics": {"latencyMs": 12}, "trace": {"t": 1}},
        )
        assert recorder.names == ["partial_response"] * 2 + ["complete_response"]
        assert response.message.text == "Hi you"
        assert response.finish_reason is lh.FinishReason.STOP
        assert response.token_usage is not None
        assert response.token_usage.total_tokens == 5
        assert response.metadata["latency_ms"] == 12
        assert response.metadata["trace"] == {"t": 1}
        assert response.metadata["additional_model_response_fields"] == {"x": 1}

    def test_cache_tokens_count_as_input(self) -> None:
        """Input tokens include cache reads and writes; the raw usage keeps them."""
        usage = {
            "inputTokens": 1,
            "outputTokens": 2,
            "cacheReadInputTokens": 30,
            "cacheWriteInputTokens": 400,
        }
        _, response = drive(FORMAT, stop(), {"type": "metadata", "usage": usage})
        assert response.token_usage is not None
        assert response.token_usage.input_tokens == 431
        assert response.token_usage.raw == usage

    def test_metadata_fields_without_usage(self) -> None:
        """performanceConfig and serviceTier are kept; no usage means none."""
        _, response = drive(
            FORMAT,
            stop(),
            {
                "type": "metadata",
                "metrics": {},
                "performanceConfig": {"latency": "optimized"},
                "serviceTier": {"type": "priority"},
            },
        )
        assert response.token_usage is None
        assert response.metadata["performance_config"] == {"latency": "optimized"}
        assert response.metadata["service_tier"] == {"type": "priority"}
        assert "latency_ms" not in response.metadata

    def test_metadata_before_message_stop(self) -> None:
        """Metadata may come first: the stream ends at messageStop then."""
        _, response = drive(
            FORMAT, delta(0, text="a"), METADATA, stop("max_tokens"), delta(0, text="b")
        )
        assert response.message.text == "a"
        assert response.finish_reason is lh.FinishReason.LENGTH
        assert response.message.status == "length"

    @pytest.mark.parametrize(
        ("reason", "finish"),
        [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("tool_use", "tool_execution"),
            ("max_tokens", "length"),
            ("model_context_window_exceeded", "length"),
            ("guardrail_intervened", "content_filter"),
            ("content_filtered", "content_filter"),
            ("malformed_model_output", "other"),
            (None, "other"),
        ],
    )
    def test_stop_reasons(self, reason: str | None, finish: str) -> None:
        """Each stopReason maps to its finish reason (unknown ones to OTHER)."""
        _, response = drive(FORMAT, stop(reason), METADATA)
        assert response.finish_reason is lh.FinishReason(finish)
        assert response.metadata.get("stop_reason") == reason

    def test_reasoning_is_thinking_and_its_signature_is_kept(self) -> None:
        """reasoningContent.text is thinking; signature and redacted content are kept
        in order, in Anthropic's block shape."""
        recorder, response = drive(
            FORMAT,
            delta(0, reasoningContent={"redactedContent": "cmVk"}),
            block_stop(0),
            delta(1, reasoningContent={"text": "Hm"}),
            delta(1, reasoningContent={"text": ""}),
            delta(1, reasoningContent={"signature": "c2ln"}),
            block_stop(1),
            delta(2, reasoningContent={"text": "unsigned"}),
            delta(3, text="Hi"),
            stop(),
            METADATA,
        )
        assert recorder.thinking == "Hmunsigned"
        assert response.message.text == "Hi"
        metadata = response.message.metadata
        assert metadata["thinking_signature"] == "c2ln"
        assert metadata["thinking_blocks"] == (
            {"type": "redacted_thinking", "data": "cmVk"},
            {"type": "thinking", "thinking": "Hm", "signature": "c2ln"},
            {"type": "thinking", "thinking": "unsigned", "signature": ""},
        )

    def test_tool_calls_numbered_in_order(self) -> None:
        """toolUse blocks are calls 0, 1, ...; fragments are joined and parsed."""
        recorder, response = drive(
            FORMAT,
            block_start(1, toolUse={"toolUseId": "t1", "name": "a"}),
            delta(1, toolUse={"input": '{"x":'}),
            delta(1, toolUse={"input": ""}),
            delta(1, toolUse={"input": "1}"}),
            block_stop(1),
            block_start(
                2, toolUse={"toolUseId": "t2", "name": "b", "type": "tool_use"}
            ),
            block_stop(2),
            stop("tool_use"),
            METADATA,
        )
        calls = response.message.tool_calls
        assert [(c.index, c.call_id, c.name, dict(c.arguments)) for c in calls] == [
            (0, "t1", "a", {"x": 1}),
            (1, "t2", "b", {}),
        ]
        partials = recorder.payloads("partial_tool_call")
        assert [(p.index, p.partial_arguments) for p in partials] == [
            (0, ""),
            (0, '{"x":'),
            (0, "1}"),
            (1, ""),
        ]
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION

    def test_server_tool_blocks_are_unmapped(self) -> None:
        """A server-side tool and its result are the provider's own work: every
        event of those blocks goes to on_unmapped_raw_event."""
        events = [
            block_start(
                0, toolUse={"toolUseId": "s", "name": "x", "type": "server_tool_use"}
            ),
            delta(0, toolUse={"input": "{}"}),
            block_stop(0),
            block_start(1, toolResult={"toolUseId": "s", "status": "success"}),
            delta(1, toolResult=[{"json": {}}]),
            block_stop(1),
        ]
        recorder, response = drive(FORMAT, *events, stop(), METADATA)
        assert recorder.payloads("unmapped_raw_event") == events
        assert response.message.tool_calls == ()

    def test_citations_and_unknown_events_are_unmapped(self) -> None:
        """Citation deltas and unknown events carry no typed data."""
        citation = delta(1, citation={"title": "doc"})
        unknown = {"type": "somethingNew", "x": 1}
        recorder, response = drive(
            FORMAT,
            delta(0, text="a"),
            citation,
            block_stop(1),
            unknown,
            stop(),
            METADATA,
        )
        assert recorder.payloads("unmapped_raw_event") == [citation, unknown]
        assert response.message.text == "a"

    def test_text_block_announced_with_an_empty_start(self) -> None:
        """``start: {}`` announces a text block: its deltas are text."""
        _, response = drive(
            FORMAT, block_start(0), delta(0, text="a"), block_stop(0), stop(), METADATA
        )
        assert response.message.text == "a"

    def test_botocore_parsed_events(self) -> None:
        """botocore's parsed shape, ``{"contentBlockDelta": {...}}``, is taken too."""
        _, response = drive(
            FORMAT,
            {"messageStart": {"role": "assistant"}},
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "a"}}},
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "b"}}},
            {"messageStop": {"stopReason": "end_turn"}},
            {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1}}},
        )
        assert response.message.text == "ab"
        assert response.token_usage is not None

    def test_end_of_body_after_message_stop_completes(self) -> None:
        """The decoder's end-of-stream ends a stream whose messageStop arrived."""
        _, response = drive(FORMAT, delta(0, text="a"), stop(), END_OF_STREAM)
        assert response.message.text == "a"
        assert response.token_usage is None

    def test_end_of_body_before_message_stop_is_truncated(self) -> None:
        """Without messageStop, the end of the body is a truncated stream."""
        _, error = fails(delta(0, text="a"), END_OF_STREAM)
        assert (error.type, error.retryable) == ("stream_error", True)
        assert "messageStop" in error.message


class TestErrors:
    """Exceptions and errors in the stream, and malformed events."""

    @pytest.mark.parametrize(
        ("name", "kind", "retryable"),
        [
            ("throttlingException", "rate_limited", True),
            ("serviceUnavailableException", "overloaded", True),
            ("internalServerException", "stream_error", True),
            ("modelStreamErrorException", "stream_error", True),
            ("modelTimeoutException", "timeout", True),
            ("validationException", "invalid_request", False),
            ("accessDeniedException", "authentication", False),
            ("someNewException", "stream_error", False),
        ],
    )
    def test_exception_events(self, name: str, kind: str, retryable: bool) -> None:
        """An exception message raises its classified error, once."""
        recorder, error = fails(
            delta(0, text="a"), {"type": name, "message": "it failed"}
        )
        assert (error.type, error.retryable, error.message) == (
            kind,
            retryable,
            "it failed",
        )
        assert error.metadata["error_code"] == name
        assert recorder.names == ["partial_response", "error"]

    def test_exception_without_a_message(self) -> None:
        """An exception with no message still says what it is."""
        _, error = fails({"type": "throttlingException", "Message": ""})
        assert error.message == "the stream failed (throttlingException)"

    def test_error_message_type(self) -> None:
        """An eventstream error message (code and message headers) is raised."""
        _, error = fails(
            {"type": "error", "code": "ThrottlingException", "message": "slow"}
        )
        assert (error.type, error.message) == ("rate_limited", "slow")

    def test_http_style_error(self) -> None:
        """``bedrock_error`` keeps the status, the headers and retry-after."""
        error = bedrock_error(
            "ThrottlingException",
            "slow",
            status=429,
            headers={"retry-after": "3"},
        )
        assert (error.type, error.retry_after) == ("rate_limited", 3.0)
        assert error.metadata["status_code"] == 429
        unknown = bedrock_error(None, "odd", status=418)
        assert unknown.type == "stream_error"

    @pytest.mark.parametrize(
        ("events", "says"),
        [
            ([[1, 2]], "JSON object"),
            ([{"type": 3}], "string 'type'"),
            (
                [{"type": "contentBlockDelta", "delta": {"text": "a"}}],
                "contentBlockIndex",
            ),
            (
                [delta(0, text="a"), block_stop(0), delta(0, text="b")],
                "already stopped",
            ),
            ([block_start(0), block_start(0)], "started twice"),
            ([block_start(0, toolUse={"name": "a"})], "toolUseId"),
            ([delta(0, toolUse={"input": "{}"})], "not a started toolUse"),
            (
                [delta(0, text="a"), delta(0, reasoningContent={"text": "b"})],
                "reasoning",
            ),
            (
                [delta(0, reasoningContent={"text": "b"}), delta(0, text="a")],
                "text delta",
            ),
            ([{"type": "contentBlockDelta", "contentBlockIndex": 0}], "'delta'"),
            ([delta(0, text=5)], "'text'"),
            ([{"metadata": 5}], "JSON object"),
        ],
    )
    def test_malformed_events(self, events: list[object], says: str) -> None:
        """Events that break the format are one protocol_error, saying what."""
        _, error = fails(*events)
        assert error.type == "protocol_error"
        assert says in error.message

    def test_tool_arguments_that_are_not_json(self) -> None:
        """Fragments that do not spell a JSON object fail the conversion."""
        _, error = fails(
            block_start(0, toolUse={"toolUseId": "t", "name": "a"}),
            delta(0, toolUse={"input": "{nope"}),
            block_stop(0),
        )
        assert error.type == "delta_conversion_failed"


class TestReplay:
    """The binary bodies replay through the frame decoder, split anywhere."""

    @pytest.mark.parametrize("body", [TEXT_STREAM, THINKING_STREAM, TOOL_STREAM])
    def test_one_byte_pieces_replay_the_same(self, body: bytes) -> None:
        """A body in 1-byte pieces gives the callbacks and response it gives whole."""
        whole, pieces = Recorder(), Recorder()
        expected = replay_stream([body], format=FORMAT, handler=whole)
        split = [body[i : i + 1] for i in range(len(body))]
        assert replay_stream(split, format=FORMAT, handler=pieces) == expected
        assert pieces.events == whole.events
        assert whole.names[-1] == "complete_response"

    def test_exception_frame_in_a_body(self) -> None:
        """An exception message in a body is raised after what came before it."""
        body = event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "a"}}
        )
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError) as raised:
            replay_stream(
                [body + exception("throttlingException", "slow")],
                format=FORMAT,
                handler=recorder,
            )
        assert raised.value.type == "rate_limited"
        assert recorder.names == ["partial_response", "error"]

    def test_a_cut_body_is_truncated(self) -> None:
        """A body cut inside a message ends as a truncated stream."""
        with pytest.raises(lh.LangHooksError) as raised:
            replay_stream([TEXT_STREAM[:-3]], format=FORMAT, handler=Recorder())
        assert (raised.value.type, raised.value.retryable) == ("stream_error", True)

    def test_cli_replays_a_body(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``langhooks replay --format bedrock`` prints a body's events; another
        format gets a hint naming bedrock."""
        path = tmp_path / "converse.bin"
        path.write_bytes(TOOL_STREAM)
        assert main(["replay", str(path), "--format", "bedrock"]) == 0
        out = capsys.readouterr().out
        assert "on_complete_tool_call   #0 get_weather tooluse_1" in out
        assert main(["replay", str(path), "--format", "anthropic"]) == 2
        assert "try --format bedrock" in capsys.readouterr().err

    def test_text_chunks_are_refused(self) -> None:
        """A binary stream has no text form: str chunks fail the stream, as any
        failure under it does, with the TypeError saying so as the cause."""
        with pytest.raises(lh.LangHooksError, match="binary") as raised:
            replay_stream(["abc"], format=FORMAT, handler=Recorder())
        assert isinstance(raised.value.__cause__, TypeError)
