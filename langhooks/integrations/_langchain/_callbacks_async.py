"""``AsyncLangHooksCallbackHandler``: LangChain callbacks as langhooks events, for
``runnable.ainvoke(input, {"callbacks": [...]})`` / ``astream`` on any Runnable or
LangGraph graph. The source of ``_callbacks_sync.py`` (``LangHooksCallbackHandler``,
for ``invoke``), which ``scripts/unasync.py`` writes from it.
"""

from __future__ import annotations

from typing import Any, Final
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk, LLMResult
from typing_extensions import override

from ._callbacks import _answer, _chunk_message, _refuse, _Tracker
from ._deliver import Handlers
from ._run import BridgedRun

__all__ = ["AsyncLangHooksCallbackHandler"]


class AsyncLangHooksCallbackHandler(AsyncCallbackHandler):
    """langhooks handlers as a LangChain callback handler (observation only).

    On any Runnable or LangGraph graph, as
    ``handler = AsyncLangHooksCallbackHandler(h1, h2)`` and
    ``await runnable.ainvoke(input, {"callbacks": [handler]})``: the root run's
    start and end become ``on_run_start`` / ``on_run_complete`` (status
    "interrupted" when a graph paused) / ``on_error``; each chat model call
    ``on_llm_call_start``, its tokens ``on_llm_new_delta`` (text, reasoning,
    tool-call fragments; a streaming handler gets the partials),
    ``on_tool_call_identified`` as a call's name arrives, ``on_llm_call_complete``,
    ``on_message_processed`` and ``on_llm_token_usage``; a failed attempt
    ``on_llm_error`` and, when another follows, ``on_llm_retry``; each tool
    ``on_tool_execution_started``, ``on_tool_pre_execution`` and
    ``on_tool_execution_completed`` / ``_failed`` / ``_exception``, and a batch's
    results ``on_tool_response_created``. Sync and async langhooks handlers attach;
    the async ones are awaited.

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
