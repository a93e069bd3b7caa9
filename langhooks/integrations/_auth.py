"""Who may watch and approve: the checks every route of a langhooks web app makes.

Three pieces, each usable by any Starlette app in a line or two:

- ``Guard``: the check every route calls before doing anything. It refuses a
  cross-origin POST (403) before anything else is asked, then asks the app's
  ``authorize`` (a refusal is 401/403 with nothing about the run). An app given no
  ``authorize`` answers only to requests that name it by ``localhost`` or an IP
  address, which a DNS-rebinding page cannot do.
- ``owner_only(get_user)``: an ``Authorize`` that lets each user see and decide only
  the runs they started.
- ``TokenAuth``: a Jupyter-style token (what ``langhooks serve`` uses): an
  ``Authorize`` and an ASGI middleware that requires the token on every request and
  turns a tokenized visit into a cookie, so the page and its event streams keep
  working through reconnects.

Wiring another app (``owner_of(run_id)`` answers who started a run, from what the
app keeps about it; ``started_by(request)`` is who to record when a run starts)::

    guard = Guard(authorize, owner_of)
    Route("/runs/{run_id}", guard.route(endpoint, "decide"), methods=["POST"])
    # or, inside an endpoint whose run id is in the body:
    refusal = await guard.check(request, "decide", run_id)
    if refusal is not None:
        return refusal
"""

from __future__ import annotations

import functools
import hmac
import inspect
import ipaddress
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, TypeAlias, final
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketClose
from typing_extensions import override

__all__ = [
    "Action",
    "Authorize",
    "Endpoint",
    "Guard",
    "OwnerOf",
    "TokenAuth",
    "check_authorize",
    "metadata_owner",
    "owner_metadata",
    "owner_only",
    "run_owner",
    "started_by",
]

Action: TypeAlias = Literal["read", "start", "decide"]
"""What a request asks: watch runs (``"read"``), start one, or decide for one."""

Authorize: TypeAlias = Callable[
    [Request, Action, "str | None"], "bool | Awaitable[bool]"
]
"""Whether ``request`` may do ``action`` on the run ``run_id`` (None: no one run:
the page, the list of runs, starting a run). Sync or async; it may also raise
``starlette.exceptions.HTTPException`` (401 to ask for credentials)."""

OwnerOf: TypeAlias = Callable[[str], Awaitable["str | None"]]
"""The identity that started a run (None: unknown run, or started by no one known)."""

Endpoint: TypeAlias = Callable[[Request], Awaitable[Response]]

# The run store metadata key of the identity that started a run.
_OWNER_KEY: Final = "owner"
# Keys of the ASGI scope: who ``authorize`` found, and how to find the run's owner.
_USER: Final = "langhooks.user"
_OWNER: Final = "langhooks.owner"
# What a token and a cookie name may hold: URL-safe without escaping.
_TOKEN: Final = re.compile(r"[A-Za-z0-9._~-]+")
# Methods that change something: a browser sends Origin with each of them.
_SAFE: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_ASK_TOKEN: Final = (
    "this server needs its token: open the URL it printed, or send "
    "Authorization: Bearer TOKEN"
)
_BEARER: Final = {"WWW-Authenticate": "Bearer"}


def _refusal(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _host_name(host: str) -> str:
    """The name or address of a Host header, without its port or brackets."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host if host.count(":") > 1 else host.partition(":")[0]


def _rebinding_proof(host: str | None) -> bool:
    """Whether a request naming ``host`` cannot come from a DNS-rebinding page:
    ``localhost`` (and its subdomains) or an IP address, never a name someone else
    can point at this machine. No Host at all is not a browser."""
    if host is None:
        return True
    name = _host_name(host.lower()).rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _netloc(value: str, scheme: str) -> str:
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    value = value.lower()
    return value.removesuffix(default) if default else value


def _same_origin(connection: HTTPConnection) -> bool:
    """Whether a request's ``Origin`` (when it sends one) is the app's own: the
    host and port it was sent to. The scheme is not compared: behind a proxy that
    ends TLS the app sees http for an https page of the same host."""
    origin = connection.headers.get("origin")
    if origin is None:
        return True  # not sent by a browser's cross-site fetch or form
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    host = connection.headers.get("host") or connection.url.netloc
    return bool(parts.netloc) and _netloc(parts.netloc, parts.scheme) in {
        _netloc(host, "http"),
        _netloc(host, "https"),
    }


async def run_owner(request: Request) -> str | None:
    """Who started the run ``authorize`` is asked about (for an ``Authorize`` of
    one's own); None when the request names no run, or no one is known."""
    find: Callable[[], Awaitable[str | None]] | None = request.scope.get(_OWNER)
    return None if find is None else await find()


def started_by(request: Request) -> str | None:
    """The identity ``owner_only`` found for a request: the owner a run started by
    this request is recorded with."""
    user: str | None = request.scope.get(_USER)
    return user


def owner_metadata(owner: str | None) -> dict[str, str]:
    """What a run store's ``metadata`` holds about who started a run: ``{"owner":
    owner}``, or nothing when no one is known (``store.pending(metadata={"owner":
    "alice"})`` is then Alice's inbox)."""
    return {} if owner is None else {_OWNER_KEY: owner}


def metadata_owner(metadata: Mapping[str, Any]) -> str | None:
    """The owner ``owner_metadata`` put in a run's metadata, or None."""
    owner = metadata.get(_OWNER_KEY)
    return owner if isinstance(owner, str) else None


def check_authorize(authorize: object) -> Authorize | None:
    """``authorize`` when it is None or callable.

    Raises:
        TypeError: it is neither.
    """
    if authorize is not None and not callable(authorize):
        raise TypeError(
            "authorize must be a function (request, action, run_id) -> bool, "
            f"got {authorize!r}"
        )
    return authorize


def owner_only(
    get_user: Callable[[Request], str | Awaitable[str | None] | None],
) -> Authorize:
    """An ``Authorize`` that lets each user see and decide only the runs they started.

    Args:
        get_user: the identity of a request's user (from a session, a verified
            token...), or None when it has none; sync or async.

    Returns:
        The ``Authorize``: a request without a user is refused with 401; a user may
        load the page, list runs (the list shows only their own) and start runs;
        reading or deciding a run is allowed only to the identity that started it.

    Raises:
        TypeError: ``get_user`` is not callable.
    """
    if not callable(get_user):
        raise TypeError(
            f"get_user must be a function from a request to a user id, got {get_user!r}"
        )

    async def authorize(request: Request, action: Action, run_id: str | None) -> bool:
        user = get_user(request)
        if inspect.isawaitable(user):
            user = await user
        if user is None:
            raise HTTPException(401, "sign in to see runs")
        if not isinstance(user, str):
            raise TypeError(f"get_user must return a str or None, got {user!r}")
        request.scope[_USER] = user
        return run_id is None or await run_owner(request) == user

    return authorize


@final
class Guard:
    """The check every route of an app calls before doing anything.

    Args:
        authorize: asked for every request once the Origin check passed; None lets
            every request through, but only when it names the app by ``localhost``
            or an IP address.
        owner_of: the identity that started a run (what ``owner_only`` compares).

    Raises:
        TypeError: ``authorize`` or ``owner_of`` is not callable.
    """

    def __init__(self, authorize: Authorize | None, owner_of: OwnerOf) -> None:
        check_authorize(authorize)
        if not callable(owner_of):
            raise TypeError(f"owner_of must be a function, got {owner_of!r}")
        self._authorize = authorize
        self._owner_of = owner_of

    async def check(
        self, request: Request, action: Action, run_id: str | None
    ) -> Response | None:
        """None when ``request`` may do ``action`` on run ``run_id``; otherwise the
        answer that refuses it (400 for a foreign Host without ``authorize``, 403 for
        a cross-origin POST, 401/403 when ``authorize`` says no)."""
        host = request.headers.get("host")
        if self._authorize is None and not _rebinding_proof(host):
            return _refusal(
                400,
                "this app answers only to localhost or an IP address: give "
                "it an authorize= to serve it under a name",
            )
        if request.method not in _SAFE and not _same_origin(request):
            return _refusal(403, "a request from another site is refused")
        owner_of = self._owner_of

        async def find() -> str | None:
            return None if run_id is None else await owner_of(run_id)

        request.scope[_OWNER] = find
        try:
            allowed = await self._ask(request, action, run_id)
        except HTTPException as refused:
            return _refusal(refused.status_code, refused.detail, refused.headers)
        return None if allowed else _refusal(403, "not allowed")

    async def allows(
        self, request: Request, action: Action, run_id: str, owner: str | None
    ) -> bool:
        """Whether ``request`` may do ``action`` on a run whose owner is known (to
        keep a list to the runs the caller may read); a refusal is False."""

        async def find() -> str | None:
            return owner

        request.scope[_OWNER] = find
        try:
            return await self._ask(request, action, run_id)
        except HTTPException:
            return False

    async def _ask(self, request: Request, action: Action, run_id: str | None) -> bool:
        if self._authorize is None:
            return True
        answer = self._authorize(request, action, run_id)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, bool):
            raise TypeError(f"authorize must return a bool, got {answer!r}")
        return answer

    def route(self, endpoint: Endpoint, action: Action) -> Endpoint:
        """``endpoint`` behind the check, the run being the path's ``run_id``."""

        @functools.wraps(endpoint)
        async def guarded(request: Request) -> Response:
            run_id = request.path_params.get("run_id")
            refusal = await self.check(request, action, run_id)
            return await endpoint(request) if refusal is None else refusal

        return guarded


@final
class TokenAuth:
    """A secret token every request must carry, as Jupyter does it.

    A request carries it as ``?token=TOKEN``, as ``Authorization: Bearer TOKEN``, or
    as the cookie the first tokenized visit sets (HttpOnly, SameSite=Strict), which
    the page's ``fetch`` and ``EventSource`` send on their own. Compared in
    constant time; never logged.

    Use it as an ``Authorize`` (``create_app(authorize=auth)``) and wrap the app so
    that every request, whatever its path, needs the token and tokenized visits set
    the cookie: ``asgi = auth.wrap(app)``.

    Args:
        token: the secret (at least 1 character; a random one is
            ``secrets.token_urlsafe(32)``).
        cookie: the cookie's name (make it unique per port: cookies are shared by
            every port of a host).

    Raises:
        TypeError: ``token`` or ``cookie`` is not a non-empty str of URL-safe
            characters.
    """

    def __init__(self, token: str, *, cookie: str = "langhooks_token") -> None:
        given: tuple[tuple[str, object], ...] = (("token", token), ("cookie", cookie))
        for name, value in given:
            if not isinstance(value, str) or _TOKEN.fullmatch(value) is None:
                raise TypeError(
                    f"{name} must be a non-empty str of letters, digits, '-', '_', "
                    "'.' and '~' (it goes into URLs and a cookie)"
                )
        self._token = token.encode()
        self._cookie = cookie

    @override
    def __repr__(self) -> str:
        return f"TokenAuth(cookie={self._cookie!r})"  # never the token

    def _matches(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(
            candidate.encode(errors="surrogatepass"), self._token
        )

    def presented(self, connection: HTTPConnection) -> bool:
        """Whether the request carries the token (query, bearer header or cookie)."""
        header = connection.headers.get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        return (
            (scheme.lower() == "bearer" and self._matches(credentials.strip()))
            or self._matches(connection.cookies.get(self._cookie))
            or self._matches(connection.query_params.get("token"))
        )

    def __call__(self, request: Request, action: Action, run_id: str | None) -> bool:
        """The ``Authorize``: True with the token, else a 401 asking for it."""
        if self.presented(request):
            return True
        raise HTTPException(401, _ASK_TOKEN, headers=_BEARER)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind the token: a request without it gets 401 (a websocket is
        closed), and a request with a right ``?token=`` sets the cookie."""
        cookie = (
            f"{self._cookie}={self._token.decode()}; HttpOnly; SameSite=Strict; Path=/"
        )

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] not in ("http", "websocket"):
                await app(scope, receive, send)
                return
            connection = HTTPConnection(scope)
            if not self.presented(connection):
                refusal: Any = (
                    WebSocketClose(code=1008)
                    if scope["type"] == "websocket"
                    else _refusal(401, _ASK_TOKEN, _BEARER)
                )
                await refusal(scope, receive, send)
                return
            if not self._matches(connection.query_params.get("token")):
                await app(scope, receive, send)
                return

            async def with_cookie(message: Message) -> None:
                if message["type"] == "http.response.start":
                    headers = [*message.get("headers", [])]
                    headers.append((b"set-cookie", cookie.encode()))
                    message = {**message, "headers": headers}
                await send(message)

            await app(scope, receive, with_cookie)

        return guarded
