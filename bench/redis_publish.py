"""Benchmark: publishing a 10,000-token run to Redis, against pipelined XADD.

Run by hand (not a test), with a Redis server on 127.0.0.1:6379::

    python bench/redis_publish.py [--tokens 10000] [--repeat 5] [--port 6379]

In the same run it times, wall clock, until every record is in Redis:

1. ``RedisEventPublisher`` as the stream's handler: ``on_partial_response(partial,
   context)`` per token, as a stream driver calls it, then ``on_complete_response``
   (which flushes). This is everything the publisher does: an ``EventRecord`` per
   event (the ``EventRecorder``), its JSON, the bounded buffer, the flusher
   thread's pipelines.
2. The floor: the same records, already encoded (the entry fields the publisher
   wrote, captured once), sent by one thread with redis-py pipelines of the same
   size and the same commands (two ``XADD ... MAXLEN ~`` per record: the run's
   stream and the firehose). Goal: the publisher at >= 0.7x the floor's rate.
3. The publisher's own method as a floor: the same pre-encoded records sent by
   one thread as the publisher's flusher sends them (one Lua script call per batch
   of 500, which does the two ``XADD``s per record server-side). The ratio against
   it is what the publisher costs beyond sending.
4. No batching: the same pre-encoded records, one round trip per record (its two
   ``XADD``s in one pipeline), as a handler that writes each event as it comes
   would. The publisher must be far ahead.

Also shown: a chain run of the same length (``ScriptedChatModel``, one
``on_llm_new_delta`` record per token) with and without the publisher, so the cost
the publisher adds to a real run is visible beside the run's own.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import redis

from langhooks import (
    ChatResponse,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingHandle,
    invocation,
)
from langhooks.chain import LLMChain
from langhooks.integrations._redis._outbox import _SEND
from langhooks.integrations.redis import RedisEventPublisher
from langhooks.models import ScriptedChatModel, ScriptedTurn

_WORDS = ("The", " quick", " brown", " fox", " jumps", " over", " the", " dog.")


def cleanup(client: redis.Redis, prefix: str) -> None:
    """Delete the benchmark's keys."""
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)


def publish_stream(client: redis.Redis, prefix: str, tokens: int) -> int:
    """Drive a publisher with a token stream; the records it published."""
    partials = [PartialResponse(text=_WORDS[i % len(_WORDS)]) for i in range(tokens)]
    context = PartialResponseContext(handle=StreamingHandle())
    response = ChatResponse(
        message=Message.assistant("".join(p.text for p in partials))
    )
    publisher = RedisEventPublisher(client, prefix=prefix)
    with invocation("bench"):
        for partial in partials:
            publisher.on_partial_response(partial, context)
        publisher.on_complete_response(response)
    assert publisher.flush(30.0)
    publisher.close()
    assert publisher.lost == 0
    return publisher.published


def captured(client: redis.Redis, prefix: str, tokens: int) -> list[Any]:
    """The entry fields the publisher wrote for the stream, pre-encoded."""
    publish_stream(client, prefix, tokens)
    key = next(iter(client.scan_iter(match=f"{prefix}run:*")))
    entries: Any = client.xrange(key)
    cleanup(client, prefix)
    return [fields for _id, fields in entries]


def xadd_pipelined(client: redis.Redis, prefix: str, records: list[Any]) -> None:
    """The floor: pre-encoded records, pipelines of 500, the publisher's commands."""
    run, firehose = f"{prefix}run:floor", f"{prefix}events"
    for start in range(0, len(records), 500):
        pipe = client.pipeline(transaction=False)
        for fields in records[start : start + 500]:
            pipe.xadd(run, fields, maxlen=100_000, approximate=True)
            pipe.xadd(firehose, fields, maxlen=100_000, approximate=True)
        pipe.expire(run, 3600)
        pipe.execute()


def script_batches(client: redis.Redis, prefix: str, records: list[Any]) -> None:
    """The publisher's method, pre-encoded: one script call per 500 records."""
    script = client.register_script(_SEND)
    keys = [f"{prefix}events", f"{prefix}run:script"]
    for start in range(0, len(records), 500):
        args: list[Any] = [100_000, 3600, "bench"]
        for fields in records[start : start + 500]:
            args += (2, fields[b"event"], fields[b"record"], fields.get(b"end", ""))
        script(keys=keys, args=args)


def xadd_each(client: redis.Redis, prefix: str, records: list[Any]) -> None:
    """No batching: one round trip per record."""
    run, firehose = f"{prefix}run:each", f"{prefix}events"
    for fields in records:
        pipe = client.pipeline(transaction=False)
        pipe.xadd(run, fields, maxlen=100_000, approximate=True)
        pipe.xadd(firehose, fields, maxlen=100_000, approximate=True)
        pipe.execute()


def chain_run(client: redis.Redis, prefix: str, tokens: int, publish: bool) -> None:
    """A chain run streaming ``tokens`` words, with or without the publisher."""
    text = "".join(_WORDS[i % len(_WORDS)] + " " for i in range(tokens))
    handlers = [RedisEventPublisher(client, prefix=prefix)] if publish else []
    chain = LLMChain(ScriptedChatModel([ScriptedTurn(text=text)]), callbacks=handlers)
    result = chain.add_message(Message.user("Go")).run()
    assert result.status == "ok"
    for publisher in handlers:
        assert publisher.close(30.0)
        assert publisher.lost == 0


def timed(
    repeat: int, case: Callable[[], object], after: Callable[[], None]
) -> tuple[float, float]:
    """The median wall-clock seconds of ``case`` over ``repeat`` runs, and the
    median CPU seconds of this process (all its threads) meanwhile."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        case()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        after()
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    """Time the cases and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--port", type=int, default=6379)
    args = parser.parse_args()
    client = redis.Redis(host="127.0.0.1", port=args.port)
    prefix = f"langhooks-bench:{uuid.uuid4().hex}:"
    try:
        records = captured(client, prefix, args.tokens)
        count = len(records)

        def clean() -> None:
            cleanup(client, prefix)

        rows = [
            (
                "RedisEventPublisher",
                timed(
                    args.repeat,
                    lambda: publish_stream(client, prefix, args.tokens),
                    clean,
                ),
            ),
            (
                "floor: pipelined XADD, pre-encoded",
                timed(
                    args.repeat, lambda: xadd_pipelined(client, prefix, records), clean
                ),
            ),
            (
                "the publisher's script, pre-encoded",
                timed(
                    args.repeat, lambda: script_batches(client, prefix, records), clean
                ),
            ),
            (
                "one round trip per record",
                timed(args.repeat, lambda: xadd_each(client, prefix, records), clean),
            ),
        ]
        floor, script = rows[1][1][0], rows[2][1][0]
        print(f"{count} records ({args.tokens} tokens), median of {args.repeat}:")
        for name, (seconds, cpu) in rows:
            print(
                f"  {name:36} {seconds * 1000:7.1f} ms {count / seconds:8,.0f} rec/s"
                f"  {floor / seconds:5.2f}x the floor  {script / seconds:5.2f}x the "
                f"script  (client CPU {cpu * 1e6 / count:5.1f} us/record)"
            )
        bare, bare_cpu = timed(
            args.repeat, lambda: chain_run(client, prefix, args.tokens, False), clean
        )
        published, published_cpu = timed(
            args.repeat, lambda: chain_run(client, prefix, args.tokens, True), clean
        )
        print(f"chain run of {args.tokens} tokens, until every record is in Redis:")
        print(f"  without the publisher {bare * 1000:8.1f} ms (CPU {bare_cpu:.3f} s)")
        print(
            f"  with the publisher    {published * 1000:8.1f} ms "
            f"(CPU {published_cpu:.3f} s: "
            f"+{(published_cpu - bare_cpu) / args.tokens * 1e6:.1f} us per token)"
        )
    finally:
        cleanup(client, prefix)


if __name__ == "__main__":
    main()
