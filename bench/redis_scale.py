"""Benchmark: many runs published at once, on one Redis node and on a Redis Cluster.

Run by hand (not a test); it starts its own servers (``redis-server`` and
``redis-cli`` on the PATH) on free ports of 127.0.0.1 and stops them::

    python bench/redis_scale.py [--workers 4] [--runs 16] [--tokens 2000]
                                [--rate 100] [--setup node|cluster|both]

``--workers`` processes each run ``--runs`` concurrent runs (one thread each, one
``RedisEventPublisher`` per process); a run streams ``--tokens`` partials at
``--rate`` tokens per second (0: as fast as it can), then its end. Every run has a
follower (``arun_entries`` tasks, in ``--followers`` processes) that takes, for
each partial, the time from its event (``record.time``) to its arrival; a consumer
group on the firehose (``--members`` processes, ``dedupe=True``, every shard;
``--members 0``: no group) counts every partial it is handed. Before the tokens
start, every follower is reading (the runs wait for it), so the latency is that of a
live reader.

Reported per set-up: records/s (records published / wall time from the first token
to the end of the last run at its follower; the same to the last record the group
got: ``group_records_per_s``), p50/p99/max token→follower latency, lost
(partials a follower or the consumer group never got, and the publishers' ``lost``)
and duplicated (partials delivered twice: by a follower after its dedupe, by the
group after ``dedupe``). Goals: 0 lost, 0 duplicated, p99 <= 50 ms.

The node set-up is one ``redis-server`` with the single-node layout (1 shard); the
cluster set-up is 3 masters, no replicas, the default 16 shards. Everything runs on
this machine, so the figures measure the client processes and the servers sharing
its cores, not what a cluster of machines would do (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from typing_extensions import override

from langhooks import (
    ChatResponse,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    invocation,
)
from langhooks.integrations.redis import (
    RedisEventConsumer,
    RedisEventPublisher,
    arun_entries,
)
from tests._redis_cluster import LocalCluster, LocalServer

PREFIX = "bench:"
RESULTS = Path(__file__).resolve().parent / "results"


def sync_client(url: str, cluster: bool) -> redis.Redis | redis.cluster.RedisCluster:
    """A synchronous client of the set-up."""
    if cluster:
        return redis.cluster.RedisCluster.from_url(url)
    return redis.Redis.from_url(url)


# --- the processes ---------------------------------------------------------------


def worker(
    url: str,
    cluster: bool,
    index: int,
    args: argparse.Namespace,
    ids: Any,
    go: EventType,
    out: Any,
) -> None:
    """Run ``args.runs`` runs at once; announce their ids, wait for ``go``."""
    client = sync_client(url, cluster)
    publisher = RedisEventPublisher(client, prefix=PREFIX)
    ready = threading.Barrier(args.runs + 1)

    def run(number: int) -> None:
        context = PartialResponseContext(handle=StreamingHandle())
        with invocation("bench") as current:
            ids.put(current.id)
            ready.wait()
            go.wait()
            start = time.perf_counter()
            for n in range(args.tokens):
                if args.rate > 0:
                    pause = start + n / args.rate - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                publisher.on_partial_response(
                    PartialResponse(text=f"{index}.{number}.{n}"), context
                )
            publisher.on_complete_response(
                ChatResponse(message=Message.assistant("done"))
            )

    threads = [threading.Thread(target=run, args=(n,)) for n in range(args.runs)]
    for thread in threads:
        thread.start()
    ready.wait()
    for thread in threads:
        thread.join()
    publisher.flush(30)
    out.put({"published": publisher.published, "lost": publisher.lost})
    publisher.close(5)


def follower(url: str, cluster: bool, run_ids: list[str], ready: Any, out: Any) -> None:
    """Follow ``run_ids`` as asyncio tasks; report latencies and counts."""
    asyncio.run(_follow_all(url, cluster, run_ids, ready, out))


async def _follow_all(
    url: str, cluster: bool, run_ids: list[str], ready: Any, out: Any
) -> None:
    client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster
    if cluster:
        client = redis.asyncio.cluster.RedisCluster.from_url(url)
    else:
        client = redis.asyncio.Redis.from_url(url, max_connections=None)
    latencies: list[float] = []
    seen: Counter[str] = Counter()

    async def one(run_id: str) -> None:
        async for entry in arun_entries(client, run_id, prefix=PREFIX, block_ms=60_000):
            if entry.record.event == "on_partial_response":
                latencies.append(time.time() - entry.record.time.timestamp())
                seen[entry.record.payload["partial"]["text"]] += 1

    tasks = [asyncio.create_task(one(run_id)) for run_id in run_ids]
    await asyncio.sleep(0.5)  # every task has sent its first read
    ready.put(len(run_ids))
    await asyncio.gather(*tasks)
    await client.aclose()
    out.put({"latencies": latencies, "seen": dict(seen), "last": time.time()})


class _Tally(StreamingChatResponseHandler):
    """Counts every partial a consumer is handed."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.last = time.time()

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.seen[partial.text] += 1
        self.last = time.time()


def member(
    url: str, cluster: bool, name: str, expected: int, stop: EventType, out: Any
) -> None:
    """One member of the group: read until ``stop``, then report what it got."""
    client = sync_client(url, cluster)
    tally = _Tally()
    consumer = RedisEventConsumer(
        client, group="bench", consumer=name, handler=tally, prefix=PREFIX, dedupe=True
    )
    consumer.run_once(block_ms=10)  # the group exists before the first record
    out.put({"ready": name})
    while not stop.is_set():
        consumer.run_once(block_ms=200)
    while consumer.run_once(block_ms=500):  # what is left, until idle
        pass
    out.put({"seen": dict(tally.seen), "last": tally.last})


# --- one set-up ----------------------------------------------------------------------


def measure(url: str, cluster: bool, args: argparse.Namespace) -> dict[str, Any]:
    """Run the whole load once against ``url``; the figures."""
    ctx = multiprocessing.get_context("fork")
    ids, outs, go, stop = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
    expected = args.workers * args.runs * args.tokens
    members = [
        ctx.Process(target=member, args=(url, cluster, f"m{n}", expected, stop, outs))
        for n in range(args.members)
    ]
    for process in members:
        process.start()
    for _ in members:
        assert "ready" in outs.get(timeout=60)
    workers = [
        ctx.Process(target=worker, args=(url, cluster, w, args, ids, go, outs))
        for w in range(args.workers)
    ]
    for process in workers:
        process.start()
    run_ids = [ids.get(timeout=60) for _ in range(args.workers * args.runs)]
    ready = ctx.Queue()
    followers = [
        ctx.Process(
            target=follower,
            args=(url, cluster, run_ids[f :: args.followers], ready, outs),
        )
        for f in range(args.followers)
    ]
    for process in followers:
        process.start()
    for _ in followers:
        ready.get(timeout=60)
    began = time.time()
    go.set()
    reports: list[dict[str, Any]] = []
    for _ in range(args.workers + args.followers):
        reports.append(outs.get(timeout=args.tokens / max(args.rate, 1) + 600))
    # The group has had every record once it is idle for a second.
    published = sum(r["published"] for r in reports if "published" in r)
    time.sleep(1.0)
    stop.set()
    for _ in members:
        reports.append(outs.get(timeout=120))
    for process in [*workers, *followers, *members]:
        process.join(60)
    latencies = sorted(
        ms * 1000 for r in reports if "latencies" in r for ms in r["latencies"]
    )
    followed: Counter[str] = Counter()
    grouped: Counter[str] = Counter()
    last = group_last = began
    for report in reports:
        if "latencies" in report:
            followed.update(report["seen"])
            last = max(last, report["last"])
        elif "seen" in report:
            grouped.update(report["seen"])
            group_last = max(group_last, report["last"])
    wall = last - began
    group_wall = group_last - began
    return {
        "setup": "cluster (3 masters, 16 shards)" if cluster else "one node (1 shard)",
        "workers": args.workers,
        "runs": args.workers * args.runs,
        "tokens": args.tokens,
        "rate": args.rate,
        "published": published,
        "records_per_s": round(published / wall) if wall > 0 else None,
        "wall_s": round(wall, 2),
        "group_records_per_s": round(published / group_wall)
        if group_wall > 0
        else None,
        "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
        "p99_ms": round(latencies[int(len(latencies) * 0.99)], 2)
        if latencies
        else None,
        "max_ms": round(latencies[-1], 2) if latencies else None,
        "publisher_lost": sum(r["lost"] for r in reports if "lost" in r),
        "follower_lost": expected - len(followed),
        "follower_duplicated": sum(c - 1 for c in followed.values()),
        "group_lost": expected - len(grouped) if args.members else None,
        "group_duplicated": (
            sum(c - 1 for c in grouped.values()) if args.members else None
        ),
    }


def main() -> None:
    """Measure the set-ups asked for; print a table, and save it as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--followers", type=int, default=2)
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--setup", choices=("node", "cluster", "both"), default="both")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="langhooks-bench-") as directory:
        if args.setup in ("node", "both"):
            server = LocalServer(Path(directory))
            try:
                rows.append(measure(server.url, False, args))
            finally:
                server.stop()
        if args.setup in ("cluster", "both"):
            cluster = LocalCluster(Path(directory))
            try:
                rows.append(measure(cluster.url, True, args))
            finally:
                cluster.stop()
    for row in rows:
        print(json.dumps(row))
    RESULTS.mkdir(exist_ok=True)
    name = f"redis_scale-{args.workers}x{args.runs}x{args.tokens}-{args.rate:g}.json"
    (RESULTS / name).write_text(
        json.dumps({"cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
