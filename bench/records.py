"""Benchmark: event records and run state, against ``json`` on plain dicts.

Run by hand (not a test)::

    python bench/records.py [--partials 10000] [--messages 200] [--repeat 7]

In the same run it times:

1. Recording a ``--partials`` token stream to a file: ``EventRecorder(path)`` as
   the stream's handler (``on_partial_response(partial, context)`` per token, as a
   stream driver calls it), against the baseline of ``json.dumps`` + ``write`` of
   an equivalent plain dict per token (the same keys and values: seq, event name,
   ids, an ISO time taken per token, the text). Goal: at most 2.0x. Also shown:
   the same stream through ``ScriptedChatModel.stream`` (the model's own cost
   included), and recording a chain run's deltas (``on_llm_new_delta``).
2. A chain state of ``--messages`` messages (user questions, assistant answers
   with a tool call, tool results; ~200 characters each): ``json.dumps(chain.
   to_state())`` and ``LLMChain.from_state(json.loads(text), ...)`` against
   ``json.dumps`` / ``json.loads`` of the same data as plain dicts, per message.
   Goal: at most 3.0x for encode plus decode.
3. Memory while recording a long stream (tracemalloc, sampled every tenth): the
   recorder holds nothing per record.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import _checkout  # noqa: F401  # this checkout's langhooks first
import attrs
from typing_extensions import override

import langhooks as lh
from langhooks.chain import LLMChain
from langhooks.events import EventRecorder
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

_WORDS: Final = ("The ", "quick", " brow", "n fox", " jump", "s ove", "r the", " dog")


def best_of(repeat: int, *runs: Callable[[], object]) -> list[float]:
    """The fastest of ``repeat`` timed runs of each, in seconds (they take turns,
    so a slow patch of a shared machine hits all of them)."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            gc.collect()
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


# --- 1. recording a stream -----------------------------------------------------------


def record_stream(path: Path, partials: int) -> Callable[[], None]:
    """Each partial delivered to a recorder writing ``path``."""
    texts = [lh.PartialResponse(text=_WORDS[i % len(_WORDS)]) for i in range(partials)]
    context = lh.PartialResponseContext(handle=lh.StreamingHandle())

    def run() -> None:
        with EventRecorder(path) as recorder:
            on_partial = recorder.on_partial_response
            for partial in texts:
                on_partial(partial, context)

    return run


def plain_stream(path: Path, partials: int) -> Callable[[], None]:
    """The baseline: ``json.dumps`` + ``write`` of an equivalent plain dict."""
    texts = [_WORDS[i % len(_WORDS)] for i in range(partials)]

    def run() -> None:
        with open(path, "a", encoding="utf-8") as file:
            write, dumps, now, utc = (
                file.write,
                json.dumps,
                datetime.datetime.now,
                (datetime.UTC),
            )
            for seq, text in enumerate(texts):
                write(
                    dumps(
                        {
                            "seq": seq,
                            "event": "on_partial_response",
                            "run_id": None,
                            "invocation_id": None,
                            "parent_id": None,
                            "time": now(utc).isoformat(),
                            "payload": {"partial": {"text": text}},
                        }
                    )
                    + "\n"
                )

    return run


def model_stream(path: Path, partials: int) -> Callable[[], None]:
    """The same stream produced by ``ScriptedChatModel`` into a recorder."""
    text = "".join(_WORDS[i % len(_WORDS)] + " " for i in range(partials))
    request = ChatRequest(messages=[lh.Message.user("go")])

    def run() -> None:
        model = ScriptedChatModel([ScriptedTurn(text=text)])
        with EventRecorder(path) as recorder:
            model.stream(request, recorder)

    return run


def model_alone(partials: int) -> Callable[[], None]:
    """The same stream into a handler that does nothing (the model's own cost)."""
    text = "".join(_WORDS[i % len(_WORDS)] + " " for i in range(partials))
    request = ChatRequest(messages=[lh.Message.user("go")])

    class Idle(lh.StreamingChatResponseHandler):
        @override
        def on_partial_response(
            self, partial: lh.PartialResponse, context: lh.PartialResponseContext
        ) -> None:
            pass

    def run() -> None:
        ScriptedChatModel([ScriptedTurn(text=text)]).stream(request, Idle())

    return run


def record_deltas(path: Path, partials: int) -> Callable[[], None]:
    """A chain run's deltas: ``on_llm_new_delta(chain, (delta,))`` per token."""
    chain = LLMChain(ScriptedChatModel([])).add_messages(
        [lh.Message.system("Be brief."), lh.Message.user("Tell me a story.")]
    )
    with lh.invocation("run") as current:
        chain = attrs.evolve(chain, invocation=current)
    deltas = [(lh.MessageDelta(text=_WORDS[i % len(_WORDS)]),) for i in range(partials)]

    def run() -> None:
        with EventRecorder(path) as recorder:
            on_delta = recorder.on_llm_new_delta
            for batch in deltas:
                on_delta(chain, batch)

    return run


# --- 2. run state ---------------------------------------------------------------------


def lookup(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
    """The benchmark chain's tool (never run)."""
    return "ok"


TOOL: Final = lh.Tool("lookup", lookup, description="Look something up.")


def conversation(messages: int) -> LLMChain:
    """A chain of ``messages`` realistic messages."""
    sentence = "The quick brown fox jumps over the lazy dog, twice, and then rests. "
    items: list[lh.Message] = [lh.Message.system("You are helpful. " * 4)]
    turn = 0
    while len(items) < messages:
        turn += 1
        call = lh.ToolCall(
            call_id=f"call_{turn:04d}",
            name="lookup",
            arguments={"query": f"fox facts {turn}", "limit": 5, "fresh": True},
        )
        items.append(lh.Message.user(sentence * 2 + f"Question {turn}?"))
        items.append(lh.Message.assistant(sentence, tool_calls=[call]))
        items.append(
            lh.Message.tool(
                [
                    lh.ToolResult(
                        tool_call_id=call.call_id, name="lookup", content=sentence * 3
                    )
                ]
            )
        )
        items.append(
            lh.Message(
                role="assistant",
                content=sentence * 2,
                metadata={"id": f"resp_{turn}", "model": "gpt-4o"},
            )
        )
    return LLMChain(
        ScriptedChatModel([]), tools=[TOOL], custom_context={"user": "ada"}
    ).add_messages(items[:messages])


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partials", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    partials = args.partials

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)

        def fresh(name: str) -> Path:
            path = directory / name
            path.unlink(missing_ok=True)
            return path

        def fresh_run(
            make: Callable[[Path, int], Callable[[], None]], name: str
        ) -> Callable[[], None]:
            def run() -> None:
                make(fresh(name), partials)()

            return run

        plain, recorded, through_model, idle, deltas = best_of(
            args.repeat,
            fresh_run(plain_stream, "plain.jsonl"),
            fresh_run(record_stream, "recorded.jsonl"),
            fresh_run(model_stream, "model.jsonl"),
            model_alone(partials),
            fresh_run(record_deltas, "deltas.jsonl"),
        )
        size = os.path.getsize(directory / "recorded.jsonl")

    per = 1e6 / partials
    ratio = recorded / plain
    print(
        f"1. recording a {partials:,}-partial stream to a file; best of {args.repeat}"
    )
    print(f"   json.dumps + write of plain dicts  {plain * per:6.2f} us/partial")
    print(
        f"   EventRecorder(path)                {recorded * per:6.2f} us/partial   "
        f"ratio {ratio:.2f}x   ({size / partials:.0f} B/record)"
    )
    print(
        f"   ScriptedChatModel.stream + record  {through_model * per:6.2f} us/partial"
        f"   (the model alone: {idle * per:.2f})"
    )
    print(
        f"   chain deltas (on_llm_new_delta)    {deltas * per:6.2f} us/delta     "
        f"ratio {deltas / plain:.2f}x"
    )
    print(f"   goal <= 2.0x: {'meets' if ratio <= 2.0 else 'MISSES'}")

    chain = conversation(args.messages)
    state = chain.to_state()
    text = json.dumps(state)
    plain_state = json.loads(text)  # the same data as plain dicts

    def encode() -> None:
        json.dumps(chain.to_state())

    def decode() -> None:
        LLMChain.from_state(json.loads(text), chain.model, tools=[TOOL])

    def plain_encode() -> None:
        json.dumps(plain_state)

    def plain_decode() -> None:
        json.loads(text)

    assert LLMChain.from_state(
        json.loads(text), chain.model, tools=[TOOL]
    ).messages == (chain.messages)
    enc, dec, penc, pdec = best_of(
        args.repeat * 3, encode, decode, plain_encode, plain_decode
    )
    per_message = 1e6 / args.messages
    both = (enc + dec) / (penc + pdec)
    print()
    print(
        f"2. a {args.messages}-message chain state ({len(text) / 1024:.0f} KiB of "
        f"JSON); best of {args.repeat * 3}"
    )
    print(
        f"   encode: to_state + json.dumps      {enc * per_message:6.2f} us/message   "
        f"plain json.dumps {penc * per_message:5.2f}   ratio {enc / penc:.2f}x"
    )
    print(
        f"   decode: json.loads + from_state    {dec * per_message:6.2f} us/message   "
        f"plain json.loads {pdec * per_message:5.2f}   ratio {dec / pdec:.2f}x"
    )
    print(
        f"   encode + decode ratio {both:.2f}x; goal <= 3.0x: "
        f"{'meets' if both <= 3.0 else 'MISSES'}"
    )

    print()
    print("3. memory while recording (tracemalloc, above the start)")
    long = partials * 10
    every = long // 10
    texts = [lh.PartialResponse(text=_WORDS[i % len(_WORDS)]) for i in range(8)]
    context = lh.PartialResponseContext(handle=lh.StreamingHandle())
    with tempfile.TemporaryDirectory() as tmp:
        gc.collect()
        tracemalloc.start()
        start, _ = tracemalloc.get_traced_memory()
        print("   records      held (KiB)")
        with EventRecorder(Path(tmp) / "long.jsonl") as recorder:
            for i in range(long):
                recorder.on_partial_response(texts[i % 8], context)
                if (i + 1) % every == 0:
                    current, _ = tracemalloc.get_traced_memory()
                    print(f"   {i + 1:9,}    {(current - start) / 1024:8.1f}")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    print(f"   peak {(peak - start) / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
