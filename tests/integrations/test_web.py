"""The web app over HTTP: the page, runs, Server-Sent Events and decisions."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import httpx
import pytest
from typing_extensions import override

from langhooks import ChainCallbackHandler, Invocation, ToolContext
from langhooks.chain import LLMChain, Tool
from langhooks.integrations.web import MAX_BODY_BYTES, create_app
from langhooks.models import ScriptedTurn

from ._web_harness import ANSWER, FIRST_TEXT, agent_of, serving, sse, weather_turns

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def url() -> Iterator[str]:
    """The demo-like agent (one approval, then the answer) served on 127.0.0.1."""
    with serving(create_app(agent=agent_of(weather_turns()), heartbeat=0.05)) as base:
        yield base


def start(base: str, prompt: str = "Paris?") -> str:
    """Start a run; its id."""
    answer = httpx.post(f"{base}runs", json={"prompt": prompt})
    assert answer.status_code == 201, answer.text
    run_id: str = answer.json()["run_id"]
    return run_id


def events(base: str, run_id: str, last_id: str | None = None) -> list[dict[str, str]]:
    """Every event of the run's stream (after ``last_id``), up to its end."""
    headers = {} if last_id is None else {"Last-Event-ID": last_id}
    url = f"{base}runs/{run_id}/events"
    with httpx.stream("GET", url, headers=headers, timeout=30) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        return [e for e in sse(answer.iter_lines()) if "event" in e]


def wait_state(base: str, run_id: str, state: str) -> None:
    """Wait until the run list shows the run in ``state`` (the run is driven live)."""
    for _ in range(3000):
        runs = httpx.get(f"{base}runs").json()["runs"]
        if any(r["run_id"] == run_id and r["state"] == state for r in runs):
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"run {run_id} never reached {state}")


def decide(base: str, run_id: str, *decisions: dict[str, Any]) -> httpx.Response:
    """POST decisions for a run."""
    return httpx.post(
        f"{base}runs/{run_id}/decisions", json={"decisions": list(decisions)}
    )


def interrupted(base: str) -> str:
    """A run that waits for a decision on call_1."""
    run_id = start(base)
    wait_state(base, run_id, "interrupted")
    return run_id


def text_of(records: list[dict[str, Any]]) -> str:
    """The streamed text of a run's records."""
    return "".join(
        delta["text"]
        for record in records
        if record["event"] == "on_llm_new_delta"
        for delta in record["payload"]["deltas"]
    )


class TestCreateApp:
    def test_rejects_an_agent_that_is_not_callable(self) -> None:
        """An agent must be a function from a prompt to a chain."""
        with pytest.raises(TypeError, match="agent must be a function"):
            create_app(agent="demo")  # type: ignore[arg-type]

    def test_rejects_a_heartbeat_that_is_not_a_number(self) -> None:
        """The heartbeat is a number of seconds, not a bool."""
        with pytest.raises(TypeError, match="heartbeat must be a number"):
            create_app(heartbeat=True)

    def test_rejects_a_heartbeat_that_is_not_positive(self) -> None:
        """A zero heartbeat would spin."""
        with pytest.raises(ValueError, match="heartbeat must be positive"):
            create_app(heartbeat=0)

    def test_says_which_extra_to_install_without_starlette(self) -> None:
        """Importing the module without Starlette names the extra."""
        code = (
            "import sys; sys.modules['starlette'] = None\n"
            "try:\n import langhooks.integrations.web\n"
            "except ImportError as e: print(e)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert "pip install 'langhooks[web]'" in out.stdout


class TestPage:
    def test_serves_the_page_with_a_strict_content_policy(self, url: str) -> None:
        """GET / is the page; nothing inline and nothing from elsewhere may run."""
        answer = httpx.get(url)
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert '<script src="static/app.js"' in answer.text
        assert "http" not in answer.text.replace("http-equiv", "")

    @pytest.mark.parametrize(
        ("name", "kind"), [("app.js", "text/javascript"), ("app.css", "text/css")]
    )
    def test_serves_its_script_and_style(self, url: str, name: str, kind: str) -> None:
        """The page's assets come from the app itself."""
        answer = httpx.get(f"{url}static/{name}")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith(kind)

    def test_an_unknown_asset_is_404(self, url: str) -> None:
        """Only the page's own assets are served."""
        assert httpx.get(f"{url}static/secret.py").status_code == 404

    def test_has_no_icon(self, url: str) -> None:
        """The icon request gets an empty answer rather than an error."""
        assert httpx.get(f"{url}favicon.ico").status_code == 204

    def test_the_page_knows_every_event(self) -> None:
        """The script's list of record names is every chain and streaming event
        (and "message"), so a new event cannot be missing from the page."""
        import re
        from importlib import resources

        from langhooks import ChainCallbackHandler, StreamingChatResponseHandler

        script = (
            resources.files("langhooks.integrations")
            .joinpath("_web_static", "app.js")
            .read_text()
        )
        listed = re.search(r"const EVENTS = \[(.*?)\];", script, re.S)
        assert listed is not None
        names = set(re.findall(r'"(\w+)"', listed.group(1)))
        assert names == {
            *ChainCallbackHandler._langhooks_own_events,
            *StreamingChatResponseHandler._langhooks_own_events,
            "message",
        }

    def test_the_page_never_parses_run_content_as_html(self) -> None:
        """The script sets text only: no innerHTML, outerHTML or insertAdjacentHTML."""
        from importlib import resources

        script = (
            resources.files("langhooks.integrations")
            .joinpath("_web_static", "app.js")
            .read_text()
        )
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"):
            assert sink not in script


class TestRuns:
    def test_lists_no_runs_at_first(self, url: str) -> None:
        """A fresh app lists no runs and says it can start them."""
        assert httpx.get(f"{url}runs").json() == {"agent": True, "runs": []}

    def test_starts_a_run_with_an_unguessable_id(self, url: str) -> None:
        """POST /runs answers the run's id: its invocation's UUID4."""
        run_id = start(url, "Paris?")
        assert len(run_id) == 32
        int(run_id, 16)
        runs = httpx.get(f"{url}runs").json()["runs"]
        assert [(r["run_id"], r["prompt"]) for r in runs] == [(run_id, "Paris?")]
        assert runs[0]["state"] in {"running", "interrupted"}

    def test_lists_runs_newest_first(self, url: str) -> None:
        """The newest run comes first."""
        first, second = start(url), start(url)
        runs = httpx.get(f"{url}runs").json()["runs"]
        assert [r["run_id"] for r in runs] == [second, first]

    def test_an_app_without_an_agent_starts_no_run(self) -> None:
        """Without an agent, POST /runs is refused and the page hides its form."""
        with serving(create_app()) as base:
            assert httpx.get(f"{base}runs").json() == {"agent": False, "runs": []}
            answer = httpx.post(f"{base}runs", json={"prompt": "hi"})
            assert answer.status_code == 405
            assert "runs no agent" in answer.json()["error"]

    @pytest.mark.parametrize(
        ("body", "status", "error"),
        [
            ({"prompt": ""}, 400, "non-empty string"),
            ({"prompt": 3}, 400, "non-empty string"),
            ({"question": "hi"}, 400, '{"prompt": "..."}'),
            (["hi"], 400, '{"prompt": "..."}'),
            ({"prompt": "x" * 8001}, 413, "longer than 8000"),
        ],
    )
    def test_refuses_a_bad_prompt(
        self, url: str, body: object, status: int, error: str
    ) -> None:
        """A prompt must be a non-empty string of bounded length."""
        answer = httpx.post(f"{url}runs", json=body)
        assert answer.status_code == status
        assert error in answer.json()["error"]

    def test_refuses_a_body_that_is_not_json(self, url: str) -> None:
        """Only JSON is accepted, which also keeps cross-site forms out."""
        answer = httpx.post(f"{url}runs", data={"prompt": "hi"})
        assert answer.status_code == 415

    def test_refuses_malformed_json(self, url: str) -> None:
        """A body that does not parse is a 400 saying so."""
        answer = httpx.post(f"{url}runs", content=b"{", headers=JSON)
        assert answer.status_code == 400
        assert "not valid JSON" in answer.json()["error"]

    def test_refuses_a_body_over_the_cap_by_its_length(self, url: str) -> None:
        """A body announced larger than the cap is refused unread."""
        body = b'{"prompt": "' + b"x" * MAX_BODY_BYTES + b'"}'
        answer = httpx.post(f"{url}runs", content=body, headers=JSON)
        assert answer.status_code == 413

    def test_refuses_a_streamed_body_over_the_cap(self, url: str) -> None:
        """A chunked body is cut off as soon as it passes the cap."""

        def chunks() -> Iterator[bytes]:
            yield b'{"prompt": "'
            for _ in range(MAX_BODY_BYTES // 1024 + 1):
                yield b"x" * 1024
            yield b'"}'

        answer = httpx.post(f"{url}runs", content=chunks(), headers=JSON)
        assert answer.status_code == 413

    def test_an_agent_that_returns_no_chain_is_a_server_error(self) -> None:
        """A host's agent must build an LLMChain."""
        with serving(create_app(agent=lambda prompt: prompt)) as base:  # type: ignore[arg-type, return-value]
            assert httpx.post(f"{base}runs", json={"prompt": "hi"}).status_code == 500

    def test_a_run_that_raises_at_once_is_a_server_error(self) -> None:
        """A run that raises before its first record fails the request starting it."""
        with serving(create_app(agent=raising_agent(record_first=False))) as base:
            assert httpx.post(f"{base}runs", json={"prompt": "hi"}).status_code == 500
            assert httpx.get(f"{base}runs").json()["runs"] == []

    def test_a_run_that_raises_later_is_listed_as_failed(self) -> None:
        """A run that raises after it began is listed with state "error"."""
        with serving(create_app(agent=raising_agent(record_first=True))) as base:
            run_id = start(base)
            wait_state(base, run_id, "error")

    def test_a_run_still_going_when_the_server_stops_is_cancelled(self) -> None:
        """Stopping the server cancels the runs it drives; nothing is left running."""
        gate = threading.Event()
        with serving(create_app(agent=blocking_agent(gate))) as base:
            run_id = start(base)
            wait_state(base, run_id, "running")
        gate.set()


class TestHostileBodies:
    def test_a_prompt_that_is_not_unicode_is_400_and_the_list_stays_readable(
        self, url: str
    ) -> None:
        """A lone surrogate (valid JSON, not Unicode) is refused, so no run holds
        text the list of runs cannot be written with."""
        body = b'{"prompt": "\\ud800"}'
        answer = httpx.post(f"{url}runs", content=body, headers=JSON)
        assert answer.status_code == 400
        assert "not valid Unicode" in answer.json()["error"]
        assert httpx.get(f"{url}runs").json()["runs"] == []

    def test_a_reason_that_is_not_unicode_is_400(self, url: str) -> None:
        """Text anywhere in a body must be Unicode, keys too."""
        run_id = interrupted(url)
        for body in (
            b'{"decisions": [{"tool_call_id": "call_1", "decision": "reject", '
            b'"reason": "\\udfff"}]}',
            b'{"decisions": [{"tool_call_id": "call_1", "decision": "edit", '
            b'"arguments": {"\\ud800": 1}}]}',
        ):
            answer = httpx.post(
                f"{url}runs/{run_id}/decisions", content=body, headers=JSON
            )
            assert answer.status_code == 400, answer.text

    @pytest.mark.parametrize("depth", [65, 970, 30_000])
    def test_a_deeply_nested_body_is_400(self, url: str, depth: int) -> None:
        """A body nested deeper than 64 levels (even one the parser cannot take) is
        a 400 saying so, never a server error."""
        body = b"[" * depth + b"]" * depth
        answer = httpx.post(f"{url}runs", content=body, headers=JSON)
        assert answer.status_code == 400
        assert "nested deeper than 64 levels" in answer.json()["error"]

    def test_edited_arguments_970_levels_deep_are_400(self, url: str) -> None:
        """An edit whose arguments are nested 970 levels deep is refused; the run
        still waits for a decision."""
        run_id = interrupted(url)
        arguments = '{"a": ' * 970 + "{}" + "}" * 970
        text = (
            '{"decisions": [{"tool_call_id": "call_1", "decision": "edit", '
            f'"arguments": {arguments}}}]}}'
        )
        assert len(text) < MAX_BODY_BYTES
        answer = httpx.post(f"{url}runs/{run_id}/decisions", content=text, headers=JSON)
        assert answer.status_code == 400
        approve = {"tool_call_id": "call_1", "decision": "approve"}
        assert decide(url, run_id, approve).status_code == 202

    def test_a_body_64_levels_deep_is_taken(self, url: str) -> None:
        """Nesting up to the limit is fine."""
        run_id = interrupted(url)
        arguments: dict[str, Any] = {}
        for _ in range(60):
            arguments = {"a": arguments}
        edit = {"tool_call_id": "call_1", "decision": "edit", "arguments": arguments}
        assert decide(url, run_id, edit).status_code == 202

    @pytest.mark.parametrize(
        "media_type", ["Application/JSON", "APPLICATION/JSON; charset=UTF-8"]
    )
    def test_the_media_type_is_case_insensitive(
        self, url: str, media_type: str
    ) -> None:
        """Media types are case-insensitive (RFC 9110): any case is JSON."""
        answer = httpx.post(
            f"{url}runs",
            content=b'{"prompt": "hi"}',
            headers={"Content-Type": media_type},
        )
        assert answer.status_code == 201


class _RaisingAtOnce(LLMChain):
    """A chain whose run raises: what a bug in a host's model or runtime looks like."""

    @override
    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the model is not configured")


class _RaisingLater(LLMChain):
    """A chain whose run raises after its first event."""

    @override
    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        recorder = self.callbacks[-1]
        assert isinstance(recorder, ChainCallbackHandler)
        began = LLMChain(self.model, invocation=Invocation(name="run"))
        recorder.on_run_start(began)
        raise RuntimeError("the model went away")


def raising_agent(*, record_first: bool) -> Any:
    """An agent whose runs raise, before or after their first record."""
    kind = _RaisingLater if record_first else _RaisingAtOnce

    def agent(prompt: str) -> LLMChain:
        chain = agent_of(weather_turns())(prompt)
        return kind(chain.model, messages=chain.messages)

    return agent


def blocking_agent(
    gate: threading.Event, turns: list[ScriptedTurn] | None = None
) -> Any:
    """An agent whose tool waits (without blocking the loop) until ``gate`` is set."""

    async def wait(arguments: Any, context: ToolContext) -> str:
        while not gate.is_set():
            await asyncio.sleep(0.01)
        return "done"

    tool = Tool("get_weather", wait)

    def agent(prompt: str) -> LLMChain:
        chain = agent_of(turns or weather_turns(), gate=False)(prompt)
        return LLMChain(chain.model, tools=[tool], messages=chain.messages)

    return agent


class TestEvents:
    def test_an_unknown_run_is_404(self, url: str) -> None:
        """Events of a run nobody started: 404."""
        answer = httpx.get(f"{url}runs/{'0' * 32}/events")
        assert answer.status_code == 404
        assert "no run" in answer.json()["error"]

    def test_streams_every_record_and_ends_after_the_last(self, url: str) -> None:
        """One event per record: id, the handler method's name, the record as JSON;
        the stream ends after the run's last record."""
        run_id = interrupted(url)
        approve = {"tool_call_id": "call_1", "decision": "approve"}
        assert decide(url, run_id, approve).status_code == 202
        received = events(url, run_id)
        assert [int(e["id"]) for e in received] == list(range(1, len(received) + 1))
        records = [json.loads(e["data"]) for e in received]
        assert [r["event"] for r in records] == [e["event"] for e in received]
        assert {r["run_id"] for r in records} >= {run_id}
        assert received[0]["event"] == "on_run_start"
        assert received[-1]["event"] == "on_run_complete"
        assert records[-1]["payload"]["result"]["status"] == "ok"
        assert text_of(records) == FIRST_TEXT + ANSWER

    def test_a_reconnect_resumes_after_the_last_event_id(self, url: str) -> None:
        """Last-Event-ID is exclusive: the stream goes on with the next record."""
        run_id = interrupted(url)
        decide(url, run_id, {"tool_call_id": "call_1", "decision": "approve"})
        everything = events(url, run_id)
        rest = events(url, run_id, last_id=everything[9]["id"])
        assert rest == everything[10:]

    def test_nothing_after_the_last_record_is_204(self, url: str) -> None:
        """A reconnect after the run's last record gets 204, which stops a browser."""
        run_id = interrupted(url)
        decide(url, run_id, {"tool_call_id": "call_1", "decision": "approve"})
        last = events(url, run_id)[-1]["id"]
        answer = httpx.get(
            f"{url}runs/{run_id}/events", headers={"Last-Event-ID": last}
        )
        assert answer.status_code == 204

    @pytest.mark.parametrize("last_id", ["abc", "-1", "1" * 19])
    def test_a_malformed_last_event_id_is_400(self, url: str, last_id: str) -> None:
        """Last-Event-ID must be an id this server gave."""
        run_id = interrupted(url)
        answer = httpx.get(
            f"{url}runs/{run_id}/events", headers={"Last-Event-ID": last_id}
        )
        assert answer.status_code == 400

    def test_an_idle_stream_sends_heartbeats(self, url: str) -> None:
        """While a run waits, comment lines keep the connection alive; a browser
        is told to reconnect after one second."""
        run_id = interrupted(url)
        with httpx.stream("GET", f"{url}runs/{run_id}/events", timeout=30) as answer:
            seen: list[dict[str, str]] = []
            for item in sse(answer.iter_lines()):
                seen.append(item)
                if item.get("comment") == "heartbeat":
                    break
        assert seen[0] == {"retry": "1000"}
        assert seen[-2]["event"] == "on_run_complete"
        result = json.loads(seen[-2]["data"])["payload"]["result"]
        assert result["status"] == "interrupted"

    def test_a_stream_follows_a_run_live(self) -> None:
        """A stream opened while the run waits gets the resumed part as it happens."""
        gate = threading.Event()
        turns = [weather_turns()[0], ScriptedTurn(text="done")]
        with serving(create_app(agent=blocking_agent(gate, turns))) as base:
            run_id = start(base)
            with ThreadPoolExecutor(1) as pool:
                stream = pool.submit(events, base, run_id)
                wait_state(base, run_id, "running")
                gate.set()
                received = stream.result(timeout=30)
        assert received[-1]["event"] == "on_run_complete"
        assert text_of([json.loads(e["data"]) for e in received]).endswith("done")


class TestDecisions:
    def test_approval_runs_the_tool_and_the_model_answers(self, url: str) -> None:
        """An approval resumes the run to the model's answer."""
        run_id = interrupted(url)
        answer = decide(url, run_id, {"tool_call_id": "call_1", "decision": "approve"})
        assert answer.status_code == 202
        assert answer.json() == {"run_id": run_id, "state": "resuming"}
        records = [json.loads(e["data"]) for e in events(url, run_id)]
        completed = [r for r in records if r["event"] == "on_tool_execution_completed"]
        assert (
            "Paris: 14°C" in completed[0]["payload"]["result"]["content"][0]["content"]
        )
        wait_state(url, run_id, "ok")

    def test_an_edit_runs_the_tool_with_the_new_arguments(self, url: str) -> None:
        """An edit runs the call with the arguments the human gave."""
        run_id = interrupted(url)
        decision = {"tool_call_id": "call_1", "decision": "edit"}
        answer = decide(url, run_id, {**decision, "arguments": {"city": "Lyon"}})
        assert answer.status_code == 202
        records = [json.loads(e["data"]) for e in events(url, run_id)]
        completed = [r for r in records if r["event"] == "on_tool_execution_completed"]
        assert "Lyon" in completed[0]["payload"]["result"]["content"][0]["content"]

    def test_a_rejection_is_told_to_the_model(self, url: str) -> None:
        """A rejection does not run the tool; the model answers anyway."""
        run_id = interrupted(url)
        reason = "Not today."
        answer = decide(
            url,
            run_id,
            {"tool_call_id": "call_1", "decision": "reject", "reason": reason},
        )
        assert answer.status_code == 202
        records = [json.loads(e["data"]) for e in events(url, run_id)]
        failed = [r for r in records if r["event"] == "on_tool_execution_failed"]
        assert failed[0]["payload"]["result"]["is_error"] is False
        assert reason in json.dumps(failed[0]["payload"]["result"])
        assert not [r for r in records if r["event"] == "on_tool_execution_completed"]

    def test_a_call_left_undecided_keeps_the_run_waiting(self) -> None:
        """Deciding one of two waiting calls runs it; the run waits for the other."""
        first = weather_turns()[0]
        calls = [*first.tool_calls, attrs.evolve(first.tool_calls[0], call_id="call_2")]
        turns = [attrs.evolve(first, tool_calls=calls), weather_turns()[1]]
        with serving(create_app(agent=agent_of(turns))) as base:
            run_id = interrupted(base)
            approve = {"decision": "approve"}
            first_answer = decide(base, run_id, {"tool_call_id": "call_1", **approve})
            assert first_answer.status_code == 202
            wait_state(base, run_id, "interrupted")
            answer = decide(base, run_id, {"tool_call_id": "call_2", **approve})
            assert answer.status_code == 202
            wait_state(base, run_id, "ok")
            records = [json.loads(e["data"]) for e in events(base, run_id)]
        assert text_of(records) == FIRST_TEXT + ANSWER

    def test_an_unknown_run_is_404(self, url: str) -> None:
        """Decisions for a run nobody started: 404."""
        answer = decide(
            url, "f" * 32, {"tool_call_id": "call_1", "decision": "approve"}
        )
        assert answer.status_code == 404

    def test_a_finished_run_is_409(self, url: str) -> None:
        """A run that finished waits for no decision."""
        run_id = interrupted(url)
        decide(url, run_id, {"tool_call_id": "call_1", "decision": "approve"})
        wait_state(url, run_id, "ok")
        answer = decide(url, run_id, {"tool_call_id": "call_1", "decision": "approve"})
        assert answer.status_code == 409
        assert "finished (ok)" in answer.json()["error"]

    def test_a_running_run_is_409(self) -> None:
        """A run still running waits for no decision yet."""
        gate = threading.Event()
        with serving(create_app(agent=blocking_agent(gate))) as base:
            run_id = start(base)
            answer = decide(
                base, run_id, {"tool_call_id": "call_1", "decision": "approve"}
            )
            gate.set()
        assert answer.status_code == 409
        assert "still running" in answer.json()["error"]

    def test_decisions_are_accepted_once(self, url: str) -> None:
        """Of two concurrent resumes, exactly one is accepted; the other is 409."""
        run_id = interrupted(url)
        approve = {"tool_call_id": "call_1", "decision": "approve"}
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: decide(url, run_id, approve), range(2)))
        assert sorted(a.status_code for a in answers) == [202, 409]
        records = [json.loads(e["data"]) for e in events(url, run_id)]
        ran = [r for r in records if r["event"] == "on_tool_execution_completed"]
        assert len(ran) == 1

    def test_a_second_resume_says_the_run_is_being_resumed(self) -> None:
        """While a resume runs, another is refused as a duplicate decision."""
        slow = threading.Event()
        with serving(create_app(agent=gated_blocking_agent(slow))) as base:
            run_id = interrupted(base)
            approve = {"tool_call_id": "call_1", "decision": "approve"}
            assert decide(base, run_id, approve).status_code == 202
            wait_state(base, run_id, "resuming")
            answer = decide(base, run_id, approve)
            slow.set()
        assert answer.status_code == 409
        assert "already being resumed" in answer.json()["error"]

    @pytest.mark.parametrize(
        ("decisions", "error"),
        [
            (
                [{"tool_call_id": "call_9", "decision": "approve"}],
                "'call_9' is not waiting",
            ),
            (
                [
                    {"tool_call_id": "call_1", "decision": "approve"},
                    {"tool_call_id": "call_1", "decision": "reject"},
                ],
                "given more than once",
            ),
        ],
    )
    def test_decisions_that_match_no_waiting_call_are_422(
        self, url: str, decisions: list[dict[str, Any]], error: str
    ) -> None:
        """Decisions must name the calls that wait, once each; the run still waits."""
        run_id = interrupted(url)
        answer = decide(url, run_id, *decisions)
        assert answer.status_code == 422
        assert error in answer.json()["error"]
        approve = {"tool_call_id": "call_1", "decision": "approve"}
        assert decide(url, run_id, approve).status_code == 202

    @pytest.mark.parametrize(
        ("body", "error"),
        [
            ({}, '{"decisions": [...]}'),
            ([], '{"decisions": [...]}'),
            ({"decisions": []}, "non-empty list"),
            ({"decisions": ["approve"]}, "decisions[0] must be an object"),
            ({"decisions": [{"decision": "approve"}]}, "tool_call_id must be"),
            (
                {"decisions": [{"tool_call_id": "c", "decision": "approve", "x": 1}]},
                "unknown keys: x",
            ),
            ({"decisions": [{"tool_call_id": "c", "decision": "maybe"}]}, "must be"),
            (
                {"decisions": [{"tool_call_id": "c", "decision": "edit"}]},
                "'arguments'",
            ),
            (
                {
                    "decisions": [
                        {"tool_call_id": "c", "decision": "approve", "arguments": {}}
                    ]
                },
                "must be",
            ),
            (
                {
                    "decisions": [
                        {"tool_call_id": "c", "decision": "reject", "reason": 1}
                    ]
                },
                "reason must be a string",
            ),
        ],
    )
    def test_a_malformed_body_is_400(self, url: str, body: object, error: str) -> None:
        """The body is validated before anything is looked up, with a clear message."""
        answer = httpx.post(f"{url}runs/{'0' * 32}/decisions", json=body)
        assert answer.status_code == 400
        assert error in answer.json()["error"]

    def test_a_body_over_the_cap_is_413(self, url: str) -> None:
        """Decisions are capped like every body."""
        run_id = interrupted(url)
        reason = "x" * MAX_BODY_BYTES
        body = {
            "decisions": [
                {"tool_call_id": "call_1", "decision": "reject", "reason": reason}
            ]
        }
        answer = httpx.post(f"{url}runs/{run_id}/decisions", json=body)
        assert answer.status_code == 413


def gated_blocking_agent(gate: threading.Event) -> Any:
    """The demo's review gate in front of a tool that waits until ``gate`` is set."""

    async def wait(arguments: Any, context: ToolContext) -> str:
        while not gate.is_set():
            await asyncio.sleep(0.01)
        return "done"

    def agent(prompt: str) -> LLMChain:
        chain: LLMChain = agent_of(weather_turns())(prompt)
        return attrs.evolve(chain, tools=[Tool("get_weather", wait)])

    return agent
