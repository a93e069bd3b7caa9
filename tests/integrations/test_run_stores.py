"""Every run store passes one contract: memory, Redis and PostgreSQL, sync and async.

Real servers (``need_redis()``, ``need_postgres()``); each test has its own key
prefix or schema and removes it. Worker processes run ``WORKER`` below; a TCP proxy
in this file makes a store unreachable mid-resume.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
import redis.asyncio

import langhooks as lh
from langhooks.chain import Decision, LLMChain, RunResult
from langhooks.integrations.postgres import (
    PostgresRunStore,
)
from langhooks.integrations.redis import RedisRunStore
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import AsyncRunStore, MemoryRunStore, PendingRun, RunStore
from tests._services import need_postgres, need_redis
from tests.integrations._store_agent import (
    ANSWER,
    TOOLS,
    AskFirst,
    answer_model,
    starts,
    waiting_chain,
)

ROOT = Path(__file__).resolve().parents[2]
Make = Callable[..., RunStore]
AMake = Callable[..., AsyncRunStore]


# --- where the stores live -----------------------------------------------------------


@contextlib.contextmanager
def redis_namespace() -> Iterator[tuple[str, str]]:
    """A Redis URL and a key prefix of this test's own, removed afterwards."""
    url = need_redis()
    prefix = f"langhooks-test-{uuid.uuid4().hex}:"
    try:
        yield url, prefix
    finally:
        client = redis.Redis.from_url(url)
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
        client.close()


@contextlib.contextmanager
def postgres_schema() -> Iterator[tuple[str, str]]:
    """A PostgreSQL URL and a schema of this test's own, dropped afterwards."""
    url = need_postgres()
    schema = f"langhooks_test_{uuid.uuid4().hex}"
    try:
        yield url, schema
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class Place:
    """Where one test's stores keep their runs: ``make()`` gives a store on it
    (a new client each time, as another worker would have)."""

    def __init__(self, kind: str, url: str, namespace: str) -> None:
        self.kind = kind
        self.url = url
        self.namespace = namespace
        self._closers: list[Callable[[], None]] = []
        self._memory: MemoryRunStore | None = None

    def make(self, *, claim_timeout: float = 60.0, port: int | None = None) -> RunStore:
        """A store on this place (through ``port`` when given: a proxy's)."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = MemoryRunStore(claim_timeout=claim_timeout)
            return self._memory
        if self.kind == "redis":
            client = redis.Redis.from_url(self.url)
            if port is not None:
                client = redis.Redis(
                    host="127.0.0.1",
                    port=port,
                    db=client.connection_pool.connection_kwargs.get("db", 0),
                )
            self._closers.append(client.close)
            return RedisRunStore(
                client, prefix=self.namespace, claim_timeout=claim_timeout
            )
        url = self.url if port is None else _with_port(self.url, port)
        store = PostgresRunStore(
            url, schema=self.namespace, claim_timeout=claim_timeout
        )
        store.setup()
        self._closers.append(store.close)
        return store

    def worker_args(self, claim_timeout: float) -> list[str]:
        """What ``WORKER`` needs to open a store on this place."""
        return [self.kind, self.url, self.namespace, str(claim_timeout)]

    def close(self) -> None:
        for close in self._closers:
            close()


def _with_port(url: str, port: int) -> str:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    netloc = f"{parts.username or 'postgres'}@127.0.0.1:{port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


@contextlib.contextmanager
def place(kind: str) -> Iterator[Place]:
    """A fresh place for ``kind`` ("memory", "redis" or "postgres")."""
    if kind == "memory":
        yield Place(kind, "", "")
        return
    spot = redis_namespace() if kind == "redis" else postgres_schema()
    with spot as (url, namespace):
        here = Place(kind, url, namespace)
        try:
            yield here
        finally:
            here.close()


@pytest.fixture(params=["memory", "redis", "postgres"])
def where(request: pytest.FixtureRequest) -> Iterator[Place]:
    """Each store kind in turn."""
    with place(request.param) as here:
        yield here


@pytest.fixture(params=["redis", "postgres"])
def shared(request: pytest.FixtureRequest) -> Iterator[Place]:
    """The stores that outlive a process."""
    with place(request.param) as here:
        yield here


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """The tool's log of this test."""
    return tmp_path / "tool.log"


def resume_all(store: RunStore, run_id: str, **options: Any) -> RunResult:
    """Approve every waiting call of ``run_id``."""
    calls = store.load(run_id, answer_model(), tools=TOOLS).pending_tool_calls
    return store.resume(
        run_id,
        [Decision.approve()] * len(calls),
        answer_model(),
        tools=TOOLS,
        callbacks=[AskFirst()],
        **options,
    )


def outcome(store: RunStore, run_id: str) -> str:
    """ "ok"/"interrupted"/"error" of a resume, or the type of the error it raised."""
    try:
        return resume_all(store, run_id).status
    except lh.LangHooksError as error:
        return error.type


def tool_results(result: RunResult) -> dict[str, lh.ToolResult]:
    """The tool results of the resumed run, by call id."""
    return {
        tool_result.tool_call_id: tool_result
        for message in result.chain.messages
        for tool_result in message.tool_results
    }


def wait_for(what: Callable[[], bool], timeout: float = 30.0) -> None:
    """Return once ``what()`` holds (fail after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout}s for {what}")
        time.sleep(0.02)


# --- the contract, for every store ---------------------------------------------


class TestContract:
    """What every RunStore promises."""

    def test_protocol(self, where: Place) -> None:
        """Every store satisfies the RunStore protocol."""
        assert isinstance(where.make(), RunStore)

    def test_save_and_load(self, where: Place, log: Path) -> None:
        """load gives the saved conversation and its waiting calls, with this
        worker's code; the run id is the chain's run id."""
        chain = waiting_chain(log, calls=2)
        store = where.make()
        run_id = store.save(chain)
        assert chain.invocation is not None
        assert run_id == chain.invocation.id
        loaded = where.make().load(run_id, answer_model(), tools=TOOLS)
        assert loaded.messages == chain.messages
        assert [c.call_id for c in loaded.pending_tool_calls] == ["call_1", "call_2"]

    def test_resume_once(self, where: Place, log: Path) -> None:
        """An approval runs each call once and continues to the answer; a repeated
        resume is a conflict and runs nothing; load then gives the final state."""
        store = where.make()
        run_id = store.save(waiting_chain(log, calls=2))
        result = resume_all(store, run_id)
        assert result.status == "ok"
        assert result.chain.messages[-1].text == ANSWER
        with pytest.raises(lh.LangHooksError, match="waits for no decision") as caught:
            store.resume(run_id, [Decision.approve()], answer_model(), tools=TOOLS)
        assert caught.value.type == "conflict"
        assert starts(log) == ["call_1", "call_2"]
        assert store.load(run_id, answer_model(), tools=TOOLS).messages[-1].text == (
            ANSWER
        )
        assert store.pending() == []

    def test_concurrent_threads(self, where: Place, log: Path) -> None:
        """Four threads resume one run at once: one runs the tool, three get
        "conflict" and run nothing."""
        run_id = where.make().save(waiting_chain(log, seconds=0.2))
        stores = [where.make() for _ in range(4)]
        barrier = threading.Barrier(4)
        outcomes: list[str] = []

        def worker(store: RunStore) -> None:
            barrier.wait()
            outcomes.append(outcome(store, run_id))

        threads = [threading.Thread(target=worker, args=(s,)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["conflict"] * 3 + ["ok"]
        assert starts(log) == ["call_1"]

    def test_slow_tool_keeps_its_claim(self, where: Place, log: Path) -> None:
        """#21.1: a tool that outlives claim_timeout keeps the claim (its
        heartbeat renews it), so a second resume during it is a conflict and the
        tool runs once."""
        claim_timeout = 0.5
        run_id = where.make(claim_timeout=claim_timeout).save(
            waiting_chain(log, seconds=4 * claim_timeout)
        )
        first: list[str] = []
        thread = threading.Thread(
            target=lambda: first.append(
                outcome(where.make(claim_timeout=claim_timeout), run_id)
            )
        )
        thread.start()
        wait_for(lambda: starts(log) == ["call_1"])
        time.sleep(2 * claim_timeout)  # well past the timeout, the tool still runs
        second = outcome(where.make(claim_timeout=claim_timeout), run_id)
        thread.join()
        assert (first, second) == (["ok"], "conflict")
        assert starts(log) == ["call_1"]

    def test_unknown_and_deleted(self, where: Place, log: Path) -> None:
        """An unknown or deleted run is "invalid_request" for load and resume;
        delete says whether the run was there."""
        store = where.make()
        for method in (
            lambda: store.load("nope", answer_model()),
            lambda: store.resume("nope", [Decision.approve()], answer_model()),
        ):
            with pytest.raises(lh.LangHooksError, match="no saved run") as caught:
                method()
            assert caught.value.type == "invalid_request"
        run_id = store.save(waiting_chain(log))
        assert store.delete(run_id) is True
        assert store.delete(run_id) is False
        with pytest.raises(lh.LangHooksError) as caught:
            store.resume(run_id, [Decision.approve()], answer_model(), tools=TOOLS)
        assert caught.value.type == "invalid_request"
        assert store.pending() == []
        assert starts(log) == []

    def test_expiry(self, where: Place, log: Path) -> None:
        """A run past its expires_in is gone: not listed, not loaded, not
        resumed."""
        store = where.make()
        run_id = store.save(waiting_chain(log), expires_in=0.3)
        (row,) = store.pending()
        assert row.expires_at is not None
        assert row.expires_at > row.saved_at
        time.sleep(0.5)
        assert store.pending() == []
        with pytest.raises(lh.LangHooksError) as caught:
            store.resume(run_id, [Decision.approve()], answer_model(), tools=TOOLS)
        assert caught.value.type == "invalid_request"
        with pytest.raises(lh.LangHooksError, match="no saved run"):
            store.load(run_id, answer_model(), tools=TOOLS)
        assert starts(log) == []

    def test_inbox(self, where: Place, tmp_path: Path) -> None:
        """pending() lists waiting runs newest first with their calls, filtered by
        metadata containment, at most limit; finished runs leave it."""
        store = where.make()
        ids = []
        tenants = ["a", "b", "a", "a"]
        for n, tenant in enumerate(tenants):
            chain = waiting_chain(tmp_path / f"{n}.log", calls=1 + n % 2)
            metadata = {"tenant": tenant, "user": {"id": n, "tags": ["x", f"t{n}"]}}
            ids.append(store.save(chain, metadata=metadata))
            time.sleep(0.002)  # distinct saved_at
        everything = store.pending()
        assert [row.run_id for row in everything] == ids[::-1]
        assert all(isinstance(row, PendingRun) for row in everything)
        assert [len(row.calls) for row in everything] == [2, 1, 2, 1]
        assert everything[0].metadata == {
            "tenant": "a",
            "user": {"id": 3, "tags": ["x", "t3"]},
        }
        a = store.pending(metadata={"tenant": "a"})
        assert [row.run_id for row in a] == [ids[3], ids[2], ids[0]]
        assert [r.run_id for r in store.pending(metadata={"tenant": "a"}, limit=2)] == [
            ids[3],
            ids[2],
        ]
        nested = store.pending(metadata={"user": {"tags": ["t2"]}})
        assert [row.run_id for row in nested] == [ids[2]]
        assert store.pending(metadata={"tenant": "c"}) == []
        assert store.pending(metadata={"user": {"id": "3"}}) == []  # types matter
        resume_all(store, ids[3])
        assert [r.run_id for r in store.pending(metadata={"tenant": "a"})] == [
            ids[2],
            ids[0],
        ]

    def test_interrupted_again_waits_again(self, where: Place, log: Path) -> None:
        """A resume whose model asks for another call waits again: the run is back
        in the inbox with the new call, and resumes once more."""
        store = where.make()
        run_id = store.save(waiting_chain(log), metadata={"tenant": "a"})
        more = lh.ToolCall(call_id="call_9", name="book", arguments={})
        model = ScriptedChatModel([ScriptedTurn(tool_calls=[more])])
        result = store.resume(
            run_id, [Decision.approve()], model, tools=TOOLS, callbacks=[AskFirst()]
        )
        assert result.status == "interrupted"
        (row,) = store.pending(metadata={"tenant": "a"})
        assert [call.call_id for call in row.calls] == ["call_9"]
        assert resume_all(store, run_id).status == "ok"
        assert starts(log) == ["call_1", "call_9"]

    def test_mismatched_decisions_keep_the_run_waiting(
        self, where: Place, log: Path
    ) -> None:
        """Decisions for calls that do not wait are a ValueError before anything
        runs; the run still waits and resumes."""
        store = where.make()
        run_id = store.save(waiting_chain(log))
        with pytest.raises(ValueError, match="do not wait"):
            store.resume(
                run_id, {"other": Decision.approve()}, answer_model(), tools=TOOLS
            )
        assert [row.run_id for row in store.pending()] == [run_id]
        result = store.resume(
            run_id,
            {"call_1": Decision.reject("No.")},
            answer_model(),
            tools=TOOLS,
            continue_run=False,
        )
        assert result.status == "ok"
        assert result.chain.messages[-1].role == "tool"
        assert starts(log) == []

    def test_bad_arguments(self, where: Place, log: Path) -> None:
        """Bad input is a TypeError or ValueError that names it."""
        store = where.make()
        with pytest.raises(TypeError, match="LLMChain"):
            store.save("chain")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="has not run"):
            store.save(LLMChain(answer_model()))
        chain = waiting_chain(log)
        with pytest.raises(TypeError, match="metadata must hold JSON"):
            store.save(chain, metadata={"when": object()})
        with pytest.raises(TypeError, match="metadata keys"):
            store.save(chain, metadata={1: "a"})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match="metadata must be a mapping"):
            store.save(chain, metadata=["a"])  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="expires_in"):
            store.save(chain, expires_in=0)
        with pytest.raises(TypeError, match="expires_in"):
            store.save(chain, expires_in="1")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="limit"):
            store.pending(limit=0)
        with pytest.raises(TypeError, match="limit"):
            store.pending(limit=True)
