"""langhooks against the physical limit and the libraries users would otherwise use.

Usage (from a checkout)::

    pip install -e ".[bench]"
    python bench/peers.py            # about a minute
    python bench/peers.py --quick    # a smoke run, a few seconds

The workload is the same everywhere: a stream of ``--events`` token partials
delivered to H handlers (H = 1, 3, 10), each handler counting the partials it gets.
It goes through a plain loop over bound methods (the limit), langhooks composites
(sync and async), LangChain-core's callback managers (``on_llm_new_token``; sync,
async with default settings, async with ``run_inline=True``), pluggy hooks and
blinker signals. Also measured: the four hot-path targets, ``CoalescingDeltas``,
peak memory over a million partials, a scripted 100-turn chain run with two
tools a turn, and stream replay against ``json.loads`` (the stream from
``bench/streams.py``). Results are printed as tables and saved as JSON
(``bench/results/peers.json`` by default). See ``docs/performance.md``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401  # this checkout's langhooks first
import _harness
import blinker
import pluggy
import streams
from langchain_core.callbacks import (
    AsyncCallbackHandler,
    AsyncCallbackManager,
    BaseCallbackHandler,
    CallbackManager,
)
from typing_extensions import override

import langhooks
from langhooks import PartialResponse, PartialResponseContext
from langhooks.chain import LLMChain
from langhooks.models import ScriptedChatModel, ScriptedTurn, replay_stream
from langhooks.testing import RecordingChainHandler

HANDLER_COUNTS: tuple[int, ...] = (1, 3, 10)
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "peers.json"

# --- the peers, each doing the same work per token ------------------------------


class LangChainCounter(BaseCallbackHandler):
    """A LangChain handler counting tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    @override
    def on_llm_new_token(self, token: Any, **kwargs: Any) -> None:
        self.n += 1


class LangChainAsyncCounter(AsyncCallbackHandler):
    """A LangChain async handler counting tokens (default: not run inline)."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    @override
    async def on_llm_new_token(self, token: Any, **kwargs: Any) -> None:
        self.n += 1


class LangChainAsyncInlineCounter(LangChainAsyncCounter):
    """The same, with LangChain's ``run_inline`` (awaited in order, no gather)."""

    run_inline = True


_SPEC = pluggy.HookspecMarker("langhooks_bench")
_IMPL = pluggy.HookimplMarker("langhooks_bench")


class PluggySpec:
    """The hook specification: one hook per token."""

    @_SPEC
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        """A token arrived."""


class PluggyCounter:
    """A pluggy plugin counting tokens."""

    def __init__(self) -> None:
        self.n = 0

    @_IMPL
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.n += 1


class BlinkerCounter:
    """A blinker receiver counting tokens."""

    def __init__(self) -> None:
        self.n = 0

    def on_partial_response(self, sender: object, **kwargs: Any) -> None:
        self.n += 1


# --- one case per implementation and handler count -------------------------------


def _langchain_sync(workload: _harness.Workload, count: int) -> Callable[[], None]:
    manager = CallbackManager(handlers=[LangChainCounter() for _ in range(count)])
    run_manager = manager.on_llm_start({}, ["bench"])[0]
    partials = workload.partials

    def run() -> None:
        for partial in partials:
            run_manager.on_llm_new_token(partial.text)

    return run


def _langchain_async(
    workload: _harness.Workload, count: int, *, inline: bool
) -> Callable[[], Awaitable[None]]:
    kind = LangChainAsyncInlineCounter if inline else LangChainAsyncCounter
    manager = AsyncCallbackManager(handlers=[kind() for _ in range(count)])
    run_manager = asyncio.run(manager.on_llm_start({}, ["bench"]))[0]
    partials = workload.partials

    async def run() -> None:
        for partial in partials:
            await run_manager.on_llm_new_token(partial.text)

    return run


def _pluggy(workload: _harness.Workload, count: int) -> Callable[[], None]:
    plugins = pluggy.PluginManager("langhooks_bench")
    plugins.add_hookspecs(PluggySpec)
    for _ in range(count):
        plugins.register(PluggyCounter())
    hook = plugins.hook.on_partial_response
    partials, context = workload.partials, workload.context

    def run() -> None:
        for partial in partials:
            hook(partial=partial, context=context)

    return run


def _blinker(workload: _harness.Workload, count: int) -> Callable[[], None]:
    signal = blinker.Signal()
    receivers = [BlinkerCounter() for _ in range(count)]
    for receiver in receivers:
        signal.connect(receiver.on_partial_response)  # weak, the default
    partials, context = workload.partials, workload.context
    sender = object()

    def run() -> None:
        # Keeps the receivers alive: blinker holds them weakly.
        _ = receivers
        for partial in partials:
            signal.send(sender, partial=partial, context=context)

    return run


# Rows of the peers table: (key, label, is async).
IMPLEMENTATIONS: tuple[tuple[str, str, bool], ...] = (
    ("limit", "plain loop over bound methods (the limit)", False),
    ("langhooks", "langhooks CompositeStreamingHandler", False),
    ("langchain", "LangChain CallbackManager", False),
    ("pluggy", "pluggy hook", False),
    ("blinker", "blinker signal", False),
    ("async_limit", "plain await loop (the async limit)", True),
    ("langhooks_async", "langhooks AsyncCompositeStreamingHandler", True),
    ("langchain_async", "LangChain AsyncCallbackManager (default)", True),
    ("langchain_async_inline", "LangChain AsyncCallbackManager, run_inline", True),
)


def _implementation(
    key: str, workload: _harness.Workload, count: int
) -> Callable[[], object]:
    """Implementation ``key`` delivering the workload to ``count`` handlers."""
    counting = [_harness.CountingHandler() for _ in range(count)]
    async_counting = [_harness.AsyncCountingHandler() for _ in range(count)]
    match key:
        case "limit":
            return workload.limit([h.on_partial_response for h in counting])
        case "langhooks":
            return workload.through(langhooks.CompositeStreamingHandler(counting))
        case "langchain":
            return _langchain_sync(workload, count)
        case "pluggy":
            return _pluggy(workload, count)
        case "blinker":
            return _blinker(workload, count)
        case "async_limit":
            return workload.async_limit([h.on_partial_response for h in async_counting])
        case "langhooks_async":
            return workload.async_through(
                langhooks.AsyncCompositeStreamingHandler(async_counting)
            )
        case "langchain_async":
            return _langchain_async(workload, count, inline=False)
        case "langchain_async_inline":
            return _langchain_async(workload, count, inline=True)
    raise ValueError(f"unknown implementation {key!r}")


def peer_cases(workload: _harness.Workload) -> list[_harness.Case]:
    """Every implementation at every handler count, over ``workload``."""
    return [
        _harness.Case(
            f"{key}_h{count}",
            _implementation(key, workload, count),
            workload.events,
            is_async,
        )
        for count in HANDLER_COUNTS
        for key, _label, is_async in IMPLEMENTATIONS
    ]


def extra_cases(workload: _harness.Workload) -> list[_harness.Case]:
    """The targets' cases, ``CoalescingDeltas`` over one handler and async
    ``HandlerWithoutInvocation`` against an async call."""
    coalescing = langhooks.CoalescingDeltas(_harness.CountingHandler())
    async_without = langhooks.HandlerWithoutInvocation(_harness.AsyncCountingHandler())
    return [
        *_harness.target_cases(workload),
        _harness.Case("coalescing", workload.through(coalescing), workload.events),
        _harness.Case(
            "async_direct_call",
            workload.async_through(_harness.AsyncCountingHandler()),
            workload.events,
            is_async=True,
        ),
        _harness.Case(
            "async_without_invocation",
            workload.async_through(async_without),
            workload.events,
            is_async=True,
        ),
    ]


def stream_cases(chunks: int) -> list[_harness.Case]:
    """Replaying an OpenAI chat stream against ``json.loads`` of its data lines.

    The stream, its socket-sized pieces and the handler come from
    ``bench/streams.py`` (its own script also traces memory while streaming).
    """
    body, payloads = streams.build_stream(chunks)
    loads = json.loads
    sink = streams.TextSink()

    def parse_only() -> None:
        for payload in payloads:
            loads(payload)

    def replay() -> None:
        replay_stream(streams.pieces(body), format="openai-chat", handler=sink)

    events = len(payloads)
    return [
        _harness.Case("stream_json_loads", parse_only, events),
        _harness.Case("stream_replay", replay, events),
    ]


# --- memory and the runtime -------------------------------------------------------


def peak_memory(workload: _harness.Workload, total: int) -> dict[str, dict[str, int]]:
    """Peak and retained traced memory while ``total`` partials go through each
    dispatcher.

    The partials come from the workload, cycled, so what is traced is what
    dispatch itself allocates (and keeps).
    """
    counting = [_harness.CountingHandler() for _ in range(3)]
    async_counting = [_harness.AsyncCountingHandler() for _ in range(3)]
    repeats = max(1, total // workload.events)
    subjects: dict[str, Callable[[], object]] = {
        "limit_3": workload.limit([h.on_partial_response for h in counting]),
        "composite_3": workload.through(langhooks.CompositeStreamingHandler(counting)),
        "without_invocation": workload.through(
            langhooks.HandlerWithoutInvocation(_harness.CountingHandler())
        ),
    }
    async_subject = workload.async_through(
        langhooks.AsyncCompositeStreamingHandler(async_counting)
    )

    async def async_repeats() -> None:
        for _ in range(repeats):
            await async_subject()

    report: dict[str, dict[str, int]] = {}
    for name, run in [*subjects.items(), ("async_composite_3", None)]:
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            if run is None:
                asyncio.run(async_repeats())
            else:
                for _ in range(repeats):
                    run()
            after, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        report[name] = {
            "partials": repeats * workload.events,
            "peak_bytes": peak - before,
            "retained_bytes": after - before,
        }
    return report


def chain_run(turns: int, rounds: int) -> dict[str, Any]:
    """A scripted ``turns``-turn chain run with two tools a turn.

    The model is scripted with no delay and the tools return at once, so the time
    is the runtime's own overhead: building snapshots and messages, streaming the
    scripted partials, reviewing and running the calls, and delivering every chain
    event to a recording handler (through ``HandlerWithoutInvocation``, as the
    runtime always does).

    Returns:
        Events delivered per run, the median seconds per run over ``rounds`` runs,
        and events per second of runtime overhead.
    """
    tools = [
        langhooks.Tool(name, lambda arguments, context: "ok")
        for name in ("lookup", "compute")
    ]
    seconds: list[float] = []
    events = 0
    status = ""
    for _ in range(rounds):
        script = [
            ScriptedTurn(
                text="Let me check both.",
                tool_calls=[
                    langhooks.ToolCall(
                        call_id=f"call-{turn}-{tool}",
                        name=tool,
                        arguments={"turn": turn},
                        index=position,
                    )
                    for position, tool in enumerate(("lookup", "compute"))
                ],
            )
            for turn in range(turns)
        ]
        script.append(ScriptedTurn(text="All done."))
        recorder = RecordingChainHandler()
        chain = LLMChain(ScriptedChatModel(script), tools=tools, callbacks=[recorder])
        chain = chain.add_message(langhooks.Message.user("go"))
        start = time.perf_counter()
        result = chain.run(max_runs=turns + 1)
        seconds.append(time.perf_counter() - start)
        events, status = len(recorder.names), result.status
    median = statistics.median(seconds)
    return {
        "turns": turns,
        "tool_calls": 2 * turns,
        "status": status,
        "events": events,
        "rounds": rounds,
        "median_seconds": round(median, 4),
        "events_per_second": round(events / median),
        "ms_per_turn": round(median * 1000 / (turns + 1), 3),
    }


# --- the report -----------------------------------------------------------------


def peers_table(results: dict[str, _harness.Result]) -> str:
    """Rows: implementations; columns: ns/event and ratio to the limit per H.

    An async row's ratio cell also gives, in parentheses, its ratio to the async
    limit (the plain ``await`` loop).
    """
    headers = ["implementation"]
    for count in HANDLER_COUNTS:
        headers += [f"H={count} ns/event", f"H={count} x limit"]
    rows: list[list[object]] = []
    for key, label, is_async in IMPLEMENTATIONS:
        row: list[object] = [label]
        for count in HANDLER_COUNTS:
            result = results[f"{key}_h{count}"]
            ratio = f"{result.ratio(results[f'limit_h{count}']):.2f}"
            if is_async and key != "async_limit":
                ratio += f" ({result.ratio(results[f'async_limit_h{count}']):.2f})"
            row += [f"{result.median:,.0f}", ratio]
        rows.append(row)
    return _harness.format_table(headers, rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every comparison, print the tables and save the JSON.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status (0).
    """
    settings = _harness.parse_settings(
        "Compare langhooks' dispatch with the limit and with its peers.",
        DEFAULT_JSON,
        argv,
    )
    started = time.perf_counter()
    workload = _harness.Workload(settings.events)

    def note(text: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f}s] {text}", file=sys.stderr)

    note(f"peers: {settings.rounds} rounds, {workload.events} partials per stream")
    peers = _harness.measure(peer_cases(workload), settings, progress=note)
    note("targets and wrappers")
    extras = _harness.measure(extra_cases(workload), settings, progress=note)
    note("stream replay")
    stream = _harness.measure(
        stream_cases(500 if settings.quick else 2_000), settings, progress=note
    )
    memory_partials = 100_000 if settings.quick else 1_000_000
    note(f"peak memory over {memory_partials:,} partials")
    memory = peak_memory(workload, memory_partials)
    note("chain run")
    chain = chain_run(10 if settings.quick else 100, 1 if settings.quick else 5)

    print(f"\nE = {workload.events} token partials, H handlers each counting them;")
    print("ns per partial (all H handlers), median of rounds; async rows: ratio to")
    print("the limit, and in parentheses to the async limit (the plain await loop).\n")
    print(peers_table(peers))
    print()
    print(
        _harness.format_table(
            _harness.TARGET_HEADERS,
            [target.row(extras) for target in _harness.TARGETS],
        )
    )
    print("\nWhat HandlerWithoutInvocation's guarantee costs at the least:")
    print(
        _harness.format_table(
            ("floor", "ns/event", "baseline ns/event", "ratio"),
            _harness.floor_rows(extras),
        )
    )
    informational = [
        ("CoalescingDeltas (defaults) vs unwrapped", "coalescing", "direct_call"),
        (
            "async HandlerWithoutInvocation vs a plain await",
            "async_without_invocation",
            "async_direct_call",
        ),
    ]
    print()
    print(
        _harness.format_table(
            ("wrapper", "ns/event", "baseline ns/event", "ratio"),
            [
                [
                    label,
                    f"{extras[subject].median:.0f}",
                    f"{extras[baseline].median:.0f}",
                    f"{extras[subject].ratio(extras[baseline]):.2f}x",
                ]
                for label, subject, baseline in informational
            ],
        )
    )
    replay, parse = stream["stream_replay"], stream["stream_json_loads"]
    print(
        f"\nstream replay (OpenAI chat, {parse.events:,} data lines in 4 KiB pieces, "
        f"into a handler overriding on_partial_response): {replay.median:.0f} ns "
        f"per data line vs {parse.median:.0f} for json.loads alone = "
        f"{replay.ratio(parse):.2f}x"
    )
    print()
    print(
        _harness.format_table(
            ("dispatcher", "partials", "peak KiB", "retained bytes"),
            [
                [
                    name,
                    f"{entry['partials']:,}",
                    f"{entry['peak_bytes'] / 1024:.1f}",
                    entry["retained_bytes"],
                ]
                for name, entry in memory.items()
            ],
        )
    )
    print(
        f"\nchain run: {chain['turns']} turns, {chain['tool_calls']} tool calls, "
        f"{chain['events']} handler events in {chain['median_seconds']} s "
        f"(median of {chain['rounds']}) = {chain['events_per_second']:,} events/s, "
        f"{chain['ms_per_turn']} ms per model turn (status {chain['status']})"
    )
    if settings.json_path is not None:
        _harness.save_json(
            settings.json_path,
            {
                "machine": _harness.machine_info(),
                "settings": {
                    "rounds": settings.rounds,
                    "events": settings.events,
                    "quick": settings.quick,
                },
                "peers": {
                    f"h{count}": {
                        key: {
                            **peers[f"{key}_h{count}"].as_json(),
                            "ratio_to_limit": round(
                                peers[f"{key}_h{count}"].ratio(
                                    peers[f"limit_h{count}"]
                                ),
                                3,
                            ),
                        }
                        for key, _label, _is_async in IMPLEMENTATIONS
                    }
                    for count in HANDLER_COUNTS
                },
                "targets": [target.as_json(extras) for target in _harness.TARGETS],
                "cases": {name: r.as_json() for name, r in extras.items()},
                "stream_replay": {
                    **{name: r.as_json() for name, r in stream.items()},
                    "ratio": round(
                        stream["stream_replay"].ratio(stream["stream_json_loads"]), 3
                    ),
                },
                "memory": memory,
                "chain_run": chain,
            },
        )
        note(f"saved {settings.json_path}")
    note("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
