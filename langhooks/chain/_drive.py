"""The two drivers that perform a run's operations: ``drive_sync`` and
``drive_async``.

Each advances the run's generator, performs the operation it yielded (deliver an
event, stream a model call, sleep, execute tools) and sends the result back, or
throws a model's ``LangHooksError`` or a handler's fault into it. Handlers are
called through ``HandlerWithoutInvocation`` except ``on_tool_pre_execution``, which
runs where the tool runs (``_execute``), and ``on_llm_call_start``, which runs in
the model attempt's own copy of the context, before the model streams there.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast, final

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._messages import ChatResponse, LangHooksError
from .._wrap._compose import AsyncCompositeChainHandler, CompositeChainHandler
from .._wrap._wrappers import HandlerWithoutInvocation
from ._bridge import (
    AsyncBridge,
    BridgeState,
    SyncBridge,
    checked_response,
    model_failure,
)
from ._execute import execute_async, execute_sync
from ._ops import (
    Complete,
    Fire,
    HandlerFault,
    Op,
    Sleep,
    Steps,
    Stream,
    deliver_async,
    deliver_sync,
    fire,
)

if TYPE_CHECKING:
    from .._core._result import RunResult
    from ._run import Run
    from ._snapshot import ChainSnapshot

__all__ = ["drive_async", "drive_sync", "sync_callbacks"]


def sync_callbacks(chain: ChainSnapshot) -> list[ChainCallbackHandler]:
    """The chain's handlers, checked to be synchronous.

    Raises:
        TypeError: a handler is an ``AsyncChainCallbackHandler``.
    """
    handlers: list[ChainCallbackHandler] = []
    for handler in chain.callbacks:
        if not isinstance(handler, ChainCallbackHandler):
            raise TypeError(
                f"{handler!r} is an AsyncChainCallbackHandler: LLMChain.run() calls "
                f"handlers synchronously; use 'await chain.arun()' instead"
            )
        handlers.append(handler)
    return handlers


def _completion(op: Complete) -> Fire:
    return fire(ChainCallbackHandler.on_run_complete, op.chain, op.result)


def drive_sync(
    chain: ChainSnapshot, run: Run, steps: Steps[RunResult[ChainSnapshot]]
) -> RunResult[ChainSnapshot]:
    """Perform a run's operations synchronously and return its result.

    Raises:
        Exception: what a handler raised in ``on_error`` (nothing else).
    """
    callbacks = sync_callbacks(chain)
    each = [HandlerWithoutInvocation.wrap(h) for h in callbacks]
    handlers = CompositeChainHandler(each)
    pre = CompositeChainHandler(callbacks)

    def complete(op: Complete) -> tuple[int, HandlerFault] | None:
        for index, handler in enumerate(each):
            try:
                deliver_sync(handler, _completion(op))
            except HandlerFault as fault:
                return index, fault
        return None

    def attempt(op: Stream) -> tuple[ChatResponse, BridgeState]:
        # In the attempt's own context: what on_llm_call_start sets is seen by the
        # model's code and by nothing after the attempt.
        deliver_sync(pre, op.start)
        state = BridgeState(run)
        try:
            response = op.model.stream(op.request, SyncBridge(state, handlers))
        except (LangHooksError, HandlerFault):
            raise
        except Exception as exc:
            raise model_failure(op.model, exc) from exc
        return checked_response(op.model, response), state

    def perform(op: Op) -> Any:
        if isinstance(op, Fire):
            if not op.skip:
                return deliver_sync(handlers, op)
            for handler in each[op.skip :]:
                deliver_sync(handler, op)
            return None
        if isinstance(op, Complete):
            return complete(op)
        if isinstance(op, Stream):
            return contextvars.copy_context().run(attempt, op)
        if isinstance(op, Sleep):
            run.policy.sleep(op.seconds)
            return None
        return execute_sync(run, pre, op.planned, parallel=op.parallel)

    return _drive(steps, perform)


@final
class _Trampoline:
    """The loop both drivers share, but for the ``await``: each operation's outcome
    goes back into the run's steps (its value, or the ``LangHooksError`` or
    ``HandlerFault`` it raised), which give the next operation.
    """

    __slots__ = ("_sent", "_steps", "_thrown", "result")

    def __init__(self, steps: Steps[RunResult[ChainSnapshot]]) -> None:
        self._steps: Final = steps
        self._sent: Any = None
        self._thrown: Exception | None = None
        self.result: RunResult[ChainSnapshot] | None = None

    def next_op(self) -> Op | None:
        """The run's next operation; None once the run returned (into ``result``).

        Raises:
            Exception: what a handler raised in ``on_error`` (nothing else).
        """
        try:
            if self._thrown is None:
                op = self._steps.send(self._sent)
            else:
                op = self._steps.throw(self._thrown)
        except StopIteration as stop:
            self.result = stop.value
            return None
        except HandlerFault as fault:
            raise fault.original from None
        self._sent, self._thrown = None, None
        return op

    def performed(self, value: Any) -> None:
        """The last operation gave ``value``."""
        self._sent = value

    def failed(self, exc: LangHooksError | HandlerFault) -> None:
        """The last operation raised ``exc``."""
        self._thrown = exc


def _drive(
    steps: Steps[RunResult[ChainSnapshot]], perform: Callable[[Op], Any]
) -> RunResult[ChainSnapshot]:
    trampoline = _Trampoline(steps)
    while (op := trampoline.next_op()) is not None:
        try:
            trampoline.performed(perform(op))
        except (LangHooksError, HandlerFault) as exc:
            trampoline.failed(exc)
    return cast("RunResult[ChainSnapshot]", trampoline.result)


async def drive_async(
    chain: ChainSnapshot, run: Run, steps: Steps[RunResult[ChainSnapshot]]
) -> RunResult[ChainSnapshot]:
    """Perform a run's operations with ``await`` and return its result.

    Raises:
        Exception: what a handler raised in ``on_error`` (nothing else).
    """
    each = [HandlerWithoutInvocation.wrap(h) for h in chain.callbacks]
    handlers = AsyncCompositeChainHandler(each)
    pre = AsyncCompositeChainHandler(chain.callbacks)
    sync_only = all(isinstance(h, ChainCallbackHandler) for h in chain.callbacks)
    pre_sync = CompositeChainHandler(sync_callbacks(chain)) if sync_only else None

    async def complete(op: Complete) -> tuple[int, HandlerFault] | None:
        for index, handler in enumerate(each):
            try:
                await deliver_async(handler, _completion(op))
            except HandlerFault as fault:
                return index, fault
        return None

    async def attempt(op: Stream) -> tuple[ChatResponse, BridgeState]:
        await deliver_async(pre, op.start)
        state = BridgeState(run)
        try:
            response = await op.model.astream(op.request, AsyncBridge(state, handlers))
        except (LangHooksError, HandlerFault):
            raise
        except Exception as exc:
            raise model_failure(op.model, exc) from exc
        return checked_response(op.model, response), state

    async def perform(op: Op) -> Any:
        if isinstance(op, Fire):
            if not op.skip:
                return await deliver_async(handlers, op)
            for handler in each[op.skip :]:
                await deliver_async(handler, op)
            return None
        if isinstance(op, Complete):
            return await complete(op)
        if isinstance(op, Stream):
            # A task of its own copies the context, as for a tool call.
            return await asyncio.create_task(attempt(op))
        if isinstance(op, Sleep):
            await run.policy.async_sleep(op.seconds)
            return None
        return await execute_async(run, pre, pre_sync, op.planned, parallel=op.parallel)

    trampoline = _Trampoline(steps)
    while (op := trampoline.next_op()) is not None:
        try:
            trampoline.performed(await perform(op))
        except (LangHooksError, HandlerFault) as exc:
            trampoline.failed(exc)
    return cast("RunResult[ChainSnapshot]", trampoline.result)
