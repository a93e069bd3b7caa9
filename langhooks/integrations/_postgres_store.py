"""``PostgresRunStore``: interrupted runs in PostgreSQL, resumed once (see
``_postgres_sql`` for the tables and statements)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import psycopg
import psycopg_pool

from .._core._messages import ToolCall
from .._persist._resume import (
    ResumeCode,
    check_claim_timeout,
    resume_once,
)
from .._persist._stores import (
    PendingRun,
)

if TYPE_CHECKING:
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult, Tool
    from ..chain._chain import Handler
    from ..models import ChatModel
from ._postgres_sql import (
    SCHEMA_VERSION,
    Sql,
    claim_error,
    claim_lost,
    first_value,
    load_chain,
    not_set_up,
    pending_query,
    pending_row,
    save_params,
    scalar,
    settle_params,
    started_outcome,
    too_new,
)

__all__ = ["PostgresRunStore"]


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
    def transaction(self, *, block: bool = False) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor for one statement (``block``: for several, in one
        transaction). An autocommit connection runs a single statement as its own
        transaction: no BEGIN and COMMIT round trips."""
        if self._pool is not None:
            with self._pool.connection() as conn, _scope(conn, block):
                yield conn.cursor()
            return
        assert self._conn is not None
        with self._lock, _scope(self._conn, block):
            yield self._conn.cursor()


def _scope(
    conn: psycopg.Connection[Any], block: bool
) -> contextlib.AbstractContextManager[Any]:
    if block or not conn.autocommit:
        return conn.transaction()
    return contextlib.nullcontext()


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
        self._sql: Final = Sql(schema)
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
            raise not_set_up(self._sql.schema, error) from error

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
        with self._db.transaction(block=True) as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (sql.lock_key,),
            )
            cursor.execute(sql.create_schema)
            cursor.execute(sql.create_versions)
            cursor.execute(sql.version)
            current = scalar(cursor.fetchone())
            if current > SCHEMA_VERSION:
                raise too_new(current, sql.schema)
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
        params = save_params(chain, metadata, expires_in)
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
        return load_chain(
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
        query, params = pending_query(self._sql, metadata, limit)
        with self._cursor() as cursor:
            cursor.execute(query, params)
            return [pending_row(values) for values in cursor.fetchall()]

    def waiting(self, run_id: str) -> PendingRun | None:
        """Run ``run_id``'s row of the inbox: None unless it waits for decisions
        (unknown, expired, being resumed or done)."""
        with self._cursor() as cursor:
            cursor.execute(self._sql.waiting, (run_id,))
            row = cursor.fetchone()
        return None if row is None else pending_row(row)

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
                raise claim_error(run_id, sql.schema, first_value(found))
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
        return started_outcome(run_id, row)

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
        params = settle_params(run_id, token, state, waiting)
        with self._store._cursor() as cursor:
            cursor.execute(self._sql.settle, params)
            settled = scalar(cursor.fetchone())
        if not settled:
            raise claim_lost(run_id)

    def release(self, run_id: str, token: str) -> None:
        with self._store._cursor() as cursor:
            cursor.execute(self._sql.release, (run_id, token))
