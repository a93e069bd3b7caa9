"""Running tools: in the caller's thread, in worker threads, or as tasks.

Each call runs in its own copy of the context (``contextvars``), entered before
``on_tool_pre_execution`` and with the tool's ``Invocation`` current: what the hook
sets is seen by the tool's code and by nothing after it. A call never raises here:
its ``Outcome`` carries the tool's value, its exception, or a handler's fault.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._invocation import invocation
from ._ops import (
    HandlerFault,
    Outcome,
    Planned,
    RunState,
    deliver_async,
    deliver_sync,
    fire,
)

__all__ = ["execute_async", "execute_sync"]

_H = ChainCallbackHandler


def execute_sync(
    run: RunState,
    pre: ChainCallbackHandler,
    planned: Sequence[Planned],
    *,
    parallel: bool,
) -> list[Outcome]:
    """Run calls under ``run()``: one by one, or together in worker threads.

    Returns:
        Each call's outcome, in call order.
    """
    if not parallel:
        return [
            contextvars.copy_context().run(_call_sync, run, pre, one) for one in planned
        ]
    with ThreadPoolExecutor(max_workers=len(planned)) as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, _call_sync, run, pre, one)
            for one in planned
        ]
        return [future.result() for future in futures]


async def execute_async(
    run: RunState,
    pre: AsyncChainCallbackHandler,
    pre_sync: ChainCallbackHandler | None,
    planned: Sequence[Planned],
    *,
    parallel: bool,
) -> list[Outcome]:
    """Run calls under ``arun()``: one by one, or together as tasks (a sync tool in
    a worker thread).

    Args:
        run: the run.
        pre: the handlers' ``on_tool_pre_execution``.
        pre_sync: the same when every handler is synchronous (then a concurrent
            sync tool's pre-execution runs in its worker thread), else None.
        planned: the calls.
        parallel: whether the calls run together.

    Returns:
        Each call's outcome, in call order.
    """
    if not parallel:
        # A task of its own copies the context (as gather does for concurrent
        # calls): what on_tool_pre_execution sets stays with this call.
        return [
            await asyncio.create_task(
                _call_async(run, pre, pre_sync, one, thread=False)
            )
            for one in planned
        ]
    tasks: list[Coroutine[Any, Any, Outcome]] = [
        _call_async(run, pre, pre_sync, one, thread=True) for one in planned
    ]
    return list(await asyncio.gather(*tasks))


def _run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Finish an async tool's awaitable from synchronous code."""

    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    # run() was called from inside an event loop: use a loop in a helper thread.
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, wait()).result()


def _call_sync(run: RunState, pre: ChainCallbackHandler, planned: Planned) -> Outcome:
    call, tool = planned.call, planned.tool
    with invocation(tool.name, custom_context=run.chain.custom_context) as inv:
        try:
            deliver_sync(pre, fire(_H.on_tool_pre_execution, run.chain, call, tool))
        except HandlerFault as fault:
            return Outcome(fault=fault)
        try:
            value = tool.function(call.arguments, run.tool_context(call, inv))
            if inspect.isawaitable(value):
                value = _run_awaitable(value)
        except Exception as exc:
            return Outcome(exception=exc)
        return Outcome(value=value)


async def _call_async(
    run: RunState,
    pre: AsyncChainCallbackHandler,
    pre_sync: ChainCallbackHandler | None,
    planned: Planned,
    *,
    thread: bool,
) -> Outcome:
    call, tool = planned.call, planned.tool
    if thread and not tool.is_async and pre_sync is not None:
        # A concurrent sync tool runs in a worker thread; with only sync handlers,
        # pre-execution runs there too (asyncio.to_thread copies the context).
        outcome: Outcome = await asyncio.to_thread(_call_sync, run, pre_sync, planned)
        return outcome
    with invocation(tool.name, custom_context=run.chain.custom_context) as inv:
        try:
            await deliver_async(
                pre, fire(_H.on_tool_pre_execution, run.chain, call, tool)
            )
        except HandlerFault as fault:
            return Outcome(fault=fault)
        try:
            context = run.tool_context(call, inv)
            if thread and not tool.is_async:
                value = await asyncio.to_thread(tool.function, call.arguments, context)
            else:
                value = tool.function(call.arguments, context)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return Outcome(exception=exc)
        return Outcome(value=value)
