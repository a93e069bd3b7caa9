"""``langhooks runs``: the approval inbox of a run store, from the command line.

- ``langhooks runs pending --store URL [--metadata KEY=VALUE ...] [--limit N]``
  lists the runs waiting for decisions, newest first, one line each.
- ``langhooks runs show RUN_ID --store URL`` prints one waiting run and its calls.
- ``langhooks runs approve RUN_ID CALL_ID --store URL --agent MODULE:NAME`` and
  ``langhooks runs reject RUN_ID CALL_ID --store URL --agent MODULE:NAME
  [--message TEXT]`` decide a waiting call and resume the run (once, as
  ``store.resume`` does) with the agent's model, tools and handlers: ``NAME`` is an
  ``LLMChain`` in ``MODULE`` (imported from the current directory too), or a function
  of no arguments returning one. A run waiting on several calls takes one command
  per call: each settles its call, and the run goes on once none waits. Like the web
  apps without ``authorize``, the command acts as the store's owner: whoever can
  reach the store may decide any run in it.

``URL`` is ``redis://...`` (``RedisRunStore``, keys under ``--prefix``) or
``postgresql://...`` (``PostgresRunStore``, tables in ``--schema``). A metadata
value is read as JSON when it is JSON (``n=1`` is the number 1), else as text.
Exit status: 0 when done, 1 when the store cannot be read, the run does not wait or
its resume failed, 2 for a usage error (one line).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from .._core._terminal import escaped, short_json

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .._persist._stores import PendingRun
    from ..chain import LLMChain

__all__ = ["add_arguments", "run"]

_SCHEMES = ("redis://", "rediss://", "unix://", "postgresql://", "postgres://")
_CONNECT_TIMEOUT = 5.0  # seconds, as the PostgreSQL store's connect_timeout


class _Usage(Exception):
    """A usage error: its message is the one line printed."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the runs command's subcommands and their arguments."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    pending = actions.add_parser(
        "pending", help="list the runs waiting for decisions, newest first"
    )
    show = actions.add_parser("show", help="print one waiting run and its calls")
    show.add_argument("run_id", metavar="RUN_ID")
    approve = actions.add_parser(
        "approve", help="approve a waiting call and resume the run"
    )
    reject = actions.add_parser(
        "reject", help="reject a waiting call and resume the run"
    )
    reject.add_argument(
        "--message", help="what the model is told instead of the tool's result"
    )
    for decide in (approve, reject):
        decide.add_argument("run_id", metavar="RUN_ID")
        decide.add_argument("call_id", metavar="CALL_ID")
        decide.add_argument(
            "--agent",
            metavar="MODULE:NAME",
            help="the LLMChain (or function returning one) to go on with (required)",
        )
    for sub in (pending, show, approve, reject):
        sub.add_argument(
            "--store",
            metavar="URL",
            help="redis://... or postgresql://... (required)",
        )
        sub.add_argument(
            "--prefix", default="langhooks:", help="Redis key prefix (langhooks:)"
        )
        sub.add_argument(
            "--schema", default="langhooks", help="PostgreSQL schema (langhooks)"
        )
    pending.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only runs whose metadata holds this (repeatable)",
    )
    pending.add_argument("--limit", default="100", help="at most this many (100)")


def run(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """List the inbox or show one run.

    Returns:
        0 when done, 1 when the store cannot be read or the run does not wait,
        2 for a usage error.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    action = getattr(args, "action", None)
    try:
        if action is None:
            raise _Usage(
                "say what to do: runs pending --store URL, or runs show, approve "
                "or reject"
            )
        metadata = _metadata(getattr(args, "metadata", []))
        limit = _limit(getattr(args, "limit", "100"))
        opened = _opener(args.store, args.prefix, args.schema)
        agent = _agent(args.agent) if action in ("approve", "reject") else None
    except _Usage as usage:
        print(f"langhooks runs: {usage}", file=err)
        return 2
    try:
        with opened() as store:
            if action == "pending":
                rows = store.pending(metadata=metadata, limit=limit)
                for row in rows:
                    print(_line(row), file=out)
                print(f"{len(rows)} run(s) waiting", file=out)
                return 0
            if agent is not None:
                return _decide(store, agent, args, out)
            row = store.waiting(args.run_id)
            if row is None:
                print(
                    f"langhooks runs: run {args.run_id!r} does not wait for a "
                    f"decision (unknown, expired, being resumed or finished)",
                    file=err,
                )
                return 1
            _show(row, out)
            return 0
    except Exception as error:  # the one line a command line owes its user
        if type(getattr(error, "original", None)).__name__ == "UndefinedTable":
            # Tables set up in another schema than --schema names (its default).
            print(
                f"langhooks runs: the run store's tables are not in schema "
                f"{args.schema!r}: pass --schema SCHEMA, the schema they were set "
                f"up in (or set the store up there: PostgresRunStore.setup())",
                file=err,
            )
            return 1
        first = (str(error).splitlines() or [""])[0]
        print(f"langhooks runs: {type(error).__name__}: {first}", file=err)
        return 1


def _agent(spec: str | None) -> LLMChain:
    """The chain ``--agent MODULE:NAME`` names (a chain, or a function making one)."""
    from ..chain import LLMChain

    if spec is None:
        raise _Usage("--agent MODULE:NAME is required: the chain to resume with")
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name:
        raise _Usage(f"--agent takes MODULE:NAME, got {spec!r}")
    if "" not in sys.path:  # `python -m` puts the current directory first; a script
        sys.path.insert(0, "")  # (the installed `langhooks`) does not
    try:
        value = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as error:
        raise _Usage(f"--agent {spec}: {error}") from None
    chain = value() if callable(value) and not isinstance(value, LLMChain) else value
    if not isinstance(chain, LLMChain):
        raise _Usage(
            f"--agent {spec} is a {type(chain).__name__}: name an LLMChain, or a "
            f"function of no arguments returning one"
        )
    return chain


def _decide(store: Any, agent: LLMChain, args: argparse.Namespace, out: TextIO) -> int:
    """Resume run ``args.run_id`` with the decision for ``args.call_id``."""
    from ..chain import Decision

    if args.action == "approve":
        decision = Decision.approve()
    elif args.message is None:
        decision = Decision.reject()
    else:
        decision = Decision.reject(args.message)
    result = store.resume(
        args.run_id,
        {args.call_id: decision},
        agent.model,
        tools=agent.tools,
        callbacks=agent.callbacks,
        fallbacks=agent.fallbacks,
        retry=agent.retry,
    )
    done = "approved" if args.action == "approve" else "rejected"
    print(f"run {args.run_id}: {escaped(args.call_id)} {done}", file=out)
    if result.status == "interrupted":
        waiting = ", ".join(
            escaped(call.call_id) for call in result.chain.pending_tool_calls
        )
        print(f"the run waits again: {waiting}", file=out)
        return 0
    if result.status == "error":
        print(f"the run failed: {escaped(result.error.message)}", file=out)
        return 1
    print(f"the run ended: {escaped(result.chain.messages[-1].text)}", file=out)
    return 0


def _metadata(pairs: Sequence[str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise _Usage(f"--metadata takes KEY=VALUE, got {pair!r}")
        try:
            metadata[key] = json.loads(text)
        except ValueError:
            metadata[key] = text
        except RecursionError:
            raise _Usage(f"--metadata {key}: the JSON value nests too deeply") from None
    return metadata


def _limit(text: str) -> int:
    if not (text.isascii() and text.isdecimal()) or not 1 <= int(text) <= 10_000:
        raise _Usage(f"--limit takes a whole number from 1 to 10000, got {text!r}")
    return int(text)


def _opener(
    url: str | None, prefix: str, schema: str
) -> Callable[[], AbstractContextManager[Any]]:
    """How to open the store ``url`` names (checked now, opened later)."""
    if url is None:
        raise _Usage("--store URL is required (redis://... or postgresql://...)")
    if not url.startswith(_SCHEMES):
        raise _Usage(f"--store takes a redis:// or postgresql:// URL, got {url[:60]!r}")
    if url.startswith("postgres"):

        @contextmanager
        def postgres() -> Iterator[Any]:
            from ..integrations.postgres import PostgresRunStore

            with PostgresRunStore(url, schema=schema) as store:
                yield store

        return postgres

    @contextmanager
    def redis_store() -> Iterator[Any]:
        import redis

        from ..integrations.redis import RedisRunStore

        # A connect timeout: an address that drops packets fails in seconds.
        client = redis.Redis.from_url(url, socket_connect_timeout=_CONNECT_TIMEOUT)
        try:
            yield RedisRunStore(client, prefix=prefix)
        except redis.ConnectionError as error:
            where = client.connection_pool.connection_kwargs
            place = where.get("path") or f"{where.get('host')}:{where.get('port')}"
            raise ConnectionError(
                f"cannot connect to Redis at {place} ({error}); check the URL's host "
                f"and port, and that the server runs and accepts connections from "
                f"here"
            ) from None
        finally:
            client.close()

    return redis_store


def _line(row: PendingRun) -> str:
    names = ", ".join(escaped(call.name) for call in row.calls)
    when = row.saved_at.isoformat(timespec="seconds")
    meta = f"  {short_json(dict(row.metadata), 120)}" if row.metadata else ""
    return f"{row.run_id}  {when}  {len(row.calls)} call(s): {names}{meta}"


def _show(row: PendingRun, out: TextIO) -> None:
    print(f"run {row.run_id}", file=out)
    print(f"  saved    {row.saved_at.isoformat(timespec='seconds')}", file=out)
    if row.expires_at is not None:
        print(f"  expires  {row.expires_at.isoformat(timespec='seconds')}", file=out)
    if row.metadata:
        print(f"  metadata {short_json(dict(row.metadata), 200)}", file=out)
    for call in row.calls:
        arguments = short_json(dict(call.arguments), 200)
        print(f"  {escaped(call.call_id)}  {escaped(call.name)} {arguments}", file=out)
