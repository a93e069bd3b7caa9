"""The run loop behind ``LLMChain.run`` and ``LLMChain.arun``, written once.

A run is a generator that yields *operations* (fire a chain event, stream a model
call, sleep, execute tools) and receives their results; two small drivers perform
them, one synchronously (threads for concurrent tools) and one with ``await`` (tasks
for concurrent tools). So the firing order is defined in one place for both.

One module per concern, read in this order:

- ``_run``: ``Run``, the state machine: the frame every run shares (start, body,
  complete or error), the loop of model calls and tool batches, one model step
  with its retries and fallbacks, message processors, the failure counter;
- ``_batch``: ``ToolBatch``, one batch of tool calls, step by step (review all,
  announce, run concurrent, run sequential, report, add the tool message);
- ``_ops``: the operations, and ``fire(Interface.on_event, *args)``, the one typed
  way an event is fired;
- ``_calls_async`` (``_calls_sync`` generated from it): a chain event delivered to
  the handlers, one tool call;
- ``_bridge``: a model's streaming callbacks become chain events, live;
- ``_execute``: tools run in their own context, in threads or tasks;
- ``_drive``: what the two drivers share, the loop of a run's operations;
- ``_perform_async`` (``_perform_sync`` generated from it): the drivers;
- ``_tool_results``: the results a run makes, and how it describes failures.

This module re-exports what ``LLMChain`` (and code written against it) uses.
"""

from __future__ import annotations

from ._drive import sync_callbacks
from ._perform_async import drive_async
from ._perform_sync import drive_sync
from ._run import Mode, Run
from ._tool_results import (
    INTERRUPT_STAND_IN,
    check_arguments,
    pending_results,
    waiting_position,
)

__all__ = [
    "INTERRUPT_STAND_IN",
    "Mode",
    "Run",
    "check_arguments",
    "drive_async",
    "drive_sync",
    "pending_results",
    "sync_callbacks",
    "waiting_position",
]
