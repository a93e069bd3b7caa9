"""``AsyncRedisRunStore``: interrupted runs kept in Redis, resumed once (see
``_redis_runs`` for the keys). (The async module is written by hand; the sync one
is generated from it by ``scripts/unasync.py``.)"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import redis.asyncio
import redis.asyncio.client
import redis.asyncio.cluster

from .._core._messages import ToolCall
from .._persist._resume import (
    ResumeCode,
    aresume_once,
)
from .._persist._stores import (
    CallKey,
    PendingRun,
    check_limit,
    check_metadata,
)

if TYPE_CHECKING:
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult, Tool
    from ..chain._chain import Handler
    from ..models import ChatModel

from ._redis_runs import (
    CLAIM,
    FIELDS,
    FINISH_CALL,
    HEARTBEAT,
    INDEX,
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
    load_chain,
    member_ids,
    settle_args,
    started_outcome,
)
from ._redis_wire import check_async_client, is_cluster

__all__ = ["AsyncRedisRunStore"]


@final
class AsyncRedisRunStore:
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
        self._client: Final = client
        self._claim: Final = client.register_script(CLAIM)
        self._heartbeat: Final = client.register_script(HEARTBEAT)
        self._start_call: Final = client.register_script(START_CALL)
        self._finish_call: Final = client.register_script(FINISH_CALL)
        self._settle: Final = client.register_script(SETTLE)
        self._index: Final = client.register_script(INDEX)
        self._release: Final = client.register_script(RELEASE)

    async def save(
        self,
        chain: LLMChain,
        *,
        metadata: Mapping[str, Any] | None = None,
        expires_in: float | None = None,
    ) -> str:
        """Save ``chain``'s state under its run id (replacing an earlier save).

        Args:
            chain: the chain of a ``RunResult`` (``result.chain``).
            metadata: JSON values to find the run by (``pending(metadata=...)``).
            expires_in: seconds until the run is forgotten (None:
                ``expire_after``).

        Returns:
            The run id (``chain.invocation.id``).

        Raises:
            ValueError: the chain has not run (it has no run id), or a bad
                ``expires_in``.
            TypeError: not an ``LLMChain``, metadata that is not JSON, or a state
                holding a value that cannot be encoded.
        """
        run_id, fields, expires, indexes, waiting = self._layout.saved(
            chain, metadata, expires_in
        )
        key = self._layout.key(run_id)
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.delete(key)
            pipe.hset(key, mapping=fields)
            pipe.pexpireat(key, expires)
            for index in indexes:
                if waiting:
                    await self._list(pipe, index, run_id, fields["saved"], expires)
                else:
                    pipe.zrem(index, run_id)
            await pipe.execute()
        return run_id

    async def _list(
        self,
        pipe: Any,
        index: str,
        run_id: str,
        saved: int | str,
        expires: int | str,
    ) -> None:
        """List run ``run_id`` in inbox ``index``, whose expiry follows its runs'
        (in ``pipe``; at once on a cluster, whose pipelines refuse scripts)."""
        args = [run_id, saved, expires]
        if is_cluster(self._client):
            await self._index(keys=[index], args=args)
        else:
            await self._index(keys=[index], args=args, client=pipe)

    async def load(
        self,
        run_id: str,
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
    ) -> LLMChain:
        """The saved chain of run ``run_id`` (its latest state), with this
        worker's code.

        Raises:
            LangHooksError: type "invalid_request" when no run is saved under
                ``run_id`` (never saved, deleted or expired).
        """
        state = await self._client.hget(self._layout.key(run_id), "state")
        return load_chain(
            state, self._layout, run_id, model, tools, callbacks, fallbacks, retry
        )

    async def resume(
        self,
        run_id: str,
        decisions: Sequence[Decision] | Mapping[str, Decision],
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
        continue_run: bool = True,
    ) -> RunResult:
        """Resume a waiting run with human decisions, once (async tools are
        awaited).

        Args:
            run_id: the run to resume.
            decisions: one ``Decision`` per waiting call, in the order of
                ``chain.pending_tool_calls``, or a mapping from tool call id to
                ``Decision`` (for some of the waiting calls).
            model: the model the run continues on; ``tools``, ``callbacks``,
                ``fallbacks`` and ``retry`` as ``LLMChain.from_state``.
            continue_run: after the decisions, ``arun()`` on to the model's
                answer (when they did not end the run).

        Returns:
            The ``RunResult`` the run ended with here; the state it ended in is
            saved under the same run id (waiting again, or done).

        Raises:
            LangHooksError: type "conflict" when another resume holds the run or
                it waits for no decision; "invalid_request" for an unknown,
                deleted or expired run.
            ValueError: the decisions do not match the waiting calls (the run
                waits again, unchanged).
        """
        code = ResumeCode(
            model=model,
            tools=tools,
            callbacks=callbacks,
            fallbacks=fallbacks,
            retry=retry,
            continue_run=continue_run,
        )
        return await aresume_once(
            _AsyncClaims(self),
            run_id,
            decisions,
            code,
            claim_timeout=self._layout.claim_timeout,
        )

    async def pending(
        self, *, metadata: Mapping[str, Any] | None = None, limit: int = 100
    ) -> list[PendingRun]:
        """The runs waiting for decisions, newest first (the approval inbox).

        Args:
            metadata: keep only runs whose metadata contains this (as JSONB
                ``@>``); a top-level str, number, bool or null value is looked up
                in its own index.
            limit: at most this many runs.

        Raises:
            TypeError: bad ``metadata`` or ``limit``.
            ValueError: ``limit`` < 1.
        """
        wanted = check_metadata(metadata)
        check_limit(limit)
        index = index_for(self._layout.prefix, wanted)
        rows: list[PendingRun] = []
        start = 0
        batch = max(limit, 50)
        while len(rows) < limit:
            ids = member_ids(
                await self._client.zrevrange(index, start, start + batch - 1)
            )
            if not ids:
                break
            async with self._client.pipeline(transaction=False) as pipe:
                for run_id in ids:
                    pipe.hmget(self._layout.key(run_id), list(FIELDS))
                found = await pipe.execute()
            gone: list[str] = []
            for run_id, values in zip(ids, found, strict=True):
                if values[0] is None:
                    gone.append(run_id)
                    continue
                row = self._layout.row(run_id, values, wanted)
                if row is not None and len(rows) < limit:
                    rows.append(row)
            if gone:
                await self._client.zrem(index, *gone)
            start += batch - len(gone)
        return rows

    async def waiting(self, run_id: str) -> PendingRun | None:
        """Run ``run_id``'s row of the inbox: None unless it waits for decisions
        (unknown, expired, being resumed or done)."""
        values = await self._client.hmget(self._layout.key(run_id), list(FIELDS))
        return None if values[0] is None else self._layout.row(run_id, values, {})

    async def claimed(self, run_id: str) -> bool:
        """Whether a resume holds run ``run_id`` now (its claim not yet settled)."""
        status = await self._client.hget(self._layout.key(run_id), "status")
        return status is not None and as_text(status) == "claimed"

    async def delete(self, run_id: str) -> bool:
        """Forget run ``run_id``; whether it was there."""
        key = self._layout.key(run_id)
        meta = await self._client.hget(key, "meta")
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.delete(key)
            data = json.loads(meta) if meta is not None else {}
            for index in index_keys(self._layout.prefix, data):
                pipe.zrem(index, run_id)
            answers = await pipe.execute()
        return bool(answers[0])


@final
class _AsyncClaims:
    """The claim primitives of ``AsyncRedisRunStore``: one script call each."""

    def __init__(self, store: AsyncRedisRunStore) -> None:
        self._store: Final = store
        self._indexes: list[str] = []  # the inbox indexes of the claimed run
        self._expires = ""  # and its expiry (ms)

    async def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        store = self._store
        layout = store._layout
        answer = await store._claim(
            keys=[layout.key(run_id)], args=[token, layout.claim_ms]
        )
        if as_text(answer[0]) != "ok":
            raise claim_error(run_id, layout.prefix, answer)
        state: dict[str, Any] = json.loads(answer[1])
        self._indexes = index_keys(layout.prefix, json.loads(answer[2]))
        self._expires = as_text(answer[3])
        return state

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

    async def settle(
        self,
        run_id: str,
        token: str,
        state: Mapping[str, Any],
        waiting: Sequence[ToolCall],
    ) -> None:
        store = self._store
        layout = store._layout
        args = settle_args(token, state, waiting)
        # One round trip: the script, then the inbox indexes (hints that pending()
        # checks against the run's status, so they follow only a settled script).
        # redis-py refuses scripts in a cluster's pipeline: there, two.
        cluster = is_cluster(store._client)
        async with store._client.pipeline(transaction=False) as pipe:
            if cluster:
                settled = await store._settle(keys=[layout.key(run_id)], args=args)
            else:
                assert isinstance(pipe, redis.asyncio.client.Pipeline)  # one node
                await store._settle(keys=[layout.key(run_id)], args=args, client=pipe)
            for index in self._indexes:
                if waiting:
                    await store._list(pipe, index, run_id, args[-1], self._expires)
                else:
                    pipe.zrem(index, run_id)
            answers = await pipe.execute()
        if not cluster:
            settled = answers[0]
        if not settled:
            raise claim_lost(run_id)

    async def release(self, run_id: str, token: str) -> None:
        store = self._store
        await store._release(keys=[store._layout.key(run_id)], args=[token])
