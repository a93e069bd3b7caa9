"""Write the sync twin of each async module by rule, as httpcore's unasync does.

Where a sync function is its async one minus ``async``/``await``, only the async
one is written by hand; its module (``…_async.py``) is the source, and the sync
module beside it is generated from it, line by line:

- ``async def`` → ``def``, ``async for``/``async with`` → ``for``/``with``,
  ``await x`` → ``x``;
- the async protocol names → the sync ones (``__aenter__`` → ``__enter__``,
  ``AsyncIterator`` → ``Iterator``, ``anext`` → ``next`` …, see ``SUBS``);
- a name with an ``Async`` class prefix loses it (``AsyncStreamDriver`` →
  ``StreamDriver``); a name with an ``a``/``async_`` prefix loses it, and an
  ``_async`` suffix becomes ``_sync``, when the source defines it (``apump`` →
  ``pump``, ``_aread_stream`` → ``_read_stream``, ``drive_async`` →
  ``drive_sync``) or ``PREFIXED`` or the ``Pair``'s ``prefixed`` lists it;
- an import of another async source imports its twin (``_drive_async`` →
  ``_drive_sync``);
- the primitives that differ (a lock, a sleep, a call in its own context) are
  called by name from ``_core/_twins_async.py``, whose twin ``_twins_sync.py`` is
  written by hand too (``PRIMITIVES``): an import of it imports the sync one, and
  its names are renamed as the source's own (``asleep`` → ``sleep``);
- ``EXACT`` replaces the few phrases that differ otherwise (a union of an async
  and a sync handler is the sync handler), and a ``Pair``'s own ``exact`` those of
  one source (a phrase may span lines: a docstring that differs);
- a line ending in ``# unasync: remove`` is left out of the sync module, with the
  block it opens (``if is_async:  # unasync: remove`` + ``await result``).

A global rename or phrase (``SUBS``, ``PREFIXED``, ``EXACT``) that no source uses
any more fails the run, as a ``Pair``'s phrase that is not in its source does: the
tables hold only what is needed. ``twin_table()`` is the table of pairs
``docs/contributing.md`` shows (``scripts/generate.py`` writes it there).

The result is then fixed and formatted with ruff: imports sorted and pruned, and
an assignment left unused (``result = call()`` whose ``await result`` went) becomes
the bare call. Each generated module starts with a do-not-edit header naming its
source. ``scripts/generate.py`` writes these modules with the others, and its
``--check`` (run in CI) fails when one is stale.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Pair:
    """An async source and the sync module it gives, both under langhooks/."""

    source: str
    target: str
    #: What the pair is, for the table in docs/contributing.md ("" for nothing).
    what: str = ""
    #: Phrases of this source whose sync form is not a rename of each word, applied
    #: to the whole text before the line rules (so a phrase may span lines: a
    #: docstring that differs, say).
    exact: Mapping[str, str] = field(default_factory=dict)
    #: Names with an ``a`` prefix this source uses but does not define.
    prefixed: frozenset[str] = frozenset()


#: The ``redis.asyncio`` clients of a Redis source, to the sync ones.
REDIS_CLIENTS: Final = {
    "import redis.asyncio\n": "import redis\n",
    "redis.asyncio.": "redis.",
}

#: The async sources and the sync module each one gives.
PAIRS: Final = (
    Pair(
        "models/_run_async.py", "models/_run_sync.py", what="one provider HTTP stream"
    ),
    Pair("models/_drive_async.py", "models/_drive_sync.py", what="the stream driver"),
    Pair(
        "models/_ollama_async.py",
        "models/_ollama_sync.py",
        what="Ollama's chat request",
    ),
    Pair(
        "integrations/_redis/_store_async.py",
        "integrations/_redis/_store_sync.py",
        what="the Redis run store",
        exact={
            (
                "An ``AsyncRunStore`` in Redis (``redis.asyncio``): save an"
                " interrupted run,\n    resume it in any worker, once."
                " ``RedisRunStore`` is its sync twin, on the same\n    keys: a run"
                " saved by one is resumed by the other."
            ): (
                "A ``RunStore`` in Redis: save an interrupted run, resume it in any"
                " worker,\n    once."
            ),
            "client: a ``redis.asyncio.Redis``": (
                "client: a synchronous ``redis.Redis``"
            ),
            **REDIS_CLIENTS,
        },
        prefixed=frozenset({"aresume_once", "asave_run", "arun"}),
    ),
    Pair(
        "integrations/_postgres/_store_async.py",
        "integrations/_postgres/_store_sync.py",
        what="the PostgreSQL run store",
        exact={
            # A thread-safe lock.
            "import asyncio\n": "import threading\n",
            "asyncio.Lock()": "threading.Lock()",
            "is_async=True": "is_async=False",
            # The class docstring, for the sync store.
            "\n    The asyncio twin of ``PostgresRunStore``, on the same tables: a run "
            "saved by\n    one is resumed by the other. Every method is awaited.\n": "",
        },
        prefixed=frozenset({"aresume_once", "asave_run", "arun"}),
    ),
    Pair(
        "integrations/_redis/_read_async.py",
        "integrations/_redis/_read_sync.py",
        what="reading a run's Redis stream",
        exact={
            **REDIS_CLIENTS,
            # The sync cluster client's methods are untyped, the asyncio one's not.
            "node = client.get_node_from_key(key)\n": (
                "node = client.get_node_from_key(key)"
                "  # type: ignore[no-untyped-call]\n"
            ),
            "return await client.execute_command(\n": (
                "return client.execute_command(  # type: ignore[no-untyped-call]\n"
            ),
        },
    ),
    Pair(
        "integrations/_redis/_follow_async.py",
        "integrations/_redis/_follow_sync.py",
        what="following a run's Redis stream",
        exact={
            **REDIS_CLIENTS,
            "_events import Handler\n": "_events import SyncHandler\n",
            "handler: Handler,": "handler: SyncHandler,",
            (
                "handler: a chain and/or streaming handler, async (its methods "
                "awaited) or\n            sync (called inline)."
            ): "handler: a synchronous chain and/or streaming handler.",
            "_replayer(handler, sync=False)": "_replayer(handler, sync=True)",
            "for entry in reader.take(reply):\n            yield entry": (
                "yield from reader.take(reply)"
            ),
        },
        prefixed=frozenset(
            {"arun_entries", "aread_stream", "areplay", "areplay_events"}
        ),
    ),
    Pair(
        "chain/_calls_async.py",
        "chain/_calls_sync.py",
        what="calls into handlers and tools",
        exact={
            "AsyncChainCallbackHandler | ChainCallbackHandler": "ChainCallbackHandler",
            # An async tool's awaitable is run to its end (the worker thread's
            # asyncio goes with the thread).
            "value = await value": "value = run_awaitable(value)",
            "import asyncio\n": "from ._perform import run_awaitable\n",
            "        thread: a sync tool runs in a worker thread (one of concurrent "
            "calls).\n": "",
        },
    ),
    Pair(
        "chain/_perform_async.py",
        "chain/_perform_sync.py",
        what="the chain's driver",
        exact={
            "AsyncBridge": "SyncBridge",
            # A sync run takes sync handlers only.
            "callbacks = chain.callbacks": "callbacks = sync_callbacks(chain)",
        },
        prefixed=frozenset(
            {"astream", "async_sleep", "deliver_async", "execute_async"}
        ),
    ),
    Pair(
        "models/_raw_async.py",
        "models/_raw_sync.py",
        what="reading an SDK's response",
        exact={
            # A sync httpx response is a Body as it is.
            "yield AsyncHTTPBody(response)": "yield response",
            "yield AsyncHTTPBody(events.response)": "yield events.response",
            # A sync stream's close() returns no awaitable; were it a coroutine,
            # it is closed, not left to warn it was never awaited.
            "if inspect.isawaitable(result):\n                    await result": (
                "if inspect.iscoroutine(result):  # an async close() cannot run here\n"
                "                    result.close()"
            ),
            ", awaited when it returns an awaitable": "",
            " (awaited)": "",
            "chat.stream_async(": "chat.stream(",
        },
        prefixed=frozenset({"aerror_body_hook"}),
    ),
    Pair(
        "models/_scripted_async.py", "models/_scripted_sync.py", what="a scripted turn"
    ),
    Pair(
        "_persist/_stores_async.py",
        "_persist/_stores_sync.py",
        what="the `RunStore` protocol, and the store every backend is under",
        exact={
            "``AsyncRedisRunStore`` and ``AsyncPostgresRunStore`` satisfy it: the\n"
            "    async twin of ``RunStore``, the same methods, awaited.": (
                "``RedisRunStore``, ``PostgresRunStore`` and ``MemoryRunStore`` "
                "satisfy it; the\n    web apps take one as ``store=``."
            ),
        },
        prefixed=frozenset({"aresume_once", "asave_run", "arun"}),
    ),
    Pair(
        "_persist/_claims_async.py",
        "_persist/_claims_sync.py",
        what="what a store gives the resume",
        exact={"an async store's backend gives": "a synchronous store's backend gives"},
    ),
    Pair(
        "integrations/_langchain/_callbacks_async.py",
        "integrations/_langchain/_callbacks_sync.py",
        what="the LangChain callback handler",
        exact={
            "AsyncCallbackHandler": "BaseCallbackHandler",
            " Sync and async langhooks handlers attach;\n    the async ones are"
            " awaited.": "",
            (
                "Attach langhooks handlers, sync or async.\n\n        Raises:\n"
                "            TypeError: a handler is not a langhooks handler."
            ): (
                "Attach sync langhooks handlers.\n\n        Raises:\n"
                "            TypeError: a handler is not a langhooks handler, or is an"
                " async\n                one (the async twin takes those)."
            ),
        },
        prefixed=frozenset({"ainvoke", "adeliver", "areview"}),
    ),
    Pair(
        "_persist/_resume_async.py",
        "_persist/_resume_sync.py",
        what="a resume, at most once per call",
        prefixed=frozenset(
            {"_aguarded", "_arenewing", "aexecute_tool_calls_with_decisions", "arun"}
        ),
    ),
)

#: The primitives that differ, written by hand both ways: the async sources call
#: them by name, and their twins the sync ones (see the module docstring).
PRIMITIVES: Final = ("_core/_twins_async.py", "_core/_twins_sync.py")

#: Whole-word renames, async name to sync name.
SUBS: Final = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "AsyncIterator": "Iterator",
    "AbstractAsyncContextManager": "AbstractContextManager",
    "asynccontextmanager": "contextmanager",
    "anext": "next",
    "aclose": "close",
    "aiter_bytes": "iter_bytes",
    "check_async_client": "check_sync_client",
}

#: Names with an ``a`` prefix the sources use but do not define (defined in a
#: shared module, both ways).
PREFIXED: Final = frozenset({"aread_error_body", "_anothing", "atrace"})

#: Phrases whose sync form is not a rename of each word.
EXACT: Final = {
    "AsyncStreamingChatResponseHandler | StreamingChatResponseHandler": (
        "StreamingChatResponseHandler"
    ),
    "allow_async=True": "allow_async=False",
    "Awaitable[ChatResponse]": "ChatResponse",
    # A sync httpx response is a Body as it is.
    "yield AsyncHTTPBody(r)": "yield r",
    # What keeps a claim alive.
    "heartbeat task": "heartbeat thread",
}

_REMOVE: Final = re.compile(r"#\s*unasync:\s*remove\s*$")
_WORD: Final = re.compile(r"\b[A-Za-z_]\w*\b")
_AWAIT: Final = re.compile(r"\bawait\s+")
_ASYNC: Final = re.compile(r"\basync\s+(?=def\b|for\b|with\b)")


def header(source: str) -> str:
    """The first lines of the module generated from ``source`` (two, so that a long
    path keeps them within the line length)."""
    return f"# generated by scripts/unasync.py — do not edit\n# from langhooks/{source}"


def defined_prefixed(text: str) -> set[str]:
    """The ``async def`` functions and methods of ``text`` whose name carries an
    ``a``/``async_`` prefix: renamed wherever they occur (``Async`` classes are
    renamed everywhere)."""
    return {
        node.name
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.AsyncFunctionDef) and _sync_name(node.name) != node.name
    }


def _sync_name(name: str) -> str:
    """``name`` without its async prefix, or with ``_sync`` for its ``_async``
    suffix (unchanged when it has neither)."""
    if name.endswith("_async"):
        return name[: -len("_async")] + "_sync"
    bare = name.lstrip("_")
    under = name[: len(name) - len(bare)]
    if bare.startswith("Async") and bare[5:6].isupper():
        return under + bare[5:]
    if bare.startswith("async_"):
        return under + bare[6:]
    if bare.startswith("a") and len(bare) > 1 and (bare[1].islower() or bare[1] == "_"):
        return under + bare[1:]
    return name


#: The async modules' names, to their twins' (an import of one becomes an import
#: of the other).
MODULES: Final = {
    Path(source).stem: Path(target).stem
    for source, target in (*((pair.source, pair.target) for pair in PAIRS), PRIMITIVES)
}


def _rename(word: re.Match[str], prefixed: frozenset[str], used: set[str]) -> str:
    name = word.group(0)
    if name in SUBS:
        used.add(name)
        return SUBS[name]
    if name in MODULES:
        return MODULES[name]
    if name in prefixed:
        if name in PREFIXED:
            used.add(name)
        return _sync_name(name)
    if name.lstrip("_").startswith("Async") and name.lstrip("_")[5:6].isupper():
        return _sync_name(name)
    return name


def _kept(lines: Iterable[str]) -> list[str]:
    """``lines`` without those marked ``# unasync: remove`` and their blocks."""
    kept: list[str] = []
    skip_deeper: int | None = None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if skip_deeper is not None:
            if not line.strip() or indent > skip_deeper:
                continue
            skip_deeper = None
        if _REMOVE.search(line):
            if _REMOVE.sub("", line).rstrip().endswith(":"):
                skip_deeper = indent
            continue
        kept.append(line)
    return kept


def unasync(
    text: str,
    exact: Mapping[str, str] | None = None,
    prefixed: frozenset[str] = frozenset(),
    used: set[str] | None = None,
) -> str:
    """The sync twin of the async module ``text``, before formatting.

    ``exact`` and ``prefixed`` are a ``Pair``'s own phrases and names, used beside
    ``EXACT`` and ``PREFIXED``; the entries of ``SUBS``, ``PREFIXED`` and ``EXACT``
    the text used are added to ``used``.
    """
    if used is None:
        used = set()
    for phrase, replacement in (exact or {}).items():
        if phrase not in text:
            raise ValueError(
                f"unasync: the phrase {phrase!r} is not in the source: update or "
                f"remove it in its Pair's exact (scripts/unasync.py, PAIRS)"
            )
        text = text.replace(phrase, replacement)
    prefixed = frozenset(defined_prefixed(text)) | PREFIXED | prefixed
    out: list[str] = []
    for line in _kept(text.splitlines()):
        for phrase, replacement in EXACT.items():
            if phrase in line:
                used.add(phrase)
                line = line.replace(phrase, replacement)
        line = _ASYNC.sub("", line)
        line = _AWAIT.sub("", line)
        line = _WORD.sub(lambda word: _rename(word, prefixed, used), line)
        out.append(line)
    return "\n".join(out) + "\n"


def _ruff(text: str, path: Path) -> str:
    """``text`` fixed as the generated modules are (imports, unused assignments),
    then formatted."""
    for command in (
        ["check", "--fix-only", "--unsafe-fixes", "--select", "I,F401,F841"],
        ["format"],
    ):
        done = subprocess.run(
            [
                sys.executable,
                *("-m", "ruff", *command, "--quiet"),
                *("--stdin-filename", str(path), "-"),
            ],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        text = done.stdout
    return text


def _exports(path: Path) -> list[str]:
    """The ``__all__`` of the module at ``path``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            return list(ast.literal_eval(node.value))
    raise ValueError(f"unasync: {path} has no __all__")


def primitives() -> frozenset[str]:
    """The async primitives' names the sources use (renamed as their own).

    Raises:
        ValueError: the two primitives modules do not name the same primitives.
    """
    package = ROOT / "langhooks"
    names = _exports(package / PRIMITIVES[0])
    twins = {_sync_name(name) for name in names}
    if twins != set(_exports(package / PRIMITIVES[1])):
        raise ValueError(
            f"unasync: {PRIMITIVES[1]} must name the sync twin of each of "
            f"{PRIMITIVES[0]}'s primitives ({sorted(twins)}), and nothing else"
        )
    return frozenset(names)


def unused(used: set[str]) -> list[str]:
    """The global renames and phrases not in ``used``."""
    return [name for name in (*SUBS, *PREFIXED, *EXACT) if name not in used]


def render(pairs: Iterable[Pair] = PAIRS) -> dict[Path, str]:
    """Every sync twin, path to text, from the async sources as they are now.

    Raises:
        ValueError: a ``Pair``'s phrase is not in its source, the primitives
            modules disagree, or (rendering every pair) a global rename or phrase
            is used by no source.
    """
    package = ROOT / "langhooks"
    named = primitives()
    used: set[str] = set()
    pairs = tuple(pairs)
    bodies = [
        (
            pair,
            unasync(
                (package / pair.source).read_text(encoding="utf-8"),
                pair.exact,
                pair.prefixed | named,
                used,
            ),
        )
        for pair in pairs
    ]
    stale = unused(used)
    if pairs == PAIRS and stale:
        raise ValueError(
            f"unasync: no source uses {', '.join(map(repr, stale))}: remove it from "
            f"SUBS, PREFIXED or EXACT (scripts/unasync.py)"
        )
    files: dict[Path, str] = {}
    for pair, body in bodies:
        path = package / pair.target
        files[path] = _ruff(f"{header(pair.source)}\n{body}", path)
    return files


def twin_table() -> str:
    """The Markdown table of the pairs, for docs/contributing.md."""
    rows = ["| written by hand | generated |", "| --- | --- |"]
    for pair in PAIRS:
        what = f" ({pair.what})" if pair.what else ""
        rows.append(f"| `{pair.source}` | `{pair.target}`{what} |")
    return "\n".join(rows) + "\n"
