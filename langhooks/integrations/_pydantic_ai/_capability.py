"""``LangHooksCapability``: a pydantic-ai capability that fires langhooks events.

One object in ``Agent(..., capabilities=[...])`` gives the handlers every event of
the contract: the run's start and end (``wrap_run``), each model attempt
(``prepare_model_request`` / ``after_model_request`` / ``on_model_request_error``)
with its partials (``on_event``: ``PartStartEvent`` / ``PartDeltaEvent`` /
``PartEndEvent``), and each batch of tool calls, reviewed as a whole before any
runs (``before_node_run`` of the ``CallToolsNode``) and then run, rewritten,
denied or deferred one by one (``wrap_tool_execute``). A run gets its own copy
(``for_run``), so one capability serves concurrent runs.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final, final

import attrs
from pydantic_ai import (
    ApprovalRequired,
    CallDeferred,
    CallToolsNode,
    ModelRetry,
    ToolApproved,
    ToolDenied,
    ToolFailed,
)
from pydantic_ai import messages as pai
from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.capabilities.abstract import (
    WrapRunHandler,
    WrapToolExecuteHandler,
    leaf_capabilities,
)
from pydantic_ai.exceptions import ToolFailedError, ToolRetryError
from pydantic_ai.messages import AgentStreamEvent
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import RunContext, ToolDefinition
from typing_extensions import override

from ..._core._chain_callbacks import Deny, Interrupt, ReviewDecision, UpdateArguments
from ..._core._invocation import Invocation, current_invocation, entered, invocation
from ..._core._messages import LangHooksError, Message, ToolCall, ToolResult
from ...chain._tool_results import short_description
from .._bridging._chain import FrameworkModel
from .._bridging._run import BridgeHandlers, FrameworkRun, response_of
from ._messages import (
    DECISION_KEY,
    message_of_response,
    messages_of,
    tool_call_of,
    usage_of,
)

__all__ = ["LangHooksCapability"]


@final
class _Batch:
    """One model turn's tool calls, from review to the tool message."""

    __slots__ = ("calls", "interrupts", "plans", "results")

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.plans: dict[str, ReviewDecision | None] = {}
        self.results: dict[str, ToolResult] = {}
        self.interrupts: list[tuple[ToolCall, Interrupt]] = []


@final
class _RunState:
    """What one run's copy of the capability keeps."""

    __slots__ = ("batch", "failed", "run", "stream_calls")

    def __init__(self, run: FrameworkRun) -> None:
        self.run: Final = run
        self.batch: _Batch | None = None
        self.failed: LangHooksError | None = None  # until the next attempt
        self.stream_calls: dict[int, int] = {}  # part index: call index


def _denial(reason: str) -> str:
    return f"The tool call was denied: {reason}"


def _text(value: object) -> str:
    return (
        value
        if isinstance(value, str)
        else pai.ToolReturnPart(tool_name="_", content=value).model_response_str()
    )


class LangHooksCapability(AbstractCapability[Any]):
    """Attaches langhooks handlers to a pydantic-ai agent.

    ``Agent(model, capabilities=[LangHooksCapability(handler, ...)])``: the handlers
    (chain or streaming handlers, sync or async, in calling order) hear every run
    of the agent, however it is driven (``run``, ``run_sync``, ``run_stream``,
    ``iter``). ``on_tool_call_review`` decides each call: ``UpdateArguments`` runs
    it with the new arguments, ``Deny`` answers the model with the denial as the
    tool's failure, ``Interrupt`` defers it (``ApprovalRequired``): the run ends with
    ``DeferredToolRequests`` (give the agent
    ``output_type=[..., DeferredToolRequests]``)
    and resumes with ``deferred_tool_results=deferred_tool_results(decisions)``.

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
        self._handlers: Final = BridgeHandlers(handlers, "LangHooksCapability")
        self._custom_context: Final = dict(custom_context or {})
        self._state: _RunState | None = None

    @classmethod
    @override
    def get_serialization_name(cls) -> str | None:
        return None  # holds handler objects: not built from a spec

    @override
    def get_ordering(self) -> CapabilityOrdering:
        # Innermost: review sees the arguments other capabilities settled, and
        # each failed model attempt is seen before a retrying capability answers it.
        return CapabilityOrdering(position="innermost")

    @override
    async def for_run(self, ctx: RunContext[Any]) -> LangHooksCapability:
        clone = copy.copy(self)
        parent = current_invocation()
        run = FrameworkRun(
            self._handlers,
            tools=(),
            custom_context=self._custom_context,
            invocation=Invocation(
                name="run",
                parent_id=None if parent is None else parent.id,
                custom_context=self._custom_context,
            ),
            model=_model(ctx.model),
        )
        clone._state = _RunState(run)
        return clone

    def _run_state(self) -> _RunState:
        if self._state is None:  # pragma: no cover - pydantic-ai calls for_run first
            raise RuntimeError("LangHooksCapability used outside a run")
        return self._state

    # --- the run ---------------------------------------------------------------------

    @override
    async def wrap_run(
        self, ctx: RunContext[Any], *, handler: WrapRunHandler
    ) -> AgentRunResult[Any]:
        state = self._run_state()
        run = state.run
        history = messages_of(ctx.messages)
        if isinstance(ctx.prompt, str):
            history.append(Message.user(ctx.prompt))
        run.chain = attrs.evolve(run.chain, messages=tuple(history))
        assert run.chain.invocation is not None
        with entered(run.chain.invocation):
            await run.start()
            try:
                result = await handler()
            except BaseException as exc:
                await run.fail(exc)
                raise
            await run.complete()
        return result

    @override
    async def prepare_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        self._run_state().run.set_tools(
            [(d.name, d.description or "", d.parameters_json_schema) for d in tool_defs]
        )
        return tool_defs

    # --- model attempts --------------------------------------------------------------

    @override
    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> Any:
        state = self._run_state()
        if state.failed is not None:
            failed, state.failed = state.failed, None
            await state.run.model_retry(failed, 0.0)
        state.stream_calls = {}
        await state.run.model_start(_model(request_context.model))
        return request_context

    @override
    async def on_event(self, ctx: RunContext[Any], *, event: AgentStreamEvent) -> None:
        state = self._run_state()
        run = state.run
        if isinstance(event, pai.PartStartEvent):
            part = event.part
            if isinstance(part, pai.TextPart):
                await run.text(part.content)
            elif isinstance(part, pai.ThinkingPart):
                await run.thinking(part.content)
            elif isinstance(part, pai.ToolCallPart):  # pragma: no branch
                # (other parts, files and native tools, have no partial)
                index = state.stream_calls.setdefault(
                    event.index, len(state.stream_calls)
                )
                await run.tool_fragment(
                    index,
                    part.tool_call_id,
                    part.tool_name,
                    _fragment(part.args),
                )
        elif isinstance(event, pai.PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, pai.TextPartDelta):
                await run.text(delta.content_delta)
            elif isinstance(delta, pai.ThinkingPartDelta):
                await run.thinking(delta.content_delta or "")
            elif isinstance(delta, pai.ToolCallPartDelta):  # pragma: no branch
                # (other deltas, speech, have no partial)
                args = delta.args_delta
                await run.tool_fragment(
                    state.stream_calls.setdefault(event.index, len(state.stream_calls)),
                    delta.tool_call_id,
                    delta.tool_name_delta,
                    args if isinstance(args, str) else "",
                )
        elif isinstance(event, pai.PartEndEvent):
            part = event.part
            if isinstance(part, pai.ToolCallPart):
                index = state.stream_calls.setdefault(
                    event.index, len(state.stream_calls)
                )
                await run.tool_complete(tool_call_of(part, index))

    @override
    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: pai.ModelResponse,
    ) -> pai.ModelResponse:
        run = self._run_state().run
        message = message_of_response(response)
        await run.model_complete(
            response_of(
                message,
                response_id=response.provider_response_id,
                model_name=response.model_name,
                usage=usage_of(response.usage),
            )
        )
        return response

    @override
    def _handles_model_request_error(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> bool:
        # pydantic-ai opens a streamed request eagerly for a capability that
        # handles its failure, which slows every run. Observing is only worth
        # it when another capability may recover the attempt (a retry, a
        # fallback): otherwise the failure ends the run and wrap_run reports it.
        root = ctx.root_capability
        return root is not None and any(
            not isinstance(cap, LangHooksCapability)
            and cap._handles_model_request_error(ctx, request_context)
            for cap in leaf_capabilities(root)
        )

    @override
    async def on_model_request_error(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        error: Exception,
    ) -> pai.ModelResponse:
        state = self._run_state()
        state.failed = await state.run.model_error(error)
        raise error

    # --- tool batches ----------------------------------------------------------------

    @override
    async def before_node_run(self, ctx: RunContext[Any], *, node: Any) -> Any:
        if isinstance(node, CallToolsNode):
            await self._settle(node)
        return node

    @override
    async def after_node_run(
        self, ctx: RunContext[Any], *, node: Any, result: Any
    ) -> Any:
        state = self._run_state()
        batch, state.batch = state.batch, None
        if isinstance(node, CallToolsNode) and batch is not None and batch.calls:
            ordered = [
                batch.results[c.call_id]
                for c in batch.calls
                if c.call_id in batch.results
            ]
            await state.run.tools_done(ordered, batch.interrupts)
        return result

    async def _settle(self, node: CallToolsNode[Any, Any]) -> None:
        """Review every call of the turn, then report denials and announce the
        calls that will run (the batch contract), before any runs."""
        state = self._run_state()
        run = state.run
        batch = state.batch = _Batch()
        human = node.tool_call_results
        for index, part in enumerate(node.model_response.tool_calls):
            call = tool_call_of(part, index)
            if human is None:
                if run.tool(call.name):  # not an output tool's call
                    batch.calls.append(call)
                    batch.plans[call.call_id] = await run.review(call)
                continue
            run.know_tool(call.name)  # resuming: before the step's tools
            answer = human.get(call.call_id)
            if isinstance(answer, ToolDenied):
                batch.calls.append(call)
                batch.results[call.call_id] = ToolResult(
                    tool_call_id=call.call_id, name=call.name, content=answer.message
                )
            elif isinstance(answer, ToolApproved):
                decided = (node.tool_call_metadata or {}).get(call.call_id, {})
                edited = answer.override_args is not None
                kind = decided.get(DECISION_KEY, "edit" if edited else "approve")
                if edited:
                    call = ToolCall(
                        call_id=call.call_id,
                        name=call.name,
                        arguments=answer.override_args or {},
                        index=call.index,
                    )
                batch.calls.append(call)
                batch.plans[call.call_id] = await run.review(call, kind)
        for call in batch.calls:
            plan = batch.plans.get(call.call_id)
            if isinstance(plan, Deny):
                result = ToolResult(
                    tool_call_id=call.call_id,
                    name=call.name,
                    content=_denial(plan.reason),
                )
                batch.results[call.call_id] = result
            if call.call_id in batch.results:
                await run.tool_failed(call, batch.results[call.call_id])
        for call in batch.calls:
            if call.call_id not in batch.plans:
                continue  # a human rejected it
            plan = batch.plans[call.call_id]
            if isinstance(plan, Deny | Interrupt):
                continue
            if isinstance(plan, UpdateArguments):
                call = ToolCall(
                    call_id=call.call_id,
                    name=call.name,
                    arguments=plan.arguments,
                    index=call.index,
                )
            await run.tool_started(call)

    @override
    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: pai.ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        state = self._run_state()
        batch = state.batch
        if batch is None or call.tool_call_id not in batch.plans:  # pragma: no cover
            # (pydantic-ai runs only the calls of the step the bridge settled)
            return await handler(args)
        plan = batch.plans[call.tool_call_id]
        known = next(c for c in batch.calls if c.call_id == call.tool_call_id)
        if isinstance(plan, Deny):
            raise ToolFailed(_denial(plan.reason))
        if isinstance(plan, Interrupt):
            batch.interrupts.append((known, plan))
            raise ApprovalRequired({"message": plan.message, "data": dict(plan.data)})
        if isinstance(plan, UpdateArguments):
            args = dict(plan.arguments)
        tool_call = ToolCall(
            call_id=known.call_id, name=known.name, arguments=args, index=known.index
        )
        return await self._execute(state, tool_call, args, handler)

    async def _execute(
        self, state: _RunState, call: ToolCall, args: dict[str, Any], handler: Any
    ) -> Any:
        """Run a settled call in its own invocation, and report how it went."""
        run, batch = state.run, state.batch
        assert batch is not None
        with invocation(call.name, custom_context=run.chain.custom_context):
            await run.tool_pre_execution(call)
            try:
                value = await handler(args)
            except (ToolRetryError, ToolFailedError) as failure:
                cause = _underlying(failure)
                result = _failed(call, str(failure), cause)
                batch.results[call.call_id] = result
                if cause is None:
                    await run.tool_failed(call, result)
                else:
                    await run.tool_raised(call, result, cause)
                raise
            except (ApprovalRequired, CallDeferred) as deferred:
                # The tool itself deferred the call: the run waits on it too.
                data = dict(deferred.metadata or {})
                batch.interrupts.append((call, Interrupt("deferred by the tool", data)))
                raise
            except Exception as exc:
                text = f"Error: the tool failed: {short_description(exc)}"
                result = _failed(call, text, exc)
                batch.results[call.call_id] = result
                await run.tool_raised(call, result, exc)
                raise
        result = ToolResult(
            tool_call_id=call.call_id, name=call.name, content=_text(value)
        )
        batch.results[call.call_id] = result
        await run.tool_completed(call, result)
        return value


_SIGNALS: Final = (ToolRetryError, ToolFailedError, ToolFailed, ModelRetry)


def _underlying(failure: BaseException) -> Exception | None:
    """The exception a tool's ``ToolFailed`` or ``ModelRetry`` was raised from,
    if any (``raise ToolFailed(...) from error``): the tool raised it."""
    seen: set[int] = set()
    exc: BaseException | None = failure
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if not isinstance(exc, _SIGNALS) and isinstance(exc, Exception):
            return exc
        exc = exc.__cause__
    return None


def _fragment(args: object) -> str:
    """A call's arguments as streamed so far (a str as it came, possibly cut)."""
    if isinstance(args, str):
        return args
    return json.dumps(args, default=str) if args else ""


def _model(model: Any) -> FrameworkModel:
    return FrameworkModel(model.model_name, f"pydantic-ai:{model.system}")


def _failed(
    call: ToolCall, text: str, exception: Exception | None = None
) -> ToolResult:
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=text,
        is_error=True,
        exception=exception,
    )
