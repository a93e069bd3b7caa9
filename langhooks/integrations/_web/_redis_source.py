"""``RedisBackend``: runs kept in Redis, so the page can be served by another process
than the one running the agent.

Streams are those of ``RedisEventPublisher`` (``{prefix}run:{run_id}``, the entry that
ends a run marked); interrupted runs are saved and resumed once through
``RedisRunStore``. The runs this app starts are also listed in the hash
``{prefix}web:runs`` (their prompt and start time); runs other processes publish are
found by their streams. redis-py's client is synchronous: its calls run on a thread
pool of the backend's own, so a blocked read never holds the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, TypeVar, final

from typing_extensions import override

from ..._core._chain_callbacks import ChainCallbackHandler
from ..._core._messages import LangHooksError
from .._auth import owner_metadata
from .._redis._entries import _Entries
from .._redis._publisher import RedisEventPublisher
from .._redis._store_sync import RedisRunStore
from .._redis._wire import (
    EVENT_FIELD,
    RECORD_FIELD,
    Keys,
    SyncClient,
    block_step,
    check_sync_client,
    ends_run,
    field,
    read_stream,
    record_of,
    text,
)
from ._backend import (
    Agent,
    DecisionMismatch,
    Entry,
    RunConflict,
    RunNotFound,
    RunState,
    RunSummary,
    Tasks,
)

if TYPE_CHECKING:
    from ..._persist._stores import RunStore
    from ...chain import Decision, LLMChain, RunResult

__all__ = ["RedisBackend"]

_log: Final = logging.getLogger("langhooks.integrations.web")
_T = TypeVar("_T")
_ID: Final = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")
# Each part of a stream id is an unsigned 64-bit number.
_MAX_ID_PART: Final = 2**64 - 1
# Entries one read takes at most, and the most runs the page lists.
_COUNT: Final = 500
_MAX_RUNS: Final = 200


def _stream_id(value: str) -> tuple[int, int]:
    ms, _, seq = value.partition("-")
    return int(ms), int(seq)


@final
class _Begun(ChainCallbackHandler):
    """Resolves a future with the run id when the run (or its resume) begins."""

    def __init__(self, future: asyncio.Future[str]) -> None:
        self._future = future

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        assert chain.invocation is not None  # a running chain has its invocation
        self._future.get_loop().call_soon_threadsafe(
            _resolve, self._future, chain.invocation.id
        )


def _resolve(future: asyncio.Future[str], run_id: str) -> None:
    # Only the first start counts (a resume's run() after its tools starts again).
    with contextlib.suppress(asyncio.InvalidStateError):
        future.set_result(run_id)


@final
class RedisBackend:
    """Runs in Redis, shared by every process that serves the page or runs agents.

    Args:
        client: a synchronous ``redis.Redis`` or ``redis.cluster.RedisCluster``
            client.
        prefix: the key prefix the publishers and run stores use.
        shards: the publishers' ``shards`` (None: their default for this client).
        store: where interrupted runs wait (None: a ``RedisRunStore`` on
            ``client`` and ``prefix``).
    """

    def __init__(
        self,
        client: SyncClient,
        prefix: str,
        shards: int | None = None,
        store: RunStore | None = None,
    ) -> None:
        check_sync_client(client, "create_app(redis=...)")
        self._client = client
        self._prefix = prefix
        self._keys = Keys.of(client, prefix, shards)
        self._index = f"{prefix}web:runs"
        self._store: RunStore = (
            RedisRunStore(client, prefix=prefix) if store is None else store
        )
        self._publisher: RedisEventPublisher | None = None
        self._pool = ThreadPoolExecutor(64, thread_name_prefix="langhooks-web-redis")
        self._tasks = Tasks()
        self._unreadable: set[str] = set()

    async def _call(self, function: Callable[..., _T], *args: Any, **kw: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, functools.partial(function, *args, **kw)
        )

    # --- reading ---------------------------------------------------------------------

    def check_id(self, text: str) -> str:
        """``text`` when it is a Redis stream id.

        Raises:
            ValueError: it is not "<milliseconds>-<sequence>".
        """
        if _ID.fullmatch(text) is None or max(_stream_id(text)) > _MAX_ID_PART:
            raise ValueError(f"not a Redis stream id: {text[:40]!r}")
        return text

    def _summary(self, run_id: str) -> RunSummary | None:
        client = self._client
        # redis-py's reply types are unions over its sync and async clients.
        listed: Any = client.hget(self._index, run_id)
        last: Any = client.xrevrange(self._keys.run(run_id), count=1)
        if listed is None and not last:
            return None
        meta = _meta(listed)
        created = meta.get("created")
        if not isinstance(created, int | float):
            first: Any = client.xrange(self._keys.run(run_id), count=1)
            created = _stream_id(text(first[0][0]))[0] / 1000 if first else 0.0
        try:
            state = self._state(run_id, last[0] if last else None)
        except (ValueError, TypeError, KeyError, AttributeError):
            # One run nobody here can read must not hide the others.
            if run_id not in self._unreadable:  # said once, not at every listing
                self._unreadable.add(run_id)
                _log.warning(
                    "langhooks web: run %r ends with an entry this version cannot "
                    "decode; listed as unreadable",
                    run_id,
                )
            state = "unreadable"
        prompt, owner = meta.get("prompt"), meta.get("owner")
        return RunSummary(
            run_id=run_id,
            prompt=prompt if isinstance(prompt, str) else "",
            state=state,
            created=created,
            owner=owner if isinstance(owner, str) else None,
        )

    def _state(self, run_id: str, last: Any) -> RunState:
        if last is not None and ends_run(last[1]):
            return "error" if _event(last[1]) == "on_error" else "ok"
        # Another worker's resume is seen through a Redis store's claim; a store
        # of another kind tells no one, so its run reads "interrupted" till then.
        if isinstance(self._store, RedisRunStore) and self._store.claimed(run_id):
            return "resuming"
        if (
            last is not None
            and _event(last[1]) == "on_run_complete"
            and record_of(last[1]).payload["result"]["status"] == "interrupted"
        ):
            return "interrupted"
        # Also a resume between its tools and the model's answer.
        return "running"

    async def summary(self, run_id: str) -> RunSummary:
        """One run, whoever published it.

        Raises:
            RunNotFound: no run has this id here.
        """
        found = await self._call(self._summary, run_id)
        if found is None:
            raise RunNotFound(run_id)
        return found

    def _runs(self) -> list[RunSummary]:
        ids = {text(run_id) for run_id in self._client.hkeys(self._index)}
        for key in self._client.scan_iter(match=self._keys.run_pattern()):
            run_id = self._keys.run_id_of(text(key))
            if run_id is not None:
                ids.add(run_id)
        summaries = [s for s in map(self._summary, sorted(ids)) if s is not None]
        summaries.sort(key=lambda s: s.created, reverse=True)
        return summaries[:_MAX_RUNS]

    async def runs(self) -> list[RunSummary]:
        """The newest runs: this app's and those other processes published."""
        return await self._call(self._runs)

    async def owner(self, run_id: str) -> str | None:
        """Who started the run through this app (None: no one known)."""
        listed: Any = await self._call(self._client.hget, self._index, run_id)
        owner = _meta(listed).get("owner")
        return owner if isinstance(owner, str) else None

    def _read(self, run_id: str, after: str | None, block_ms: int) -> list[Entry]:
        client = self._client
        key = self._keys.run(run_id)
        # A batch redis-py retried after a timeout can be in the stream twice:
        # follow's dedup (by publisher and seq) drops the repeats, knowing the
        # record the reader saw last.
        once = _Entries()
        if after is not None:
            seen: Any = client.xrange(key, after, after, count=1)
            for entry_id, fields in seen:
                self._entry(once, entry_id, fields)
        answer: Any = read_stream(
            client, key, after or "0-0", count=_COUNT, block=block_ms
        )
        return [
            self._entry(once, entry_id, fields)
            for _, stream in answer
            for entry_id, fields in stream
        ]

    @staticmethod
    def _entry(once: _Entries, entry_id: Any, fields: Any) -> Entry:
        record = field(fields, RECORD_FIELD)
        try:
            # Something else written to a run's stream is not this app's to show.
            fresh = None if record is None else once.entry(entry_id, fields)
        except (ValueError, TypeError):
            # A record this version cannot decode (a newer schema): skipped, so
            # the rest of the stream still reaches the page.
            _log.warning(
                "langhooks web: skipped the undecodable stream entry %s", text(entry_id)
            )
            fresh = None
        if fresh is None:
            return Entry(
                id=text(entry_id), event="", data="", ends=ends_run(fields), hidden=True
            )
        return Entry(
            id=fresh.id, event=_event(fields), data=text(record), ends=fresh.ends_run
        )

    async def read(self, run_id: str, after: str | None, timeout: float) -> list[Entry]:
        """The entries after ``after``, blocking up to ``timeout`` seconds."""
        # Not longer than the client's socket timeout allows (an earlier return
        # only makes the next heartbeat come sooner).
        block_ms = block_step(self._client, max(1, round(timeout * 1000)))
        return await self._call(self._read, run_id, after, block_ms)

    def _ended(self, run_id: str, after: str) -> bool:
        last: Any = self._client.xrevrange(self._keys.run(run_id), count=1)
        return (
            bool(last)
            and ends_run(last[0][1])
            and (_stream_id(text(last[0][0])) <= _stream_id(after))
        )

    async def ended(self, run_id: str, after: str | None) -> bool:
        """Whether the entry that ends the run is at or before ``after``."""
        if after is None:
            return False
        return await self._call(self._ended, run_id, after)

    # --- driving ---------------------------------------------------------------------

    def _publisher_of(self) -> RedisEventPublisher:
        if self._publisher is None:
            self._publisher = RedisEventPublisher(
                self._client, prefix=self._prefix, shards=self._keys.shards
            )
        return self._publisher

    async def start(self, chain: LLMChain, prompt: str, *, owner: str | None) -> str:
        """Run ``chain`` as a task of this loop, published to Redis.

        Raises:
            Exception: whatever the run raised before it began.
        """
        begun: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        chain = chain.add_callback(_Begun(begun)).add_callback(self._publisher_of())
        task: asyncio.Future[Any] = self._tasks.spawn(self._first_run(chain, owner))
        task.add_done_callback(_log_failure)
        await asyncio.wait({begun, task}, return_when=asyncio.FIRST_COMPLETED)
        if not begun.done():  # pragma: no cover - defensive, see below
            # raises what the run raised before it began (a waiting call did,
            # until a new prompt moved on past them: no chain the app builds
            # raises there now, so no test reaches it)
            task.result()
        run_id = begun.result()
        meta = json.dumps({"prompt": prompt, "created": time.time(), "owner": owner})
        await self._call(self._client.hset, self._index, run_id, meta)
        return run_id

    async def _first_run(self, chain: LLMChain, owner: str | None) -> None:
        result: RunResult = await chain.arun()
        # Saved however it ended, as RedisRunStore.resume does: an interrupted run
        # can then be resumed by any process, a finished one is refused.
        await self._call(self._store.save, result.chain, metadata=owner_metadata(owner))

    async def resume(
        self,
        run_id: str,
        decisions: Sequence[tuple[str, Decision]],
        agent: Agent | None,
    ) -> None:
        """Resume an interrupted run through ``RedisRunStore`` (once), in a thread.

        Raises:
            RunNotFound: no run has this id.
            RunConflict: the run is not waiting, is being resumed, or this app has
                no agent to go on with.
            DecisionMismatch: a decision names a call that is not waiting.
        """
        summary = await self.summary(run_id)
        if agent is None:
            raise RunConflict("this app runs no agent, so it cannot resume runs")
        by_id = dict(decisions)
        if len(by_id) != len(decisions):
            raise DecisionMismatch("a tool call is given more than once")
        template = agent(summary.prompt)
        begun: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        callbacks = [_Begun(begun), *template.callbacks, self._publisher_of()]
        work = self._call(
            self._store.resume,
            run_id,
            by_id,
            template.model,
            tools=template.tools,
            callbacks=callbacks,
            fallbacks=template.fallbacks,
            retry=template.retry,
        )
        task: asyncio.Future[Any] = self._tasks.spawn(work)
        await asyncio.wait((begun, task), return_when=asyncio.FIRST_COMPLETED)
        if begun.done():
            # Accepted: what the resumed run raises from now on is only logged.
            task.add_done_callback(_log_failure)
            return
        try:
            task.result()
        except LangHooksError as error:
            if error.type == "conflict":
                raise RunConflict(error.message) from None
            # Keep the store's own reason (never saved, expired, ...) in the answer.
            raise RunConflict(
                "the run waits for no decision yet (its state is not saved): "
                f"{error.message}"
            ) from None
        except ValueError as error:
            raise DecisionMismatch(str(error)) from None

    async def close(self) -> None:
        """Cancel this app's runs, send what the publisher holds, stop the pool."""
        await self._tasks.cancel()
        if self._publisher is not None:
            await self._call(self._publisher.close, 5.0)
        self._pool.shutdown(wait=False, cancel_futures=True)


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:  # pragma: no cover
        # defensive: a run's failure is its on_error event; this logs only what
        # escaped before it began (see ``start``)
        _log.error("langhooks web: a run raised", exc_info=task.exception())


def _meta(listed: Any) -> dict[str, Any]:
    """What this app listed about a run (its prompt, start time, owner); a
    missing or unreadable entry is nothing known."""
    try:
        meta = None if listed is None else json.loads(text(listed))
    except ValueError:  # also a UnicodeDecodeError
        return {}
    return meta if isinstance(meta, dict) else {}


def _event(fields: Any) -> str:
    # The publisher names every entry's event; "message" is SSE's default name.
    return text(field(fields, EVENT_FIELD) or "message")
