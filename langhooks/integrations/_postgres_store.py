"""``PostgresRunStore`` / ``AsyncPostgresRunStore``: interrupted runs in PostgreSQL.

Two tables in the store's schema (``setup()`` creates them, under versioned
migrations recorded in ``{schema}.schema_migrations``):

- ``runs``: one row per run: its state (``chain.to_state()`` as JSON text), the
  waiting calls (JSONB), the metadata (JSONB, GIN-indexed for ``@>``), when it was
  saved and expires, its status (waiting, claimed, done), the claim's token and
  last heartbeat (the server's clock). A partial index on ``(saved_at DESC,
  run_id DESC) WHERE status = 'waiting'`` makes the inbox an index scan.
- ``run_calls``: one row per tool call a resume started, with its outcome once it
  returned.

Every operation is one statement (or, for ``setup()``, one transaction): nothing
relies on session state, so it works through PgBouncer in transaction mode. The
connections this module creates have prepared statements off
(``prepare_threshold=None``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any, Final, final

import psycopg
import psycopg_pool

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
    run_id_of,
)
from .._persist._codec import decode, encode

if TYPE_CHECKING:
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult, Tool
    from ..chain._chain import Handler
    from ..models import ChatModel

__all__ = ["SCHEMA_VERSION", "AsyncPostgresRunStore", "PostgresRunStore"]

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
)

#: The schema version ``setup()`` brings a store's schema to.
SCHEMA_VERSION: Final = _MIGRATIONS[-1][0]

_LIVE: Final = "(expires_at IS NULL OR expires_at > clock_timestamp())"


@final
class _Sql:
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
        self.save: Final = (
            f"WITH gone AS (DELETE FROM {s}.run_calls WHERE run_id = %(id)s) "
            f"INSERT INTO {s}.runs (run_id, status, state, calls, metadata, saved_at, "
            f"expires_at) VALUES (%(id)s, %(status)s, %(state)s, %(calls)s::jsonb, "
            f"%(meta)s::jsonb, clock_timestamp(), clock_timestamp() + "
            f"%(expires)s * interval '1 second') "
            f"ON CONFLICT (run_id) DO UPDATE SET status = EXCLUDED.status, "
            f"state = EXCLUDED.state, calls = EXCLUDED.calls, "
            f"metadata = EXCLUDED.metadata, saved_at = EXCLUDED.saved_at, "
            f"expires_at = EXCLUDED.expires_at, claim_token = NULL, "
            f"heartbeat_at = NULL"
        )
        self.load: Final = f"SELECT state FROM {s}.runs WHERE run_id = %s AND {_LIVE}"
        self.claim: Final = (
            f"UPDATE {s}.runs SET status = 'claimed', claim_token = %(token)s, "
            f"heartbeat_at = clock_timestamp() WHERE run_id = %(id)s AND {_LIVE} "
            f"AND (status = 'waiting' OR (status = 'claimed' AND heartbeat_at < "
            f"clock_timestamp() - %(timeout)s * interval '1 second')) RETURNING state"
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
        self.start_call: Final = (
            f"WITH held AS (SELECT 1 FROM {s}.runs WHERE run_id = %(id)s AND "
            f"claim_token = %(token)s AND status = 'claimed' FOR SHARE), "
            f"started AS (INSERT INTO {s}.run_calls (run_id, call_id) SELECT "
            f"%(id)s, %(call)s FROM held ON CONFLICT DO NOTHING RETURNING 1) "
            f"SELECT (SELECT count(*) FROM held), (SELECT count(*) FROM started), "
            f"(SELECT coalesce(outcome, '') FROM {s}.run_calls WHERE run_id = %(id)s "
            f"AND call_id = %(call)s)"
        )
        self.finish_call: Final = (
            f"UPDATE {s}.run_calls SET outcome = %s WHERE run_id = %s AND "
            f"call_id = %s AND outcome IS NULL"
        )
        self.settle: Final = (
            f"WITH settled AS (UPDATE {s}.runs SET state = %(state)s, "
            f"calls = %(calls)s::jsonb, status = %(status)s, claim_token = NULL, "
            f"heartbeat_at = NULL, saved_at = clock_timestamp() WHERE run_id = %(id)s "
            f"AND claim_token = %(token)s AND status = 'claimed' RETURNING run_id), "
            f"gone AS (DELETE FROM {s}.run_calls WHERE run_id IN "
            f"(SELECT run_id FROM settled)) SELECT count(*) FROM settled"
        )
        self.release: Final = (
            f"UPDATE {s}.runs SET status = 'waiting', claim_token = NULL WHERE "
            f"run_id = %s AND claim_token = %s AND status = 'claimed'"
        )
        self.pending: Final = (
            f"SELECT run_id, calls, saved_at, expires_at, metadata FROM {s}.runs "
            f"WHERE status = 'waiting' AND {_LIVE} ORDER BY saved_at DESC, "
            f"run_id DESC LIMIT %s"
        )
        self.pending_matching: Final = (
            f"SELECT run_id, calls, saved_at, expires_at, metadata FROM {s}.runs "
            f"WHERE status = 'waiting' AND {_LIVE} AND metadata @> %s::jsonb "
            f"ORDER BY saved_at DESC, run_id DESC LIMIT %s"
        )
        self.delete: Final = f"DELETE FROM {s}.runs WHERE run_id = %s"
        self.purge: Final = (
            f"DELETE FROM {s}.runs WHERE expires_at <= clock_timestamp()"
        )


def _too_new(version: int, schema: str) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"schema {schema!r} is at version {version}, newer than this langhooks "
        f"knows ({SCHEMA_VERSION}): upgrade langhooks",
    )


def _not_set_up(schema: str, error: Exception) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"the run store's tables are missing in schema {schema!r}: call setup() "
        f"once (it is idempotent) before using the store ({error})",
        original=error,
    )


def _unknown(run_id: str, schema: str) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"no saved run {run_id!r} in schema {schema!r} (never saved, deleted, or "
        f"expired)",
    )


def _claim_error(run_id: str, schema: str, status: str | None) -> LangHooksError:
    if status is None:
        return _unknown(run_id, schema)
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


def _lost(run_id: str) -> LangHooksError:
    return LangHooksError(
        "conflict",
        f"the claim on run {run_id!r} was taken over by another resume (its "
        f"heartbeat stopped for longer than claim_timeout)",
    )


def _calls_json(calls: Sequence[ToolCall]) -> str:
    return json.dumps([encode(call) for call in calls], separators=(",", ":"))


def _save_params(
    chain: LLMChain, metadata: Mapping[str, Any] | None, expires_in: float | None
) -> dict[str, Any]:
    run_id = run_id_of(chain)
    data = check_metadata(metadata)
    seconds = check_expires_in(expires_in)
    calls = chain.pending_tool_calls
    return {
        "id": run_id,
        "status": "waiting" if calls else "done",
        "state": json.dumps(chain.to_state(), separators=(",", ":")),
        "calls": _calls_json(calls),
        "meta": json.dumps(data, separators=(",", ":")),
        "expires": seconds,
    }


def _settle_params(
    run_id: str, token: str, state: Mapping[str, Any], waiting: Sequence[ToolCall]
) -> dict[str, Any]:
    return {
        "id": run_id,
        "token": token,
        "state": json.dumps(state, separators=(",", ":")),
        "calls": _calls_json(waiting),
        "status": "waiting" if waiting else "done",
    }


def _row(values: Sequence[Any]) -> PendingRun:
    run_id, calls, saved_at, expires_at, metadata = values
    return PendingRun(
        run_id=run_id,
        calls=tuple(decode(item) for item in calls),
        saved_at=saved_at.astimezone(UTC),
        expires_at=None if expires_at is None else expires_at.astimezone(UTC),
        metadata=metadata,
    )


def _pending_query(
    sql: _Sql, metadata: Mapping[str, Any] | None, limit: int
) -> tuple[str, tuple[Any, ...]]:
    wanted = check_metadata(metadata)
    check_limit(limit)
    if wanted:
        return sql.pending_matching, (json.dumps(wanted), limit)
    return sql.pending, (limit,)


def _chain(
    state: str | None,
    sql: _Sql,
    run_id: str,
    model: ChatModel,
    tools: Sequence[Tool],
    callbacks: Sequence[Handler],
    fallbacks: Sequence[ChatModel],
    retry: RetryPolicy | None,
) -> LLMChain:
    from ..chain import LLMChain

    if state is None:
        raise _unknown(run_id, sql.schema)
    return LLMChain.from_state(
        json.loads(state),
        model,
        tools=tools,
        callbacks=callbacks,
        fallbacks=fallbacks,
        retry=retry,
    )


def _started(run_id: str, row: Sequence[Any]) -> str | None:
    held, started, outcome = row
    if not held:
        raise _lost(run_id)
    return None if started else str(outcome)


# --- connections -------------------------------------------------------------------


@final
class _Connections:
    """A conninfo string, a connection or a pool, used one transaction at a time."""

    def __init__(
        self, source: str | psycopg.Connection[Any] | psycopg_pool.ConnectionPool
    ) -> None:
        self.owned: psycopg_pool.ConnectionPool | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._pool: psycopg_pool.ConnectionPool | None = None
        self._lock: Final = threading.Lock()
        if isinstance(source, str):
            self.owned = self._pool = psycopg_pool.ConnectionPool(
                source,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True, "prepare_threshold": None},
                open=True,
            )
        elif isinstance(source, psycopg_pool.ConnectionPool):
            self._pool = source
        elif isinstance(source, psycopg.Connection):
            self._conn = source
        else:
            raise TypeError(
                f"PostgresRunStore takes a conninfo str, a psycopg.Connection or a "
                f"psycopg_pool.ConnectionPool (AsyncPostgresRunStore takes their "
                f"async twins), got {source!r}"
            )

    @contextlib.contextmanager
    def transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        if self._pool is not None:
            with self._pool.connection() as conn, conn.transaction():
                yield conn.cursor()
            return
        assert self._conn is not None
        with self._lock, self._conn.transaction():
            yield self._conn.cursor()


@final
class _AsyncConnections:
    """The async twin of ``_Connections``."""

    def __init__(
        self,
        source: str | psycopg.AsyncConnection[Any] | psycopg_pool.AsyncConnectionPool,
    ) -> None:
        self.owned: psycopg_pool.AsyncConnectionPool | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._pool: psycopg_pool.AsyncConnectionPool | None = None
        self._lock: asyncio.Lock | None = None
        self._opened = False
        if isinstance(source, str):
            self.owned = self._pool = psycopg_pool.AsyncConnectionPool(
                source,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True, "prepare_threshold": None},
                open=False,
            )
        elif isinstance(source, psycopg_pool.AsyncConnectionPool):
            self._pool = source
            self._opened = True
        elif isinstance(source, psycopg.AsyncConnection):
            self._conn = source
        else:
            raise TypeError(
                f"AsyncPostgresRunStore takes a conninfo str, a "
                f"psycopg.AsyncConnection or a psycopg_pool.AsyncConnectionPool "
                f"(PostgresRunStore takes their sync twins), got {source!r}"
            )

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        if self._pool is not None:
            if not self._opened:
                self._opened = True
                await self._pool.open()
            async with self._pool.connection() as conn, conn.transaction():
                yield conn.cursor()
            return
        assert self._conn is not None
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock, self._conn.transaction():
            yield self._conn.cursor()


# --- the stores --------------------------------------------------------------------


@final
class PostgresRunStore:
    """A ``RunStore`` in PostgreSQL: interrupted runs wait in a table, the inbox
    is one index scan, and a resume runs once, even across a crash.

    ``resume`` claims the run with one ``UPDATE`` (waiting → claimed by this
    worker's token) and a heartbeat thread renews the claim while the worker
    lives. Each tool call gets a row before it runs and its outcome as soon as it
    returns: a resume that takes over a run whose worker died (no heartbeat for
    ``claim_timeout`` seconds) reuses what ran and never starts a call that had
    started; that call gets an error result saying its worker stopped.

    Call ``setup()`` once (at deploy, or at start-up: it is idempotent and safe
    when several processes run it at once).

    Args:
        conninfo_or_pool: a conninfo string (the store opens a pool of
            autocommit connections with prepared statements off, fit for
            PgBouncer's transaction mode; ``close()`` closes it), a
            ``psycopg.Connection`` (used one statement at a time) or a
            ``psycopg_pool.ConnectionPool``. Behind PgBouncer in transaction mode,
            give connections ``prepare_threshold=None``.
        schema: the schema the store's tables live in.
        claim_timeout: seconds without a heartbeat after which a resume's claim
            may be taken over.

    Raises:
        TypeError: ``conninfo_or_pool`` is none of these.
        ValueError: ``schema`` is not a plain identifier, or a bad
            ``claim_timeout``.
    """

    def __init__(
        self,
        conninfo_or_pool: str | psycopg.Connection[Any] | psycopg_pool.ConnectionPool,
        *,
        schema: str = "langhooks",
        claim_timeout: float = 60.0,
    ) -> None:
        self._sql: Final = _Sql(schema)
        self._claim_timeout: Final = check_claim_timeout(claim_timeout)
        self._db: Final = _Connections(conninfo_or_pool)

    def close(self) -> None:
        """Close the pool the store opened from a conninfo string (a connection
        or pool you passed stays yours to close)."""
        if self._db.owned is not None:
            self._db.owned.close()

    def __enter__(self) -> PostgresRunStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[psycopg.Cursor[Any]]:
        try:
            with self._db.transaction() as cursor:
                yield cursor
        except psycopg.errors.UndefinedTable as error:
            raise _not_set_up(self._sql.schema, error) from error

    def setup(self) -> int:
        """Create or upgrade the store's schema; idempotent, and safe when several
        processes call it at once (a transaction-scoped advisory lock).

        Returns:
            The schema version now in place (``SCHEMA_VERSION``).

        Raises:
            LangHooksError: "invalid_request" when the schema is newer than this
                langhooks knows.
        """
        sql = self._sql
        with self._db.transaction() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (sql.lock_key,),
            )
            cursor.execute(sql.create_schema)
            cursor.execute(sql.create_versions)
            cursor.execute(sql.version)
            current = _scalar(cursor.fetchone())
            if current > SCHEMA_VERSION:
                raise _too_new(current, sql.schema)
            for version, statements in sql.migrations:
                if version > current:
                    for statement in statements:
                        cursor.execute(statement)
                    cursor.execute(sql.record_version, (version,))
        return SCHEMA_VERSION

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
            expires_in: seconds until the run is forgotten (None: never).

        Returns:
            The run id (``chain.invocation.id``).

        Raises:
            ValueError: the chain has not run, or a bad ``expires_in``.
            TypeError: not an ``LLMChain``, metadata that is not JSON, or a state
                holding a value that cannot be encoded.
        """
        params = _save_params(chain, metadata, expires_in)
        with self._cursor() as cursor:
            cursor.execute(self._sql.save, params)
        run_id: str = params["id"]
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
            LangHooksError: "invalid_request" for an unknown, deleted or expired
                run.
        """
        with self._cursor() as cursor:
            cursor.execute(self._sql.load, (run_id,))
            row = cursor.fetchone()
        state = None if row is None else row[0]
        return _chain(
            state, self._sql, run_id, model, tools, callbacks, fallbacks, retry
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
            LangHooksError: "conflict" when another resume holds the run or it
                waits for no decision; "invalid_request" for an unknown, deleted
                or expired run.
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
            _Claims(self), run_id, decisions, code, claim_timeout=self._claim_timeout
        )

    def pending(
        self, *, metadata: Mapping[str, Any] | None = None, limit: int = 100
    ) -> list[PendingRun]:
        """The runs waiting for decisions, newest first (the approval inbox).

        Args:
            metadata: keep only runs whose metadata contains this (JSONB ``@>``:
                ``{"tenant": "a"}`` matches ``{"tenant": "a", "user": "b"}``).
            limit: at most this many runs.

        Raises:
            TypeError: bad ``metadata`` or ``limit``.
            ValueError: ``limit`` < 1.
        """
        query, params = _pending_query(self._sql, metadata, limit)
        with self._cursor() as cursor:
            cursor.execute(query, params)
            return [_row(values) for values in cursor.fetchall()]

    def delete(self, run_id: str) -> bool:
        """Forget run ``run_id`` (and its call records); whether it was there."""
        with self._cursor() as cursor:
            cursor.execute(self._sql.delete, (run_id,))
            return cursor.rowcount > 0

    def purge(self) -> int:
        """Delete the runs whose expiry has passed (they are never read again,
        whether purged or not); how many there were."""
        with self._cursor() as cursor:
            cursor.execute(self._sql.purge)
            return cursor.rowcount


def _first(row: Sequence[Any] | None) -> str | None:
    return None if row is None else str(row[0])


def _scalar(row: Sequence[Any] | None) -> int:
    assert row is not None  # an aggregate always answers one row
    return int(row[0])


@final
class _Claims:
    """The claim primitives of ``PostgresRunStore``: one statement each."""

    def __init__(self, store: PostgresRunStore) -> None:
        self._store: Final = store
        self._sql: Final = store._sql

    def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        store, sql = self._store, self._sql
        params = {"id": run_id, "token": token, "timeout": store._claim_timeout}
        with store._cursor() as cursor:
            cursor.execute(sql.claim, params)
            row = cursor.fetchone()
            if row is None:
                cursor.execute(sql.status, (run_id,))
                found = cursor.fetchone()
                raise _claim_error(run_id, sql.schema, _first(found))
        state: dict[str, Any] = json.loads(row[0])
        return state

    def heartbeat(self, run_id: str, token: str) -> bool:
        with self._store._cursor() as cursor:
            cursor.execute(self._sql.heartbeat, (run_id, token))
            return cursor.rowcount > 0

    def start_call(self, run_id: str, token: str, call_id: str) -> str | None:
        params = {"id": run_id, "token": token, "call": call_id}
        with self._store._cursor() as cursor:
            cursor.execute(self._sql.start_call, params)
            row = cursor.fetchone()
        assert row is not None  # a SELECT of subqueries answers one row
        return _started(run_id, row)

    def finish_call(self, run_id: str, token: str, call_id: str, outcome: str) -> None:
        with self._store._cursor() as cursor:
            cursor.execute(self._sql.finish_call, (outcome, run_id, call_id))

    def settle(
        self,
        run_id: str,
        token: str,
        state: Mapping[str, Any],
        waiting: Sequence[ToolCall],
    ) -> None:
        params = _settle_params(run_id, token, state, waiting)
        with self._store._cursor() as cursor:
            cursor.execute(self._sql.settle, params)
            settled = _scalar(cursor.fetchone())
        if not settled:
            raise _lost(run_id)

    def release(self, run_id: str, token: str) -> None:
        with self._store._cursor() as cursor:
            cursor.execute(self._sql.release, (run_id, token))


@final
class AsyncPostgresRunStore:
    """The async twin of ``PostgresRunStore`` (the same tables, so a run saved by
    one is resumed by the other); every method is awaited and the claim's
    heartbeat is a task.

    Args:
        conninfo_or_pool: a conninfo string (the store opens an
            ``AsyncConnectionPool`` on first use; ``await close()`` closes it), a
            ``psycopg.AsyncConnection`` or a ``psycopg_pool.AsyncConnectionPool``.
        schema: as ``PostgresRunStore``; ``claim_timeout`` too.

    Raises:
        TypeError: ``conninfo_or_pool`` is none of these.
        ValueError: as ``PostgresRunStore``.
    """

    def __init__(
        self,
        conninfo_or_pool: str
        | psycopg.AsyncConnection[Any]
        | psycopg_pool.AsyncConnectionPool,
        *,
        schema: str = "langhooks",
        claim_timeout: float = 60.0,
    ) -> None:
        self._sql: Final = _Sql(schema)
        self._claim_timeout: Final = check_claim_timeout(claim_timeout)
        self._db: Final = _AsyncConnections(conninfo_or_pool)

    async def close(self) -> None:
        """Close the pool the store opened from a conninfo string."""
        if self._db.owned is not None:
            await self._db.owned.close()

    async def __aenter__(self) -> AsyncPostgresRunStore:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @contextlib.asynccontextmanager
    async def _cursor(self) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        try:
            async with self._db.transaction() as cursor:
                yield cursor
        except psycopg.errors.UndefinedTable as error:
            raise _not_set_up(self._sql.schema, error) from error

    async def setup(self) -> int:
        """As ``PostgresRunStore.setup``.

        Raises:
            LangHooksError: as ``PostgresRunStore.setup``.
        """
        sql = self._sql
        async with self._db.transaction() as cursor:
            await cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (sql.lock_key,),
            )
            await cursor.execute(sql.create_schema)
            await cursor.execute(sql.create_versions)
            await cursor.execute(sql.version)
            current = _scalar(await cursor.fetchone())
            if current > SCHEMA_VERSION:
                raise _too_new(current, sql.schema)
            for version, statements in sql.migrations:
                if version > current:
                    for statement in statements:
                        await cursor.execute(statement)
                    await cursor.execute(sql.record_version, (version,))
        return SCHEMA_VERSION

    async def save(
        self,
        chain: LLMChain,
        *,
        metadata: Mapping[str, Any] | None = None,
        expires_in: float | None = None,
    ) -> str:
        """As ``PostgresRunStore.save``.

        Raises:
            ValueError: as ``PostgresRunStore.save``.
            TypeError: as ``PostgresRunStore.save``.
        """
        params = _save_params(chain, metadata, expires_in)
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.save, params)
        run_id: str = params["id"]
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
        """As ``PostgresRunStore.load``.

        Raises:
            LangHooksError: as ``PostgresRunStore.load``.
        """
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.load, (run_id,))
            row = await cursor.fetchone()
        state = None if row is None else row[0]
        return _chain(
            state, self._sql, run_id, model, tools, callbacks, fallbacks, retry
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
        """As ``PostgresRunStore.resume``, with ``arun`` (async tools awaited).

        Raises:
            LangHooksError: as ``PostgresRunStore.resume``.
            ValueError: as ``PostgresRunStore.resume``.
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
            claim_timeout=self._claim_timeout,
        )

    async def pending(
        self, *, metadata: Mapping[str, Any] | None = None, limit: int = 100
    ) -> list[PendingRun]:
        """As ``PostgresRunStore.pending``.

        Raises:
            TypeError: as ``PostgresRunStore.pending``.
            ValueError: as ``PostgresRunStore.pending``.
        """
        query, params = _pending_query(self._sql, metadata, limit)
        async with self._cursor() as cursor:
            await cursor.execute(query, params)
            return [_row(values) for values in await cursor.fetchall()]

    async def delete(self, run_id: str) -> bool:
        """As ``PostgresRunStore.delete``."""
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.delete, (run_id,))
            return cursor.rowcount > 0

    async def purge(self) -> int:
        """As ``PostgresRunStore.purge``."""
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.purge)
            return cursor.rowcount


@final
class _AsyncClaims:
    """The claim primitives of ``AsyncPostgresRunStore``."""

    def __init__(self, store: AsyncPostgresRunStore) -> None:
        self._store: Final = store
        self._sql: Final = store._sql

    async def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        store, sql = self._store, self._sql
        params = {"id": run_id, "token": token, "timeout": store._claim_timeout}
        async with store._cursor() as cursor:
            await cursor.execute(sql.claim, params)
            row = await cursor.fetchone()
            if row is None:
                await cursor.execute(sql.status, (run_id,))
                found = await cursor.fetchone()
                raise _claim_error(run_id, sql.schema, _first(found))
        state: dict[str, Any] = json.loads(row[0])
        return state

    async def heartbeat(self, run_id: str, token: str) -> bool:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.heartbeat, (run_id, token))
            return cursor.rowcount > 0

    async def start_call(self, run_id: str, token: str, call_id: str) -> str | None:
        params = {"id": run_id, "token": token, "call": call_id}
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.start_call, params)
            row = await cursor.fetchone()
        assert row is not None  # a SELECT of subqueries answers one row
        return _started(run_id, row)

    async def finish_call(
        self, run_id: str, token: str, call_id: str, outcome: str
    ) -> None:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.finish_call, (outcome, run_id, call_id))

    async def settle(
        self,
        run_id: str,
        token: str,
        state: Mapping[str, Any],
        waiting: Sequence[ToolCall],
    ) -> None:
        params = _settle_params(run_id, token, state, waiting)
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.settle, params)
            settled = _scalar(await cursor.fetchone())
        if not settled:
            raise _lost(run_id)

    async def release(self, run_id: str, token: str) -> None:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.release, (run_id, token))
