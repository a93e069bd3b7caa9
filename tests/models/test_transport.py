"""The transport helpers the provider models share."""

from __future__ import annotations

import httpx
import pytest

from langhooks import LangHooksError
from langhooks.models._errors import error_from_exception
from langhooks.models._transport import (
    _body_message,
    lower_headers,
    mapping_items,
    require,
    response_metadata,
)


class TestRequire:
    def test_missing_package_names_the_extra(self) -> None:
        """A missing SDK is an ImportError that says which extra installs it."""
        with pytest.raises(ImportError, match=r'pip install "langhooks\[openai\]"'):
            require("langhooks_no_such_package", "openai")


class TestErrorFromException:
    def test_a_langhooks_error_is_kept(self) -> None:
        """An error that is already classified passes through unchanged."""
        error = LangHooksError("overloaded", "busy")
        assert error_from_exception(error) is error

    @pytest.mark.parametrize(
        ("exc", "expected"),
        [
            (TimeoutError("slow"), "timeout"),
            (httpx.ReadTimeout("slow"), "timeout"),
            (ConnectionResetError("reset"), "connection"),
            (httpx.RemoteProtocolError("cut"), "connection"),
            (ValueError("bad request"), "stream_error"),
        ],
    )
    def test_transport_failures(self, exc: Exception, expected: str) -> None:
        """Timeouts, transport failures and anything else map to their types."""
        error = error_from_exception(exc)
        assert error.type == expected
        assert error.original is exc

    def test_something_else_is_not_retryable(self) -> None:
        """A failure that is not the transport's is not worth retrying."""
        assert error_from_exception(ValueError("x")).retryable is False


class TestBodyMessage:
    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"error": {"type": "x", "message": "nested"}}, "nested"),
            ({"error": "flat"}, "flat"),
            ({"message": "top"}, "top"),
            ({"detail": "elsewhere"}, None),
            ("", None),
            (None, None),
        ],
    )
    def test_finds_the_message(self, body: object, message: str | None) -> None:
        """The message of an error body is found wherever providers put it."""
        assert _body_message(body) == message


class TestHeaders:
    def test_names_are_lower_cased_and_repeats_joined(self) -> None:
        """Every header is kept, lower-cased; a repeated one is joined."""
        headers = httpx.Headers([("X-A", "1"), ("x-a", "2"), ("Retry-After", "3")])
        assert lower_headers(headers) == {"x-a": "1, 2", "retry-after": "3"}
        assert lower_headers({"X-B": "4"}) == {"x-b": "4"}

    def test_response_metadata(self) -> None:
        """Metadata carries the headers and the parsed rate limits."""
        metadata = response_metadata({"Retry-After": "3"})
        assert metadata["response_headers"] == {"retry-after": "3"}
        assert metadata["ratelimit"]["retry_after"] == 3.0


class TestMappingItems:
    def test_only_lists_of_objects_count(self) -> None:
        """Metadata that is not a list or tuple of objects gives nothing to send."""
        assert mapping_items("text") == []
        assert mapping_items(None) == []
        assert mapping_items(({"a": 1}, "b")) == [{"a": 1}]
