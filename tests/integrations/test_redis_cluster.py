"""Every Redis entry point on a real Redis Cluster (issue #26).

A session fixture starts a 3-master cluster of ``redis-server`` processes on free
ports of 127.0.0.1 (``tests/_redis_cluster.py``) for these tests only, and stops it;
the test that kills a node starts a cluster of its own. Without ``redis-server`` the
tests skip (and fail under CI). Every test works under its own key prefix.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.backoff
import redis.cluster
import redis.retry
from redis.crc import key_slot
from typing_extensions import override

from langhooks import (
    ChainCallbackHandler,
    ChatResponse,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingHandle,
    ToolCall,
    invocation,
)
from langhooks.chain import Decision, LLMChain
from langhooks.cli.demo import ApprovalGate
from langhooks.cli.serve import DemoModel, demo_agent
from langhooks.integrations._redis_outbox import NodePaused, Pauses, Pending
from langhooks.integrations._redis_wire import Keys, aread_stream, read_stream
from langhooks.integrations.redis import (
    AsyncRedisRunStore,
    RedisEventConsumer,
    RedisEventPublisher,
    RedisRunStore,
    afollow,
    arun_entries,
    follow,
    run_entries,
)
from langhooks.integrations.web import create_app
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler
from tests._redis_cluster import LocalCluster, LocalServer
from tests._services import REDIS_URL, need_command, need_redis
from tests.integrations.test_store_breaks import keys_left
from tests.test_events import assert_same_events

from ._web_harness import serving
from .test_redis_consume import Counted, answered_model
from .test_redis_publish import (
    interrupted_run,
    plain,
    run_id_of,
    simple_run,
    text_model,
)
from .test_web import events

ROOT = Path(__file__).resolve().parents[2]


def start_cluster(directory: Path) -> LocalCluster:
    """A 3-master cluster in ``directory``, or skip (fail under CI) without
    redis-server."""
    need_command("redis-server", "apt-get install redis-server")
    need_command("redis-cli", "apt-get install redis-tools")
    return LocalCluster(directory)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The session's 3-master cluster."""
    started = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    yield started
    started.stop()


def cluster_client(cluster: LocalCluster, **options: Any) -> redis.cluster.RedisCluster:
    """A cluster client knowing every node."""
    return redis.cluster.RedisCluster(
        startup_nodes=[
            redis.cluster.ClusterNode("127.0.0.1", port)  # type: ignore[no-untyped-call]
            for port in cluster.ports
        ],
        **options,
    )


@pytest.fixture
def client(cluster: LocalCluster) -> Iterator[redis.cluster.RedisCluster]:
    """A synchronous cluster client."""
    client = cluster_client(cluster)
    yield client
    client.close()


@pytest.fixture
async def aclient(
    cluster: LocalCluster,
) -> AsyncIterator[redis.asyncio.cluster.RedisCluster]:
    """An asyncio cluster client."""
    client = redis.asyncio.cluster.RedisCluster.from_url(cluster.url)
    yield client
    await client.aclose()


@pytest.fixture
def prefix(client: redis.cluster.RedisCluster) -> Iterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    prefix = f"lh-test:{uuid.uuid4().hex[:12]}:"
    yield prefix
    for key in list(client.scan_iter(match=f"{prefix}*")):
        client.delete(key)


def node_of(client: redis.cluster.RedisCluster, key: str) -> str:
    """The name of the node that owns ``key``'s slot."""
    node = client.get_node_from_key(key)  # type: ignore[no-untyped-call]
    assert node is not None
    return str(node.name)


def _ask_again() -> ToolCall:
    """A later turn's call of the weather tool (it waits for a human too)."""
    return ToolCall(call_id="again", name="get_weather", arguments={"city": "Oslo"})


class TestClients:
    """What each entry point accepts, and what it says when refused."""

    def test_refusals_name_what_is_accepted(self) -> None:
        """A wrong client is refused with the names of the accepted ones."""
        sync = r"redis\.Redis or redis\.cluster\.RedisCluster"
        for refuse in (
            lambda: RedisEventPublisher("redis://x"),  # type: ignore[arg-type]
            lambda: follow("redis://x", "r", ChainCallbackHandler()),  # type: ignore[arg-type]
            lambda: run_entries("redis://x", "r"),  # type: ignore[arg-type]
            lambda: RedisRunStore("redis://x"),  # type: ignore[arg-type]
            lambda: create_app(redis="redis://x"),  # type: ignore[arg-type]
            lambda: RedisEventConsumer(
                "redis://x",  # type: ignore[arg-type]
                group="g",
                consumer="c",
                handler=ChainCallbackHandler(),
            ),
        ):
            with pytest.raises(TypeError, match=sync):
                refuse()

    async def test_async_refusal_names_what_is_accepted(self) -> None:
        """The async twins name the asyncio clients they take."""
        with pytest.raises(
            TypeError,
            match=r"redis\.asyncio\.Redis or redis\.asyncio\.cluster\.RedisCluster",
        ):
            await afollow(redis.Redis.from_url(REDIS_URL), "r", ChainCallbackHandler())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"redis\.asyncio\.cluster\.RedisCluster"):
            AsyncRedisRunStore(redis.Redis.from_url(REDIS_URL))  # type: ignore[arg-type]

    def test_bad_shards(self) -> None:
        """shards is an int of at least 1."""
        for shards in (0, 1.5, "2"):
            with pytest.raises(TypeError, match="shards must be an int >= 1"):
                RedisEventPublisher(redis.Redis.from_url(REDIS_URL), shards=shards)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="prefix must be a str"):
            RedisEventPublisher(redis.Redis.from_url(REDIS_URL), prefix=1)  # type: ignore[arg-type]


class TestKeyLayout:
    """Which keys share a slot, by construction."""

    def test_single_node_layout_unchanged(self) -> None:
        """One node, one shard: the keys of the single-node layout."""
        keys = Keys.of(redis.Redis.from_url(REDIS_URL), "lh:", None)
        assert (keys.shards, keys.sharded) == (1, False)
        assert keys.run("r1") == "lh:run:r1"
        assert keys.firehoses() == ["lh:events"]
        assert keys.run_id_of("lh:run:r1") == "r1"
        assert keys.run_id_of("other:run:r1") is None

    def test_a_run_shares_its_shards_slot(self) -> None:
        """On a cluster a run's stream is in the slot of its firehose shard, and
        the run ids a key names are found again, whatever the prefix holds (a
        prefix with a hash tag of its own keeps every key in its slot)."""
        for prefix in ("lh:", "{lh}:", "a}:b{"):
            keys = Keys.of(redis.cluster.RedisCluster.__new__(_Cluster), prefix, None)
            assert keys.shards == 16
            for n in range(50):
                run_id = f"run-{n}"
                shard = keys.shard(run_id)
                assert key_slot(keys.run(run_id).encode()) == key_slot(
                    keys.firehose(shard).encode()
                )
                assert keys.run_id_of(keys.run(run_id)) == run_id
            assert keys.run_id_of(f"{prefix}run:loose") is None
            assert keys.run_id_of(f"{prefix}{{{prefix}x}}:run:r") is None
            assert keys.run_id_of(keys.firehose(3)) is None
        plain = Keys.of(redis.cluster.RedisCluster.__new__(_Cluster), "lh:", None)
        assert len({key_slot(k.encode()) for k in plain.firehoses()}) == 16

    def test_shards_on_one_node(self) -> None:
        """shards > 1 on one node uses the sharded layout too."""
        keys = Keys.of(redis.Redis.from_url(REDIS_URL), "lh:", 4)
        assert keys.sharded
        assert len(set(keys.firehoses())) == 4
        assert keys.shard(None) == 0


class _Cluster(redis.cluster.RedisCluster):
    """A cluster client never connected (only its type matters to ``Keys``)."""

    def __init__(self) -> None:  # pragma: no cover  # made with __new__
        raise AssertionError


# The other process follows a run on the cluster and sends back what it received.
FOLLOWER = textwrap.dedent(
    """
    import pickle, sys
    import redis.cluster
    from langhooks.integrations.redis import follow
    from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler
    from tests.integrations.test_redis_publish import plain
    from tests.test_events import comparable

    url, prefix, run_id = sys.argv[1], sys.argv[2], sys.argv[3]
    handler = RecordingChainHandler()
    client = redis.cluster.RedisCluster.from_url(url)
    follow(client, run_id, handler, prefix=prefix, block_ms=20_000)
    sys.stdout.buffer.write(pickle.dumps(
        [(name, plain(comparable(args))) for name, args in handler.events]))
    """
)


class TestOnACluster:
    """The entry points on a 3-master cluster, with no hash tag in the prefix."""

    def test_follow_in_another_process(
        self, cluster: LocalCluster, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """A subprocess following a run on the cluster receives what the live
        handler received."""
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
            text_model("It is sunny in Paris today, take sunglasses.", delay=0.02),
            callbacks=[Starter(), publisher, live],
        ).add_message(Message.user("Weather?"))
        runner = threading.Thread(target=chain.run)
        runner.start()
        assert started.wait(10)
        import pickle

        from tests.test_events import comparable

        child = subprocess.run(
            [sys.executable, "-c", FOLLOWER, cluster.url, prefix, run_ids[0]],
            cwd=ROOT,
            capture_output=True,
            timeout=60,
            check=True,
        )
        runner.join()
        publisher.close()
        assert publisher.lost == 0
        assert pickle.loads(child.stdout) == [
            (name, plain(comparable(args))) for name, args in live.events
        ]

    def test_runs_spread_over_nodes(
        self, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """20 runs land on at least 2 of the 3 nodes, each whole in its stream,
        and each firehose shard holds exactly the records of its runs."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        run_ids = [run_id_of(simple_run(publisher)) for _ in range(20)]
        assert publisher.flush(10)
        keys = Keys.of(client, prefix, None)
        assert len({node_of(client, keys.run(r)) for r in run_ids}) >= 2
        total = 0
        for run_id in run_ids:
            followed = RecordingChainHandler()
            follow(client, run_id, followed, prefix=prefix, block_ms=10)
            assert followed.names[-1] == "on_run_complete"
            total += len(followed.events)
        assert sum(client.xlen(key) for key in keys.firehoses()) == total
        assert publisher.lost == 0
        publisher.close()

    def test_two_consumers_every_record_once(
        self, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """Two members of one group, reading every shard, get every record of
        every run once between them."""
        publisher = RedisEventPublisher(client, prefix=prefix)
        run_ids = {run_id_of(simple_run(publisher)) for _ in range(6)}
        assert publisher.flush(10)
        members = [
            (
                handler := RecordingChainHandler(),
                RedisEventConsumer(
                    client,
                    group="audit",
                    consumer=f"m{n}",
                    handler=handler,
                    prefix=prefix,
                    count=7,
                ),
            )
            for n in range(2)
        ]
        expected = sum(
            len(list(run_entries(client, r, prefix=prefix, block_ms=10)))
            for r in run_ids
        )
        got = 0
        for _ in range(200):
            for _handler, member in members:
                got += member.run_once(block_ms=20)
            if got >= expected:
                break
        assert got == expected
        seen = [
            (args[0].invocation.id, name)
            for handler, _ in members
            for name, args in handler.events
            if name in ("on_run_start", "on_run_complete")
        ]
        assert sorted(seen) == sorted(
            (r, n) for r in run_ids for n in ("on_run_start", "on_run_complete")
        )
        assert all(member.run_once(block_ms=150) == 0 for _, member in members)
        publisher.close()

    def test_run_store_resumes_once(
        self, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """A run saved on the cluster is resumed once, and leaves the inbox."""
        store = RedisRunStore(client, prefix=prefix)
        run_id = store.save(interrupted_run().chain, metadata={"team": "a"})
        assert [p.run_id for p in store.pending(metadata={"team": "a"})] == [run_id]
        tool = Counted()
        done = store.resume(
            run_id, [Decision.approve()], answered_model(), tools=[tool.tool]
        )
        assert done.status == "ok"
        with pytest.raises(LangHooksError, match="waits for no decision"):
            store.resume(
                run_id, [Decision.approve()], answered_model(), tools=[tool.tool]
            )
        assert tool.runs == 1
        assert store.pending(metadata={"team": "a"}) == []

    async def test_async_run_store_resumes_once(
        self, aclient: redis.asyncio.cluster.RedisCluster, prefix: str
    ) -> None:
        """AsyncRedisRunStore on an asyncio cluster client resumes a run once."""
        store = AsyncRedisRunStore(aclient, prefix=prefix)
        run_id = await store.save(interrupted_run().chain)
        tool = Counted()
        done = await store.resume(
            run_id, [Decision.approve()], answered_model(), tools=[tool.tool]
        )
        assert done.status == "ok"
        with pytest.raises(LangHooksError, match="waits for no decision"):
            await store.resume(
                run_id, [Decision.approve()], answered_model(), tools=[tool.tool]
            )
        assert tool.runs == 1

    def test_run_store_inbox_indexes_expire_with_their_runs(
        self, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """Runs that expire unanswered, each naming its own thread, leave no
        inbox index behind on any node; a run resumed and interrupted again is
        still listed (issue 37, 4)."""
        store = RedisRunStore(client, prefix=prefix)
        for n in range(20):
            store.save(
                interrupted_run().chain,
                metadata={"thread": f"t{n}", "user": f"u{n}"},
                expires_in=0.2,
            )
        assert keys_left(client, prefix) == []
        kept = store.save(interrupted_run().chain, metadata={"thread": "kept"})
        again = ScriptedChatModel([ScriptedTurn(tool_calls=[_ask_again()])])
        tool = Counted()
        resumed = store.resume(
            kept,
            [Decision.approve()],
            again,
            tools=[tool.tool],
            callbacks=[ApprovalGate()],
        )
        assert resumed.status == "interrupted"
        assert [p.run_id for p in store.pending(metadata={"thread": "kept"})] == [kept]
        assert client.pttl(f'{prefix}waiting:thread="kept"') > 0

    async def test_async_run_store_inbox_indexes_expire_with_their_runs(
        self,
        aclient: redis.asyncio.cluster.RedisCluster,
        client: redis.cluster.RedisCluster,
        prefix: str,
    ) -> None:
        """The same with AsyncRedisRunStore on an asyncio cluster client."""
        store = AsyncRedisRunStore(aclient, prefix=prefix)
        for n in range(20):
            await store.save(
                interrupted_run().chain, metadata={"thread": f"t{n}"}, expires_in=0.2
            )
        assert keys_left(client, prefix) == []
        kept = await store.save(interrupted_run().chain, metadata={"thread": "kept"})
        again = ScriptedChatModel([ScriptedTurn(tool_calls=[_ask_again()])])
        tool = Counted()
        resumed = await store.resume(
            kept,
            [Decision.approve()],
            again,
            tools=[tool.tool],
            callbacks=[ApprovalGate()],
        )
        assert resumed.status == "interrupted"
        rows = await store.pending(metadata={"thread": "kept"})
        assert [p.run_id for p in rows] == [kept]

    def test_web_app_streams_a_run_to_the_end(
        self, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """create_app on a cluster client starts the demo run, lists it, streams
        it to its end, and resumes it after an approval."""
        app = create_app(
            redis=client,
            prefix=prefix,
            agent=demo_agent(lambda: DemoModel(0.0)),
            heartbeat=0.05,
        )
        with serving(app) as base:
            answer = httpx.post(f"{base}runs", json={"prompt": "Paris?"})
            assert answer.status_code == 201, answer.text
            run_id = answer.json()["run_id"]
            for _ in range(500):
                runs = httpx.get(f"{base}runs").json()["runs"]
                if any(
                    r["run_id"] == run_id and r["state"] == "interrupted" for r in runs
                ):
                    break
                time.sleep(0.01)
            decided = httpx.post(
                f"{base}runs/{run_id}/decisions",
                json={
                    "decisions": [
                        {"tool_call_id": "call_weather_1", "decision": "approve"}
                    ]
                },
            )
            assert decided.status_code == 202, decided.text
            streamed = events(base, run_id)
        names = [e["event"] for e in streamed]
        assert names[0] == "on_run_start"
        assert names[-1] == "on_run_complete"
        assert json.loads(streamed[-1]["data"])["payload"]["result"]["status"] == "ok"

    async def test_async_twins(
        self,
        client: redis.cluster.RedisCluster,
        aclient: redis.asyncio.cluster.RedisCluster,
        prefix: str,
    ) -> None:
        """afollow and arun_entries on an asyncio cluster client give what follow
        and run_entries give."""
        live = RecordingChainHandler()
        publisher = RedisEventPublisher(client, prefix=prefix)
        result = simple_run(publisher, live)
        assert await asyncio.to_thread(publisher.flush, 5.0)
        run_id = run_id_of(result)
        followed = RecordingChainHandler()
        await afollow(aclient, run_id, followed, prefix=prefix, block_ms=10)
        assert_same_events(live.events, followed.events)
        expected = list(run_entries(client, run_id, prefix=prefix, block_ms=10))
        got = [e async for e in arun_entries(aclient, run_id, prefix=prefix)]
        assert got == expected
        publisher.close()

    async def test_groups_read_alike(
        self,
        client: redis.cluster.RedisCluster,
        aclient: redis.asyncio.cluster.RedisCluster,
        prefix: str,
    ) -> None:
        """aread_stream reads a group on the node of the key's slot as
        read_stream does."""
        key = f"{prefix}stream"
        entry_id = client.xadd(key, {"n": "1"})
        client.xgroup_create(key, "g", id="0")
        client.xgroup_create(key, "h", id="0")
        read: Any = read_stream(
            client, key, ">", count=10, block=None, group=("g", "c")
        )
        aread: Any = await aread_stream(
            aclient, key, ">", count=10, block=None, group=("h", "c")
        )
        assert read == aread
        assert [entry[0] for entry in read[0][1]] == [entry_id]

    def test_dead_letters_on_a_cluster(
        self, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """An undecodable entry of a shard goes to the one dead-letter stream
        and is acknowledged (two commands: the keys are in different slots)."""
        keys = Keys.of(client, prefix, None)
        client.xadd(keys.firehose(5), {"junk": "1"})
        consumer = RedisEventConsumer(
            client,
            group="g",
            consumer="c",
            handler=RecordingChainHandler(),
            prefix=prefix,
            max_attempts=1,
        )
        assert consumer.run_once(block_ms=10) == 0
        assert consumer.dead_letters == 1
        assert client.xlen(keys.dead()) == 1
        assert client.xpending(keys.firehose(5), "g")["pending"] == 0

    def test_web_list_skips_keys_that_are_no_run(
        self, client: redis.cluster.RedisCluster, prefix: str
    ) -> None:
        """A key shaped like a run stream of no shard is not listed as a run."""
        client.set(f"{prefix}{{{prefix}x}}:run:bogus", "1")
        publisher = RedisEventPublisher(client, prefix=prefix)
        run_id = run_id_of(simple_run(publisher))
        publisher.close()
        with serving(create_app(redis=client, prefix=prefix)) as base:
            runs = httpx.get(f"{base}runs").json()["runs"]
        assert [r["run_id"] for r in runs] == [run_id]


class TestShardsOnOneNode:
    """The sharded layout on one node (``shards`` > 1), against the shared server."""

    def test_consumer_blocks_on_each_shard_in_turn(self) -> None:
        """A member waiting on two shards gets records published to both while it
        waits, whichever shard it is blocked on."""
        client = redis.Redis.from_url(need_redis())
        prefix = f"lh-test:{uuid.uuid4().hex[:12]}:"
        try:
            keys = Keys.of(client, prefix, 2)
            publisher = RedisEventPublisher(client, prefix=prefix, shards=2)
            handler = RecordingStreamingHandler()
            consumer = RedisEventConsumer(
                client,
                group="g",
                consumer="c",
                handler=handler,
                prefix=prefix,
                shards=2,
            )
            assert consumer.run_once(block_ms=10) == 0  # the groups exist

            def publish() -> None:
                time.sleep(0.3)  # the member waits by now
                done: set[int] = set()
                while len(done) < 2:  # one record on each shard, in one batch
                    with invocation("one") as current:
                        if keys.shard(current.id) not in done:
                            done.add(keys.shard(current.id))
                            publisher.on_partial_response(
                                PartialResponse(text="hi"),
                                PartialResponseContext(handle=StreamingHandle()),
                            )
                publisher.flush(5)

            thread = threading.Thread(target=publish)
            thread.start()
            got = 0
            for _ in range(50):
                got += consumer.run_once(block_ms=1000)
                if got >= 2:
                    break
            thread.join()
            assert got == 2
            assert handler.names == ["on_partial_response"] * 2
            publisher.close()
        finally:
            for key in list(client.scan_iter(match=f"{prefix}*")):
                client.delete(key)
            client.close()

    def test_follow_reads_again_after_a_restart(self, tmp_path: Path) -> None:
        """follow (waiting without end) outlives its server going away and coming
        back, and returns at the end of the stream published after."""
        need_command("redis-server", "apt-get install redis-server")
        server = LocalServer(tmp_path)
        # No retries inside redis-py: follow's own reading again is what is tested.
        client = redis.Redis(
            port=server.port,
            socket_timeout=1,
            retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
        )
        followed = RecordingStreamingHandler()
        context = PartialResponseContext(handle=StreamingHandle())
        try:
            assert client.ping()
            server.stop()
            with invocation("answer") as current:
                waiter = threading.Thread(
                    target=follow,
                    args=(client, current.id, followed),
                    kwargs={"block_ms": 0},
                )
                waiter.start()
                time.sleep(0.3)  # follow fails, pauses, reads again
                server.restart()
                with RedisEventPublisher(client) as publisher:
                    publisher.on_partial_response(PartialResponse(text="hi"), context)
                    publisher.on_complete_response(
                        ChatResponse(message=Message.assistant("hi"))
                    )
                waiter.join(30)
            assert not waiter.is_alive()
            assert followed.names == ["on_partial_response", "on_complete_response"]
        finally:
            client.close()
            server.stop()


class TestPauses:
    """The outbox pauses a node whose send failed (see TestNodeKilled for a dead
    node): a paused node's records are dropped without a round trip, and the
    send that ends the pause is preceded by a ping on the node's own connection."""

    def test_pause_grows_then_a_ping_ends_it(
        self, client: redis.cluster.RedisCluster
    ) -> None:
        """Failures double the pause up to its longest; when it is over, a live
        node answers the ping and records may be sent again; a success ends the
        pause."""
        pauses = Pauses(client, first=60.0, longest=90.0)
        name, node = pauses.node("lh-pause:key")
        assert node is not None
        assert name == node.name
        assert pauses.check("lh-pause:key") == (name, None)
        pauses.settled(name, redis.ConnectionError("down"))
        reason = pauses.check("lh-pause:key")[1]
        assert isinstance(reason, NodePaused)
        assert str(reason) == (
            f"Redis node {name} failed just before; its records are dropped for a while"
        )
        pauses.settled(name, redis.ConnectionError("down"))
        pauses.settled(name, redis.ConnectionError("down"))
        assert pauses._paused[name][1] == 90.0
        over = Pauses(client, first=0.0, longest=0.0)
        over.settled(name, redis.ConnectionError("down"))
        assert over.check("lh-pause:key") == (name, None)
        over.settled(name, None)
        assert over._paused == {}

    def test_a_key_without_a_known_owner_is_its_own_node(
        self, cluster: LocalCluster
    ) -> None:
        """When the client knows no owner of a key's slot, the key stands for its
        node, and a pause over it needs no ping."""
        client = cluster_client(cluster)
        try:
            client.nodes_manager.slots_cache.clear()
            pauses = Pauses(client, first=0.0, longest=0.0)
            assert pauses.node("lh-pause:key") == ("lh-pause:key", None)
            pauses.settled("lh-pause:key", redis.ConnectionError("down"))
            assert pauses.check("lh-pause:key") == ("lh-pause:key", None)
        finally:
            client.close()


class TestNodeKilled:
    """A node dies (SIGKILL) while runs are published on a cluster of its own."""

    def test_node_killed_mid_publish(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The runs complete, the records bound for the dead node are counted lost
        and logged once, the publisher's thread stays alive and flush(timeout=2)
        returns; one send waits out the client's retries, then the dead node is
        paused (its records dropped at once, its pings refused) so the live
        nodes' records are not held behind it; follow reads the live nodes and
        raises for the dead one after block_ms; the consumer's run() goes on
        until stopped."""
        cluster = start_cluster(tmp_path)
        try:
            client = cluster_client(
                cluster, socket_timeout=1, socket_connect_timeout=0.5
            )
            prefix = "lh-kill:"
            keys = Keys.of(client, prefix, None)
            # The node owning the most shards dies; which shards it owned is
            # read before (the client forgets a dead node's slots).
            owners = [node_of(client, key) for key in keys.firehoses()]
            dead = Counter(owners).most_common(1)[0][0]
            victim = int(dead.rpartition(":")[2])
            publisher = RedisEventPublisher(client, prefix=prefix, flush_timeout=2)
            caplog.set_level(logging.WARNING, logger="langhooks")
            # Count the sends that failed (each waits out redis-py's retries).
            outbox = publisher._outbox
            send = outbox._send
            failed: list[str] = []

            def counted(firehose: str, batch: Sequence[Pending]) -> Exception | None:
                error = send(firehose, batch)
                if error is not None:
                    failed.append(firehose)
                return error

            outbox._send = counted  # type: ignore[method-assign]

            class Killer(ChainCallbackHandler):
                @override
                def on_run_start(self, chain: LLMChain) -> None:
                    cluster.kill(victim)

            words = " ".join(f"w{n}" for n in range(40))
            began = time.monotonic()
            results = [
                simple_run(publisher, *([Killer()] if n == 3 else []), text=words)
                for n in range(24)
            ]
            ran = time.monotonic() - began
            began = time.monotonic()
            publisher.flush(timeout=2)
            flushed = time.monotonic() - began
            # Every record is settled (sent or lost) before the runs are read:
            # what follow finds does not depend on how far the flusher got.
            assert publisher.flush(timeout=120)  # a bound against a hang only
            settled = time.monotonic() - began
            assert all(r.status == "ok" for r in results)
            thread = publisher._outbox._thread
            assert thread is not None
            assert thread.is_alive()
            assert flushed < 30  # returns (a generous bound: the machine is shared)
            run_ids = [run_id_of(r) for r in results]
            on_dead = [r for r in run_ids if owners[keys.shard(r)] == dead]
            alive = [r for r in run_ids[4:] if owners[keys.shard(r)] != dead]
            assert on_dead  # 24 runs over 16 shards, 6 or more on the dead node
            assert publisher.lost > 0
            assert [r for r in caplog.records if "lost" in r.getMessage()] != []
            assert len([r for r in caplog.records if "lost" in r.getMessage()]) == 1
            # One send to the dead node failed; after it, the node was paused
            # and probed with a ping, never sent to again.
            assert failed == failed[:1]
            assert len(failed) == 1
            assert owners[keys.firehoses().index(failed[0])] == dead
            print(  # the figures for the report (pytest -s shows them)
                f"\nnode killed: 24 runs in {ran:.2f}s, flush(timeout=2) returned in "
                f"{flushed:.3f}s, all settled in {settled:.3f}s, lost "
                f"{publisher.lost}, published {publisher.published}, runs on the "
                f"dead node {len(on_dead)}, failed sends {len(failed)}"
            )
            # The runs on live nodes after the kill are whole.
            for run_id in alive[-3:]:
                followed = RecordingChainHandler()
                follow(client, run_id, followed, prefix=prefix, block_ms=10)
                assert followed.names[-1] == "on_run_complete"
            # The dead node's pause: still down, its probe (a ping on the node's
            # own connection, never retried) fails and pauses it again.
            pauses = Pauses(client, first=0.0, longest=0.0)
            firehose = keys.firehoses()[owners.index(dead)]
            name, _ = pauses.node(firehose)
            assert name == dead
            pauses.settled(name, redis.ConnectionError("down"))
            assert isinstance(pauses.check(firehose)[1], redis.ConnectionError)
            # A run on the dead node: follow reads again until block_ms, then raises.
            with pytest.raises(
                (redis.RedisError, redis.exceptions.RedisClusterException)
            ):
                follow(
                    client,
                    on_dead[-1],
                    RecordingChainHandler(),
                    prefix=prefix,
                    block_ms=300,
                )
            # The consumer's run() goes on through the faults until stopped.
            stop = threading.Event()
            handler = RecordingChainHandler()
            consumer = RedisEventConsumer(
                client, group="g", consumer="c", handler=handler, prefix=prefix
            )
            reader = threading.Thread(target=consumer.run, args=(stop,))
            reader.start()
            time.sleep(1.0)
            stop.set()
            reader.join(30)
            assert not reader.is_alive()
            assert any("RedisEventConsumer" in r.getMessage() for r in caplog.records)
            publisher.close(timeout=2)
            client.close()
        finally:
            cluster.stop()

    async def test_afollow_raises_after_block_ms(self, tmp_path: Path) -> None:
        """afollow reads again while Redis is down, from where it was, and raises
        after block_ms (on one node: redis-py's asyncio cluster client leaks the
        connections of the nodes it drops, which the suite's warnings catch)."""
        need_command("redis-server", "apt-get install redis-server")
        server = LocalServer(tmp_path)
        aclient = redis.asyncio.Redis(
            port=server.port, socket_timeout=1, socket_connect_timeout=0.5
        )
        try:
            assert await aclient.ping()
            server.stop()
            with pytest.raises(redis.ConnectionError):
                await afollow(
                    aclient,
                    "r1",
                    RecordingChainHandler(),
                    prefix="lh-kill:",
                    block_ms=300,
                )
        finally:
            await aclient.aclose()
