"""RedisEventPublisher across ``fork()``, against a real Redis server.

A publisher made before a fork (module-level, as the docs show, or in a pre-forking
server) lives on in every child: each child must publish under its own identity,
with its own flusher thread, or readers drop its records as repeats of the parent's
and a child of a parent that had published sends nothing.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from langhooks import Message, ToolCall, codec
from langhooks.chain import Decision, LLMChain
from langhooks.cli.demo import QUESTION, SYSTEM, WEATHER_TOOL, ApprovalGate
from langhooks.events import EventRecord
from langhooks.integrations.redis import (
    RedisEventConsumer,
    RedisEventPublisher,
    RedisRunStore,
    follow,
)
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler
from tests._services import need_redis

FORK = multiprocessing.get_context("fork")


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    """A client of the test server (db 9 unless told otherwise)."""
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


def in_child(publisher: RedisEventPublisher, work: Callable[[], str]) -> dict[str, Any]:
    """Run ``work`` in a forked child that then flushes ``publisher``; what the
    child saw (its publisher id, counts, the flush outcome, work's result)."""
    receive, send = FORK.Pipe(duplex=False)

    def child() -> None:
        outcome = work()
        flushed = publisher.flush(timeout=5.0)
        send.send(
            {
                "id": publisher.id,
                "published": publisher.published,
                "lost": publisher.lost,
                "flushed": flushed,
                "outcome": outcome,
            }
        )

    process = FORK.Process(target=child)
    process.start()
    assert receive.poll(30), "the child reported nothing"
    report: dict[str, Any] = receive.recv()
    process.join(10)
    assert process.exitcode == 0
    return report


def start_run(client: redis.Redis, prefix: str, publisher: RedisEventPublisher) -> str:
    """Start the demo agent until it waits for approval; save it; its run id."""
    model = ScriptedChatModel(
        [
            ScriptedTurn(
                tool_calls=[
                    ToolCall(
                        call_id="call_weather_1",
                        name="get_weather",
                        arguments={"city": "Paris"},
                    )
                ]
            )
        ]
    )
    chain = LLMChain(
        model, tools=[WEATHER_TOOL], callbacks=[publisher, ApprovalGate()]
    ).add_messages([Message.system(SYSTEM), Message.user(QUESTION)])
    result = chain.run()
    assert result.status == "interrupted"
    return RedisRunStore(client, prefix=prefix).save(result.chain)


def resume_run(
    client: redis.Redis, prefix: str, publisher: RedisEventPublisher, run_id: str
) -> str:
    """Approve the waiting call and let the model answer; the run's status."""
    result = RedisRunStore(client, prefix=prefix).resume(
        run_id,
        [Decision.approve()],
        ScriptedChatModel([ScriptedTurn(text="Yes, take an umbrella.")]),
        tools=[WEATHER_TOOL],
        callbacks=[publisher],
    )
    return result.status


def warm_up(publisher: RedisEventPublisher) -> str:
    """A run (in the parent: so its publisher has sent records and has a
    thread); its status."""
    chain = LLMChain(
        ScriptedChatModel([ScriptedTurn(text="Sunny.")]), callbacks=[publisher]
    )
    status = chain.add_message(Message.user("Weather?")).run().status
    publisher.flush(5.0)
    return status


class TestFork:
    """Each process publishes under its own identity, with its own worker."""

    def test_resumed_run_across_forked_workers(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A run started in one forked worker and resumed in another, both with the
        parent's publisher, is followed whole: no record is dropped as a repeat."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        warm_up(publisher)
        first = in_child(publisher, lambda: start_run(client, prefix, publisher))
        run_id = first["outcome"]
        second = in_child(
            publisher, lambda: resume_run(client, prefix, publisher, run_id)
        )
        assert second["outcome"] == "ok"
        assert len({publisher.id, first["id"], second["id"]}) == 3
        for report in (first, second):
            assert report["flushed"]
            assert report["lost"] == 0
        stored = client.xlen(f"{prefix}run:{run_id}")
        assert stored == first["published"] + second["published"]
        followed = RecordingChainHandler()
        follow(client, run_id, followed, prefix=prefix, block_ms=1000)
        assert len(followed.events) == stored
        names = [event[0] for event in followed.events]
        assert "on_tool_call_review" in names
        assert names.count("on_tool_execution_completed") == 1
        assert names[-1] == "on_run_complete"

    def test_consumer_with_dedupe_sees_every_child(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """Two forked children each publish a run; a deduplicating consumer group
        receives every record of the parent and both children."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        warm_up(publisher)
        reports = [in_child(publisher, lambda: warm_up(publisher))]
        reports.append(in_child(publisher, lambda: warm_up(publisher)))
        total = publisher.published + sum(r["published"] for r in reports)
        assert all(r["published"] > 0 for r in reports)
        handler = RecordingChainHandler()
        consumer = RedisEventConsumer(
            client,
            group="audit",
            consumer="one",
            handler=handler,
            prefix=prefix,
            dedupe=True,
        )
        while consumer.run_once(block_ms=50):
            pass
        assert len(handler.events) == total == client.xlen(f"{prefix}events")

    def test_closed_publisher_stays_closed(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A publisher closed before the fork counts the child's records as lost."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        publisher.close()
        report = in_child(publisher, lambda: warm_up(publisher))
        assert report["published"] == 0
        assert report["lost"] > 0

    def test_forked_starts_over(self, client: redis.Redis, prefix: str) -> None:
        """What the fork hook does to each publisher, seen in-process: a new id,
        seq from 0, counters from 0, and a worker of its own that publishes."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        warm_up(publisher)
        parent_id, parent_outbox = publisher.id, publisher._outbox
        publisher._forked()
        parent_outbox.close(5.0)  # in a real child, the parent's thread is gone
        assert publisher.id != parent_id
        assert (publisher.published, publisher.lost) == (0, 0)
        assert warm_up(publisher) == "ok"
        assert publisher.flush(5.0)
        ours: Any = client.xrange(f"{prefix}events")
        seqs = [
            codec.loads(fields[b"record"], type=EventRecord).seq
            for _, fields in ours
            if fields[b"publisher"] == publisher.id.encode()
        ]
        assert seqs == list(range(publisher.published))
        publisher.close()
