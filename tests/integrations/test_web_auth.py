"""Who may watch and approve: ``authorize=``, ``owner_only``, the Origin and Host
checks, and ``TokenAuth``, over HTTP against the apps served on 127.0.0.1.

The matrix covers the three apps (``create_app``, ``create_agui_app``,
``create_ui_message_app``): every route, listed from the Starlette object, without
credentials, with wrong ones and with right ones."""

from __future__ import annotations

import abc
import asyncio
import json
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import attrs
import httpx
import pytest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from typing_extensions import override

from langhooks import Message
from langhooks.chain import LLMChain
from langhooks.integrations._auth import Guard, TokenAuth
from langhooks.integrations._frontends._records import split_approval_id
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.integrations.web import Action, Authorize, create_app, owner_only
from langhooks.stores import MemoryRunStore, RunStore

from ._frontend_agent import WeatherAgent
from ._web_harness import agent_of, serving, weather_turns
from .test_agui_app import answers, approve, run_input
from .test_ui_message_app import USER, answered, assistant_of, chat, chunks

APPROVE = {"decisions": [{"tool_call_id": "call_1", "decision": "approve"}]}
RIGHT = {"Authorization": "Bearer right"}
WRONG = {"Authorization": "Bearer wrong"}
NO_RUN = "0" * 32


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


@attrs.frozen
class Waiting:
    """A run waiting for a decision: its id and the body that decides it."""

    run_id: str
    body: Any
    # What the body names the run by, when not its id (AG-UI: the runId the
    # client sent, which its interrupts' ids are made of).
    named: str | None = None

    def forged(self) -> Waiting:
        """The same request for a run that does not exist."""
        text = json.dumps(self.body).replace(self.named or self.run_id, NO_RUN)
        return Waiting(NO_RUN, json.loads(text))


@attrs.frozen
class Answer:
    """The status of an answer, and its JSON body when it is a refusal."""

    status: int
    refusal: Any = None


def send(
    method: str,
    url: str,
    headers: dict[str, str],
    body: Any = None,
    *,
    whole: bool = False,
) -> Answer:
    """One request; a streamed answer is read to its end only if ``whole`` (the
    frontends' streams end with their run; the web app's event stream of a
    waiting run does not)."""
    with httpx.stream(method, url, headers=headers, json=body, timeout=30) as answer:
        if answer.status_code < 400:
            if whole:
                answer.read()
            return Answer(answer.status_code)
        return Answer(answer.status_code, json.loads(answer.read()))


def fresh_agent(messages: Sequence[Message]) -> LLMChain:
    """The frontend apps' agent: each request a fresh scripted weather model."""
    return WeatherAgent()(messages)


class Subject(abc.ABC):
    """One langhooks app under the matrix: how to make it, what each of its routes
    asks ``authorize``, a run that waits, and how to send each kind of request."""

    name: str
    # (method, path) of every route, and the actions its requests ask. A route
    # added to the app and not here fails test_every_route_is_listed; one that
    # skips the check fails the matrix.
    asks: ClassVar[dict[tuple[str, str], tuple[Action, ...]]]

    @abc.abstractmethod
    def make(
        self, authorize: Authorize | None, store: RunStore | None = None
    ) -> Starlette:
        """The app behind ``authorize``."""
        ...

    @abc.abstractmethod
    def waiting(self, base: str, headers: dict[str, str]) -> Waiting:
        """Start a run with ``headers`` and wait until it waits for a decision."""
        ...

    @abc.abstractmethod
    def send(
        self,
        base: str,
        route: tuple[str, str],
        action: Action,
        run: Waiting,
        headers: dict[str, str],
    ) -> Answer:
        """A request to ``route`` asking ``action`` (on ``run``)."""
        ...

    @abc.abstractmethod
    def start(self, thread: str) -> Any:
        """The body of a first request on thread (chat) ``thread``."""
        ...

    def asked_run(
        self, route: tuple[str, str], action: Action, run: Waiting
    ) -> str | None:
        """The run id ``authorize`` is asked about."""
        return run.run_id if action == "decide" else None

    def routes(self) -> list[tuple[str, str]]:
        """(method, path) of every route of the app, read from the Starlette object."""
        found = []
        for route in self.make(None).routes:
            assert isinstance(route, Route)
            for method in sorted(route.methods or ()):
                if method != "HEAD":
                    found.append((method, route.path))
        return found


class WebApp(Subject):
    name = "create_app"
    asks: ClassVar[dict[tuple[str, str], tuple[Action, ...]]] = {
        ("GET", "/"): ("read",),
        ("GET", "/favicon.ico"): ("read",),
        ("GET", "/static/{name:str}"): ("read",),
        ("GET", "/runs"): ("read",),
        ("POST", "/runs"): ("start",),
        ("GET", "/runs/{run_id:str}/events"): ("read",),
        ("POST", "/runs/{run_id:str}/decisions"): ("decide",),
    }

    @override
    def make(
        self, authorize: Authorize | None, store: RunStore | None = None
    ) -> Starlette:
        agent = agent_of(weather_turns())
        return create_app(agent=agent, authorize=authorize, store=store, heartbeat=0.05)

    @override
    def start(self, thread: str) -> Any:
        return {"prompt": thread}

    @override
    def waiting(self, base: str, headers: dict[str, str]) -> Waiting:
        started = httpx.post(f"{base}runs", json=self.start("hi"), headers=headers)
        run_id = started.json()["run_id"]
        for _ in range(3000):
            runs = httpx.get(f"{base}runs", headers=headers).json()["runs"]
            if any(r["run_id"] == run_id and r["state"] == "interrupted" for r in runs):
                return Waiting(run_id, APPROVE)
            threading.Event().wait(0.01)
        raise AssertionError("the run never stopped for a decision")  # pragma: no cover

    @override
    def send(
        self,
        base: str,
        route: tuple[str, str],
        action: Action,
        run: Waiting,
        headers: dict[str, str],
    ) -> Answer:
        method, path = route
        url = base + path.replace("{run_id:str}", run.run_id).replace(
            "{name:str}", "app.js"
        ).lstrip("/")
        body = {"prompt": "hi"} if path == "/runs" else run.body
        return send(method, url, headers, body if method == "POST" else None)

    @override
    def asked_run(
        self, route: tuple[str, str], action: Action, run: Waiting
    ) -> str | None:
        return run.run_id if "{run_id" in route[1] else None


class AguiApp(Subject):
    name = "create_agui_app"
    asks: ClassVar[dict[tuple[str, str], tuple[Action, ...]]] = {
        ("POST", "/"): ("start", "decide"),
        ("GET", "/{thread_id}/messages"): ("read",),
        ("GET", "/{thread_id}/stream"): ("read",),
        ("POST", "/{thread_id}/cancel"): ("start",),
    }

    # The store of the app made last: a waiting run's langhooks id is read
    # from it (the interrupts' ids are made of the client's runId).
    store: RunStore = MemoryRunStore()

    @override
    def make(
        self, authorize: Authorize | None, store: RunStore | None = None
    ) -> Starlette:
        self.store = MemoryRunStore() if store is None else store
        return create_agui_app(agent=fresh_agent, authorize=authorize, store=self.store)

    @override
    def start(self, thread: str) -> Any:
        # A runId of its own, as the clients send.
        return run_input(thread=thread, run=uuid.uuid4().hex)

    @override
    def waiting(self, base: str, headers: dict[str, str]) -> Waiting:
        thread = uuid.uuid4().hex
        first = run_input(thread=thread, run=thread)
        out = answers(httpx.post(base, json=first, headers=headers))
        resume = approve(out[-1])
        assert resume[0]["interruptId"] == f"{thread}/call_1"
        (row,) = self.store.pending(metadata={"agui_thread": thread})
        body = run_input(thread=thread, run=uuid.uuid4().hex, resume=resume)
        return Waiting(row.run_id, body, named=thread)

    @override
    def send(
        self,
        base: str,
        route: tuple[str, str],
        action: Action,
        run: Waiting,
        headers: dict[str, str],
    ) -> Answer:
        if route[1] != "/":
            path = route[1].replace("{thread_id}", run.body["threadId"])
            return send(route[0], base + path.lstrip("/"), headers, None, whole=True)
        body = run.body if action == "decide" else self.start(uuid.uuid4().hex)
        return send("POST", base, headers, body, whole=True)


class UiMessageApp(Subject):
    name = "create_ui_message_app"
    asks: ClassVar[dict[tuple[str, str], tuple[Action, ...]]] = {
        ("POST", "/"): ("start", "decide"),
        ("GET", "/{chat_id}/messages"): ("read",),
        ("GET", "/{chat_id}/stream"): ("read",),
        ("POST", "/{chat_id}/cancel"): ("start",),
    }

    @override
    def make(
        self, authorize: Authorize | None, store: RunStore | None = None
    ) -> Starlette:
        return create_ui_message_app(
            agent=fresh_agent, authorize=authorize, store=store
        )

    @override
    def start(self, thread: str) -> Any:
        return chat([USER], thread)

    @override
    def waiting(self, base: str, headers: dict[str, str]) -> Waiting:
        chat_id = uuid.uuid4().hex
        out = chunks(httpx.post(base, json=self.start(chat_id), headers=headers))
        message = assistant_of(out)
        approval = next(
            p["approval"]["id"] for p in message["parts"] if "approval" in p
        )
        ids = split_approval_id(approval)
        assert ids is not None
        return Waiting(ids[0], chat([USER, answered(message)], chat_id))

    @override
    def send(
        self,
        base: str,
        route: tuple[str, str],
        action: Action,
        run: Waiting,
        headers: dict[str, str],
    ) -> Answer:
        if route[1] != "/":
            path = route[1].replace("{chat_id}", run.body["id"])
            return send(route[0], base + path.lstrip("/"), headers, None, whole=True)
        body = run.body if action == "decide" else self.start(uuid.uuid4().hex)
        return send("POST", base, headers, body, whole=True)


SUBJECTS: dict[str, Subject] = {
    subject.name: subject for subject in (WebApp(), AguiApp(), UiMessageApp())
}


def cases(methods: Sequence[str] = ("GET", "POST")) -> list[Any]:
    """Every request the matrix sends: (app, route, action), for every route
    listed from each app (a route missing from ``asks`` is sent as a read)."""
    return [
        pytest.param(name, route, action, id=f"{name}-{route[0]}-{route[1]}-{action}")
        for name, subject in SUBJECTS.items()
        for route in subject.routes()
        if route[0] in methods
        for action in subject.asks.get(route, ("read",))
    ]


CASES = cases()


@attrs.frozen
class Guarded:
    """An app served behind ``Bearer``, with one run waiting for a decision."""

    subject: Subject
    base: str
    bearer: Bearer
    run: Waiting


@pytest.fixture(scope="module")
def guarded(request: pytest.FixtureRequest) -> Iterator[Guarded]:
    """The app named by the test's parameter behind ``Bearer``, with a waiting run."""
    subject = SUBJECTS[request.param]
    bearer = Bearer()
    with serving(subject.make(bearer)) as base:
        yield Guarded(subject, base, bearer, subject.waiting(base, RIGHT))


class TestEveryRoute:
    @pytest.mark.parametrize("name", SUBJECTS)
    def test_every_route_is_listed(self, name: str) -> None:
        """The matrix covers every route each app has."""
        subject = SUBJECTS[name]
        assert sorted(subject.routes()) == sorted(subject.asks)

    @pytest.mark.parametrize(
        ("guarded", "route", "action"), CASES, indirect=["guarded"]
    )
    def test_without_credentials_is_401(
        self, guarded: Guarded, route: tuple[str, str], action: Action
    ) -> None:
        """No credentials: 401 from authorize, whatever the route."""
        subject, run = guarded.subject, guarded.run
        guarded.bearer.asked.clear()
        assert subject.send(guarded.base, route, action, run, {}).status == 401
        assert guarded.bearer.asked == [(action, subject.asked_run(route, action, run))]

    @pytest.mark.parametrize(
        ("guarded", "route", "action"), CASES, indirect=["guarded"]
    )
    def test_wrong_credentials_are_403(
        self, guarded: Guarded, route: tuple[str, str], action: Action
    ) -> None:
        """Credentials authorize refuses: 403, whatever the route."""
        subject, run = guarded.subject, guarded.run
        guarded.bearer.asked.clear()
        assert subject.send(guarded.base, route, action, run, WRONG).status == 403
        assert guarded.bearer.asked == [(action, subject.asked_run(route, action, run))]

    @pytest.mark.parametrize(
        ("guarded", "route", "action"), CASES, indirect=["guarded"]
    )
    def test_right_credentials_get_through(
        self, guarded: Guarded, route: tuple[str, str], action: Action
    ) -> None:
        """Credentials authorize accepts: the route answers (a decision on a run
        of its own that waits)."""
        subject = guarded.subject
        run = subject.waiting(guarded.base, RIGHT)
        guarded.bearer.asked.clear()
        assert subject.send(guarded.base, route, action, run, RIGHT).status < 400
        expected = (action, subject.asked_run(route, action, run))
        assert guarded.bearer.asked[0] == expected

    @pytest.mark.parametrize(
        ("guarded", "route", "action"), CASES, indirect=["guarded"]
    )
    def test_a_refusal_says_nothing_about_the_run(
        self, guarded: Guarded, route: tuple[str, str], action: Action
    ) -> None:
        """A run that exists and one that does not are refused alike, with nothing
        about either."""
        subject = guarded.subject
        for run in (guarded.run, guarded.run.forged()):
            answer = subject.send(guarded.base, route, action, run, WRONG)
            assert answer == Answer(403, {"error": "not allowed"})

    @pytest.mark.parametrize("name", SUBJECTS)
    def test_authorize_must_be_callable(self, name: str) -> None:
        """A value that is not a function is refused at once, by every app."""
        with pytest.raises(TypeError, match="authorize must be a function"):
            SUBJECTS[name].make("admin")  # type: ignore[arg-type]


class TestCreateAppAuthorize:
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


class TestOwnerOnlyOnEveryApp:
    @pytest.fixture(params=list(SUBJECTS))
    def served(
        self, request: pytest.FixtureRequest
    ) -> Iterator[tuple[Subject, str, MemoryRunStore]]:
        """Each app behind ``owner_only``, its runs in a store the test reads."""
        subject = SUBJECTS[request.param]
        store = MemoryRunStore()
        with serving(subject.make(owner_only(user_of), store)) as url:
            yield subject, url, store

    def test_only_the_user_who_started_a_run_decides_it(
        self, served: tuple[Subject, str, MemoryRunStore]
    ) -> None:
        """Bob is refused Alice's run (as a run that does not exist is); Alice
        decides it."""
        subject, base, _ = served
        alice, bob = as_user("alice"), as_user("bob")
        run = subject.waiting(base, alice)
        route = next(r for r, asks in subject.asks.items() if "decide" in asks)
        assert subject.send(base, route, "decide", run, bob).status == 403
        assert subject.send(base, route, "decide", run.forged(), alice).status == 403
        assert subject.send(base, route, "decide", run, {}).status == 401
        assert subject.send(base, route, "decide", run, alice).status < 400

    def test_the_owner_is_kept_in_the_stores_metadata(
        self, served: tuple[Subject, str, MemoryRunStore]
    ) -> None:
        """A waiting run's metadata names who started it: each user's inbox is
        ``pending(metadata={"owner": user})``."""
        subject, base, store = served
        alices = subject.waiting(base, as_user("alice"))
        bobs = subject.waiting(base, as_user("bob"))
        inbox = store.pending(metadata={"owner": "alice"})
        assert [row.run_id for row in inbox] == [alices.run_id]
        bob_inbox = store.pending(metadata={"owner": "bob"})
        assert [row.run_id for row in bob_inbox] == [bobs.run_id]


class TestOwnerOnlyOnTheFrontends:
    @pytest.mark.parametrize("name", ["create_agui_app", "create_ui_message_app"])
    def test_an_answer_repeated_after_the_run_went_on_is_403(self, name: str) -> None:
        """The owner is read from the waiting run: once answered, a repeat is
        refused like an unknown run's, and the tool ran once."""
        subject = SUBJECTS[name]
        agent = WeatherAgent()
        if name == "create_agui_app":
            assert isinstance(subject, AguiApp)
            subject.store = MemoryRunStore()
            app = create_agui_app(
                agent=agent, authorize=owner_only(user_of), store=subject.store
            )
        else:
            app = create_ui_message_app(agent=agent, authorize=owner_only(user_of))
        route = ("POST", "/")
        with serving(app) as base:
            run = subject.waiting(base, as_user("alice"))
            assert (
                subject.send(base, route, "decide", run, as_user("alice")).status == 200
            )
            again = subject.send(base, route, "decide", run, as_user("alice"))
        assert again == Answer(403, {"error": "not allowed"})
        assert agent.runs == [{"city": "Paris"}]

    @pytest.mark.parametrize("name", ["create_agui_app", "create_ui_message_app"])
    def test_a_thread_id_is_each_users_own(self, name: str) -> None:
        """Another user's run waiting on the same thread (chat) id is neither
        read, nor in the way, nor rejected by the user's new message."""
        subject = SUBJECTS[name]
        with serving(subject.make(owner_only(user_of))) as base:
            thread = uuid.uuid4().hex
            alices = send(
                "POST", base, as_user("alice"), subject.start(thread), whole=True
            )
            assert alices.status == 200
            bobs = send("POST", base, as_user("bob"), subject.start(thread), whole=True)
            assert bobs.status == 200
            read = f"{base}{thread}/messages"
            first = httpx.get(read, headers=as_user("alice")).json()
            bobs_run = httpx.get(read, headers=as_user("bob")).json()
            assert first != bobs_run
            again = send(
                "POST", base, as_user("alice"), subject.start(thread), whole=True
            )
            assert again.status == 200  # a new message: her waiting run rejected
            assert httpx.get(read, headers=as_user("alice")).json() != first
            assert httpx.get(read, headers=as_user("bob")).json() == bobs_run


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


POSTS = cases(("POST",))


class TestOriginOnEveryApp:
    @pytest.mark.parametrize(
        ("guarded", "route", "action"), POSTS, indirect=["guarded"]
    )
    def test_a_cross_origin_post_is_403_before_authorize(
        self, guarded: Guarded, route: tuple[str, str], action: Action
    ) -> None:
        """Every POST of every app, from another site with right credentials:
        refused, and authorize is never asked."""
        subject, run = guarded.subject, guarded.run
        guarded.bearer.asked.clear()
        headers = {**RIGHT, "Origin": "http://evil.example"}
        answer = subject.send(guarded.base, route, action, run, headers)
        assert answer.status == 403
        assert "another site" in answer.refusal["error"]
        assert guarded.bearer.asked == []

    @pytest.mark.parametrize(
        ("guarded", "route", "action"), POSTS, indirect=["guarded"]
    )
    def test_a_post_from_the_apps_own_origin_goes_on(
        self, guarded: Guarded, route: tuple[str, str], action: Action
    ) -> None:
        """Every POST of every app from its own page's origin is served."""
        subject = guarded.subject
        run = subject.waiting(guarded.base, RIGHT)
        headers = {**RIGHT, "Origin": guarded.base.rstrip("/")}
        assert subject.send(guarded.base, route, action, run, headers).status < 400


class TestHostOnEveryApp:
    @pytest.mark.parametrize(("name", "route", "action"), CASES)
    def test_without_authorize_a_name_is_refused(
        self, name: str, route: tuple[str, str], action: Action
    ) -> None:
        """Without authorize, every route of every app answers a DNS name (a
        rebinding page's) 400, and localhost is served."""
        subject = SUBJECTS[name]
        with serving(subject.make(None)) as base:
            run = subject.waiting(base, {})
            named = subject.send(base, route, action, run, {"Host": "evil.example"})
            assert named.status == 400
            assert "an authorize=" in named.refusal["error"]
            local = {"Host": "localhost:8000"}
            assert subject.send(base, route, action, run, local).status < 400


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

    @pytest.mark.parametrize(("name", "route", "action"), CASES)
    def test_every_route_needs_the_token(
        self, name: str, route: tuple[str, str], action: Action
    ) -> None:
        """Every route of every app, listed from it: 401 without the token or
        with a wrong one, through with the right one."""
        subject = SUBJECTS[name]
        auth = TokenAuth("s3cret-token", cookie="test_cookie")
        with serving(auth.wrap(subject.make(auth))) as base:
            run = subject.waiting(base, {"Authorization": "Bearer s3cret-token"})
            for wrong in ({}, {"Authorization": "Bearer x"}):
                assert subject.send(base, route, action, run, wrong).status == 401
            right = {"Authorization": "Bearer s3cret-token"}
            assert subject.send(base, route, action, run, right).status < 400

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
