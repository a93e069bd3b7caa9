"""Benchmark: replaying a large OpenAI chat stream, against ``json.loads`` alone.

Run by hand (not a test)::

    python bench/streams.py [--chunks 10000] [--repeat 7]

It builds an OpenAI Chat Completions stream of ``--chunks`` text chunks in memory
(the live wire shape: ``service_tier``, ``"usage": null`` and ``obfuscation`` on
every chunk, a finish chunk, a usage chunk, ``data: [DONE]``), cut into 4 KiB
pieces as a socket would deliver them, and times, in the same run:

- the baseline: ``json.loads`` of every ``data:`` payload (already cut out);
- the full replay: ``replay_stream`` over the pieces (SSE decoding, JSON parsing,
  the adapter, the driver and a handler call per text chunk) into a no-op
  handler that overrides ``on_partial_response``, and into one that overrides
  nothing.

The goal is a ratio of at most 2.0. Then it traces memory while streaming:
sampled every 1,000 chunks, the memory held grows only with the assembled text.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Final

from typing_extensions import override

import langhooks as lh
from langhooks.models import replay_stream

_PIECE: Final = 4096
_WORDS: Final = ("The", " quick", " brown", " fox", " jumps", " over", " the", " dog.")


def build_stream(chunks: int) -> tuple[bytes, list[str]]:
    """The wire body of a ``chunks``-chunk stream, and its data payloads."""
    head = {
        "id": "chatcmpl-BENCH0000000000000000000000",
        "object": "chat.completion.chunk",
        "created": 1767261600,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_f33640a400",
    }
    payloads = [
        json.dumps(
            {
                **head,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": "", "refusal": None},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
                "usage": None,
                "obfuscation": "AT",
            },
            separators=(",", ":"),
        )
    ]
    for i in range(chunks):
        payloads.append(
            json.dumps(
                {
                    **head,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": _WORDS[i % len(_WORDS)]},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ],
                    "usage": None,
                    "obfuscation": "x" * (2 + i % 11),
                },
                separators=(",", ":"),
            )
        )
    payloads.append(
        json.dumps(
            {
                **head,
                "choices": [
                    {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
                ],
                "usage": None,
            },
            separators=(",", ":"),
        )
    )
    payloads.append(
        json.dumps(
            {
                **head,
                "choices": [],
                "usage": {
                    "prompt_tokens": 20,
                    "completion_tokens": chunks,
                    "total_tokens": chunks + 20,
                },
            },
            separators=(",", ":"),
        )
    )
    body = "".join(f"data: {p}\n\n" for p in payloads) + "data: [DONE]\n\n"
    return body.encode(), payloads


def pieces(body: bytes) -> Iterator[bytes]:
    """``body`` in socket-sized pieces."""
    for start in range(0, len(body), _PIECE):
        yield body[start : start + _PIECE]


class TextSink(lh.StreamingChatResponseHandler):
    """A no-op handler that receives every text partial."""

    @override
    def on_partial_response(
        self, partial: lh.PartialResponse, context: lh.PartialResponseContext
    ) -> None:
        pass


class MemoryProbe(lh.StreamingChatResponseHandler):
    """Samples traced memory every ``every`` partials."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.count = 0
        self.chars = 0
        self.samples: list[tuple[int, int, int]] = []

    @override
    def on_partial_response(
        self, partial: lh.PartialResponse, context: lh.PartialResponseContext
    ) -> None:
        self.count += 1
        self.chars += len(partial.text)
        if self.count % self.every == 0:
            current, _ = tracemalloc.get_traced_memory()
            self.samples.append((self.count, self.chars, current))


def best_of(repeat: int, *runs: Callable[[], object]) -> list[float]:
    """The fastest of ``repeat`` timed runs of each, in seconds.

    The runs take turns, so a slow patch of a shared machine hits all of them.
    """
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            gc.collect()
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    body, payloads = build_stream(args.chunks)
    loads = json.loads

    def baseline() -> None:
        for payload in payloads:
            loads(payload)

    def replay(handler: lh.StreamingChatResponseHandler) -> Callable[[], object]:
        return lambda: replay_stream(
            pieces(body), format="openai-chat", handler=handler
        )

    response = replay(TextSink())()
    assert isinstance(response, lh.ChatResponse)
    assert response.token_usage is not None
    assert response.token_usage.output_tokens == args.chunks

    json_time, sink_time, bare_time = best_of(
        args.repeat,
        baseline,
        replay(TextSink()),
        replay(lh.StreamingChatResponseHandler()),
    )
    per_chunk = 1e6 / (args.chunks + 3)
    print(
        f"stream: {args.chunks:,} text chunks, {len(body) / 1e6:.2f} MB, "
        f"{_PIECE} B pieces; best of {args.repeat}"
    )
    print(
        f"  json.loads of the data lines   {json_time * 1e3:8.2f} ms   "
        f"{json_time * per_chunk:5.2f} us/chunk"
    )
    print(
        f"  replay, on_partial_response    {sink_time * 1e3:8.2f} ms   "
        f"{sink_time * per_chunk:5.2f} us/chunk   ratio {sink_time / json_time:.2f}x"
    )
    print(
        f"  replay, no overrides           {bare_time * 1e3:8.2f} ms   "
        f"{bare_time * per_chunk:5.2f} us/chunk   ratio {bare_time / json_time:.2f}x"
    )
    verdict = "meets" if sink_time / json_time <= 2.0 else "MISSES"
    print(f"  goal <= 2.0x: {verdict}")

    probe = MemoryProbe(every=max(1, args.chunks // 10))
    gc.collect()
    tracemalloc.start()
    baseline_memory, _ = tracemalloc.get_traced_memory()
    replay_stream(pieces(body), format="openai-chat", handler=probe)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print("memory while streaming (tracemalloc, above the start):")
    print("  partials    text chars    held (KiB)    held per text char")
    for count, chars, current in probe.samples:
        held = current - baseline_memory
        print(
            f"  {count:8,}    {chars:10,}    {held / 1024:10.1f}    "
            f"{held / chars:8.1f} B"
        )
    print(
        f"  peak: {(peak - baseline_memory) / 1024:.1f} KiB "
        f"(input body {len(body) / 1024:.0f} KiB is not copied)"
    )
    import bedrock_stream  # Bedrock ConverseStream: the binary eventstream case

    bedrock_stream.report(args.chunks, args.repeat)


if __name__ == "__main__":
    main()
