"""LangChain callbacks as langhooks events: ``LangHooksCallbackHandler`` and its
async twin, for ``runnable.invoke(input, {"callbacks": [...]})`` on any Runnable or
LangGraph graph. A callback cannot change what the run does: a review decision
other than ``Allow`` refuses the call (fails closed) instead of being honoured.

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

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import (
    ChatGeneration,
    ChatGenerationChunk,
    GenerationChunk,
    LLMResult,
)
from langgraph.errors import GraphInterrupt
from typing_extensions import override

from ..._core._chain_callbacks import Allow, ChainCallbackHandler, ReviewContext
from ..._core._invocation import current_invocation
from ..._core._messages import LangHooksError, ToolCall
from ._convert import model_name
from ._deliver import Handlers
from ._run import BridgedRun, Event, new_invocation, pause_data

__all__ = ["AsyncLangHooksCallbackHandler", "BridgeWarning", "LangHooksCallbackHandler"]


class BridgeWarning(UserWarning):
    """A bridge could not do what a handler asked (a review decision a callback
    cannot honour): the call was refused instead."""


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


class LangHooksCallbackHandler(BaseCallbackHandler):
    """langhooks handlers as a LangChain callback handler (observation only).

    ``runnable.invoke(input, {"callbacks": [LangHooksCallbackHandler(h1, h2)]})``
    on any Runnable or LangGraph graph: the root run's start and end become
    ``on_run_start`` / ``on_run_complete`` (status "interrupted" when a graph
    paused) / ``on_error``; each chat model call ``on_llm_call_start``, its tokens
    ``on_llm_new_delta`` (text, reasoning, tool-call fragments; a streaming
    handler gets the partials), ``on_tool_call_identified`` as a call's name
    arrives, ``on_llm_call_complete``, ``on_message_processed`` and
    ``on_llm_token_usage``; a failed attempt ``on_llm_error`` and, when another
    follows, ``on_llm_retry``; each tool ``on_tool_execution_started``,
    ``on_tool_pre_execution`` and ``on_tool_execution_completed`` / ``_failed`` /
    ``_exception``, and a batch's results ``on_tool_response_created``.

    Review: a callback cannot change a run, so ``on_tool_call_review`` is asked
    as each tool starts (when a handler overrides it), and any decision but
    ``Allow`` fails closed: a ``BridgeWarning`` names why and the tool does not
    run (LangChain gets a ``LangHooksError``). For review before any call runs,
    with rewrite and interrupt, use ``LangHooksMiddleware`` with ``create_agent``.

    The handler runs inline (``run_inline``) and lets a langhooks handler's
    exception propagate (``raise_error``): LangChain then ends the run with it.
    """

    raise_error = True
    run_inline = True

    def __init__(self, *handlers: object) -> None:
        """Attach sync langhooks handlers.

        Raises:
            TypeError: a handler is not a langhooks handler, or is an async one
                (use ``AsyncLangHooksCallbackHandler``).
        """
        self._handlers: Final = Handlers(
            handlers, type(self).__name__, allow_async=False
        )
        self._tracker: Final = _Tracker(self._handlers.hears)

    @classmethod
    def _for_run(cls, run: BridgedRun, handlers: Handlers) -> LangHooksCallbackHandler:
        """A handler whose model calls belong to ``run`` (a middleware's step)."""
        observer = cls.__new__(cls)
        observer._handlers = handlers  # type: ignore[misc]  # __init__ skipped on purpose
        observer._tracker = _Tracker(handlers.hears, run)  # type: ignore[misc]  # the same
        return observer

    @override
    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.chain_start(inputs, run_id, parent_run_id, metadata)
        self._handlers.deliver(run, events)

    @override
    def on_chain_end(
        self,
        outputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.chain_end(outputs, run_id)
        if run is not None:
            self._handlers.deliver(run, events)

    @override
    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.chain_error(error, run_id)
        if run is not None:
            self._handlers.deliver(run, events)

    @override
    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.model_start(
            messages, run_id, parent_run_id, metadata, kwargs.get("invocation_params")
        )
        self._handlers.deliver(run, events)

    @override
    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.run_of(run_id)
        if run is not None:
            text = token if isinstance(token, str) else ""
            self._handlers.deliver(run, run.token(run_id, _chunk_message(chunk), text))

    @override
    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.run_of(run_id)
        if run is not None:
            events = run.model_end(run_id, _answer(response))
            self._handlers.deliver(run, self._tracker.model_done(run_id, events, run))

    @override
    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.run_of(run_id)
        if run is not None:
            events = run.model_error(run_id, error)
            self._handlers.deliver(run, self._tracker.model_done(run_id, events, run))

    @override
    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.tool_start(
            serialized, inputs, run_id, parent_run_id, kwargs.get("tool_call_id")
        )
        if run is None:
            return
        self._handlers.deliver(run, events, run_id)
        if self._handlers.reviews:
            event = self._tracker.review(run, run_id)
            _refuse(self._handlers.review(event), event[2][1].name)

    @override
    def on_tool_end(
        self,
        output: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.tool_done(run_id)
        if run is not None:
            self._handlers.deliver(run, run.tool_end(run_id, output))

    @override
    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.tool_done(run_id)
        if run is not None:
            self._handlers.deliver(run, run.tool_error(run_id, error))


class AsyncLangHooksCallbackHandler(AsyncCallbackHandler):
    """The async twin of ``LangHooksCallbackHandler``, for ``ainvoke`` /
    ``astream``: takes sync and async langhooks handlers and awaits the async ones.
    """

    raise_error = True
    run_inline = True

    def __init__(self, *handlers: object) -> None:
        """Attach langhooks handlers, sync or async.

        Raises:
            TypeError: a handler is not a langhooks handler.
        """
        self._handlers: Final = Handlers(
            handlers, type(self).__name__, allow_async=True
        )
        self._tracker: Final = _Tracker(self._handlers.hears)

    @classmethod
    def _for_run(
        cls, run: BridgedRun, handlers: Handlers
    ) -> AsyncLangHooksCallbackHandler:
        """A handler whose model calls belong to ``run`` (a middleware's step)."""
        observer = cls.__new__(cls)
        observer._handlers = handlers  # type: ignore[misc]  # __init__ skipped on purpose
        observer._tracker = _Tracker(handlers.hears, run)  # type: ignore[misc]  # the same
        return observer

    @override
    async def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.chain_start(inputs, run_id, parent_run_id, metadata)
        await self._handlers.adeliver(run, events)

    @override
    async def on_chain_end(
        self,
        outputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.chain_end(outputs, run_id)
        if run is not None:
            await self._handlers.adeliver(run, events)

    @override
    async def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.chain_error(error, run_id)
        if run is not None:
            await self._handlers.adeliver(run, events)

    @override
    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.model_start(
            messages, run_id, parent_run_id, metadata, kwargs.get("invocation_params")
        )
        await self._handlers.adeliver(run, events)

    @override
    async def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.run_of(run_id)
        if run is not None:
            text = token if isinstance(token, str) else ""
            await self._handlers.adeliver(
                run, run.token(run_id, _chunk_message(chunk), text)
            )

    @override
    async def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.run_of(run_id)
        if run is not None:
            events = run.model_end(run_id, _answer(response))
            await self._handlers.adeliver(
                run, self._tracker.model_done(run_id, events, run)
            )

    @override
    async def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.run_of(run_id)
        if run is not None:
            events = run.model_error(run_id, error)
            await self._handlers.adeliver(
                run, self._tracker.model_done(run_id, events, run)
            )

    @override
    async def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        run, events = self._tracker.tool_start(
            serialized, inputs, run_id, parent_run_id, kwargs.get("tool_call_id")
        )
        if run is None:
            return
        await self._handlers.adeliver(run, events, run_id)
        if self._handlers.reviews:
            event = self._tracker.review(run, run_id)
            _refuse(await self._handlers.areview(event), event[2][1].name)

    @override
    async def on_tool_end(
        self,
        output: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.tool_done(run_id)
        if run is not None:
            await self._handlers.adeliver(run, run.tool_end(run_id, output))

    @override
    async def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        run = self._tracker.tool_done(run_id)
        if run is not None:
            await self._handlers.adeliver(run, run.tool_error(run_id, error))
