"""What the two drivers that perform a run's operations share.

The drivers are ``drive_async`` (``_perform_async``, written by hand) and
``drive_sync`` (``_perform_sync``, generated from it by ``scripts/unasync.py``), and
the calls into user code they make are ``deliver_async``/``call_tool_async``
(``_calls_async``) and their generated twins (``_calls_sync``). Each driver advances
the run's generator, performs the operation it yielded (deliver an event, stream a
model call, sleep, execute tools) and sends the result back, or throws a model's
``LangHooksError`` or a handler's fault into it: that loop is ``_Trampoline``, here.
Handlers are called through ``HandlerWithoutInvocation`` except
``on_tool_pre_execution``, which runs where the tool runs (``_execute``), and
``on_llm_call_start``, which runs in the model attempt's own copy of the context,
before the model streams there.

Here too is what only the sync modules need: ``sync_callbacks`` (a sync run takes
sync handlers only) and ``run_awaitable`` (a sync run finishes an async tool).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, final

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._messages import LangHooksError
from ._operations import Complete, Fire, HandlerFault, Op, Steps, fire

if TYPE_CHECKING:
    from .._core._result import RunResult
    from ._snapshot import ChainSnapshot

__all__ = ["run_awaitable", "sync_callbacks"]


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


def run_awaitable(awaitable: Awaitable[Any]) -> Any:
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


def _completion(op: Complete) -> Fire:
    return fire(ChainCallbackHandler.on_run_complete, op.chain, op.result)


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
