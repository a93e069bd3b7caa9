"""What ``RedisRunStore`` and ``AsyncRedisRunStore`` share: keys, scripts, checks.

One hash per run, ``{prefix}state:{run_id}``: the state (``chain.to_state()`` as
JSON), the waiting calls, the metadata, when it was saved, its status (waiting,
claimed by a resume's token, or done), the claim's last heartbeat (the server's
clock) and one field ``step:{key}`` per tool call a resume started (``CallKey.text``:
the position of the assistant message that made the call, and its id; empty until
the call returns, then its outcome). Earlier releases kept ``call:{call_id}``; a
resume takes such a field as the first call with that id it starts. Every change to
a run is one Lua script on that one key, so it is atomic and works on Redis Cluster.

The approval inbox is a sorted set per prefix, ``{prefix}waiting`` (score: when the
run was saved, in ms), plus one per top-level scalar metadata value,
``{prefix}waiting:{key}={json value}``. The indexes are hints: ``pending`` reads each
candidate's hash and drops entries whose run is gone. An index expires with the
last of its runs (each run listed in it moves its expiry on to the run's own), so
the keys that metadata from clients names (a thread id, a user) go with their runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, final

from .._core._messages import LangHooksError, ToolCall
from .._persist._codec import decode, encode
from .._persist._resume import (
    check_claim_timeout,
)
from .._persist._stores import (
    CallKey,
    PendingRun,
    check_expires_in,
    check_metadata,
    contains,
    run_id_of,
)
from ._redis_wire import check_count

if TYPE_CHECKING:
    from ..chain import LLMChain, RetryPolicy, Tool
    from ..chain._chain import Handler
    from ..models import ChatModel

__all__ = [
    "CLAIM",
    "FIELDS",
    "FINISH_CALL",
    "HEARTBEAT",
    "INDEX",
    "RELEASE",
    "SETTLE",
    "START_CALL",
    "Layout",
    "as_text",
    "call_fields",
    "claim_error",
    "claim_lost",
    "index_for",
    "index_keys",
    "load_chain",
    "member_ids",
    "settle_args",
    "started_outcome",
]

# The server's clock in ms (every worker compares heartbeats on one clock).
_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS[1] run hash; ARGV token, claim timeout (ms).
CLAIM: Final = (
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
return {'ok', redis.call('HGET', KEYS[1], 'state'), redis.call('HGET', KEYS[1], 'meta'),
        redis.call('HGET', KEYS[1], 'expires')}
"""
)

_HELD: Final = """
local function held()
    local v = redis.call('HMGET', KEYS[1], 'status', 'token')
    return v[1] == 'claimed' and v[2] == ARGV[1]
end
"""

# KEYS[1] run hash; ARGV token.
HEARTBEAT: Final = (
    _NOW
    + _HELD
    + """
if not held() then return 0 end
redis.call('HSET', KEYS[1], 'beat', now)
return 1
"""
)

# KEYS[1] run hash; ARGV token, field, the field an earlier release used.
START_CALL: Final = (
    _HELD
    + """
if not held() then return {'lost'} end
local seen = redis.call('HGET', KEYS[1], ARGV[2])
if seen then return {'seen', seen} end
local old = redis.call('HGET', KEYS[1], ARGV[3])
if old then
    redis.call('HDEL', KEYS[1], ARGV[3])
    redis.call('HSET', KEYS[1], ARGV[2], old)
    return {'seen', old}
end
redis.call('HSET', KEYS[1], ARGV[2], '')
return {'new'}
"""
)

# KEYS[1] run hash; ARGV token, field, outcome. The outcome of a call that started
# is kept even if the claim was taken over meanwhile: it is what happened.
FINISH_CALL: Final = """
if redis.call('HGET', KEYS[1], ARGV[2]) == '' then
    redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
end
return 1
"""

# KEYS[1] run hash; ARGV token, state, calls, status, saved (ms).
SETTLE: Final = (
    _HELD
    + """
if not held() then return 0 end
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    local kind = string.sub(field, 1, 5)
    if kind == 'step:' or kind == 'call:' then redis.call('HDEL', KEYS[1], field) end
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'calls', ARGV[3], 'status', ARGV[4],
           'token', '', 'saved', ARGV[5])
return 1
"""
)

# KEYS[1] an inbox index; ARGV run id, score, the run's expiry (ms). The index
# expires with the last of its runs. One that has no expiry (written by an earlier
# release, whose runs' expiries are unknown here) is left so.
INDEX: Final = (
    _NOW
    + """
local ttl = redis.call('PTTL', KEYS[1])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if ttl == -2 or (ttl >= 0 and now + ttl < tonumber(ARGV[3])) then
    redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
return 1
"""
)

# KEYS[1] run hash; ARGV token.
RELEASE: Final = (
    _HELD
    + """
if not held() then return 0 end
redis.call('HSET', KEYS[1], 'status', 'waiting', 'token', '')
return 1
"""
)

FIELDS: Final = ("status", "calls", "meta", "saved", "expires")


def call_fields(call: CallKey) -> list[str]:
    """The hash field of a call's record, and the one earlier releases used."""
    return [f"step:{call.text}", f"call:{call.call_id}"]


def as_text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def member_ids(found: Any) -> list[str]:
    # ZREVRANGE without scores: members (bytes or str, per decode_responses).
    return [as_text(member) for member in found]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _calls_json(calls: Sequence[ToolCall]) -> str:
    return json.dumps([encode(call) for call in calls], separators=(",", ":"))


def _calls_of(text: str) -> tuple[ToolCall, ...]:
    return tuple(decode(item) for item in json.loads(text))


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def claim_error(run_id: str, prefix: str, answer: Sequence[Any]) -> LangHooksError:
    kind = as_text(answer[0])
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


def claim_lost(run_id: str) -> LangHooksError:
    return LangHooksError(
        "conflict",
        f"the claim on run {run_id!r} was taken over by another resume (its "
        f"heartbeat stopped for longer than claim_timeout)",
    )


def index_keys(prefix: str, metadata: Mapping[str, Any]) -> list[str]:
    """The inbox indexes a run with ``metadata`` is listed in."""
    keys = [f"{prefix}waiting"]
    for key, value in sorted(metadata.items()):
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1.0 and 1 are one JSON number
        if value is None or isinstance(value, str | int | float | bool):
            keys.append(f"{prefix}waiting:{key}={json.dumps(value)}")
    return keys


def index_for(prefix: str, wanted: Mapping[str, Any]) -> str:
    """The narrowest index that holds every run containing ``wanted``."""
    scalar = index_keys(prefix, wanted)
    return scalar[1] if len(scalar) > 1 else scalar[0]


@final
class Layout:
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
        return run_id, fields, expires, index_keys(self.prefix, data), bool(calls)

    def row(
        self,
        run_id: str,
        values: Sequence[bytes | str | None],
        wanted: Mapping[str, Any],
    ) -> PendingRun | None:
        """The inbox row of a run's ``FIELDS``, or None when it does not belong."""
        status, calls, meta, saved, expires = values
        # save() writes every field with the status, in one HSET.
        assert status is not None
        assert calls is not None
        assert meta is not None
        assert saved is not None
        if as_text(status) != "waiting":
            return None
        metadata = json.loads(meta)
        if not contains(metadata, wanted):
            return None
        return PendingRun(
            run_id=run_id,
            calls=_calls_of(as_text(calls)),
            saved_at=_utc(int(saved)),
            expires_at=None if expires is None else _utc(int(expires)),
            metadata=metadata,
        )


def load_chain(
    state: bytes | str | None,
    layout: Layout,
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


def started_outcome(run_id: str, answer: Sequence[Any]) -> str | None:
    kind = as_text(answer[0])
    if kind == "lost":
        raise claim_lost(run_id)
    return None if kind == "new" else as_text(answer[1])


def settle_args(
    token: str, state: Mapping[str, Any], waiting: Sequence[ToolCall]
) -> list[str | int]:
    return [
        token,
        json.dumps(state, separators=(",", ":")),
        _calls_json(waiting),
        "waiting" if waiting else "done",
        _now_ms(),
    ]
