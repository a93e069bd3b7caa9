"""Connection and HTTP errors name the URL that failed, against local servers.

A newcomer's first mistakes are a server that is not running and a base URL
without ``/v1``; the error says which URL was tried, and for the second, what to
try instead.
"""

from __future__ import annotations

import asyncio

import pytest

from langhooks import LangHooksError, Message, StreamingChatResponseHandler
from langhooks.models import ChatRequest, OllamaChatModel, OpenAIChatModel
from langhooks.models._errors import error_from_exception, request_url
from langhooks.models._transport import http_error

from ._server import FixtureServer, Reply, unused_port

NOT_FOUND = Reply(
    status=404,
    headers=(("content-type", "text/plain"),),
    body=b"404 page not found",
)
REQUEST = ChatRequest([Message.user("Hi")])


def failure(model: OpenAIChatModel | OllamaChatModel) -> LangHooksError:
    """The error the model's stream raises."""
    with pytest.raises(LangHooksError) as raised:
        model.stream(REQUEST, StreamingChatResponseHandler())
    return raised.value


class TestConnection:
    def test_no_server_names_the_url(self) -> None:
        """An OpenAI-compatible base URL where nothing listens: a connection
        error that names the URL requested and asks whether the server runs."""
        base = f"http://127.0.0.1:{unused_port()}/v1"
        error = failure(OpenAIChatModel("m", base_url=base, api_key="-"))
        assert error.type == "connection"
        assert f"{base}/chat/completions" in error.message
        assert "is the server running there?" in error.message
        assert error.metadata["url"] == f"{base}/chat/completions"

    def test_no_ollama_server_names_the_url(self) -> None:
        """The same through httpx, on Ollama's native API."""
        base = f"http://127.0.0.1:{unused_port()}"
        error = failure(OllamaChatModel("m", base_url=base))
        assert error.type == "connection"
        assert f"{base}/api/chat" in error.message

    def test_an_exception_without_a_request(self) -> None:
        """A transport error that carries no request still says what failed."""
        error = error_from_exception(ConnectionRefusedError("refused"))
        assert error.message == (
            "the connection failed: ConnectionRefusedError: refused"
        )
        assert "url" not in error.metadata
        assert request_url(ValueError("x")) is None

    def test_an_httpx_error_without_a_request(self) -> None:
        """httpx's error raises when asked for a request it never had: no URL."""
        import httpx

        error = error_from_exception(httpx.ConnectError("refused"))
        assert error.message == "the connection failed: ConnectError: refused"

    def test_the_url_is_looked_for_four_causes_deep(self) -> None:
        """The URL is found on an exception the failure was raised from, up to
        four deep; a longer chain without one gives None."""
        import httpx

        request = httpx.Request("POST", "http://127.0.0.1:9/api/chat")
        inner: BaseException = httpx.ConnectError("refused", request=request)
        for _ in range(3):
            outer = OSError("wrapped")
            outer.__cause__ = inner
            inner = outer
        assert request_url(inner) == "http://127.0.0.1:9/api/chat"
        outer = OSError("once more")
        outer.__cause__ = inner
        assert request_url(outer) is None

    def test_a_timeout_names_the_url(self) -> None:
        """A timeout raised by httpx names the URL too."""
        import httpx

        request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
        error = error_from_exception(httpx.ReadTimeout("slow", request=request))
        assert error.type == "timeout"
        assert "to http://127.0.0.1:9/v1/chat/completions timed out" in error.message


class TestHTTPStatus:
    def test_404_without_v1_hints_at_it(self) -> None:
        """A base URL missing ``/v1`` gets a 404; the error names the URL and
        suggests the base URL with ``/v1``."""
        with FixtureServer() as server:
            server.add(NOT_FOUND)
            model = OpenAIChatModel("m", base_url=server.url, api_key="-")
            error = failure(model)
        assert error.type == "invalid_request"
        assert f"from {server.url}/chat/completions" in error.message
        assert f"try {server.url}/v1" in error.message
        assert error.metadata["url"] == f"{server.url}/chat/completions"

    def test_404_with_v1_has_no_hint(self) -> None:
        """With ``/v1`` in the URL, a 404 names the URL and nothing more (the
        model may be the one missing)."""
        with FixtureServer() as server:
            server.add(NOT_FOUND)
            model = OpenAIChatModel("m", base_url=f"{server.url}/v1", api_key="-")
            error = failure(model)
        assert f"from {server.url}/v1/chat/completions" in error.message
        assert "usually ends in /v1" not in error.message

    def test_async_404_names_the_url(self) -> None:
        """The async client's hook names the URL as well."""
        with FixtureServer() as server:
            server.add(NOT_FOUND)
            model = OpenAIChatModel("m", base_url=server.url, api_key="-")
            with pytest.raises(LangHooksError) as raised:
                asyncio.run(model.astream(REQUEST, StreamingChatResponseHandler()))
        assert f"try {server.url}/v1" in raised.value.message

    def test_ollama_error_names_the_url(self) -> None:
        """An Ollama error status names the URL (no /v1 hint: its API is /api)."""
        with FixtureServer() as server:
            server.add(NOT_FOUND)
            error = failure(OllamaChatModel("m", base_url=server.url))
        assert f"from {server.url}/api/chat" in error.message
        assert "/v1" not in error.message

    def test_other_paths_and_statuses_get_no_hint(self) -> None:
        """Only a 404 on an OpenAI-style path without /v1 gets the hint."""
        assert (
            "usually"
            not in http_error(500, {}, b"boom", url="http://h/chat/completions").message
        )
        assert "usually" not in http_error(404, {}, b"no", url="http://h/other").message
        assert (
            "try http://h/v1"
            in http_error(404, {}, b"no", url="http://h/responses").message
        )
