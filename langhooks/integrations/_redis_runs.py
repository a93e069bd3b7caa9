"""What ``RedisRunStore`` and ``AsyncRedisRunStore`` share: keys, scripts, checks.

One hash per run, ``{prefix}state:{run_id}``: the messages as a log, one field
``m:{position}`` each (a message's JSON), ``head`` (the rest of ``chain.to_state()``
as JSON), ``count`` (of messages) and ``version`` (of the last write, which a save
that appends builds on), the waiting calls, the metadata, when it was saved, its
status (waiting, claimed by a resume's token, or done), the claim's last heartbeat
(the server's clock) and one field ``step:{key}`` per tool call a resume started
(``CallKey.text``: the position of the assistant message that made the call, and its
id; empty until the call returns, then its outcome). Earlier releases kept
``call:{call_id}``; a resume takes such a field as the first call with that id it
starts. A save that builds on the version it knows is one script that writes the new
messages and the small fields only; a run an earlier release saved has ``state``
(the whole state) instead of the log, is read as it is, and is written whole by its
next save. Every change to a run is one Lua script (or one pipeline) on that one
key, so it is atomic and works on Redis Cluster.

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
from typing import Any, Final, final

from .._core._messages import LangHooksError, ToolCall
from .._persist._codec import decode
from .._persist._resume import (
    Saved,
    Write,
    check_claim_timeout,
)
from .._persist._stores import (
    CallKey,
    PendingRun,
    contains,
)
from ._redis_wire import check_count

__all__ = [
    "APPEND",
    "CLAIM",
    "FIELDS",
    "FINISH_CALL",
    "HEARTBEAT",
    "INDEX",
    "READ",
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
    "member_ids",
    "saved_of",
    "settle_args",
    "started_outcome",
]

# The server's clock in ms (every worker compares heartbeats on one clock).
_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# The run's log as one reply: head, state (an earlier release's), version, and the
# messages joined by commas (HMGET in slices: Lua's unpack takes a few thousand at
# most).
_LOG: Final = """
local function log(first)
    local v = redis.call('HMGET', KEYS[1], 'head', 'state', 'version', 'count')
    local out = first
    out[#out + 1] = v[1]
    out[#out + 1] = v[2]
    out[#out + 1] = v[3]
    local count = tonumber(v[4] or '0')
    local messages = {}
    local at = 0
    while at < count do
        local fields = {}
        for i = at, math.min(at + 999, count - 1) do fields[#fields + 1] = 'm:' .. i end
        for _, m in ipairs(redis.call('HMGET', KEYS[1], unpack(fields))) do
            messages[#messages + 1] = m
        end
        at = at + 1000
    end
    out[#out + 1] = table.concat(messages, ',')
    return out
end
"""

# KEYS[1] run hash. Nothing, or {head, state, version, messages}.
READ: Final = (
    _LOG
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
return log({})
"""
)

# Drops the call records and the messages from position keep on. A run in this
# layout has its log and 10 fields more, so its fields are scanned for records
# only when it has others; a run an earlier release saved always is.
_DROP: Final = """
local function drop(keep)
    local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
    if redis.call('HEXISTS', KEYS[1], 'head') == 0
            or redis.call('HLEN', KEYS[1]) > count + 10 then
        for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
            local kind = string.sub(field, 1, 5)
            if kind == 'step:' or kind == 'call:' then
                redis.call('HDEL', KEYS[1], field)
            end
        end
    end
    for i = keep, count - 1 do redis.call('HDEL', KEYS[1], 'm:' .. i) end
    redis.call('HDEL', KEYS[1], 'state')
end
local function append(keep, first, fields)
    for i = first, #ARGV do
        fields[#fields + 1] = 'm:' .. (keep + i - first)
        fields[#fields + 1] = ARGV[i]
    end
    redis.call('HSET', KEYS[1], unpack(fields))
end
"""

# KEYS[1] run hash; ARGV base, keep, count, version, head, calls, meta, saved (ms),
# expires (ms), status, then the messages from position keep on. 0 when the run is
# not at version base.
APPEND: Final = (
    _DROP
    + """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
drop(tonumber(ARGV[2]))
append(tonumber(ARGV[2]), 11, {'count', ARGV[3], 'version', ARGV[4], 'head', ARGV[5],
    'calls', ARGV[6], 'meta', ARGV[7], 'saved', ARGV[8], 'expires', ARGV[9],
    'status', ARGV[10], 'token', '', 'beat', 0})
redis.call('PEXPIREAT', KEYS[1], ARGV[9])
return 1
"""
)

# KEYS[1] run hash; ARGV token, claim timeout (ms).
CLAIM: Final = (
    _NOW
    + _LOG
    + """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'missing'} end
if status == 'done' then return {'done'} end
if status == 'claimed' then
    local beat = tonumber(redis.call('HGET', KEYS[1], 'beat'))
    if now - beat < tonumber(ARGV[2]) then return {'busy'} end
end
redis.call('HSET', KEYS[1], 'status', 'claimed', 'token', ARGV[1], 'beat', now)
return log({'ok', redis.call('HGET', KEYS[1], 'meta'),
            redis.call('HGET', KEYS[1], 'expires')})
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

# KEYS[1] run hash; ARGV token, keep, count, version, head, calls, status, saved
# (ms), then the messages from position keep on. 0 when the claim is lost.
SETTLE: Final = (
    _HELD
    + _DROP
    + """
if not held() then return 0 end
drop(tonumber(ARGV[2]))
append(tonumber(ARGV[2]), 9, {'count', ARGV[3], 'version', ARGV[4], 'head', ARGV[5],
    'calls', ARGV[6], 'status', ARGV[7], 'token', '', 'saved', ARGV[8]})
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

    def expiry(self, expires_in: float | None) -> tuple[int, int]:
        """When a save is, and when it expires (ms)."""
        saved = _now_ms()
        seconds = self.expire_after if expires_in is None else expires_in
        return saved, saved + round(seconds * 1000)

    def whole(
        self, write: Write, metadata: Mapping[str, Any], saved: int, expires: int
    ) -> dict[Any, str | int]:
        """The hash fields of a whole write (keyed by Any: redis-py's stubs want a
        mapping invariant in its key type)."""
        fields: dict[Any, str | int] = {
            "head": write.head,
            "version": write.version,
            "count": write.count,
            "calls": write.calls_json,
            "meta": json.dumps(metadata, separators=(",", ":")),
            "saved": saved,
            "expires": expires,
            "status": write.status,
            "token": "",
            "beat": 0,
        }
        for position, message in enumerate(write.messages):
            fields[f"m:{position}"] = message
        return fields

    @staticmethod
    def append(
        write: Write, metadata: Mapping[str, Any], saved: int, expires: int
    ) -> list[str | int]:
        """The arguments of ``APPEND``."""
        assert write.base is not None
        return [
            write.base,
            write.keep,
            write.count,
            write.version,
            write.head,
            write.calls_json,
            json.dumps(metadata, separators=(",", ":")),
            saved,
            expires,
            write.status,
            *write.messages,
        ]

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


def saved_of(answer: Sequence[Any]) -> Saved | None:
    """The ``Saved`` of a ``READ`` reply (or a ``CLAIM`` reply after its first two
    items): head, state, version, messages."""
    if not answer:
        return None
    head, state, version = answer[0], answer[1], answer[2]
    if head is None:
        # An earlier release's layout: the whole state in one field.
        assert state is not None  # every save wrote one or the other
        return Saved(as_text(state), None, "")
    return Saved(as_text(head), as_text(answer[3]), as_text(version))


def started_outcome(run_id: str, answer: Sequence[Any]) -> str | None:
    kind = as_text(answer[0])
    if kind == "lost":
        raise claim_lost(run_id)
    return None if kind == "new" else as_text(answer[1])


def settle_args(token: str, write: Write) -> list[str | int]:
    """The arguments of ``SETTLE``."""
    return [
        token,
        write.keep,
        write.count,
        write.version,
        write.head,
        write.calls_json,
        write.status,
        _now_ms(),
        *write.messages,
    ]
