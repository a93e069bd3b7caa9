"""``langhooks serve``: the demo agent behind the live page."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
import types
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import redis

from langhooks import Message, StreamingChatResponseHandler
from langhooks.cli import _parser
from langhooks.cli import serve as _serve_cli
from langhooks.cli.serve import DemoModel
from langhooks.models import ChatRequest


@contextmanager
def served(*argv: str) -> Iterator[tuple[str, str]]:
    """Run ``langhooks serve ARGV`` in a thread; yields its URL and startup line."""
    args = _parser().parse_args(["serve", *argv])
    out = io.StringIO()
    servers: list[Any] = []
    status: list[int] = []
    thread = threading.Thread(
        target=lambda: status.append(
            _serve_cli.run(args, out, on_started=servers.append)
        )
    )
    thread.start()
    try:
        while not (servers and servers[0].started):
            assert thread.is_alive(), out.getvalue()
            threading.Event().wait(0.01)
        line = out.getvalue()
        yield line.split()[2], line
    finally:
        if servers:
            servers[0].should_exit = True
        thread.join()
    assert status == [0]


class TestServe:
    def test_prints_the_url_and_serves_the_page(self) -> None:
        """The startup line names the URL; the page and the agent answer there."""
        with served("--port", "0", "--delay", "0") as (url, line):
            assert url.startswith("http://127.0.0.1:")
            assert "the demo agent on the scripted model" in line
            assert httpx.get(url).status_code == 200
            started = httpx.post(f"{url}runs", json={"prompt": "Paris?"})
            assert started.status_code == 201
            runs = httpx.get(f"{url}runs").json()
            assert runs["agent"] is True
            assert runs["runs"][0]["run_id"] == started.json()["run_id"]

    def test_answers_only_to_local_names(self) -> None:
        """A request naming another host (DNS rebinding) is refused."""
        with served("--port", "0") as (url, _):
            assert httpx.get(url, headers={"Host": "evil.example"}).status_code == 400
            local = url.replace("127.0.0.1", "localhost")
            assert httpx.get(local).status_code == 200

    def test_another_address_answers_to_any_name(self) -> None:
        """Bound to an address the user chose, the server takes any Host header
        (the names it is reached by are the user's to know)."""
        with served("--host", "127.0.0.2", "--port", "0") as (url, _):
            assert httpx.get(url, headers={"Host": "box"}).status_code == 200

    def test_runs_on_a_server_model(self) -> None:
        """--base-url and --model put the demo agent on an OpenAI-compatible server."""
        base = "http://127.0.0.1:9/v1"
        with served("--port", "0", "--base-url", base, "--model", "m") as (_, line):
            assert f"the demo agent on m at {base}" in line

    def test_the_demo_model_answers_by_the_conversation(self) -> None:
        """The demo model picks its answer from the conversation, not from how often
        it was called: a conversation with no user message starts at the first."""
        model = DemoModel(0.0)
        system = ChatRequest([Message.system("s")])
        first = model.stream(system, StreamingChatResponseHandler())
        assert first.message.tool_calls
        answered = ChatRequest([*system.messages, first.message, first.message])
        last = model.stream(answered, StreamingChatResponseHandler())
        assert last.message.text.startswith("It is 14°C")

    def test_binds_this_machine_only_by_default(self) -> None:
        """The default host is 127.0.0.1."""
        args = _parser().parse_args(["serve"])
        assert (args.host, args.port) == ("127.0.0.1", 8000)

    def test_brackets_an_ipv6_host_in_the_url(self) -> None:
        """An IPv6 address is written the way a browser takes it."""
        assert _serve_cli._url("::1", 8000) == "http://[::1]:8000/"

    def test_a_port_in_use_exits_1(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An address that cannot be used is an error message and status 1."""
        with socket.create_server(("127.0.0.1", 0)) as taken:
            port = str(taken.getsockname()[1])
            args = _parser().parse_args(["serve", "--port", port])
            assert _serve_cli.run(args) == 1
        assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err

    def test_base_url_needs_a_model(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--base-url without --model is refused."""
        args = _parser().parse_args(["serve", "--base-url", "http://127.0.0.1:9"])
        assert _serve_cli.run(args) == 2
        assert "--base-url and --model go together" in capsys.readouterr().err

    def test_a_missing_openai_extra_exits_2(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without the openai extra a server model cannot be built."""
        monkeypatch.setitem(
            sys.modules, "langhooks.models", types.ModuleType("langhooks.models")
        )
        argv = ["serve", "--base-url", "http://127.0.0.1:9", "--model", "m"]
        assert _serve_cli.run(_parser().parse_args(argv)) == 2
        assert "pip install 'langhooks[openai]'" in capsys.readouterr().err

    def test_a_missing_web_extra_exits_2(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without Starlette and uvicorn the command says which extra to install."""
        monkeypatch.setitem(sys.modules, "uvicorn", None)
        assert _serve_cli.run(_parser().parse_args(["serve"])) == 2
        assert "pip install 'langhooks[web]'" in capsys.readouterr().err

    def test_keeps_runs_in_redis(self) -> None:
        """--redis URL keeps the runs in Redis, under --prefix."""
        prefix = f"langhooks-test:{uuid.uuid4().hex}:"
        argv = ["--port", "0", "--redis", "redis://127.0.0.1:6379/0"]
        client = redis.Redis(host="127.0.0.1", port=6379)
        try:
            with served(*argv, "--prefix", prefix) as (url, line):
                assert "runs in Redis at redis://127.0.0.1:6379/0" in line
                started = httpx.post(f"{url}runs", json={"prompt": "Paris?"})
                run_id = started.json()["run_id"]
                assert client.hexists(f"{prefix}web:runs", run_id)
        finally:
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()

    def test_an_unreachable_redis_exits_2(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A Redis that does not answer is said at once."""
        with socket.create_server(("127.0.0.1", 0)) as nothing:
            port = nothing.getsockname()[1]
        args = _parser().parse_args(["serve", "--redis", f"redis://127.0.0.1:{port}"])
        assert _serve_cli.run(args) == 2
        assert "cannot use Redis at" in capsys.readouterr().err

    def test_a_missing_redis_extra_exits_2(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without redis-py, --redis names the extra to install."""
        monkeypatch.setitem(sys.modules, "redis", None)
        args = _parser().parse_args(["serve", "--redis", "redis://127.0.0.1:6379"])
        assert _serve_cli.run(args) == 2
        assert "pip install 'langhooks[redis]'" in capsys.readouterr().err

    def test_the_command_line_serves(self) -> None:
        """`langhooks serve --port 0` prints its URL first and serves the page."""
        command = [sys.executable, "-m", "langhooks", "serve", "--port", "0"]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
            try:
                assert process.stdout is not None
                line = process.stdout.readline()
                assert line.startswith("langhooks serve: http://127.0.0.1:")
                assert httpx.get(line.split()[2]).status_code == 200
            finally:
                process.terminate()
