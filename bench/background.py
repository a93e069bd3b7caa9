"""Benchmark: ``in_background`` and ``aiterate_stream`` (issue 18).

Run by hand (not a test)::

    python bench/background.py [--quick] [--rounds N] [--json PATH]

Three comparisons, each printed as a table and saved as JSON:

1. **A slow handler off the stream's path.** A 2,000-token ``ScriptedChatModel``
   stream, once with no handler and once into ``in_background`` of a handler that
   sleeps 2 ms per token (a push service): the wall time of the stream, with the
   ratio between them (goal <= 1.1x), and the time the handler then needs to catch
   up (``flush()``), after which it must have received all 2,000 tokens in order.
   The stream is timed as fast as Python can replay it (about 2 us per token, so
   the ratio there measures thread switching more than anything) and paced like a
   live model (``--paces``: 0.5 ms and 2 ms per token by default; a hosted model
   streams at 10-50 ms per token). The same handler called inline is timed once,
   for scale. The same again with ``astream`` and an async handler that awaits
   ``asyncio.sleep`` (its worker is a task).
2. **Per-token overhead.** 1,000 partials delivered to a no-op handler, directly
   and through ``in_background``: nanoseconds per token on the caller's side
   (this thread's CPU time) and end to end (wall clock, including the ``flush()``
   that waits for the worker). Goal: at most 5 us per token more than a direct
   call. The async twin too: an async no-op handler, end to end with
   ``aflush()`` (one thread, so its CPU time covers the worker task).
3. **Iterator throughput.** The 2,000-token stream consumed by ``aiterate_stream``
   vs the same stream into an async callback handler doing the same work (keep
   each text): the ratio of their times (goal <= 1.5x); ``iterate_stream`` vs a
   sync callback handler is shown too (wall clock: it uses a thread).

Timings on a shared machine are reports, not assertions: run it on your own.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
from _harness import (
    Case,
    Result,
    Settings,
    Workload,
    format_table,
    machine_info,
    save_json,
)
from _harness import measure as measure_cases
from typing_extensions import override

from langhooks import (
    AsyncStreamingChatResponseHandler,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    aiterate_stream,
    in_background,
    iterate_stream,
)
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

TOKENS = 2000
HANDLER_SLEEP = 0.002
REQUEST = ChatRequest([Message.user("Count to two thousand.")])
TURN = ScriptedTurn(text=" ".join(f"w{i}" for i in range(TOKENS)))
DEFAULT_JSON = Path(__file__).parent / "results" / "background.json"


class Idle(StreamingChatResponseHandler):
    """Overrides nothing: a stream with no handler."""


class AsyncIdle(AsyncStreamingChatResponseHandler):
    """The async twin of ``Idle``."""


class Noop(StreamingChatResponseHandler):
    """Takes each partial and does nothing with it."""

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        pass


class AsyncNoop(AsyncStreamingChatResponseHandler):
    """The async twin of ``Noop``."""

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        pass


class Keeping(StreamingChatResponseHandler):
    """Keeps each text: the work an iterator's loop body does below."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.texts.append(partial.text)


class AsyncKeeping(AsyncStreamingChatResponseHandler):
    """The async twin of ``Keeping``."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.texts.append(partial.text)


class Pushing(Keeping):
    """Sleeps ``HANDLER_SLEEP`` per token, as a request to a push service would."""

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        time.sleep(HANDLER_SLEEP)
        super().on_partial_response(partial, context)


class AsyncPushing(AsyncKeeping):
    """The async twin of ``Pushing``: awaits ``HANDLER_SLEEP`` per token."""

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        await asyncio.sleep(HANDLER_SLEEP)
        await super().on_partial_response(partial, context)


EXPECTED = [f"w{i} " for i in range(TOKENS - 1)] + [f"w{TOKENS - 1}"]


# --- 1. a slow handler off the stream's path --------------------------------------


def _stream_seconds(pace: float, handler: StreamingChatResponseHandler) -> float:
    model = ScriptedChatModel([TURN], delay=pace)
    start = time.perf_counter()
    model.stream(REQUEST, handler)
    return time.perf_counter() - start


def slow_handler(rounds: int, pace: float) -> dict[str, Any]:
    """Comparison 1 at one pace: medians over ``rounds`` paired runs."""
    plain: list[float] = []
    background: list[float] = []
    catch_up: list[float] = []
    for _ in range(rounds):
        plain.append(_stream_seconds(pace, Idle()))
        pushing = Pushing()
        wrapper = in_background(pushing)
        background.append(_stream_seconds(pace, wrapper))
        start = time.perf_counter()
        assert wrapper.flush()
        catch_up.append(time.perf_counter() - start)
        wrapper.close()
        if pushing.texts != EXPECTED:
            raise AssertionError("the handler did not get all 2,000 tokens in order")
    ratios = [b / p for b, p in zip(background, plain, strict=True)]
    return {
        "pace_ms_per_token": pace * 1000,
        "no_handler_s": statistics.median(plain),
        "in_background_s": statistics.median(background),
        "ratio": statistics.median(ratios),
        "flush_after_s": statistics.median(catch_up),
        "all_2000_in_order": True,
    }


def async_slow_handler(rounds: int, pace: float) -> dict[str, Any]:
    """Comparison 1 with ``astream`` and an async handler, at one pace."""

    async def timed(handler: Any) -> float:
        model = ScriptedChatModel([TURN], delay=pace)
        start = time.perf_counter()
        await model.astream(REQUEST, handler)
        return time.perf_counter() - start

    async def run() -> dict[str, Any]:
        plain: list[float] = []
        background: list[float] = []
        catch_up: list[float] = []
        for _ in range(rounds):
            plain.append(await timed(AsyncIdle()))
            pushing = AsyncPushing()
            wrapper = in_background(pushing)
            background.append(await timed(wrapper))
            start = time.perf_counter()
            await wrapper.aflush()
            catch_up.append(time.perf_counter() - start)
            await wrapper.aclose()
            if pushing.texts != EXPECTED:
                raise AssertionError("the async handler missed tokens or their order")
        return {
            "pace_ms_per_token": pace * 1000,
            "no_handler_s": statistics.median(plain),
            "in_background_s": statistics.median(background),
            "ratio": statistics.median(
                b / p for b, p in zip(background, plain, strict=True)
            ),
            "flush_after_s": statistics.median(catch_up),
            "all_2000_in_order": True,
        }

    return asyncio.run(run())


def inline_once(pace: float) -> float:
    """The slow handler called inline: what in_background saves."""
    return _stream_seconds(pace, Pushing())


# --- 2. per-token overhead --------------------------------------------------------


def overhead(settings: Settings) -> dict[str, Result]:
    """Comparison 2: a no-op handler, directly and through in_background."""
    workload = Workload(events=1000)
    direct = workload.through(Noop())
    wrapper = in_background(Noop())
    queued = workload.through(wrapper)

    def queued_and_delivered() -> None:
        queued()
        wrapper.flush()

    async_wrapper = in_background(AsyncNoop())
    async_queued = workload.async_through(async_wrapper)

    async def async_delivered() -> None:
        await async_queued()
        await async_wrapper.aflush()

    cpu = measure_cases(
        [
            Case("direct_call", direct, workload.events),
            Case("in_background_caller", queued, workload.events),
            Case(
                "async_direct_call",
                workload.async_through(AsyncNoop()),
                workload.events,
                is_async=True,
            ),
            Case(
                "in_background_async_delivered",
                async_delivered,
                workload.events,
                is_async=True,
            ),
        ],
        settings,
    )
    wall_settings = Settings(
        rounds=settings.rounds,
        min_round_s=settings.min_round_s,
        events=settings.events,
        quick=settings.quick,
        json_path=None,
        wall_clock=True,
    )
    wall = measure_cases(
        [
            Case("direct_call_wall", direct, workload.events),
            Case("in_background_delivered", queued_and_delivered, workload.events),
        ],
        wall_settings,
    )
    wrapper.close()
    return {**cpu, **wall}


# --- 3. iterator throughput -------------------------------------------------------


def _async_callback() -> Callable[[], Any]:
    async def run() -> None:
        handler = AsyncKeeping()
        await ScriptedChatModel([TURN]).astream(REQUEST, handler)
        assert len(handler.texts) == TOKENS

    return run


def _async_iterator() -> Callable[[], Any]:
    async def run() -> None:
        texts: list[str] = []
        async with aiterate_stream(ScriptedChatModel([TURN]), REQUEST) as items:
            async for item in items:
                if isinstance(item, PartialResponse):
                    texts.append(item.text)
        assert len(texts) == TOKENS

    return run


def _sync_callback() -> None:
    handler = Keeping()
    ScriptedChatModel([TURN]).stream(REQUEST, handler)
    assert len(handler.texts) == TOKENS


def _sync_iterator() -> None:
    texts: list[str] = []
    with iterate_stream(ScriptedChatModel([TURN]), REQUEST) as items:
        for item in items:
            if isinstance(item, PartialResponse):
                texts.append(item.text)
    assert len(texts) == TOKENS


def throughput(settings: Settings) -> dict[str, Result]:
    """Comparison 3: iterators against callback handlers on the same stream."""
    async_results = measure_cases(
        [
            Case("async_callback", _async_callback(), TOKENS, is_async=True),
            Case("aiterate_stream", _async_iterator(), TOKENS, is_async=True),
        ],
        settings,
    )
    wall = Settings(
        rounds=settings.rounds,
        min_round_s=settings.min_round_s,
        events=settings.events,
        quick=settings.quick,
        json_path=None,
        wall_clock=True,
    )
    sync_results = measure_cases(
        [
            Case("sync_callback", _sync_callback, TOKENS),
            Case("iterate_stream", _sync_iterator, TOKENS),
        ],
        wall,
    )
    return {**async_results, **sync_results}


# --- the report -------------------------------------------------------------------


def main() -> None:
    """Run the three comparisons, print them and save them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument("--rounds", type=int, help="rounds per case (default 5)")
    parser.add_argument(
        "--paces",
        type=float,
        nargs="+",
        default=[0.0005, 0.002],
        help="seconds per token of the paced streams (default 0.0005 0.002)",
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 5)
    settings = Settings(
        rounds=rounds,
        min_round_s=0.005 if args.quick else 0.05,
        events=TOKENS,
        quick=args.quick,
        json_path=args.json,
    )

    print(f"1. {TOKENS}-token stream, handler sleeping 2 ms per token ({rounds} runs)")
    slow = [slow_handler(rounds, pace) for pace in (0.0, *args.paces)]
    slow_async = [async_slow_handler(rounds, pace) for pace in (0.0, *args.paces)]
    inline = inline_once(0.0)
    print(
        format_table(
            (
                "stream",
                "no handler",
                "in_background",
                "ratio",
                "goal",
                "handler caught up (flush)",
            ),
            [
                (
                    f"{kind} {s['pace_ms_per_token']:g} ms/token",
                    f"{s['no_handler_s'] * 1000:.1f} ms",
                    f"{s['in_background_s'] * 1000:.1f} ms",
                    f"{s['ratio']:.3f}x",
                    "<= 1.1x",
                    f"{s['flush_after_s'] * 1000:.0f} ms later, all {TOKENS} in order",
                )
                for kind, runs in (("stream", slow), ("astream", slow_async))
                for s in runs
            ],
        )
    )
    print(f"(the same handler inline: {inline * 1000:.0f} ms)\n")

    print("2. per-token overhead, no-op handler (ns per token)")
    costs = overhead(settings)
    caller = costs["in_background_caller"].median - costs["direct_call"].median
    delivered = (
        costs["in_background_delivered"].median - costs["direct_call_wall"].median
    )
    async_delivered = (
        costs["in_background_async_delivered"].median
        - costs["async_direct_call"].median
    )
    print(
        format_table(
            ("measured", "direct call", "in_background", "overhead", "goal"),
            [
                (
                    "caller's side (thread CPU time)",
                    f"{costs['direct_call'].median:.0f}",
                    f"{costs['in_background_caller'].median:.0f}",
                    f"{caller:.0f}",
                    "<= 5000",
                ),
                (
                    "end to end, with flush() (wall clock)",
                    f"{costs['direct_call_wall'].median:.0f}",
                    f"{costs['in_background_delivered'].median:.0f}",
                    f"{delivered:.0f}",
                    "<= 5000",
                ),
                (
                    "async, end to end, with aflush() (CPU time)",
                    f"{costs['async_direct_call'].median:.0f}",
                    f"{costs['in_background_async_delivered'].median:.0f}",
                    f"{async_delivered:.0f}",
                    "<= 5000",
                ),
            ],
        )
    )
    print()

    print(f"3. consuming a {TOKENS}-token stream (ns per token)")
    rates = throughput(settings)
    async_ratio = rates["aiterate_stream"].ratio(rates["async_callback"])
    sync_ratio = rates["iterate_stream"].ratio(rates["sync_callback"])
    print(
        format_table(
            ("consumer", "callback handler", "iterator", "ratio", "goal"),
            [
                (
                    "aiterate_stream vs async handler (thread CPU time)",
                    f"{rates['async_callback'].median:.0f}",
                    f"{rates['aiterate_stream'].median:.0f}",
                    f"{async_ratio:.2f}x",
                    "<= 1.5x",
                ),
                (
                    "iterate_stream vs sync handler (wall clock)",
                    f"{rates['sync_callback'].median:.0f}",
                    f"{rates['iterate_stream'].median:.0f}",
                    f"{sync_ratio:.2f}x",
                    "(none)",
                ),
            ],
        )
    )
    payload = {
        "machine": machine_info(),
        "slow_handler": slow,
        "slow_async_handler": slow_async,
        "slow_handler_inline_s": inline,
        "overhead_ns": {name: result.as_json() for name, result in costs.items()},
        "overhead_caller_ns": caller,
        "overhead_delivered_ns": delivered,
        "overhead_async_delivered_ns": async_delivered,
        "throughput_ns": {name: result.as_json() for name, result in rates.items()},
        "aiterate_ratio": async_ratio,
        "iterate_ratio": sync_ratio,
    }
    save_json(args.json, payload)
    print(f"\nsaved to {args.json}")


if __name__ == "__main__":
    main()
