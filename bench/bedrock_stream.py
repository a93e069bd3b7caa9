"""Benchmark: replaying a large Bedrock ConverseStream body (binary eventstream).

Run by hand (not a test)::

    python bench/bedrock_stream.py [--chunks 10000] [--repeat 7]

(``bench/streams.py`` runs it too, after the Chat Completions case.) It builds a
ConverseStream body of ``--chunks`` text deltas in memory, as AWS frames it (the
three headers and a ``p`` padding field in every payload, messageStart,
contentBlockStop, messageStop and metadata around them), cut into 4 KiB pieces
as a socket would deliver them, and times, in the same run:

- the baseline: ``json.loads`` of every payload (already cut out of its frame),
  as str (what ``bench/streams.py`` gives every format) and as bytes (what a
  frame holds: ``json.loads`` then detects the encoding and decodes);
- the full replay: ``replay_stream(format="bedrock")`` over the pieces (the frame
  decoder with both CRC32 checks, JSON parsing, the adapter, the driver and a
  handler call per text delta) into a no-op ``on_partial_response``;
- botocore's own iteration of the same pieces (``read_botocore``): ``EventStream`` with
  ``EventStreamJSONParser`` and the ConverseStream output shape, which is what
  ``for event in response["stream"]`` runs (and yields dicts only: no handler).

Goals: replay at most 2.0x the baseline; langhooks at least 10x faster than
botocore's iteration.
"""

from __future__ import annotations

import argparse
import json
import string
from collections.abc import Callable, Iterator
from typing import Any, Final

import _checkout  # noqa: F401  # this checkout's langhooks first
from typing_extensions import override

import langhooks as lh
from langhooks.models import replay_stream
from langhooks.models._eventstream import encode_message

_PIECE: Final = 4096
_WORDS: Final = ("The", " quick", " brown", " fox", " jumps", " over", " the", " dog.")
_PAD: Final = string.ascii_letters + string.digits
_HEADERS: Final = {":content-type": "application/json", ":message-type": "event"}


def _frame(kind: str, payload: dict[str, Any], i: int) -> tuple[bytes, str]:
    # AWS pads every payload with "p": a run of letters of varying length.
    data = json.dumps(
        {**payload, "p": _PAD[: 1 + (i * 7) % len(_PAD)]}, separators=(",", ":")
    )
    return encode_message({":event-type": kind, **_HEADERS}, data.encode()), data


def build_stream(chunks: int) -> tuple[bytes, list[str]]:
    """The body of a ``chunks``-delta ConverseStream, and its payloads (the
    shape of ``bench/streams.py``'s stream builders)."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    events += [
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"text": _WORDS[i % len(_WORDS)]}},
        )
        for i in range(chunks)
    ]
    events += [
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        (
            "metadata",
            {
                "usage": {
                    "inputTokens": 12,
                    "outputTokens": chunks,
                    "totalTokens": chunks + 12,
                },
                "metrics": {"latencyMs": 1234},
            },
        ),
    ]
    frames = [_frame(kind, payload, i) for i, (kind, payload) in enumerate(events)]
    return b"".join(f for f, _ in frames), [p for _, p in frames]


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


def read_botocore(body: bytes) -> Callable[[], int]:
    """Iterating botocore's ``EventStream`` over ``body`` (as boto3 users do);
    the shape of ``bench/streams.py``'s SDK readers."""
    import botocore.session
    from botocore.eventstream import EventStream
    from botocore.parsers import EventStreamJSONParser

    service = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = service.operation_model("ConverseStream").output_shape.members["stream"]

    class Raw:
        def stream(self) -> Iterator[bytes]:
            return pieces(body)

    def run() -> int:
        count = 0
        parser = EventStreamJSONParser()
        for _ in EventStream(Raw(), shape, parser, "ConverseStream"):
            count += 1
        return count

    return run


def report(chunks: int, repeat: int) -> None:
    """Time the cases and print the figures."""
    from streams import best_of

    body, payloads = build_stream(chunks)
    raw = [payload.encode() for payload in payloads]
    loads = json.loads

    def baseline() -> None:
        for payload in payloads:
            loads(payload)

    def baseline_bytes() -> None:
        for payload in raw:
            loads(payload)

    def replay() -> object:
        return replay_stream(pieces(body), format="bedrock", handler=TextSink())

    response = replay()
    assert isinstance(response, lh.ChatResponse)
    assert response.token_usage is not None
    assert response.token_usage.output_tokens == chunks
    botocore = read_botocore(body)
    assert botocore() == chunks + 4

    json_time, bytes_time, replay_time, botocore_time = best_of(
        repeat, baseline, baseline_bytes, replay, botocore
    )
    per_chunk = 1e6 / (chunks + 4)
    print(
        f"bedrock: {chunks:,} text deltas, {len(body) / 1e6:.2f} MB eventstream, "
        f"{_PIECE} B pieces; best of {repeat}"
    )
    print(
        f"  json.loads of the payloads     {json_time * 1e3:8.2f} ms   "
        f"{json_time * per_chunk:5.2f} us/chunk   (str, as cut out of SSE)"
    )
    print(
        f"  json.loads of payload bytes    {bytes_time * 1e3:8.2f} ms   "
        f"{bytes_time * per_chunk:5.2f} us/chunk   (bytes, as cut out of frames)"
    )
    print(
        f"  replay, on_partial_response    {replay_time * 1e3:8.2f} ms   "
        f"{replay_time * per_chunk:5.2f} us/chunk   "
        f"ratio {replay_time / json_time:.2f}x (str), "
        f"{replay_time / bytes_time:.2f}x (bytes)"
    )
    print(
        f"  botocore EventStream iteration {botocore_time * 1e3:8.2f} ms   "
        f"{botocore_time * per_chunk:5.2f} us/chunk   "
        f"langhooks {botocore_time / replay_time:.1f}x faster"
    )
    ratio_ok = replay_time / json_time <= 2.0
    speed_ok = botocore_time / replay_time >= 10.0
    print(
        f"  goal <= 2.0x: {'meets' if ratio_ok else 'MISSES'}; "
        f"goal >= 10x faster than botocore: {'meets' if speed_ok else 'MISSES'}"
    )


def main() -> None:
    """Run the benchmark on its own."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    report(args.chunks, args.repeat)


if __name__ == "__main__":
    main()
