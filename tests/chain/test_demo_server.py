"""``langhooks demo --base-url`` runs the agent on a real OpenAI-compatible server.

The server is a small HTTP server on 127.0.0.1 speaking the Chat Completions
streaming format; the official SDK (through ``OpenAIChatModel``) talks to it.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from typing_extensions import override

from langhooks.cli import main

pytest.importorskip("openai")


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One Chat Completions stream chunk."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "local-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def first_answer() -> list[dict[str, Any]]:
    """Text, then a get_weather call streamed in two argument fragments."""
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    return [
        chunk({"role": "assistant", "content": "Checking"}),
        chunk({"content": " the weather."}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        chunk({}, "tool_calls"),
    ]


def final_answer() -> list[dict[str, Any]]:
    """The answer after the tool result."""
    return [
        chunk({"role": "assistant", "content": "Take an"}),
        chunk({"content": " umbrella."}),
        chunk({}, "stop"),
    ]


class ChatServer(BaseHTTPRequestHandler):
    """Answers POST /v1/chat/completions with a stream, by conversation state."""

    requests: ClassVar[list[dict[str, Any]]] = []

    @override
    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def do_POST(self) -> None:
        """Stream the next answer."""
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        ChatServer.requests.append(body)
        has_result = any(m["role"] == "tool" for m in body["messages"])
        chunks = final_answer() if has_result else first_answer()
        payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
        payload += "data: [DONE]\n\n"
        data = payload.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", "req_local")
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server() -> Iterator[str]:
    """A Chat Completions server on 127.0.0.1; yields its base URL."""
    ChatServer.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ChatServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


class TestDemoOnAServer:
    """The same agent, on an OpenAI-compatible server."""

    def test_reviewed_tool_call_and_answer(
        self, server: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The call is interrupted, approved, run, and the answer streams."""
        code = main(
            [
                "demo",
                "--no-color",
                "--base-url",
                server,
                "--model",
                "local-model",
                "--api-key",
                "sk-local",
            ]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        for key in [
            "an agent on local-model at " + server,
            "text: Checking the weather.",
            "on_tool_call_identified      get_weather",
            "on_tool_interrupted          get_weather waits for a human",
            "on_tool_execution_completed  get_weather -> Paris: 14°C",
            "answer: Take an umbrella.",
        ]:
            assert key in out
        first, second = ChatServer.requests
        assert first["model"] == "local-model"
        assert first["tools"][0]["function"]["name"] == "get_weather"
        tool_message = second["messages"][-1]
        assert tool_message["role"] == "tool"
        assert tool_message["tool_call_id"] == "call_1"
        assert "14°C" in tool_message["content"]


@pytest.fixture
def closed_port() -> int:
    """A 127.0.0.1 port with nothing listening on it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class TestDemoOnAnUnreachableServer:
    """A server that refuses connections: the failure, its retry, the give-up."""

    def test_the_retry_is_visible(
        self, closed_port: int, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Between the two on_llm_error lines, an on_llm_retry line says the second
        call is a retry, which attempt it is and how long the run waits."""
        url = f"http://127.0.0.1:{closed_port}/v1"
        code = main(["demo", "--no-color", "--base-url", url, "--model", "m"])
        out = capsys.readouterr().out
        assert code == 1, out
        events = [line.split()[0] for line in out.splitlines() if line[:4] == "  on"]
        assert events == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_error",
            "on_llm_retry",
            "on_llm_call_start",
            "on_llm_error",
            "on_error",
        ]
        (retry,) = [line for line in out.splitlines() if "on_llm_retry" in line]
        assert re.fullmatch(
            r"  on_llm_retry +attempt 2 in 0\.[456]\d s \(after connection\)", retry
        ), retry
        assert "the agent failed: connection:" in out
