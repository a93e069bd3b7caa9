"""A real HTTP server on 127.0.0.1 that plays recorded provider responses.

The provider-model tests point the official SDK clients (and httpx, for Ollama) at
this server. It serves the fixture bytes in small chunked pieces with the
fixture's headers, records every request it gets, and notices when the client goes
away (a write fails), so a test can assert that cancelling closed the connection.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import select
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs
from typing_extensions import override

from langhooks import Message, StreamingHandle, Tool
from langhooks.models import ChatRequest

from . import Recorder, local_fixture

__all__ = [
    "WEATHER_TOOL",
    "FixtureServer",
    "RecordedRequest",
    "Reply",
    "cancel_from_thread",
    "first_bytes_until",
    "http_reply",
    "stalled_reply",
    "stream_reply",
    "unused_port",
    "weather_request",
]


def _weather(arguments: Any, context: Any) -> str:
    return "sunny"


WEATHER_TOOL = Tool(
    "get_weather",
    _weather,
    description="Current weather for a city.",
    parameters_schema={"type": "object", "properties": {"city": {}}},
)


def weather_request(question: str) -> ChatRequest:
    """A short conversation asking ``question``, with ``WEATHER_TOOL``."""
    return ChatRequest(
        [Message.system("Be brief."), Message.user(question)], tools=[WEATHER_TOOL]
    )


# Headers the server sets itself (it frames the body its own way).
_HOP_BY_HOP = frozenset({"transfer-encoding", "content-length", "connection"})
# How long the server keeps trickling or stalling before it gives up on a client.
_PATIENCE = 20.0


@attrs.frozen(kw_only=True)
class Reply:
    """One scripted HTTP response.

    Attributes:
        status: the HTTP status code.
        headers: response headers, in order.
        body: the body bytes, sent in chunked pieces of ``piece`` bytes.
        piece: the size of each piece (odd, so pieces split lines and events).
        delay: seconds to wait between pieces.
        drop_after: close the socket abruptly (no final chunk) after this many
            body bytes.
        trickle: after ``body``, keep sending this piece until the client goes away.
        stall: after ``body``, send nothing more and keep the connection open
            until the client closes it.
        release: wait for this event before sending the status line.
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    piece: int = 37
    delay: float = 0.0
    drop_after: int | None = None
    trickle: bytes | None = None
    stall: bool = False
    release: threading.Event | None = attrs.field(default=None, eq=False)


@attrs.frozen(kw_only=True)
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


def _parse_http(path: Path) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
    raw = path.read_bytes()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ")[1])
    headers = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in header_lines)
        if name.strip().lower() not in _HOP_BY_HOP
    )
    return status, headers, body


def http_reply(name: str, **changes: Any) -> Reply:
    """A reply built from a raw ``.http`` fixture (status, headers and body)."""
    status, headers, body = _parse_http(local_fixture(name))
    return Reply(status=status, headers=headers, body=body, **changes)


def stream_reply(
    name: str,
    *,
    headers_from: str | None = None,
    content_type: str = "text/event-stream; charset=utf-8",
    **changes: Any,
) -> Reply:
    """A 200 reply streaming a fixture's bytes, with a ``.http`` head's headers."""
    headers: tuple[tuple[str, str], ...] = (("content-type", content_type),)
    if headers_from is not None:
        _, headers, _ = _parse_http(local_fixture(headers_from))
    return Reply(headers=headers, body=local_fixture(name).read_bytes(), **changes)


class FixtureServer:
    """A threaded HTTP/1.1 server on an ephemeral 127.0.0.1 port.

    Queue replies with ``add``; each request takes the next one (the last one is
    reused when the queue runs dry). ``requests`` records what arrived, and
    ``disconnected`` is set once a write to a client fails.
    """

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.disconnected = threading.Event()
        self.sent_bytes = 0
        self._replies: list[Reply] = []
        self._last: Reply = Reply(status=500, body=b'{"error":"no reply queued"}')
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.01,), daemon=True
        )

    @property
    def url(self) -> str:
        """The server's base URL, for example ``http://127.0.0.1:41234``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *replies: Reply) -> FixtureServer:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._replies.extend(replies)
        return self

    def __enter__(self) -> FixtureServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                self._last = self._replies.pop(0)
            return self._last

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            @override
            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                with server._lock:
                    server.requests.append(
                        RecordedRequest(
                            method=self.command,
                            path=self.path,
                            headers={k.lower(): v for k, v in self.headers.items()},
                            body=body,
                        )
                    )
                reply = server._next_reply()
                self.close_connection = True
                try:
                    self._write(reply)
                except OSError:  # the client went away: what cancel tests wait for
                    server.disconnected.set()

            def _write(self, reply: Reply) -> None:
                if reply.release is not None:
                    deadline = time.monotonic() + _PATIENCE
                    while not reply.release.wait(0.02):
                        if server._stopping.is_set() or time.monotonic() > deadline:
                            return
                self.send_response_only(reply.status)
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.send_header("transfer-encoding", "chunked")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.flush()
                body = reply.body
                if reply.drop_after is not None:
                    body = body[: reply.drop_after]
                for start in range(0, len(body), reply.piece):
                    self._chunk(body[start : start + reply.piece])
                    if reply.delay:
                        time.sleep(reply.delay)
                if reply.drop_after is not None:
                    # An abrupt end: no terminating chunk, the socket just closes.
                    return
                if reply.trickle is not None:
                    deadline = time.monotonic() + _PATIENCE
                    while not server._stopping.is_set() and time.monotonic() < deadline:
                        self._chunk(reply.trickle)
                        time.sleep(0.002)
                    return
                if reply.stall:
                    self._wait_for_client_to_leave()
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _wait_for_client_to_leave(self) -> None:
                deadline = time.monotonic() + _PATIENCE
                while not server._stopping.is_set() and time.monotonic() < deadline:
                    readable, _, _ = select.select([self.connection], [], [], 0.02)
                    if readable and not self.connection.recv(1024):
                        server.disconnected.set()  # EOF: the client closed
                        return

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                with server._lock:
                    server.sent_bytes += len(data)

        return Handler


def unused_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound and released)."""
    import socket

    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def first_bytes_until(data: bytes, marker: bytes, *, count: int = 1) -> int:
    """The length of ``data`` up to and including the ``count``-th ``marker``."""
    end = -1
    for _ in range(count):
        end = data.index(marker, end + 1)
    return end + len(marker)


def stalled_reply(name: str, count: int) -> Reply:
    """The fixture ``name`` up to its ``count``-th event, then silence: the
    connection stays open, without a word, until the client closes it.

    An event ends where the fixture's format ends one: a line of an ``.ndjson``
    fixture (sent as NDJSON), else an SSE event (a blank line, ``\\r\\n`` line ends
    when the fixture has them).
    """
    data = local_fixture(name).read_bytes()
    if name.endswith(".ndjson"):
        marker, content_type = b"\n", "application/x-ndjson"
    else:
        marker = b"\r\n\r\n" if b"\r\n\r\n" in data else b"\n\n"
        content_type = "text/event-stream"
    return Reply(
        headers=(("content-type", content_type),),
        body=data[: first_bytes_until(data, marker, count=count)],
        stall=True,
    )


def cancel_from_thread(recorder: Recorder, handle: StreamingHandle) -> threading.Thread:
    """Start a thread that cancels ``handle`` once the first partial arrived."""

    def cancel() -> None:
        if recorder.first_partial.wait(_PATIENCE):
            handle.cancel()

    thread = threading.Thread(target=cancel, daemon=True)
    thread.start()
    return thread
