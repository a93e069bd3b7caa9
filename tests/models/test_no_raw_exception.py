"""No raw exception escapes a model's stream, whatever raises underneath.

Failures are injected below each model: an HTTP transport that raises before
answering or after the first chunk, a wrapper around the SDK's ``create`` that
raises (or returns something unusable, or fails to close), a bug in the code a
model runs, and exception classes nobody here wrote (one whose ``str()`` raises).
Every time, ``on_error`` is called exactly once with a classified
``LangHooksError``, that same error is raised, and the original is its
``__cause__`` (or further down the chain, when an SDK wrapped it first).
"""

from __future__ import annotations

import logging
import types
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Final

import httpx
import httpx2
import pytest
from typing_extensions import override

from langhooks import LangHooksError, Message
from langhooks.models import (
    AnthropicChatModel,
    ChatRequest,
    OllamaChatModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ScriptedChatModel,
    ScriptedTurn,
    replay_stream,
)

from . import AsyncRecorder, Recorder, local_fixture
from ._server import FixtureServer, stream_reply

REQUEST: Final = ChatRequest([Message.user("Weather in Paris?")])

# Each provider model with a recorded answer it streams.
BODIES: Final = {
    "openai-chat": "openai_chat_tools.sse",
    "openai-responses": "openai_responses.sse",
    "anthropic": "anthropic_thinking_tool.sse",
    "ollama": "ollama_chat.ndjson",
}
SDK_MODELS: Final = ("openai-chat", "openai-responses", "anthropic")


class Boom(Exception):
    """An exception class from code nobody here wrote."""


class Unprintable(Exception):
    """An exception whose ``str()`` itself raises."""

    @override
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


def make(kind: str, server: FixtureServer) -> Any:
    """The model ``kind`` pointed at ``server``, its answer queued."""
    server.add(stream_reply(BODIES[kind]))
    if kind == "openai-chat":
        return OpenAIChatModel("gpt-4o", base_url=f"{server.url}/v1", api_key="k")
    if kind == "openai-responses":
        return OpenAIResponsesModel("gpt-5", base_url=f"{server.url}/v1", api_key="k")
    if kind == "anthropic":
        return AnthropicChatModel("claude", base_url=server.url, api_key="k")
    return OllamaChatModel("qwen3:8b", base_url=server.url)


def caused_by(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether an exception of ``kind`` is in ``error``'s chain of causes."""
    seen: BaseException | None = error.__cause__
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def assert_reported_once(
    recorder: Recorder | AsyncRecorder,
    raised: pytest.ExceptionInfo[LangHooksError],
    original: type[BaseException],
) -> LangHooksError:
    """``on_error`` got the raised error, once, with ``original`` as its cause."""
    error = raised.value
    assert type(error) is LangHooksError
    assert recorder.errors == [error]
    assert recorder.terminal_calls == [("error", error)]
    assert recorder.violations == []
    assert caused_by(error, original)
    return error


# --- an HTTP transport that raises ------------------------------------------------


class _BreakingStream(httpx.SyncByteStream, httpx2.SyncByteStream):
    """A response body that gives its first chunk, then raises ``error`` (a byte
    stream of either HTTP library the clients use)."""

    def __init__(self, inner: Any, error: BaseException) -> None:
        self._inner = inner
        self._error = error

    @override
    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            yield chunk
            raise self._error

    @override
    def close(self) -> None:
        self._inner.close()


class _AsyncBreakingStream(httpx.AsyncByteStream, httpx2.AsyncByteStream):
    """The async twin of ``_BreakingStream``."""

    def __init__(self, inner: Any, error: BaseException) -> None:
        self._inner = inner
        self._error = error

    @override
    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk
            raise self._error

    @override
    async def aclose(self) -> None:
        await self._inner.aclose()


class BreakingTransport:
    """Wraps a real transport: raises ``error`` before answering, or after the
    response's first chunk."""

    def __init__(self, inner: Any, error: BaseException, *, when: str) -> None:
        self._inner = inner
        self._error = error
        self._when = when

    def handle_request(self, request: Any) -> Any:
        if self._when == "before":
            raise self._error
        response = self._inner.handle_request(request)
        response.stream = _BreakingStream(response.stream, self._error)
        return response

    async def handle_async_request(self, request: Any) -> Any:
        if self._when == "before":
            raise self._error
        response = await self._inner.handle_async_request(request)
        response.stream = _AsyncBreakingStream(response.stream, self._error)
        return response

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __enter__(self) -> BreakingTransport:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._inner.__exit__(*exc_info)

    async def __aenter__(self) -> BreakingTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._inner.__aexit__(*exc_info)


def break_transport(model: Any, error: BaseException, when: str) -> None:
    """Put a ``BreakingTransport`` under ``model``'s HTTP clients."""
    if isinstance(model, OllamaChatModel):
        httpx = model._httpx

        def client(cls: Any) -> Callable[..., Any]:
            def build(**options: Any) -> Any:
                made = cls(**options)
                made._transport = BreakingTransport(made._transport, error, when=when)
                return made

            return build

        model._httpx = types.SimpleNamespace(
            Client=client(httpx.Client), AsyncClient=client(httpx.AsyncClient)
        )
        return
    for sdk_client in (model._client, model._async_client):
        http = sdk_client._client
        http._transport = BreakingTransport(http._transport, error, when=when)


KINDS: Final = (*SDK_MODELS, "ollama")


class TestTransportRaises:
    """A transport raising a foreign exception is one classified error."""

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("when", ["before", "after-first-chunk"])
    def test_sync(self, server: FixtureServer, kind: str, when: str) -> None:
        """stream(): on_error once, the error raised, the original its cause."""
        model = make(kind, server)
        break_transport(model, Boom("the transport broke"), when)
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model.stream(REQUEST, recorder)
        error = assert_reported_once(recorder, raised, Boom)
        assert error.type in ("connection", "stream_error")

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("when", ["before", "after-first-chunk"])
    async def test_async(self, server: FixtureServer, kind: str, when: str) -> None:
        """astream(): the same, with an async handler."""
        model = make(kind, server)
        break_transport(model, Boom("the transport broke"), when)
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model.astream(REQUEST, recorder)
        assert_reported_once(recorder, raised, Boom)

    @pytest.mark.parametrize("kind", KINDS)
    def test_unprintable_exception(self, server: FixtureServer, kind: str) -> None:
        """An exception whose str() raises is still reported, by its class name."""
        model = make(kind, server)
        break_transport(model, Unprintable(), "after-first-chunk")
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model.stream(REQUEST, recorder)
        error = assert_reported_once(recorder, raised, Unprintable)
        assert "Unprintable" in error.message


# --- code wrapping the SDK's create --------------------------------------------------


def resource(model: Any, client: Any) -> Any:
    """The SDK resource whose ``create`` the model streams from."""
    return model._resource(client)


def wrap_create(model: Any, wrap: Callable[[Callable[..., Any]], Any]) -> None:
    """Replace ``create`` on both clients' resources, as an instrumentation does."""
    for client in (model._client, model._async_client):
        target = resource(model, client)
        target.create = wrap(target.create)


class TestCreateWrapperRaises:
    """A wrapper around the SDK's create that raises is one classified error."""

    @pytest.mark.parametrize("kind", SDK_MODELS)
    def test_raises_before_calling(self, server: FixtureServer, kind: str) -> None:
        """The wrapper raises a foreign exception: a non-retryable stream_error."""
        model = make(kind, server)

        def wrap(create: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(**params: Any) -> Any:
                raise Boom("instrumentation bug")

            return wrapper

        wrap_create(model, wrap)
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model.stream(REQUEST, recorder)
        error = assert_reported_once(recorder, raised, Boom)
        assert error.type == "stream_error"
        assert error.retryable is False
        assert error.__cause__ is error.original
        assert "Boom: instrumentation bug" in error.message
        assert server.requests == []

    @pytest.mark.parametrize("kind", SDK_MODELS)
    async def test_async_raises_before_calling(
        self, server: FixtureServer, kind: str
    ) -> None:
        """The async client's wrapper too."""
        model = make(kind, server)

        def wrap(create: Callable[..., Any]) -> Callable[..., Any]:
            async def wrapper(**params: Any) -> Any:
                raise Boom("instrumentation bug")

            return wrapper

        wrap_create(model, wrap)
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model.astream(REQUEST, recorder)
        assert_reported_once(recorder, raised, Boom)

    @pytest.mark.parametrize("kind", SDK_MODELS)
    def test_returns_something_unreadable(
        self, server: FixtureServer, kind: str
    ) -> None:
        """A wrapper that hides the HTTP response: classified, and what it returned
        is still closed."""
        model = make(kind, server)
        closed: list[bool] = []

        class Opaque:
            def __init__(self, stream: Any) -> None:
                self._stream = stream

            def close(self) -> None:
                closed.append(True)
                self._stream.close()

        wrap_create(model, lambda create: lambda **p: Opaque(create(**p)))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model.stream(REQUEST, recorder)
        error = assert_reported_once(recorder, raised, TypeError)
        assert "Opaque" in error.message
        assert closed == [True]

    @pytest.mark.parametrize("kind", SDK_MODELS)
    async def test_async_returns_something_unreadable(
        self, server: FixtureServer, kind: str
    ) -> None:
        """The async twin: a close() that returns an awaitable is awaited."""
        model = make(kind, server)
        closed: list[bool] = []

        class Opaque:
            def __init__(self, stream: Any) -> None:
                self._stream = stream

            async def close(self) -> None:
                closed.append(True)
                await self._stream.close()

        def wrap(create: Callable[..., Any]) -> Callable[..., Any]:
            async def wrapper(**params: Any) -> Any:
                return Opaque(await create(**params))

            return wrapper

        wrap_create(model, wrap)
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model.astream(REQUEST, recorder)
        assert_reported_once(recorder, raised, TypeError)
        assert closed == [True]


class _Passing:
    """Hands the SDK stream's HTTP response on, as an instrumentation's wrapper
    does; how it closes is up to the subclass."""

    def __init__(self, stream: Any, log: list[str]) -> None:
        self._stream = stream
        self.log = log

    @property
    def response(self) -> Any:
        return self._stream.response


class SyncClose(_Passing):
    """close() is a plain method, even around an async stream (openai-v2's)."""

    def close(self) -> None:
        self.log.append("close")


class AsyncClose(_Passing):
    """close() returns an awaitable."""

    async def close(self) -> None:
        self.log.append("aclose")


class NoClose(_Passing):
    """Nothing to close but the response."""


class Exits(_Passing):
    """A context manager: its exit is how it closes (and ends its span)."""

    def __exit__(self, *exc_info: object) -> None:
        self.log.append("exit")

    async def __aexit__(self, *exc_info: object) -> None:
        self.log.append("aexit")


class TestClosingWhatCreateReturned:
    """What create returned is closed however it closes, then its response."""

    @pytest.mark.parametrize(
        ("wrapper", "expected"),
        [(SyncClose, ["close"]), (AsyncClose, []), (NoClose, []), (Exits, ["exit"])],
    )
    def test_sync(
        self, server: FixtureServer, wrapper: type[_Passing], expected: list[str]
    ) -> None:
        """stream() completes whatever the wrapper offers to close with (a
        coroutine a close() returns in sync code is closed unrun, never leaked)."""
        model = make("openai-chat", server)
        log: list[str] = []
        wrap_create(model, lambda create: lambda **p: wrapper(create(**p), log))
        recorder = Recorder()
        response = model.stream(REQUEST, recorder)
        assert response.message.status == "complete"
        assert log == expected
        assert recorder.errors == []

    @pytest.mark.parametrize(
        ("wrapper", "expected"),
        [
            (SyncClose, ["close"]),
            (AsyncClose, ["aclose"]),
            (NoClose, []),
            (Exits, ["aexit"]),
        ],
    )
    async def test_async(
        self, server: FixtureServer, wrapper: type[_Passing], expected: list[str]
    ) -> None:
        """astream() awaits close() only when it returns an awaitable."""
        model = make("openai-chat", server)
        log: list[str] = []

        def wrap(create: Callable[..., Any]) -> Callable[..., Any]:
            async def wrapped(**params: Any) -> Any:
                return wrapper(await create(**params), log)

            return wrapped

        wrap_create(model, wrap)
        recorder = AsyncRecorder()
        response = await model.astream(REQUEST, recorder)
        assert response.message.status == "complete"
        assert log == expected
        assert recorder.errors == []


class FailsToClose(_Passing):
    """Closing raises, after the stream completed."""

    def __exit__(self, *exc_info: object) -> None:
        raise Boom("close failed")


class TestFailureAfterCompletion:
    """A failure once the handler was told the stream completed is logged."""

    def test_close_fails(
        self, server: FixtureServer, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The complete response is returned; the failure is a logged warning."""
        model = make("openai-chat", server)
        wrap_create(model, lambda create: lambda **p: FailsToClose(create(**p), []))
        recorder = Recorder()
        with caplog.at_level(logging.WARNING, "langhooks.models"):
            response = model.stream(REQUEST, recorder)
        assert response.message.status == "complete"
        assert recorder.names[-1] == "complete_response"
        assert recorder.errors == []
        (record,) = caplog.records
        assert "closing it failed" in record.getMessage()
        assert record.exc_info is not None
        assert isinstance(record.exc_info[1], Boom)


# --- a bug in the code a model runs --------------------------------------------------


class TestCodeUnderTheModelRaises:
    """A bug below the model's stream (not the handler's) is a classified error."""

    def test_scripted_model(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """ScriptedChatModel: its turn's events raise a foreign exception."""

        def broken(turn: object) -> Iterator[object]:
            raise Boom("adapter bug")

        monkeypatch.setattr("langhooks.models._scripted_sync.turn_events", broken)
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            ScriptedChatModel([ScriptedTurn(text="hi")]).stream(REQUEST, recorder)
        assert_reported_once(recorder, raised, Boom)

    async def test_scripted_model_async(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The async twin."""

        def broken(turn: object) -> Iterator[object]:
            raise Boom("adapter bug")

        monkeypatch.setattr("langhooks.models._scripted_async.turn_events", broken)
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await ScriptedChatModel([ScriptedTurn(text="hi")]).astream(
                REQUEST, recorder
            )
        assert_reported_once(recorder, raised, Boom)

    @pytest.mark.parametrize("kind", KINDS)
    def test_header_parsing_raises(
        self, server: FixtureServer, kind: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bug reading the response's headers, after the request was answered."""

        def broken(headers: object) -> dict[str, Any]:
            raise Boom("header bug")

        monkeypatch.setattr("langhooks.models._run_sync.response_metadata", broken)
        model = make(kind, server)
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model.stream(REQUEST, recorder)
        assert_reported_once(recorder, raised, Boom)

    def test_replay_source_raises(self) -> None:
        """replay_stream: a source that raises after its first chunk."""

        def source() -> Iterator[bytes]:
            yield local_fixture("openai_chat_tools.sse").read_bytes()[:100]
            raise Boom("disk gone")

        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            replay_stream(source(), format="openai-chat", handler=recorder)
        assert_reported_once(recorder, raised, Boom)

    def test_replay_source_must_be_iterable(self) -> None:
        """A source that is not iterable is a TypeError naming its type."""
        with pytest.raises(TypeError, match="got int"):
            replay_stream(3, format="openai-chat", handler=Recorder())  # type: ignore[arg-type]


class TestHandlerExceptionsStillPropagate:
    """What the handler raises is its own: it propagates unchanged."""

    def test_on_error_raising_after_a_transport_failure(
        self, server: FixtureServer
    ) -> None:
        """on_error raising replaces nothing: its exception is what the caller gets."""
        model = make("openai-chat", server)
        break_transport(model, Boom("broke"), "after-first-chunk")

        class Angry(Recorder):
            @override
            def on_error(self, error: BaseException) -> None:
                super().on_error(error)
                raise KeyError("from the handler")

        recorder = Angry()
        with pytest.raises(KeyError, match="from the handler"):
            model.stream(REQUEST, recorder)
        assert len(recorder.errors) == 1

    def test_handler_raising_then_closing_raising(self, server: FixtureServer) -> None:
        """A close failing while the handler's exception unwinds does not hide it."""
        model = make("openai-chat", server)
        wrap_create(model, lambda create: lambda **p: FailsToClose(create(**p), []))

        class Angry(Recorder):
            @override
            def on_partial_response(self, partial: Any, context: Any) -> None:
                raise KeyError("from the handler")

        with pytest.raises(KeyError, match="from the handler"):
            model.stream(REQUEST, Angry())

    def test_cancelled_then_failing(self, server: FixtureServer) -> None:
        """After a cancel, a failure underneath gives the cancelled response."""
        model = make("openai-chat", server)
        recorder = Recorder(cancel_after=1)
        wrap_create(model, lambda create: lambda **p: FailsToClose(create(**p), []))
        response = model.stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.errors == []


class TestAfterTheTerminalCall:
    """A failure while closing never adds a second terminal call."""

    def test_failed_then_closing_fails(self, server: FixtureServer) -> None:
        """The error already reported is raised; closing's failure is its context."""
        model = make("openai-chat", server)
        break_transport(model, Boom("broke"), "after-first-chunk")
        wrap_create(model, lambda create: lambda **p: FailsToClose(create(**p), []))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model.stream(REQUEST, recorder)
        error = assert_reported_once(recorder, raised, Boom)
        assert isinstance(error.__context__, Boom)
        assert str(error.__context__) == "close failed"

    def test_on_complete_response_raising(self, server: FixtureServer) -> None:
        """The handler's exception from on_complete_response propagates unchanged."""
        model = make("openai-chat", server)

        class Angry(Recorder):
            @override
            def on_complete_response(self, response: Any) -> None:
                raise KeyError("complete")

        with pytest.raises(KeyError, match="complete"):
            model.stream(REQUEST, Angry())

    async def test_async_on_complete_response_raising(
        self, server: FixtureServer
    ) -> None:
        """The async twin."""
        model = make("openai-chat", server)

        class Angry(AsyncRecorder):
            @override
            async def on_complete_response(self, response: Any) -> None:
                raise KeyError("complete")

        with pytest.raises(KeyError, match="complete"):
            await model.astream(REQUEST, Angry())

    async def test_async_on_error_raising(self, server: FixtureServer) -> None:
        """An async on_error that raises: its exception propagates, once."""
        model = make("openai-chat", server)
        break_transport(model, Boom("broke"), "after-first-chunk")

        class Angry(AsyncRecorder):
            @override
            async def on_error(self, error: BaseException) -> None:
                await super().on_error(error)
                raise KeyError("from the handler")

        recorder = Angry()
        with pytest.raises(KeyError, match="from the handler"):
            await model.astream(REQUEST, recorder)
        assert len(recorder.errors) == 1
