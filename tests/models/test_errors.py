"""Error classification and rate-limit header parsing."""

from __future__ import annotations

import email.utils
import time
from pathlib import Path

import pytest

from langhooks.models._errors import (
    classify_error,
    parse_ratelimit,
    retry_after_seconds,
)

from . import local_fixture


def _http(path: Path) -> tuple[int, dict[str, str], str]:
    head, _, body = path.read_bytes().decode().partition("\r\n\r\n")
    status_line, *lines = head.split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), headers, body


class TestClassifyError:
    """classify_error maps statuses and codes to types and retryability."""

    @pytest.mark.parametrize(
        ("status", "code", "error_type", "retryable"),
        [
            (429, None, "rate_limited", True),
            (None, "rate_limit_error", "rate_limited", True),
            (None, "too_many_requests", "rate_limited", True),
            (429, "insufficient_quota", "rate_limited", False),
            (529, None, "overloaded", True),
            (503, None, "overloaded", True),
            (None, "overloaded_error", "overloaded", True),
            (None, "service_unavailable_error", "overloaded", True),
            (408, None, "timeout", True),
            (504, None, "timeout", True),
            (401, None, "authentication", False),
            (403, "permission_error", "authentication", False),
            (None, "invalid_api_key", "authentication", False),
            (400, None, "invalid_request", False),
            (404, None, "invalid_request", False),
            (413, None, "invalid_request", False),
            (422, None, "invalid_request", False),
            (400, "context_length_exceeded", "invalid_request", False),
            (500, None, "stream_error", True),
            (502, None, "stream_error", True),
            (409, None, "stream_error", True),
            (None, "server_error", "stream_error", True),
            (None, "api_error", "stream_error", True),
            (418, None, "stream_error", False),
            (None, None, "stream_error", False),
            (None, "something_new", "stream_error", False),
        ],
    )
    def test_table(
        self, status: int | None, code: str | None, error_type: str, retryable: bool
    ) -> None:
        """Each status or code gets its type and retryability."""
        error = classify_error(status=status, code=code, message="m")
        assert (error.type, error.retryable) == (error_type, retryable)

    def test_code_wins_over_status(self) -> None:
        """A recognised provider code decides even when the status says otherwise."""
        error = classify_error(status=400, code="rate_limit_exceeded", message="m")
        assert error.type == "rate_limited"

    def test_openai_429_fixture(self) -> None:
        """The OpenAI 429 gives rate_limited with parsed headers in metadata."""
        status, headers, _ = _http(local_fixture("openai_429_rate_limit.http"))
        error = classify_error(
            status=status,
            code="rate_limit_exceeded",
            message="Rate limit reached",
            headers=headers,
            original="body",
        )
        assert error.type == "rate_limited"
        assert error.retryable is True
        assert error.original == "body"
        assert error.metadata["status_code"] == 429
        assert error.metadata["error_code"] == "rate_limit_exceeded"
        assert error.metadata["response_headers"]["x-request-id"].startswith("req_")
        ratelimit = error.metadata["ratelimit"]
        assert ratelimit["tokens_remaining"] == 4735
        assert ratelimit["tokens_reset"] == pytest.approx(50.529)
        assert ratelimit["requests_reset"] == pytest.approx(0.12)
        assert error.retry_after is None
        assert "HTTP 429" in error.message

    def test_anthropic_429_fixture(self) -> None:
        """The Anthropic 429 carries retry-after and x-should-retry."""
        status, headers, _ = _http(local_fixture("anthropic_429_rate_limit.http"))
        error = classify_error(
            status=status, code="rate_limit_error", message="", headers=headers
        )
        assert error.type == "rate_limited"
        assert error.retry_after == 23.0
        assert error.retryable is True
        assert error.message == "rate_limit_error (HTTP 429)"
        assert error.metadata["ratelimit"]["input_tokens_remaining"] == 0

    def test_anthropic_529_fixture(self) -> None:
        """The Anthropic 529 (no reason phrase) is overloaded."""
        status, headers, _ = _http(local_fixture("anthropic_529_overloaded.http"))
        error = classify_error(
            status=status, code=None, message="Overloaded", headers=headers
        )
        assert (error.type, error.retryable) == ("overloaded", True)
        assert "ratelimit" not in error.metadata

    def test_x_should_retry_overrides(self) -> None:
        """x-should-retry: false makes even a 500 not retryable."""
        error = classify_error(
            status=500, code=None, message="m", headers={"X-Should-Retry": "false"}
        )
        assert error.retryable is False

    def test_message_fallbacks(self) -> None:
        """An empty message falls back to the status, or says the error is unknown."""
        assert classify_error(status=500, code=None, message="").message == "HTTP 500"
        assert classify_error(status=None, code=None, message="").message == (
            "unknown error"
        )


class TestParseRatelimit:
    """parse_ratelimit reads OpenAI and Anthropic headers into typed values."""

    def test_openai_headers(self) -> None:
        """Counts become ints and Go durations seconds."""
        _, headers, _ = _http(local_fixture("openai_200_stream_headers.http"))
        assert parse_ratelimit(headers) == {
            "requests_limit": 5000,
            "tokens_limit": 800000,
            "requests_remaining": 4999,
            "tokens_remaining": 799862,
            "requests_reset": pytest.approx(0.012),
            "tokens_reset": pytest.approx(0.01),
        }

    def test_anthropic_headers(self) -> None:
        """Counts become ints; reset timestamps are kept as given."""
        _, headers, _ = _http(local_fixture("anthropic_200_stream_headers.http"))
        parsed = parse_ratelimit(headers)
        assert parsed["requests_limit"] == 4000
        assert parsed["input_tokens_remaining"] == 1999000
        assert parsed["output_tokens_reset"] == "2026-01-01T10:00:00Z"
        assert parsed["tokens_limit"] == 2400000
        assert len(parsed) == 12

    def test_variants_and_oddities(self) -> None:
        """Priority tier, durations with hours and minutes, values that do not parse."""
        parsed = parse_ratelimit(
            {
                "anthropic-priority-input-tokens-limit": "10",
                "x-ratelimit-reset-tokens": "1h6m0.5s",
                "x-ratelimit-reset-requests": "soon",
                "x-ratelimit-limit-tokens_usage_based": "n/a",
                "x-ratelimit-bogus": "1",
                "x-ratelimit-limit-": "1",
                "anthropic-ratelimit-tokens-weird": "1",
                "content-type": "text/plain",
                "retry-after-ms": "1500",
            }
        )
        assert parsed == {
            "priority_input_tokens_limit": 10,
            "tokens_reset": 3960.5,
            "requests_reset": "soon",
            "tokens_usage_based_limit": "n/a",
            "retry_after": 1.5,
        }


class TestRetryAfter:
    """retry_after_seconds reads retry-after-ms, then retry-after."""

    def test_forms(self) -> None:
        """Seconds, milliseconds, absent, unparsable and negative values."""
        assert retry_after_seconds({"Retry-After": "7"}) == 7.0
        assert (
            retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
        )
        assert retry_after_seconds({}) is None
        assert retry_after_seconds({"retry-after": "whenever"}) is None
        assert retry_after_seconds({"retry-after": "-3"}) is None
        assert retry_after_seconds({"retry-after-ms": "nan", "retry-after": "2"}) == 2.0

    def test_http_date(self) -> None:
        """An HTTP date in the future gives the seconds until it; a past one 0."""
        future = email.utils.formatdate(time.time() + 60, usegmt=True)
        assert 50 < (retry_after_seconds({"retry-after": future}) or 0) <= 61
        past = "Thu, 01 Jan 2015 10:00:00 GMT"
        assert retry_after_seconds({"retry-after": past}) == 0.0
        naive = "Thu, 01 Jan 2015 10:00:00 -0000"
        assert retry_after_seconds({"retry-after": naive}) == 0.0
