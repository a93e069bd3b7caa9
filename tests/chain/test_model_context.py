"""Each model attempt runs in its own copy of the context, entered before
``on_llm_call_start``.

What ``on_llm_call_start`` sets in a context variable is seen by that attempt's model
code (and the handlers the stream calls) and by nothing after it: not by the caller
of ``run()``, not by the next attempt, not by the events that follow the attempt.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChatResponse,
    Invocation,
    LangHooksError,
    Message,
    MessageDelta,
    StreamingChatResponseHandler,
    StreamingHandle,
    current_invocation,
)
from langhooks.chain import LLMChain, RetryPolicy
from langhooks.models import ChatModel, ChatRequest, ScriptedChatModel, ScriptedTurn

ATTEMPT: ContextVar[str] = ContextVar("ATTEMPT", default="unset")


class NotingModel:
    """A ChatModel that notes ATTEMPT and the current invocation as it streams,
    then streams the next scripted turn (or fails with the next error)."""

    def __init__(self, turns: Sequence[ScriptedTurn | LangHooksError]) -> None:
        self.scripted = ScriptedChatModel(turns)
        self.seen: list[tuple[str, Invocation | None]] = []

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Note, then stream the scripted turn."""
        self.seen.append((ATTEMPT.get(), current_invocation()))
        return self.scripted.stream(request, handler, handle=handle)

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Note, then stream the scripted turn."""
        self.seen.append((ATTEMPT.get(), current_invocation()))
        return await self.scripted.astream(request, handler, handle=handle)


class SetsAttempt(ChainCallbackHandler):
    """Sets ATTEMPT to the attempt's number in on_llm_call_start; notes what each
    event saw."""

    def __init__(self) -> None:
        self.attempts = 0
        self.seen: list[tuple[str, str]] = []
        self.invocations: list[Invocation | None] = []

    def note(self, event: str) -> None:
        self.seen.append((event, ATTEMPT.get()))

    @override
    def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self.note("on_llm_call_start")
        self.invocations.append(current_invocation())
        self.attempts += 1
        ATTEMPT.set(f"attempt-{self.attempts}")

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        self.note("on_llm_new_delta")

    @override
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self.note("on_llm_error")

    @override
    def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        self.note("on_llm_retry")

    @override
    def on_llm_call_complete(self, chain: LLMChain, response: ChatResponse) -> None:
        self.note("on_llm_call_complete")

    @override
    def on_run_complete(self, chain: LLMChain, result: Any) -> None:
        self.note("on_run_complete")


class AsyncSetsAttempt(AsyncChainCallbackHandler):
    """The async twin of SetsAttempt."""

    def __init__(self) -> None:
        self.sync = SetsAttempt()

    @property
    def seen(self) -> list[tuple[str, str]]:
        """What each event saw."""
        return self.sync.seen

    @property
    def invocations(self) -> list[Invocation | None]:
        """The invocation current in each on_llm_call_start."""
        return self.sync.invocations

    @override
    async def on_llm_call_start(
        self, chain: LLMChain, model: ChatModel, request: ChatRequest
    ) -> None:
        self.sync.on_llm_call_start(chain, model, request)

    @override
    async def on_llm_new_delta(
        self, chain: LLMChain, deltas: Sequence[MessageDelta]
    ) -> None:
        self.sync.on_llm_new_delta(chain, deltas)

    @override
    async def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self.sync.on_llm_error(chain, error)

    @override
    async def on_llm_retry(
        self, chain: LLMChain, error: LangHooksError, delay: float
    ) -> None:
        self.sync.on_llm_retry(chain, error, delay)

    @override
    async def on_llm_call_complete(
        self, chain: LLMChain, response: ChatResponse
    ) -> None:
        self.sync.on_llm_call_complete(chain, response)

    @override
    async def on_run_complete(self, chain: LLMChain, result: Any) -> None:
        self.sync.on_run_complete(chain, result)


async def _no_sleep(seconds: float) -> None:
    return None


def chain_for(handler: SetsAttempt | AsyncSetsAttempt, model: NotingModel) -> LLMChain:
    """A chain that retries without waiting."""
    return LLMChain(
        model,
        callbacks=[handler],
        retry=RetryPolicy(sleep=lambda seconds: None, async_sleep=_no_sleep),
    ).add_message(Message.user("go"))


def model() -> NotingModel:
    """A model whose first attempt fails and whose retry answers."""
    busy = LangHooksError("overloaded", "busy", retryable=True)
    return NotingModel([busy, ScriptedTurn(text="Done.")])


EXPECTED = [
    ("on_llm_call_start", "caller"),
    ("on_llm_error", "caller"),
    ("on_llm_retry", "caller"),
    ("on_llm_call_start", "caller"),
    ("on_llm_new_delta", "attempt-2"),
    ("on_llm_new_delta", "attempt-2"),
    ("on_llm_call_complete", "caller"),
    ("on_run_complete", "caller"),
]


@pytest.fixture
def caller_attempt() -> Any:
    """The caller's own ATTEMPT value for the duration of a test."""
    token = ATTEMPT.set("caller")
    yield
    ATTEMPT.reset(token)


@pytest.mark.usefixtures("caller_attempt")
class TestAttemptContext:
    """Under run() and arun(), each attempt sees its own value and nothing else does."""

    def test_run(self) -> None:
        """A value set in on_llm_call_start reaches that attempt's model and its
        deltas, and nothing after the attempt (the retry starts from the caller's)."""
        handler, noting = SetsAttempt(), model()
        result = chain_for(handler, noting).run()
        assert result.status == "ok"
        assert [value for value, _ in noting.seen] == ["attempt-1", "attempt-2"]
        assert handler.seen == EXPECTED
        assert ATTEMPT.get() == "caller"

    @pytest.mark.parametrize("async_handler", [False, True])
    async def test_arun(self, async_handler: bool) -> None:
        """The same under arun(), with a sync or an async handler."""
        handler = AsyncSetsAttempt() if async_handler else SetsAttempt()
        noting = model()
        result = await chain_for(handler, noting).arun()
        assert result.status == "ok"
        assert [value for value, _ in noting.seen] == ["attempt-1", "attempt-2"]
        assert handler.seen == EXPECTED
        assert ATTEMPT.get() == "caller"

    def test_the_runs_invocation_is_current(self) -> None:
        """on_llm_call_start runs where the model runs: with the run's invocation
        current, as the model's code has it."""
        handler, noting = SetsAttempt(), model()
        result = chain_for(handler, noting).run()
        run = result.chain.invocation
        assert run is not None
        assert handler.invocations == [run, run]
        assert [invocation for _, invocation in noting.seen] == [run, run]
        assert current_invocation() is None

    def test_a_raising_start_ends_the_run(self) -> None:
        """A handler raising in on_llm_call_start ends the run with handler_error,
        before the model is called."""

        class Raises(ChainCallbackHandler):
            @override
            def on_llm_call_start(
                self, chain: LLMChain, model: ChatModel, request: ChatRequest
            ) -> None:
                raise RuntimeError("tracer down")

        noting = model()
        result = (
            LLMChain(noting, callbacks=[Raises()]).add_message(Message.user("go")).run()
        )
        assert result.status == "error"
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert isinstance(result.error.original, RuntimeError)
        assert noting.seen == []
