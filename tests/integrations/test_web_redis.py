"""The web app on Redis (``create_app(redis=client)``), against the real server of
``need_redis()`` (db 9 by default, never 0); every test works under its own key
prefix and deletes its keys."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import redis

from langhooks import LangHooksError, Message, ToolContext
from langhooks.chain import LLMChain, Tool
from langhooks.cli.demo import QUESTION, SYSTEM, WEATHER_TOOL, ApprovalGate
from langhooks.cli.serve import DemoModel, demo_agent
from langhooks.integrations._redis._wire import text
from langhooks.integrations.redis import RedisEventPublisher, RedisRunStore
from langhooks.integrations.web import create_app
from langhooks.models import ScriptedChatModel, ScriptedTurn
from tests._services import need_redis

from ._web_harness import serving, sse
from .test_redis_publish import client, prefix
from .test_web import decide, events, start, text_of, wait_state

__all__ = ["client", "prefix"]  # fixtures used here

FIRST = "Let me check the weather in Paris."
ANSWER = "It is 14°C in Paris with light rain until 16:00, so yes: take an umbrella."
APPROVE = {"tool_call_id": "call_weather_1", "decision": "approve"}


@pytest.fixture
def url(client: redis.Redis, prefix: str) -> Iterator[str]:
    """The demo agent served on Redis."""
    agent = demo_agent(lambda: DemoModel(0.0))
    app = create_app(redis=client, prefix=prefix, agent=agent, heartbeat=0.05)
    with serving(app) as base:
        yield base


def records(base: str, run_id: str) -> list[dict[str, Any]]:
    """The run's records, as the event stream carries them."""
    return [json.loads(e["data"]) for e in events(base, run_id)]


def publish_elsewhere(client: redis.Redis, prefix: str, *, approve: bool) -> str:
    """Run the demo agent here with a publisher, as another process would; its id."""
    with RedisEventPublisher(client, prefix=prefix) as publisher:
        chain = LLMChain(
            DemoModel(0.0), tools=[WEATHER_TOOL], callbacks=[ApprovalGate(), publisher]
        ).add_messages([Message.system(SYSTEM), Message.user(QUESTION)])
        result = chain.run()
        if approve:
            from langhooks.chain import Decision

            waiting = result.chain.pending_tool_calls
            result = result.chain.execute_tool_calls_with_decisions(
                waiting, [Decision.approve()]
            )
            result = result.chain.run()
    assert result.chain.invocation is not None
    return result.chain.invocation.id


class TestCreateApp:
    def test_takes_only_a_synchronous_client(self, prefix: str) -> None:
        """redis= is a redis.Redis client."""
        with pytest.raises(TypeError, match=r"redis\.Redis"):
            create_app(redis="redis://127.0.0.1")  # type: ignore[arg-type]

    def test_takes_only_a_str_prefix(self, client: redis.Redis) -> None:
        """prefix= is a str."""
        with pytest.raises(TypeError, match="prefix must be a str"):
            create_app(redis=client, prefix=3)  # type: ignore[arg-type]


class TestRunsOnRedis:
    def test_a_run_streams_and_an_approval_finishes_it(self, url: str) -> None:
        """A run started here streams from Redis; Approve resumes it to the answer;
        the stream's ids are Redis ids and it ends for good after the answer."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        answer = decide(url, run_id, APPROVE)
        assert answer.status_code == 202
        received = events(url, run_id)
        assert all("-" in e["id"] for e in received)
        got = [json.loads(e["data"]) for e in received]
        assert {r["run_id"] for r in got} == {run_id}
        assert text_of(got) == FIRST + ANSWER
        assert received[-1]["event"] == "on_run_complete"
        wait_state(url, run_id, "ok")
        runs = httpx.get(f"{url}runs").json()["runs"]
        assert [(r["run_id"], r["prompt"]) for r in runs] == [(run_id, QUESTION)]
        end = httpx.get(
            f"{url}runs/{run_id}/events", headers={"Last-Event-ID": received[-1]["id"]}
        )
        assert end.status_code == 204

    def test_a_reconnect_resumes_after_the_last_event_id(self, url: str) -> None:
        """Last-Event-ID (a Redis id) is exclusive."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        decide(url, run_id, APPROVE)
        everything = events(url, run_id)
        assert events(url, run_id, last_id=everything[5]["id"]) == everything[6:]

    def test_an_idle_run_sends_heartbeats(self, url: str) -> None:
        """While a run waits for a human, heartbeats keep its stream open."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        with httpx.stream("GET", f"{url}runs/{run_id}/events", timeout=30) as answer:
            for item in sse(answer.iter_lines()):
                if item.get("comment") == "heartbeat":
                    break

    def test_a_heartbeat_longer_than_the_socket_timeout_still_works(
        self, prefix: str
    ) -> None:
        """An idle stream's reads stay within the client's socket timeout."""
        client = redis.Redis.from_url(need_redis(), socket_timeout=1.0)
        agent = demo_agent(lambda: DemoModel(0.0))
        app = create_app(redis=client, prefix=prefix, agent=agent, heartbeat=3.0)
        try:
            with serving(app) as base:
                run_id = start(base, QUESTION)
                wait_state(base, run_id, "interrupted")
                url = f"{base}runs/{run_id}/events"
                with httpx.stream("GET", url, timeout=30) as answer:
                    comments = (e for e in sse(answer.iter_lines()) if "comment" in e)
                    assert next(comments) == {"comment": "heartbeat"}
        finally:
            client.close()

    def test_a_malformed_last_event_id_is_400(self, url: str) -> None:
        """Last-Event-ID must be a Redis stream id."""
        run_id = start(url, QUESTION)
        answer = httpx.get(
            f"{url}runs/{run_id}/events", headers={"Last-Event-ID": "17"}
        )
        assert answer.status_code == 400

    def test_an_unknown_run_is_404(self, url: str) -> None:
        """Neither listed nor published: 404, for events and for decisions."""
        assert httpx.get(f"{url}runs/{'0' * 32}/events").status_code == 404
        assert decide(url, "0" * 32, APPROVE).status_code == 404

    def test_decisions_are_accepted_once(self, url: str) -> None:
        """Of two concurrent resumes, one is accepted; the other is 409."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: decide(url, run_id, APPROVE), range(2)))
        assert sorted(a.status_code for a in answers) == [202, 409]
        ran = [r for r in records(url, run_id) if r["event"] == "on_tool_pre_execution"]
        assert len(ran) == 1
        wait_state(url, run_id, "ok")
        assert decide(url, run_id, APPROVE).status_code == 409

    @pytest.mark.parametrize(
        "decisions",
        [
            [{"tool_call_id": "call_9", "decision": "approve"}],
            [APPROVE, {"tool_call_id": "call_weather_1", "decision": "reject"}],
        ],
    )
    def test_decisions_that_match_no_waiting_call_are_422(
        self, url: str, decisions: list[dict[str, Any]]
    ) -> None:
        """A call that is not waiting, or one given twice: 422; the run still waits."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        assert decide(url, run_id, *decisions).status_code == 422
        assert decide(url, run_id, APPROVE).status_code == 202

    def test_a_run_being_resumed_is_listed_so(
        self, url: str, client: redis.Redis, prefix: str
    ) -> None:
        """While a resume (another worker's) holds the run's claim in the store,
        the run is "resuming"."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        client.hset(f"{prefix}state:{run_id}", "status", "claimed")
        wait_state(url, run_id, "resuming")

    def test_an_entry_without_a_record_is_skipped(
        self, url: str, client: redis.Redis, prefix: str
    ) -> None:
        """Something else written to a run's stream is not shown."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        client.xadd(f"{prefix}run:{run_id}", {"note": "not a record"})
        with httpx.stream("GET", f"{url}runs/{run_id}/events", timeout=30) as answer:
            seen = []
            for item in sse(answer.iter_lines()):
                if item.get("comment") == "heartbeat":
                    break
                seen.append(item)
        assert "note" not in json.dumps(seen)
        assert seen[-1]["event"] == "on_run_complete"


class TestOwners:
    def test_each_user_sees_and_decides_only_their_runs(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """On Redis, the starting identity is kept with the run (and in the run
        store's metadata): owner_only lets only that user list, stream and
        decide it."""
        from starlette.requests import Request

        from langhooks.integrations.web import owner_only

        def user(request: Request) -> str | None:
            return request.headers.get("x-user")

        agent = demo_agent(lambda: DemoModel(0.0))
        app = create_app(
            redis=client,
            prefix=prefix,
            agent=agent,
            heartbeat=0.05,
            authorize=owner_only(user),
        )
        alice, bob = {"X-User": "alice"}, {"X-User": "bob"}
        with serving(app) as base:
            started = httpx.post(f"{base}runs", json={"prompt": "hi"}, headers=alice)
            run_id = started.json()["run_id"]
            assert httpx.get(f"{base}runs", headers=bob).json()["runs"] == []
            mine = httpx.get(f"{base}runs", headers=alice).json()["runs"]
            assert [run["run_id"] for run in mine] == [run_id]
            events_url = f"{base}runs/{run_id}/events"
            assert httpx.get(events_url, headers=bob).status_code == 403
            body = {"decisions": [APPROVE]}
            decisions = f"{base}runs/{run_id}/decisions"
            assert httpx.post(decisions, json=body, headers=bob).status_code == 403
            for _ in range(3000):
                runs = httpx.get(f"{base}runs", headers=alice).json()["runs"]
                if runs[0]["state"] == "interrupted":
                    break
                threading.Event().wait(0.01)
            # The run store's metadata names her too: her inbox holds the run.
            store = RedisRunStore(client, prefix=prefix)
            inbox = store.pending(metadata={"owner": "alice"})
            assert [row.run_id for row in inbox] == [run_id]
            assert httpx.post(decisions, json=body, headers=alice).status_code == 202
        assert json.loads(client.hget(f"{prefix}web:runs", run_id) or "")["owner"] == (
            "alice"
        )


class TestHostileData:
    def test_a_listed_prompt_that_is_not_unicode_keeps_the_list_readable(
        self, url: str, client: redis.Redis, prefix: str
    ) -> None:
        """A prompt with a lone surrogate already in the hash (written by an older
        version, it has no TTL) is listed, escaped: the list never fails."""
        meta = json.dumps({"prompt": "\ud800", "created": 1.0})
        client.hset(f"{prefix}web:runs", "old", meta)
        client.hset(f"{prefix}web:runs", "junk", b"\xff not json")
        client.xadd(f"{prefix}run:junk", {"note": "not a record"})
        answer = httpx.get(f"{url}runs")
        assert answer.status_code == 200
        runs = {run["run_id"]: run for run in answer.json()["runs"]}
        assert runs["old"]["prompt"] == "\ud800"
        assert runs["junk"]["prompt"] == ""

    def test_a_prompt_that_is_not_unicode_is_400(self, url: str) -> None:
        """POST /runs refuses it on Redis too, and the list stays readable."""
        body = b'{"prompt": "\\ud800"}'
        headers = {"Content-Type": "application/json"}
        assert (
            httpx.post(f"{url}runs", content=body, headers=headers).status_code == 400
        )
        assert httpx.get(f"{url}runs").status_code == 200

    def test_a_run_ending_with_an_undecodable_entry_is_listed_unreadable(
        self,
        url: str,
        client: redis.Redis,
        prefix: str,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """A stream whose last entry a newer schema wrote shows that run as
        "unreadable"; the other runs are listed as before."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        newer = json.dumps(
            {"type": "EventRecord", "version": 2, "seq": 0, "event": "on_run_complete"}
        )
        client.xadd(
            f"{prefix}run:newer",
            {"record": newer, "event": "on_run_complete", "publisher": "p"},
        )
        for _ in range(2):  # said once, not at every listing
            answer = httpx.get(f"{url}runs")
            assert answer.status_code == 200
        states = {run["run_id"]: run["state"] for run in answer.json()["runs"]}
        assert states == {run_id: "interrupted", "newer": "unreadable"}
        said = [r for r in caplog.records if "cannot decode" in r.getMessage()]
        assert len(said) == 1

    def test_an_undecodable_entry_is_skipped_in_the_stream(
        self, url: str, client: redis.Redis, prefix: str
    ) -> None:
        """The events of a run with an entry this version cannot decode still
        stream; the entry is skipped, and an end mark on it still ends the stream."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        key = f"{prefix}run:{run_id}"
        sent = len(until_heartbeat(f"{url}runs/{run_id}/events"))
        client.xadd(
            key, {"record": '{"type": "EventRecord", "version": 2}', "end": "1"}
        )
        received = events(url, run_id)
        assert len(received) == sent

    @pytest.mark.parametrize(
        "last_id", ["18446744073709551616-0", "0-18446744073709551616", "9" * 20 + "-0"]
    )
    def test_a_last_event_id_above_64_bits_is_400(self, url: str, last_id: str) -> None:
        """Each part of a stream id is an unsigned 64-bit number; a larger one is a
        400 before anything is streamed."""
        run_id = start(url, QUESTION)
        answer = httpx.get(
            f"{url}runs/{run_id}/events", headers={"Last-Event-ID": last_id}
        )
        assert answer.status_code == 400

    def test_the_largest_last_event_id_is_taken(self, url: str) -> None:
        """2^64-1 in both parts is a stream id (nothing comes after it)."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        top = "18446744073709551615-18446744073709551615"
        events_url = f"{url}runs/{run_id}/events"
        assert until_heartbeat(events_url, top) == []


def until_heartbeat(url: str, last_id: str | None = None) -> list[dict[str, str]]:
    """The events a stream sends before its first heartbeat."""
    headers = {} if last_id is None else {"Last-Event-ID": last_id}
    seen: list[dict[str, str]] = []
    with httpx.stream("GET", url, headers=headers, timeout=30) as answer:
        for item in sse(answer.iter_lines()):
            if item.get("comment") == "heartbeat":
                return seen
            if "event" in item:
                seen.append(item)
    raise AssertionError("the stream ended")


class TestRepeats:
    def test_a_repeated_batch_is_sent_once(
        self, url: str, client: redis.Redis, prefix: str
    ) -> None:
        """Records in the stream twice (a batch redis-py retried) are sent once, also
        to a reader that reconnects after the originals."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        key = f"{prefix}run:{run_id}"
        originals: Any = client.xrange(key)
        for _, fields in originals[-3:]:
            client.xadd(key, fields)
        events_url = f"{url}runs/{run_id}/events"
        assert len(until_heartbeat(events_url)) == len(originals)
        last = originals[-1][0].decode()
        assert until_heartbeat(events_url, last) == []

    def test_a_reader_placed_after_a_foreign_entry_goes_on(
        self, url: str, client: redis.Redis, prefix: str
    ) -> None:
        """A Last-Event-ID naming an entry that is not a record is only a position."""
        run_id = start(url, QUESTION)
        wait_state(url, run_id, "interrupted")
        foreign = client.xadd(f"{prefix}run:{run_id}", {"note": "not a record"})
        events_url = f"{url}runs/{run_id}/events"
        assert until_heartbeat(events_url, text(foreign)) == []


class TestRunsOfOtherProcesses:
    def test_a_page_shows_a_run_published_elsewhere(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """An app with no agent lists and streams a run another process ran."""
        run_id = publish_elsewhere(client, prefix, approve=True)
        with serving(create_app(redis=client, prefix=prefix)) as base:
            runs = httpx.get(f"{base}runs").json()
            assert runs["agent"] is False
            assert [(r["run_id"], r["state"]) for r in runs["runs"]] == [(run_id, "ok")]
            assert text_of(records(base, run_id)) == FIRST + ANSWER

    def test_an_app_without_an_agent_resumes_nothing(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """Without an agent there is no code to go on with: 409."""
        run_id = publish_elsewhere(client, prefix, approve=False)
        with serving(create_app(redis=client, prefix=prefix)) as base:
            wait_state(base, run_id, "interrupted")
            answer = decide(base, run_id, APPROVE)
        assert answer.status_code == 409
        assert "no agent" in answer.json()["error"]

    def test_a_run_whose_state_is_not_saved_waits_for_nothing(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A run interrupted elsewhere but never saved cannot be resumed here."""
        run_id = publish_elsewhere(client, prefix, approve=False)
        agent = demo_agent(lambda: DemoModel(0.0))
        with serving(create_app(redis=client, prefix=prefix, agent=agent)) as base:
            answer = decide(base, run_id, APPROVE)
        assert answer.status_code == 409
        assert "not saved" in answer.json()["error"]


class TestFailures:
    def test_a_run_that_fails_is_listed_as_error(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A run that gives up ends its stream with on_error; its state is "error"."""
        failing = LangHooksError("authentication", "bad key")

        def agent(prompt: str) -> LLMChain:
            return LLMChain(ScriptedChatModel([failing])).add_message(
                Message.user(prompt)
            )

        with serving(create_app(redis=client, prefix=prefix, agent=agent)) as base:
            run_id = start(base)
            assert events(base, run_id)[-1]["event"] == "on_error"
            wait_state(base, run_id, "error")

    def test_a_prompt_moves_on_past_waiting_calls(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A chain whose calls wait for a human has them rejected (the model
        reads why) and the prompt is answered, as in the frontend apps."""
        model = ScriptedChatModel([ScriptedTurn(text="x")])

        def agent(prompt: str) -> LLMChain:
            chain = LLMChain(model)
            return chain.add_messages(
                [Message.user(prompt), *_interrupted_tail(prompt), Message.user("on")]
            )

        with serving(create_app(redis=client, prefix=prefix, agent=agent)) as base:
            run_id = start(base)
            assert events(base, run_id)[-1]["event"] == "on_run_complete"
            wait_state(base, run_id, "ok")
        told = model.requests[-1].messages
        assert [m.role for m in told] == ["user", "assistant", "tool", "user"]
        assert not told[2].tool_results[0].is_interrupt

    def test_a_run_still_going_when_the_server_stops_is_cancelled(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """Stopping the server cancels the runs it drives."""
        gate = threading.Event()

        async def wait(arguments: Any, context: ToolContext) -> str:
            while not gate.is_set():
                await asyncio.sleep(0.01)
            return "done"

        def agent(prompt: str) -> LLMChain:
            chain = demo_agent(lambda: DemoModel(0.0))(prompt)
            return LLMChain(
                chain.model, tools=[Tool("get_weather", wait)], messages=chain.messages
            )

        with serving(create_app(redis=client, prefix=prefix, agent=agent)) as base:
            run_id = start(base)
            wait_state(base, run_id, "running")
        gate.set()


def _interrupted_tail(prompt: str) -> list[Message]:
    """An assistant call and a tool message that still waits for a human."""
    from langhooks import ToolCall, ToolResult

    call = ToolCall(call_id="c1", name="get_weather", arguments={})
    waiting = ToolResult(
        tool_call_id="c1", name="get_weather", content="waits", is_interrupt=True
    )
    return [Message.assistant("", tool_calls=[call]), Message.tool([waiting])]
