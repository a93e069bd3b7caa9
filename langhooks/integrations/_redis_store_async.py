"""``AsyncRedisRunStore``: interrupted runs kept in Redis, resumed once (see
``_redis_runs`` for the keys). (The async module is written by hand; the sync one
is generated from it by ``scripts/unasync.py``.)"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, final

import redis.asyncio
import redis.asyncio.cluster
import redis.commands.core
import redis.exceptions
from typing_extensions import override

from .._core._messages import LangHooksError
from .._persist._resume import Known, Saved, Write
from .._persist._stores import CallKey, PendingRun
from .._persist._stores_async import AsyncStoreBase
from ._redis_runs import (
    APPEND,
    CLAIM,
    FIELDS,
    FINISH_CALL,
    HEARTBEAT,
    INDEX,
    READ,
    RELEASE,
    SETTLE,
    START_CALL,
    Layout,
    as_text,
    call_fields,
    claim_error,
    claim_lost,
    index_for,
    index_keys,
    member_ids,
    saved_of,
    settle_args,
    started_outcome,
)
from ._redis_wire import check_async_client, is_cluster

__all__ = ["AsyncRedisRunStore"]


@final
class AsyncRedisRunStore(AsyncStoreBase):
    """An ``AsyncRunStore`` in Redis (``redis.asyncio``): save an interrupted run,
    resume it in any worker, once. ``RedisRunStore`` is its sync twin, on the same
    keys: a run saved by one is resumed by the other.

    ``resume`` claims the run in Redis (waiting → claimed by this worker) and a
    heartbeat task renews the claim while the worker lives, so a slow tool or a
    long answer never lets a second resume in. Each tool call is recorded before
    it runs and its outcome as soon as it returns: a resume that takes over a run
    whose worker died (no heartbeat for ``claim_timeout`` seconds) reuses what
    ran and never starts a call that had started; that call gets an error result
    saying its worker stopped. Code (model, tools, callbacks) is never stored.

    Args:
        client: a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster``
            client (its ``decode_responses`` setting does not matter). A run is one
            hash, so every change to it is one script on one key, on a cluster
            too.
        prefix: prepended to every key.
        expire_after: seconds a run is kept after its save when ``save`` is not
            given ``expires_in``.
        claim_timeout: seconds without a heartbeat after which a resume's claim
            may be taken over by another resume (its worker is taken for dead).
        lock_timeout: the name ``claim_timeout`` had in earlier releases; when
            given, it is the claim timeout.

    Raises:
        TypeError: ``client`` is not a ``redis.asyncio.Redis`` or
            ``redis.asyncio.cluster.RedisCluster``, or a bad option.
        ValueError: ``claim_timeout`` is not > 0 and finite.
    """

    def __init__(
        self,
        client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster,
        *,
        prefix: str = "langhooks:",
        expire_after: int = 7 * 24 * 3600,
        claim_timeout: float = 60.0,
        lock_timeout: float | None = None,
    ) -> None:
        check_async_client(client, "AsyncRedisRunStore")
        self._layout: Final = Layout(prefix, expire_after, claim_timeout, lock_timeout)
        self._claim_timeout = self._layout.claim_timeout
        self._known = Known()
        self._client: Final = client
        self._read: Final = client.register_script(READ)
        self._append: Final = client.register_script(APPEND)
        self._claim: Final = client.register_script(CLAIM)
        self._heartbeat: Final = client.register_script(HEARTBEAT)
        self._start_call: Final = client.register_script(START_CALL)
        self._finish_call: Final = client.register_script(FINISH_CALL)
        self._settle: Final = client.register_script(SETTLE)
        self._index: Final = client.register_script(INDEX)
        self._release: Final = client.register_script(RELEASE)

    @override
    def _backend(self) -> _AsyncBackend:
        return _AsyncBackend(self)

    async def claimed(self, run_id: str) -> bool:
        """Whether a resume holds run ``run_id`` now (its claim not yet settled)."""
        status = await self._client.hget(self._layout.key(run_id), "status")
        return status is not None and as_text(status) == "claimed"


@final
class _AsyncBackend:
    """The storage of ``AsyncRedisRunStore`` (its ``ClaimBackend``): one script
    or pipeline each."""

    def __init__(self, store: AsyncRedisRunStore) -> None:
        self._store: Final = store
        self._indexes: list[str] = []  # the inbox indexes of the claimed run
        self._expires = ""  # and its expiry (ms)

    async def _scripted(
        self,
        script: redis.commands.core.AsyncScript,
        run_id: str,
        args: list[str | int],
        whole: Mapping[Any, str | int] | None,
        waiting: bool,
        score: int,
        expires: int | str,
    ) -> Any:
        """One round trip: ``script`` (or, with ``whole``, the hash replaced and
        its expiry set), then the inbox indexes (hints that pending() checks
        against the run's status; each expires with the last of its runs, at
        ``expires``). redis-py refuses scripts in a cluster's pipeline: there,
        one round trip each. The script's answer."""
        store = self._store
        key = store._layout.key(run_id)
        cluster = is_cluster(store._client)
        answer: Any = 1
        async with store._client.pipeline(transaction=False) as pipe:
            if whole is not None:
                pipe.delete(key)
                pipe.hset(key, mapping=whole)
                pipe.pexpireat(key, int(expires))
            elif cluster:
                answer = await script(keys=[key], args=args)
            else:
                # EVALSHA itself: a Script object in a pipeline would first ask
                # SCRIPT EXISTS, a round trip more every time.
                pipe.evalsha(script.sha, 1, key, *args)
            for index in self._indexes:
                if not waiting:
                    pipe.zrem(index, run_id)
                elif cluster:
                    await store._index(keys=[index], args=[run_id, score, expires])
                else:
                    pipe.evalsha(store._index.sha, 1, index, run_id, score, expires)
            try:
                answers = await pipe.execute()
            except redis.exceptions.NoScriptError:
                # The server forgot the scripts (a restart, SCRIPT FLUSH): load
                # them and send the whole pipeline again (its changes repeat).
                await store._client.script_load(script.script)
                await store._client.script_load(store._index.script)
                return await self._scripted(
                    script, run_id, args, whole, waiting, score, expires
                )
        if whole is None and not cluster:
            answer = answers[0]
        return answer

    async def write(
        self, write: Write, metadata: Mapping[str, Any], expires_in: float | None
    ) -> bool:
        layout = self._store._layout
        saved, expires = layout.expiry(expires_in)
        self._indexes = index_keys(layout.prefix, metadata)
        whole, args = None, []
        if write.base is None:
            whole = layout.whole(write, metadata, saved, expires)
        else:
            args = layout.append(write, metadata, saved, expires)
        answer = await self._scripted(
            self._store._append,
            write.run_id,
            args,
            whole,
            bool(write.calls),
            saved,
            expires,
        )
        return bool(answer)

    async def read(self, run_id: str) -> Saved | None:
        store = self._store
        return saved_of(await store._read(keys=[store._layout.key(run_id)]))

    async def claim(self, run_id: str, token: str) -> Saved:
        store = self._store
        layout = store._layout
        answer = await store._claim(
            keys=[layout.key(run_id)], args=[token, layout.claim_ms]
        )
        if as_text(answer[0]) != "ok":
            raise claim_error(run_id, layout.prefix, answer)
        self._indexes = index_keys(layout.prefix, json.loads(answer[1]))
        self._expires = as_text(answer[2])
        saved = saved_of(answer[3:])
        assert saved is not None  # the claim found the run
        return saved

    async def heartbeat(self, run_id: str, token: str) -> bool:
        store = self._store
        key = store._layout.key(run_id)
        return bool(await store._heartbeat(keys=[key], args=[token]))

    async def start_call(self, run_id: str, token: str, call: CallKey) -> str | None:
        store = self._store
        answer = await store._start_call(
            keys=[store._layout.key(run_id)], args=[token, *call_fields(call)]
        )
        return started_outcome(run_id, answer)

    async def finish_call(
        self, run_id: str, token: str, call: CallKey, outcome: str
    ) -> None:
        store = self._store
        await store._finish_call(
            keys=[store._layout.key(run_id)],
            args=[token, call_fields(call)[0], outcome],
        )

    async def settle(self, run_id: str, token: str, write: Write) -> None:
        args = settle_args(token, write)
        settled = await self._scripted(
            self._store._settle,
            run_id,
            args,
            None,
            bool(write.calls),
            int(args[7]),
            self._expires,
        )
        if not settled:
            raise claim_lost(run_id)

    async def release(self, run_id: str, token: str) -> None:
        store = self._store
        await store._release(keys=[store._layout.key(run_id)], args=[token])

    async def pending(self, wanted: Mapping[str, Any], limit: int) -> list[PendingRun]:
        store = self._store
        index = index_for(store._layout.prefix, wanted)
        rows: list[PendingRun] = []
        start = 0
        batch = max(limit, 50)
        while len(rows) < limit:
            ids = member_ids(
                await store._client.zrevrange(index, start, start + batch - 1)
            )
            if not ids:
                break
            async with store._client.pipeline(transaction=False) as pipe:
                for run_id in ids:
                    pipe.hmget(store._layout.key(run_id), list(FIELDS))
                found = await pipe.execute()
            gone: list[str] = []
            for run_id, values in zip(ids, found, strict=True):
                if values[0] is None:
                    gone.append(run_id)
                    continue
                row = store._layout.row(run_id, values, wanted)
                if row is not None and len(rows) < limit:
                    rows.append(row)
            if gone:
                await store._client.zrem(index, *gone)
            start += batch - len(gone)
        return rows

    async def waiting(self, run_id: str) -> PendingRun | None:
        store = self._store
        values = await store._client.hmget(store._layout.key(run_id), list(FIELDS))
        return None if values[0] is None else store._layout.row(run_id, values, {})

    async def delete(self, run_id: str) -> bool:
        store = self._store
        key = store._layout.key(run_id)
        meta = await store._client.hget(key, "meta")
        async with store._client.pipeline(transaction=False) as pipe:
            pipe.delete(key)
            data = json.loads(meta) if meta is not None else {}
            for index in index_keys(store._layout.prefix, data):
                pipe.zrem(index, run_id)
            answers = await pipe.execute()
        return bool(answers[0])

    def unknown(self, run_id: str) -> LangHooksError:
        return self._store._layout.unknown(run_id)
