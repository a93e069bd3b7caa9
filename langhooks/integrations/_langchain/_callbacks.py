"""What the LangChain callback handlers share (``_callbacks_async.py`` and its
generated twin ``_callbacks_sync.py``): a callback cannot change what the run does,
so a review decision other than ``Allow`` refuses the call (fails closed) instead of
being honoured.

``_Tracker`` keeps the bookkeeping both share: which bridged run each LangChain run
id belongs to. The root run (no parent) is a langhooks run; a chat model called
inside a tool, inside another middleware's hook (a node named ``Name.hook``) or in a
sub-graph is a nested run of its own, whose invocation is a child of the run's, so
its tokens never reach the parent's stream.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Final, final
from uuid import UUID

from langchain_core.messages import BaseMessage
from langchain_core.outputs import (
    ChatGeneration,
    ChatGenerationChunk,
    LLMResult,
)
from langgraph.errors import GraphInterrupt

from ..._core._chain_callbacks import Allow, ChainCallbackHandler, ReviewContext
from ..._core._invocation import current_invocation
from ..._core._messages import LangHooksError, ToolCall
from .._bridging._warnings import BridgeWarning
from ._convert import model_name
from ._run import BridgedRun, Event, new_invocation, pause_data

_HOOKS: Final = ("before_agent", "before_model", "after_model", "after_agent")


def _nested_node(metadata: Mapping[str, Any] | None, *, chain: bool) -> bool:
    """Whether a run's metadata says it runs in a middleware hook or a sub-graph
    (a sub-graph's chains have a ``checkpoint_ns``; a model call's
    ``langgraph_checkpoint_ns`` then has more than one part)."""
    if not metadata:
        return False
    node = str(metadata.get("langgraph_node", ""))
    if "." in node and node.rsplit(".", 1)[1] in _HOOKS:
        return True
    if chain:
        return bool(metadata.get("checkpoint_ns"))
    return "|" in str(metadata.get("langgraph_checkpoint_ns", ""))


@final
class _Tracker:
    """Which bridged run each LangChain run belongs to (see the module)."""

    def __init__(self, hears: frozenset[str], bound: BridgedRun | None = None) -> None:
        self.hears = hears
        #: The run every model call without a known parent belongs to (the
        #: middleware's, which adds this handler to one model step).
        self.bound = bound
        # run id -> (its bridged run, whether it is inside a tool or nested part)
        self.owner: dict[UUID, tuple[BridgedRun, bool]] = {}
        self.roots: dict[UUID, BridgedRun] = {}
        self.nested: dict[UUID, BridgedRun] = {}
        # the runs that ran tools (a tool node): their end closes the batch
        self.tool_parents: set[UUID] = set()

    def chain_start(
        self,
        inputs: object,
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: Mapping[str, Any] | None,
    ) -> tuple[BridgedRun, list[Event]]:
        parent = self.owner.get(parent_run_id) if parent_run_id else None
        if parent is None:
            messages = inputs.get("messages") if isinstance(inputs, Mapping) else None
            run = BridgedRun(
                new_invocation("run", current_invocation(), None),
                messages=[m for m in messages or () if isinstance(m, BaseMessage)],
                hears=self.hears,
            )
            self.roots[run_id] = run
            self.owner[run_id] = (run, False)
            return run, run.start()
        run, inside = parent
        self.owner[run_id] = (run, inside or _nested_node(metadata, chain=True))
        return run, []

    def chain_end(
        self, outputs: object, run_id: UUID
    ) -> tuple[BridgedRun | None, list[Event]]:
        entry = self.owner.pop(run_id, None)
        run = self.roots.pop(run_id, None)
        if run is None:
            if entry is not None and run_id in self.tool_parents:
                self.tool_parents.discard(run_id)
                return entry[0], entry[0].close_batch()
            return None, []
        if run.paused is not None:
            return run, run.complete("interrupted", run.paused)
        return run, run.complete()

    def chain_error(
        self, error: BaseException, run_id: UUID
    ) -> tuple[BridgedRun | None, list[Event]]:
        entry = self.owner.pop(run_id, None)
        self.tool_parents.discard(run_id)
        run = self.roots.pop(run_id, None)
        if isinstance(error, GraphInterrupt) and entry is not None:
            # A node paused the graph; the graph itself ends as usual.
            entry[0].paused = pause_data(error.args[0] if error.args else ())
        if run is None:
            return None, []
        return run, run.fail(error)

    def model_start(
        self,
        messages: list[list[BaseMessage]],
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: Mapping[str, Any] | None,
        invocation_params: Mapping[str, Any] | None,
    ) -> tuple[BridgedRun, list[Event]]:
        parent = self.owner.get(parent_run_id) if parent_run_id else None
        if parent is None and self.bound is not None:
            parent = (self.bound, False)
        tools = (invocation_params or {}).get("tools") or ()
        conversation = messages[0] if messages else []
        if parent is not None and not (
            parent[1] or _nested_node(metadata, chain=False)
        ):
            run = parent[0]
            if tools:
                run.use_tools(tools)
            run.use_model(model_name(None, invocation_params))
            self.owner[run_id] = (run, False)
            return run, run.model_start(run_id, conversation)
        # A model called on its own, or as a nested part of a run: a run of its own.
        outer = None if parent is None else parent[0].invocation
        run = BridgedRun(
            new_invocation("model", outer or current_invocation(), None),
            messages=conversation,
            hears=self.hears,
        )
        run.use_tools(tools)
        run.use_model(model_name(None, invocation_params))
        self.nested[run_id] = run
        self.owner[run_id] = (run, False)
        return run, run.start() + run.model_start(run_id, conversation)

    def model_done(
        self, run_id: UUID, events: list[Event], run: BridgedRun
    ) -> list[Event]:
        self.owner.pop(run_id, None)
        if self.nested.pop(run_id, None) is not None:
            events = events + (
                run.fail(run.failed[0]) if run.failed else run.complete()
            )
        return events

    def tool_done(self, run_id: UUID) -> BridgedRun | None:
        """The run of tool run ``run_id``, which ended."""
        entry = self.owner.pop(run_id, None)
        return None if entry is None else entry[0]

    def run_of(self, run_id: UUID) -> BridgedRun | None:
        entry = self.owner.get(run_id)
        return None if entry is None else entry[0]

    def tool_start(
        self,
        serialized: Mapping[str, Any],
        inputs: Mapping[str, Any] | None,
        run_id: UUID,
        parent_run_id: UUID | None,
        tool_call_id: str | None,
    ) -> tuple[BridgedRun | None, list[Event]]:
        parent = self.owner.get(parent_run_id) if parent_run_id else None
        if parent is None:
            return None, []
        run = parent[0]
        self.owner[run_id] = (run, True)
        self.tool_parents.add(parent_run_id)  # type: ignore[arg-type]  # not None here
        call = ToolCall(
            call_id=tool_call_id or str(run_id),
            name=str(serialized.get("name") or "tool"),
            arguments=dict(inputs or {}),
        )
        return run, run.tool_start(run_id, call)

    def review(self, run: BridgedRun, run_id: UUID) -> Event:
        """The review of tool run ``run_id``, asked when the tool starts."""
        call, tool, _ = run.tool_runs[run_id]
        context = ReviewContext(custom_context=run.chain.custom_context)
        return run.event(ChainCallbackHandler.on_tool_call_review, call, tool, context)


def _refuse(decision: object, call_name: str) -> None:
    """Fail closed on a decision a callback cannot honour: warn, then raise so
    LangChain does not run the tool."""
    if decision is None or isinstance(decision, Allow):
        return
    why = (
        f"LangHooksCallbackHandler cannot honour {decision!r} for a call of "
        f"{call_name!r}: a callback cannot change a run, so the call is refused "
        f"instead (use LangHooksMiddleware with create_agent to review)"
    )
    warnings.warn(why, BridgeWarning, stacklevel=3)
    raise LangHooksError("invalid_request", why)


def _answer(response: LLMResult) -> BaseMessage | None:
    """The message a chat model's result carries (None for a text LLM's)."""
    generation = response.generations[0][0] if response.generations else None
    return generation.message if isinstance(generation, ChatGeneration) else None


def _chunk_message(chunk: object) -> BaseMessage | None:
    return chunk.message if isinstance(chunk, ChatGenerationChunk) else None
