"""Who may watch and approve: ``authorize=``, ``owner_only``, the Origin and Host
checks, and ``TokenAuth``, over HTTP against the app served on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from langhooks.integrations._web_auth import Guard, TokenAuth
from langhooks.integrations.web import Action, create_app, owner_only

from ._web_harness import agent_of, serving, weather_turns

APPROVE = {"decisions": [{"tool_call_id": "call_1", "decision": "approve"}]}
RIGHT = {"Authorization": "Bearer right"}
WRONG = {"Authorization": "Bearer wrong"}

# Every route of the app and the action it asks for. A route added to the app and
# not here fails test_every_route_is_listed; one that skips the check fails the
# matrix.
ACTIONS: dict[tuple[str, str], Action] = {
    ("GET", "/"): "read",
    ("GET", "/favicon.ico"): "read",
    ("GET", "/static/{name:str}"): "read",
    ("GET", "/runs"): "read",
    ("POST", "/runs"): "start",
    ("GET", "/runs/{run_id:str}/events"): "read",
    ("POST", "/runs/{run_id:str}/decisions"): "decide",
}


class Bearer:
    """The guide's bearer-token ``authorize``, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []

    def __call__(self, request: Request, action: Action, run_id: str | None) -> bool:
        self.asked.append((action, run_id))
        header = request.headers.get("authorization")
        if header is None:
            raise HTTPException(
                401, "send a bearer token", {"WWW-Authenticate": "Bearer"}
            )
        return header == "Bearer right"


def routes() -> list[tuple[str, str]]:
    """(method, path) of every route of the app, read from the Starlette object."""
    app = create_app(agent=agent_of(weather_turns()))
    found = []
    for route in app.routes:
        assert isinstance(route, Route)
        for method in sorted(route.methods or ()):
            if method != "HEAD":
                found.append((method, route.path))
    return found


@pytest.fixture(scope="module")
def guarded() -> Iterator[tuple[str, Bearer, str]]:
    """The app behind ``Bearer``, with one run waiting for a decision."""
    bearer = Bearer()
    app = create_app(agent=agent_of(weather_turns()), authorize=bearer, heartbeat=0.05)
    with serving(app) as base:
        started = httpx.post(f"{base}runs", json={"prompt": "hi"}, headers=RIGHT)
        run_id = started.json()["run_id"]
        for _ in range(3000):
            runs = httpx.get(f"{base}runs", headers=RIGHT).json()["runs"]
            if runs[0]["state"] == "interrupted":
                break
            threading.Event().wait(0.01)
        yield base, bearer, run_id


def hit(base: str, method: str, path: str, run_id: str, headers: dict[str, str]) -> int:
    """The status of one request to ``path`` (its parameters filled in)."""
    url = base + path.replace("{run_id:str}", run_id).replace(
        "{name:str}", "app.js"
    ).lstrip("/")
    body = {"prompt": "hi"} if path == "/runs" else APPROVE
    with httpx.stream(
        method,
        url,
        headers=headers,
        json=body if method == "POST" else None,
        timeout=30,
    ) as answer:
        return answer.status_code


class TestEveryRoute:
    def test_every_route_is_listed(self) -> None:
        """The matrix below covers every route the app has."""
        assert sorted(routes()) == sorted(ACTIONS)

    @pytest.mark.parametrize(("method", "path"), routes())
    def test_without_credentials_is_401(
        self, guarded: tuple[str, Bearer, str], method: str, path: str
    ) -> None:
        """No credentials: 401 from authorize, whatever the route."""
        base, bearer, run_id = guarded
        bearer.asked.clear()
        assert hit(base, method, path, run_id, {}) == 401
        expected_run = run_id if "{run_id" in path else None
        assert bearer.asked == [(ACTIONS[method, path], expected_run)]

    @pytest.mark.parametrize(("method", "path"), routes())
    def test_wrong_credentials_are_403(
        self, guarded: tuple[str, Bearer, str], method: str, path: str
    ) -> None:
        """Credentials authorize refuses: 403, whatever the route."""
        base, bearer, run_id = guarded
        bearer.asked.clear()
        assert hit(base, method, path, run_id, WRONG) == 403
        assert [action for action, _ in bearer.asked] == [ACTIONS[method, path]]

    @pytest.mark.parametrize(("method", "path"), routes())
    def test_right_credentials_get_through(
        self, guarded: tuple[str, Bearer, str], method: str, path: str
    ) -> None:
        """Credentials authorize accepts: the route answers."""
        base, bearer, run_id = guarded
        bearer.asked.clear()
        assert hit(base, method, path, run_id, RIGHT) < 400
        assert bearer.asked[0][0] == ACTIONS[method, path]

    def test_a_refusal_says_nothing_about_the_run(
        self, guarded: tuple[str, Bearer, str]
    ) -> None:
        """A run that exists and one that does not are refused alike."""
        base, _, run_id = guarded
        for run in (run_id, "0" * 32):
            answer = httpx.get(f"{base}runs/{run}/events", headers=WRONG)
            assert answer.status_code == 403
            assert answer.json() == {"error": "not allowed"}

    def test_an_async_authorize_is_awaited(self) -> None:
        """authorize may be a coroutine function."""

        async def authorize(
            request: Request, action: Action, run_id: str | None
        ) -> bool:
            await asyncio.sleep(0)
            return action == "read"

        with serving(
            create_app(agent=agent_of(weather_turns()), authorize=authorize)
        ) as base:
            assert httpx.get(f"{base}runs").status_code == 200
            assert httpx.post(f"{base}runs", json={"prompt": "hi"}).status_code == 403

    def test_a_run_authorize_refuses_by_raising_is_left_out_of_the_list(
        self,
    ) -> None:
        """The list shows only the runs authorize lets the caller read, whether it
        says no or raises."""
        hidden: set[str] = set()

        def authorize(request: Request, action: Action, run_id: str | None) -> bool:
            if run_id in hidden:
                raise HTTPException(404)
            return True

        app = create_app(agent=agent_of(weather_turns()), authorize=authorize)
        with serving(app) as base:
            first = httpx.post(f"{base}runs", json={"prompt": "a"}).json()["run_id"]
            second = httpx.post(f"{base}runs", json={"prompt": "b"}).json()["run_id"]
            hidden.add(first)
            listed = httpx.get(f"{base}runs").json()["runs"]
        assert [run["run_id"] for run in listed] == [second]

    def test_an_authorize_that_answers_no_bool_is_a_server_error(self) -> None:
        """authorize must answer True or False; anything else is a bug, not a yes."""
        app = create_app(authorize=lambda request, action, run_id: "yes")  # type: ignore[arg-type, return-value]
        with serving(app) as base:
            assert httpx.get(f"{base}runs").status_code == 500

    def test_authorize_must_be_callable(self) -> None:
        """A value that is not a function is refused at once."""
        with pytest.raises(TypeError, match="authorize must be a function"):
            create_app(authorize="admin")  # type: ignore[arg-type]

    def test_a_guard_needs_an_owner_lookup(self) -> None:
        """Guard's owner_of is a function."""
        with pytest.raises(TypeError, match="owner_of must be a function"):
            Guard(None, "owners")  # type: ignore[arg-type]


def user_of(request: Request) -> str | None:
    """The test's stand-in for a session: the user a header names."""
    return request.headers.get("x-user")


def as_user(name: str) -> dict[str, str]:
    return {"X-User": name}


class TestOwnerOnly:
    @pytest.fixture
    def base(self) -> Iterator[str]:
        app = create_app(
            agent=agent_of(weather_turns()),
            authorize=owner_only(user_of),
            heartbeat=0.05,
        )
        with serving(app) as url:
            yield url

    def test_each_user_sees_and_decides_only_their_runs(self, base: str) -> None:
        """Alice's run is listed, streamed and decided for Alice only."""
        alice, bob = as_user("alice"), as_user("bob")
        started = httpx.post(f"{base}runs", json={"prompt": "hi"}, headers=alice)
        assert started.status_code == 201
        run_id = started.json()["run_id"]
        bobs = httpx.post(f"{base}runs", json={"prompt": "yo"}, headers=bob)
        listed = httpx.get(f"{base}runs", headers=alice).json()["runs"]
        assert [run["run_id"] for run in listed] == [run_id]
        assert "owner" not in listed[0]
        bob_listed = httpx.get(f"{base}runs", headers=bob).json()["runs"]
        assert [run["run_id"] for run in bob_listed] == [bobs.json()["run_id"]]
        events = f"{base}runs/{run_id}/events"
        assert httpx.get(events, headers=bob).status_code == 403
        decisions = f"{base}runs/{run_id}/decisions"
        assert httpx.post(decisions, json=APPROVE, headers=bob).status_code == 403
        for _ in range(3000):
            runs = httpx.get(f"{base}runs", headers=alice).json()["runs"]
            if runs[0]["state"] == "interrupted":
                break
            threading.Event().wait(0.01)
        assert httpx.post(decisions, json=APPROVE, headers=alice).status_code == 202
        with httpx.stream("GET", events, headers=alice, timeout=30) as answer:
            assert answer.status_code == 200

    def test_no_user_is_401(self, base: str) -> None:
        """A request without a user is asked to sign in."""
        assert httpx.get(f"{base}runs").status_code == 401
        assert httpx.get(base).status_code == 401

    def test_a_run_no_one_started_is_refused_like_anothers(self, base: str) -> None:
        """An unknown run is 403, as another user's is: no way to probe run ids."""
        answer = httpx.get(f"{base}runs/{'0' * 32}/events", headers=as_user("alice"))
        assert answer.status_code == 403

    def test_an_async_get_user_is_awaited(self) -> None:
        """get_user may be a coroutine function."""

        async def user(request: Request) -> str | None:
            return request.headers.get("x-user")

        app = create_app(authorize=owner_only(user))
        with serving(app) as url:
            assert httpx.get(f"{url}runs", headers=as_user("a")).status_code == 200
            assert httpx.get(f"{url}runs").status_code == 401

    def test_a_user_that_is_not_a_str_is_a_server_error(self) -> None:
        """get_user must answer a str or None."""
        app = create_app(authorize=owner_only(lambda request: 7))  # type: ignore[arg-type, return-value]
        with serving(app) as url:
            assert httpx.get(f"{url}runs").status_code == 500

    def test_get_user_must_be_callable(self) -> None:
        """owner_only takes a function."""
        with pytest.raises(TypeError, match="get_user must be a function"):
            owner_only("alice")  # type: ignore[arg-type]


class TestOrigin:
    @pytest.fixture
    def base(self) -> Iterator[tuple[str, Bearer]]:
        bearer = Bearer()
        app = create_app(agent=agent_of(weather_turns()), authorize=bearer)
        with serving(app) as url:
            yield url, bearer

    @pytest.mark.parametrize(
        "origin", ["http://evil.example", "null", "http://127.0.0.1:1", "http://[::1"]
    )
    def test_a_post_from_another_origin_is_403_before_authorize(
        self, base: tuple[str, Bearer], origin: str
    ) -> None:
        """A cross-origin POST is refused and authorize is never asked."""
        url, bearer = base
        headers = {**RIGHT, "Origin": origin}
        answer = httpx.post(f"{url}runs", json={"prompt": "hi"}, headers=headers)
        assert answer.status_code == 403
        assert "another site" in answer.json()["error"]
        answer = httpx.post(
            f"{url}runs/{'0' * 32}/decisions", json=APPROVE, headers=headers
        )
        assert answer.status_code == 403
        assert bearer.asked == []

    @pytest.mark.parametrize("scheme", ["http", "https"])
    def test_a_post_from_the_apps_own_origin_goes_on(
        self, base: tuple[str, Bearer], scheme: str
    ) -> None:
        """The page's own POSTs (https too, behind a proxy that ends TLS) pass."""
        url, _ = base
        origin = f"{scheme}://{url.split('/')[2]}"
        headers = {**RIGHT, "Origin": origin}
        answer = httpx.post(f"{url}runs", json={"prompt": "hi"}, headers=headers)
        assert answer.status_code == 201

    def test_a_read_from_another_origin_is_left_to_authorize(
        self, base: tuple[str, Bearer]
    ) -> None:
        """A GET changes nothing; the browser keeps its answer from the other site."""
        url, _ = base
        headers = {**RIGHT, "Origin": "http://evil.example"}
        assert httpx.get(f"{url}runs", headers=headers).status_code == 200


class TestHostWithoutAuthorize:
    def test_a_request_without_a_host_is_served(self) -> None:
        """An HTTP/1.0 request names no host: not a browser, so not a rebinding."""
        with serving(create_app()) as url:
            host, port = url.split("/")[2].split(":")
            with socket.create_connection((host, int(port))) as connection:
                connection.sendall(b"GET /runs HTTP/1.0\r\n\r\n")
                answer = b""
                while chunk := connection.recv(65536):
                    answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer[:100]

    @pytest.mark.parametrize(
        "host", ["localhost:8000", "app.localhost", "[::1]:80", "10.1.2.3", "127.0.0.1"]
    )
    def test_local_names_and_addresses_are_served(self, host: str) -> None:
        """Without authorize, a request naming localhost or an IP address is served."""
        with serving(create_app()) as url:
            assert httpx.get(f"{url}runs", headers={"Host": host}).status_code == 200

    def test_a_name_is_refused(self) -> None:
        """Without authorize, a DNS name (a rebinding page's) gets 400."""
        with serving(create_app()) as url:
            answer = httpx.get(f"{url}runs", headers={"Host": "evil.example:8000"})
        assert answer.status_code == 400
        assert "give it an authorize=" in answer.json()["error"]

    def test_with_authorize_any_name_is_left_to_it(self) -> None:
        """With authorize, the app may be served under any name."""
        app = create_app(authorize=lambda request, action, run_id: True)
        with serving(app) as url:
            answer = httpx.get(f"{url}runs", headers={"Host": "runs.example.com"})
        assert answer.status_code == 200


class TestTokenAuth:
    @pytest.fixture
    def base(self) -> Iterator[str]:
        auth = TokenAuth("s3cret-token", cookie="test_cookie")
        app = create_app(agent=agent_of(weather_turns()), authorize=auth)
        with serving(auth.wrap(app)) as url:
            yield url

    def test_a_tokenized_visit_sets_a_cookie_that_lets_the_page_work(
        self, base: str
    ) -> None:
        """?token= sets an HttpOnly, SameSite=Strict cookie; later requests (the
        page's fetch and EventSource) need nothing else."""
        with httpx.Client(base_url=base) as browser:
            page = browser.get("/?token=s3cret-token")
            assert page.status_code == 200
            cookie = page.headers["set-cookie"]
            assert cookie.startswith("test_cookie=s3cret-token;")
            assert "HttpOnly" in cookie
            assert "SameSite=Strict" in cookie
            started = browser.post("runs", json={"prompt": "hi"})
            assert started.status_code == 201
            run_id = started.json()["run_id"]
            wait = f"runs/{run_id}/events"
            with browser.stream("GET", wait, timeout=30) as answer:
                assert answer.status_code == 200

    @pytest.mark.parametrize(
        "headers",
        [
            {},
            {"Authorization": "Bearer nope"},
            {"Authorization": "Basic s3cret-token"},
            {"Cookie": "test_cookie=nope"},
        ],
    )
    def test_without_the_token_every_path_is_401(
        self, base: str, headers: dict[str, str]
    ) -> None:
        """No token, a wrong one, or another scheme: 401, also for unknown paths."""
        for path in ("", "runs", "static/app.js", "nowhere"):
            answer = httpx.get(f"{base}{path}", headers=headers)
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{base}?token=nope").status_code == 401

    @pytest.mark.parametrize(("method", "path"), routes())
    def test_every_route_needs_the_token(
        self, base: str, method: str, path: str
    ) -> None:
        """Every route of the app, listed from it: 401 without the token or with a
        wrong one, through with the right one."""
        run_id = "0" * 32
        assert hit(base, method, path, run_id, {}) == 401
        assert hit(base, method, path, run_id, {"Authorization": "Bearer x"}) == 401
        right = {"Authorization": "Bearer s3cret-token"}
        assert hit(base, method, path, run_id, right) not in (401, 403)

    def test_a_bearer_token_is_accepted(self, base: str) -> None:
        """Authorization: Bearer TOKEN works without a cookie."""
        headers = {"Authorization": "Bearer s3cret-token"}
        assert httpx.get(f"{base}runs", headers=headers).status_code == 200
        assert httpx.get(f"{base}nowhere", headers=headers).status_code == 404

    def test_as_authorize_alone_it_asks_for_the_token(self) -> None:
        """Without the middleware, TokenAuth as authorize still answers 401."""
        auth = TokenAuth("t")
        with serving(create_app(authorize=auth)) as url:
            assert httpx.get(f"{url}runs").status_code == 401
            assert httpx.get(f"{url}runs?token=t").status_code == 200

    def test_a_websocket_without_the_token_is_closed(self) -> None:
        """A websocket is held to the token too."""
        auth = TokenAuth("t")
        with (
            TestClient(auth.wrap(create_app())) as client,
            pytest.raises(WebSocketDisconnect) as closed,
        ):
            client.websocket_connect("/", headers={"host": "127.0.0.1"}).__enter__()
        assert closed.value.code == 1008

    def test_a_websocket_with_the_token_reaches_the_app(self) -> None:
        """With the token, the app decides (it has no websocket route: closed)."""
        auth = TokenAuth("t")
        with (
            TestClient(auth.wrap(create_app())) as client,
            pytest.raises(WebSocketDisconnect) as closed,
        ):
            client.websocket_connect("/?token=t").__enter__()
        assert closed.value.code == 1000

    def test_its_repr_never_shows_the_token(self) -> None:
        """The token stays out of logs and tracebacks."""
        assert "secret" not in repr(TokenAuth("secret", cookie="c"))

    @pytest.mark.parametrize(
        ("token", "cookie"), [("", "c"), ("a b", "c"), ("t", "a;b"), (3, "c")]
    )
    def test_takes_only_url_safe_tokens(self, token: Any, cookie: str) -> None:
        """A token and a cookie name go into URLs and headers unescaped."""
        with pytest.raises(TypeError, match="must be a non-empty str"):
            TokenAuth(token, cookie=cookie)
