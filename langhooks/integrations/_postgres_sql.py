"""``PostgresRunStore`` / ``AsyncPostgresRunStore``: interrupted runs in PostgreSQL.

Three tables in the store's schema (``setup()`` creates them, under versioned
migrations recorded in ``{schema}.schema_migrations``):

- ``runs``: one row per run: ``head`` (``chain.to_state()`` without its messages,
  as JSON text), ``message_count`` and ``version`` (of the last write, which a
  save that appends builds on), the waiting calls (JSONB), the metadata (JSONB,
  GIN-indexed for ``@>``), when it was saved and expires, its status (waiting,
  claimed, done), the claim's token and last heartbeat (the server's clock). A
  partial index on ``(saved_at DESC, run_id DESC) WHERE status = 'waiting'`` makes
  the inbox an index scan. A run an earlier release saved has ``state`` (the whole
  state) and no head: it loads as it is, and its next save writes it whole.
- ``run_messages``: the messages of each run, one row per ``(run_id, position)``:
  a save writes the rows from the first message that changed on (usually the new
  ones) and deletes those past the end.
- ``run_calls``: one row per tool call a resume started (keyed by ``CallKey.text``),
  with its outcome once it returned.

JSONB holds no NUL and no lone surrogate, which tool arguments and metadata may
carry (a file name ``os.listdir`` gave): such a string is kept in the JSONB columns
escaped (``_searchable``: a mark, then its JSON escape, so ``@>`` still matches it
exactly), and the exact value beside it as JSON text (``calls_text``,
``metadata_text``; NULL when nothing needed escaping). The messages and the head
are ASCII JSON, which text always holds.

Every operation is one statement (or, for ``setup()``, one transaction): nothing
relies on session state, so it works through PgBouncer in transaction mode. The
connections this module creates have prepared statements off
(``prepare_threshold=None``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any, Final, final

import psycopg
import psycopg.conninfo

from .._core._messages import LangHooksError, ToolCall
from .._persist._codec import decode, encode
from .._persist._resume import Saved, Write
from .._persist._stores import CallKey, PendingRun

__all__ = [
    "CONNECT_TIMEOUT",
    "SCHEMA_VERSION",
    "Sql",
    "call_params",
    "checked_conninfo",
    "claim_error",
    "claim_lost",
    "first_value",
    "not_set_up",
    "pending_query",
    "pending_row",
    "saved_of",
    "scalar",
    "settle_params",
    "started_outcome",
    "storable",
    "too_new",
    "unknown",
    "unreachable",
    "write_params",
    "wrong_source",
]

_SCHEMA_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

# Each migration: (version, statements). Never edit one that shipped: add the next.
_MIGRATIONS: Final[tuple[tuple[int, tuple[str, ...]], ...]] = (
    (
        1,
        (
            """CREATE TABLE {s}.runs (
                run_id text PRIMARY KEY,
                status text NOT NULL CHECK (status IN ('waiting', 'claimed', 'done')),
                state text NOT NULL,
                calls jsonb NOT NULL,
                metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
                saved_at timestamptz NOT NULL,
                expires_at timestamptz,
                claim_token text,
                heartbeat_at timestamptz
            )""",
            """CREATE TABLE {s}.run_calls (
                run_id text NOT NULL REFERENCES {s}.runs ON DELETE CASCADE,
                call_id text NOT NULL,
                outcome text,
                started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                PRIMARY KEY (run_id, call_id)
            )""",
            """CREATE INDEX runs_waiting_newest ON {s}.runs
                (saved_at DESC, run_id DESC) WHERE status = 'waiting'""",
            """CREATE INDEX runs_waiting_metadata ON {s}.runs
                USING gin (metadata jsonb_path_ops) WHERE status = 'waiting'""",
            """CREATE INDEX runs_expiring ON {s}.runs (expires_at)
                WHERE expires_at IS NOT NULL""",
        ),
    ),
    (
        2,
        (
            "ALTER TABLE {s}.runs ADD COLUMN calls_text text",
            "ALTER TABLE {s}.runs ADD COLUMN metadata_text text",
        ),
    ),
    (
        3,
        (
            "ALTER TABLE {s}.runs ALTER COLUMN state DROP NOT NULL",
            "ALTER TABLE {s}.runs ADD COLUMN head text, ADD COLUMN version text, "
            "ADD COLUMN message_count integer NOT NULL DEFAULT 0",
            """CREATE TABLE {s}.run_messages (
                run_id text NOT NULL REFERENCES {s}.runs ON DELETE CASCADE,
                position integer NOT NULL,
                message text NOT NULL,
                PRIMARY KEY (run_id, position)
            )""",
        ),
    ),
)

#: The schema version ``setup()`` brings a store's schema to.
SCHEMA_VERSION: Final = _MIGRATIONS[-1][0]

_LIVE: Final = "(expires_at IS NULL OR expires_at > clock_timestamp())"
# The columns of an inbox row after its run id.
_ROW: Final = "calls, saved_at, expires_at, metadata, calls_text, metadata_text"
# What starts a string that _searchable escaped: a noncharacter, never in text
# that is interchanged.
_ESCAPED: Final = "\ufdd0"


@final
class Sql:
    """The statements of one schema (its name quoted once, here)."""

    def __init__(self, schema: str) -> None:
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"schema must be a PostgreSQL identifier (letters, digits and _, "
                f"not starting with a digit, at most 63), got {schema!r}"
            )
        s = f'"{schema}"'
        self.schema: Final = schema
        self.lock_key: Final = f"langhooks.setup:{schema}"
        self.migrations: Final = tuple(
            (version, tuple(statement.format(s=s) for statement in statements))
            for version, statements in _MIGRATIONS
        )
        self.create_schema: Final = f"CREATE SCHEMA IF NOT EXISTS {s}"
        self.create_versions: Final = (
            f"CREATE TABLE IF NOT EXISTS {s}.schema_migrations (version integer "
            f"PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
        self.version: Final = (
            f"SELECT coalesce(max(version), 0) FROM {s}.schema_migrations"
        )
        self.record_version: Final = (
            f"INSERT INTO {s}.schema_migrations (version) VALUES (%s)"
        )
        # A write: the run's row (``{run}``: updated when at version %(base)s,
        # upserted for a whole write), then its call records deleted, its messages
        # from %(keep)s on upserted and those past %(count)s deleted (disjoint
        # rows, so one statement).
        log = (
            f"gone AS (DELETE FROM {s}.run_calls WHERE run_id IN (SELECT run_id "
            f"FROM run)), cut AS (DELETE FROM {s}.run_messages WHERE run_id IN "
            f"(SELECT run_id FROM run) AND position >= %(count)s), put AS (INSERT "
            f"INTO {s}.run_messages (run_id, position, message) SELECT run.run_id, "
            f"%(keep)s + t.n - 1, t.m FROM run, unnest(%(messages)s::text[]) WITH "
            f"ORDINALITY AS t(m, n) ON CONFLICT (run_id, position) DO UPDATE SET "
            f"message = EXCLUDED.message) "
        )
        fields = (
            "status = %(status)s, state = NULL, head = %(head)s, version = "
            "%(version)s, message_count = %(count)s, calls = %(calls)s::jsonb, "
            "calls_text = %(calls_text)s"
        )
        saved = (
            "metadata = %(meta)s::jsonb, metadata_text = %(meta_text)s, saved_at = "
            "clock_timestamp(), expires_at = "
            "clock_timestamp() + %(expires)s * interval '1 second', claim_token = "
            "NULL, heartbeat_at = NULL"
        )
        self.append: Final = (
            f"WITH run AS (UPDATE {s}.runs SET {fields}, {saved} WHERE run_id = "
            f"%(id)s AND version = %(base)s RETURNING run_id), {log}"
            f"SELECT count(*) FROM run"
        )
        self.save: Final = (
            f"WITH run AS (INSERT INTO {s}.runs (run_id, status, head, version, "
            f"message_count, calls, calls_text, metadata, metadata_text, saved_at, "
            f"expires_at) VALUES (%(id)s, %(status)s, %(head)s, %(version)s, "
            f"%(count)s, %(calls)s::jsonb, %(calls_text)s, %(meta)s::jsonb, "
            f"%(meta_text)s, clock_timestamp(), clock_timestamp() + "
            f"%(expires)s * interval '1 second') ON CONFLICT (run_id) DO UPDATE SET "
            f"status = EXCLUDED.status, state = NULL, head = EXCLUDED.head, "
            f"version = EXCLUDED.version, message_count = EXCLUDED.message_count, "
            f"calls = EXCLUDED.calls, calls_text = EXCLUDED.calls_text, {saved} "
            f"RETURNING run_id), {log}"
            f"SELECT count(*) FROM run"
        )
        # The messages as one text, joined by commas (no array to parse).
        messages = (
            f"(SELECT coalesce(string_agg(message, ',' ORDER BY position), '') "
            f"FROM {s}.run_messages m WHERE m.run_id = r.run_id)"
        )
        self.load: Final = (
            f"SELECT head, state, version, {messages} FROM {s}.runs r WHERE "
            f"run_id = %s AND {_LIVE}"
        )
        self.claim: Final = (
            f"UPDATE {s}.runs r SET status = 'claimed', claim_token = %(token)s, "
            f"heartbeat_at = clock_timestamp() WHERE run_id = %(id)s AND {_LIVE} "
            f"AND (status = 'waiting' OR (status = 'claimed' AND heartbeat_at < "
            f"clock_timestamp() - %(timeout)s * interval '1 second')) RETURNING "
            f"head, state, version, {messages}"
        )
        self.status: Final = (
            f"SELECT status FROM {s}.runs WHERE run_id = %s AND {_LIVE}"
        )
        self.heartbeat: Final = (
            f"UPDATE {s}.runs SET heartbeat_at = clock_timestamp() WHERE run_id = %s "
            f"AND claim_token = %s AND status = 'claimed'"
        )
        # The claim row is locked FOR SHARE: a takeover waits for this statement,
        # so no call starts under a claim that another resume holds.
        # A record an earlier release keyed by the call id alone (%(old)s) is
        # taken, once, by the first call with that id: moved to its key.
        self.start_call: Final = (
            f"WITH held AS (SELECT 1 FROM {s}.runs WHERE run_id = %(id)s AND "
            f"claim_token = %(token)s AND status = 'claimed' FOR SHARE), "
            f"known AS (SELECT outcome FROM {s}.run_calls WHERE run_id = %(id)s "
            f"AND call_id = %(call)s), "
            f"old AS (DELETE FROM {s}.run_calls WHERE run_id = %(id)s AND "
            f"call_id = %(old)s AND EXISTS (SELECT 1 FROM held) AND NOT EXISTS "
            f"(SELECT 1 FROM known) RETURNING outcome), "
            f"started AS (INSERT INTO {s}.run_calls (run_id, call_id, outcome) "
            f"SELECT %(id)s, %(call)s, (SELECT outcome FROM old) FROM held "
            f"ON CONFLICT DO NOTHING RETURNING 1) "
            f"SELECT (SELECT count(*) FROM held), (SELECT count(*) FROM started) - "
            f"(SELECT count(*) FROM old), coalesce((SELECT outcome FROM old), "
            f"(SELECT outcome FROM known), '')"
        )
        self.finish_call: Final = (
            f"UPDATE {s}.run_calls SET outcome = %s WHERE run_id = %s AND "
            f"call_id = %s AND outcome IS NULL"
        )
        self.settle: Final = (
            f"WITH run AS (UPDATE {s}.runs SET {fields}, claim_token = NULL, "
            f"heartbeat_at = NULL, saved_at = clock_timestamp() WHERE run_id = "
            f"%(id)s AND claim_token = %(token)s AND status = 'claimed' "
            f"RETURNING run_id), {log}SELECT count(*) FROM run"
        )
        self.release: Final = (
            f"UPDATE {s}.runs SET status = 'waiting', claim_token = NULL WHERE "
            f"run_id = %s AND claim_token = %s AND status = 'claimed'"
        )
        self.pending: Final = (
            f"SELECT run_id, {_ROW} FROM {s}.runs "
            f"WHERE status = 'waiting' AND {_LIVE} ORDER BY saved_at DESC, "
            f"run_id DESC LIMIT %s"
        )
        self.pending_matching: Final = (
            f"SELECT run_id, {_ROW} FROM {s}.runs "
            f"WHERE status = 'waiting' AND {_LIVE} AND metadata @> %s::jsonb "
            f"ORDER BY saved_at DESC, run_id DESC LIMIT %s"
        )
        self.waiting: Final = (
            f"SELECT run_id, {_ROW} FROM {s}.runs "
            f"WHERE run_id = %s AND status = 'waiting' AND {_LIVE}"
        )
        self.delete: Final = f"DELETE FROM {s}.runs WHERE run_id = %s"
        self.purge: Final = (
            f"DELETE FROM {s}.runs WHERE expires_at <= clock_timestamp()"
        )


#: Seconds a store's own connection waits for the server (libpq ``connect_timeout``)
#: when its conninfo does not say.
CONNECT_TIMEOUT: Final = 5


def checked_conninfo(source: str) -> str:
    """``source`` (a conninfo a store opens its own pool with), with
    ``connect_timeout`` when it gives none, so a wrong host fails in seconds.

    Raises:
        ValueError: a URL of another scheme (``redis://...``), or a conninfo
            libpq cannot read.
    """
    scheme, separator, _ = source.partition("://")
    if separator and scheme.lower() not in ("postgresql", "postgres"):
        raise ValueError(
            f"a PostgreSQL store takes a postgresql://... URL or a key=value "
            f"conninfo, got a {scheme}:// URL"
            + (" (RedisRunStore takes Redis)" if scheme.startswith("redis") else "")
        )
    try:
        given = psycopg.conninfo.conninfo_to_dict(source)
    except psycopg.ProgrammingError as error:
        raise ValueError(
            f"not a PostgreSQL conninfo ({str(error).strip()}): give a "
            f"postgresql://user@host:port/dbname URL or key=value pairs"
        ) from None
    if "connect_timeout" in given:
        return source
    return psycopg.conninfo.make_conninfo(source, connect_timeout=CONNECT_TIMEOUT)


def unreachable(conninfo: str, error: Exception) -> LangHooksError:
    """The error of a store whose first connection failed, naming where it went
    and what to check."""
    given = psycopg.conninfo.conninfo_to_dict(conninfo)
    host = given.get("host") or given.get("hostaddr") or "the local socket"
    port = given.get("port") or "5432"
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return LangHooksError(
        "connection",
        f"cannot connect to PostgreSQL at {host}:{port} (database "
        f"{given.get('dbname', '(default)')!r}, user "
        f"{given.get('user', '(default)')!r}): {first}. Check the host and port of "
        f"the conninfo, that the server runs and accepts connections from here, "
        f"and the user, password and database",
        original=error,
    )


def wrong_source(source: object, *, is_async: bool) -> TypeError:
    """The error a store raises for a ``conninfo_or_pool`` it cannot use (kept
    here: each message names the other store, which the generated sync module
    could not spell)."""
    if is_async:
        return TypeError(
            f"AsyncPostgresRunStore takes a conninfo str, a "
            f"psycopg.AsyncConnection or a psycopg_pool.AsyncConnectionPool "
            f"(PostgresRunStore takes their sync twins), got {source!r}"
        )
    return TypeError(
        f"PostgresRunStore takes a conninfo str, a psycopg.Connection or a "
        f"psycopg_pool.ConnectionPool (AsyncPostgresRunStore takes their "
        f"async twins), got {source!r}"
    )


def too_new(version: int, schema: str) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"schema {schema!r} is at version {version}, newer than this langhooks "
        f"knows ({SCHEMA_VERSION}): upgrade langhooks",
    )


def not_set_up(schema: str, error: Exception) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"the run store's tables are missing or older than this langhooks in "
        f"schema {schema!r}: call setup() once (it is idempotent) before using "
        f"the store "
        f"({str(error).splitlines()[0]})",
        original=error,
    )


def unknown(run_id: str, schema: str) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"no saved run {run_id!r} in schema {schema!r} (never saved, deleted, or "
        f"expired)",
    )


def claim_error(run_id: str, schema: str, status: str | None) -> LangHooksError:
    if status is None:
        return unknown(run_id, schema)
    if status == "claimed":
        return LangHooksError(
            "conflict",
            f"run {run_id!r} is being resumed by another request; nothing was run",
        )
    return LangHooksError(
        "conflict",
        f"run {run_id!r} waits for no decision (it was resumed already); nothing "
        f"was run",
    )


def claim_lost(run_id: str) -> LangHooksError:
    return LangHooksError(
        "conflict",
        f"the claim on run {run_id!r} was taken over by another resume (its "
        f"heartbeat stopped for longer than claim_timeout)",
    )


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _plain(text: str) -> bool:
    """Whether PostgreSQL text holds ``text``: no NUL, no lone surrogate."""
    if "\x00" in text:
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _jsonb_text(text: str) -> str:
    """``text`` as a JSONB string holds it: itself, or, when it carries a NUL or
    a surrogate (which JSONB refuses) or starts with the mark, the mark and its
    JSON escape (one to one, so containment still matches)."""
    if _plain(text) and not text.startswith(_ESCAPED):
        return text
    return _ESCAPED + json.dumps(text)[1:-1]


def _searchable(value: Any) -> Any:
    """``value`` (JSON types) with every string as ``_jsonb_text`` gives it."""
    if isinstance(value, str):
        return _jsonb_text(value)
    if isinstance(value, Mapping):
        return {_jsonb_text(k): _searchable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_searchable(item) for item in value]
    return value


def _for_jsonb(value: Any) -> tuple[str, str | None]:
    """``value`` for a JSONB column, and its exact JSON text when that differs
    (None when the JSONB holds it as it is)."""
    exact, searchable = _json(value), _json(_searchable(value))
    return searchable, None if searchable == exact else exact


def storable(run_id: str) -> bool:
    """Whether PostgreSQL text holds ``run_id`` (no NUL, no lone surrogate): a run
    id it cannot hold names no run in the store."""
    return _plain(run_id)


def call_params(run_id: str, token: str, call: CallKey) -> dict[str, str | None]:
    """``start_call``'s parameters. The key an earlier release used (the call id
    alone) is looked up only when PostgreSQL text can hold it: else there is none."""
    plain = call.call_id if _plain(call.call_id) else None
    return {"id": run_id, "token": token, "call": call.text, "old": plain}


def _calls_params(calls: Sequence[ToolCall]) -> dict[str, str | None]:
    data, exact = _for_jsonb([encode(call) for call in calls])
    return {"calls": data, "calls_text": exact}


def _log_params(write: Write) -> dict[str, Any]:
    return {
        "id": write.run_id,
        "status": write.status,
        "head": write.head,
        "version": write.version,
        "count": write.count,
        **_calls_params(write.calls),
        "base": write.base,
        "keep": write.keep,
        "messages": list(write.messages),
    }


def write_params(
    write: Write, metadata: Mapping[str, Any], expires_in: float | None
) -> dict[str, Any]:
    """The parameters of ``Sql.append`` (``write`` with a base) or ``Sql.save``.

    Raises:
        ValueError: a run id PostgreSQL text cannot hold.
    """
    if not storable(write.run_id):
        raise ValueError(
            f"run id {write.run_id!r} holds a NUL or a lone surrogate, which "
            f"PostgreSQL text cannot: give the run a plain id (Invocation(id=...))"
        )
    meta, meta_text = _for_jsonb(metadata)
    return {
        **_log_params(write),
        "meta": meta,
        "meta_text": meta_text,
        "expires": expires_in,
    }


def settle_params(token: str, write: Write) -> dict[str, Any]:
    """The parameters of ``Sql.settle``."""
    return {**_log_params(write), "token": token}


def saved_of(row: Sequence[Any] | None) -> Saved | None:
    """The ``Saved`` of a ``load`` or ``claim`` row (head, state, version,
    messages)."""
    if row is None:
        return None
    head, state, version, messages = row
    if head is None:
        return Saved(state, None, "")  # an earlier release's layout
    return Saved(head, messages, version)


def pending_row(values: Sequence[Any]) -> PendingRun:
    run_id, calls, saved_at, expires_at, metadata, calls_text, metadata_text = values
    if calls_text is not None:
        calls = json.loads(calls_text)
    if metadata_text is not None:
        metadata = json.loads(metadata_text)
    return PendingRun(
        run_id=run_id,
        calls=tuple(decode(item) for item in calls),
        saved_at=saved_at.astimezone(UTC),
        expires_at=None if expires_at is None else expires_at.astimezone(UTC),
        metadata=metadata,
    )


def pending_query(
    sql: Sql, wanted: Mapping[str, Any], limit: int
) -> tuple[str, tuple[Any, ...]]:
    if wanted:
        return sql.pending_matching, (_json(_searchable(wanted)), limit)
    return sql.pending, (limit,)


def started_outcome(run_id: str, row: Sequence[Any]) -> str | None:
    held, started, outcome = row
    if not held:
        raise claim_lost(run_id)
    return None if started else str(outcome)


def first_value(row: Sequence[Any] | None) -> str | None:
    return None if row is None else str(row[0])


def scalar(row: Sequence[Any] | None) -> int:
    assert row is not None  # an aggregate always answers one row
    return int(row[0])
