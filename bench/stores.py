"""Benchmark: the run stores against the round trips they cannot avoid.

Run by hand (not a test), with PostgreSQL on 127.0.0.1:5432 and Redis on
127.0.0.1:6379::

    python bench/stores.py [--rounds 15] [--cycles 20] [--runs 100000]
    python bench/stores.py --messages 10,100,1000 [--rounds 15]

1. **save + load + resume** of a 50-message run (approve its one waiting call; the
   run continues to a scripted answer), on ``PostgresRunStore`` and
   ``RedisRunStore``, as a ratio to the same number of plain round trips carrying
   the same data: ``INSERT``/``SELECT``/``UPDATE`` with psycopg, ``SET``/``GET``
   with redis-py (one per statement, script or pipeline the store sends: 6 on
   each). Rounds of the store and of the floor are interleaved; the ratio is
   the median of the per-round ratios (wall clock: this is I/O). Goal: <= 1.5x.
   A second floor adds the run's own work done plainly, as a caller keeping JSON
   state would do it (``to_state`` + ``json.dumps`` to save, ``json.loads`` +
   ``from_state`` to load and to resume, the decision and the model's answer,
   the end encoded): the store's cost over what the run costs anyway.
2. **pending()** over ``--runs`` stored waiting runs with a metadata filter
   (``{"tenant": "t7"}``: one run in 100), 1,000 calls: p50 and p99 in ms, and
   PostgreSQL's plan for the query. Goal: an index scan, p99 <= 20 ms.
3. **--messages N,M,...**: a turn's save at each history length. A run of N
   messages is saved, then the same run with 2 more messages (a user's question and
   the answer): the bytes that save sends to the server (counted by a TCP proxy in
   this process, client to server) and its time (median of ``--rounds`` rounds,
   each ``--cycles`` saves, the lengths interleaved in every round; the earlier
   save of the N messages is not timed), and the time of ``load``. Goal: bytes in
   proportion to the 2 new messages (<= 2 KB plus the mutable part at any N), save
   time at 1,000 <= 1.5x at 10. With ``--messages`` only this part runs.

Every key and schema it makes is its own and removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import psycopg
import redis
from typing_extensions import override

import langhooks as lh
from langhooks import codec
from langhooks.chain import Decision, LLMChain, Tool
from langhooks.integrations.postgres import PostgresRunStore
from langhooks.integrations.redis import RedisRunStore
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore, RunStore

PG = "postgresql://postgres@127.0.0.1:5432/test"
REDIS = "redis://127.0.0.1:6379/9"


def book(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
    """The approved tool: returns at once."""
    return "booked"


TOOLS = [Tool("book", book)]


class AskFirst(lh.ChainCallbackHandler):
    """Every call waits for a human."""

    @override
    def on_tool_call_review(
        self,
        chain: LLMChain,
        call: lh.ToolCall,
        tool: lh.Tool,
        review: lh.ReviewContext,
    ) -> lh.ReviewDecision | None:
        return lh.Interrupt("May I?", {}) if review.human_decision is None else None


def waiting_run() -> LLMChain:
    """A run interrupted after 47 messages of history: 50 messages in all (with
    the user's request, the call and its waiting stand-in result)."""
    history: list[lh.Message] = [lh.Message.system("You book tables.")]
    for n in range(23):
        history.append(lh.Message.user(f"Question {n}: " + "what about it? " * 12))
        history.append(lh.Message.assistant(f"Answer {n}: " + "it is so. " * 20))
    call = lh.ToolCall(call_id="call_1", name="book", arguments={"people": 4})
    model = ScriptedChatModel([ScriptedTurn(tool_calls=[call])])
    chain = LLMChain(model, tools=TOOLS, callbacks=[AskFirst()])
    result = chain.add_messages([*history, lh.Message.user("Book it.")]).run()
    assert result.status == "interrupted"
    assert len(result.chain.messages) == 50
    return result.chain


def cycle(store: RunStore, chain: LLMChain) -> None:
    """save, load and resume the run once."""
    run_id = store.save(chain, metadata={"tenant": "t1"})
    store.load(run_id, ScriptedChatModel([]), tools=TOOLS)
    model = ScriptedChatModel([ScriptedTurn(text="Booked.")])
    result = store.resume(run_id, [Decision.approve()], model, tools=TOOLS)
    assert result.status == "ok"


def timed(work: Callable[[], object], cycles: int) -> float:
    """Seconds per call of ``work``, over ``cycles`` calls."""
    start = time.perf_counter()
    for _ in range(cycles):
        work()
    return (time.perf_counter() - start) / cycles


Cycle = tuple[float, float, float, float, float]


def ratio(
    store: Callable[[], object],
    floor: Callable[[], object],
    worked: Callable[[], object],
    rounds: int,
    cycles: int,
) -> Cycle:
    """Median ms per store cycle, per floor cycle, per floor cycle with the run's
    own work, and the median per-round ratios of the store to each floor."""
    mine: list[float] = []
    base: list[float] = []
    work: list[float] = []
    for _ in range(rounds):
        mine.append(timed(store, cycles))
        base.append(timed(floor, cycles))
        work.append(timed(worked, cycles))
    return (
        statistics.median(mine) * 1e3,
        statistics.median(base) * 1e3,
        statistics.median(work) * 1e3,
        statistics.median(m / b for m, b in zip(mine, base, strict=True)),
        statistics.median(m / w for m, w in zip(mine, work, strict=True)),
    )


def run_work(floor: Callable[[str], str | None], chain: LLMChain) -> Callable[[], None]:
    """The plain floor with the run's own work, as a caller keeping JSON state
    would do it: encode to save, decode and rebuild to load and to resume, the
    decision and the model's answer, encode the end."""

    def worked() -> None:
        text = json.dumps(chain.to_state())
        fetched = floor(text)
        assert fetched is not None
        LLMChain.from_state(json.loads(fetched), ScriptedChatModel([]), tools=TOOLS)
        model = ScriptedChatModel([ScriptedTurn(text="Booked.")])
        again = LLMChain.from_state(json.loads(fetched), model, tools=TOOLS)
        result = again.execute_tool_calls_with_decisions(
            again.pending_tool_calls, [Decision.approve()]
        )
        result = result.chain.run()
        assert result.status == "ok"
        json.dumps(result.chain.to_state())

    return worked


def postgres_cycle(rounds: int, cycles: int) -> Cycle:
    """The store against 6 plain statements carrying the same data."""
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    chain = waiting_run()
    state = json.dumps(chain.to_state())
    with (
        PostgresRunStore(PG, schema=schema) as store,
        psycopg.connect(PG, autocommit=True, prepare_threshold=None) as conn,
    ):
        store.setup()
        conn.execute(
            f"CREATE TABLE {schema}.plain (id text PRIMARY KEY, body text, small text)"
        )
        sql = {
            "put": f"INSERT INTO {schema}.plain VALUES (%s, %s, '') ON CONFLICT (id) "
            f"DO UPDATE SET body = EXCLUDED.body",
            "get": f"SELECT body FROM {schema}.plain WHERE id = %s",
            "small": f"UPDATE {schema}.plain SET small = %s WHERE id = %s",
        }

        def trips(text: str) -> str | None:
            conn.execute(sql["put"], ("r", text))  # save
            conn.execute(sql["get"], ("r",)).fetchone()  # load
            row = conn.execute(sql["get"], ("r",)).fetchone()  # claim (the state)
            conn.execute(sql["small"], ("started", "r"))  # start_call
            conn.execute(sql["small"], ("outcome", "r"))  # finish_call
            conn.execute(sql["put"], ("r", text))  # settle
            return None if row is None else str(row[0])

        result = ratio(
            lambda: cycle(store, chain),
            functools.partial(trips, state),
            run_work(trips, chain),
            rounds,
            cycles,
        )
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return result


def redis_cycle(rounds: int, cycles: int) -> Cycle:
    """The store against 6 plain commands carrying the same data."""
    client = redis.Redis.from_url(REDIS)
    prefix = f"bench-{uuid.uuid4().hex[:12]}:"
    store = RedisRunStore(client, prefix=prefix)
    chain = waiting_run()
    state = json.dumps(chain.to_state())
    key = f"{prefix}plain"

    def trips(text: str) -> str | None:
        client.set(key, text)  # save (one pipeline)
        client.get(key)  # load
        found = client.get(key)  # claim (returns the state)
        client.set(f"{key}:s", "started")  # start_call
        client.set(f"{key}:s", "outcome")  # finish_call
        client.set(key, text)  # settle (one pipeline with the inbox indexes)
        return found if found is None or isinstance(found, str) else found.decode()

    result = ratio(
        lambda: cycle(store, chain),
        functools.partial(trips, state),
        run_work(trips, chain),
        rounds,
        cycles,
    )
    for name in client.scan_iter(f"{prefix}*"):
        client.delete(name)
    client.close()
    return result


def percentiles(work: Callable[[], object], calls: int) -> tuple[float, float]:
    """p50 and p99 of ``work`` in ms."""
    times: list[float] = []
    for _ in range(calls):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.99) - 1]


def postgres_pending(runs: int) -> tuple[float, float, int, str]:
    """pending(metadata=...) over ``runs`` waiting runs: p50, p99, rows, plan."""
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    calls = json.dumps([codec.encode(lh.ToolCall(call_id="c", name="book"))])
    with (
        PostgresRunStore(PG, schema=schema) as store,
        psycopg.connect(PG, autocommit=True) as conn,
    ):
        store.setup()
        conn.execute(
            f"INSERT INTO {schema}.runs (run_id, status, state, calls, metadata, "
            f"saved_at) SELECT 'run-' || i, 'waiting', '{{}}', %s::jsonb, "
            f"jsonb_build_object('tenant', 't' || (i %% 100), 'user', i), "
            f"now() - i * interval '1 second' FROM generate_series(1, %s) AS i",
            (calls, runs),
        )
        conn.execute(f"ANALYZE {schema}.runs")
        query = (
            f"EXPLAIN SELECT run_id FROM {schema}.runs WHERE status = 'waiting' AND "
            f"(expires_at IS NULL OR expires_at > clock_timestamp()) AND metadata @> "
            f'\'{{"tenant": "t7"}}\'::jsonb ORDER BY saved_at DESC, run_id DESC '
            f"LIMIT 100"
        )
        plan = "\n".join(row[0] for row in conn.execute(query).fetchall())
        found = len(store.pending(metadata={"tenant": "t7"}))
        p50, p99 = percentiles(lambda: store.pending(metadata={"tenant": "t7"}), 1000)
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return p50, p99, found, plan


def redis_pending(runs: int) -> tuple[float, float, int]:
    """pending(metadata=...) over ``runs`` waiting runs in Redis: p50, p99, rows."""
    client = redis.Redis.from_url(REDIS)
    prefix = f"bench-{uuid.uuid4().hex[:12]}:"
    store = RedisRunStore(client, prefix=prefix)
    calls = json.dumps([codec.encode(lh.ToolCall(call_id="c", name="book"))])
    now = time.time_ns() // 1_000_000
    pipe = client.pipeline(transaction=False)
    for i in range(runs):
        tenant = f"t{i % 100}"
        saved = now - i * 1000
        fields = {
            "state": "{}",
            "calls": calls,
            "meta": json.dumps({"tenant": tenant, "user": i}),
            "saved": saved,
            "expires": now + 3_600_000,
            "status": "waiting",
        }
        pipe.hset(f"{prefix}state:run-{i}", mapping=fields)  # type: ignore[arg-type]
        pipe.zadd(f"{prefix}waiting", {f"run-{i}": saved})
        pipe.zadd(f'{prefix}waiting:tenant="{tenant}"', {f"run-{i}": saved})
        if i % 2000 == 1999:
            pipe.execute()
    pipe.execute()
    found = len(store.pending(metadata={"tenant": "t7"}))
    p50, p99 = percentiles(lambda: store.pending(metadata={"tenant": "t7"}), 1000)
    for name in client.scan_iter(f"{prefix}*", count=10_000):
        client.delete(name)
    client.close()
    return p50, p99, found


class CountingProxy:
    """A TCP proxy in this process that counts the bytes clients send the server."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self.sent = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._target)
            for pair in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pump, args=pair, daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, count: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if count:
                    with self._lock:
                        self.sent += len(data)
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._listener.close()


def history_run(length: int) -> tuple[LLMChain, LLMChain]:
    """A finished run of ``length`` messages, and the same run one turn later
    (2 more messages: a question and its answer)."""
    history: list[lh.Message] = [lh.Message.system("You book tables.")]
    while len(history) < length - 2:
        n = len(history)
        history.append(lh.Message.user(f"Question {n}: " + "what about it? " * 12))
        history.append(lh.Message.assistant(f"Answer {n}: " + "it is so. " * 20))
    history = history[: length - 2]
    model = ScriptedChatModel([ScriptedTurn(text="Answer: " + "it is so. " * 20)])
    chain = LLMChain(model).add_messages([*history, lh.Message.user("And then?")])
    before = chain.run().chain
    assert len(before.messages) == length
    after = before.add_messages(
        [
            lh.Message.user("Next: " + "what about it? " * 12),
            lh.Message.assistant("Next answer: " + "it is so. " * 20),
        ]
    )
    return before, after


Stores = list[tuple[str, RunStore, RunStore | None, CountingProxy | None]]


@contextlib.contextmanager
def turn_stores() -> Iterator[Stores]:
    """The stores of the --messages part: each store to time, and the same store
    through a counting proxy (Redis and PostgreSQL) to count bytes with."""
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    prefix = f"bench-{uuid.uuid4().hex[:12]}:"
    to_pg, to_redis = CountingProxy("127.0.0.1", 5432), CountingProxy("127.0.0.1", 6379)
    client = redis.Redis.from_url(REDIS)
    counted = redis.Redis.from_url(REDIS.replace(":6379/", f":{to_redis.port}/"))
    with (
        PostgresRunStore(PG, schema=schema) as pg,
        PostgresRunStore(
            PG.replace(":5432/", f":{to_pg.port}/"), schema=schema
        ) as counted_pg,
    ):
        pg.setup()
        try:
            yield [
                ("MemoryRunStore", MemoryRunStore(), None, None),
                (
                    "RedisRunStore",
                    RedisRunStore(client, prefix=prefix),
                    RedisRunStore(counted, prefix=prefix),
                    to_redis,
                ),
                ("PostgresRunStore", pg, counted_pg, to_pg),
            ]
        finally:
            for name in client.scan_iter(f"{prefix}*"):
                client.delete(name)
            client.close()
            counted.close()
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
            to_pg.close()
            to_redis.close()


def bytes_sent(
    store: RunStore, proxy: CountingProxy, runs: tuple[LLMChain, ...]
) -> int:
    """The bytes ``store`` sends to save ``runs[1]`` where ``runs[0]`` is saved."""
    before, after = runs
    sent: list[int] = []
    for _ in range(5):
        store.save(before)
        written = proxy.sent
        store.save(after)
        sent.append(proxy.sent - written)
    return int(statistics.median(sent))


def turn_saves(
    lengths: list[int], rounds: int, cycles: int
) -> list[tuple[str, int, int, float, float]]:
    """Per store and history length: bytes sent by a turn's save, its ms, and
    the ms of a load (medians over the rounds, the lengths interleaved)."""
    runs = {length: history_run(length) for length in lengths}
    rows: list[tuple[str, int, int, float, float]] = []
    with turn_stores() as stores:
        for name, store, counted, proxy in stores:
            saves: dict[int, list[float]] = {length: [] for length in lengths}
            loads: dict[int, list[float]] = {length: [] for length in lengths}
            for _ in range(rounds):
                for length in lengths:
                    before, after = runs[length]
                    spent = 0.0
                    for _ in range(cycles):
                        run_id = store.save(before)
                        start = time.perf_counter()
                        store.save(after)
                        spent += time.perf_counter() - start
                    saves[length].append(spent / cycles)
                    load = functools.partial(store.load, run_id, ScriptedChatModel([]))
                    loads[length].append(timed(load, cycles))
            for length in lengths:
                sent = 0
                if counted is not None and proxy is not None:
                    sent = bytes_sent(counted, proxy, runs[length])
                rows.append(
                    (
                        name,
                        length,
                        sent,
                        statistics.median(saves[length]) * 1e3,
                        statistics.median(loads[length]) * 1e3,
                    )
                )
    return rows


def print_turn_saves(lengths: list[int], rounds: int, cycles: int) -> None:
    """The --messages table."""
    print("| store | messages | bytes sent by a turn's save | save | load |")
    print("| --- | --- | --- | --- | --- |")
    for name, length, sent, save, load in turn_saves(lengths, rounds, cycles):
        written = f"{sent / 1024:.1f} KB" if sent else "-"
        print(f"| {name} | {length:,} | {written} | {save:.2f} ms | {load:.2f} ms |")


def main() -> None:
    """Run both parts and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument(
        "--messages",
        type=lambda text: [int(n) for n in text.split(",")],
        help="history lengths, as 10,100,1000: only the turn-save part",
    )
    args = parser.parse_args()
    if args.messages:
        print_turn_saves(args.messages, args.rounds, args.cycles)
        return
    print(
        "| store | save+load+resume | same round trips, plain | ratio | "
        "plain, with the run's own work | ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name, measure in (
        ("PostgresRunStore", postgres_cycle),
        ("RedisRunStore", redis_cycle),
    ):
        mine, base, work, times, over = measure(args.rounds, args.cycles)
        print(
            f"| {name} | {mine:.2f} ms | {base:.2f} ms | **{times:.2f}x** | "
            f"{work:.2f} ms | **{over:.2f}x** |"
        )
    print()
    print(f"| store | pending(metadata=...) over {args.runs:,} runs | p50 | p99 |")
    print("| --- | --- | --- | --- |")
    p50, p99, found, plan = postgres_pending(args.runs)
    print(f"| PostgresRunStore | {found} rows | {p50:.2f} ms | {p99:.2f} ms |")
    r50, r99, rfound = redis_pending(args.runs)
    print(f"| RedisRunStore | {rfound} rows | {r50:.2f} ms | {r99:.2f} ms |")
    print()
    print(plan)


if __name__ == "__main__":
    main()
