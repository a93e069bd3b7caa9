"""``RedisRunStore`` / ``AsyncRedisRunStore``: interrupted runs kept in Redis.

One hash per run, ``{prefix}state:{run_id}``: the state (``chain.to_state()`` as
JSON), the waiting calls, the metadata, when it was saved, its status (waiting,
claimed by a resume's token, or done), the claim's last heartbeat (the server's
clock) and one field ``call:{call_id}`` per tool call a resume started (empty until
the call returns, then its outcome). Every change to a run is one Lua script on that
one key, so it is atomic and works on Redis Cluster.

The approval inbox is a sorted set per prefix, ``{prefix}waiting`` (score: when the
run was saved, in ms), plus one per top-level scalar metadata value,
``{prefix}waiting:{key}={json value}``. The indexes are hints: ``pending`` reads each
candidate's hash and drops entries whose run is gone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, final

import redis
import redis.asyncio

from .._core._messages import LangHooksError, ToolCall
from .._persist._resume import (
    ResumeCode,
    aresume_once,
    check_claim_timeout,
    resume_once,
)
from .._persist._stores import (
    PendingRun,
    check_expires_in,
    check_limit,
    check_metadata,
    contains,
    run_id_of,
)
from .._persist._codec import decode, encode
from ._redis_wire import check_count, check_sync_client

if TYPE_CHECKING:
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult, Tool
    from ..chain._chain import Handler
    from ..models import ChatModel

__all__ = ["AsyncRedisRunStore", "RedisRunStore"]

# The server's clock in ms (every worker compares heartbeats on one clock).
_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS[1] run hash; ARGV token, claim timeout (ms).
_CLAIM: Final = (
    _NOW
    + """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'missing'} end
if status == 'done' then return {'done'} end
if status == 'claimed' then
    local beat = tonumber(redis.call('HGET', KEYS[1], 'beat'))
    if now - beat < tonumber(ARGV[2]) then return {'busy'} end
end
redis.call('HSET', KEYS[1], 'status', 'claimed', 'token', ARGV[1], 'beat', now)
return {'ok', redis.call('HGET', KEYS[1], 'state')}
"""
)

_HELD: Final = """
local function held()
    local v = redis.call('HMGET', KEYS[1], 'status', 'token')
    return v[1] == 'claimed' and v[2] == ARGV[1]
end
"""

# KEYS[1] run hash; ARGV token.
_HEARTBEAT: Final = (
    _NOW
    + _HELD
    + """
if not held() then return 0 end
redis.call('HSET', KEYS[1], 'beat', now)
return 1
"""
)

# KEYS[1] run hash; ARGV token, field.
_START_CALL: Final = (
    _HELD
    + """
if not held() then return {'lost'} end
local seen = redis.call('HGET', KEYS[1], ARGV[2])
if seen then return {'seen', seen} end
redis.call('HSET', KEYS[1], ARGV[2], '')
return {'new'}
"""
)

# KEYS[1] run hash; ARGV token, field, outcome. The outcome of a call that started
# is kept even if the claim was taken over meanwhile: it is what happened.
_FINISH_CALL: Final = """
if redis.call('HGET', KEYS[1], ARGV[2]) == '' then
    redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
end
return 1
"""

# KEYS[1] run hash; ARGV token, state, calls, status, saved (ms).
_SETTLE: Final = (
    _HELD
    + """
if not held() then return 0 end
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(field, 1, 5) == 'call:' then redis.call('HDEL', KEYS[1], field) end
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'calls', ARGV[3], 'status', ARGV[4],
           'token', '', 'saved', ARGV[5])
return 1
"""
)

# KEYS[1] run hash; ARGV token.
_RELEASE: Final = (
    _HELD
    + """
if not held() then return 0 end
redis.call('HSET', KEYS[1], 'status', 'waiting', 'token', '')
return 1
"""
)

_FIELDS: Final = ("status", "calls", "meta", "saved", "expires")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _ids(found: Any) -> list[str]:
    # ZREVRANGE without scores: members (bytes or str, per decode_responses).
    return [_text(member) for member in found]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _calls_json(calls: Sequence[ToolCall]) -> str:
    return json.dumps([encode(call) for call in calls], separators=(",", ":"))


def _calls_of(text: str) -> tuple[ToolCall, ...]:
    return tuple(decode(item) for item in json.loads(text))


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _claim_error(run_id: str, prefix: str, answer: Sequence[Any]) -> LangHooksError:
    kind = _text(answer[0])
    if kind == "missing":
        return LangHooksError(
            "invalid_request",
            f"no saved run {run_id!r} under prefix {prefix!r} (never saved, "
            f"deleted, or expired)",
        )
    if kind == "done":
        return LangHooksError(
            "conflict",
            f"run {run_id!r} waits for no decision (it was resumed already); "
            f"nothing was run",
        )
    return LangHooksError(
        "conflict",
        f"run {run_id!r} is being resumed by another request; nothing was run",
    )


def _lost(run_id: str) -> LangHooksError:
    return LangHooksError(
        "conflict",
        f"the claim on run {run_id!r} was taken over by another resume (its "
        f"heartbeat stopped for longer than claim_timeout)",
    )


def _index_keys(prefix: str, metadata: Mapping[str, Any]) -> list[str]:
    """The inbox indexes a run with ``metadata`` is listed in."""
    keys = [f"{prefix}waiting"]
    for key, value in sorted(metadata.items()):
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1.0 and 1 are one JSON number
        if value is None or isinstance(value, str | int | float | bool):
            keys.append(f"{prefix}waiting:{key}={json.dumps(value)}")
    return keys


def _index_for(prefix: str, wanted: Mapping[str, Any]) -> str:
    """The narrowest index that holds every run containing ``wanted``."""
    scalar = _index_keys(prefix, wanted)
    return scalar[1] if len(scalar) > 1 else scalar[0]


@final
class _Layout:
    """Key names, option checks and the decoding both twins share."""

    def __init__(
        self,
        prefix: str,
        expire_after: int,
        claim_timeout: float,
        lock_timeout: float | None,
    ) -> None:
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {prefix!r}")
        check_count("expire_after", expire_after, 1)
        if lock_timeout is not None:
            # lock_timeout was the lease of earlier releases; it now names the
            # claim timeout (a claim no longer lapses while its worker lives).
            claim_timeout = lock_timeout
        self.prefix: Final = prefix
        self.expire_after: Final = expire_after
        self.claim_timeout: Final = check_claim_timeout(claim_timeout)
        self.claim_ms: Final = max(1, round(self.claim_timeout * 1000))

    def key(self, run_id: str) -> str:
        return f"{self.prefix}state:{run_id}"

    def unknown(self, run_id: str) -> LangHooksError:
        return LangHooksError(
            "invalid_request",
            f"no saved run {run_id!r} under prefix {self.prefix!r} (never saved, "
            f"deleted, or expired)",
        )

    def saved(
        self,
        chain: LLMChain,
        metadata: Mapping[str, Any] | None,
        expires_in: float | None,
    ) -> tuple[str, dict[Any, str | int], int, list[str], bool]:
        """What ``save`` writes: run id, hash fields, expiry (ms), indexes, waiting."""
        run_id = run_id_of(chain)
        data = check_metadata(metadata)
        seconds = check_expires_in(expires_in)
        state = json.dumps(chain.to_state(), separators=(",", ":"))
        calls = chain.pending_tool_calls
        saved = _now_ms()
        expires = saved + round(
            (self.expire_after if seconds is None else seconds) * 1000
        )
        # Keyed by Any: redis-py's stubs want a mapping invariant in its key type.
        fields: dict[Any, str | int] = {
            "state": state,
            "calls": _calls_json(calls),
            "meta": json.dumps(data, separators=(",", ":")),
            "saved": saved,
            "expires": expires,
            "status": "waiting" if calls else "done",
            "token": "",
            "beat": 0,
        }
        return run_id, fields, expires, _index_keys(self.prefix, data), bool(calls)

    def row(
        self,
        run_id: str,
        values: Sequence[bytes | str | None],
        wanted: Mapping[str, Any],
    ) -> PendingRun | None:
        """The inbox row of a run's ``_FIELDS``, or None when it does not belong."""
        status, calls, meta, saved, expires = values
        # save() writes every field with the status, in one HSET.
        assert status is not None
        assert calls is not None
        assert meta is not None
        assert saved is not None
        if _text(status) != "waiting":
            return None
        metadata = json.loads(meta)
        if not contains(metadata, wanted):
            return None
        return PendingRun(
            run_id=run_id,
            calls=_calls_of(_text(calls)),
            saved_at=_utc(int(saved)),
            expires_at=None if expires is None else _utc(int(expires)),
            metadata=metadata,
        )


def _load(
    state: bytes | str | None,
    layout: _Layout,
    run_id: str,
    model: ChatModel,
    tools: Sequence[Tool],
    callbacks: Sequence[Handler],
    fallbacks: Sequence[ChatModel],
    retry: RetryPolicy | None,
) -> LLMChain:
    from ..chain import LLMChain

    if state is None:
        raise layout.unknown(run_id)
    return LLMChain.from_state(
        json.loads(state),
        model,
        tools=tools,
        callbacks=callbacks,
        fallbacks=fallbacks,
        retry=retry,
    )


@final
class RedisRunStore:
    """A ``RunStore`` in Redis: save an interrupted run, resume it in any worker,
    once.

    ``resume`` claims the run in Redis (waiting → claimed by this worker) and a
    heartbeat thread renews the claim while the worker lives, so a slow tool or a
    long answer never lets a second resume in. Each tool call is recorded before
    it runs and its outcome as soon as it returns: a resume that takes over a run
    whose worker died (no heartbeat for ``claim_timeout`` seconds) reuses what
    ran and never starts a call that had started; that call gets an error result
    saying its worker stopped. Code (model, tools, callbacks) is never stored.

    Args:
        client: a synchronous ``redis.Redis`` client (its ``decode_responses``
            setting does not matter).
        prefix: prepended to every key.
        expire_after: seconds a run is kept after its save when ``save`` is not
            given ``expires_in``.
        claim_timeout: seconds without a heartbeat after which a resume's claim
            may be taken over by another resume (its worker is taken for dead).
        lock_timeout: the name ``claim_timeout`` had in earlier releases; when
            given, it is the claim timeout.

    Raises:
        TypeError: ``client`` is not a ``redis.Redis``, or a bad option.
        ValueError: ``claim_timeout`` is not > 0 and finite.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "langhooks:",
        expire_after: int = 7 * 24 * 3600,
        claim_timeout: float = 60.0,
        lock_timeout: float | None = None,
    ) -> None:
        check_sync_client(client, "RedisRunStore")
        self._layout: Final = _Layout(prefix, expire_after, claim_timeout, lock_timeout)
        self._client: Final = client
        self._claim: Final = client.register_script(_CLAIM)
        self._heartbeat: Final = client.register_script(_HEARTBEAT)
        self._start_call: Final = client.register_script(_START_CALL)
        self._finish_call: Final = client.register_script(_FINISH_CALL)
        self._settle: Final = client.register_script(_SETTLE)
        self._release: Final = client.register_script(_RELEASE)

    def save(
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
        pipe = self._client.pipeline(transaction=False)
        pipe.delete(key)
        pipe.hset(key, mapping=fields)
        pipe.pexpireat(key, expires)
        for index in indexes:
            if waiting:
                pipe.zadd(index, {run_id: fields["saved"]})
            else:
                pipe.zrem(index, run_id)
        pipe.execute()
        return run_id

    def load(
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
        state = self._client.hget(self._layout.key(run_id), "state")
        return _load(
            state, self._layout, run_id, model, tools, callbacks, fallbacks, retry
        )

    def resume(
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
        """Resume a waiting run with human decisions, once.

        Args:
            run_id: the run to resume.
            decisions: one ``Decision`` per waiting call, in the order of
                ``chain.pending_tool_calls``, or a mapping from tool call id to
                ``Decision`` (for some of the waiting calls).
            model: the model the run continues on; ``tools``, ``callbacks``,
                ``fallbacks`` and ``retry`` as ``LLMChain.from_state``.
            continue_run: after the decisions, ``run()`` on to the model's
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
        return resume_once(
            _Claims(self),
            run_id,
            decisions,
            code,
            claim_timeout=self._layout.claim_timeout,
        )

    def pending(
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
        index = _index_for(self._layout.prefix, wanted)
        rows: list[PendingRun] = []
        start = 0
        batch = max(limit, 50)
        while len(rows) < limit:
            ids = _ids(self._client.zrevrange(index, start, start + batch - 1))
            if not ids:
                break
            pipe = self._client.pipeline(transaction=False)
            for run_id in ids:
                pipe.hmget(self._layout.key(run_id), list(_FIELDS))
            gone: list[str] = []
            for run_id, values in zip(ids, pipe.execute(), strict=True):
                if values[0] is None:
                    gone.append(run_id)
                    continue
                row = self._layout.row(run_id, values, wanted)
                if row is not None and len(rows) < limit:
                    rows.append(row)
            if gone:
                self._client.zrem(index, *gone)
            start += batch - len(gone)
        return rows

    def delete(self, run_id: str) -> bool:
        """Forget run ``run_id``; whether it was there."""
        key = self._layout.key(run_id)
        meta = self._client.hget(key, "meta")
        pipe = self._client.pipeline(transaction=False)
        pipe.delete(key)
        data = json.loads(meta) if meta is not None else {}
        for index in _index_keys(self._layout.prefix, data):
            pipe.zrem(index, run_id)
        return bool(pipe.execute()[0])


@final
class _Claims:
    """The claim primitives of ``RedisRunStore``: one script call each."""

    def __init__(self, store: RedisRunStore) -> None:
        self._store: Final = store

    def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        store = self._store
        layout = store._layout
        answer = store._claim(keys=[layout.key(run_id)], args=[token, layout.claim_ms])
        if _text(answer[0]) != "ok":
            raise _claim_error(run_id, layout.prefix, answer)
        state: dict[str, Any] = json.loads(answer[1])
        return state

    def heartbeat(self, run_id: str, token: str) -> bool:
        store = self._store
        return bool(store._heartbeat(keys=[store._layout.key(run_id)], args=[token]))

    def start_call(self, run_id: str, token: str, call_id: str) -> str | None:
        store = self._store
        answer = store._start_call(
            keys=[store._layout.key(run_id)], args=[token, f"call:{call_id}"]
        )
        return _started(run_id, answer)

    def finish_call(self, run_id: str, token: str, call_id: str, outcome: str) -> None:
        store = self._store
        store._finish_call(
            keys=[store._layout.key(run_id)],
            args=[token, f"call:{call_id}", outcome],
        )

    def settle(
        self,
        run_id: str,
        token: str,
        state: Mapping[str, Any],
        waiting: Sequence[ToolCall],
    ) -> None:
        store = self._store
        layout = store._layout
        args = _settle_args(token, state, waiting)
        key = layout.key(run_id)
        if not store._settle(keys=[key], args=args):
            raise _lost(run_id)
        meta = store._client.hget(key, "meta")
        indexes = _index_keys(layout.prefix, json.loads(meta) if meta else {})
        pipe = store._client.pipeline(transaction=False)
        for index in indexes:
            if waiting:
                pipe.zadd(index, {run_id: args[-1]})
            else:
                pipe.zrem(index, run_id)
        pipe.execute()

    def release(self, run_id: str, token: str) -> None:
        store = self._store
        store._release(keys=[store._layout.key(run_id)], args=[token])


def _started(run_id: str, answer: Sequence[Any]) -> str | None:
    kind = _text(answer[0])
    if kind == "lost":
        raise _lost(run_id)
    return None if kind == "new" else _text(answer[1])


def _settle_args(
    token: str, state: Mapping[str, Any], waiting: Sequence[ToolCall]
) -> list[str | int]:
    return [
        token,
        json.dumps(state, separators=(",", ":")),
        _calls_json(waiting),
        "waiting" if waiting else "done",
        _now_ms(),
    ]


@final
class AsyncRedisRunStore:
    """The async twin of ``RedisRunStore`` (``redis.asyncio``): the same keys, so
    a run saved by one is resumed by the other; every method is awaited and the
    claim's heartbeat is a task.

    Args:
        client: a ``redis.asyncio.Redis`` client.
        prefix: as ``RedisRunStore``; ``expire_after``, ``claim_timeout`` and
            ``lock_timeout`` too.

    Raises:
        TypeError: ``client`` is not a ``redis.asyncio.Redis``, or a bad option.
        ValueError: ``claim_timeout`` is not > 0 and finite.
    """

    def __init__(
        self,
        client: redis.asyncio.Redis,
        *,
        prefix: str = "langhooks:",
        expire_after: int = 7 * 24 * 3600,
        claim_timeout: float = 60.0,
        lock_timeout: float | None = None,
    ) -> None:
        if not isinstance(client, redis.asyncio.Redis):
            raise TypeError(
                f"AsyncRedisRunStore takes a redis.asyncio.Redis client (use "
                f"RedisRunStore for redis.Redis), got {client!r}"
            )
        self._layout: Final = _Layout(prefix, expire_after, claim_timeout, lock_timeout)
        self._client: Final = client
        self._claim: Final = client.register_script(_CLAIM)
        self._heartbeat: Final = client.register_script(_HEARTBEAT)
        self._start_call: Final = client.register_script(_START_CALL)
        self._finish_call: Final = client.register_script(_FINISH_CALL)
        self._settle: Final = client.register_script(_SETTLE)
        self._release: Final = client.register_script(_RELEASE)

    async def save(
        self,
        chain: LLMChain,
        *,
        metadata: Mapping[str, Any] | None = None,
        expires_in: float | None = None,
    ) -> str:
        """As ``RedisRunStore.save``.

        Raises:
            ValueError: as ``RedisRunStore.save``.
            TypeError: as ``RedisRunStore.save``.
        """
        run_id, fields, expires, indexes, waiting = self._layout.saved(
            chain, metadata, expires_in
        )
        key = self._layout.key(run_id)
        pipe = self._client.pipeline(transaction=False)
        pipe.delete(key)
        pipe.hset(key, mapping=fields)
        pipe.pexpireat(key, expires)
        for index in indexes:
            if waiting:
                pipe.zadd(index, {run_id: fields["saved"]})
            else:
                pipe.zrem(index, run_id)
        await pipe.execute()
        return run_id

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
        """As ``RedisRunStore.load``.

        Raises:
            LangHooksError: as ``RedisRunStore.load``.
        """
        state = await self._client.hget(self._layout.key(run_id), "state")
        return _load(
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
        """As ``RedisRunStore.resume``, with ``arun`` (async tools are awaited).

        Raises:
            LangHooksError: as ``RedisRunStore.resume``.
            ValueError: as ``RedisRunStore.resume``.
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
        """As ``RedisRunStore.pending``.

        Raises:
            TypeError: as ``RedisRunStore.pending``.
            ValueError: as ``RedisRunStore.pending``.
        """
        wanted = check_metadata(metadata)
        check_limit(limit)
        index = _index_for(self._layout.prefix, wanted)
        rows: list[PendingRun] = []
        start = 0
        batch = max(limit, 50)
        while len(rows) < limit:
            ids = _ids(await self._client.zrevrange(index, start, start + batch - 1))
            if not ids:
                break
            pipe = self._client.pipeline(transaction=False)
            for run_id in ids:
                pipe.hmget(self._layout.key(run_id), list(_FIELDS))
            gone: list[str] = []
            for run_id, values in zip(ids, await pipe.execute(), strict=True):
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

    async def delete(self, run_id: str) -> bool:
        """As ``RedisRunStore.delete``."""
        key = self._layout.key(run_id)
        meta = await self._client.hget(key, "meta")
        pipe = self._client.pipeline(transaction=False)
        pipe.delete(key)
        data = json.loads(meta) if meta is not None else {}
        for index in _index_keys(self._layout.prefix, data):
            pipe.zrem(index, run_id)
        return bool((await pipe.execute())[0])


@final
class _AsyncClaims:
    """The claim primitives of ``AsyncRedisRunStore``."""

    def __init__(self, store: AsyncRedisRunStore) -> None:
        self._store: Final = store

    async def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        store = self._store
        layout = store._layout
        answer = await store._claim(
            keys=[layout.key(run_id)], args=[token, layout.claim_ms]
        )
        if _text(answer[0]) != "ok":
            raise _claim_error(run_id, layout.prefix, answer)
        state: dict[str, Any] = json.loads(answer[1])
        return state

    async def heartbeat(self, run_id: str, token: str) -> bool:
        store = self._store
        key = store._layout.key(run_id)
        return bool(await store._heartbeat(keys=[key], args=[token]))

    async def start_call(self, run_id: str, token: str, call_id: str) -> str | None:
        store = self._store
        answer = await store._start_call(
            keys=[store._layout.key(run_id)], args=[token, f"call:{call_id}"]
        )
        return _started(run_id, answer)

    async def finish_call(
        self, run_id: str, token: str, call_id: str, outcome: str
    ) -> None:
        store = self._store
        await store._finish_call(
            keys=[store._layout.key(run_id)],
            args=[token, f"call:{call_id}", outcome],
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
        args = _settle_args(token, state, waiting)
        key = layout.key(run_id)
        if not await store._settle(keys=[key], args=args):
            raise _lost(run_id)
        meta = await store._client.hget(key, "meta")
        indexes = _index_keys(layout.prefix, json.loads(meta) if meta else {})
        pipe = store._client.pipeline(transaction=False)
        for index in indexes:
            if waiting:
                pipe.zadd(index, {run_id: args[-1]})
            else:
                pipe.zrem(index, run_id)
        await pipe.execute()

    async def release(self, run_id: str, token: str) -> None:
        store = self._store
        await store._release(keys=[store._layout.key(run_id)], args=[token])
