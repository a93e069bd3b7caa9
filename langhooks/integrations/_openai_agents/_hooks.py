"""``LangHooksRunHooks``: the Agents SDK's ``RunHooks`` firing langhooks events.

``Runner.run(hooks.install(agent), input, hooks=hooks)``: the hooks hear the run
(``on_agent_start`` / ``on_agent_end``), each model turn (``on_llm_start`` /
``on_llm_end``) and each tool (``on_tool_start`` / ``on_tool_end``); ``install``
(one call) gives the agent what the hooks cannot hear or decide by themselves: a
model wrapper (each attempt, its failure, its raw stream) and, on each function
tool, the review (``needs_approval`` for ``Interrupt``, an input guardrail for
``Deny``), a failure formatter that keeps the exception a tool raised, and an
invoker that fires ``on_tool_pre_execution`` in the tool's own task.

A model turn's calls are reviewed together in ``on_llm_end``, before the SDK runs
any; the SDK runs its tools concurrently and gathers its hooks, and the bridge's
lock keeps every handler to one event at a time, in the contract's order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, final

import attrs
from agents import Agent, FunctionTool, RunContextWrapper, RunHooks, Runner
from agents.items import ModelResponse
from agents.models.interface import Model, ModelProvider
from agents.models.multi_provider import MultiProvider
from agents.result import RunResult, RunResultStreaming
from agents.run_state import RunState
from agents.tool import (
    resolve_function_tool_failure_error_function,
    set_function_tool_failure_error_function,
)
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)
from typing_extensions import override

from ..._core._chain_callbacks import (
    Deny,
    Interrupt,
    ReviewDecision,
    UpdateArguments,
)
from ..._core._invocation import Invocation, current_invocation, invocation
from ..._core._messages import Message, ToolCall, ToolResult
from ...chain._decision import Decision
from ...chain._tool_results import short_description
from .._bridging._chain import FrameworkModel, stand_in_tool
from .._bridging._run import BridgeHandlers, FrameworkRun, response_of
from .._bridging._warnings import BridgeWarning
from ._convert import arguments_of, input_messages, message_of, usage_of
from ._model import ListenedModel

__all__ = ["LangHooksRunHooks", "apply_decisions"]


#: Why an ``UpdateArguments`` review (or a human's edit) denies the call.
CANNOT_REWRITE: Final = (
    "the OpenAI Agents SDK cannot run a tool call with other arguments than the "
    "model's, so the rewritten call was denied (fail closed)"
)


def _denial(reason: str) -> str:
    return f"The tool call was denied: {reason}"


@final
class _Batch:
    """One model turn's calls, from review to the tool message."""

    __slots__ = ("calls", "done", "interrupts", "plans", "results", "runnable")

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.plans: dict[str, ReviewDecision | None] = {}
        self.results: dict[str, ToolResult] = {}
        self.interrupts: list[tuple[ToolCall, Interrupt]] = []
        self.runnable: set[str] = set()
        self.done: set[str] = set()

    def call(self, call_id: str) -> ToolCall | None:
        return next((c for c in self.calls if c.call_id == call_id), None)


class LangHooksRunHooks(RunHooks[Any]):
    """Attaches langhooks handlers to OpenAI Agents SDK runs.

    Pass it as ``hooks=`` and run the agent ``install`` returned:
    ``Runner.run(hooks.install(agent), input, hooks=hooks)`` (or
    ``run_streamed``, ``run_sync``; ``hooks.run(...)`` does both and also reports
    a run that raises). One object follows one run at a time.

    Args:
        handlers: the langhooks handlers (chain or streaming, sync or async).
        custom_context: the runs' ``custom_context``.

    Raises:
        TypeError: a handler is not a langhooks handler.
    """

    def __init__(
        self, *handlers: object, custom_context: Mapping[str, Any] | None = None
    ) -> None:
        self._handlers: Final = BridgeHandlers(handlers, "LangHooksRunHooks")
        self._custom_context: Final = dict(custom_context or {})
        self._installed: set[str] = set()
        self._current: FrameworkRun | None = None
        self._last_install: tuple[tuple[Any, ...], Agent[Any]] | None = None
        self._batch: _Batch | None = None
        self._errors: dict[str, Exception] = {}
        self._interrupted: set[str] = set()  # the calls review sent to a human
        self._attempts = 0
        self._failed: Any = None

    # --- installing on an agent ------------------------------------------------

    def install(
        self, agent: Agent[Any], *, model_provider: ModelProvider | None = None
    ) -> Agent[Any]:
        """A copy of ``agent`` the hooks can fully hear and review.

        Its model is wrapped (each attempt, failure and raw stream event is
        reported; a model name is resolved with ``model_provider``, by default the
        SDK's ``MultiProvider``); each function tool gets the review
        (``needs_approval`` and an input guardrail) and keeps a raised exception
        for ``on_tool_execution_exception``.
        """
        same = (agent, agent.model, *agent.tools)
        last = self._last_install
        if model_provider is None and last is not None and _same(last[0], same):
            return last[1]  # the agent installed last, unchanged
        model = agent.model
        if not isinstance(model, Model):
            model = (model_provider or MultiProvider()).get_model(model)
        tools = [
            self._install_tool(tool) if isinstance(tool, FunctionTool) else tool
            for tool in agent.tools
        ]
        installed = agent.clone(model=ListenedModel(model, self), tools=tools)
        self._last_install = (same, installed)
        return installed

    def _install_tool(self, tool: FunctionTool) -> FunctionTool:
        own = tool.needs_approval

        async def needs_approval(
            context: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str
        ) -> bool:
            if self._interrupts(call_id):
                return True
            wants = await own(context, arguments, call_id) if callable(own) else own
            if wants:  # the tool's own approval: the run waits on it too
                await self._held(call_id)
            return bool(wants)

        guard: ToolInputGuardrail[Any] = ToolInputGuardrail(
            self._guard, name="langhooks_review"
        )
        installed = dataclasses.replace(
            tool,
            needs_approval=needs_approval,
            tool_input_guardrails=[*(tool.tool_input_guardrails or ()), guard],
        )
        formatter = resolve_function_tool_failure_error_function(tool)
        if formatter is not None:
            set_function_tool_failure_error_function(
                installed, self._keeping(formatter)
            )
        # Assigned, not replaced: the SDK's own invoker (bound to the copy
        # above, with its failure formatter) stays inside ours.
        installed.on_invoke_tool = self._in_tool_context(installed.on_invoke_tool)
        self._installed.add(tool.name)
        return installed

    def _in_tool_context(
        self, invoke: Callable[[Any, str], Awaitable[Any]]
    ) -> Callable[[Any, str], Awaitable[Any]]:
        """The tool's invoker, run in the call's invocation after
        ``on_tool_pre_execution``: in the tool's own task (and the thread a sync
        tool runs in), so what the hook sets in a context variable reaches the
        tool's code, and nothing after it."""

        async def run_tool(context: Any, arguments: str) -> Any:
            found = self._tool_call(context)
            if found is None:  # pragma: no cover - see _tool_call
                return await invoke(context, arguments)
            run, _, call = found
            with invocation(call.name, custom_context=self._custom_context):
                await run.tool_pre_execution(call)
                return await invoke(context, arguments)

        marker = "__agents_sync_function_tool__"
        if getattr(invoke, marker, False):  # the SDK refuses a timeout for those
            setattr(run_tool, marker, True)
        return run_tool

    def _keeping(
        self, formatter: Callable[[Any, Exception], str | Awaitable[str]]
    ) -> Callable[[Any, Exception], Awaitable[str]]:
        async def keep(context: Any, error: Exception) -> str:
            self._errors[context.tool_call_id] = error
            text = formatter(context, error)
            return await text if inspect.isawaitable(text) else text

        return keep

    # --- running -------------------------------------------------------------------

    async def run(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``Runner.run(self.install(agent), input, hooks=self, ...)``; a run that
        raises is reported (``on_error``) before the exception propagates.

        ``input`` may be a ``RunState`` (a resumed run).
        """
        try:
            return await Runner.run(self.install(agent), input, hooks=self, **kwargs)
        except Exception as exc:
            await self._fail(exc)
            raise

    def run_sync(self, agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """The sync twin of ``run`` (``Runner.run_sync``)."""
        try:
            return Runner.run_sync(self.install(agent), input, hooks=self, **kwargs)
        except Exception as exc:
            # On the thread's loop, which Runner.run_sync used and leaves open
            # (asyncio.run would unset it, leaving it unclosed).
            loop = asyncio.get_event_loop_policy().get_event_loop()
            loop.run_until_complete(self._fail(exc))
            raise

    def run_streamed(
        self, agent: Agent[Any], input: Any, **kwargs: Any
    ) -> RunResultStreaming:
        """``Runner.run_streamed(self.install(agent), input, hooks=self, ...)``."""
        return Runner.run_streamed(self.install(agent), input, hooks=self, **kwargs)

    async def _fail(self, exc: BaseException) -> None:
        if self._current is not None:
            await self._current.fail(exc)

    # --- the run's events ------------------------------------------------------

    def _run_for(self, agent: Any) -> FrameworkRun:
        """The current run, or a new one when none is going on."""
        if self._current is None or self._current.ended:
            parent = current_invocation()
            self._current = FrameworkRun(
                self._handlers,
                tools=[
                    stand_in_tool(t.name, t.description, t.params_json_schema)
                    for t in agent.tools
                    if isinstance(t, FunctionTool)
                ],
                custom_context=self._custom_context,
                invocation=Invocation(
                    name="run",
                    parent_id=None if parent is None else parent.id,
                    custom_context=self._custom_context,
                ),
                model=_model(agent),
            )
            self._batch, self._attempts, self._failed = None, 0, None
            self._errors.clear()
            self._interrupted.clear()
        return self._current

    @override
    async def on_agent_start(self, context: Any, agent: Any) -> None:
        await self._run_for(agent).start()

    @override
    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        run = self._run_for(agent)
        await self._close_batch(run)
        await run.complete()

    @override
    async def on_llm_start(
        self, context: Any, agent: Any, system_prompt: str | None, input_items: Any
    ) -> None:
        run = self._run_for(agent)
        await run.start()
        await self._close_batch(run)
        if not run.chain.messages:
            first = [Message.system(system_prompt)] if system_prompt else []
            run.chain = attrs.evolve(
                run.chain, messages=(*first, *input_messages(input_items))
            )
        self._attempts, self._failed = 0, None
        await run.model_start(_model(agent))

    async def _attempt(self) -> None:
        """A model attempt begins (the wrapper's call): the first was announced
        by ``on_llm_start``; another is a retry."""
        run = self._current
        if run is None or self._attempts == 0:
            self._attempts = 1
            return
        self._attempts += 1
        if self._failed is not None:  # pragma: no branch
            # (the SDK calls its model again in one turn only after a failure)
            failed, self._failed = self._failed, None
            await run.model_retry(failed, 0.0)
            await run.model_start(run.chain.model)  # type: ignore[arg-type]  # a FrameworkModel

    async def _attempt_failed(self, exc: Exception) -> None:
        if self._current is not None:
            self._failed = await self._current.model_error(exc)

    @override
    async def on_llm_end(
        self, context: Any, agent: Any, response: ModelResponse
    ) -> None:
        run = self._run_for(agent)
        self._attempts = 0
        message = message_of(response)
        await run.model_complete(
            response_of(
                message,
                response_id=response.response_id,
                model_name=_model(agent).model,
                usage=usage_of(response),
            )
        )
        await self._settle(run, message.tool_calls)

    async def _settle(self, run: FrameworkRun, calls: tuple[ToolCall, ...]) -> None:
        """Review the turn's calls, report denials, announce the rest, before
        the SDK runs any."""
        batch = self._batch = _Batch()
        for call in calls:
            if run.tool(call.name) is None:
                continue
            batch.calls.append(call)
            reviewed = call.name in self._installed
            batch.plans[call.call_id] = await run.review(call) if reviewed else None
        for call in batch.calls:  # denials first, then what will run
            await self._refuse(run, batch, call)
        for call in batch.calls:
            await self._announce(run, batch, call)
        await self._finish_if_waiting(run, batch)

    async def _refuse(self, run: FrameworkRun, batch: _Batch, call: ToolCall) -> None:
        """Report a call review denied (an ``UpdateArguments`` too: fail closed)."""
        plan = batch.plans[call.call_id]
        if isinstance(plan, UpdateArguments):
            warnings.warn(
                f"tool call {call.call_id!r} ({call.name}): {CANNOT_REWRITE}",
                BridgeWarning,
                stacklevel=2,
            )
            plan = batch.plans[call.call_id] = Deny(CANNOT_REWRITE)
        if isinstance(plan, Deny):
            result = ToolResult(
                tool_call_id=call.call_id, name=call.name, content=_denial(plan.reason)
            )
            batch.results[call.call_id] = result
            await run.tool_failed(call, result)

    async def _announce(self, run: FrameworkRun, batch: _Batch, call: ToolCall) -> None:
        """Announce a call that will run, or hold an interrupted one."""
        plan = batch.plans[call.call_id]
        if isinstance(plan, Interrupt):
            batch.interrupts.append((call, plan))
            self._interrupted.add(call.call_id)
        elif not isinstance(plan, Deny):
            batch.runnable.add(call.call_id)
            await run.tool_started(call)

    def _interrupts(self, call_id: str) -> bool:
        return call_id in self._interrupted

    async def _held(self, call_id: str) -> None:
        """A call the tool's own ``needs_approval`` holds for a human: an
        interrupted call like those review interrupts."""
        batch, run = self._batch, self._current
        call = None if batch is None else batch.call(call_id)
        if batch is None or run is None or call is None:  # pragma: no cover
            return  # (the SDK asks only about the calls of the turn just settled)
        batch.runnable.discard(call_id)
        batch.interrupts.append((call, Interrupt("the tool needs approval")))
        self._interrupted.add(call_id)
        await self._finish_if_waiting(run, batch)

    async def _finish_if_waiting(self, run: FrameworkRun, batch: _Batch) -> None:
        """End the run as interrupted once every call that runs has ended."""
        if batch.interrupts and batch.runnable <= batch.done:
            await self._close_batch(run)
            await run.complete()

    async def _guard(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        """The review's answer for one call about to run: a denial is the
        tool's answer; a call nobody reviewed yet is a resumed one a human
        approved, reviewed now with ``human_decision="approve"``."""
        context = data.context
        call_id = context.tool_call_id
        batch = self._batch
        if batch is None or call_id not in batch.plans:
            run = self._run_for(data.agent)
            await run.start()
            batch = self._batch = self._batch or _Batch()
            call = ToolCall(
                call_id=call_id,
                name=context.tool_name,
                arguments=arguments_of(context.tool_arguments),
            )
            batch.calls.append(call)
            plan = await run.review(call, "approve")
            if isinstance(plan, Interrupt):  # a human already answered
                plan = Deny(
                    f"review interrupted a call a human approved: {plan.message}"
                )
            batch.plans[call_id] = plan
            await self._refuse(run, batch, call)
            await self._announce(run, batch, call)
        plan = batch.plans[call_id]
        if isinstance(plan, Deny):
            return ToolGuardrailFunctionOutput.reject_content(_denial(plan.reason))
        return ToolGuardrailFunctionOutput.allow()

    @override
    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if tool.name in self._installed:
            return  # said by the installed invoker, in the tool's own task
        found = self._tool_call(context)
        if found is not None:  # pragma: no branch - see _tool_call
            run, _, call = found
            with invocation(call.name, custom_context=self._custom_context):
                await run.tool_pre_execution(call)

    @override
    async def on_tool_end(
        self, context: Any, agent: Any, tool: Any, result: object
    ) -> None:
        found = self._tool_call(context)
        if found is None:  # pragma: no cover - see _tool_call
            return
        run, batch, call = found
        error = self._errors.pop(call.call_id, None)
        text = result if isinstance(result, str) else str(result)
        if error is None:
            done = ToolResult(tool_call_id=call.call_id, name=call.name, content=text)
            await run.tool_completed(call, done)
        else:
            done = ToolResult(
                tool_call_id=call.call_id,
                name=call.name,
                content=f"Error: the tool failed: {short_description(error)}",
                is_error=True,
                exception=error,
            )
            await run.tool_raised(call, done, error)
        batch.results[call.call_id] = done
        batch.done.add(call.call_id)
        await self._finish_if_waiting(run, batch)

    def _tool_call(self, context: Any) -> tuple[FrameworkRun, _Batch, ToolCall] | None:
        """The run, batch and settled call a tool hook is about (None for a
        tool that is not a function tool of the turn: a hosted or computer one)."""
        run, batch = self._current, self._batch
        call_id = getattr(context, "tool_call_id", None)
        call = None if batch is None else batch.call(call_id or "")
        if run is None or batch is None or call is None:  # pragma: no cover
            return None  # (function tools' calls are all settled first)
        return run, batch, call

    async def _close_batch(self, run: FrameworkRun) -> None:
        batch, self._batch = self._batch, None
        if batch is None or not batch.calls:
            return
        results = [
            batch.results[c.call_id] for c in batch.calls if c.call_id in batch.results
        ]
        await run.tools_done(results, batch.interrupts)


def _same(left: tuple[Any, ...], right: tuple[Any, ...]) -> bool:
    """Whether two tuples hold the same objects (identity, not equality)."""
    return len(left) == len(right) and all(
        a is b for a, b in zip(left, right, strict=True)
    )


def _model(agent: Any) -> FrameworkModel:
    model = agent.model
    if isinstance(model, ListenedModel):
        model = model.model
    name = model if isinstance(model, str) else getattr(model, "model", None)
    return FrameworkModel(
        name if isinstance(name, str) else type(model).__name__, "openai-agents"
    )


def apply_decisions(
    state: RunState[Any, Any], decisions: Mapping[str, Decision]
) -> None:
    """Answer an interrupted run's calls, by tool call id, on its ``RunState``.

    ``Decision.approve()`` approves, ``Decision.reject(reason)`` rejects with
    ``reason``; ``Decision.edit(...)`` is rejected with a warning (the SDK cannot
    run a call with other arguments: fail closed). A call with no decision stays
    pending.
    """
    for item in state.get_interruptions():
        call_id = getattr(item.raw_item, "call_id", None)
        decision = decisions.get(call_id) if isinstance(call_id, str) else None
        if decision is None:
            continue
        if decision.kind == "approve":
            state.approve(item)
        elif decision.kind == "reject":
            state.reject(item, rejection_message=decision.reason)
        else:
            warnings.warn(
                f"tool call {call_id!r}: {CANNOT_REWRITE}", BridgeWarning, stacklevel=2
            )
            state.reject(item, rejection_message=_denial(CANNOT_REWRITE))
