"""``langhooks.integrations.mcp``: a real MCP server's tools in ``LLMChain``, over
in-process memory streams and a stdio subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._services import ci

try:
    import anyio
    import pydantic
    from anyio.from_thread import start_blocking_portal
    from mcp import Client, ClientSession, MCPError, StdioServerParameters
    from mcp import types as mcp_types
    from mcp.client.session import ClientRequestContext
    from mcp.client.stdio import stdio_client
except ImportError:  # pragma: no cover - the dev extra installs mcp
    if ci():
        raise
    pytest.skip(
        "the MCP SDK is not installed: pip install 'langhooks[mcp]'",
        allow_module_level=True,
    )

from langhooks import (
    LangHooksError,
    Message,
    ToolCall,
    ToolContext,
    ToolProgress,
    ToolResult,
)
from langhooks.chain import Decision, LLMChain, Tool
from langhooks.events import EventRecorder, read_events, replay_events
from langhooks.integrations._mcp._results import classified
from langhooks.integrations.mcp import (
    ELICITATION_KEY,
    amcp_tools,
    answer_elicitation,
    elicitation_callback,
    logging_callback,
    mcp_tools,
)
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler

from . import _mcp_server
from ._mcp_server import PIXEL, SEEN, STARTED, paged, server

ROOT = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def in_memory(mode: str = "legacy") -> AsyncIterator[ClientSession]:
    """A session with the test server, in this process over memory streams
    ("legacy": the 2025-11-25 handshake; "auto": 2026-07-28)."""
    async with Client(
        server,
        mode=mode,
        elicitation_callback=elicitation_callback,
        logging_callback=logging_callback,
    ) as client:
        yield client.session


def stdio_parameters() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tests.integrations._mcp_server"], cwd=ROOT
    )


@contextlib.asynccontextmanager
async def over_stdio(errors: Path) -> AsyncIterator[ClientSession]:
    """A session with the test server running as a subprocess, over stdio."""
    with errors.open("w") as errlog:
        async with (
            stdio_client(stdio_parameters(), errlog=errlog) as (read, write),
            ClientSession(
                read,
                write,
                elicitation_callback=elicitation_callback,
                logging_callback=logging_callback,
            ) as session,
        ):
            await session.initialize()
            yield session


def calling(name: str, call_id: str = "call_1", **arguments: Any) -> ScriptedTurn:
    """A turn calling ``name`` with keyword ``arguments``."""
    return answering(name, arguments, call_id)


def answering(
    name: str, arguments: dict[str, Any], call_id: str = "call_1"
) -> ScriptedTurn:
    """A turn calling ``name`` with ``arguments`` as they are."""
    return ScriptedTurn(
        tool_calls=[ToolCall(call_id=call_id, name=name, arguments=arguments)]
    )


def chain_of(tools: list[Tool], *turns: ScriptedTurn, **options: Any) -> LLMChain:
    """A chain whose model calls ``turns`` then answers "Done."."""
    return LLMChain(
        ScriptedChatModel([*turns, ScriptedTurn(text="Done.")]),
        tools=tools,
        **options,
    ).add_message(Message.user("Go."))


def progress_of(recording: RecordingChainHandler) -> list[ToolProgress]:
    return [args[2] for args in recording.of("on_tool_progress")]


FIVE = [ToolProgress(step, 5, f"step {step}") for step in range(1, 6)]


class TestListing:
    async def test_tools_carry_the_servers_schema(self) -> None:
        """Each tool has the server's name, title, description and input schema."""
        async with in_memory() as session:
            tools = {tool.name: tool for tool in await amcp_tools(session)}
        assert set(tools) == {
            "count",
            "fail",
            "weather",
            "picture",
            "greet",
            "wait",
            "die",
            "attachments",
            "register",
        }
        count = tools["count"]
        assert count.description == "Count to n, reporting each step."
        assert count.display_text == "Count"
        assert count.parameters_schema is not None
        assert count.parameters_schema["required"] == ["n"]
        assert count.is_async

    async def test_include(self) -> None:
        """include keeps the named tools; an unknown name fails naming the listed."""
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["weather", "count"])
            assert [tool.name for tool in tools] == ["count", "weather"]
            with pytest.raises(ValueError, match="lists no tool \\['nope'\\]"):
                await amcp_tools(session, include=["nope"])
            with pytest.raises(TypeError, match="got the str"):
                await amcp_tools(session, include="count")

    async def test_names_a_provider_refuses(self) -> None:
        """A server name with other characters is called with them replaced by
        "_"; two that would collide are refused."""
        from mcp.server.mcpserver import MCPServer

        dotted = MCPServer("dotted")

        @dotted.tool(name="files.read")
        def read() -> str:
            return "contents"

        @dotted.tool(name="files/read")
        def read_too() -> str:
            return "contents"

        async with Client(dotted, mode="legacy") as client:
            (tool,) = await amcp_tools(client.session, include=["files.read"])
            assert tool.name == "files_read"
            result = await chain_of([tool], calling("files_read")).arun()
            assert result.chain.messages[2].tool_results[0].text == "contents"
            with pytest.raises(ValueError, match="share the names \\['files_read'\\]"):
                await amcp_tools(client.session)

    async def test_pages(self) -> None:
        """Every page of the listing is read."""
        async with Client(paged, mode="legacy") as client:
            tools = await amcp_tools(client.session)
            names = [tool.name for tool in tools]
            assert names == ["first", "second", "poll", "forever", "sample"]
            result = await chain_of(tools, calling("second")).arun()
        (answer,) = result.chain.messages[2].tool_results
        assert answer.processed_content == {"tool": "second"}
        assert answer.text == '{"tool": "second"}'

    async def test_a_closed_session(self) -> None:
        """Listing on a closed session is a classified connection error."""
        async with in_memory() as session:
            pass
        with pytest.raises(LangHooksError) as caught:
            await amcp_tools(session)
        assert caught.value.type in {"connection", "protocol_error"}


class TestCalls:
    async def test_progress_in_order_live_and_replayed(self, tmp_path: Path) -> None:
        """Five progress notifications reach a handler in order, between the
        call's start and its result, and a recording replays them."""
        recording = RecordingChainHandler()
        path = tmp_path / "run.jsonl"
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["count"])
            with EventRecorder(path) as recorder:
                chain = chain_of(
                    tools, calling("count", n=5), callbacks=[recording, recorder]
                )
                result = await chain.arun()
        assert result.status == "ok"
        assert progress_of(recording) == FIVE
        names = recording.names
        first = names.index("on_tool_progress")
        assert names[first - 1] == "on_tool_pre_execution"
        assert names[first + 5] == "on_tool_execution_completed"
        assert result.chain.messages[2].tool_results[0].text == "counted to 5"
        replayed = RecordingChainHandler()
        replay_events(read_events(path), replayed)
        assert progress_of(replayed) == FIVE

    async def test_a_failing_tool(self) -> None:
        """A tool result with isError is a failed call the model reads; the run
        goes on."""
        recording = RecordingChainHandler()
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["fail"])
            chain = chain_of(tools, calling("fail", reason="x"), callbacks=[recording])
            result = await chain.arun()
        assert result.status == "ok"
        ((_, _, failed),) = recording.of("on_tool_execution_failed")
        assert failed.is_error
        assert failed.text == "Error executing tool fail: cannot: x"
        assert recording.of("on_tool_execution_exception") == []

    async def test_structured_content_and_images(self) -> None:
        """Structured content is processed_content (and the text when there is no
        other); an image is an image_url data URL."""
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["weather", "picture"])
            chain = chain_of(
                tools, calling("weather", city="Nice"), calling("picture", "call_2")
            )
            result = await chain.arun()
        weather = result.chain.messages[2].tool_results[0]
        assert weather.processed_content == {"city": "Nice", "temperature": 18}
        assert '"temperature": 18' in weather.text
        picture = result.chain.messages[4].tool_results[0]
        assert [(p.type, p.content) for p in picture.content] == [
            ("text", "a pixel"),
            ("image_url", f"data:image/png;base64,{PIXEL}"),
        ]

    async def test_audio_links_and_resources(self) -> None:
        """Audio and a binary resource are file data URLs, a link its URI, a text
        resource its text."""
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["attachments"])
            result = await chain_of(tools, calling("attachments")).arun()
        parts = result.chain.messages[2].tool_results[0].content
        assert [(p.type, p.content) for p in parts] == [
            ("file", f"data:audio/wav;base64,{PIXEL}"),
            ("file", "file:///doc.txt"),
            ("text", "hello"),
            ("file", f"data:application/octet-stream;base64,{PIXEL}"),
        ]

    async def test_log_messages_go_to_logging(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The server's log messages reach Python logging as langhooks.mcp."""
        caplog.set_level(logging.DEBUG, logger="langhooks.mcp")
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["count"])
            await chain_of(tools, calling("count", n=1)).arun()
        (record,) = [r for r in caplog.records if r.name.startswith("langhooks.mcp")]
        assert (record.levelname, record.getMessage()) == ("INFO", "counted to 1")
        assert record.__dict__["mcp_level"] == "info"

    async def test_cancelling_the_run_cancels_the_request(self) -> None:
        """Cancelling arun() while the server works cancels the MCP request: the
        server's handler is cancelled (notifications/cancelled)."""
        SEEN.clear()
        STARTED[:] = [anyio.Event()]
        try:
            async with in_memory() as session:
                tools = await amcp_tools(session, include=["wait"])
                run = asyncio.ensure_future(chain_of(tools, calling("wait")).arun())
                await STARTED[0].wait()
                run.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await run
                with anyio.fail_after(10):
                    while "cancelled" not in SEEN:
                        await anyio.sleep(0.01)
        finally:
            STARTED.clear()
        assert SEEN == ["cancelled"]


class TestStdio:
    async def test_progress_over_stdio(self, tmp_path: Path) -> None:
        """A subprocess server's progress arrives in order too."""
        recording = RecordingChainHandler()
        async with over_stdio(tmp_path / "server.log") as session:
            tools = await amcp_tools(session, include=["count"])
            chain = chain_of(tools, calling("count", n=5), callbacks=[recording])
            assert (await chain.arun()).status == "ok"
        assert progress_of(recording) == FIVE

    async def test_a_server_that_dies_mid_call(self, tmp_path: Path) -> None:
        """A server that exits during a call is a classified connection error on
        the call; the run goes on to the model's answer."""
        recording = RecordingChainHandler()
        async with over_stdio(tmp_path / "server.log") as session:
            tools = await amcp_tools(session, include=["die"])
            chain = chain_of(tools, calling("die"), callbacks=[recording])
            result = await chain.arun()
        assert result.status == "ok"
        assert result.chain.messages[-1].text == "Done."
        ((_, _, error),) = recording.of("on_tool_execution_exception")
        assert isinstance(error, LangHooksError)
        assert error.type == "connection"
        assert error.retryable
        assert isinstance(error.original, MCPError)

    def test_an_elicitation_in_a_sync_run(self, tmp_path: Path) -> None:
        """Over stdio, through a portal, under run(): the question interrupts the
        run and the human's answer resumes the open request."""
        with (
            (tmp_path / "server.log").open("w") as errlog,
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(
                stdio_client(stdio_parameters(), errlog=errlog)
            ) as (read, write),
            portal.wrap_async_context_manager(
                ClientSession(read, write, elicitation_callback=elicitation_callback)
            ) as session,
        ):
            portal.call(session.initialize)
            tools = mcp_tools(session, portal=portal, include=["greet"])
            first = chain_of(tools, calling("greet")).run()
            assert first.status == "interrupted"
            (waiting,) = first.chain.pending_tool_calls
            decision = answer_elicitation(
                waiting, first.interrupt_data, {"name": "Flo", "age": 5}
            )
            resumed = first.chain.execute_tool_calls_with_decisions(
                [waiting], [decision]
            )
        (greeting,) = resumed.chain.messages[-1].tool_results
        assert greeting.text == "Hello Flo, 5"

    def test_sync_tools_through_a_portal(self, tmp_path: Path) -> None:
        """mcp_tools gives sync tools for run(): the request runs on the portal's
        loop, the progress is heard live on the run's thread."""
        recording = RecordingChainHandler()
        with (
            (tmp_path / "server.log").open("w") as errlog,
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(
                stdio_client(stdio_parameters(), errlog=errlog)
            ) as (read, write),
            portal.wrap_async_context_manager(ClientSession(read, write)) as session,
        ):
            portal.call(session.initialize)
            tools = mcp_tools(session, portal=portal, include=["count"])
            assert not tools[0].is_async
            chain = chain_of(tools, calling("count", n=5), callbacks=[recording])
            assert chain.run().status == "ok"
        assert progress_of(recording) == FIVE
        threads = {
            thread
            for (name, _), thread in zip(
                recording.events, recording.threads, strict=True
            )
            if name == "on_tool_progress"
        }
        assert threads == {threading.get_ident()}


NAME_SCHEMA = {
    "properties": {
        "name": {"title": "Name", "type": "string"},
        "age": {"title": "Age", "type": "integer"},
    },
    "required": ["name", "age"],
    "title": "Name",
    "type": "object",
}


class TestElicitation:
    async def test_answered_by_a_human_in_a_resumed_run(self) -> None:
        """The server's question interrupts the run with its message and schema;
        the human's answer, checked against the schema, resumes the same call."""
        recording = RecordingChainHandler()
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["greet"])
            chain = chain_of(tools, calling("greet"), callbacks=[recording])
            first = await chain.arun()
            assert first.status == "interrupted"
            data = first.interrupt_data
            assert data["kind"] == "mcp_elicitation"
            assert data["message"] == "Who are you?"
            assert data["requested_schema"] == NAME_SCHEMA
            assert data["tool_call_id"] == "call_1"
            (waiting,) = first.chain.pending_tool_calls
            with pytest.raises(ValueError, match="does not fit the requested schema"):
                answer_elicitation(waiting, data, {"name": "Ada"})
            decision = answer_elicitation(waiting, data, {"name": "Ada", "age": 36})
            assert decision.kind == "edit"
            resumed = await first.chain.aexecute_tool_calls_with_decisions(
                [waiting], [decision]
            )
            assert resumed.status == "ok"
            (greeting,) = resumed.chain.messages[-1].tool_results
            assert greeting.text == "Hello Ada, 36"
            done = await resumed.chain.arun()
        assert done.chain.messages[-1].text == "Done."
        assert "on_tool_interrupted" in recording.names

    async def test_two_runs_with_the_same_call_id(self) -> None:
        """Parked calls are told apart by run: two runs whose calls share an id
        each get their own answer."""
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["greet"])
            firsts = [await chain_of(tools, calling("greet")).arun() for _ in "ab"]
            texts = []
            for first, name in zip(firsts, ["Ann", "Bob"], strict=True):
                assert first.status == "interrupted"
                (waiting,) = first.chain.pending_tool_calls
                answer = {"name": name, "age": 1}
                decision = answer_elicitation(waiting, first.interrupt_data, answer)
                resumed = await first.chain.aexecute_tool_calls_with_decisions(
                    [waiting], [decision]
                )
                texts.append(resumed.chain.messages[-1].tool_results[0].text)
        assert texts == ["Hello Ann, 1", "Hello Bob, 1"]

    async def test_a_tool_called_outside_a_run(self) -> None:
        """A tool function called directly (no chain) runs the server's tool."""
        async with in_memory() as session:
            (tool,) = await amcp_tools(session, include=["count"])
            call = ToolCall(call_id="c", name="count", arguments={"n": 2})
            answer = tool.function(call.arguments, ToolContext(call=call))
            assert inspect.isawaitable(answer)
            result = await answer
        assert isinstance(result, ToolResult)
        assert result.text == "counted to 2"

    async def test_declined(self) -> None:
        """A declined question is the server's to answer."""
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["greet"])
            first = await chain_of(tools, calling("greet")).arun()
            assert first.status == "interrupted"
            (waiting,) = first.chain.pending_tool_calls
            decision = answer_elicitation(
                waiting, first.interrupt_data, action="decline"
            )
            resumed = await first.chain.aexecute_tool_calls_with_decisions(
                [waiting], [decision]
            )
        (result,) = resumed.chain.messages[-1].tool_results
        assert result.text == "no greeting (decline)"

    async def test_resumed_elsewhere_after_the_timeout(self) -> None:
        """Once the question timed out (the request is cancelled), or in another
        process, the resume starts the call again and the same question is
        answered with the human's answer, without asking again."""
        async with in_memory() as session:
            tools = await amcp_tools(
                session, include=["greet"], elicitation_timeout=0.01
            )
            first = await chain_of(tools, calling("greet")).arun()
            assert first.status == "interrupted"
            state = first.chain.to_state()
            with anyio.fail_after(10):  # the timeout frees the parked call
                while _parked(session):
                    await anyio.sleep(0.01)
            restored = LLMChain.from_state(state, first.chain.model, tools=tools)
            (waiting,) = restored.pending_tool_calls
            decision = answer_elicitation(
                waiting, first.interrupt_data, {"name": "Bo", "age": 7}
            )
            resumed = await restored.aexecute_tool_calls_with_decisions(
                [waiting], [decision]
            )
        (greeting,) = resumed.chain.messages[-1].tool_results
        assert greeting.text == "Hello Bo, 7"

    async def test_prepared_answers_are_matched_by_question(self) -> None:
        """A call made with answers answers the server's question with the one
        given for that question (message and schema), not another."""
        other: dict[str, Any] = {
            "message": "Where?",
            "requested_schema": NAME_SCHEMA,
            "action": "decline",
            "content": None,
        }
        mine = {**other, "message": "Who are you?", "action": "accept"}
        mine["content"] = {"name": "Cy", "age": 3}
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["greet"])
            turn = answering("greet", {ELICITATION_KEY: [other, mine]})
            result = await chain_of(tools, turn).arun()
        assert result.chain.messages[2].tool_results[0].text == "Hello Cy, 3"

    async def test_approving_without_an_answer_cancels_the_question(self) -> None:
        """Approving the call without answering tells the server "cancel"."""
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["greet"])
            first = await chain_of(tools, calling("greet")).arun()
            (waiting,) = first.chain.pending_tool_calls
            resumed = await first.chain.aexecute_tool_calls_with_decisions(
                [waiting], [Decision.approve()]
            )
        (result,) = resumed.chain.messages[-1].tool_results
        assert result.text == "no greeting (cancel)"

    def test_answer_checks(self) -> None:
        """answer_elicitation refuses another interrupt and content that does not
        go with the action."""
        call = ToolCall(call_id="c", name="greet", arguments={"a": 1})
        data = {
            "kind": "mcp_elicitation",
            "message": "Who?",
            "requested_schema": NAME_SCHEMA,
            "answers": [],
        }
        with pytest.raises(ValueError, match="not an MCP server's question"):
            answer_elicitation(call, {"kind": "review"}, {"name": "x"})
        with pytest.raises(TypeError, match="content goes with action 'accept'"):
            answer_elicitation(call, data)
        with pytest.raises(TypeError, match="content goes with action 'accept'"):
            answer_elicitation(call, data, {"name": "x", "age": 1}, action="cancel")
        with pytest.raises(ValueError, match="action must be"):
            answer_elicitation(call, data, action="maybe")  # type: ignore[arg-type]
        decision = answer_elicitation(call, data, action="cancel")
        assert decision.arguments is not None
        assert decision.arguments["a"] == 1
        assert decision.arguments[ELICITATION_KEY] == [
            {
                "message": "Who?",
                "requested_schema": NAME_SCHEMA,
                "action": "cancel",
                "content": None,
            }
        ]

    async def test_malformed_answers_fail_the_call(self) -> None:
        """Arguments whose answers are not answer_elicitation's fail the call."""
        async with in_memory() as session:
            tools = await amcp_tools(session, include=["greet"])
            for bad in ("yes", [{"action": "maybe"}]):
                turn = answering("greet", {ELICITATION_KEY: bad})
                recording = RecordingChainHandler()
                await chain_of(tools, turn, callbacks=[recording]).arun()
                ((_, _, error),) = recording.of("on_tool_execution_exception")
                assert isinstance(error, TypeError)
                assert ELICITATION_KEY in str(error)

    async def test_questions_nobody_can_answer(self) -> None:
        """A URL-mode question, or one asked while no single call of ours runs, is
        answered with an error."""
        async with in_memory() as session:
            context = ClientRequestContext(session=session, request_id=1)
            url = mcp_types.ElicitRequestURLParams(
                message="Log in", url="https://example.com", elicitation_id="e"
            )
            answer = await elicitation_callback(context, url)
            assert isinstance(answer, mcp_types.ErrorData)
            assert "form elicitations only" in answer.message
            form = mcp_types.ElicitRequestFormParams(
                message="Who?", requested_schema=NAME_SCHEMA
            )
            answer = await elicitation_callback(context, form)
            assert isinstance(answer, mcp_types.ErrorData)
            assert "0 langhooks tool calls are running" in answer.message


class TestInputRequired:
    """On a 2026-07-28 session a server asks by returning InputRequiredResult and
    the request is sent again with the answers."""

    @pytest.mark.parametrize("mode", ["legacy", "auto"])
    async def test_a_question_answered_in_a_resumed_run(self, mode: str) -> None:
        """A resolver's question interrupts the run on either protocol; the
        human's answer resumes it."""
        async with in_memory(mode) as session:
            tools = await amcp_tools(session, include=["register"])
            first = await chain_of(tools, calling("register")).arun()
            assert first.status == "interrupted"
            assert first.interrupt_data["message"] == "Who are you?"
            (waiting,) = first.chain.pending_tool_calls
            decision = answer_elicitation(
                waiting, first.interrupt_data, {"name": "Di", "age": 9}
            )
            resumed = await first.chain.aexecute_tool_calls_with_decisions(
                [waiting], [decision]
            )
        (result,) = resumed.chain.messages[-1].tool_results
        assert result.text == "Registered Di, 9"

    async def test_resumed_in_another_process(self) -> None:
        """With no call parked (another process, a new session), the request is
        sent again and the question answered with the human's answer."""
        async with in_memory("auto") as session:
            tools = await amcp_tools(session, include=["register"])
            first = await chain_of(tools, calling("register")).arun()
            assert first.status == "interrupted"
            state, data = first.chain.to_state(), first.interrupt_data
        async with in_memory("auto") as session:
            tools = await amcp_tools(session, include=["register"])
            restored = LLMChain.from_state(state, first.chain.model, tools=tools)
            (waiting,) = restored.pending_tool_calls
            decision = answer_elicitation(waiting, data, {"name": "Ed", "age": 1})
            resumed = await restored.aexecute_tool_calls_with_decisions(
                [waiting], [decision]
            )
        (result,) = resumed.chain.messages[-1].tool_results
        assert result.text == "Registered Ed, 1"

    async def test_still_working_then_done(self) -> None:
        """A request-state-only answer (still working) is polled again."""
        async with Client(paged, mode="auto") as client:
            tools = await amcp_tools(client.session, include=["poll"])
            result = await chain_of(tools, calling("poll")).arun()
        (answer,) = result.chain.messages[2].tool_results
        assert answer.processed_content == {"tool": "poll"}

    async def test_never_done_or_refused(self) -> None:
        """A server that keeps asking gives up after ten rounds; an input the
        session refuses (no sampling) fails the call; both classified."""
        recording = RecordingChainHandler()
        async with Client(paged, mode="auto") as client:
            tools = await amcp_tools(client.session, include=["forever", "sample"])
            chain = chain_of(
                tools,
                calling("forever"),
                calling("sample", "call_2"),
                callbacks=[recording],
            )
            assert (await chain.arun()).status == "ok"
        errors = [args[2] for args in recording.of("on_tool_execution_exception")]
        assert [(e.type, "after 10 rounds" in e.message) for e in errors] == [
            ("protocol_error", True),
            ("invalid_request", False),
        ]


def _parked(session: ClientSession) -> bool:
    from langhooks.integrations._mcp import _flights

    return bool(_flights._PARKED.get(session))


class TestClassified:
    def test_json_rpc_errors(self) -> None:
        """Each JSON-RPC error code is the matching error type."""
        from mcp.types import jsonrpc

        cases = {
            jsonrpc.CONNECTION_CLOSED: "connection",
            jsonrpc.REQUEST_TIMEOUT: "timeout",
            jsonrpc.INVALID_PARAMS: "invalid_request",
            jsonrpc.INTERNAL_ERROR: "protocol_error",
        }
        for code, kind in cases.items():
            error = classified(MCPError(code, "why"), "t")
            assert (error.type, error.message) == (
                kind,
                f"the MCP tool 't' failed: why (JSON-RPC error {code})",
            )

    def test_other_failures(self) -> None:
        """A closed stream is "connection"; a malformed answer or anything else
        "protocol_error"; a LangHooksError stays as it is."""
        assert classified(anyio.ClosedResourceError(), "t").type == "connection"
        with pytest.raises(pydantic.ValidationError) as invalid:
            mcp_types.CallToolResult.model_validate({"content": 3})
        assert classified(invalid.value, "t").type == "protocol_error"
        assert classified(RuntimeError("odd"), "t").message == (
            "the MCP tool 't' failed: RuntimeError: odd"
        )
        same = LangHooksError("timeout", "slow")
        assert classified(same, "t") is same


def test_the_test_server_module_runs_as_a_script() -> None:
    """The subprocess server's module is importable (it runs itself with -m)."""
    assert _mcp_server.server is server


@pytest.fixture(autouse=True)
def _no_leftover_parked() -> Iterator[None]:
    yield
    from langhooks.integrations._mcp import _flights

    _flights._PARKED.clear()
    _flights._RUNNING.clear()
