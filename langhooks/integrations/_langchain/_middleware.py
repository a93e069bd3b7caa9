"""``LangHooksMiddleware``: langhooks handlers in ``create_agent``, review included.

Where each event comes from:

- ``before_agent`` starts the run (``on_run_start``); ``after_agent`` ends it
  (``on_run_complete``); a model step that gives up ends it with ``on_error``.
- ``wrap_model_call`` adds a callback handler to the model call's config for the
  call's duration, so each attempt's start, tokens, answer and failure become the
  model events (a retry middleware inside this one shows as ``on_llm_retry``).
- after the model answers, still inside ``wrap_model_call``, every call of the
  answer is reviewed before any runs (the batch contract): the fold of the
  handlers' ``on_tool_call_review``, then ``on_tool_execution_failed`` for the
  denied calls and ``on_tool_execution_started`` for those that will run. The
  settled decisions go into the agent's state (``langhooks_batch``) with the
  model's answer (an ``ExtendedModelResponse`` command), so they survive a
  checkpoint. (An ``after_model`` hook would be one more graph node per model
  turn, which costs about as much as the whole bridge's own work.)
- ``wrap_tool_call`` honours the decision: runs the call (with rewritten
  arguments; a tool that raises answers the model with an error tool message, as
  under ``LLMChain``, and the run goes on), returns the denial as an error tool
  message, or pauses the run with LangGraph's ``interrupt()`` before the tool runs.
  ``create_agent`` runs each call as a task of its own, so on
  ``Command(resume=...)`` only that call's task runs again: ``interrupt()``
  returns the human's ``Decision``, the reviewers are asked again with
  ``review.human_decision`` set (as ``LLMChain`` does) and the call runs once.
  (Pausing in ``after_model`` instead would run the whole review again on resume,
  and telling a resume from a first pass there needs LangGraph's private state.)

The run's id is kept in the state (``langhooks_run``): a resume in another process
continues the same run id, as ``LLMChain``'s resume does.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any, Final, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ToolCallRequest,
)
from langchain_core.callbacks import (
    BaseCallbackHandler,
    BaseCallbackManager,
    CallbackManager,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables.config import ensure_config, var_child_runnable_config
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.types import Command, interrupt
from langgraph.types import Interrupt as GraphPause
from typing_extensions import override

from ..._core._chain_callbacks import (
    Allow,
    ChainCallbackHandler,
    Deny,
    Interrupt,
    ReviewContext,
    UpdateArguments,
)
from ..._core._invocation import Invocation, entered
from ..._core._messages import ToolCall, ToolResult
from ..._persist._codec_api import decode, encode
from ...chain._decision import Decision
from ...chain._tool_results import error_result, interrupted_result, result_of
from ._callbacks_async import AsyncLangHooksCallbackHandler
from ._callbacks_sync import LangHooksCallbackHandler
from ._convert import model_name
from ._deliver import Handlers
from ._run import BridgedRun, Event, new_invocation, pause_data

__all__ = ["LangHooksMiddleware", "resume_command"]

_C = ChainCallbackHandler
_RUN: Final = "langhooks_run"
_BATCH: Final = "langhooks_batch"


class LangHooksState(AgentState[Any]):
    """The agent state the middleware adds: the run's id and the batch's decisions."""

    langhooks_run: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]
    langhooks_batch: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


def _decision(data: object) -> Any:
    return decode(data) if isinstance(data, Mapping) else Allow()


def _human(answer: object) -> Decision:
    """The human's answer to an interrupt, as a ``Decision``."""
    if isinstance(answer, Mapping):
        answer = decode(answer)
    if not isinstance(answer, Decision):
        raise TypeError(
            f"resume an interrupted call with a langhooks Decision (see "
            f"resume_command), got {answer!r}"
        )
    return answer


def resume_command(
    interrupts: Sequence[GraphPause], decisions: Mapping[str, Decision]
) -> Command[Any]:
    """The ``Command`` that resumes a paused agent with human decisions.

    Args:
        interrupts: the paused run's interrupts (``result["__interrupt__"]``).
        decisions: a ``Decision`` per interrupted call id.

    Returns:
        ``Command(resume={interrupt id: encoded decision})``, JSON-able, so any
        checkpointer stores it.

    Raises:
        ValueError: an interrupt has no decision, or is not one of this
            middleware's.
    """
    answers: dict[str, Any] = {}
    for pause in interrupts:
        value = pause.value
        call_id = value.get("tool_call_id") if isinstance(value, Mapping) else None
        if not isinstance(call_id, str) or call_id not in decisions:
            raise ValueError(
                f"no decision for the interrupted call {call_id!r}; pass one per "
                f"call id of the interrupts"
            )
        answers[pause.id] = encode(decisions[call_id])
    return Command(resume=answers)


@contextmanager
def _observed(observer: BaseCallbackHandler) -> Iterator[None]:
    """Add ``observer`` to the callbacks of what runs in the block (the model call
    the node makes without a config of its own)."""
    config = ensure_config()
    callbacks = config.get("callbacks")
    manager = (
        callbacks.copy()  # a graph node's: far cheaper than configure()
        if isinstance(callbacks, BaseCallbackManager)
        else CallbackManager.configure(inheritable_callbacks=callbacks)
    )
    manager.add_handler(observer, inherit=True)
    token = var_child_runnable_config.set({**config, "callbacks": manager})
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)


def _with_batch(
    request: ModelRequest[Any],
    response: ModelResponse[Any],
    decisions: Mapping[str, Any],
) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
    """The model's answer, with the settled decisions of its calls saved in the
    agent's state (``langhooks_batch``) beside it: the tool step reads them there,
    also after a checkpointed pause resumed in another process. Without a
    decision to save and none saved before, the answer alone (a state update
    costs the graph a write per turn)."""
    if not decisions and not request.state.get(_BATCH):
        return response
    return ExtendedModelResponse(
        model_response=response, command=Command(update={_BATCH: dict(decisions)})
    )


class _Plan:
    """What ``wrap_tool_call`` does with one call: a result to return instead of
    running it, or the call to run."""

    __slots__ = ("call", "result")

    def __init__(self, call: ToolCall, result: ToolResult | None) -> None:
        self.call = call
        self.result = result


def _settled(call: ToolCall, decision: object) -> _Plan:
    if isinstance(decision, UpdateArguments):
        return _Plan(
            ToolCall(
                call_id=call.call_id,
                name=call.name,
                arguments=decision.arguments,
                index=call.index,
            ),
            None,
        )
    if isinstance(decision, Deny):
        text = f"The tool call was denied: {decision.reason}"
        return _Plan(call, error_result(call, text, is_error=False))
    if isinstance(decision, Interrupt):
        return _Plan(call, interrupted_result(call, decision.message, decision.data))
    return _Plan(call, None)


def _message(result: ToolResult, status: str) -> ToolMessage:
    return ToolMessage(
        content=result.content[0].content if result.content else "",
        name=result.name,
        tool_call_id=result.tool_call_id,
        status=status,
    )


def _failure(call: ToolCall, error: Exception) -> ToolMessage:
    """What the model is told of a tool that raised (as ``LLMChain`` tells it)."""
    result, _ = result_of(call, None, error)
    return _message(result, "error")


def _call_of(request: ToolCallRequest) -> ToolCall:
    raw = request.tool_call
    return ToolCall(
        call_id=raw["id"] or "call", name=raw["name"], arguments=raw["args"]
    )


class LangHooksMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """langhooks handlers for ``create_agent(model, tools, middleware=[...])``.

    Every event of ``LangHooksCallbackHandler``, plus review: ``on_tool_call_review``
    decides every call of a model turn before any runs; ``Allow`` runs it,
    ``UpdateArguments`` runs it with the new arguments, ``Deny`` answers the model
    with the denial (an error tool message), ``Interrupt`` pauses the run with
    LangGraph's ``interrupt()`` (the agent needs a checkpointer). Resume with
    ``agent.invoke(resume_command(result["__interrupt__"], {call_id: Decision}),
    config)``, in this process or another. An approved call runs once.

    Sync handlers serve ``invoke``/``stream`` and ``ainvoke``/``astream``; async
    handlers serve the async entry points only.
    """

    # The state it keeps beside the agent's (LangChain merges the schemas).
    state_schema: type[AgentState[Any]] = LangHooksState

    def __init__(self, *handlers: object) -> None:
        """Attach langhooks handlers.

        Raises:
            TypeError: a handler is not a langhooks handler.
        """
        super().__init__()
        self._async_handlers: Final = Handlers(
            handlers, "LangHooksMiddleware", allow_async=True
        )
        self._sync_handlers: Final = (
            None
            if self._async_handlers.is_async
            else Handlers(handlers, "LangHooksMiddleware", allow_async=False)
        )
        self._runs: Final[dict[str, BridgedRun]] = {}
        self._lock: Final = threading.Lock()

    @property
    def _sync(self) -> Handlers:
        if self._sync_handlers is None:
            raise TypeError(
                "LangHooksMiddleware has async handlers: run the agent with "
                "ainvoke/astream, or give it sync handlers"
            )
        return self._sync_handlers

    # --- the run --------------------------------------------------------------------

    def _begin(
        self, state: Mapping[str, Any]
    ) -> tuple[BridgedRun, dict[str, Any], list[Event]]:
        invocation = new_invocation("run", None, None)
        run = BridgedRun(
            invocation,
            messages=state.get("messages", ()),
            hears=self._async_handlers.hears,
        )
        with self._lock:
            self._runs[invocation.id] = run
        saved = {"id": invocation.id, "started_at": invocation.started_at.isoformat()}
        return run, {_RUN: saved, _BATCH: {}}, run.start()

    def _current(self, state: Mapping[str, Any]) -> tuple[BridgedRun, list[Event]]:
        """The run the state belongs to; started again when this process has not
        seen it (a resume, here or in another process)."""
        saved = state.get(_RUN) or {}
        key = saved.get("id")
        with self._lock:
            run = self._runs.get(key) if key else None
            if run is not None:
                return run, []
            invocation = (
                Invocation(
                    id=key,
                    name="run",
                    started_at=datetime.fromisoformat(saved["started_at"]),
                )
                if key
                else new_invocation("run", None, None)
            )
            run = BridgedRun(
                invocation,
                messages=state.get("messages", ()),
                hears=self._async_handlers.hears,
            )
            self._runs[invocation.id] = run
        batch = state.get(_BATCH) or {}
        run.batch = {
            call_id: None
            for call_id, data in batch.items()
            if isinstance(_decision(data), Interrupt)
        }
        return run, run.start()

    def _forget(self, run: BridgedRun) -> None:
        if run.ended:
            with self._lock:
                self._runs.pop(run.invocation.id, None)

    @override
    def before_agent(
        self, state: AgentState[Any], runtime: Any
    ) -> dict[str, Any] | None:
        run, update, events = self._begin(state)
        self._sync.deliver(run, events)
        return update

    @override
    async def abefore_agent(
        self, state: AgentState[Any], runtime: Any
    ) -> dict[str, Any] | None:
        run, update, events = self._begin(state)
        await self._async_handlers.adeliver(run, events)
        return update

    @override
    def after_agent(
        self, state: AgentState[Any], runtime: Any
    ) -> dict[str, Any] | None:
        run, events = self._current(state)
        self._sync.deliver(run, events + run.complete())
        self._forget(run)
        return None

    @override
    async def aafter_agent(
        self, state: AgentState[Any], runtime: Any
    ) -> dict[str, Any] | None:
        run, events = self._current(state)
        await self._async_handlers.adeliver(run, events + run.complete())
        self._forget(run)
        return None

    # --- model calls ------------------------------------------------------------------

    def _model_step(self, request: ModelRequest[Any]) -> tuple[BridgedRun, list[Event]]:
        run, events = self._current(request.state)
        run.use_tools([t for t in request.tools if isinstance(t, BaseTool)])
        run.use_model(model_name(request.model))
        return run, events

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        run, events = self._model_step(request)
        handlers = self._sync
        handlers.deliver(run, events)
        try:
            with _observed(LangHooksCallbackHandler._for_run(run, handlers)):
                response = handler(request)
        except GraphInterrupt as pause:  # a middleware inside this one paused
            handlers.deliver(
                run, run.complete("interrupted", pause_data(pause.args[0]))
            )
            self._forget(run)
            raise
        except GraphBubbleUp:  # pragma: no cover  # a Command for a parent graph
            raise
        except Exception as error:
            handlers.deliver(run, run.fail(error))
            self._forget(run)
            raise
        decisions: dict[str, Any] = {}  # Allow when absent
        plans = []
        for call in self._calls(run, response):
            decision = None
            if handlers.reviews:  # the fold settles a decision for every call
                decision = handlers.review(self._review_event(run, call, None))
                decisions[call.call_id] = encode(decision)
            plans.append(_settled(call, decision))
        handlers.deliver(run, self._announce(run, plans))
        return _with_batch(request, response, decisions)

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        run, events = self._model_step(request)
        handlers = self._async_handlers
        await handlers.adeliver(run, events)
        try:
            with _observed(AsyncLangHooksCallbackHandler._for_run(run, handlers)):
                response = await handler(request)
        except GraphInterrupt as pause:  # a middleware inside this one paused
            await handlers.adeliver(
                run, run.complete("interrupted", pause_data(pause.args[0]))
            )
            self._forget(run)
            raise
        except GraphBubbleUp:  # pragma: no cover  # a Command for a parent graph
            raise
        except Exception as error:
            await handlers.adeliver(run, run.fail(error))
            self._forget(run)
            raise
        decisions: dict[str, Any] = {}  # Allow when absent
        plans = []
        for call in self._calls(run, response):
            decision = None
            if handlers.reviews:  # the fold settles a decision for every call
                decision = await handlers.areview(self._review_event(run, call, None))
                decisions[call.call_id] = encode(decision)
            plans.append(_settled(call, decision))
        await handlers.adeliver(run, self._announce(run, plans))
        return _with_batch(request, response, decisions)

    # --- review -----------------------------------------------------------------------

    def _calls(self, run: BridgedRun, response: ModelResponse[Any]) -> list[ToolCall]:
        """The calls of the answer to review (a call of an unknown tool is left
        to LangChain, which answers it)."""
        messages = response.result
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return []
        calls = run.conversation([last])[0].tool_calls
        return [call for call in calls if run.tool(call.name) is not None]

    def _review_event(
        self, run: BridgedRun, call: ToolCall, human: str | None
    ) -> Event:
        context = ReviewContext(
            human_decision=human,  # type: ignore[arg-type]  # "approve" | "edit" | None
            custom_context=run.chain.custom_context,
        )
        return run.event(_C.on_tool_call_review, call, run.tools[call.name], context)

    def _announce(self, run: BridgedRun, plans: Sequence[_Plan]) -> list[Event]:
        """The failures and starts review settled, for the handlers that hear them."""
        events: list[Event] = []
        for plan in plans:
            if plan.result is not None and not plan.result.is_interrupt:
                run.emit(events, _C.on_tool_execution_failed, plan.call, plan.result)
        for plan in plans:
            tool = run.tool(plan.call.name)
            if plan.result is None and tool is not None:
                run.emit(events, _C.on_tool_execution_started, plan.call, tool)
        return events

    # --- tool calls -------------------------------------------------------------------

    def _pause_value(self, plan: _Plan) -> dict[str, Any]:
        """What the interrupt of a call tells the human (and the caller)."""
        assert plan.result is not None
        assert plan.result.interrupt_data is not None
        return {
            **plan.result.interrupt_data,
            "message": plan.result.display_text or "",
            "name": plan.call.name,
            "arguments": dict(plan.call.arguments),
        }

    def _after_human(
        self, run: BridgedRun, call: ToolCall, human: Decision
    ) -> _Plan | tuple[ToolCall, Event]:
        """After a human's answer: the plan of a rejected call, or the call to
        review again and its review event."""
        if human.kind == "reject":
            return _Plan(call, error_result(call, human.reason, is_error=False))
        if human.arguments is not None:
            call = ToolCall(
                call_id=call.call_id,
                name=call.name,
                arguments=human.arguments,
                index=call.index,
            )
        kind = "edit" if human.kind == "edit" else "approve"
        return call, self._review_event(run, call, kind)

    def _tool_step(
        self, request: ToolCallRequest
    ) -> tuple[BridgedRun, list[Event], ToolCall, _Plan]:
        run, events = self._current(request.state)
        if not run.tools:  # a resume: this process has not seen a model call yet
            known = [*getattr(request.runtime, "tools", ()), request.tool]
            run.use_tools([t for t in known if isinstance(t, BaseTool)])
        call = _call_of(request)
        batch = request.state.get(_BATCH) or {}
        return run, events, call, _settled(call, _decision(batch.get(call.call_id)))

    def _answered(
        self, run: BridgedRun, plan: _Plan, *, rejected: bool
    ) -> tuple[list[Event], ToolMessage]:
        """The events and the tool message of a call that does not run."""
        assert plan.result is not None
        events: list[Event] = []
        if rejected:  # a denial was reported when review settled it
            events.append(
                run.event(_C.on_tool_execution_failed, plan.call, plan.result)
            )
        return events + run.settle(plan.call.call_id, plan.result), _message(
            plan.result, "error"
        )

    def _paused(
        self, run: BridgedRun, call: ToolCall, pause: GraphInterrupt
    ) -> list[Event]:
        """A tool paused the graph with its own ``interrupt()``: its call waits."""
        run.tool_runs.pop(call.call_id, None)
        data = pause_data(pause.args[0])
        message = str(data.get("message", "")) if "interrupts" not in data else ""
        waiting = interrupted_result(call, message, data)
        return run.settle(call.call_id, waiting)

    def _runner(self, request: ToolCallRequest, plan: _Plan) -> ToolCallRequest:
        return request.override(
            tool_call={**request.tool_call, "args": dict(plan.call.arguments)}
        )

    @override
    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        handlers = self._sync
        run, events, call, plan = self._tool_step(request)
        handlers.deliver(run, events)
        rejected = False
        while plan.result is not None and plan.result.is_interrupt:
            try:
                answer = interrupt(self._pause_value(plan))
            except GraphInterrupt:
                with run.lock:
                    handlers.deliver(run, run.settle(call.call_id, plan.result))
                self._forget(run)
                raise
            after = self._after_human(run, call, _human(answer))
            if isinstance(after, _Plan):
                plan, rejected = after, True
                break
            call, event = after
            plan = _settled(call, handlers.review(event))
            handlers.deliver(run, self._announce(run, [plan]))
        if plan.result is not None:
            with run.lock:
                events, message = self._answered(run, plan, rejected=rejected)
                handlers.deliver(run, events)
            self._forget(run)
            return message
        key = call.call_id
        with run.lock:
            handlers.deliver(run, run.tool_start(key, plan.call, announce=False), key)
        try:
            with entered(run.tool_invocation(key) or run.invocation):
                output = handler(self._runner(request, plan))
        except GraphInterrupt as pause:  # the tool itself paused the graph
            with run.lock:
                handlers.deliver(run, self._paused(run, plan.call, pause))
            self._forget(run)
            raise
        except GraphBubbleUp:  # pragma: no cover  # a Command for a parent graph
            raise
        except Exception as error:
            with run.lock:
                handlers.deliver(run, run.tool_error(key, error))
            self._forget(run)
            return _failure(call, error)
        with run.lock:
            handlers.deliver(run, run.tool_end(key, output))
        self._forget(run)
        return output

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        handlers = self._async_handlers
        run, events, call, plan = self._tool_step(request)
        await handlers.adeliver(run, events)
        rejected = False
        while plan.result is not None and plan.result.is_interrupt:
            try:
                answer = interrupt(self._pause_value(plan))
            except GraphInterrupt:
                await handlers.adeliver(run, run.settle(call.call_id, plan.result))
                self._forget(run)
                raise
            after = self._after_human(run, call, _human(answer))
            if isinstance(after, _Plan):
                plan, rejected = after, True
                break
            call, event = after
            plan = _settled(call, await handlers.areview(event))
            await handlers.adeliver(run, self._announce(run, [plan]))
        if plan.result is not None:
            events, message = self._answered(run, plan, rejected=rejected)
            await handlers.adeliver(run, events)
            self._forget(run)
            return message
        key = call.call_id
        await handlers.adeliver(
            run, run.tool_start(key, plan.call, announce=False), key
        )
        try:
            with entered(run.tool_invocation(key) or run.invocation):
                output = await handler(self._runner(request, plan))
        except GraphInterrupt as pause:  # the tool itself paused the graph
            await handlers.adeliver(run, self._paused(run, plan.call, pause))
            self._forget(run)
            raise
        except GraphBubbleUp:  # pragma: no cover  # a Command for a parent graph
            raise
        except Exception as error:
            await handlers.adeliver(run, run.tool_error(key, error))
            self._forget(run)
            return _failure(call, error)
        await handlers.adeliver(run, run.tool_end(key, output))
        self._forget(run)
        return output
