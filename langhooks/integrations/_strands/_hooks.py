"""``LangHooksHookProvider``: a Strands ``HookProvider`` that fires langhooks events.

One provider in ``Agent(hooks=[...])`` gives the handlers every invocation of the
agent: its start and end (``BeforeInvocationEvent`` / ``AfterInvocationEvent``),
each model call (``BeforeModelCallEvent`` / ``AfterModelCallEvent``, a failed
attempt and Strands' retry of it included) with its streamed chunks (read from
the model stage: the provider wraps ``InvokeModelStage`` when the agent is
initialised), and each batch of tool calls, reviewed as a whole before any runs
(``BeforeToolsEvent``), then run, rewritten (``tool_use``), cancelled
(``cancel_tool``) or paused with a Strands interrupt (``BeforeToolCallEvent``)
one by one, and settled (``AfterToolCallEvent`` / ``AfterToolsEvent``).

Strands calls every hook on the agent's event loop (``agent(...)`` runs it on a
thread of its own, ``invoke_async`` / ``stream_async`` on the caller's); an agent
runs one invocation at a time, so state is kept per agent.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Final, final

from strands.hooks import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterToolCallEvent,
    AfterToolsEvent,
    AgentInitializedEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    BeforeToolsEvent,
    HookRegistry,
)
from strands.middleware import InvokeModelStage
from strands.types._events import ModelStreamChunkEvent

from ..._core._chain_callbacks import Deny, Interrupt, ReviewDecision, UpdateArguments
from ..._core._invocation import Invocation, current_invocation
from ..._core._messages import LangHooksError, ToolCall, ToolResult
from .._bridging._chain import FrameworkModel
from .._bridging._run import BridgeHandlers, FrameworkRun, response_of
from .._bridging._tool_scope import ToolScopes
from .._bridging._warnings import BridgeWarning
from ._convert import (
    DECISION_KEY,
    INTERRUPT_NAME,
    message_of,
    messages_of,
    tool_result_of,
    tools_of,
    usage_of,
)

__all__ = ["LangHooksHookProvider"]

_SYSTEM: Final = "strands"

#: The plan of a resumed call until the human's answer is read.
_RESUMED: Final = Deny("(resumed)")


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
    """What the provider keeps for one invocation of one agent."""

    __slots__ = (
        "batch",
        "blocks",
        "error",
        "failed",
        "resuming",
        "run",
        "scopes",
        "usage",
    )

    def __init__(self, run: FrameworkRun) -> None:
        self.run: Final = run
        self.scopes: Final = ToolScopes()
        self.batch: _Batch | None = None
        #: The last attempt's error and when it failed, until the next attempt.
        self.failed: tuple[LangHooksError, float] | None = None
        self.error: BaseException | None = None  # the last model failure
        #: Whether the invocation resumes a tool batch an interrupt paused.
        self.resuming = False
        #: The streamed tool-use blocks of the attempt: block index -> call index.
        self.blocks: dict[int, int] = {}
        self.usage: Mapping[str, Any] | None = None


def _denial(reason: str) -> str:
    return f"The tool call was denied: {reason}"


def _model_name(agent: Any) -> str:
    config = agent.model.get_config() if hasattr(agent, "model") else {}
    name = config.get("model_id") if isinstance(config, Mapping) else None
    return str(name or type(getattr(agent, "model", None)).__name__)


class LangHooksHookProvider:
    """Attaches langhooks handlers to every invocation of a Strands agent.

    ``Agent(model=..., tools=[...], hooks=[LangHooksHookProvider(handler, ...)])``:
    the handlers (chain or streaming handlers, sync or async, in calling order)
    hear each invocation, ``agent(...)``, ``invoke_async`` and ``stream_async``
    alike. ``on_tool_call_review`` decides each call of an answer before any
    runs: ``UpdateArguments`` rewrites its input, ``Deny`` cancels it with the
    denial as its error result, ``Interrupt`` raises a Strands interrupt (the
    invocation stops with ``stop_reason == "interrupt"``); resume with
    ``agent(interrupt_responses(result.interrupts, decisions))``, in another
    process too when the agent has a session manager.

    Args:
        handlers: the langhooks handlers.
        custom_context: the runs' ``custom_context`` (what ``ReviewContext`` and
            the chain carry).

    Raises:
        TypeError: a handler is not a langhooks handler.
    """

    def __init__(
        self, *handlers: object, custom_context: Mapping[str, Any] | None = None
    ) -> None:
        self._handlers: Final = BridgeHandlers(handlers, "LangHooksHookProvider")
        self._custom_context: Final = dict(custom_context or {})
        self._runs: Final[dict[int, _RunState]] = {}

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        """Register the provider's callbacks (Strands calls this)."""
        registry.add_callback(AgentInitializedEvent, self._initialized)
        registry.add_callback(BeforeInvocationEvent, self._before_invocation)
        registry.add_callback(AfterInvocationEvent, self._after_invocation)
        registry.add_callback(BeforeModelCallEvent, self._before_model)
        registry.add_callback(AfterModelCallEvent, self._after_model)
        registry.add_callback(BeforeToolsEvent, self._before_tools)
        registry.add_callback(BeforeToolCallEvent, self._before_tool)
        registry.add_callback(AfterToolCallEvent, self._after_tool)
        registry.add_callback(AfterToolsEvent, self._after_tools)

    def _initialized(self, event: AgentInitializedEvent) -> None:
        event.agent.add_middleware(InvokeModelStage, self._stream)

    # --- the invocation ---

    async def _before_invocation(self, event: BeforeInvocationEvent) -> None:
        agent: Any = event.agent
        parent = current_invocation()
        history = [*agent.messages, *(event.messages or [])]
        run = FrameworkRun(
            self._handlers,
            tools=tools_of(agent.tool_registry.get_all_tool_specs()),
            messages=messages_of(history),
            custom_context=self._custom_context,
            invocation=Invocation(
                name=str(getattr(agent, "name", None) or "agent"),
                parent_id=None if parent is None else parent.id,
                custom_context=self._custom_context,
            ),
            model=FrameworkModel(_model_name(agent), _SYSTEM),
        )
        state = self._runs[id(agent)] = _RunState(run)
        # No new message while the conversation waits on tool calls: the
        # invocation resumes a batch an interrupt paused.
        last = history[-1] if history else {}
        state.resuming = event.messages == [] and any(
            "toolUse" in block for block in last.get("content", ())
        )
        await run.start()

    async def _after_invocation(self, event: AfterInvocationEvent) -> None:
        state = self._runs.pop(id(event.agent))
        if event.result is None:
            error = state.error or LangHooksError(
                "stream_error", "the Strands invocation ended without a result"
            )
            await state.run.fail(error)
        else:
            await state.run.complete()

    # --- model calls ---

    async def _before_model(self, event: BeforeModelCallEvent) -> None:
        state = self._runs[id(event.agent)]
        if state.failed is not None:
            (failed, at), state.failed = state.failed, None
            # Strands does not say the delay it chose: the time it waited is.
            await state.run.model_retry(failed, time.monotonic() - at)
        state.blocks = {}
        state.usage = None
        await state.run.model_start(FrameworkModel(_model_name(event.agent), _SYSTEM))

    async def _stream(self, context: Any, next_fn: Any) -> AsyncGenerator[Any, None]:
        """The model stage's wrap: each raw chunk to the run, then on."""
        state = self._runs[id(context.agent)]
        async for item in next_fn(context):
            if isinstance(item, ModelStreamChunkEvent):
                await self._chunk(state, item.chunk)
            yield item

    async def _chunk(self, state: _RunState, chunk: Mapping[str, Any]) -> None:
        run = state.run
        if "contentBlockStart" in chunk:
            start = chunk["contentBlockStart"]
            use = (start.get("start") or {}).get("toolUse")
            if use is not None:
                index = state.blocks.setdefault(
                    int(start.get("contentBlockIndex", len(state.blocks))),
                    len(state.blocks),
                )
                await run.tool_fragment(
                    index, use.get("toolUseId"), use.get("name"), ""
                )
        elif "contentBlockDelta" in chunk:
            block = chunk["contentBlockDelta"]
            delta = block.get("delta") or {}
            if "text" in delta:
                await run.text(str(delta["text"]))
            elif "text" in delta.get("reasoningContent", {}):
                await run.thinking(str(delta["reasoningContent"]["text"]))
            elif "toolUse" in delta:
                at = int(block.get("contentBlockIndex", -1))
                index = state.blocks.get(at, len(state.blocks) - 1)
                await run.tool_fragment(
                    index, None, None, str(delta["toolUse"].get("input", ""))
                )
        elif "metadata" in chunk:
            state.usage = chunk["metadata"].get("usage")

    async def _after_model(self, event: AfterModelCallEvent) -> None:
        state = self._runs[id(event.agent)]
        if event.exception is not None or event.stop_response is None:
            exception = event.exception or LangHooksError(
                "empty_response", "the model call ended without a response"
            )
            state.error = exception
            state.failed = (await state.run.model_error(exception), time.monotonic())
            return
        message = message_of(event.stop_response.message)
        if state.blocks:
            for call in message.tool_calls:
                await state.run.tool_complete(call)
        await state.run.model_complete(
            response_of(
                message, response_id=None, model_name=None, usage=usage_of(state.usage)
            )
        )

    # --- tool calls ---

    async def _before_tools(self, event: BeforeToolsEvent) -> None:
        state = self._runs[id(event.agent)]
        run = state.run
        batch = state.batch = _Batch()
        calls = message_of(event.message).tool_calls
        for call in calls:
            batch.calls[call.call_id] = call
            if state.resuming:
                # A human may have answered this call: its review waits for the
                # answer, which only the call's own event can read.
                batch.plans[call.call_id] = _RESUMED
            else:
                batch.plans[call.call_id] = await run.review(call)
        state.resuming = False  # only the invocation's first batch resumes
        await self._announce(state, batch, calls)

    async def _announce(
        self, state: _RunState, batch: _Batch, calls: tuple[ToolCall, ...]
    ) -> None:
        """Report the denied calls, then say which calls will run (the order
        ``LLMChain`` settles a batch in)."""
        for call in calls:
            plan = batch.plans[call.call_id]
            if isinstance(plan, Deny) and plan is not _RESUMED:
                result = ToolResult(
                    tool_call_id=call.call_id,
                    name=call.name,
                    content=_denial(plan.reason),
                )
                batch.results[call.call_id] = result
                await state.run.tool_failed(call, result)
        for call in calls:
            plan = batch.plans[call.call_id]
            if plan is not None and not isinstance(plan, Deny | Interrupt):
                await state.run.tool_started(_updated(call, plan))

    async def _answered(
        self, state: _RunState, event: BeforeToolCallEvent, call: ToolCall
    ) -> tuple[ToolCall, ReviewDecision | None]:
        """A resumed call: the human's answer (raising the interrupt again when
        there is none yet), then the review with it."""
        batch = state.batch
        assert batch is not None
        waiting = (call, Interrupt("waiting for a human's decision"))
        batch.interrupts.append(waiting)
        answer = event.interrupt(INTERRUPT_NAME)
        batch.interrupts.remove(waiting)
        decided = answer.get(DECISION_KEY) if isinstance(answer, Mapping) else None
        if not isinstance(decided, Mapping):
            decided = {"kind": "approve" if answer else "reject"}
        kind = str(decided.get("kind"))
        if decided.get("arguments") is not None:
            call = batch.calls[call.call_id] = _with(call, decided["arguments"])
        plan: ReviewDecision | None
        if kind == "reject":
            plan = Deny(
                str(decided.get("reason") or "The user rejected this tool call.")
            )
        else:
            plan = await state.run.review(call, kind)
        if isinstance(plan, Interrupt):
            # Strands answers an interrupt once: a second pause of the same call
            # cannot be raised, so the call fails closed.
            warnings.warn(
                f"the review interrupted tool call {call.call_id!r} again after a "
                f"human's decision; Strands cannot pause a call twice, so it is denied",
                BridgeWarning,
                stacklevel=2,
            )
            plan = Deny(
                "the review interrupted the call again after a human's decision"
            )
        batch.plans[call.call_id] = plan
        await self._announce(state, batch, (call,))
        return call, plan

    async def _before_tool(self, event: BeforeToolCallEvent) -> None:
        state = self._runs.get(id(event.agent))
        if state is None:
            return  # a direct call (agent.tool.name(...)): no run to report it in
        call_id = str(event.tool_use["toolUseId"])
        batch = state.batch
        assert batch is not None  # BeforeToolsEvent opened it
        call, plan = batch.calls[call_id], batch.plans[call_id]
        if plan is _RESUMED:
            call, plan = await self._answered(state, event, call)
        if plan is None:
            return  # a tool the bridge does not know: Strands runs it
        if isinstance(plan, Deny):
            event.cancel_tool = _denial(plan.reason)
            return
        if isinstance(plan, Interrupt):
            batch.interrupts.append((call, plan))
            reason = {
                "tool_call_id": call_id,
                "message": plan.message,
                "data": dict(plan.data),
            }
            event.interrupt(INTERRUPT_NAME, reason=reason)
        call = batch.calls[call_id] = _updated(call, plan)
        if call.arguments != event.tool_use.get("input"):
            event.tool_use = {**event.tool_use, "input": dict(call.arguments)}
        run = state.run
        assert run.chain.invocation is not None  # FrameworkRun's chain has one
        state.scopes.open(
            call_id, call.name, run.chain.invocation, run.chain.custom_context
        )
        await run.tool_pre_execution(call)

    async def _after_tool(self, event: AfterToolCallEvent) -> None:
        state = self._runs.get(id(event.agent))
        if state is None:
            return  # a direct call (agent.tool.name(...)): no run to report it in
        call_id = str(event.tool_use["toolUseId"])
        state.scopes.close(call_id)
        batch = state.batch
        assert batch is not None  # BeforeToolsEvent opened it
        if (
            batch.plans[call_id] is None
            or call_id in batch.results
            or any(c.call_id == call_id for c, _ in batch.interrupts)
        ):
            return
        call = batch.calls[call_id]
        result = tool_result_of(event.result, call.name)
        batch.results[call_id] = result
        if event.exception is not None:
            await state.run.tool_raised(call, result, event.exception)
        elif result.is_error:
            await state.run.tool_failed(call, result)
        else:
            await state.run.tool_completed(call, result)

    async def _after_tools(self, event: AfterToolsEvent) -> None:
        state = self._runs[id(event.agent)]
        batch, state.batch = state.batch, None
        assert batch is not None  # BeforeToolsEvent opened it
        waiting = {c.call_id for c, _ in batch.interrupts}
        results = [
            batch.results[c]
            for c in batch.calls
            if c in batch.results and c not in waiting
        ]
        await state.run.tools_done(results, batch.interrupts)


def _with(call: ToolCall, arguments: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        call_id=call.call_id, name=call.name, arguments=arguments, index=call.index
    )


def _updated(call: ToolCall, plan: ReviewDecision) -> ToolCall:
    """The call as it will run: with the reviewer's arguments for an update."""
    return _with(call, plan.arguments) if isinstance(plan, UpdateArguments) else call
