"""``langhooks runs approve|reject``: deciding a waiting call from the command line,
and the PostgreSQL schema a store's tables are not in."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._store_agent import (
    ANSWER,
    TOOLS,
    answer_model,
    log_lines,
    starts,
    waiting_chain,
)
from .test_cli_runs import langhooks, options, shared
from .test_run_stores import Place, place

__all__ = ["shared"]  # the fixture, shared with test_cli_runs

AGENT = "tests.integrations._store_agent:resume_agent"


class TestDecide:
    def test_approve_resumes_the_run(self, shared: Place, tmp_path: Path) -> None:
        """approve runs the call once and the run goes on to its answer; the run
        then waits no more."""
        store = shared.make()
        log = tmp_path / "log"
        run_id = store.save(waiting_chain(log))
        status, out, err = langhooks(
            "runs", "approve", run_id, "call_1", *options(shared), "--agent", AGENT
        )
        assert (status, err) == (0, "")
        assert out.splitlines() == [
            f"run {run_id}: call_1 approved",
            f"the run ended: {ANSWER}",
        ]
        assert starts(log) == ["call_1"]
        assert store.pending() == []

    def test_reject_tells_the_model_the_message(
        self, shared: Place, tmp_path: Path
    ) -> None:
        """reject runs nothing, and the model is told --message instead."""
        store = shared.make()
        log = tmp_path / "log"
        run_id = store.save(waiting_chain(log))
        status, out, err = langhooks(
            "runs",
            "reject",
            run_id,
            "call_1",
            *options(shared),
            "--agent",
            AGENT,
            "--message",
            "Not this week.",
        )
        assert (status, err) == (0, "")
        assert out.splitlines()[0] == f"run {run_id}: call_1 rejected"
        assert log_lines(log) == []
        chain = store.load(run_id, answer_model(), tools=TOOLS)
        results = [r for m in chain.messages for r in m.tool_results]
        assert [r.text for r in results] == ["Not this week."]

    def test_one_call_of_several(self, tmp_path: Path) -> None:
        """Deciding one call of two leaves the run waiting for the other."""
        with place("postgres") as here:
            store = here.make()
            run_id = store.save(waiting_chain(tmp_path / "log", calls=2))
            status, out, _ = langhooks(
                "runs", "reject", run_id, "call_2", *options(here), "--agent", AGENT
            )
            assert status == 0
            assert out.splitlines()[-1] == "the run waits again: call_1"
            (waiting,) = store.pending()
            assert waiting.run_id == run_id
            assert [call.call_id for call in waiting.calls] == ["call_1"]

    def test_a_resume_that_fails_is_exit_1(self, tmp_path: Path) -> None:
        """The call runs, then the run fails (its model has no answer): the
        command says why and exits 1."""
        with place("postgres") as here:
            store = here.make()
            log = tmp_path / "log"
            run_id = store.save(waiting_chain(log))
            status, out, _ = langhooks(
                "runs",
                "approve",
                run_id,
                "call_1",
                *options(here),
                "--agent",
                "tests.integrations._store_agent:silent_agent",
            )
        assert status == 1
        assert out.splitlines()[-1].startswith("the run failed: ")
        assert starts(log) == ["call_1"]

    def test_a_call_that_does_not_wait_is_exit_1(
        self, shared: Place, tmp_path: Path
    ) -> None:
        """A call id the run does not wait on is one line and exit 1; nothing
        runs."""
        store = shared.make()
        log = tmp_path / "log"
        run_id = store.save(waiting_chain(log))
        status, out, err = langhooks(
            "runs", "approve", run_id, "call_9", *options(shared), "--agent", AGENT
        )
        assert (status, out) == (1, "")
        assert err.count("\n") == 1
        assert "do not wait for a decision" in err
        assert log_lines(log) == []

    @pytest.mark.parametrize(
        ("agent", "message"),
        [
            (None, "--agent MODULE:NAME is required"),
            ("nocolon", "--agent takes MODULE:NAME"),
            ("no_such_module_here:x", "No module named"),
            ("tests.integrations._store_agent:nope", "has no attribute 'nope'"),
            ("tests.integrations._store_agent:ANSWER", "is a str: name an LLMChain"),
        ],
    )
    def test_agent_usage_errors(self, agent: str | None, message: str) -> None:
        """A missing or wrong --agent is one line and exit 2, before the store is
        opened."""
        given = [] if agent is None else ["--agent", agent]
        status, out, err = langhooks(
            "runs", "approve", "r", "c", "--store", "redis://127.0.0.1:1", *given
        )
        assert (status, out) == (2, "")
        assert err.count("\n") == 1
        assert message in err


class TestSchema:
    def test_tables_in_another_schema_point_at_the_option(self) -> None:
        """Tables set up in another schema than --schema names: the message says
        to pass --schema, for every action."""
        with place("postgres") as here:
            here.make()  # sets the store up in here.namespace
            for argv in (
                ["pending"],
                ["show", "r"],
                ["approve", "r", "c", "--agent", AGENT],
            ):
                status, out, err = langhooks(
                    "runs", *argv, "--store", here.url, "--schema", "not_there"
                )
                assert (status, out) == (1, "")
                assert err.count("\n") == 1
                assert "not in schema 'not_there': pass --schema SCHEMA" in err
