"""``LangHooksPlugin``: an ADK ``BasePlugin`` that fires langhooks events.

One plugin in ``Runner(..., plugins=[...])`` gives the handlers every run of the
runner: the run's start and end (``before_run_callback``, ``after_run_callback``,
``on_run_error_callback``), each model call with its streamed chunks
(``before_model_callback``, then ``after_model_callback`` for every partial and the
final response, ``on_model_error_callback``), and each answer's tool calls,
reviewed as a whole when the answer arrives (the batch contract), then run,
rewritten, denied or paused one by one in ``before_tool_callback``: an
``Interrupt`` becomes ADK's tool confirmation (``request_confirmation``), which
the user answers (``confirmations(...)``) in a later run, possibly in another
process on a persistent session service. The tool message is settled when ADK
yields the turn's function-response event (``on_event_callback``).

State is per ADK invocation (``invocation_id``), so one plugin serves concurrent
runs; every callback runs on the runner's event loop, ``Runner.run`` and
``Runner.run_async`` alike.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Mapping
from typing import Any, Final, final

from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from typing_extensions import override

from ..._core._chain_callbacks import Deny, Interrupt, ReviewDecision, UpdateArguments
from ..._core._invocation import Invocation, current_invocation
from ..._core._messages import LangHooksError, Message, ToolCall, ToolResult
from ...chain._tool_results import short_description
from .._bridging._chain import FrameworkModel
from .._bridging._run import BridgeHandlers, FrameworkRun, response_of
from .._bridging._tool_scope import ToolScopes
from .._bridging._warnings import BridgeWarning
from ._convert import (
    CONFIRMATION,
    DECISION_KEY,
    message_of,
    messages_of,
    pieces,
    spec_of,
    tool_call_of,
    usage_of,
)

__all__ = ["LangHooksPlugin"]

_SYSTEM: Final = "google-adk"


@final
class _Batch:
    """One answer's tool calls, from review to the tool message."""

    __slots__ = ("calls", "interrupts", "plans", "results")

    def __init__(self) -> None:
        self.calls: dict[str, ToolCall] = {}
        self.plans: dict[str, ReviewDecision | None] = {}
        self.results: dict[str, ToolResult] = {}
        self.interrupts: list[tuple[ToolCall, Interrupt]] = []


@final
class _RunState:
    """What the plugin keeps for one ADK invocation."""

    __slots__ = ("batch", "cancelled", "fragments", "run", "scopes")

    def __init__(self, run: FrameworkRun) -> None:
        self.run: Final = run
        self.scopes: Final = ToolScopes()
        #: The cancellation of a tool call, which ends the run.
        self.cancelled: LangHooksError | None = None
        self.batch: _Batch | None = None
        self.fragments = 0  # function calls streamed in the current attempt


def _denial(reason: str) -> str:
    return f"The tool call was denied: {reason}"


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _history(context: InvocationContext) -> list[Message]:
    """The session's conversation, the run's user message included (ADK's
    confirmation requests and answers are left out: they are the bridge's own
    traffic, not the conversation's)."""
    contents: list[types.Content] = []
    for event in context.session.events:
        content = event.content or types.Content(parts=[])
        parts = [
            p
            for p in content.parts or []
            if not (p.function_call and p.function_call.name == CONFIRMATION)
            and not (p.function_response and p.function_response.name == CONFIRMATION)
        ]
        if parts:
            contents.append(types.Content(role=content.role, parts=parts))
    return messages_of(contents)


class LangHooksPlugin(BasePlugin):
    """Attaches langhooks handlers to every run of an ADK ``Runner``.

    ``Runner(agent=..., app_name=..., session_service=...,
    plugins=[LangHooksPlugin(handler, ...)])``: the handlers (chain or streaming
    handlers, sync or async, in calling order) hear each run, whether it is
    driven by ``run`` or ``run_async``; with ``RunConfig(streaming_mode=
    StreamingMode.SSE)`` each streamed chunk is a partial. ``on_tool_call_review``
    decides each call of an answer before any runs: ``UpdateArguments`` runs it
    with the new arguments, ``Deny`` answers the model with the denial,
    ``Interrupt`` asks ADK for the user's confirmation and ends the run
    "interrupted"; answer with ``confirmations(session.events, decisions)`` as the
    next message to resume it. A tool that raises is answered with its error, as
    ``LLMChain`` does, so the run goes on.

    Args:
        handlers: the langhooks handlers.
        custom_context: the runs' ``custom_context`` (what ``ReviewContext`` and
            the chain carry).
        name: the plugin's name among the runner's plugins.

    Raises:
        TypeError: a handler is not a langhooks handler.
    """

    def __init__(
        self,
        *handlers: object,
        custom_context: Mapping[str, Any] | None = None,
        name: str = "langhooks",
    ) -> None:
        super().__init__(name=name)
        self._handlers: Final = BridgeHandlers(handlers, "LangHooksPlugin")
        self._custom_context: Final = dict(custom_context or {})
        self._runs: Final[dict[str, _RunState]] = {}

    def _state(self, invocation_id: str) -> _RunState:
        # Every callback of a run follows its before_run_callback (which the
        # plugin would not hear only if another plugin halted the run first, and
        # then no model or tool callback follows either).
        return self._runs[invocation_id]

    # --- the run ---------------------------------------------------------------------

    @override
    async def before_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> types.Content | None:
        parent = current_invocation()
        agent: Any = invocation_context.agent
        run = FrameworkRun(
            self._handlers,
            tools=(),
            messages=_history(invocation_context),
            custom_context=self._custom_context,
            invocation=Invocation(
                name=getattr(agent, "name", "run"),
                parent_id=None if parent is None else parent.id,
                custom_context=self._custom_context,
            ),
            # Named by each call's request (before_model_callback).
            model=FrameworkModel("model", _SYSTEM),
        )
        if hasattr(agent, "canonical_tools"):
            tools = await agent.canonical_tools(ReadonlyContext(invocation_context))
            run.set_tools([spec_of(tool) for tool in tools])
        self._runs[invocation_context.invocation_id] = _RunState(run)
        await run.start()
        return None

    @override
    async def after_run_callback(
        self, *, invocation_context: InvocationContext
    ) -> None:
        state = self._runs.pop(invocation_context.invocation_id, None)
        if state is None:
            return
        if state.cancelled is not None:
            await state.run.fail(state.cancelled)
        else:
            await state.run.complete()

    @override
    async def on_run_error_callback(
        self, *, invocation_context: InvocationContext, error: Exception
    ) -> None:
        state = self._runs.pop(invocation_context.invocation_id, None)
        if state is not None:
            await state.run.fail(error)

    # --- model calls -----------------------------------------------------------------

    @override
    async def before_model_callback(
        self, *, callback_context: Any, llm_request: LlmRequest
    ) -> LlmResponse | None:
        state = self._state(callback_context.invocation_id)
        state.fragments = 0
        tools = llm_request.tools_dict
        known = tuple(tool.name for tool in state.run.chain.tools)
        if tuple(tools) != known:  # a declaration costs: made again on a change only
            state.run.set_tools([spec_of(t) for t in tools.values()])
        name = llm_request.model or "model"
        await state.run.model_start(FrameworkModel(name, _SYSTEM))
        return None

    @override
    async def after_model_callback(
        self, *, callback_context: Any, llm_response: LlmResponse
    ) -> LlmResponse | None:
        state = self._state(callback_context.invocation_id)
        run = state.run
        if llm_response.partial:
            for kind, value in pieces(llm_response.content):
                if kind == "thinking":
                    await run.thinking(value)
                elif kind == "text":
                    await run.text(value)
                else:
                    call = tool_call_of(value, state.fragments)
                    state.fragments += 1
                    await run.tool_fragment(
                        call.index, value.id, call.name, json.dumps(call.arguments)
                    )
            return None
        message = message_of(llm_response.content)
        if state.fragments:
            for call in message.tool_calls:
                await run.tool_complete(call)
        await run.model_complete(
            response_of(
                message,
                response_id=None,
                model_name=llm_response.model_version,
                usage=usage_of(llm_response.usage_metadata),
            )
        )
        if message.tool_calls:
            state.batch = _Batch()
            await self._settle(state, state.batch, message.tool_calls)
        return None

    @override
    async def on_model_error_callback(
        self, *, callback_context: Any, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        await self._state(callback_context.invocation_id).run.model_error(error)
        return None

    # --- tool calls ------------------------------------------------------------------

    async def _settle(
        self, state: _RunState, batch: _Batch, calls: tuple[ToolCall, ...]
    ) -> None:
        """Review every call of the answer, then report denials and announce the
        calls that will run, before any runs."""
        run = state.run
        for call in calls:
            batch.calls[call.call_id] = call
            batch.plans[call.call_id] = await run.review(call)
        for call in calls:
            plan = batch.plans[call.call_id]
            if isinstance(plan, Deny):
                result = ToolResult(
                    tool_call_id=call.call_id,
                    name=call.name,
                    content=_denial(plan.reason),
                )
                batch.results[call.call_id] = result
                await run.tool_failed(call, result)
        for call in calls:
            plan = batch.plans[call.call_id]
            if not isinstance(plan, Deny | Interrupt):
                await run.tool_started(_updated(call, plan))

    async def _resumed(
        self, state: _RunState, call: ToolCall, confirmation: Any
    ) -> tuple[ToolCall, ReviewDecision | None]:
        """A call the user answered: review it again with the human's decision."""
        run = state.run
        batch = state.batch = state.batch or _Batch()
        payload = confirmation.payload if isinstance(confirmation.payload, dict) else {}
        decided = payload.get(DECISION_KEY) or {}
        kind = decided.get("kind") or (
            "approve" if confirmation.confirmed else "reject"
        )
        if decided.get("arguments") is not None:
            call = ToolCall(
                call_id=call.call_id,
                name=call.name,
                arguments=decided["arguments"],
                index=call.index,
            )
        batch.calls[call.call_id] = call
        plan: ReviewDecision | None
        if kind == "reject":
            plan = Deny(
                str(decided.get("reason") or "The user rejected this tool call.")
            )
        else:
            plan = await run.review(call, kind)
        if isinstance(plan, Interrupt):
            # ADK asks for a call's confirmation once: a confirmed call that is
            # paused again is never asked about, so it fails closed.
            warnings.warn(
                f"the review interrupted tool call {call.call_id!r} again after the "
                f"user's confirmation; ADK cannot ask twice, so the call is denied",
                BridgeWarning,
                stacklevel=2,
            )
            plan = Deny(
                "the review paused the call again after the user's confirmation"
            )
        batch.plans[call.call_id] = plan
        if isinstance(plan, Deny):
            result = ToolResult(
                tool_call_id=call.call_id, name=call.name, content=_denial(plan.reason)
            )
            batch.results[call.call_id] = result
            await run.tool_failed(call, result)
        else:
            await run.tool_started(_updated(call, plan))
        return call, plan

    @override
    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        state = self._state(tool_context.invocation_id)
        call_id = str(tool_context.function_call_id)
        call = ToolCall(call_id=call_id, name=tool.name, arguments=dict(tool_args))
        if tool_context.tool_confirmation is not None:
            call, plan = await self._resumed(
                state, call, tool_context.tool_confirmation
            )
            tool_args.clear()
            tool_args.update(call.arguments)
        batch = state.batch = state.batch or _Batch()
        if call_id not in batch.plans:  # pragma: no cover - see below
            # ADK gives every call its id before after_model_callback, where the
            # answer was reviewed; a call that review missed is reviewed alone
            # rather than run unreviewed.
            await self._settle(state, batch, (call,))
        call, plan = batch.calls[call_id], batch.plans[call_id]
        if plan is None:
            return None  # a tool the bridge does not know: ADK answers it
        if isinstance(plan, Deny):
            return {"error": _denial(plan.reason)}
        if isinstance(plan, Interrupt):
            batch.interrupts.append((call, plan))
            tool_context.request_confirmation(
                hint=plan.message, payload={"data": dict(plan.data)}
            )
            tool_context.actions.skip_summarization = True
            return {"error": "This tool call waits for the user's confirmation."}
        if isinstance(plan, UpdateArguments):
            tool_args.clear()
            tool_args.update(plan.arguments)
            batch.calls[call_id] = call = _updated(call, plan)
        run = state.run
        assert run.chain.invocation is not None  # FrameworkRun's chain has one
        state.scopes.open(
            call_id, call.name, run.chain.invocation, run.chain.custom_context
        )
        await run.tool_pre_execution(call)
        return None

    def _ran(
        self, tool_context: ToolContext
    ) -> tuple[_RunState, _Batch, ToolCall] | None:
        """The state, batch and call of a call the bridge let run (None for a
        call it denied or paused, and for a tool it does not know)."""
        state = self._state(tool_context.invocation_id)
        batch = state.batch
        call_id = str(tool_context.function_call_id)
        if (
            batch is None
            or batch.plans.get(call_id) is None
            or call_id in batch.results
        ):
            return None
        if isinstance(batch.plans[call_id], Interrupt):
            return None
        return state, batch, batch.calls[call_id]

    @override
    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        ran = self._ran(tool_context)
        if ran is not None:
            state, batch, call = ran
            state.scopes.close(call.call_id)
            value = result.get("result", result) if len(result) == 1 else result
            done = ToolResult(
                tool_call_id=call.call_id, name=call.name, content=_text(value)
            )
            batch.results[call.call_id] = done
            await state.run.tool_completed(call, done)
        return None

    @override
    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        ran = self._ran(tool_context)
        if ran is None:
            return None
        state, batch, call = ran
        state.scopes.close(call.call_id)
        if isinstance(error, asyncio.CancelledError):
            # ADK ends the run as if it succeeded: the run failed, and says so.
            state.cancelled = LangHooksError(
                "cancelled", f"tool call {call.call_id!r} ({call.name}) was cancelled"
            )
            return None
        text = f"Error: the tool failed: {short_description(error)}"
        failed = ToolResult(
            tool_call_id=call.call_id, name=call.name, content=text, is_error=True
        )
        batch.results[call.call_id] = failed
        await state.run.tool_raised(call, failed, error)
        return {"error": text}

    @override
    async def on_event_callback(
        self, *, invocation_context: InvocationContext, event: Event
    ) -> Event | None:
        state = self._runs.get(invocation_context.invocation_id)
        batch = None if state is None else state.batch
        if state is None or batch is None or not event.get_function_responses():
            return None
        state.batch = None
        waiting = {c.call_id for c, _ in batch.interrupts}
        results = [
            batch.results[c]
            for c in batch.calls
            if c in batch.results and c not in waiting
        ]
        await state.run.tools_done(results, batch.interrupts)
        return None


def _updated(call: ToolCall, plan: ReviewDecision | None) -> ToolCall:
    """The call as it will run: with the reviewer's arguments for an update."""
    if isinstance(plan, UpdateArguments):
        return ToolCall(
            call_id=call.call_id,
            name=call.name,
            arguments=plan.arguments,
            index=call.index,
        )
    return call
