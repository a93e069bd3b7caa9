"""Running a batch's tool calls: in the caller's thread, in worker threads, or as
tasks.

Each call runs in its own copy of the context (``contextvars``), and never raises
here: its ``Outcome`` carries the tool's value, its exception, or a handler's fault
(``call_tool_async`` and ``call_tool_sync``, in ``_calls_async`` and
``_calls_sync``). The two functions here are not twins by ``scripts/unasync.py``:
``run()`` runs concurrent calls in a thread pool, ``arun()`` as tasks. Both
deliver the calls' progress reports meanwhile (``_progress``).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._tools import ProgressSink
from ._calls_async import call_tool_async
from ._calls_sync import call_tool_sync
from ._ops import Outcome, Planned, RunState
from ._progress import AsyncProgressChannel, ProgressChannel, sinks

__all__ = ["execute_async", "execute_sync"]


def execute_sync(
    run: RunState,
    pre: ChainCallbackHandler,
    handlers: ChainCallbackHandler,
    planned: Sequence[Planned],
    *,
    parallel: bool,
) -> list[Outcome]:
    """Run calls under ``run()``: one by one, or together in worker threads,
    delivering their progress on this thread meanwhile.

    Args:
        run: the run.
        pre: the handlers' ``on_tool_pre_execution``.
        handlers: the (invocation-free) handlers ``on_tool_progress`` goes to.
        planned: the calls.
        parallel: whether the calls run together.

    Returns:
        Each call's outcome, in call order.
    """
    channel = ProgressChannel(run, handlers)
    progress = sinks(channel, planned)
    if not parallel:
        return channel.close(
            [
                contextvars.copy_context().run(call_tool_sync, run, pre, one, sink)
                for one, sink in zip(planned, progress, strict=True)
            ]
        )

    def call(one: Planned, sink: ProgressSink) -> Outcome:
        try:
            return call_tool_sync(run, pre, one, sink)
        finally:
            channel.done()

    with ThreadPoolExecutor(max_workers=len(planned)) as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, call, one, sink)
            for one, sink in zip(planned, progress, strict=True)
        ]
        channel.wait(len(futures))
        return channel.close([future.result() for future in futures])


async def execute_async(
    run: RunState,
    pre: AsyncChainCallbackHandler,
    pre_sync: ChainCallbackHandler | None,
    handlers: AsyncChainCallbackHandler,
    planned: Sequence[Planned],
    *,
    parallel: bool,
) -> list[Outcome]:
    """Run calls under ``arun()``: one by one, or together as tasks (a sync tool in
    a worker thread), delivering their progress meanwhile.

    Args:
        run: the run.
        pre: the handlers' ``on_tool_pre_execution``.
        pre_sync: the same when every handler is synchronous (then a concurrent
            sync tool's pre-execution runs in its worker thread), else None.
        handlers: the (invocation-free) handlers ``on_tool_progress`` goes to.
        planned: the calls.
        parallel: whether the calls run together.

    Returns:
        Each call's outcome, in call order.
    """
    channel = AsyncProgressChannel(run, handlers)
    progress = sinks(channel, planned)

    async def one_by_one() -> list[Outcome]:
        # A task of its own copies the context (as gather does for concurrent
        # calls): what on_tool_pre_execution sets stays with this call.
        return [
            await asyncio.create_task(call_tool_async(run, pre, one, sink, False))
            for one, sink in zip(planned, progress, strict=True)
        ]

    async def together() -> list[Outcome]:
        # A concurrent sync tool runs in a worker thread; with only sync handlers,
        # pre-execution runs there too (asyncio.to_thread copies the context).
        tasks: list[Coroutine[Any, Any, Outcome]] = [
            asyncio.to_thread(call_tool_sync, run, pre_sync, one, sink)
            if pre_sync is not None and not one.tool.is_async
            else call_tool_async(run, pre, one, sink, True)
            for one, sink in zip(planned, progress, strict=True)
        ]
        return list(await asyncio.gather(*tasks))

    return await channel.run(together if parallel else one_by_one)
