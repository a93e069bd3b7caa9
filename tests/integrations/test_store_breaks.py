"""What the third adversarial pass broke in the run stores, pinned (issue 37).

A resume runs each tool call at most once, keyed by something a later turn cannot
repeat; what a tool returns is stored as the codec represents it (lone surrogates,
NUL); the Redis inbox indexes go with their runs. Every store kind, sync and async.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import psycopg
import pytest
import redis
import redis.asyncio
from typing_extensions import override

import langhooks as lh
from langhooks import codec
from langhooks.chain import Decision, LLMChain, RunResult, Tool
from langhooks.integrations._postgres._sql import Sql
from langhooks.integrations.postgres import (
    SCHEMA_VERSION,
    AsyncPostgresRunStore,
    PostgresRunStore,
)
from langhooks.integrations.redis import AsyncRedisRunStore
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import AsyncRunStore, RunStore
from tests.integrations.test_cli_runs import langhooks
from tests.integrations.test_run_stores import (
    AsyncPlace,
    Place,
    place,
    postgres_schema,
    wait_for,
)

# A provider that numbers call ids per response (Ollama before it sent ids,
# Gemini before 3) repeats them in every turn.
_REPEATED = "call_0"


@pytest.fixture(params=["memory", "redis", "postgres"])
def where(request: pytest.FixtureRequest) -> Iterator[Place]:
    """Each store kind in turn."""
    with place(request.param) as here:
        yield here


@pytest.fixture(params=["redis", "postgres"])
async def awhere(request: pytest.FixtureRequest) -> Any:
    """Each async store kind in turn."""
    with place(request.param) as here:
        there = AsyncPlace(here)
        try:
            yield there
        finally:
            await there.close()


class AskForFirst(lh.ChainCallbackHandler):
    """Calls of the tool "first" wait for a human; the others run."""

    @override
    def on_tool_call_review(
        self,
        chain: LLMChain,
        call: lh.ToolCall,
        tool: lh.Tool,
        review: lh.ReviewContext,
    ) -> lh.ReviewDecision | None:
        if call.name == "first" and review.human_decision is None:
            return lh.Interrupt("May I?")
        return None


def _tools(ran: list[str], first_returns: str = "first done") -> list[Tool]:
    def first(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
        ran.append("first")
        return first_returns

    def second(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
        ran.append("second")
        return "second done"

    return [Tool("first", first), Tool("second", second)]


def _async_tools(ran: list[str], first_returns: str = "first done") -> list[Tool]:
    async def first(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
        ran.append("first")
        return first_returns

    async def second(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
        ran.append("second")
        return "second done"

    return [Tool("first", first), Tool("second", second)]


def _call(name: str) -> lh.ToolCall:
    return lh.ToolCall(call_id=_REPEATED, name=name, arguments={})


def _later_turns() -> ScriptedChatModel:
    """After the approved call: a turn calling "second" under the same id, then
    an answer."""
    return ScriptedChatModel(
        [ScriptedTurn(tool_calls=[_call("second")]), ScriptedTurn(text="Done.")]
    )


def _interrupted(tools: list[Tool]) -> LLMChain:
    model = ScriptedChatModel([ScriptedTurn(tool_calls=[_call("first")])])
    chain = LLMChain(model, tools=tools, callbacks=[AskForFirst()])
    result = chain.add_message(lh.Message.user("Go.")).run()
    assert result.status == "interrupted"
    return result.chain


def _contents(result: RunResult) -> list[str]:
    return [r.text for m in result.chain.messages for r in m.tool_results]


class TestRepeatedCallIds:
    """A call id a later turn repeats is another call: it runs (issue 37, 1)."""

    def test_a_plain_run_runs_both(self) -> None:
        """Without a store, both calls named call_0 run (what a resume must match)."""
        ran: list[str] = []
        chain = _interrupted(_tools(ran))
        resumed = chain.execute_tool_calls_with_decisions(
            chain.pending_tool_calls, [Decision.approve()]
        )
        result = attrs_model(resumed.chain, _later_turns()).run()
        assert ran == ["first", "second"]
        assert _contents(result) == ["first done", "second done"]

    def test_a_resume_runs_the_later_turns_call(self, where: Place) -> None:
        """Resumed through a store, the next turn's call_0 (another tool) runs and
        gets its own result, not the approved call's."""
        ran: list[str] = []
        store: RunStore = where.make()
        run_id = store.save(_interrupted(_tools(ran)))
        result = store.resume(
            run_id,
            [Decision.approve()],
            _later_turns(),
            tools=_tools(ran),
            callbacks=[AskForFirst()],
        )
        assert result.status == "ok"
        assert ran == ["first", "second"]
        assert _contents(result) == ["first done", "second done"]

    async def test_async_stores(self, awhere: AsyncPlace) -> None:
        """The async stores (same resume code) run it too."""
        ran: list[str] = []
        store: AsyncRunStore = await awhere.make()
        run_id = await store.save(_interrupted(_tools(ran)))
        result = await store.resume(
            run_id,
            [Decision.approve()],
            _later_turns(),
            tools=_async_tools(ran),
            callbacks=[AskForFirst()],
        )
        assert result.status == "ok"
        assert ran == ["first", "second"]
        assert _contents(result) == ["first done", "second done"]


def attrs_model(chain: LLMChain, model: ScriptedChatModel) -> LLMChain:
    """``chain`` on another model."""
    return attrs.evolve(chain, model=model)


# A file name os.listdir gives for bytes that are not UTF-8.
_SURROGATE = "report-\udcff.txt"


class TestWhatTheCodecRepresents:
    """A tool's text is stored as the codec writes it (issue 37, 2)."""

    def test_a_lone_surrogate_is_kept(self, where: Place) -> None:
        """A tool that returns a lone surrogate ran: the model gets its text, not
        a failure."""
        ran: list[str] = []
        store: RunStore = where.make()
        run_id = store.save(_interrupted(_tools(ran)))
        result = store.resume(
            run_id,
            [Decision.approve()],
            ScriptedChatModel([ScriptedTurn(text="Done.")]),
            tools=_tools(ran, _SURROGATE),
        )
        assert result.status == "ok"
        assert ran == ["first"]
        assert _contents(result) == [_SURROGATE]

    async def test_async_stores(self, awhere: AsyncPlace) -> None:
        """The async stores keep it too."""
        ran: list[str] = []
        store: AsyncRunStore = await awhere.make()
        run_id = await store.save(_interrupted(_tools(ran)))
        result = await store.resume(
            run_id,
            [Decision.approve()],
            ScriptedChatModel([ScriptedTurn(text="Done.")]),
            tools=_async_tools(ran, _SURROGATE),
        )
        assert result.status == "ok"
        assert ran == ["first"]
        assert _contents(result) == [_SURROGATE]


def _write_legacy_record(where: Place, run_id: str, outcome: str) -> None:
    """A record as an earlier release kept it, by call id alone (its resume
    handed the claim back after ``call_0`` ran)."""
    if where.kind == "redis":
        client = redis.Redis.from_url(where.url)
        client.hset(f"{where.namespace}state:{run_id}", f"call:{_REPEATED}", outcome)
        client.close()
        return
    with psycopg.connect(where.url, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{where.namespace}".run_calls (run_id, call_id, outcome) '
            f"VALUES (%s, %s, %s)",
            (run_id, _REPEATED, outcome),
        )


class TestRecordsOfEarlierReleases:
    """A record an earlier release kept by call id alone is still honoured, once."""

    @pytest.mark.parametrize("kind", ["redis", "postgres"])
    @pytest.mark.parametrize("outcome", ['{"text":"first done before"}', ""])
    def test_taken_by_the_first_call_with_its_id(self, kind: str, outcome: str) -> None:
        """The waiting call_0 reuses the old record (or, started and never
        finished, is not run again); the next turn's call_0 runs."""
        with place(kind) as where:
            ran: list[str] = []
            store: RunStore = where.make()
            run_id = store.save(_interrupted(_tools(ran)))
            _write_legacy_record(where, run_id, outcome)
            result = store.resume(
                run_id,
                [Decision.approve()],
                _later_turns(),
                tools=_tools(ran),
                callbacks=[AskForFirst()],
            )
        assert ran == ["second"]
        first, second = _contents(result)
        assert first == ("first done before" if outcome else first)
        assert outcome or "worker running this tool call stopped" in first
        assert second == "second done"


def _expired_runs(store: RunStore, count: int) -> None:
    """``count`` runs saved to expire at once, each on its own thread and user."""
    for n in range(count):
        chain = _interrupted(_tools([]))
        store.save(chain, metadata={"thread": f"t{n}", "user": f"u{n}"}, expires_in=0.2)


def keys_left(client: Any, prefix: str) -> list[str]:
    """The keys under ``prefix`` once its runs have expired (waits for them to
    go, and for the indexes as long again)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        keys = sorted(str(key) for key in client.scan_iter(match=f"{prefix}*"))
        if not keys:
            break
        time.sleep(0.05)
    return keys


class TestTheRedisInbox:
    """The inbox indexes go with their runs (issue 37, 4)."""

    def test_expired_runs_leave_no_keys(self) -> None:
        """100 runs that expire unanswered, each naming its own thread and user,
        leave no key behind."""
        with place("redis") as where:
            store = where.make()
            _expired_runs(store, 100)
            client = redis.Redis.from_url(where.url)
            try:
                assert keys_left(client, where.namespace) == []
            finally:
                client.close()

    @pytest.mark.parametrize("longer_first", [True, False])
    def test_an_index_lives_as_long_as_its_last_run(self, longer_first: bool) -> None:
        """A run that waits longer keeps its index, whichever was saved first."""
        with place("redis") as where:
            store = where.make()
            long = _interrupted(_tools([]))
            short = _interrupted(_tools([]))
            saves = [(long, 3600.0), (short, 0.2)]
            for chain, seconds in saves if longer_first else saves[::-1]:
                store.save(chain, metadata={"thread": "t"}, expires_in=seconds)
            client = redis.Redis.from_url(where.url)
            try:
                index = f"{where.namespace}waiting:thread=" + '"t"'
                assert short.invocation is not None
                gone = f"{where.namespace}state:{short.invocation.id}"
                wait_for(lambda: client.exists(gone) == 0)
                rows = store.pending(metadata={"thread": "t"})
                assert long.invocation is not None
                assert [row.run_id for row in rows] == [long.invocation.id]
                assert client.pttl(index) > 3_000_000
            finally:
                client.close()

    def test_waiting_again_keeps_the_index(self) -> None:
        """A resume that ends waiting again lists the run under the run's own
        expiry."""
        with place("redis") as where:
            store = where.make()
            ran: list[str] = []
            chain = _interrupted(_tools(ran))
            run_id = store.save(chain, metadata={"thread": "t"}, expires_in=3600)
            again = ScriptedChatModel([ScriptedTurn(tool_calls=[_call("first")])])
            result = store.resume(
                run_id,
                [Decision.approve()],
                again,
                tools=_tools(ran),
                callbacks=[AskForFirst()],
            )
            assert result.status == "interrupted"
            client = redis.Redis.from_url(where.url)
            try:
                index = f"{where.namespace}waiting:thread=" + '"t"'
                assert client.pttl(index) > 3_000_000
                assert [r.run_id for r in store.pending(metadata={"thread": "t"})] == [
                    run_id
                ]
            finally:
                client.close()

    async def test_async_stale_entries_are_dropped(self) -> None:
        """An index entry whose run is gone before the index expires (a run
        deleted by hand) leaves the index on the async store's next pending()."""
        with place("redis") as where:
            client = redis.asyncio.Redis.from_url(where.url, decode_responses=True)
            store = AsyncRedisRunStore(client, prefix=where.namespace)
            kept = await store.save(_interrupted(_tools([])), metadata={"t": "a"})
            gone = await store.save(_interrupted(_tools([])), metadata={"t": "a"})
            await client.delete(f"{where.namespace}state:{gone}")
            rows = await store.pending(metadata={"t": "a"})
            assert [row.run_id for row in rows] == [kept]
            index = f'{where.namespace}waiting:t="a"'
            assert await client.zrange(index, 0, -1) == [kept]
            await client.aclose()

    def test_an_index_of_an_earlier_release_is_left_unexpiring(self) -> None:
        """An index with no expiry (an earlier release wrote it, for runs whose
        expiries are unknown) is never given one that could drop those runs."""
        with place("redis") as where:
            client = redis.Redis.from_url(where.url)
            try:
                index = f"{where.namespace}waiting:thread=" + '"t"'
                client.zadd(index, {"an-older-run": 1})
                where.make().save(
                    _interrupted(_tools([])), metadata={"thread": "t"}, expires_in=60
                )
                assert client.pttl(index) == -1
                assert client.zcard(index) == 2
            finally:
                client.close()


# What JSONB refuses (a NUL, a lone surrogate), and a string that starts as an
# escaped one does: each is kept exactly, and found by its metadata.
_AWKWARD = ["nul\x00here", "file-\udcff.txt", "\ufdd0starts-with-the-mark", "plain"]


def _interrupted_with(arguments: Mapping[str, Any]) -> LLMChain:
    call = lh.ToolCall(call_id="call_x\x00", name="first", arguments=arguments)
    model = ScriptedChatModel([ScriptedTurn(tool_calls=[call])])
    chain = LLMChain(model, tools=_tools([]), callbacks=[AskForFirst()])
    result = chain.add_message(lh.Message.user("Go.")).run()
    assert result.status == "interrupted"
    return result.chain


def _seen_arguments(seen: list[Mapping[str, Any]]) -> list[Tool]:
    def first(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
        seen.append(dict(arguments))
        return "first done \x00"

    return [Tool("first", first), Tool("second", first)]


class TestWhatJsonbRefuses:
    """A waiting call or metadata with a NUL or a lone surrogate is kept, found
    and resumed exactly (issue 37, 3)."""

    @pytest.mark.parametrize("text", _AWKWARD)
    def test_kept_found_and_resumed(self, where: Place, text: str) -> None:
        """Every store keeps the call, the inbox finds it by that metadata and
        gives it back exactly, and the resumed tool gets its arguments."""
        arguments = {"path": text, text: [text, {"k": text}]}
        store: RunStore = where.make()
        chain = _interrupted_with(arguments)
        run_id = store.save(chain, metadata={"thread": text, "n": [text]})
        rows = store.pending(metadata={"thread": text})
        assert [row.run_id for row in rows] == [run_id]
        assert rows[0].metadata == {"thread": text, "n": [text]}
        assert dict(rows[0].calls[0].arguments) == arguments
        assert rows[0].calls[0].call_id == "call_x\x00"
        other = "nul\x00her" if text != "nul\x00her" else "x"
        assert store.pending(metadata={"thread": other}) == []
        seen: list[Mapping[str, Any]] = []
        result = store.resume(
            run_id,
            [Decision.approve()],
            ScriptedChatModel([ScriptedTurn(text="Done.")]),
            tools=_seen_arguments(seen),
            callbacks=[AskForFirst()],
        )
        assert _contents(result) == ["first done \x00"]
        assert result.status == "ok"
        assert seen == [arguments]
        assert _contents(result) == ["first done \x00"]

    async def test_async_stores(self, awhere: AsyncPlace) -> None:
        """The async stores keep it too."""
        text = "nul\x00\udcff"
        store: AsyncRunStore = await awhere.make()
        run_id = await store.save(
            _interrupted_with({"path": text}), metadata={"thread": text}
        )
        rows = await store.pending(metadata={"thread": text})
        assert [dict(row.calls[0].arguments) for row in rows] == [{"path": text}]
        assert [row.run_id for row in rows] == [run_id]


def _postgres_store(url: str, schema: str) -> PostgresRunStore:
    store = PostgresRunStore(url, schema=schema)
    store.setup()
    return store


class TestPostgresEdges:
    """What PostgreSQL text cannot hold never reaches it raw (issue 37, 3)."""

    def test_a_run_id_text_cannot_hold(self) -> None:
        """A run id with a NUL names no run: load, waiting, delete and resume say
        so; saving a chain with such an id is refused with a ValueError."""
        with postgres_schema() as (url, schema), _postgres_store(url, schema) as store:
            odd = "run\x00\udcff"
            with pytest.raises(lh.LangHooksError, match="no saved run") as caught:
                store.load(odd, _later_turns())
            assert caught.value.type == "invalid_request"
            assert store.waiting(odd) is None
            assert store.delete(odd) is False
            with pytest.raises(lh.LangHooksError, match="no saved run"):
                store.resume(odd, [Decision.approve()], _later_turns())
            chain = _interrupted(_tools([]))
            assert chain.invocation is not None
            renamed = attrs.evolve(
                chain, invocation=attrs.evolve(chain.invocation, id=odd)
            )
            with pytest.raises(ValueError, match="PostgreSQL text cannot"):
                store.save(renamed)

    async def test_async_run_id_text_cannot_hold(self) -> None:
        """The async store answers the same."""
        with postgres_schema() as (url, schema):
            async with AsyncPostgresRunStore(url, schema=schema) as store:
                await store.setup()
                odd = "run\x00"
                with pytest.raises(lh.LangHooksError, match="no saved run"):
                    await store.load(odd, _later_turns())
                assert await store.waiting(odd) is None
                assert await store.delete(odd) is False
                with pytest.raises(lh.LangHooksError, match="no saved run"):
                    await store.resume(odd, [Decision.approve()], _later_turns())

    def test_a_schema_of_the_earlier_release_is_upgraded(self) -> None:
        """A schema at version 1 is refused with the setup() hint until setup()
        brings it to this version, and its waiting runs are kept."""
        chain = _interrupted(_tools([]))
        assert chain.invocation is not None
        run_id = chain.invocation.id
        calls = json.dumps([codec.encode(c) for c in chain.pending_tool_calls])
        with (
            postgres_schema() as (url, schema),
            PostgresRunStore(url, schema=schema) as store,
        ):
            sql = Sql(schema)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.create_schema)
                conn.execute(sql.create_versions)
                version, statements = sql.migrations[0]
                for statement in statements:
                    conn.execute(statement)
                conn.execute(sql.record_version, (version,))
                conn.execute(
                    f'INSERT INTO "{schema}".runs (run_id, status, state, calls, '
                    f"metadata, saved_at) VALUES (%s, 'waiting', %s, %s::jsonb, "
                    f"%s::jsonb, now())",
                    (run_id, json.dumps(chain.to_state()), calls, '{"thread": "t"}'),
                )
            with pytest.raises(lh.LangHooksError, match=r"older .* call setup\(\)"):
                store.pending()
            assert store.setup() == SCHEMA_VERSION
            assert [row.run_id for row in store.pending(metadata={"thread": "t"})] == [
                run_id
            ]


def closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class TestWrongAddresses:
    """A wrong address fails at once, naming it (issue 37, 8)."""

    @pytest.mark.parametrize(
        ("conninfo", "words"),
        [
            ("redis://127.0.0.1:6379/9", "RedisRunStore takes Redis"),
            ("http://example.invalid/", "got a http:// URL"),
            ("not a conninfo", "not a PostgreSQL conninfo"),
        ],
    )
    def test_a_conninfo_of_another_kind(self, conninfo: str, words: str) -> None:
        """A URL of another scheme, or text libpq cannot read, is refused when
        the store is made."""
        with pytest.raises(ValueError, match=words):
            PostgresRunStore(conninfo)
        with pytest.raises(ValueError, match=words):
            AsyncPostgresRunStore(conninfo)

    def test_a_closed_port(self) -> None:
        """The first use fails with a "connection" error naming host and port and
        what to check, instead of waiting 30 s for the pool."""
        port = closed_port()
        store = PostgresRunStore(f"postgresql://postgres@127.0.0.1:{port}/test")
        try:
            for _ in range(2):  # each use tries again
                with pytest.raises(lh.LangHooksError) as caught:
                    store.pending()
                assert caught.value.type == "connection"
                assert f"127.0.0.1:{port}" in caught.value.message
                assert "Check the host and port" in caught.value.message
                assert isinstance(caught.value.original, psycopg.OperationalError)
        finally:
            store.close()

    async def test_async_closed_port(self) -> None:
        """The async store fails the same way."""
        port = closed_port()
        conninfo = f"host=127.0.0.1 port={port} dbname=test connect_timeout=2"
        async with AsyncPostgresRunStore(conninfo) as store:
            with pytest.raises(lh.LangHooksError, match=f"127.0.0.1:{port}"):
                await store.setup()


class TestTheRunsCommand:
    """``langhooks runs`` answers in one line, at once (issue 37, 6 and 8)."""

    def test_metadata_nested_too_deeply(self) -> None:
        """A --metadata value nested past what JSON parsing takes is a usage
        error (exit 2, one line), not a RecursionError traceback."""
        deep = "k=" + "[" * 100_000
        status, out, err = langhooks(
            "runs", "pending", "--store", "redis://x", "--metadata", deep
        )
        assert (status, out) == (2, "")
        assert err == "langhooks runs: --metadata k: the JSON value nests too deeply\n"

    @pytest.mark.parametrize("scheme", ["postgresql", "redis"])
    def test_a_closed_port(self, scheme: str) -> None:
        """A store on a closed port is exit 1 with one line naming host and port
        and what to check."""
        port = closed_port()
        status, out, err = langhooks(
            "runs", "pending", "--store", f"{scheme}://127.0.0.1:{port}/0"
        )
        assert (status, out) == (1, "")
        assert err.count("\n") == 1
        assert f"127.0.0.1:{port}" in err
        assert "check the" in err.lower()
