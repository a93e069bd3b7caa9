"""What the resume drivers (``_resume_async``/``_resume_sync``) share: the code a
resumed run goes on with, the outcomes kept per tool call, the tools wrapped to
record them, and the heartbeat that renews a claim (a thread for the sync driver, a
task for the async one).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final, final

import attrs

from .._core._messages import ToolCall, ToolResult
from .._core._tools import Tool, ToolContext
from ._claims_async import AsyncClaimBackend
from ._claims_sync import ClaimBackend
from ._codec import decode, encode
from ._log import Known, Saved, state_of
from ._runs import CallKey

if TYPE_CHECKING:
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult
    from ..chain._chain import Handler
    from ..models import ChatModel

__all__ = [
    "STARTED",
    "ResumeCode",
    "check_claim_timeout",
    "loaded",
    "outcome_text",
    "stopped_result",
]

_log: Final = logging.getLogger("langhooks.stores")

# Outcome texts as the stores keep them. "" marks a call that started and has no
# outcome yet (or never will: its worker died inside it).
STARTED: Final = ""


def check_claim_timeout(value: float) -> float:
    """``value`` when it is a number of seconds > 0 and finite.

    Raises:
        TypeError: it is not a number.
        ValueError: it is not > 0 and finite.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"claim_timeout must be a number of seconds, got {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"claim_timeout must be > 0 seconds and finite, got {value!r}")
    return float(value)


@attrs.frozen(kw_only=True)
class ResumeCode:
    """The code a resumed run goes on with (never stored)."""

    model: ChatModel
    tools: Sequence[Tool] = ()
    callbacks: Sequence[Handler] = ()
    fallbacks: Sequence[ChatModel] = ()
    retry: RetryPolicy | None = None
    continue_run: bool = True


# --- outcomes ----------------------------------------------------------------------


def outcome_text(value: object) -> str:
    """What the store keeps for a tool's return value (a str or a ToolResult)."""
    if isinstance(value, ToolResult):
        try:
            return _json({"result": encode(value)})
        except TypeError:
            # Data the codec cannot take is dropped; what the model saw is kept.
            bare = attrs.evolve(value, processed_content=None, interrupt_data=None)
            return _json({"result": encode(bare)})
    if isinstance(value, str):
        return _json({"text": value})
    # Anything else is a failure the chain reports itself; keep its description.
    return _json({"raised": f"TypeError: a tool returned {type(value).__name__}"})


def _raised_text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not lose the record
        text = "<unprintable>"
    return _json({"raised": f"{type(exc).__name__}: {text}"[:2000]})


def _json(value: Any) -> str:
    # ASCII: a lone surrogate (a file name os.listdir gave) or a NUL is an escape
    # here, which every store keeps and json.loads gives back.
    return json.dumps(value, separators=(",", ":"))


def stopped_result(call: ToolCall) -> ToolResult:
    """The error result of a call whose worker stopped inside it."""
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=(
            "Error: the worker running this tool call stopped before the call "
            "returned; it was not run again, so it may or may not have taken effect"
        ),
        is_error=True,
    )


def _reused(call: ToolCall, text: str) -> str | ToolResult:
    """The saved outcome of a call that ran already, as the tool's return value."""
    if text == STARTED:
        return stopped_result(call)
    data = json.loads(text)
    if "text" in data:
        return str(data["text"])
    if "result" in data:
        result = decode(data["result"])
        assert isinstance(result, ToolResult)
        return result
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=f"Error: the tool failed: {data['raised']}",
        is_error=True,
    )


# --- guarded tools -----------------------------------------------------------------


def _call_key(context: ToolContext) -> CallKey:
    """The key of the call ``context`` runs: the latest assistant message that
    made a call with its id (the one a batch answers) and that id."""
    call_id = context.call.call_id
    messages = context.chain.messages if context.chain is not None else ()
    position = next(
        (
            index
            for index in range(len(messages) - 1, -1, -1)
            if any(made.call_id == call_id for made in messages[index].tool_calls)
        ),
        -1,
    )
    return CallKey(position, call_id)


@final
class _Live:
    """Whether the resume that wrapped the tools still drives them."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = True


def _guarded(
    backend: ClaimBackend, run_id: str, token: str, tool: Tool, live: _Live
) -> Tool:
    original = tool.function

    def function(arguments: Mapping[str, Any], context: ToolContext) -> Any:
        if not live.on:
            # The chain outlived its resume (result.chain.run()): a plain tool.
            return original(arguments, context)
        key = _call_key(context)
        saved = backend.start_call(run_id, token, key)
        if saved is not None:
            return _reused(context.call, saved)
        try:
            value = original(arguments, context)
        except Exception as exc:
            # (A BaseException leaves the call started without an outcome: a
            # later resume answers it with the stopped-worker error.)
            backend.finish_call(run_id, token, key, _raised_text(exc))
            raise
        if inspect.isawaitable(value):
            return _finish_later(backend, run_id, token, key, value)
        backend.finish_call(run_id, token, key, outcome_text(value))
        return value

    return attrs.evolve(tool, function=function)


async def _finish_later(
    backend: ClaimBackend,
    run_id: str,
    token: str,
    key: CallKey,
    value: Awaitable[Any],
) -> Any:
    try:
        done = await value
    except Exception as exc:
        backend.finish_call(run_id, token, key, _raised_text(exc))
        raise
    backend.finish_call(run_id, token, key, outcome_text(done))
    return done


def _aguarded(
    backend: AsyncClaimBackend, run_id: str, token: str, tool: Tool, live: _Live
) -> Tool:
    original = tool.function

    async def function(arguments: Mapping[str, Any], context: ToolContext) -> Any:
        if not live.on:
            value = original(arguments, context)
            return await value if inspect.isawaitable(value) else value
        key = _call_key(context)
        saved = await backend.start_call(run_id, token, key)
        if saved is not None:
            return _reused(context.call, saved)
        try:
            value = original(arguments, context)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            await backend.finish_call(run_id, token, key, _raised_text(exc))
            raise
        await backend.finish_call(run_id, token, key, outcome_text(value))
        return value

    return attrs.evolve(tool, function=function)


# --- heartbeat ---------------------------------------------------------------------


@final
@attrs.define(eq=False)
class _Claim:
    """One claim the heartbeat thread renews."""

    backend: ClaimBackend
    run_id: str
    token: str
    interval: float
    due: float


@final
class _Heartbeats:
    """One daemon thread per process renews every live claim when it is due.

    A thread per resume would cost more than a resume's own round trips; a claim
    is registered and removed under a lock instead. A renewal that raises is
    logged and retried at the next beat; a claim found taken over is dropped.
    """

    def __init__(self) -> None:
        self._wake: Final = threading.Condition()
        self._claims: dict[int, _Claim] = {}
        self._pid = -1  # the process whose thread runs (none yet; a fork has none)

    @contextlib.contextmanager
    def renewing(
        self, backend: ClaimBackend, run_id: str, token: str, interval: float
    ) -> Iterator[None]:
        """Renew the claim every ``interval`` seconds while the block runs."""
        claim = _Claim(backend, run_id, token, interval, time.monotonic() + interval)
        with self._wake:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(
                    target=self._run, name="langhooks-claims", daemon=True
                ).start()
            self._claims[id(claim)] = claim
            self._wake.notify()
        try:
            yield
        finally:
            with self._wake:
                self._claims.pop(id(claim), None)

    def _run(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                due = [c for c in self._claims.values() if c.due <= now]
                if not due:
                    soonest = min((c.due for c in self._claims.values()), default=None)
                    self._wake.wait(None if soonest is None else soonest - now)
                    continue
                for claim in due:
                    claim.due = now + claim.interval
            for claim in due:
                if not _renew(claim):
                    with self._wake:
                        self._claims.pop(id(claim), None)


def _renew(claim: _Claim) -> bool:
    """Renew one claim; False when it was taken over (stop renewing it)."""
    try:
        held = claim.backend.heartbeat(claim.run_id, claim.token)
    except Exception as exc:  # retried at the next beat
        _log.warning(
            "langhooks: could not renew the claim on run %r: %s", claim.run_id, exc
        )
        return True
    if not held:
        _log.warning(
            "langhooks: the claim on run %r was taken over; this worker starts no "
            "more of its tool calls",
            claim.run_id,
        )
    return held


_HEARTBEATS: Final = _Heartbeats()


def _forked() -> None:  # pragma: no cover - runs in a forked child only
    # The parent's thread is gone and may have held the lock: a child starts
    # afresh (its parent's claims are the parent's to renew).
    fresh = _Heartbeats()
    _HEARTBEATS.__dict__.update(fresh.__dict__)


os.register_at_fork(after_in_child=_forked)


async def _abeat(
    backend: AsyncClaimBackend, run_id: str, token: str, interval: float
) -> None:
    try:
        while True:
            await asyncio.sleep(interval)
            try:
                held = await backend.heartbeat(run_id, token)
            except Exception as exc:  # retried at the next beat
                _log.warning(
                    "langhooks: could not renew the claim on run %r: %s", run_id, exc
                )
                continue
            if not held:
                _log.warning(
                    "langhooks: the claim on run %r was taken over; this worker "
                    "starts no more of its tool calls",
                    run_id,
                )
                return
    except asyncio.CancelledError:
        # The resume ended (``_arenewing`` cancels the beat) and no one needs the
        # error. Ending here rather than raising it on also keeps the resume's frame
        # measured after its ``async with``: under Python 3.11, coverage's tracer
        # loses that frame when a cancelled task's error ends in an async context
        # manager.
        return


def _renewing(
    backend: ClaimBackend, run_id: str, token: str, interval: float
) -> AbstractContextManager[None]:
    """Renew the claim every ``interval`` seconds while the block runs (the
    process's heartbeat thread does)."""
    return _HEARTBEATS.renewing(backend, run_id, token, interval)


@contextlib.asynccontextmanager
async def _arenewing(
    backend: AsyncClaimBackend, run_id: str, token: str, interval: float
) -> AsyncIterator[None]:
    """Renew the claim every ``interval`` seconds while the block runs (a task
    does)."""
    beat = asyncio.create_task(_abeat(backend, run_id, token, interval))
    try:
        yield
    finally:
        beat.cancel()
        # Not ``await beat`` under a suppress: that would also swallow a cancel of
        # this task that comes while it waits. The beat itself ends quietly.
        await asyncio.wait({beat})


# --- the drivers' steps ------------------------------------------------------------


def _match(
    run_id: str,
    waiting: Sequence[ToolCall],
    decisions: Sequence[Decision] | Mapping[str, Decision],
) -> tuple[list[ToolCall], list[Decision]]:
    if isinstance(decisions, Mapping):
        by_id = {call.call_id: call for call in waiting}
        unknown = sorted(set(decisions) - set(by_id))
        if unknown:
            raise ValueError(
                f"tool call(s) {unknown} of run {run_id!r} do not wait for a "
                f"decision; waiting: {sorted(by_id)}"
            )
        return [by_id[i] for i in decisions], list(decisions.values())
    return list(waiting), list(decisions)


def _chain(
    state: Mapping[str, Any], code: ResumeCode, tools: Sequence[Tool]
) -> LLMChain:
    from ..chain import LLMChain

    return LLMChain.from_state(
        state,
        code.model,
        tools=tools,
        callbacks=code.callbacks,
        fallbacks=code.fallbacks,
        retry=code.retry,
    )


def loaded(
    known: Known,
    run_id: str,
    saved: Saved,
    model: ChatModel,
    *,
    tools: Sequence[Tool],
    callbacks: Sequence[Handler],
    fallbacks: Sequence[ChatModel],
    retry: RetryPolicy | None,
) -> LLMChain:
    """The chain of a run ``load`` read, with this worker's code (and noted in
    ``known``, so the next save writes what changed)."""
    code = ResumeCode(
        model=model, tools=tools, callbacks=callbacks, fallbacks=fallbacks, retry=retry
    )
    chain = _chain(state_of(saved), code, code.tools)
    known.read(run_id, saved, chain)
    return chain


def _waiting(result: RunResult) -> tuple[ToolCall, ...]:
    return result.chain.pending_tool_calls if result.status == "interrupted" else ()


def _note_release_failure(exc: BaseException, run_id: str, failure: Exception) -> None:
    exc.add_note(
        f"langhooks: the claim on run {run_id!r} could not be handed back "
        f"({failure}); it can be resumed again once its claim_timeout has passed"
    )
