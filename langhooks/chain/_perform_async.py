"""The driver that performs a run's operations. (The async module is written by
hand; the sync one is generated from it by ``scripts/unasync.py``: the same code
without ``async`` and ``await``. What both share, and the contract, is in
``_drive``.) The async driver awaits an async handler's events and calls a sync
handler's inline, and runs concurrent tools as tasks; the sync driver takes sync
handlers only, and runs concurrent tools in threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._messages import ChatResponse, LangHooksError
from .._core._twins_async import arun_in_context
from .._wrap._compose import AsyncCompositeChainHandler, CompositeChainHandler
from .._wrap._wrappers import HandlerWithoutInvocation
from ._bridge import AsyncBridge, BridgeState, checked_response, model_failure
from ._calls_async import deliver_async
from ._drive import _completion, _Trampoline, sync_callbacks
from ._execute import execute_async
from ._ops import Complete, Fire, HandlerFault, Op, Sleep, Steps, Stream

if TYPE_CHECKING:
    from .._core._result import RunResult
    from ._run import Run
    from ._snapshot import ChainSnapshot

__all__ = ["drive_async"]


async def drive_async(
    chain: ChainSnapshot, run: Run, steps: Steps[RunResult[ChainSnapshot]]
) -> RunResult[ChainSnapshot]:
    """Perform a run's operations and return its result.

    Raises:
        Exception: what a handler raised in ``on_error`` (nothing else).
    """
    callbacks = chain.callbacks
    each = [HandlerWithoutInvocation.wrap(h) for h in callbacks]
    handlers = AsyncCompositeChainHandler(each)
    pre = AsyncCompositeChainHandler(callbacks)
    pre_sync: CompositeChainHandler | None = None  # unasync: remove
    if all(isinstance(h, ChainCallbackHandler) for h in callbacks):  # unasync: remove
        pre_sync = CompositeChainHandler(sync_callbacks(chain))

    async def complete(op: Complete) -> tuple[int, HandlerFault] | None:
        for index, handler in enumerate(each):
            try:
                await deliver_async(handler, _completion(op))
            except HandlerFault as fault:
                return index, fault
        return None

    async def model_attempt(op: Stream) -> tuple[ChatResponse, BridgeState]:
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
            # In the attempt's own copy of the context: what on_llm_call_start
            # sets is seen by the model's code and by nothing after the attempt.
            return await arun_in_context(model_attempt, op)
        if isinstance(op, Sleep):
            await run.policy.async_sleep(op.seconds)
            return None
        return await execute_async(
            run,
            pre,
            pre_sync,  # unasync: remove
            handlers,
            op.planned,
            parallel=op.parallel,
        )

    trampoline = _Trampoline(steps)
    while (op := trampoline.next_op()) is not None:
        try:
            trampoline.performed(await perform(op))
        except (LangHooksError, HandlerFault) as exc:
            trampoline.failed(exc)
    return cast("RunResult[ChainSnapshot]", trampoline.result)
