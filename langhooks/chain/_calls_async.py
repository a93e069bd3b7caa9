"""The calls a run makes into user code: a chain event to the handlers, and one tool
call. (The async module is written by hand; the sync one is generated from it by
``scripts/unasync.py``: the same code without ``async`` and ``await``.)

Neither lets a user exception out as it is: a handler's becomes a ``HandlerFault``,
a tool call's goes into its ``Outcome``. A tool call runs in its own copy of the
context (its caller, ``_execute``, gives it one), with the tool's ``Invocation``
current, entered before ``on_tool_pre_execution``: what the hook sets is seen by the
tool's code and by nothing after it.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._invocation import invocation
from .._core._tools import ProgressSink
from ._ops import Fire, HandlerFault, Outcome, Planned, RunState, fire

__all__ = ["call_tool_async", "deliver_async"]

_H = ChainCallbackHandler


async def deliver_async(
    handlers: AsyncChainCallbackHandler | ChainCallbackHandler, event: Fire | None
) -> Any:
    """Call ``event`` on ``handlers`` (nothing for None) and return its answer.

    Raises:
        HandlerFault: the handler raised.
    """
    if event is None:
        return None
    try:
        answer = getattr(handlers, event.name)(*event.args)
        if inspect.isawaitable(answer):  # unasync: remove
            answer = await answer
    except Exception as exc:
        raise HandlerFault(event.name, exc) from exc
    return answer


async def call_tool_async(
    run: RunState,
    pre: AsyncChainCallbackHandler,
    planned: Planned,
    sink: ProgressSink,
    thread: bool,  # unasync: remove
) -> Outcome:
    """Run one call: its ``on_tool_pre_execution``, then its tool.

    Args:
        run: the run.
        pre: the handlers' ``on_tool_pre_execution``.
        planned: the call.
        sink: where the tool's progress reports go (``ToolContext``).
        thread: a sync tool runs in a worker thread (one of concurrent calls).

    Returns:
        The tool's value, its exception or the handler's fault.
    """
    call, tool = planned.call, planned.tool
    with invocation(tool.name, custom_context=run.chain.custom_context) as inv:
        try:
            await deliver_async(
                pre, fire(_H.on_tool_pre_execution, run.chain, call, tool)
            )
        except HandlerFault as fault:
            return Outcome(fault=fault)
        try:
            context = run.tool_context(call, inv, sink)
            if thread and not tool.is_async:  # unasync: remove
                value = await asyncio.to_thread(tool.function, call.arguments, context)
                if inspect.isawaitable(value):
                    value = await value
                return Outcome(value=value)
            value = tool.function(call.arguments, context)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return Outcome(exception=exc)
        return Outcome(value=value)
