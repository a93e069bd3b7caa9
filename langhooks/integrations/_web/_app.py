"""The web app behind ``langhooks.integrations.web``: a live page, Server-Sent Events
and human decisions over HTTP.

The app is a Starlette value the host mounts or serves; it owns no server. Each route
is a small method of ``_WebApp``; where runs live is a ``Backend``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from importlib import resources
from typing import TYPE_CHECKING, Any, Final, final

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from typing_extensions import override

from ..._core._messages import LangHooksError
from ..._persist._stores import RunStore, check_run_store
from ...chain import Decision, LLMChain
from .._auth import Authorize, Guard, started_by
from .._frontends._app import abandon_waiting
from ._backend import (
    Agent,
    Backend,
    DecisionMismatch,
    RunConflict,
    RunNotFound,
)
from ._limits import MAX_BODY_BYTES
from ._limits import BadRequest as _BadRequest
from ._limits import json_body as _json_body
from ._memory import MemoryBackend

if TYPE_CHECKING:
    import redis
    import redis.cluster

__all__ = ["MAX_BODY_BYTES", "MAX_PROMPT_CHARS", "Agent", "create_app"]

_log: Final = logging.getLogger("langhooks.integrations.web")

MAX_PROMPT_CHARS: Final = 8_000
# How long a browser waits before reconnecting a dropped event stream.
_RETRY_MS: Final = 1000

_STATIC: Final = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
# The page loads only what this app serves; nothing inline runs, even if it got in.
_PAGE_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; "
        "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _asset(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


class _JSONResponse(JSONResponse):
    """JSON in ASCII: any str (a lone surrogate too) is written as an escape, so no
    text a run or a store holds can make an answer fail to encode."""

    @override
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


def _error(status: int, message: str) -> JSONResponse:
    return _JSONResponse({"error": message}, status_code=status)


def _decision(item: object, position: int) -> tuple[str, Decision]:
    """One ``{"tool_call_id", "decision", "arguments"?, "reason"?}`` item.

    Raises:
        _BadRequest: 400, saying what is wrong with it.
    """
    where = f"decisions[{position}]"
    if not isinstance(item, dict):
        raise _BadRequest(400, f"{where} must be an object")
    call_id = item.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _BadRequest(400, f"{where}.tool_call_id must be a non-empty string")
    kind = item.get("decision")
    unknown = sorted(set(item) - {"tool_call_id", "decision", "arguments", "reason"})
    if unknown:
        raise _BadRequest(400, f"{where} has unknown keys: {', '.join(unknown)}")
    if kind == "approve" and set(item) <= {"tool_call_id", "decision"}:
        return call_id, Decision.approve()
    if (
        kind == "edit"
        and isinstance(item.get("arguments"), dict)
        and "reason" not in item
    ):
        return call_id, Decision.edit(item["arguments"])
    if kind == "reject" and "arguments" not in item:
        reason = item.get("reason", "The user rejected this tool call.")
        if isinstance(reason, str):
            return call_id, Decision.reject(reason)
        raise _BadRequest(400, f"{where}.reason must be a string")
    raise _BadRequest(
        400,
        f"{where} must be {{'decision': 'approve'}}, {{'decision': 'edit', "
        f"'arguments': {{...}}}} or {{'decision': 'reject', 'reason'?: '...'}}",
    )


def _decisions(body: object) -> list[tuple[str, Decision]]:
    """The decisions of a request body.

    Raises:
        _BadRequest: 400 for a malformed body.
    """
    if not isinstance(body, dict) or set(body) != {"decisions"}:
        raise _BadRequest(400, 'the body must be {"decisions": [...]}')
    items = body["decisions"]
    if not isinstance(items, list) or not items:
        raise _BadRequest(400, "decisions must be a non-empty list")
    return [_decision(item, position) for position, item in enumerate(items)]


@final
class _WebApp:
    """The routes, over one backend and an optional agent."""

    def __init__(
        self,
        backend: Backend,
        agent: Agent | None,
        *,
        heartbeat: float,
        guard: Guard,
    ) -> None:
        self._backend = backend
        self._guard = guard
        self._agent = agent
        self._heartbeat = heartbeat
        self._page = _asset("index.html")
        self._static = {name: _asset(name) for name in _STATIC}

    # --- the page ---------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        """GET /: the page."""
        return Response(self._page, media_type="text/html", headers=_PAGE_HEADERS)

    async def no_icon(self, request: Request) -> Response:
        """GET /favicon.ico: none (204), so browsers stop asking."""
        return Response(status_code=204)

    async def static(self, request: Request) -> Response:
        """GET /static/{name}: the page's script and style sheet."""
        name = request.path_params["name"]
        if name not in _STATIC:
            return _error(404, f"no static file {name!r}")
        return Response(
            self._static[name], media_type=_STATIC[name], headers=_PAGE_HEADERS
        )

    # --- runs -------------------------------------------------------------------

    async def list_runs(self, request: Request) -> Response:
        """GET /runs: every run the caller may read, newest first, and whether runs
        can be started."""
        allows = self._guard.allows
        runs = [
            attrs.asdict(summary, filter=lambda a, _: a.name != "owner")
            for summary in await self._backend.runs()
            if await allows(request, "read", summary.run_id, summary.owner)
        ]
        return _JSONResponse({"agent": self._agent is not None, "runs": runs})

    async def start_run(self, request: Request) -> Response:
        """POST /runs {"prompt": "..."}: start the agent on a prompt."""
        agent = self._agent
        if agent is None:
            return _error(405, "this app runs no agent: it only shows runs")
        try:
            body = await _json_body(request)
        except _BadRequest as bad:
            return _error(bad.status, bad.message)
        prompt = body.get("prompt") if isinstance(body, dict) else None
        if not isinstance(body, dict) or set(body) != {"prompt"}:
            return _error(400, 'the body must be {"prompt": "..."}')
        if not isinstance(prompt, str) or not prompt.strip():
            return _error(400, "prompt must be a non-empty string")
        if len(prompt) > MAX_PROMPT_CHARS:
            return _error(413, f"prompt is longer than {MAX_PROMPT_CHARS} characters")
        chain = agent(prompt)
        if not isinstance(chain, LLMChain):
            raise TypeError(f"the agent must return an LLMChain, got {chain!r}")
        try:
            # The prompt moves on past calls that wait for a human: they are
            # rejected, as the frontend apps do with a new message.
            chain = await abandon_waiting(chain)
        except LangHooksError as failed:
            _log.error("langhooks web: rejecting the waiting calls failed: %s", failed)
            return _error(
                500,
                f"a handler failed on rejecting the calls that wait ({failed.type}); "
                f"nothing was run",
            )
        run_id = await self._backend.start(chain, prompt, owner=started_by(request))
        return _JSONResponse({"run_id": run_id}, status_code=201)

    # --- events -----------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        """GET /runs/{run_id}/events: the run's records as Server-Sent Events."""
        run_id = request.path_params["run_id"]
        last = request.headers.get("last-event-id")
        try:
            await self._backend.summary(run_id)
            after = None if last is None else self._backend.check_id(last.strip())
        except RunNotFound:
            return _error(404, f"no run {run_id!r}")
        except ValueError as exc:
            return _error(400, f"Last-Event-ID: {exc}")
        if await self._backend.ended(run_id, after):
            # Nothing more will come; 204 also stops a browser's reconnecting.
            return Response(status_code=204)
        return StreamingResponse(
            self._stream(run_id, after),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, run_id: str, after: str | None) -> AsyncIterator[str]:
        yield f"retry: {_RETRY_MS}\n\n"
        while True:
            entries = await self._backend.read(run_id, after, self._heartbeat)
            if not entries:
                yield ": heartbeat\n\n"
                continue
            for entry in entries:
                if not entry.hidden:
                    # One write per event: a cut connection never splits one.
                    yield (
                        f"id: {entry.id}\nevent: {entry.event}\ndata: {entry.data}\n\n"
                    )
                if entry.ends:
                    return
            after = entries[-1].id

    # --- decisions --------------------------------------------------------------

    async def decide(self, request: Request) -> Response:
        """POST /runs/{run_id}/decisions: resume an interrupted run."""
        run_id = request.path_params["run_id"]
        try:
            decisions = _decisions(await _json_body(request))
        except _BadRequest as bad:
            return _error(bad.status, bad.message)
        try:
            await self._backend.resume(run_id, decisions, self._agent)
        except RunNotFound:
            return _error(404, f"no run {run_id!r}")
        except RunConflict as exc:
            return _error(409, str(exc))
        except DecisionMismatch as exc:
            return _error(422, str(exc))
        return _JSONResponse({"run_id": run_id, "state": "resuming"}, status_code=202)


def create_app(
    *,
    redis: redis.Redis | redis.cluster.RedisCluster | None = None,
    prefix: str = "langhooks:",
    shards: int | None = None,
    agent: Agent | None = None,
    heartbeat: float = 15.0,
    authorize: Authorize | None = None,
    store: RunStore | None = None,
) -> Starlette:
    """The ASGI app that shows runs live and takes human decisions.

    Args:
        redis: a synchronous ``redis.Redis`` or ``redis.cluster.RedisCluster``
            client: runs live in Redis (the streams of ``RedisEventPublisher``,
            the state of ``RedisRunStore``), so processes other than this one can
            run the agents; None keeps runs in this process.
        prefix: the key prefix of those streams and states.
        shards: the publishers' ``shards`` (None: their default for the client:
            1 on one node, 16 on a cluster).
        agent: builds the chain that answers a prompt (model, tools, handlers and
            the prompt as a user message); with it the app starts runs
            (``POST /runs``) and resumes interrupted ones.
        heartbeat: seconds between comment lines on an idle event stream, so that
            proxies keep the connection open.
        authorize: asked ``authorize(request, action, run_id)`` by every route
            before it does anything: "read" for the page, the list (run_id None;
            the list then shows only the runs it allows) and a run's events,
            "start" to start a run, "decide" to post decisions. False is 403, an
            ``HTTPException`` it raises is its answer. See ``owner_only``. None lets
            everyone in, but only under ``localhost`` or an IP address (a name
            could be a DNS-rebinding page's). Either way, a POST from another
            origin is refused (403) before ``authorize`` is asked.
        store: where interrupted runs wait for decisions (a ``RunStore``:
            ``PostgresRunStore``, ``RedisRunStore``, ``MemoryRunStore``, ...) and
            are resumed once, with ``agent``'s code; None keeps them in this
            process (or, with ``redis``, in a ``RedisRunStore`` on it).

    Returns:
        The app (a ``Starlette``), to serve with uvicorn or mount in another app.

    Raises:
        TypeError: ``agent`` or ``authorize`` is not callable, ``heartbeat`` is
            not a number, ``prefix`` is not a str, ``shards`` not an int >= 1, or
            ``redis`` is not a ``redis.Redis`` or ``redis.cluster.RedisCluster``.
        ImportError: ``redis`` is given without the redis extra installed.
        ValueError: ``heartbeat`` is not positive.
    """
    if agent is not None and not callable(agent):
        raise TypeError(
            f"agent must be a function from a prompt to an LLMChain, got {agent!r}"
        )
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, int | float):
        raise TypeError(f"heartbeat must be a number of seconds, got {heartbeat!r}")
    if not heartbeat > 0:
        raise ValueError(f"heartbeat must be positive, got {heartbeat!r}")
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a str, got {prefix!r}")
    backend: Backend
    if store is not None:
        check_run_store(store, "store")
    if redis is None:
        backend = MemoryBackend(store)
    else:
        from ._redis_source import RedisBackend  # needs the redis extra

        backend = RedisBackend(redis, prefix, shards, store)
    guard = Guard(authorize, backend.owner)
    web = _WebApp(backend, agent, heartbeat=float(heartbeat), guard=guard)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await backend.close()

    run = "/runs/{run_id:str}"
    # Every route asks the guard first (tests list the routes to check it).
    guarded = guard.route
    return Starlette(
        routes=[
            Route("/", guarded(web.page, "read")),
            Route("/favicon.ico", guarded(web.no_icon, "read")),
            Route("/static/{name:str}", guarded(web.static, "read")),
            Route("/runs", guarded(web.list_runs, "read"), methods=["GET"]),
            Route("/runs", guarded(web.start_run, "start"), methods=["POST"]),
            Route(f"{run}/events", guarded(web.events, "read")),
            Route(f"{run}/decisions", guarded(web.decide, "decide"), methods=["POST"]),
        ],
        lifespan=lifespan,
    )
