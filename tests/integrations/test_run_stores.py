"""Every run store passes one contract: memory, Redis and PostgreSQL, sync and async.

Real servers (``need_redis()``, ``need_postgres()``); each test has its own key
prefix or schema and removes it. Worker processes run ``WORKER`` below; a TCP proxy
in this file makes a store unreachable mid-resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest
import redis
import redis.asyncio
from typing_extensions import override

import langhooks as lh
from langhooks import codec
from langhooks._persist._stores import awaited_memory
from langhooks.chain import Decision, LLMChain, RunResult
from langhooks.integrations._postgres._sql import Sql
from langhooks.integrations.postgres import (
    SCHEMA_VERSION,
    AsyncPostgresRunStore,
    PostgresRunStore,
)
from langhooks.integrations.redis import AsyncRedisRunStore, RedisRunStore
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import AsyncRunStore, MemoryRunStore, PendingRun, RunStore
from tests._services import REDIS_URL, host_port, need_postgres, need_redis
from tests.integrations._store_agent import (
    ANSWER,
    ASYNC_TOOLS,
    TOOLS,
    AskFirst,
    answer_model,
    log_lines,
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

    def test_saves_write_what_changed(self, where: Place, log: Path) -> None:
        """Saves that append, edit, remove and come from two store objects (each
        knowing another version) all load as the chain saved last."""
        chain = waiting_chain(log, calls=1)
        one, two = where.make(), where.make()
        run_id = one.save(chain)
        longer = chain.add_messages([lh.Message.user("more"), lh.Message.user("é\x00")])
        edited = attrs.evolve(
            longer,
            messages=(lh.Message.user("changed"), *longer.messages[1:]),
        )
        for store, saved in (
            (one, longer),  # appended to
            (two, chain),  # another object, which knows no version: whole
            (one, longer),  # its version is gone: whole again
            (one, edited),  # the first message changed
            (one, chain),  # messages removed
            (one, chain.add_messages([lh.Message.user("x")])),
        ):
            store.save(saved)
            loaded = where.make().load(run_id, answer_model(), tools=TOOLS)
            assert loaded.messages == saved.messages
            assert loaded.pending_tool_calls == saved.pending_tool_calls

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
        one = store.waiting(ids[0])  # type: ignore[attr-defined]
        assert one == everything[-1]
        assert store.waiting("nope") is None  # type: ignore[attr-defined]
        resume_all(store, ids[3])
        assert store.waiting(ids[3]) is None  # type: ignore[attr-defined]
        assert [r.run_id for r in store.pending(metadata={"tenant": "a"})] == [
            ids[2],
            ids[0],
        ]

    def test_finished_and_running_runs_are_not_in_the_inbox(
        self, where: Place, log: Path
    ) -> None:
        """A saved chain that waits for nothing is kept (load works) but not
        listed, and resuming it is a conflict; a run being resumed is not listed
        while it runs."""
        store = where.make()
        done = (
            LLMChain(answer_model(), tools=TOOLS)
            .add_message(lh.Message.user("hi"))
            .run()
        )
        assert done.status == "ok"
        done_id = store.save(done.chain, metadata={"tenant": "a"})
        assert store.pending(metadata={"tenant": "a"}) == []
        loaded = store.load(done_id, answer_model(), tools=TOOLS)
        assert loaded.messages == done.chain.messages
        with pytest.raises(lh.LangHooksError, match="waits for no decision"):
            store.resume(done_id, [], answer_model())
        seen: list[list[PendingRun]] = []

        def look(arguments: Any, context: lh.ToolContext) -> str:
            seen.append(where.make().pending(metadata={"tenant": "a"}))
            return "looked"

        tool = lh.Tool("book", look)
        run_id = store.save(waiting_chain(log), metadata={"tenant": "a"})
        assert [r.run_id for r in store.pending(metadata={"tenant": "a"})] == [run_id]
        store.resume(run_id, [Decision.approve()], answer_model(), tools=[tool])
        assert seen == [[]]

    def test_numbers_match_by_value(self, where: Place, log: Path) -> None:
        """As in JSONB, 1 matches 1.0, and true is not 1."""
        store = where.make()
        run_id = store.save(waiting_chain(log), metadata={"n": 1, "flag": True})
        assert [r.run_id for r in store.pending(metadata={"n": 1.0})] == [run_id]
        assert store.pending(metadata={"flag": 1}) == []
        assert store.pending(metadata={"n": [1]}) == []

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

    def test_deleted_while_resumed(
        self, where: Place, log: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A run deleted during its resume: the heartbeat sees the claim gone, the
        next call is refused (an error result, not run) and the final save is a
        conflict."""
        store = where.make(claim_timeout=0.3)
        box: list[str] = []

        def act(arguments: Any, context: lh.ToolContext) -> str:
            with log.open("a") as file:
                file.write(f"start {context.call.call_id}\n")
            where.make().delete(box[0])
            while "taken over" not in caplog.text:
                time.sleep(0.01)
            return "done"

        tool = lh.Tool("act", act)
        calls = [
            lh.ToolCall(call_id=f"call_{n}", name="act", arguments={}) for n in (1, 2)
        ]
        model = ScriptedChatModel([ScriptedTurn(tool_calls=calls)])
        chain = LLMChain(model, tools=[tool], callbacks=[AskFirst()])
        waiting = chain.add_message(lh.Message.user("go")).run().chain
        box.append(store.save(waiting))
        with pytest.raises(lh.LangHooksError, match="taken over") as caught:
            store.resume(box[0], [Decision.approve()] * 2, answer_model(), tools=[tool])
        assert caught.value.type == "conflict"
        assert starts(log) == ["call_1"]

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


# --- across processes ----------------------------------------------------------------

# A worker process: opens a store from its arguments; "save LOG" saves a waiting run
# and prints its id; "resume RUN_ID" says "ready", waits for a line on stdin, then
# approves every waiting call and prints how it ended (with --async, through the
# async store and the async tools).
WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from langhooks import LangHooksError
    from langhooks.chain import Decision
    from tests.integrations._store_agent import (
        ASYNC_TOOLS, TOOLS, AskFirst, answer_model, waiting_chain)

    kind, url, ns, timeout, action, arg, mode = sys.argv[1:8]
    timeout = float(timeout)

    def store():
        if kind == "redis":
            if mode == "async":
                import redis.asyncio
                from langhooks.integrations.redis import AsyncRedisRunStore
                return AsyncRedisRunStore(
                    redis.asyncio.Redis.from_url(url), prefix=ns,
                    claim_timeout=timeout)
            import redis
            from langhooks.integrations.redis import RedisRunStore
            return RedisRunStore(
                redis.Redis.from_url(url), prefix=ns, claim_timeout=timeout)
        from langhooks.integrations import postgres
        if mode == "async":
            return postgres.AsyncPostgresRunStore(
                url, schema=ns, claim_timeout=timeout)
        return postgres.PostgresRunStore(url, schema=ns, claim_timeout=timeout)

    async def main():
        runs = store()
        async def done(value):
            return await value if mode == "async" else value
        if kind == "postgres":
            await done(runs.setup())
        if action == "save":
            run_id = await done(runs.save(waiting_chain(Path(arg), calls=2),
                                          metadata={"from": "child"}))
            print(run_id, flush=True)
            return
        print("ready", flush=True)
        sys.stdin.readline()
        tools = ASYNC_TOOLS if mode == "async" else TOOLS
        chain = await done(runs.load(arg, answer_model(), tools=tools))
        waiting = chain.pending_tool_calls
        try:
            result = await done(runs.resume(
                arg, [Decision.approve()] * len(waiting), answer_model(),
                tools=tools, callbacks=[AskFirst()]))
            print(result.status, flush=True)
        except LangHooksError as error:
            print(error.type, flush=True)

    asyncio.run(main())
    """
)


def worker(
    where: Place,
    action: str,
    arg: str,
    *,
    claim_timeout: float = 60.0,
    mode: str = "sync",
    hang: str | None = None,
) -> subprocess.Popen[str]:
    """A worker process on ``where`` (see ``WORKER``)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if hang is not None:
        env["LANGHOOKS_TEST_HANG"] = hang
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WORKER,
            *where.worker_args(claim_timeout),
            action,
            arg,
            mode,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def finish(process: subprocess.Popen[str]) -> str:
    """What a worker printed last, once it exited with 0."""
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0, out
    return out.split()[-1]


class TestProcesses:
    """Workers in other processes share a Redis or PostgreSQL store."""

    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_save_in_one_resume_in_another(
        self, shared: Place, log: Path, mode: str
    ) -> None:
        """A run saved by one process is listed and resumed by another."""
        run_id = finish(worker(shared, "save", str(log), mode=mode))
        store = shared.make()
        (row,) = store.pending(metadata={"from": "child"})
        assert row.run_id == run_id
        assert resume_all(store, run_id).status == "ok"
        assert starts(log) == ["call_1", "call_2"]

    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_two_processes_race(self, shared: Place, log: Path, mode: str) -> None:
        """Two processes resume one run at the same moment: one runs the calls,
        the other gets "conflict" and runs nothing."""
        run_id = shared.make().save(waiting_chain(log, calls=2, seconds=0.2))
        workers = [worker(shared, "resume", run_id, mode=mode) for _ in range(2)]
        for process in workers:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        for process in workers:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        assert sorted(finish(p) for p in workers) == ["conflict", "ok"]
        assert starts(log) == ["call_1", "call_2"]


class TestCrash:
    """A worker killed inside a tool: its call is never started again."""

    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_sigkill_inside_a_tool(self, shared: Place, log: Path, mode: str) -> None:
        """A worker SIGKILLed inside call_2: until claim_timeout a resume is a
        conflict; after it, a resume reuses call_1's outcome, gives call_2 an
        error result saying its worker stopped, and the run completes; nothing
        was started twice."""
        claim_timeout = 1.0
        run_id = shared.make().save(waiting_chain(log, calls=3))
        process = worker(
            shared,
            "resume",
            run_id,
            claim_timeout=claim_timeout,
            mode=mode,
            hang="call_2",
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
        wait_for(lambda: "hang call_2" in log_lines(log))
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        store = shared.make(claim_timeout=claim_timeout)
        assert outcome(store, run_id) == "conflict"  # its claim has not timed out
        result: list[RunResult] = []

        def taken_over() -> bool:
            try:
                result.append(resume_all(store, run_id))
            except lh.LangHooksError as error:
                if error.type != "conflict":
                    raise
                return False
            return True

        wait_for(taken_over)
        (resumed,) = result
        assert resumed.status == "ok"
        assert resumed.chain.messages[-1].text == ANSWER
        results = tool_results(resumed)
        assert results["call_1"].text == "booked call_1"
        assert results["call_2"].is_error
        assert "worker running this tool call stopped" in results["call_2"].text
        assert results["call_3"].text == "booked call_3"
        assert starts(log) == ["call_1", "call_2", "call_3"]


class Proxy:
    """A TCP proxy (on 127.0.0.1) to a server, which a test can cut and restore."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = self._listen(0)
        self.port: int = self._listener.getsockname()[1]

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return listener

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                # A cut between accept() and here closed the listener: these two
                # would outlive it unclosed, so they go at once.
                kept = listener.fileno() != -1
                if kept:
                    self._sockets += [client, upstream]
            if not kept:
                client.close()
                upstream.close()
                return
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink), daemon=True
                ).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for side in (source, sink):
            with contextlib.suppress(OSError):
                side.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Refuse new connections and break the open ones."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() thread
        with self._lock:
            self._listener.close()
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def restore(self) -> None:
        """Accept connections again, on the same port."""
        self._listener = self._listen(self.port)

    def close(self) -> None:
        self.cut()


class CutAfterTool(lh.ChainCallbackHandler):
    """Makes the store unreachable once a tool call (``after``, or any) has
    returned and its outcome was saved."""

    def __init__(self, proxy: Proxy, after: str | None = None) -> None:
        self._proxy = proxy
        self._after = after

    def _done(self, call: lh.ToolCall) -> None:
        if self._after in (None, call.call_id):
            self._proxy.cut()

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: lh.ToolCall, result: lh.ToolResult
    ) -> None:
        self._done(call)

    @override
    def on_tool_execution_failed(
        self, chain: LLMChain, call: lh.ToolCall, result: lh.ToolResult
    ) -> None:
        self._done(call)


class Unprintable(Exception):
    """An exception whose text cannot be had."""

    @override
    def __str__(self) -> str:
        raise RuntimeError("no text")


def varied(log: Path, *, asynchronous: bool = False) -> lh.Tool:
    """A tool "act" whose ``arguments["do"]`` says what it returns or raises."""

    def act(arguments: Any, context: lh.ToolContext) -> Any:
        with log.open("a") as file:
            file.write(f"start {context.call.call_id}\n")
        do = arguments["do"]
        if do == "result":
            return lh.ToolResult(
                tool_call_id=context.call.call_id,
                name="act",
                content="structured",
                processed_content={"seats": 4},
            )
        if do == "unprintable":
            raise Unprintable
        if do == "number":
            return 42
        return "text"

    async def aact(arguments: Any, context: lh.ToolContext) -> Any:
        return act(arguments, context)

    return lh.Tool("act", aact if asynchronous else act)


VARIED = ("result", "unprintable", "number", "text")


def varied_chain(tool: lh.Tool) -> LLMChain:
    """A run waiting on one call of ``varied`` per kind of outcome."""
    calls = [
        lh.ToolCall(call_id=f"call_{n}", name="act", arguments={"do": do})
        for n, do in enumerate(VARIED, 1)
    ]
    model = ScriptedChatModel([ScriptedTurn(tool_calls=calls)])
    chain = LLMChain(model, tools=[tool], callbacks=[AskFirst()])
    result = chain.add_message(lh.Message.user("go")).run()
    assert result.status == "interrupted"
    return result.chain


def assert_reused(result: RunResult, log: Path) -> None:
    """The retried run reused every outcome: nothing started twice."""
    assert result.status == "ok"
    results = tool_results(result)
    assert results["call_1"].text == "structured"
    assert results["call_1"].processed_content == {"seats": 4}
    assert "Unprintable: <unprintable>" in results["call_2"].text
    assert results["call_3"].is_error
    assert results["call_4"].text == "text"
    assert starts(log) == ["call_1", "call_2", "call_3", "call_4"]


class TestStoreUnreachable:
    """#21.1: a resume that raises after its tool ran is retried without rerunning
    the tool."""

    def test_final_save_fails(self, shared: Place, log: Path) -> None:
        """The store goes away between the tool and the final save: the resume
        raises; a retry (a conflict until claim_timeout has passed) completes
        with the tool's saved outcome, and the tool ran once."""
        claim_timeout = 1.0
        proxy = Proxy(*host_port(shared.url))
        try:
            run_id = shared.make().save(waiting_chain(log))
            through = shared.make(claim_timeout=claim_timeout, port=proxy.port)
            with pytest.raises((redis.ConnectionError, psycopg.OperationalError)):
                through.resume(
                    run_id,
                    [Decision.approve()],
                    answer_model(),
                    tools=TOOLS,
                    callbacks=[AskFirst(), CutAfterTool(proxy)],
                )
            assert starts(log) == ["call_1"]
            proxy.restore()
            store = shared.make(claim_timeout=claim_timeout)
            result: list[RunResult] = []

            def retried() -> bool:
                try:
                    result.append(resume_all(store, run_id))
                except lh.LangHooksError:
                    return False
                return True

            wait_for(retried)
            assert result[0].status == "ok"
            assert tool_results(result[0])["call_1"].text == "booked call_1"
            assert starts(log) == ["call_1"]
        finally:
            proxy.close()

    def test_every_kind_of_outcome_is_reused(self, shared: Place, log: Path) -> None:
        """Returned results, texts, failures and a broken exception text are all
        kept when the store goes away after the last call, and reused by the
        retry."""
        proxy = Proxy(*host_port(shared.url))
        tool = varied(log)
        approve = [Decision.approve()] * len(VARIED)
        try:
            run_id = shared.make().save(varied_chain(tool))
            through = shared.make(claim_timeout=0.5, port=proxy.port)
            with pytest.raises((redis.ConnectionError, psycopg.OperationalError)):
                through.resume(
                    run_id,
                    approve,
                    answer_model(),
                    tools=[tool],
                    callbacks=[CutAfterTool(proxy, after="call_4")],
                )
            store = shared.make(claim_timeout=0.5)
            result: list[RunResult] = []

            def retried() -> bool:
                with contextlib.suppress(lh.LangHooksError):
                    result.append(
                        store.resume(run_id, approve, answer_model(), tools=[tool])
                    )
                return bool(result)

            wait_for(retried)
            assert_reused(result[0], log)
        finally:
            proxy.close()

    async def test_async_every_kind_of_outcome_is_reused(
        self, ashared: AsyncPlace, log: Path
    ) -> None:
        """The same through the async stores and an async tool."""
        proxy = Proxy(*host_port(ashared.url))
        tool = varied(log, asynchronous=True)
        approve = [Decision.approve()] * len(VARIED)
        try:
            run_id = await (await ashared.make()).save(varied_chain(tool))
            through = await ashared.make(claim_timeout=0.5, port=proxy.port)
            with pytest.raises((redis.ConnectionError, psycopg.OperationalError)):
                await through.resume(
                    run_id,
                    approve,
                    answer_model(),
                    tools=[tool],
                    callbacks=[CutAfterTool(proxy, after="call_4")],
                )
            store = await ashared.make(claim_timeout=0.5)
            while True:
                try:
                    result = await store.resume(
                        run_id, approve, answer_model(), tools=[tool]
                    )
                    break
                except lh.LangHooksError:
                    await asyncio.sleep(0.05)
            assert_reused(result, log)
        finally:
            proxy.close()


# --- the async twins ---------------------------------------------------------


class AsyncPlace:
    """Async stores on one place (``make()`` gives a new client each time)."""

    def __init__(self, here: Place) -> None:
        self.kind = here.kind
        self.url = here.url
        self._here = here
        self._closers: list[Callable[[], Any]] = []

    async def make(
        self, *, claim_timeout: float = 60.0, port: int | None = None
    ) -> AsyncRunStore:
        """An async store on this place (through ``port`` when given)."""
        if self.kind == "memory":
            # The frontend apps' view of a MemoryRunStore for async agents.
            memory = self._here.make(claim_timeout=claim_timeout)
            assert isinstance(memory, MemoryRunStore)
            return awaited_memory(memory)
        if self.kind == "redis":
            client = redis.asyncio.Redis.from_url(self._here.url)
            if port is not None:
                db = client.connection_pool.connection_kwargs.get("db", 0)
                client = redis.asyncio.Redis(host="127.0.0.1", port=port, db=db)
            self._closers.append(client.aclose)
            return AsyncRedisRunStore(
                client, prefix=self._here.namespace, claim_timeout=claim_timeout
            )
        url = self._here.url if port is None else _with_port(self._here.url, port)
        store = AsyncPostgresRunStore(
            url, schema=self._here.namespace, claim_timeout=claim_timeout
        )
        await store.setup()
        self._closers.append(store.close)
        return store

    async def close(self) -> None:
        for close in self._closers:
            await close()


@pytest.fixture(params=["memory", "redis", "postgres"])
async def awhere(request: pytest.FixtureRequest) -> AsyncIterator[AsyncPlace]:
    """Each async store kind in turn (memory: ``awaited_memory``)."""
    with place(request.param) as here:
        there = AsyncPlace(here)
        try:
            yield there
        finally:
            await there.close()


@pytest.fixture(params=["redis", "postgres"])
async def ashared(request: pytest.FixtureRequest) -> AsyncIterator[AsyncPlace]:
    """The async stores that outlive a process."""
    with place(request.param) as here:
        there = AsyncPlace(here)
        try:
            yield there
        finally:
            await there.close()


async def aresume_all(store: AsyncRunStore, run_id: str) -> RunResult:
    """Approve every waiting call of ``run_id`` (async tools)."""
    chain = await store.load(run_id, answer_model(), tools=ASYNC_TOOLS)
    return await store.resume(
        run_id,
        [Decision.approve()] * len(chain.pending_tool_calls),
        answer_model(),
        tools=ASYNC_TOOLS,
        callbacks=[AskFirst()],
    )


async def aoutcome(store: AsyncRunStore, run_id: str) -> str:
    """As ``outcome``, for an async store."""
    try:
        return (await aresume_all(store, run_id)).status
    except lh.LangHooksError as error:
        return error.type


class TestAsyncContract:
    """The async stores keep the same promises."""

    async def test_protocol_and_round_trip(self, awhere: AsyncPlace, log: Path) -> None:
        """An async store is an AsyncRunStore; save, load and pending round-trip."""
        store = await awhere.make()
        assert isinstance(store, AsyncRunStore)
        chain = waiting_chain(log, calls=2)
        run_id = await store.save(chain, metadata={"tenant": "a"})
        loaded = await (await awhere.make()).load(run_id, answer_model(), tools=TOOLS)
        assert loaded.messages == chain.messages
        (row,) = await store.pending(metadata={"tenant": "a"})
        assert (row.run_id, len(row.calls)) == (run_id, 2)
        assert await store.pending(metadata={"tenant": "b"}) == []
        assert await store.waiting(run_id) == row  # type: ignore[attr-defined]
        assert await store.waiting("nope") is None  # type: ignore[attr-defined]
        newer = await store.save(waiting_chain(log), metadata={"tenant": "a"})
        resumed = await store.resume(  # a sync tool, through the async store
            newer, [Decision.approve()], answer_model(), tools=TOOLS
        )
        assert resumed.status == "ok"
        newer = await store.save(waiting_chain(log), metadata={"tenant": "a"})
        (first,) = await store.pending(metadata={"tenant": "a"}, limit=1)
        assert first.run_id == newer
        done = LLMChain(answer_model()).add_message(lh.Message.user("hi")).run().chain
        await store.save(done, metadata={"tenant": "a"})
        assert len(await store.pending(metadata={"tenant": "a"})) == 2
        await store.delete(newer)
        (only,) = await store.pending()
        assert only.run_id == run_id

    async def test_concurrent_resumes(self, awhere: AsyncPlace, log: Path) -> None:
        """Four concurrent resumes of one run: one runs the calls, three get
        "conflict"; a repeated resume after it is a conflict too."""
        run_id = await (await awhere.make()).save(waiting_chain(log, seconds=0.2))
        stores = [await awhere.make() for _ in range(4)]
        outcomes = await asyncio.gather(*(aoutcome(s, run_id) for s in stores))
        assert sorted(outcomes) == ["conflict"] * 3 + ["ok"]
        assert await aoutcome(stores[0], run_id) == "conflict"
        assert starts(log) == ["call_1"]

    async def test_slow_tool_keeps_its_claim(
        self, awhere: AsyncPlace, log: Path
    ) -> None:
        """#21.1 for the async stores: the heartbeat task keeps the claim while a
        slow tool runs past claim_timeout; a second resume is a conflict."""
        claim_timeout = 0.5
        store = await awhere.make(claim_timeout=claim_timeout)
        run_id = await store.save(waiting_chain(log, seconds=4 * claim_timeout))
        first = asyncio.create_task(aoutcome(store, run_id))
        while starts(log) != ["call_1"]:
            await asyncio.sleep(0.02)
        await asyncio.sleep(2 * claim_timeout)
        other = await awhere.make(claim_timeout=claim_timeout)
        assert await aoutcome(other, run_id) == "conflict"
        assert await first == "ok"
        assert starts(log) == ["call_1"]

    async def test_unknown_expired_deleted(self, awhere: AsyncPlace, log: Path) -> None:
        """Unknown, expired and deleted runs are "invalid_request"; delete says
        whether the run was there."""
        store = await awhere.make()
        with pytest.raises(lh.LangHooksError, match="no saved run"):
            await store.load("nope", answer_model())
        assert await aoutcome(store, "nope") == "invalid_request"
        run_id = await store.save(waiting_chain(log), expires_in=0.3)
        await asyncio.sleep(0.5)
        assert await store.pending() == []
        assert await aoutcome(store, run_id) == "invalid_request"
        run_id = await store.save(waiting_chain(log))
        assert await store.delete(run_id) is True
        assert await store.delete(run_id) is False
        assert starts(log) == []

    async def test_interrupt_again_and_mismatch(
        self, awhere: AsyncPlace, log: Path
    ) -> None:
        """Mismatched decisions leave the run waiting; a resume that interrupts
        again puts the run back in the inbox."""
        store = await awhere.make()
        run_id = await store.save(waiting_chain(log))
        with pytest.raises(ValueError, match="do not wait"):
            await store.resume(
                run_id, {"x": Decision.approve()}, answer_model(), tools=ASYNC_TOOLS
            )
        more = lh.ToolCall(call_id="call_9", name="book", arguments={})
        result = await store.resume(
            run_id,
            {"call_1": Decision.approve()},
            ScriptedChatModel([ScriptedTurn(tool_calls=[more])]),
            tools=ASYNC_TOOLS,
            callbacks=[AskFirst()],
        )
        assert result.status == "interrupted"
        (row,) = await store.pending()
        assert [call.call_id for call in row.calls] == ["call_9"]
        assert await aoutcome(store, run_id) == "ok"
        assert starts(log) == ["call_1", "call_9"]

    async def test_deleted_while_resumed(
        self, awhere: AsyncPlace, log: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """As for the sync stores: the heartbeat task sees the claim gone and the
        final save is a conflict; the chain returned by a finished resume runs its
        tools without the store."""
        store = await awhere.make(claim_timeout=0.3)
        box: list[str] = []

        async def act(arguments: Any, context: lh.ToolContext) -> str:
            with log.open("a") as file:
                file.write(f"start {context.call.call_id}\n")
            if box:
                await (await awhere.make()).delete(box[0])
                while "taken over" not in caplog.text:
                    await asyncio.sleep(0.01)
            return "done"

        tool = lh.Tool("act", act)
        calls = [lh.ToolCall(call_id="call_1", name="act", arguments={})]
        model = ScriptedChatModel([ScriptedTurn(tool_calls=calls)])
        chain = LLMChain(model, tools=[tool], callbacks=[AskFirst()])
        waiting = chain.add_message(lh.Message.user("go")).run().chain
        run_id = await store.save(waiting)
        more = lh.ToolCall(call_id="call_2", name="act", arguments={})
        resumed = await store.resume(
            run_id,
            [Decision.approve()],
            ScriptedChatModel(
                [ScriptedTurn(tool_calls=[more]), ScriptedTurn(text="ok")]
            ),
            tools=[tool],
            continue_run=False,
        )
        assert (await resumed.chain.arun()).status == "ok"
        assert starts(log) == ["call_1", "call_2"]
        box.append(await store.save(waiting))
        with pytest.raises(lh.LangHooksError, match="taken over") as caught:
            await store.resume(
                box[0], [Decision.approve()], answer_model(), tools=[tool]
            )
        assert caught.value.type == "conflict"

    async def test_sync_and_async_share_runs(
        self, awhere: AsyncPlace, log: Path
    ) -> None:
        """A run saved by an async store is resumed by the sync one (same keys,
        same tables)."""
        run_id = await (await awhere.make()).save(waiting_chain(log))
        here = awhere._here  # the place both twins use
        assert resume_all(here.make(), run_id).status == "ok"
        assert starts(log) == ["call_1"]

    async def test_saves_write_what_changed(
        self, awhere: AsyncPlace, log: Path
    ) -> None:
        """Async saves that append, and that find the run changed by another
        store object, load as the chain saved last."""
        chain = waiting_chain(log)
        one, two = await awhere.make(), await awhere.make()
        run_id = await one.save(chain)
        longer = chain.add_messages([lh.Message.user("more")])
        for store, saved in ((one, longer), (two, chain), (one, longer)):
            await store.save(saved)
            loaded = await (await awhere.make()).load(
                run_id, answer_model(), tools=TOOLS
            )
            assert loaded.messages == saved.messages


# --- what only one store does ------------------------------------------------


class TestRedisScripts:
    """The scripts a save and a resume's settle send in a pipeline (as
    EVALSHA) are loaded again when the server forgot them."""

    def test_a_flushed_script_is_loaded_again(self, log: Path) -> None:
        with place("redis") as here:
            store = here.make()
            chain = waiting_chain(log)
            run_id = store.save(chain)
            client = redis.Redis.from_url(here.url)
            client.script_flush()
            longer = chain.add_messages([lh.Message.user("more")])
            store.save(longer)  # appends: EVALSHA, NOSCRIPT, loaded, again
            loaded = here.make().load(run_id, answer_model(), tools=TOOLS)
            assert loaded.messages == longer.messages
            store.save(chain)
            client.script_flush()
            assert resume_all(store, run_id).status == "ok"  # settle: the same
            assert starts(log) == ["call_1"]
            client.close()

    async def test_async_a_flushed_script_is_loaded_again(self, log: Path) -> None:
        with place("redis") as here:
            there = AsyncPlace(here)
            try:
                store = await there.make()
                chain = waiting_chain(log)
                run_id = await store.save(chain)
                client = redis.Redis.from_url(here.url)
                client.script_flush()
                await store.save(chain.add_messages([lh.Message.user("more")]))
                await store.save(chain)
                client.script_flush()
                assert (await aresume_all(store, run_id)).status == "ok"
                client.close()
            finally:
                await there.close()


class TestEarlierLayout:
    """Runs an earlier release saved whole (one state text) still load and
    resume; their next save writes the log."""

    @pytest.mark.parametrize("kind", ["redis", "postgres"])
    def test_a_whole_state_loads_and_resumes(self, kind: str, log: Path) -> None:
        """A run in the first release's layout (PostgreSQL: in a schema at
        migration 1, which setup() then brings up to date) loads, resumes, and
        is saved again."""
        chain = waiting_chain(log, calls=1)
        assert chain.invocation is not None
        run_id = chain.invocation.id
        state = json.dumps(chain.to_state())
        calls = json.dumps([codec.encode(c) for c in chain.pending_tool_calls])
        with place(kind) as here:
            if kind == "redis":
                client = redis.Redis.from_url(here.url)
                client.hset(
                    f"{here.namespace}state:{run_id}",
                    mapping={
                        "state": state,
                        "calls": calls,
                        "meta": "{}",
                        "saved": 1,
                        "expires": 4_102_444_800_000,
                        "status": "waiting",
                        "token": "",
                        "beat": 0,
                        "call:call_1": "",  # a resume's record, started
                    },
                )
            else:
                sql = Sql(here.namespace)
                with psycopg.connect(here.url, autocommit=True) as conn:
                    conn.execute(sql.create_schema)
                    conn.execute(sql.create_versions)
                    version, statements = sql.migrations[0]
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute(sql.record_version, (version,))
                    conn.execute(
                        f'INSERT INTO "{here.namespace}".runs (run_id, status, '
                        f"state, calls, saved_at) VALUES (%s, 'waiting', %s, "
                        f"%s::jsonb, now())",
                        (run_id, state, calls),
                    )
            store = here.make()  # PostgreSQL: setup() migrates
            loaded = store.load(run_id, answer_model(), tools=TOOLS)
            assert loaded.messages == chain.messages
            assert len(loaded.pending_tool_calls) == 1
            result = resume_all(here.make(), run_id)
            assert result.status == "ok"
            if kind == "redis":
                # The record is this call's (its worker stopped) and is gone after.
                assert "stopped" in str(result.chain.messages[-2].tool_results)
                found = client.hkeys(f"{here.namespace}state:{run_id}")
                names = [f.decode() if isinstance(f, bytes) else f for f in found]
                assert not [name for name in names if name.startswith("call:")]
                client.close()
            again = here.make().load(run_id, answer_model(), tools=TOOLS)
            assert again.messages == result.chain.messages
            store.save(loaded)  # whole: its next save writes the log
            last = here.make().load(run_id, answer_model(), tools=TOOLS)
            assert last.messages == chain.messages


class TestPostgres:
    """PostgresRunStore's schema, connections and errors."""

    def test_a_turn_writes_its_messages_only(self, log: Path) -> None:
        """A resume's end and a save that add messages leave the rows of the
        earlier ones as they were (the same row versions; the resume replaces
        the waiting call's stand-in result, the last message), and the run's
        head small."""
        chain = waiting_chain(log, calls=1)
        with place("postgres") as here:
            store = here.make()
            run_id = store.save(chain)
            rows = f'SELECT position, xmin::text FROM "{here.namespace}".run_messages'
            with psycopg.connect(here.url, autocommit=True) as conn:
                before: dict[int, str] = dict(conn.execute(rows).fetchall())
                result = resume_all(store, run_id)
                ended: dict[int, str] = dict(conn.execute(rows).fetchall())
                assert len(ended) == len(result.chain.messages) > len(before)
                kept = {p: v for p, v in before.items() if p < len(before) - 1}
                assert {p: ended[p] for p in kept} == kept
                assert ended[len(before) - 1] != before[len(before) - 1]
                store.save(result.chain.add_messages([lh.Message.user("more")]))
                after: dict[int, str] = dict(conn.execute(rows).fetchall())
                assert len(after) == len(ended) + 1
                assert {p: after[p] for p in ended} == ended
                head = conn.execute(
                    f'SELECT length(head), state FROM "{here.namespace}".runs'
                ).fetchone()
            assert head is not None
            assert head[0] < 2000
            assert head[1] is None

    def test_setup_is_idempotent_and_concurrent(self) -> None:
        """setup() from four threads at once (four sessions) and again later: one
        set of tables, one version row per migration, each call answers the
        version."""
        with place("postgres") as here:
            stores = [
                PostgresRunStore(here.url, schema=here.namespace) for _ in range(4)
            ]
            versions: list[int] = []
            barrier = threading.Barrier(4)

            def setup(store: PostgresRunStore) -> None:
                barrier.wait()
                versions.append(store.setup())

            threads = [threading.Thread(target=setup, args=(s,)) for s in stores]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert versions == [SCHEMA_VERSION] * 4
            assert stores[0].setup() == SCHEMA_VERSION
            with psycopg.connect(here.url) as conn:
                rows = conn.execute(
                    f'SELECT version FROM "{here.namespace}".schema_migrations '
                    f"ORDER BY version"
                ).fetchall()
            assert rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
            for store in stores:
                store.close()

    def test_setup_in_two_processes(self) -> None:
        """Two processes running setup() at once both succeed."""
        with place("postgres") as here:
            code = (
                "import sys; from langhooks.integrations.postgres import "
                "PostgresRunStore as S; print(S(sys.argv[1], schema=sys.argv[2])"
                ".setup())"
            )
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            processes = [
                subprocess.Popen(
                    [sys.executable, "-c", code, here.url, here.namespace],
                    stdout=subprocess.PIPE,
                    text=True,
                    env=env,
                )
                for _ in range(2)
            ]
            assert [finish(p) for p in processes] == [str(SCHEMA_VERSION)] * 2

    def test_not_set_up_and_too_new(self) -> None:
        """Before setup() every method says to call it; a schema newer than this
        langhooks is refused."""
        with place("postgres") as here:
            store = PostgresRunStore(here.url, schema=here.namespace)
            with pytest.raises(lh.LangHooksError, match=r"call setup\(\)"):
                store.pending()
            store.setup()
            with psycopg.connect(here.url, autocommit=True) as conn:
                conn.execute(
                    f'INSERT INTO "{here.namespace}".schema_migrations VALUES (99)'
                )
            with pytest.raises(lh.LangHooksError, match="newer than this"):
                store.setup()
            store.close()

    async def test_async_not_set_up_and_too_new(self) -> None:
        """The async twin says the same."""
        with place("postgres") as here:
            store = AsyncPostgresRunStore(here.url, schema=here.namespace)
            with pytest.raises(lh.LangHooksError, match=r"call setup\(\)"):
                await store.pending()
            await store.setup()
            with psycopg.connect(here.url, autocommit=True) as conn:
                conn.execute(
                    f'INSERT INTO "{here.namespace}".schema_migrations VALUES (99)'
                )
            with pytest.raises(lh.LangHooksError, match="newer than this"):
                await store.setup()
            await store.close()

    def test_connection_and_pool(self, log: Path) -> None:
        """A psycopg connection or a pool the caller owns works as a conninfo
        does, and stays open after close()."""
        import psycopg_pool

        with place("postgres") as here:
            with psycopg.connect(
                here.url, autocommit=True, prepare_threshold=None
            ) as conn:
                store = PostgresRunStore(conn, schema=here.namespace)
                store.setup()
                run_id = store.save(waiting_chain(log))
                with PostgresRunStore(conn, schema=here.namespace) as same:
                    assert [r.run_id for r in same.pending()] == [run_id]
                assert not conn.closed
            with psycopg.connect(here.url) as plain:  # not autocommit: transactions
                store = PostgresRunStore(plain, schema=here.namespace)
                assert store.waiting(run_id) is not None
            with psycopg_pool.ConnectionPool(
                here.url, kwargs={"autocommit": True}, open=True
            ) as pool:
                store = PostgresRunStore(pool, schema=here.namespace)
                assert resume_all(store, run_id).status == "ok"
                store.close()
                assert not pool.closed
            assert starts(log) == ["call_1"]

    async def test_async_connection_and_pool(self, log: Path) -> None:
        """An AsyncConnection or an AsyncConnectionPool works too."""
        import psycopg_pool

        with place("postgres") as here:
            async with await psycopg.AsyncConnection.connect(
                here.url, autocommit=True
            ) as conn:
                store = AsyncPostgresRunStore(conn, schema=here.namespace)
                await store.setup()
                run_id = await store.save(waiting_chain(log))
            async with await psycopg.AsyncConnection.connect(here.url) as plain:
                store = AsyncPostgresRunStore(plain, schema=here.namespace)
                assert await store.waiting(run_id) is not None
            async with psycopg_pool.AsyncConnectionPool(
                here.url, kwargs={"autocommit": True}, open=False
            ) as pool:
                async with AsyncPostgresRunStore(pool, schema=here.namespace) as st:
                    assert await aoutcome(st, run_id) == "ok"
                assert not pool.closed
            assert starts(log) == ["call_1"]

    async def test_async_purge(self, log: Path) -> None:
        """The async purge deletes expired runs."""
        with place("postgres") as here:
            async with AsyncPostgresRunStore(here.url, schema=here.namespace) as st:
                await st.setup()
                await st.save(waiting_chain(log), expires_in=0.2)
                await asyncio.sleep(0.3)
                assert await st.purge() == 1

    def test_bad_arguments(self) -> None:
        """A source that is not a conninfo, connection or pool, and a schema that
        is not an identifier, are refused."""
        with pytest.raises(TypeError, match="conninfo"):
            PostgresRunStore(42)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="conninfo"):
            AsyncPostgresRunStore(42)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="identifier"):
            PostgresRunStore("postgresql://x", schema='a"; DROP')
        with pytest.raises(ValueError, match="claim_timeout"):
            PostgresRunStore("postgresql://x", claim_timeout=0)
        with pytest.raises(TypeError, match="claim_timeout"):
            PostgresRunStore("postgresql://x", claim_timeout="1")  # type: ignore[arg-type]

    def test_inbox_is_an_index_scan_and_purge(self, log: Path) -> None:
        """The inbox query, filtered or not, reads an index of waiting runs; purge
        deletes expired runs."""
        with place("postgres") as here:
            store = here.make()
            store.save(waiting_chain(log), expires_in=0.2)
            s = f'"{here.namespace}"'
            with psycopg.connect(here.url, autocommit=True) as conn:
                conn.execute("SET enable_seqscan = off")  # a tiny table: force the plan
                for where_clause in ("", 'AND metadata @> \'{"tenant": "a"}\''):
                    plan = conn.execute(
                        f"EXPLAIN SELECT run_id FROM {s}.runs WHERE status = "
                        f"'waiting' {where_clause} ORDER BY saved_at DESC, run_id "
                        f"DESC LIMIT 100"
                    ).fetchall()
                    text = "\n".join(row[0] for row in plan)
                    assert "runs_waiting_" in text, text
            time.sleep(0.3)
            assert isinstance(store, PostgresRunStore)
            assert store.purge() == 1
            assert store.purge() == 0


class TestRedis:
    """RedisRunStore's keys and options."""

    def test_lock_timeout_is_the_claim_timeout(self, log: Path) -> None:
        """lock_timeout, the option's earlier name, still works; the run's hash
        expires after expire_after."""
        with place("redis") as here:
            client = redis.Redis.from_url(here.url)
            store = RedisRunStore(
                client, prefix=here.namespace, lock_timeout=5, expire_after=100
            )
            run_id = store.save(waiting_chain(log))
            assert 0 < client.ttl(f"{here.namespace}state:{run_id}") <= 100
            assert resume_all(store, run_id).status == "ok"
            client.close()

    def test_stale_index_entries_are_dropped(self, log: Path) -> None:
        """A run that expired out of Redis leaves the inbox indexes on the next
        pending()."""
        with place("redis") as here:
            client = redis.Redis.from_url(here.url, decode_responses=True)
            store = RedisRunStore(client, prefix=here.namespace)
            kept = store.save(waiting_chain(log), metadata={"tenant": "a"})
            gone = store.save(waiting_chain(log), metadata={"tenant": "a"})
            client.delete(f"{here.namespace}state:{gone}")
            assert [r.run_id for r in store.pending(metadata={"tenant": "a"})] == [kept]
            index = f'{here.namespace}waiting:tenant="a"'
            assert client.zrange(index, 0, -1) == [kept]
            client.close()

    async def test_claimed_says_whether_a_resume_holds_the_run(self, log: Path) -> None:
        """claimed(run_id), sync and async: False while the run waits or when it is
        unknown, True while its status is claimed."""
        with place("redis") as here:
            client = redis.Redis.from_url(here.url)
            aclient = redis.asyncio.Redis.from_url(here.url)
            store = RedisRunStore(client, prefix=here.namespace)
            astore = AsyncRedisRunStore(aclient, prefix=here.namespace)
            run_id = store.save(waiting_chain(log))
            assert not store.claimed(run_id)
            assert not await astore.claimed(run_id)
            assert not store.claimed("unknown")
            assert not await astore.claimed("unknown")
            client.hset(f"{here.namespace}state:{run_id}", "status", "claimed")
            assert store.claimed(run_id)
            assert await astore.claimed(run_id)
            client.close()
            await aclient.aclose()

    async def test_async_client_checks(self) -> None:
        """Each twin takes its own kind of client."""
        with pytest.raises(TypeError, match=r"redis\.asyncio\.Redis"):
            AsyncRedisRunStore(redis.Redis.from_url(REDIS_URL))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="synchronous"):
            RedisRunStore(redis.asyncio.Redis.from_url(REDIS_URL))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="prefix"):
            RedisRunStore(redis.Redis.from_url(REDIS_URL), prefix=1)  # type: ignore[arg-type]


class TestGuide:
    """docs/guide/persistence.md: its inbox server works as shown."""

    def test_inbox_server_on_postgres(self) -> None:
        """The inbox block runs against PostgreSQL (in a schema of its own): a run
        filed under its tenant is listed, approved once, and leaves the inbox."""
        import re

        page = (ROOT / "docs" / "guide" / "persistence.md").read_text()
        (code,) = re.findall(r"```python\n(# inbox\.py\n.*?)```", page, re.DOTALL)
        with place("postgres") as here:
            source = code.replace(
                '"postgresql://postgres@127.0.0.1:5432/test", schema="inbox"',
                f'"{here.url}", schema="{here.namespace}"',
            )
            assert source != code
            exec(compile(source, "persistence.md inbox.py", "exec"), {})
