"""Benchmark: latency from a token's event to the handler in a ``follow`` process.

Run by hand (not a test), with a Redis server on 127.0.0.1:6379::

    python bench/redis_latency.py [--tokens 2000] [--rate 200] [--interval 0.005]

This process streams ``--tokens`` partials at ``--rate`` tokens per second into a
``RedisEventPublisher`` (``flush_interval=--interval``, the default batching
otherwise); each partial's text is the ``time.time()`` at which its
``on_partial_response`` fired. A second process runs ``follow`` on the stream with
a handler that takes ``time.time()`` on each ``on_partial_response`` and reports
the differences: p50, p99 and the maximum, in milliseconds. Both processes read the
same clock. The goal is p99 <= 50 ms with the defaults. ``--rate 0`` sends as fast
as possible (a burst: the latency then includes the queue).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

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
from langhooks.integrations.redis import RedisEventPublisher

FOLLOWER = textwrap.dedent(
    """
    import json, statistics, sys, time
    import redis
    from langhooks import StreamingChatResponseHandler
    from langhooks.integrations.redis import follow

    class Latency(StreamingChatResponseHandler):
        def __init__(self):
            self.ms = []

        def on_partial_response(self, partial, context):
            self.ms.append((time.time() - float(partial.text)) * 1000)

    prefix, run_id, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    handler = Latency()
    print("ready", flush=True)
    follow(redis.Redis(host="127.0.0.1", port=port), run_id, handler, prefix=prefix,
           block_ms=30_000)
    ms = sorted(handler.ms)
    print(json.dumps({
        "count": len(ms),
        "p50": ms[len(ms) // 2],
        "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
        "max": ms[-1],
    }))
    """
)


def main() -> None:
    """Stream the tokens, and print what the follower measured."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--interval", type=float, default=0.005)
    parser.add_argument("--port", type=int, default=6379)
    args = parser.parse_args()
    client = redis.Redis(host="127.0.0.1", port=args.port)
    prefix = f"langhooks-bench:{uuid.uuid4().hex}:"
    publisher = RedisEventPublisher(client, prefix=prefix, flush_interval=args.interval)
    context = PartialResponseContext(handle=StreamingHandle())
    try:
        with invocation("latency") as current:
            follower = subprocess.Popen(
                [sys.executable, "-c", FOLLOWER, prefix, current.id, str(args.port)],
                cwd=Path(__file__).resolve().parents[1],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert follower.stdout is not None
            assert follower.stdout.readline().strip() == "ready"
            start = time.perf_counter()
            for i in range(args.tokens):
                if args.rate > 0:
                    pause = start + i / args.rate - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                publisher.on_partial_response(
                    PartialResponse(text=f"{time.time():.6f}"), context
                )
            publisher.on_complete_response(
                ChatResponse(message=Message.assistant("done"))
            )
        out, _ = follower.communicate(timeout=120)
        figures = json.loads(out.splitlines()[-1])
        rate = f"{args.rate:g} tokens/s" if args.rate > 0 else "a burst"
        print(
            f"{figures['count']} tokens at {rate}, flush_interval "
            f"{args.interval * 1000:g} ms: p50 {figures['p50']:.2f} ms, "
            f"p99 {figures['p99']:.2f} ms, max {figures['max']:.2f} ms "
            f"(lost {publisher.lost})"
        )
    finally:
        publisher.close()
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)


if __name__ == "__main__":
    main()
