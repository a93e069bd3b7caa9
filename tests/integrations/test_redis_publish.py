"""RedisEventPublisher and follow, against a real Redis server.

The shared server is ``need_redis()``'s (``LANGHOOKS_TEST_REDIS_URL``, db 9 by
default; CI starts one); every test works under its own key prefix and deletes its
keys. Tests that stop Redis start their own ``redis-server`` on a free port.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    CompositeStreamingHandler,
    LangHooksError,
    Message,
    MessageDelta,
    ReviewContext,
    Tool,
    ToolCall,
    codec,
    invocation,
)
from langhooks.chain import Decision, LLMChain, RunResult
from langhooks.cli.demo import (
    QUESTION,
    SYSTEM,
    WEATHER_TOOL,
    ApprovalGate,
    scripted_model,
)
from langhooks.events import EventRecord
from langhooks.integrations._redis_outbox import NodePaused, Pauses
from langhooks.integrations._redis_wire import aread_stream, read_stream
from langhooks.integrations.redis import (
    RedisEventPublisher,
    afollow,
    arun_entries,
    follow,
    run_entries,
)
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler
from tests._services import REDIS_URL, need_command, need_redis
from tests.test_events import assert_same_events, comparable

ROOT = Path(__file__).resolve().parents[2]


# --- fixtures ------------------------------------------------------------------------


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    """A client of the shared server."""
    client = redis.Redis.from_url(need_redis())
    yield client
    client.close()


@pytest.fixture
def prefix(client: redis.Redis) -> Iterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    prefix = f"langhooks-test:{uuid.uuid4().hex}:"
    yield prefix
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)


def free_port() -> int:
    """A TCP port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def private_redis() -> Iterator[tuple[subprocess.Popen[bytes], redis.Redis]]:
    """A redis-server of this test's own (it may be stopped), and a client with
    short timeouts."""
    command = need_command("redis-server", "apt-get install -y redis-server")
    port = free_port()
    server = subprocess.Popen(
        [
            *(command, "--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no"),
        ],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(
        host="127.0.0.1", port=port, socket_timeout=0.3, socket_connect_timeout=0.3
    )
    try:
        for _ in range(100):
            with contextlib.suppress(redis.ConnectionError):
                if client.ping():
                    break
            time.sleep(0.05)
        yield server, client
    finally:
        server.kill()
        server.wait()
        client.close()


# --- runs ---------------------------------------------------------------------------


def text_model(text: str, *, delay: float = 0.0) -> ScriptedChatModel:
    """A model that answers ``text`` in word-sized partials."""
    return ScriptedChatModel([ScriptedTurn(text=text)], delay=delay)


def simple_run(
    *handlers: ChainCallbackHandler, text: str = "It is sunny in Paris today."
) -> RunResult:
    """A run that ends with the model's answer, no tools."""
    chain = LLMChain(text_model(text), callbacks=handlers)
    result = chain.add_message(Message.user("Weather?")).run()
    assert result.status == "ok"
    return result


def interrupted_run(*handlers: ChainCallbackHandler) -> RunResult:
    """The demo's run, stopped at its tool call by ``ApprovalGate`` (after
    ``handlers``): its stream has not ended."""
    chain = LLMChain(
        scripted_model(0.0),
        tools=[WEATHER_TOOL],
        callbacks=[*handlers, ApprovalGate()],
    ).add_messages([Message.system(SYSTEM), Message.user(QUESTION)])
    result = chain.run()
    assert result.status == "interrupted"
    return result


def stream_ids(client: redis.Redis, key: str) -> list[str]:
    """The entry ids of a stream, in order."""
    got: Any = client.xrange(key)
    return [entry_id.decode() for entry_id, _ in got]


def entries(client: redis.Redis, key: str) -> list[tuple[EventRecord, dict[str, str]]]:
    """The records of a stream, with their entry fields."""
    out = []
    got: Any = client.xrange(key)
    for _id, fields in got:
        data = {k.decode(): v.decode() for k, v in fields.items()}
        out.append((codec.loads(data["record"], type=EventRecord), data))
    return out


def run_id_of(result: RunResult) -> str:
    """The run id of a finished run."""
    assert result.chain.invocation is not None
    return result.chain.invocation.id


# --- publisher ----------------------------------------------------------------------


class TestPublishing:
    """Each run's records land in its stream and in the firehose, in seq order."""

    def test_run_stream_and_firehose(self, client: redis.Redis, prefix: str) -> None:
        """Every record is in the run's stream and the firehose, in seq order,
        with the end mark on the last record only."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        result = simple_run(publisher)
        run_id = run_id_of(result)
        got = entries(client, f"{prefix}run:{run_id}")
        records = [record for record, _ in got]
        assert [r.seq for r in records] == list(range(len(records)))
        assert records[0].event == "on_run_start"
        assert records[-1].event == "on_run_complete"
        assert {r.run_id for r in records} == {run_id}
        assert [("end" in fields) for _, fields in got] == [False] * (len(got) - 1) + [
            True
        ]
        assert {fields["publisher"] for _, fields in got} == {publisher.id}
        assert [fields["record"] for _, fields in got] == [
            codec.dumps(record) for record in records
        ]
        assert [r for r, _ in entries(client, f"{prefix}events")] == records
        assert publisher.published == len(records)
        assert publisher.lost == 0

    def test_stream_expires_after_the_run(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A run's stream gets a time to live when its records are written."""
        publisher = RedisEventPublisher(client, prefix=prefix, expire_after=120)
        run_id = run_id_of(simple_run(publisher))
        assert 0 < client.ttl(f"{prefix}run:{run_id}") <= 120

    def test_streams_are_capped(self, client: redis.Redis, prefix: str) -> None:
        """MAXLEN ~ keeps a stream near maxlen (whole nodes of 100 are trimmed)."""
        publisher = RedisEventPublisher(client, prefix=prefix, maxlen=10)
        run_id = run_id_of(simple_run(publisher, text="word " * 600))
        assert publisher.published > 600
        assert client.xlen(f"{prefix}run:{run_id}") <= 10 + 100
        assert client.xlen(f"{prefix}events") <= 10 + 100

    def test_review_flushes_first(self, client: redis.Redis, prefix: str) -> None:
        """A review event is in Redis before the next handler reviews the call,
        whatever the batching interval."""
        seen: list[int] = []

        class Reviewer(ChainCallbackHandler):
            @override
            def on_tool_call_review(
                self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> None:
                seen.append(client.xlen(f"{prefix}events"))

        publisher = RedisEventPublisher(
            client, prefix=prefix, flush_interval=30.0, batch_size=10_000
        )
        model = ScriptedChatModel(
            [
                ScriptedTurn(
                    tool_calls=[
                        ToolCall(call_id="c1", name="get_weather", arguments={})
                    ]
                ),
                ScriptedTurn(text="Rainy."),
            ]
        )
        chain = LLMChain(model, tools=[WEATHER_TOOL], callbacks=[publisher, Reviewer()])
        chain.add_message(Message.user("Weather?")).run()
        reviewed = [r for r, _ in entries(client, f"{prefix}events")]
        position = [r.event for r in reviewed].index("on_tool_call_review")
        assert seen == [position + 1]

    def test_stream_outside_a_run(self, client: redis.Redis, prefix: str) -> None:
        """A model stream's records go to its invocation's stream, ending at
        on_complete_response; with no invocation, to the firehose only."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        request = ChatRequest([Message.user("Hi")])
        with invocation("answer") as current:
            text_model("Hello there.").stream(request, publisher)
        text_model("Hello again.").stream(request, publisher)
        publisher.flush()
        got = entries(client, f"{prefix}run:{current.id}")
        assert got[-1][0].event == "on_complete_response"
        assert "end" in got[-1][1]
        assert len(entries(client, f"{prefix}events")) > len(got)
        assert list(client.scan_iter(match=f"{prefix}run:*")) == [
            f"{prefix}run:{current.id}".encode()
        ]

    async def test_async_run(self, client: redis.Redis, prefix: str) -> None:
        """In arun the publisher records the same and never blocks the loop to
        flush; flush() then waits for the records."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        chain = LLMChain(text_model("Sunny and warm."), callbacks=[publisher])
        result = await chain.add_message(Message.user("Weather?")).arun()
        assert await asyncio.to_thread(publisher.flush, 5.0)
        records = entries(client, f"{prefix}run:{run_id_of(result)}")
        assert records[-1][0].event == "on_run_complete"
        assert publisher.published == len(records)

    def test_small_batches(self, client: redis.Redis, prefix: str) -> None:
        """With batch_size=2 the records leave in many pipelines, all in order."""
        publisher = RedisEventPublisher(client, prefix=prefix, batch_size=2)
        result = simple_run(publisher, text="word " * 50)
        records = [r for r, _ in entries(client, f"{prefix}run:{run_id_of(result)}")]
        assert [r.seq for r in records] == list(range(publisher.published))

    def test_dropped_publisher_stops_its_thread(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A publisher garbage-collected without close() sends what it holds and
        its thread ends."""
        publisher = RedisEventPublisher(client, prefix=prefix, flush_interval=0.5)
        run_id = run_id_of(simple_run(publisher))
        thread = publisher._outbox._thread
        assert thread is not None
        del publisher
        gc.collect()
        thread.join(10)
        assert not thread.is_alive()
        assert entries(client, f"{prefix}run:{run_id}")[-1][0].event == (
            "on_run_complete"
        )

    def test_close_unused(self, client: redis.Redis) -> None:
        """A publisher that never published closes at once."""
        assert RedisEventPublisher(client).close(timeout=1.0)

    def test_closed_publisher_counts_losses(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """After close(), events are lost and counted, never sent."""
        with RedisEventPublisher(client, prefix=prefix) as publisher:
            simple_run(publisher)
        sent = publisher.published
        simple_run(publisher)
        assert publisher.published == sent
        assert publisher.lost > 0
        assert repr(publisher) == f"RedisEventPublisher(prefix={prefix!r})"


class TestOptions:
    """Bad clients and options fail at construction, saying what to pass."""

    def test_async_client_rejected(self) -> None:
        """The publisher needs a synchronous client."""
        with pytest.raises(TypeError, match=r"synchronous redis\.Redis"):
            RedisEventPublisher(redis.asyncio.Redis.from_url(REDIS_URL))  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("option", "value"),
        [
            ("maxlen", 0),
            ("batch_size", 1.5),
            ("flush_interval", -1),
            ("block_timeout", "1"),
            ("prefix", 3),
        ],
    )
    def test_bad_option(self, client: redis.Redis, option: str, value: Any) -> None:
        """Counts are ints >= 1, times are seconds >= 0, the prefix a str."""
        with pytest.raises(TypeError, match=option):
            RedisEventPublisher(client, **{option: value})


class TestRedisTrouble:
    """Redis down, slow or gone: the run completes and the loss is counted."""

    def test_redis_stopped_mid_run(self, caplog: pytest.LogCaptureFixture) -> None:
        """The server is killed mid-run: the run ends "ok", the lost records are
        counted, and the loss is logged once at WARNING."""
        with private_redis() as (server, client):
            publisher = RedisEventPublisher(client, flush_interval=0.0)
            killed = threading.Event()

            class Killer(ChainCallbackHandler):
                @override
                def on_llm_new_delta(
                    self, chain: LLMChain, deltas: Sequence[MessageDelta]
                ) -> None:
                    if not killed.is_set():
                        publisher.flush(5.0)
                        server.kill()
                        server.wait()
                        killed.set()

            with caplog.at_level(logging.WARNING, logger="langhooks"):
                result = simple_run(publisher, Killer(), text="one two three four")
        assert result.status == "ok"
        assert publisher.published > 0
        assert publisher.lost > 0
        warnings = [r for r in caplog.records if "lost" in r.getMessage()]
        assert len(warnings) == 1
        assert warnings[0].levelno == logging.WARNING

    def test_server_down_is_paused(self) -> None:
        """A plain server whose send failed is paused as one node (""): its
        records are dropped at once until the pause is over; then the next send
        goes to the server again, without a ping."""
        with private_redis() as (server, client):
            pauses = Pauses(client, first=60.0, longest=60.0)
            assert pauses.node("k") == ("", None)
            pauses.settled("", redis.ConnectionError("down"))
            reason = pauses.check("k")[1]
            assert isinstance(reason, NodePaused)
            assert str(reason).startswith("Redis failed just before")
            over = Pauses(client, first=0.0, longest=0.0)
            over.settled("", redis.ConnectionError("down"))
            assert over.check("k") == ("", None)
            server.kill()

    def test_fail_run_ends_the_run(self) -> None:
        """With fail_run=True, the event after a loss ends the run with a
        handler error carrying a "connection" LangHooksError."""
        with private_redis() as (server, client):
            publisher = RedisEventPublisher(client, fail_run=True)
            server.kill()
            server.wait()

            class Waiter(ChainCallbackHandler):
                @override
                def on_llm_new_delta(
                    self, chain: LLMChain, deltas: Sequence[MessageDelta]
                ) -> None:
                    publisher.flush(5.0)

            chain = LLMChain(text_model("a b c d"), callbacks=[publisher, Waiter()])
            result = chain.add_message(Message.user("Hi")).run()
        assert result.status == "error"
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert isinstance(result.error.original, LangHooksError)
        assert result.error.original.type == "connection"

    def test_slow_redis_blocks_then_drops(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A paused server fills the bounded buffer: events wait block_timeout,
        then records are dropped and counted; the stream goes on."""
        with private_redis() as (server, client):
            publisher = RedisEventPublisher(
                client, max_buffer=3, block_timeout=0.05, flush_timeout=0.1
            )
            live = RecordingStreamingHandler()
            os.kill(server.pid, signal.SIGSTOP)
            try:
                with caplog.at_level(logging.WARNING, logger="langhooks"):
                    response = text_model("a b c d e f g h i j").stream(
                        ChatRequest([Message.user("Hi")]),
                        CompositeStreamingHandler([publisher, live]),
                    )
            finally:
                os.kill(server.pid, signal.SIGCONT)
            assert response.message.text == "a b c d e f g h i j"
            assert publisher.flush(5.0)
        assert publisher.lost > 0
        assert publisher.lost + publisher.published == len(live.events)
        assert sum("did not keep up" in r.getMessage() for r in caplog.records) <= 1


# --- follow -------------------------------------------------------------------------


class TestFollow:
    """follow re-drives a local handler from a run's stream."""

    def test_same_events_as_live(self, client: redis.Redis, prefix: str) -> None:
        """A followed handler gets the same methods with equal arguments, and
        follow returns the last record's id."""
        live = RecordingChainHandler()
        result = simple_run(RedisEventPublisher(client, prefix=prefix), live)
        followed = RecordingChainHandler()
        last = follow(client, run_id_of(result), followed, prefix=prefix)
        assert_same_events(live.events, followed.events)
        key = f"{prefix}run:{run_id_of(result)}"
        assert last == stream_ids(client, key)[-1]

    def test_resume_from_last_id(self, client: redis.Redis, prefix: str) -> None:
        """Following from a returned id goes on with nothing lost or repeated,
        chains rebuilt from the records before."""
        live = RecordingChainHandler()
        result = simple_run(RedisEventPublisher(client, prefix=prefix), live)
        key = f"{prefix}run:{run_id_of(result)}"
        middle = stream_ids(client, key)[len(live.events) // 2]
        followed = RecordingChainHandler()
        follow(client, run_id_of(result), followed, prefix=prefix, last_id=middle)
        assert_same_events(live.events[len(live.events) // 2 + 1 :], followed.events)

    def test_run_not_ended(self, client: redis.Redis, prefix: str) -> None:
        """An interrupted run has not ended: follow delivers its records, waits
        block_ms for more, and returns the last id."""
        live = RecordingChainHandler()
        result = interrupted_run(RedisEventPublisher(client, prefix=prefix), live)
        followed = RecordingChainHandler()
        key = f"{prefix}run:{run_id_of(result)}"
        last = follow(client, run_id_of(result), followed, prefix=prefix, block_ms=50)
        assert last == stream_ids(client, key)[-1]
        assert_same_events(live.events, followed.events)

    def test_run_entries(self, client: redis.Redis, prefix: str) -> None:
        """run_entries gives each record with its stream id, the last one marked
        as ending the run; from an id, the ones after it."""
        result = simple_run(RedisEventPublisher(client, prefix=prefix))
        run_id = run_id_of(result)
        key = f"{prefix}run:{run_id}"
        got = list(run_entries(client, run_id, prefix=prefix))
        assert [e.id for e in got] == stream_ids(client, key)
        assert [e.record for e in got] == [r for r, _ in entries(client, key)]
        assert [e.ends_run for e in got] == [False] * (len(got) - 1) + [True]
        rest = list(run_entries(client, run_id, prefix=prefix, last_id=got[1].id))
        assert rest == got[2:]
        with pytest.raises(TypeError, match="synchronous"):
            run_entries(redis.asyncio.Redis.from_url(REDIS_URL), run_id)  # type: ignore[arg-type]

    def test_repeats_skipped(self, client: redis.Redis, prefix: str) -> None:
        """A record in the stream twice (a batch retried after a timeout) is
        delivered once, also when following from an id after the first copy."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        live = RecordingChainHandler()
        result = interrupted_run(publisher, live)
        key = f"{prefix}run:{run_id_of(result)}"
        got: Any = client.xrange(key)
        for _id, fields in got[-3:]:  # the retried end of a batch, interrupted run
            client.xadd(key, fields)
        followed = RecordingChainHandler()
        last = follow(client, run_id_of(result), followed, prefix=prefix, block_ms=10)
        assert_same_events(live.events, followed.events)
        waiting = result.chain.pending_tool_calls
        resumed = result.chain.execute_tool_calls_with_decisions(
            waiting, [Decision.approve() for _ in waiting]
        )
        resumed.chain.run()
        rest = RecordingChainHandler()
        second_copy = stream_ids(client, key)[len(got) + 1]
        follow(client, run_id_of(result), rest, prefix=prefix, last_id=second_copy)
        assert_same_events(live.events[len(got) :], rest.events)
        assert last == got[-1][0].decode()

    def test_nothing_new(self, client: redis.Redis, prefix: str) -> None:
        """With nothing to read, follow returns last_id after block_ms."""
        handler = RecordingChainHandler()
        assert follow(client, "nope", handler, prefix=prefix, block_ms=10) == "0-0"
        assert handler.events == []

    def test_streaming_handler_skips_chain_records(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A streaming handler receives a stream's events, and none of a run's."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        live = RecordingStreamingHandler()
        with invocation("answer") as current:
            text_model("Hello there.").stream(
                ChatRequest([Message.user("Hi")]), publisher
            )
            text_model("Hello there.").stream(ChatRequest([Message.user("Hi")]), live)
        publisher.flush()
        followed = RecordingStreamingHandler()
        follow(client, current.id, followed, prefix=prefix)
        assert [name for name, _ in followed.events] == [
            name for name, _ in live.events
        ]
        run = simple_run(publisher)
        chain_only = RecordingStreamingHandler()
        follow(client, run_id_of(run), chain_only, prefix=prefix)
        assert chain_only.events == []

    def test_bad_arguments(self, client: redis.Redis, prefix: str) -> None:
        """A non-handler, an async handler, an async client, or a foreign entry
        are errors that say what to do."""
        with pytest.raises(TypeError, match="langhooks handler"):
            follow(client, "r", object(), prefix=prefix)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="afollow"):
            follow(client, "r", AsyncChainCallbackHandler(), prefix=prefix)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="synchronous"):
            follow(redis.asyncio.Redis.from_url(REDIS_URL), "r", ChainCallbackHandler())  # type: ignore[arg-type]
        client.xadd(f"{prefix}run:r", {"other": "data"})
        with pytest.raises(ValueError, match="without a langhooks event record"):
            follow(client, "r", ChainCallbackHandler(), prefix=prefix)
        client.xadd(
            f"{prefix}run:s",
            {"record": codec.dumps(EventRecord(seq=0, event="on_nothing"))},  # type: ignore[arg-type]
        )
        with pytest.raises(ValueError, match="not an event"):
            follow(client, "s", ChainCallbackHandler(), prefix=prefix)
        client.xadd(
            f"{prefix}run:t",
            {"record": codec.dumps(EventRecord(seq=0, event="on_run_start"))},
        )
        with pytest.raises(ValueError, match="no 'chain' in its payload"):
            follow(client, "t", ChainCallbackHandler(), prefix=prefix)
        client.xadd(f"{prefix}run:u", {"record": codec.dumps(Message.user("hi"))})
        with pytest.raises(ValueError, match="without a langhooks event record"):
            follow(client, "u", ChainCallbackHandler(), prefix=prefix)


class TestLongWaits:
    """A wait longer than the client's socket timeout is made of several reads."""

    def test_wait_past_the_socket_timeout(self, prefix: str) -> None:
        """follow waits block_ms longer than socket_timeout without a timeout
        error, and run_entries with block_ms=0 waits until the stream comes."""
        client = redis.Redis.from_url(need_redis(), socket_timeout=0.6)
        handler = RecordingChainHandler()
        assert follow(client, "nope", handler, prefix=prefix, block_ms=1500) == "0-0"
        publisher = RedisEventPublisher(client, prefix=prefix)
        with invocation("answer") as current:
            context = contextvars.copy_context()

        def later() -> None:
            time.sleep(1.0)
            request = ChatRequest([Message.user("Hi")])
            context.run(text_model("Hello there.").stream, request, publisher)

        thread = threading.Thread(target=later)
        thread.start()
        got = list(run_entries(client, current.id, prefix=prefix, block_ms=0))
        thread.join()
        assert got[-1].record.event == "on_complete_response"
        assert got[-1].ends_run
        client.close()

    def test_client_without_socket_timeout(self, prefix: str) -> None:
        """A client with no socket timeout blocks in one read."""
        client = redis.Redis.from_url(need_redis(), socket_timeout=None)
        handler = RecordingChainHandler()
        assert follow(client, "nope", handler, prefix=prefix, block_ms=10) == "0-0"
        client.close()


@pytest.fixture
async def aclient() -> AsyncIterator[redis.asyncio.Redis]:
    """An asyncio client of the shared server."""
    client = redis.asyncio.Redis.from_url(need_redis())
    yield client
    await client.aclose()


class TestAfollow:
    """The async twin awaits async handlers."""

    async def test_async_handler(
        self, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
    ) -> None:
        """An async chain handler gets every event, awaited, in order."""
        live = RecordingChainHandler()
        result = simple_run(RedisEventPublisher(client, prefix=prefix), live)
        names: list[str] = []

        class Names(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: LLMChain) -> None:
                names.append("on_run_start")

            @override
            async def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
                names.append("on_run_complete")

        mixed = RecordingChainHandler()
        run_id = run_id_of(result)
        last = await afollow(aclient, run_id, Names(), prefix=prefix)
        assert names == ["on_run_start", "on_run_complete"]
        key = f"{prefix}run:{run_id}"
        middle = stream_ids(client, key)[2]
        again = await afollow(aclient, run_id, mixed, prefix=prefix, last_id=middle)
        assert again == last
        assert_same_events(live.events[3:], mixed.events)
        assert await afollow(aclient, "nope", mixed, prefix=prefix, block_ms=10) == (
            "0-0"
        )
        streaming = RecordingStreamingHandler()
        assert await afollow(aclient, run_id, streaming, prefix=prefix) == last
        assert streaming.events == []

    async def test_repeats_skipped(
        self, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
    ) -> None:
        """As follow: a record in the stream twice is delivered once."""
        live = RecordingChainHandler()
        publisher = RedisEventPublisher(client, prefix=prefix)
        result = interrupted_run(publisher, live)
        assert await asyncio.to_thread(publisher.flush, 5.0)
        key = f"{prefix}run:{run_id_of(result)}"
        got: Any = client.xrange(key)
        client.xadd(key, got[-1][1])
        followed = RecordingChainHandler()
        await afollow(aclient, run_id_of(result), followed, prefix=prefix, block_ms=10)
        assert_same_events(live.events, followed.events)

    async def test_run_not_ended(
        self, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
    ) -> None:
        """As follow: an interrupted run's records, then block_ms of waiting."""
        live = RecordingChainHandler()
        publisher = RedisEventPublisher(client, prefix=prefix)
        # On the loop's thread: the end is sent, not awaited.
        result = interrupted_run(publisher, live)
        assert await asyncio.to_thread(publisher.flush, 5.0)
        followed = RecordingChainHandler()
        await afollow(aclient, run_id_of(result), followed, prefix=prefix, block_ms=50)
        assert_same_events(live.events, followed.events)

    async def test_arun_entries(
        self, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
    ) -> None:
        """arun_entries gives what run_entries gives."""
        result = simple_run(RedisEventPublisher(client, prefix=prefix))
        run_id = run_id_of(result)
        expected = list(run_entries(client, run_id, prefix=prefix))
        got = [e async for e in arun_entries(aclient, run_id, prefix=prefix)]
        assert got == expected
        after = arun_entries(
            aclient, run_id, prefix=prefix, last_id=expected[-1].id, block_ms=10
        )
        assert [e async for e in after] == []

    async def test_sync_client_rejected(self) -> None:
        """afollow and arun_entries need a redis.asyncio client; arun_entries, as
        run_entries, says so when called, before it is iterated."""
        with pytest.raises(TypeError, match="arun_entries"):
            arun_entries(redis.Redis.from_url(REDIS_URL), "r")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"redis\.asyncio\.Redis"):
            await afollow(redis.Redis.from_url(REDIS_URL), "r", ChainCallbackHandler())  # type: ignore[arg-type]


class TestReadStream:
    """One stream read, XREAD or XREADGROUP, the same on both twins."""

    async def test_twins_read_alike(
        self, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
    ) -> None:
        """aread_stream gives what read_stream gives, with a group or without."""
        key = f"{prefix}stream"
        entry_id = client.xadd(key, {"n": "1"})
        client.xgroup_create(key, "g", id="0")
        client.xgroup_create(key, "h", id="0")
        read: Any = read_stream(client, key, "0-0", count=10, block=None)
        aread: Any = await aread_stream(aclient, key, "0-0", count=10, block=None)
        assert read == aread == [[key.encode(), [(entry_id, {b"n": b"1"})]]]
        grouped: Any = read_stream(
            client, key, ">", count=10, block=None, group=("g", "c")
        )
        agrouped: Any = await aread_stream(
            aclient, key, ">", count=10, block=None, group=("h", "c")
        )
        assert grouped == agrouped == read


# --- two processes ------------------------------------------------------------------


def plain(value: Any) -> Any:
    """``value`` with read-only mappings made dicts, so that it pickles."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return tuple(plain(item) for item in value)
    return value


# The other process follows the run into a recording handler and sends back what
# it received, in the form test_events compares.
FOLLOWER = textwrap.dedent(
    """
    import pickle, sys
    import redis
    from langhooks.integrations.redis import follow
    from langhooks.testing import RecordingChainHandler
    from tests._services import REDIS_URL
    from tests.integrations.test_redis_publish import plain
    from tests.test_events import comparable

    prefix, run_id = sys.argv[1], sys.argv[2]
    handler = RecordingChainHandler()
    follow(redis.Redis.from_url(REDIS_URL), run_id, handler,
           prefix=prefix, block_ms=10_000)
    sys.stdout.buffer.write(pickle.dumps(
        [(name, plain(comparable(args))) for name, args in handler.events]))
    """
)


class TestTwoProcesses:
    """A handler in another process receives what the in-process handler did."""

    def test_full_demo_run(self, client: redis.Redis, prefix: str) -> None:
        """A subprocess follows the demo agent live (interrupted, approved,
        answered: one run id, one stream) and receives the same methods with
        equal arguments as the handler in the running process."""
        started = threading.Event()
        run_ids: list[str] = []

        class Starter(ChainCallbackHandler):
            @override
            def on_run_start(self, chain: LLMChain) -> None:
                assert chain.invocation is not None
                run_ids.append(chain.invocation.id)
                started.set()

        live = RecordingChainHandler()
        publisher = RedisEventPublisher(client, prefix=prefix)
        chain = LLMChain(
            scripted_model(0.01),
            tools=[WEATHER_TOOL],
            callbacks=[Starter(), publisher, live, ApprovalGate()],
        ).add_messages([Message.system(SYSTEM), Message.user(QUESTION)])

        def demo() -> None:
            result = chain.run()
            waiting = result.chain.pending_tool_calls
            result = result.chain.execute_tool_calls_with_decisions(
                waiting, [Decision.approve() for _ in waiting]
            )
            result.chain.run()

        runner = threading.Thread(target=demo)
        runner.start()
        assert started.wait(10)
        child = subprocess.run(
            [sys.executable, "-c", FOLLOWER, prefix, run_ids[0]],
            cwd=ROOT,
            capture_output=True,
            timeout=60,
            check=True,
        )
        runner.join()
        assert set(run_ids) == {run_ids[0]}
        assert live.names.count("on_run_complete") == 3
        followed = pickle.loads(child.stdout)
        assert followed == [
            (name, plain(comparable(args))) for name, args in live.events
        ]
