"""RedisEventConsumer never wedges its group, against a real Redis server.

A record whose exception cannot be rebuilt as its own class is delivered with a
stand-in; a record that truly cannot be decoded is retried a bounded number of
times, then moved to the dead-letter stream ``{prefix}dead``, acknowledged, logged
and counted, and the records after it are delivered all along.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest
import redis

from langhooks import Message, ToolCall, ToolContext, codec
from langhooks.chain import LLMChain, Tool
from langhooks.events import EventRecord
from langhooks.integrations.redis import RedisEventConsumer, RedisEventPublisher, follow
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler
from tests.integrations.test_redis_fork import client, prefix

__all__ = ["client", "prefix"]  # fixtures used here


def undecodable(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that fails with an exception whose class takes five arguments."""
    return b"\xff".decode("utf-8")


def failing_run(publisher: RedisEventPublisher) -> str:
    """A run whose tool raises UnicodeDecodeError; its run id."""
    model = ScriptedChatModel(
        [
            ScriptedTurn(tool_calls=[ToolCall(call_id="c1", name="read_file")]),
            ScriptedTurn(text="The file is not text."),
        ]
    )
    chain = LLMChain(
        model, tools=[Tool("read_file", undecodable)], callbacks=[publisher]
    )
    result = chain.add_message(Message.user("Read it.")).run()
    assert result.chain.invocation is not None
    return result.chain.invocation.id


def good_run(publisher: RedisEventPublisher) -> None:
    """A short run that answers."""
    chain = LLMChain(
        ScriptedChatModel([ScriptedTurn(text="Sunny.")]), callbacks=[publisher]
    )
    chain.add_message(Message.user("Weather?")).run()


def newer_record() -> str:
    """A record written by a newer langhooks (schema version 2)."""
    data = codec.encode(
        EventRecord(
            seq=0,
            event="on_run_start",
            time=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        )
    )
    data["version"] = 2
    return json.dumps(data)


def drain(consumer: RedisEventConsumer, client: redis.Redis, prefix: str) -> int:
    """Call run_once until nothing is pending and nothing new comes (100 calls at
    most); how many records the handler received."""
    handled = 0
    for _ in range(100):
        got = consumer.run_once(block_ms=20)
        handled += got
        if not got and not client.xpending(f"{prefix}events", "audit")["pending"]:
            return handled
    raise AssertionError("the consumer did not drain its group in 100 calls")


class TestStandIns:
    """An exception of a class with another constructor replays as a stand-in."""

    def test_consumer_gets_every_later_run(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A run whose tool raised UnicodeDecodeError, then five more runs: the
        group receives every record, nothing stays pending, nothing is dead."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        failing_run(publisher)
        for _ in range(5):
            good_run(publisher)
        assert publisher.flush(5.0)
        handler = RecordingChainHandler()
        consumer = RedisEventConsumer(
            client, group="audit", consumer="one", handler=handler, prefix=prefix
        )
        assert drain(consumer, client, prefix) == client.xlen(f"{prefix}events")
        assert consumer.dead_letters == 0
        assert client.xlen(f"{prefix}dead") == 0
        exceptions = [
            args[2]
            for event, args in handler.events
            if event == "on_tool_execution_exception"
        ]
        assert [str(e) for e in exceptions] == [
            "builtins.UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in "
            "position 0: invalid start byte"
        ]

    def test_follow(self, client: redis.Redis, prefix: str) -> None:
        """follow delivers the failing run whole, ending at its answer."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        run_id = failing_run(publisher)
        assert publisher.flush(5.0)
        handler = RecordingChainHandler()
        follow(client, run_id, handler, prefix=prefix, block_ms=1000)
        assert len(handler.events) == client.xlen(f"{prefix}run:{run_id}")
        assert handler.events[-1][0] == "on_run_complete"


class TestDeadLetters:
    """A record that cannot be decoded is retried, then set aside."""

    def test_newer_record(
        self, client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A schema-version-2 record between good runs is delivered three times,
        then moved to {prefix}dead with the reason, acknowledged, logged and
        counted; every good record is delivered."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        good_run(publisher)
        assert publisher.flush(5.0)
        bad_id = client.xadd(
            f"{prefix}events", {"record": newer_record(), "publisher": "future"}
        )
        good_run(publisher)
        assert publisher.flush(5.0)
        handler = RecordingChainHandler()
        consumer = RedisEventConsumer(
            client, group="audit", consumer="one", handler=handler, prefix=prefix
        )
        with caplog.at_level(logging.WARNING, logger="langhooks"):
            handled = drain(consumer, client, prefix)
        assert handled == len(handler.events) == publisher.published
        assert consumer.dead_letters == 1
        dead: Any = client.xrange(f"{prefix}dead")
        assert len(dead) == 1
        fields = dead[0][1]
        assert fields[b"entry"] == bad_id
        assert fields[b"publisher"] == b"future"
        assert fields[b"record"] == newer_record().encode()
        assert fields[b"group"] == b"audit"
        assert fields[b"consumer"] == b"one"
        assert b"schema version 2" in fields[b"error"]
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert [r.getMessage().count("delivery") for r in warnings] == [1, 1]
        assert len(errors) == 1
        assert "after 3 deliveries" in errors[0].getMessage()

    def test_not_a_record(self, client: redis.Redis, prefix: str) -> None:
        """An entry without a record field, and one whose record is not JSON,
        go to the dead-letter stream at their first delivery with
        max_attempts=1; the good run is delivered."""
        client.xadd(f"{prefix}events", {"something": "else"})
        client.xadd(f"{prefix}events", {"record": "[" * 100_000})
        client.xadd(f"{prefix}events", {"record": "5"})
        publisher = RedisEventPublisher(client, prefix=prefix)
        good_run(publisher)
        assert publisher.flush(5.0)
        handler = RecordingChainHandler()
        consumer = RedisEventConsumer(
            client,
            group="audit",
            consumer="one",
            handler=handler,
            prefix=prefix,
            max_attempts=1,
        )
        assert drain(consumer, client, prefix) == publisher.published
        assert consumer.dead_letters == 3

    def test_trimmed_pending_entry(self, client: redis.Redis, prefix: str) -> None:
        """A pending entry deleted from the firehose before its retry comes back
        without fields and is set aside too."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        bad_id = client.xadd(f"{prefix}events", {"record": newer_record()})
        consumer = RedisEventConsumer(
            client,
            group="audit",
            consumer="one",
            handler=RecordingChainHandler(),
            prefix=prefix,
        )
        assert consumer.run_once(block_ms=20) == 0
        client.xdel(f"{prefix}events", bad_id)
        good_run(publisher)
        assert publisher.flush(5.0)
        assert drain(consumer, client, prefix) == publisher.published
        dead: Any = client.xrange(f"{prefix}dead")
        assert [fields[b"entry"] for _, fields in dead] == [bad_id]
