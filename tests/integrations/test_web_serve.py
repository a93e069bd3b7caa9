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
from tests._services import need_redis


@contextmanager
def served(*argv: str) -> Iterator[tuple[str, str]]:
    """Run ``langhooks serve ARGV`` in a thread; yields the URL it prints (with its
    token) and its startup line."""
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


def authed(url: str) -> httpx.Client:
    """A client of the server at the printed ``url``, sending its token as a
    bearer token."""
    base, _, query = url.partition("?token=")
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {query}"})


class TestServe:
    def test_prints_the_url_and_serves_the_page(self) -> None:
        """The startup line names the URL; the page and the agent answer there."""
        with served("--port", "0", "--delay", "0") as (url, line):
            assert url.startswith("http://127.0.0.1:")
            assert "the demo agent on the scripted model" in line
            assert httpx.get(url).status_code == 200
            with authed(url) as http:
                started = http.post("runs", json={"prompt": "Paris?"})
                assert started.status_code == 201
                runs = http.get("runs").json()
            assert runs["agent"] is True
            assert runs["runs"][0]["run_id"] == started.json()["run_id"]

    def test_answers_only_to_local_names(self) -> None:
        """A request naming another host (DNS rebinding) is refused."""
        with served("--port", "0") as (url, _), authed(url) as http:
            assert http.get("", headers={"Host": "evil.example"}).status_code == 400
            local = url.replace("127.0.0.1", "localhost")
            assert httpx.get(local).status_code == 200

    def test_answers_only_to_local_names_on_ipv6_loopback(self) -> None:
        """Bound to ::1, the server also refuses a name that is not local."""
        with served("--host", "::1", "--port", "0") as (url, _), authed(url) as http:
            assert url.startswith("http://[::1]:")
            assert http.get("", headers={"Host": "evil.example"}).status_code == 400
            assert http.get("").status_code == 200

    def test_another_address_answers_to_any_name_with_the_token(self) -> None:
        """Bound to an address the user chose, the server takes any Host header
        (the names it is reached by are the user's to know): its token is what
        keeps a rebinding page out."""
        with served("--host", "127.0.0.2", "--port", "0") as (url, _):
            assert httpx.get(url, headers={"Host": "box"}).status_code == 200
            bare = url.partition("?")[0]
            assert httpx.get(bare, headers={"Host": "box"}).status_code == 401

    def test_requires_its_token_and_the_printed_url_logs_the_browser_in(
        self,
    ) -> None:
        """Without the token: 401. The printed URL sets a cookie with which the
        page's own requests (list, start, events) work."""
        with served("--port", "0", "--delay", "0") as (url, _):
            base = url.partition("?")[0]
            assert httpx.get(f"{base}runs").status_code == 401
            with httpx.Client() as browser:
                assert browser.get(url).status_code == 200
                assert browser.get(f"{base}runs").status_code == 200
                started = browser.post(f"{base}runs", json={"prompt": "Paris?"})
                assert started.status_code == 201
                events = f"{base}runs/{started.json()['run_id']}/events"
                with browser.stream("GET", events, timeout=30) as answer:
                    assert answer.status_code == 200

    def test_a_token_given_is_the_one_required(self) -> None:
        """--token sets the token instead of a random one."""
        with served("--port", "0", "--token", "my-token") as (url, _):
            assert url.endswith("/?token=my-token")
            base = url.partition("?")[0]
            bearer = {"Authorization": "Bearer my-token"}
            assert httpx.get(f"{base}runs", headers=bearer).status_code == 200

    def test_a_random_token_differs_per_start(self) -> None:
        """Each start makes a new, long token."""
        tokens = set()
        for _ in range(2):
            with served("--port", "0") as (url, _):
                tokens.add(url.partition("?token=")[2])
        assert len(tokens) == 2
        assert all(len(token) >= 32 for token in tokens)

    def test_no_auth_warns_and_requires_nothing(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--no-auth serves without a token and says so on a warning line."""
        with served("--port", "0", "--no-auth") as (url, _):
            assert "?" not in url
            assert httpx.get(f"{url}runs").status_code == 200
        assert "WARNING: --no-auth: anyone who can reach" in capsys.readouterr().err

    def test_a_cross_origin_decision_is_refused(self) -> None:
        """A decision posted from another site is 403 even with the token (the
        browser would send the cookie); from the page's own origin it is taken."""
        with served("--port", "0", "--delay", "0") as (url, _), authed(url) as http:
            run_id = http.post("runs", json={"prompt": "Paris?"}).json()["run_id"]
            for _ in range(3000):
                if http.get("runs").json()["runs"][0]["state"] == "interrupted":
                    break
                threading.Event().wait(0.01)
            body = {
                "decisions": [{"tool_call_id": "call_weather_1", "decision": "approve"}]
            }
            path = f"runs/{run_id}/decisions"
            evil = {"Origin": "http://evil.example"}
            assert http.post(path, json=body, headers=evil).status_code == 403
            own = {"Origin": url.partition("/?")[0]}
            assert http.post(path, json=body, headers=own).status_code == 202

    def test_every_address_prints_a_loopback_url(self) -> None:
        """--host '' listens everywhere and prints a URL that works on this machine."""
        with served("--host", "", "--port", "0") as (url, _):
            assert url.startswith("http://127.0.0.1:")
            assert httpx.get(url).status_code == 200

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

    @pytest.mark.parametrize(
        ("argv", "error"),
        [
            (["--port", "99999"], "expected a port from 0"),
            (["--port", "-1"], "expected a port from 0"),
            (["--port", "http"], "expected a port from 0"),
            (["--model", "", "--base-url", "http://127.0.0.1:9"], "must not be empty"),
            (["--model", "m", "--base-url", "http://[::1"], "not a URL"),
            (["--token", "a b"], "the token must be"),
            (["--token", "t", "--no-auth"], "not allowed with argument"),
        ],
    )
    def test_a_bad_option_is_a_usage_error(
        self, argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A port out of range, an empty model, a URL that does not parse, a token
        that cannot go into a URL: exit 2 with a usage line, no traceback."""
        with pytest.raises(SystemExit) as exited:
            _parser().parse_args(["serve", *argv])
        assert exited.value.code == 2
        assert error in capsys.readouterr().err

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
        redis_url = need_redis()
        argv = ["--port", "0", "--redis", redis_url]
        client = redis.Redis.from_url(redis_url)
        try:
            with served(*argv, "--prefix", prefix) as (url, line):
                assert f"runs in Redis at {redis_url}" in line
                with authed(url) as http:
                    started = http.post("runs", json={"prompt": "Paris?"})
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
        args = _parser().parse_args(["serve", "--redis", "redis://127.0.0.1:6379/9"])
        assert _serve_cli.run(args) == 2
        assert "pip install 'langhooks[redis]'" in capsys.readouterr().err

    def test_the_command_line_serves(self) -> None:
        """`langhooks serve --port 0` prints its URL first and serves the page; a
        request without the token gets 401; the token is printed once and never
        logged, whatever the requests carried."""
        command = [sys.executable, "-m", "langhooks", "serve", "--port", "0"]
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as process:
            try:
                assert process.stdout is not None
                line = process.stdout.readline()
                assert line.startswith("langhooks serve: http://127.0.0.1:")
                url = line.split()[2]
                base, _, token = url.partition("?token=")
                assert httpx.get(url).status_code == 200
                assert httpx.get(base).status_code == 401
                assert httpx.get(f"{base}runs?token={token}x").status_code == 401
                bearer = {"Authorization": f"Bearer {token}"}
                assert httpx.get(f"{base}nowhere", headers=bearer).status_code == 404
            finally:
                process.terminate()
                out, err = process.communicate(timeout=30)
        assert token not in out
        assert token not in err
