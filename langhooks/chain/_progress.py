"""Tool progress: from ``ToolContext.report_progress`` to ``on_tool_progress``.

A tool may report from wherever it runs (the run's own thread, a worker thread, a
task, a thread it started), but handlers hear the event where they hear the call's
other events: on the run's thread (``run()``) or task (``arun()``). Each ``Execute``
gets a channel; its sinks (one per call, the tool's ``ToolContext.progress_sink``)
queue reports, and the driver delivers them while it waits for the tools, in the
order reported, and all of them before it returns the calls' outcomes: each call's
progress comes after its ``on_tool_execution_started`` and before its result.

Under ``run()`` a report made on the run's own thread (a tool that is not concurrent)
is delivered at once, so the events are live there too. Under ``arun()`` a sync tool
that is not concurrent blocks the event loop while it runs: its reports are
delivered when it returns (still before its result).

A handler that raises in ``on_tool_progress`` is that call's fault (the run ends
with "handler_error" once the batch's calls have run); the call's later reports
are not delivered. A report after the call's ``Execute`` ended (from a thread the
tool left running) raises ``RuntimeError`` in the reporting thread.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeAlias, final

import attrs

from .._core._chain_callbacks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
)
from .._core._messages import ToolCall
from .._core._tools import ProgressSink, ToolProgress
from ._calls_async import deliver_async
from ._calls_sync import deliver_sync
from ._ops import HandlerFault, Outcome, Planned, RunState, fire

__all__ = ["AsyncProgressChannel", "ProgressChannel"]

_H = ChainCallbackHandler

# One report: the index of its call in the Execute, the call, the progress.
_Report: TypeAlias = tuple[int, ToolCall, ToolProgress]


@final
@attrs.define
class _Reports:
    """What both channels keep: the faults by call, and whether it is closed."""

    faults: dict[int, HandlerFault] = attrs.field(factory=dict)
    closed: bool = False
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def check_open(self) -> None:
        if self.closed:
            raise RuntimeError(
                "report_progress was called after the tool call ended (from a "
                "thread the tool left running?): report before the tool returns"
            )

    def outcomes(self, outcomes: Sequence[Outcome]) -> list[Outcome]:
        """The calls' outcomes, with a progress fault in place of its call's."""
        return [
            Outcome(fault=self.faults[index]) if index in self.faults else outcome
            for index, outcome in enumerate(outcomes)
        ]


@final
class ProgressChannel:
    """Progress under ``run()``: delivered on the run's thread."""

    __slots__ = ("_handlers", "_owner", "_queue", "_reports", "_run")

    def __init__(self, run: RunState, handlers: ChainCallbackHandler) -> None:
        self._run: Final = run
        self._handlers: Final = handlers
        self._owner: Final = threading.get_ident()
        self._queue: Final[queue.SimpleQueue[_Report | None]] = queue.SimpleQueue()
        self._reports: Final = _Reports()

    def sink(self, index: int, call: ToolCall) -> ProgressSink:
        """The ``progress_sink`` of the call at ``index``."""

        def report(progress: ToolProgress) -> None:
            with self._reports.lock:
                self._reports.check_open()
                if threading.get_ident() != self._owner:
                    self._queue.put((index, call, progress))
                    return
            self.flush()
            self._deliver((index, call, progress))

        return report

    def _deliver(self, report: _Report) -> None:
        index, call, progress = report
        if index in self._reports.faults:
            return
        try:
            event = fire(_H.on_tool_progress, self._run.chain, call, progress)
            deliver_sync(self._handlers, event)
        except HandlerFault as fault:
            self._reports.faults[index] = fault

    def flush(self) -> None:
        """Deliver the reports queued so far (from other threads)."""
        while True:
            try:
                report = self._queue.get_nowait()
            except queue.Empty:
                return
            # (No end marker here: only wait() reads those, and it reads them all.)
            assert report is not None
            self._deliver(report)

    def wait(self, running: int) -> None:
        """Deliver reports until ``running`` calls said they are done (``done``)."""
        while running:
            report = self._queue.get()
            if report is None:
                running -= 1
            else:
                self._deliver(report)

    def done(self) -> None:
        """A call running in a worker thread finished (after its last report)."""
        self._queue.put(None)

    def close(self, outcomes: Sequence[Outcome]) -> list[Outcome]:
        """Deliver what is left and refuse later reports.

        Returns:
            ``outcomes``, with a handler's progress fault in place of its call's.
        """
        self.flush()
        with self._reports.lock:
            self._reports.closed = True
        return self._reports.outcomes(outcomes)


@final
class AsyncProgressChannel:
    """Progress under ``arun()``: delivered by the run's task (``run``)."""

    __slots__ = ("_handlers", "_loop", "_owner", "_queue", "_reports", "_run")

    def __init__(self, run: RunState, handlers: AsyncChainCallbackHandler) -> None:
        self._run: Final = run
        self._handlers: Final = handlers
        self._loop: Final = asyncio.get_running_loop()
        self._owner: Final = threading.get_ident()
        self._queue: Final[asyncio.Queue[_Report | None]] = asyncio.Queue()
        self._reports: Final = _Reports()

    def sink(self, index: int, call: ToolCall) -> ProgressSink:
        """The ``progress_sink`` of the call at ``index``."""

        def report(progress: ToolProgress) -> None:
            with self._reports.lock:
                self._reports.check_open()
                # Under the lock: close() cannot come between the check and the
                # put, so every accepted report is delivered.
                if threading.get_ident() == self._owner:
                    self._queue.put_nowait((index, call, progress))
                else:
                    self._loop.call_soon_threadsafe(
                        self._queue.put_nowait, (index, call, progress)
                    )

        return report

    async def run(self, work: Callable[[], Awaitable[list[Outcome]]]) -> list[Outcome]:
        """Run the calls (``work``) while delivering their reports.

        Cancelled, it cancels the calls and waits for them to end.

        Returns:
            The calls' outcomes, with a handler's progress fault in place of its
            call's.
        """
        task = asyncio.ensure_future(work())
        # After the calls' last reports: a worker thread's reports were scheduled
        # on the loop before its result was.
        task.add_done_callback(lambda _: self._queue.put_nowait(None))
        try:
            while (report := await self._queue.get()) is not None:
                await self._deliver(report)
        except BaseException:
            task.cancel()
            await asyncio.wait((task,))
            raise
        finally:
            with self._reports.lock:
                self._reports.closed = True
        return self._reports.outcomes(task.result())

    async def _deliver(self, report: _Report) -> None:
        index, call, progress = report
        if index in self._reports.faults:
            return
        try:
            event = fire(_H.on_tool_progress, self._run.chain, call, progress)
            await deliver_async(self._handlers, event)
        except HandlerFault as fault:
            self._reports.faults[index] = fault


def sinks(
    channel: ProgressChannel | AsyncProgressChannel, planned: Sequence[Planned]
) -> list[ProgressSink]:
    """One sink per planned call, in call order."""
    return [channel.sink(index, one.call) for index, one in enumerate(planned)]
