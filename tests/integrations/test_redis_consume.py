"""RedisEventConsumer and RedisRunStore, against a real Redis server."""

from __future__ import annotations

import importlib
import logging
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.backoff
import redis.retry
from typing_extensions import override

from langhooks import ChainCallbackHandler, LangHooksError, Message, ToolContext, codec
from langhooks.chain import Decision, LLMChain, RunResult, Tool
from langhooks.cli.demo import QUESTION, SYSTEM, WEATHER_TOOL, ApprovalGate
from langhooks.events import EventRecord
from langhooks.integrations.redis import (
    RedisEventConsumer,
    RedisEventPublisher,
    RedisRunStore,
    follow,
)
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler
from tests.integrations.test_redis_publish import (
    ROOT,
    client,
    prefix,
    private_redis,
    run_id_of,
    simple_run,
)
from tests.test_events import assert_same_events

__all__ = ["client", "prefix"]  # fixtures used here


def drain(consumer: RedisEventConsumer, expected: int, handler: Any) -> None:
    """Run ``consumer`` until ``handler`` holds ``expected`` events."""
    for _ in range(200):
        if len(handler.events) >= expected:
            return
        consumer.run_once(block_ms=50)
    raise AssertionError(f"got {len(handler.events)} of {expected} events")


class TestConsumerGroups:
    """Each group sees every record once, acknowledged after its handler."""

    def test_one_member(self, client: redis.Redis, prefix: str) -> None:
        """A single member gets every event of a run, as live, and acknowledges
        each."""
        live = RecordingChainHandler()
        simple_run(RedisEventPublisher(client, prefix=prefix), live)
        got = RecordingChainHandler()
        consumer = RedisEventConsumer(
            client, group="audit", consumer="a", handler=got, prefix=prefix
        )
        assert consumer.run_once(block_ms=10) == len(live.events)
        assert_same_events(live.events, got.events)
        assert client.xpending(f"{prefix}events", "audit")["pending"] == 0
        assert consumer.run_once(block_ms=10) == 0

    def test_two_groups_two_members(self, client: redis.Redis, prefix: str) -> None:
        """Two groups each see everything; two members of one group share it,
        each run's chain rebuilt for whichever member gets a record."""
        live = RecordingChainHandler()
        simple_run(RedisEventPublisher(client, prefix=prefix), live)
        other = RecordingChainHandler()
        RedisEventConsumer(
            client, group="metrics", consumer="m", handler=other, prefix=prefix
        ).run_once(block_ms=10)
        assert_same_events(live.events, other.events)
        shared = RecordingChainHandler()
        members = [
            RedisEventConsumer(
                client,
                group="audit",
                consumer=name,
                handler=shared,
                prefix=prefix,
                count=1,
            )
            for name in ("a", "b")
        ]
        handled = [0, 0]
        while len(shared.events) < len(live.events):
            for i, member in enumerate(members):
                handled[i] += member.run_once(block_ms=10)
        assert handled[0] > 0
        assert handled[1] > 0
        assert_same_events(live.events, shared.events)

    def test_killed_member(self, client: redis.Redis, prefix: str) -> None:
        """A member killed mid-stream leaves records pending; another claims them
        after claim_idle_ms and finishes, with nothing lost."""
        live = RecordingChainHandler()
        simple_run(RedisEventPublisher(client, prefix=prefix), live)
        child = subprocess.Popen(
            [sys.executable, "-c", SLOW_MEMBER, prefix],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        done = [child.stdout.readline().strip() for _ in range(5)]
        child.kill()
        child.wait()
        # What it printed before it died (its handler prints, then sleeps).
        done += [line.strip() for line in child.stdout]
        child.stdout.close()
        names = [name for name, _ in live.events]
        assert done == names[: len(done)]
        rest = RecordingChainHandler()
        survivor = RedisEventConsumer(
            client,
            group="audit",
            consumer="b",
            handler=rest,
            prefix=prefix,
            claim_idle_ms=100,
        )
        deadline = time.monotonic() + 30
        while rest.names[-1:] != ["on_run_complete"]:
            assert time.monotonic() < deadline
            survivor.run_once(block_ms=50)
        # At least once: a record handled but not yet acknowledged comes again.
        start = len(live.events) - len(rest.events)
        assert start in (len(done) - 1, len(done))
        assert_same_events(live.events[start:], rest.events)
        assert client.xpending(f"{prefix}events", "audit")["pending"] == 0

    def test_expired_run_cannot_be_rebuilt(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A member that missed a run's earlier records and finds its stream
        gone cannot decode them: after three deliveries each goes to the
        dead-letter stream, saying so, and nothing stays pending."""
        result = simple_run(RedisEventPublisher(client, prefix=prefix))
        client.delete(f"{prefix}run:{run_id_of(result)}")
        first, second = (
            RedisEventConsumer(
                client,
                group="g",
                consumer=name,
                handler=RecordingChainHandler(),
                prefix=prefix,
                count=1,
            )
            for name in ("a", "b")
        )

        for _ in range(100):
            first.run_once(block_ms=10)
            second.run_once(block_ms=10)
            if not client.xpending(f"{prefix}events", "g")["pending"]:
                break
        dead: Any = client.xrange(f"{prefix}dead")
        assert dead
        assert first.dead_letters + second.dead_letters == len(dead)
        assert all(b"from its start" in fields[b"error"] for _, fields in dead)
        assert client.xpending(f"{prefix}events", "g")["pending"] == 0

    def test_restarted_member_takes_back_its_records(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A member whose handler raised has the exception propagate; restarted
        under the same name it handles that record first."""
        live = RecordingChainHandler()
        simple_run(RedisEventPublisher(client, prefix=prefix), live)

        class Failing(RecordingChainHandler):
            @override
            def _record(self, event: str, *args: Any) -> None:
                if len(self.events) == 3:
                    raise RuntimeError("handler down")
                super()._record(event, *args)

        failing = Failing()
        first = RedisEventConsumer(
            client, group="audit", consumer="a", handler=failing, prefix=prefix
        )
        with pytest.raises(RuntimeError, match="handler down"):
            first.run_once(block_ms=10)
        again = RecordingChainHandler()
        restarted = RedisEventConsumer(
            client, group="audit", consumer="a", handler=again, prefix=prefix
        )
        drain(restarted, len(live.events) - 3, again)
        assert_same_events(live.events[3:], again.events)

    def test_dedupe(self, client: redis.Redis, prefix: str) -> None:
        """With dedupe=True a record published twice is handled once (and still
        acknowledged); without, twice."""
        simple_run(RedisEventPublisher(client, prefix=prefix))
        key = f"{prefix}events"
        first: Any = client.xrange(key, count=1)
        client.xadd(key, first[0][1])
        counts = []
        for dedupe in (True, False):
            handler = RecordingChainHandler()
            consumer = RedisEventConsumer(
                client,
                group=f"g{dedupe}",
                consumer="a",
                handler=handler,
                prefix=prefix,
                dedupe=dedupe,
            )
            consumer.run_once(block_ms=10)
            counts.append(handler.names.count("on_run_start"))
        assert counts == [1, 2]
        assert client.xpending(key, "gTrue")["pending"] == 0

    def test_handler_value_error_raised_once(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A handler's own ValueError leaves run_once after one call: it is not
        taken for a record whose run must be rebuilt, and handled again."""
        simple_run(RedisEventPublisher(client, prefix=prefix))

        class Failing(ChainCallbackHandler):
            calls = 0

            @override
            def on_run_start(self, chain: LLMChain) -> None:
                self.calls += 1
                raise ValueError("the handler's own")

        handler = Failing()
        consumer = RedisEventConsumer(
            client, group="g", consumer="a", handler=handler, prefix=prefix
        )
        with pytest.raises(ValueError, match="the handler's own"):
            consumer.run_once(block_ms=10)
        assert handler.calls == 1

    def test_other_interface_skipped(self, client: redis.Redis, prefix: str) -> None:
        """A streaming handler is not called for a chain's records; they are still
        acknowledged."""
        simple_run(RedisEventPublisher(client, prefix=prefix))
        handler = RecordingStreamingHandler()
        RedisEventConsumer(
            client, group="g", consumer="a", handler=handler, prefix=prefix
        ).run_once(block_ms=10)
        assert handler.events == []
        assert client.xpending(f"{prefix}events", "g")["pending"] == 0

    def test_dedupe_forgets_old_records(
        self, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """dedupe remembers a bounded number of records."""
        from langhooks.integrations._redis import _consumer as _redis_consumer

        monkeypatch.setattr(_redis_consumer, "_REMEMBERED", 2)
        monkeypatch.setattr(_redis_consumer, "_RUNS", 1)
        live = RecordingChainHandler()
        publisher = RedisEventPublisher(client, prefix=prefix)
        simple_run(publisher, live)
        simple_run(publisher, live)
        handler = RecordingChainHandler()
        RedisEventConsumer(
            client,
            group="g",
            consumer="a",
            handler=handler,
            prefix=prefix,
            dedupe=True,
        ).run_once(block_ms=10)
        assert_same_events(live.events, handler.events)

    def test_run_until_stopped(self, client: redis.Redis, prefix: str) -> None:
        """run() handles records until its stop event is set."""
        stop = threading.Event()

        class Stopper(ChainCallbackHandler):
            @override
            def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
                stop.set()

        simple_run(RedisEventPublisher(client, prefix=prefix))
        RedisEventConsumer(
            client, group="g", consumer="a", handler=Stopper(), prefix=prefix
        ).run(stop)
        assert stop.is_set()

    def test_run_reads_again_through_faults(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """run() on a server that is down: each failed run_once is followed by a
        pause and another try; the fault is logged once, however many follow."""

        class StopAfter(threading.Event):
            """Set once it has been asked ``checks`` times (run() asks it once a
            try): the test needs no clock."""

            def __init__(self, checks: int) -> None:
                super().__init__()
                self.checks = checks

            @override
            def is_set(self) -> bool:
                self.checks -= 1
                return self.checks < 0

        with private_redis() as (server, client):
            server.kill()
            server.wait()
            down = redis.Redis(
                port=client.connection_pool.connection_kwargs["port"],
                db=9,
                socket_connect_timeout=0.3,
                retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
            )
            stop = StopAfter(3)
            with caplog.at_level(logging.WARNING, logger="langhooks"):
                RedisEventConsumer(
                    down, group="g", consumer="a", handler=Stopper()
                ).run(stop)
            down.close()
        assert stop.checks < 0  # three tries, each failed
        warnings = [r for r in caplog.records if "RedisEventConsumer" in r.getMessage()]
        assert len(warnings) == 1
        assert "Redis failed" in warnings[0].getMessage()

    def test_bad_arguments(self, client: redis.Redis, prefix: str) -> None:
        """Names are non-empty strings, the handler a sync langhooks handler; a
        foreign group error is not hidden."""
        with pytest.raises(TypeError, match="group"):
            RedisEventConsumer(client, group="", consumer="a", handler=Stopper())
        with pytest.raises(TypeError, match="claim_idle_ms"):
            RedisEventConsumer(
                client, group="g", consumer="a", handler=Stopper(), claim_idle_ms=-1
            )
        with pytest.raises(TypeError, match="langhooks handler"):
            RedisEventConsumer(
                client,
                group="g",
                consumer="a",
                handler=object(),  # type: ignore[arg-type]
            )
        client.xadd(
            f"{prefix}events",
            {"record": codec.dumps(EventRecord(seq=0, event="on_nothing"))},  # type: ignore[arg-type]
        )
        with pytest.raises(TypeError, match="max_attempts"):
            RedisEventConsumer(
                client, group="g", consumer="a", handler=Stopper(), max_attempts=0
            )
        foreign = RedisEventConsumer(
            client,
            group="g",
            consumer="a",
            handler=Stopper(),
            prefix=prefix,
            max_attempts=1,
        )
        assert foreign.run_once(block_ms=10) == 0
        dead: Any = client.xrange(f"{prefix}dead")
        assert b"not an event" in dead[0][1][b"error"]
        client.delete(f"{prefix}events")
        client.set(f"{prefix}events", "not a stream")
        consumer = RedisEventConsumer(
            client, group="g", consumer="a", handler=Stopper(), prefix=prefix
        )
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            consumer.run_once(block_ms=10)


class Stopper(ChainCallbackHandler):
    """A handler that handles nothing."""


SLOW_MEMBER = textwrap.dedent(
    """
    import sys, time
    import redis
    from langhooks.integrations.redis import RedisEventConsumer
    from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler
    from tests._services import REDIS_URL

    class Slow(RecordingChainHandler):
        def _record(self, event, *args):
            print(event, flush=True)
            time.sleep(0.05)

    RedisEventConsumer(redis.Redis.from_url(REDIS_URL), group="audit",
                       consumer="a", handler=Slow(), prefix=sys.argv[1]).run()
    """
)


# --- the run store ------------------------------------------------------------------


class Counted:
    """The demo's weather tool, counting its runs (slowly, to overlap)."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.runs = 0
        self.seconds = seconds
        self.tool = Tool(
            "get_weather",
            self,
            description=WEATHER_TOOL.description,
            parameters_schema=WEATHER_TOOL.parameters_schema,
        )

    def __call__(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.runs += 1
        time.sleep(self.seconds)
        return "Paris: 14°C, light rain"


def demo_model() -> ScriptedChatModel:
    """The demo's scripted model (a fresh one per worker)."""
    from langhooks.cli.demo import scripted_model

    model: ScriptedChatModel = scripted_model(0.0)  # type: ignore[assignment]
    return model


def interrupted(client: redis.Redis, prefix: str, *handlers: Any) -> str:
    """Start the demo agent until it waits for approval; save it; its run id."""
    chain = LLMChain(
        demo_model(), tools=[WEATHER_TOOL], callbacks=[*handlers, ApprovalGate()]
    ).add_messages([Message.system(SYSTEM), Message.user(QUESTION)])
    result = chain.run()
    assert result.status == "interrupted"
    return RedisRunStore(client, prefix=prefix).save(result.chain)


def answered_model() -> ScriptedChatModel:
    """The model a worker resumes on: the demo's second turn."""
    return ScriptedChatModel([ScriptedTurn(text="Yes, take an umbrella.")])


class TestRunStore:
    """A run interrupted in one worker is resumed in another, once."""

    def test_save_and_load(self, client: redis.Redis, prefix: str) -> None:
        """load gives the saved conversation and its waiting calls, with the
        worker's code."""
        run_id = interrupted(client, prefix)
        store = RedisRunStore(client, prefix=prefix)
        chain = store.load(run_id, answered_model(), tools=[WEATHER_TOOL])
        assert chain.invocation is not None
        assert chain.invocation.id == run_id
        assert [c.name for c in chain.pending_tool_calls] == ["get_weather"]
        assert 0 < client.ttl(f"{prefix}state:{run_id}") <= 7 * 24 * 3600

    def test_resume_once(self, client: redis.Redis, prefix: str) -> None:
        """An approval runs the tool once and continues to the answer; a second
        approval runs nothing and is a conflict."""
        run_id = interrupted(client, prefix)
        store = RedisRunStore(client, prefix=prefix)
        tool = Counted()
        result = store.resume(
            run_id, [Decision.approve()], answered_model(), tools=[tool.tool]
        )
        assert result.status == "ok"
        assert result.chain.messages[-1].text == "Yes, take an umbrella."
        with pytest.raises(LangHooksError, match="waits for no decision") as caught:
            store.resume(
                run_id, [Decision.approve()], answered_model(), tools=[tool.tool]
            )
        assert caught.value.type == "conflict"
        assert tool.runs == 1

    def test_concurrent_resumes(self, client: redis.Redis, prefix: str) -> None:
        """Two workers resume one run at once: one runs the tool, the other gets
        a conflict and runs nothing."""
        run_id = interrupted(client, prefix)
        tool = Counted(seconds=0.3)
        barrier = threading.Barrier(2)
        outcomes: list[object] = []

        def worker() -> None:
            store = RedisRunStore(client, prefix=prefix)
            barrier.wait()
            try:
                outcomes.append(
                    store.resume(
                        run_id,
                        {"call_weather_1": Decision.approve()},
                        answered_model(),
                        tools=[tool.tool],
                    ).status
                )
            except LangHooksError as error:
                outcomes.append(error.type)

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(map(str, outcomes)) == ["conflict", "ok"]
        assert tool.runs == 1

    def test_events_continue_in_the_run_stream(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """Events of a resume in another worker go to the same run stream, which
        ends with the answer: follow sees the whole conversation."""
        first = RecordingChainHandler()
        run_id = interrupted(
            client, prefix, RedisEventPublisher(client, prefix=prefix), first
        )
        second = RecordingChainHandler()
        RedisRunStore(client, prefix=prefix).resume(
            run_id,
            [Decision.approve()],
            answered_model(),
            tools=[WEATHER_TOOL],
            callbacks=[RedisEventPublisher(client, prefix=prefix), second],
        )
        followed = RecordingChainHandler()
        follow(client, run_id, followed, prefix=prefix, block_ms=1000)
        assert_same_events(first.events + second.events, followed.events)

    def test_errors(self, client: redis.Redis, prefix: str) -> None:
        """An unknown run, a call that is not waiting, an unrun chain and a bad
        client are errors that say so; a failed resume releases its lock."""
        store = RedisRunStore(client, prefix=prefix)
        with pytest.raises(LangHooksError, match="no saved run") as caught:
            store.load("nope", answered_model())
        assert caught.value.type == "invalid_request"
        run_id = interrupted(client, prefix)
        with pytest.raises(ValueError, match="do not wait"):
            store.resume(
                run_id,
                {"other": Decision.approve()},
                answered_model(),
                tools=[WEATHER_TOOL],
            )
        result = store.resume(
            run_id,
            [Decision.reject()],
            answered_model(),
            tools=[WEATHER_TOOL],
            continue_run=False,
        )
        assert result.status == "ok"
        assert result.chain.messages[-1].role == "tool"
        with pytest.raises(ValueError, match="has not run"):
            store.save(LLMChain(answered_model()))
        with pytest.raises(TypeError, match="LLMChain"):
            store.save("chain")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="synchronous"):
            RedisRunStore(object())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="prefix"):
            RedisRunStore(client, prefix=1)  # type: ignore[arg-type]


class TestGuide:
    """docs/guide/distributed.md: its worker and web process work as shown."""

    def test_worker_and_web(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A run started by the worker is approved by the web process once (a
        second approval is a conflict), and following it shows the answer."""
        page = (ROOT / "docs" / "guide" / "distributed.md").read_text()
        blocks = re.findall(r"```python\n# (\w+)\.py[^\n]*\n(.*?)```", page, re.DOTALL)
        assert [name for name, _ in blocks] == ["agent", "worker", "web"]
        with private_redis() as (_server, client):
            port = client.connection_pool.connection_kwargs["port"]
            for name, code in blocks:
                source = code.replace("port=6379", f"port={port}")
                (tmp_path / f"{name}.py").write_text(source)
                monkeypatch.delitem(sys.modules, name, raising=False)
            monkeypatch.syspath_prepend(str(tmp_path))
            worker = importlib.import_module("worker")
            web = importlib.import_module("web")
            run_id = worker.start("Do I need an umbrella in Paris?")
            result = web.approve(run_id, "c1")
            assert result.status == "ok"
            assert web.approve(run_id, "c1") is None
            sent: list[str] = []
            web.stream_run(run_id, sent.append)
            assert "".join(sent) == "Take an umbrella."
            for name, _ in blocks:
                del sys.modules[name]


# A worker process: resumes the run with an approval; its tool counts its runs in
# Redis and takes its time, so that two workers overlap.
RESUMER = textwrap.dedent(
    """
    import sys, time
    import redis
    from langhooks import LangHooksError
    from langhooks.chain import Decision, Tool
    from langhooks.cli.demo import WEATHER_TOOL
    from langhooks.models import ScriptedChatModel, ScriptedTurn
    from langhooks.integrations.redis import RedisRunStore
    from tests._services import REDIS_URL

    prefix, run_id = sys.argv[1], sys.argv[2]
    client = redis.Redis.from_url(REDIS_URL)

    def weather(arguments, context):
        client.incr(prefix + "tool-runs")
        time.sleep(0.5)
        return "Paris: 14°C, light rain"

    schema = WEATHER_TOOL.parameters_schema
    tool = Tool("get_weather", weather, parameters_schema=schema)
    model = ScriptedChatModel([ScriptedTurn(text="Yes, take an umbrella.")])
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        result = RedisRunStore(client, prefix=prefix).resume(
            run_id, [Decision.approve()], model, tools=[tool])
        print(result.status, result.chain.messages[-1].text)
    except LangHooksError as error:
        print(error.type)
    """
)


class TestWorkerProcesses:
    """Workers in other processes share the store."""

    def test_double_click_across_workers(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """Two worker processes resume one saved run at the same moment: one
        runs the tool and answers, the other gets "conflict"; the tool ran once."""
        run_id = interrupted(client, prefix)
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", RESUMER, prefix, run_id],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for worker in workers:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready"
        for worker in workers:  # both go before either is waited for
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        outs = [worker.communicate(timeout=60)[0].strip() for worker in workers]
        assert sorted(outs) == ["conflict", "ok Yes, take an umbrella."]
        assert client.get(f"{prefix}tool-runs") == b"1"
