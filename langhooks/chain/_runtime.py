"""The run loop behind ``LLMChain.run`` and ``LLMChain.arun``, written once.

The loop is a generator that yields *operations* (fire a chain event, stream a model
call, sleep, execute tools) and receives their results; two small drivers perform
them, one synchronously (threads for concurrent tools) and one with ``await`` (tasks
for concurrent tools). So the firing order is defined in one place for both.

Handlers are called through ``HandlerWithoutInvocation`` except
``on_tool_pre_execution``, which runs where the tool runs with the tool's
invocation current.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar, final

import attrs
from typing_extensions import override

from .._chain_callbacks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    Deny,
    Interrupt,
    ReviewContext,
    UpdateArguments,
)
from .._compose import AsyncCompositeChainHandler, CompositeChainHandler
from .._invocation import Invocation, invocation
from .._messages import (
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
)
from .._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)
from .._wrappers import HandlerWithoutInvocation
from ..models._base import ChatModel, ChatRequest
from ._decision import Decision, RetryPolicy
from ._processors import Reject

if TYPE_CHECKING:
    from ._chain import LLMChain, RunResult, RunStatus

__all__ = [
    "INTERRUPT_STAND_IN",
    "Mode",
    "Run",
    "check_arguments",
    "drive_async",
    "drive_sync",
    "interrupt_data",
    "pending_results",
    "sync_callbacks",
]

Mode: TypeAlias = Literal[
    "single", "while_needs_response", "until_success", "until_tool_used"
]
_T = TypeVar("_T")

#: What the model is told about a call that waits for a human (the stand-in).
INTERRUPT_STAND_IN: Final = "This tool call is waiting for a human decision."
# The answers message processors see: complete ones, and ones cut off by a length
# limit (as Elixir LangChain); a cancelled answer is left alone.
_PROCESSED_STATUSES: Final = frozenset({"complete", "length"})
# Longest exception message quoted to the model; the rest stays on the result.
_MAX_ERROR_TEXT: Final = 300


# --- operations the loop yields -----------------------------------------------------


@attrs.frozen
class _Fire:
    """Deliver a chain event to the (invocation-free) handlers."""

    name: str
    args: tuple[Any, ...]


@attrs.frozen
class _Stream:
    """Stream one model call; the result is ``(response, bridge state)``."""

    model: ChatModel
    request: ChatRequest


@attrs.frozen
class _Sleep:
    """Wait before a retry."""

    seconds: float


@attrs.frozen
class _Planned:
    """A call that will run, with its tool."""

    call: ToolCall
    tool: Tool


@attrs.frozen
class _Execute:
    """Run tool calls: in workers when ``parallel``; the result is ``_Outcome``s."""

    planned: tuple[_Planned, ...]
    parallel: bool


_Op: TypeAlias = _Fire | _Stream | _Sleep | _Execute
_Steps: TypeAlias = Generator[_Op, Any, _T]


@attrs.frozen
class _Outcome:
    """What running one tool produced: a value, an exception or a handler fault."""

    value: object = None
    exception: Exception | None = None
    fault: _HandlerFault | None = None


class _HandlerFault(Exception):
    """A chain handler raised; carries the original exception out of the loop."""

    def __init__(self, event: str, original: Exception) -> None:
        super().__init__(event, original)
        self.event = event
        self.original = original


class _GiveUp(Exception):
    """The run cannot go on; ``on_error(error)`` ends it."""

    def __init__(self, error: LangHooksError) -> None:
        super().__init__(error)
        self.error = error


# --- helpers ------------------------------------------------------------------------


def check_arguments(tool: Tool, arguments: object) -> str | None:
    """What is wrong with ``arguments`` for ``tool``, or None when they are fine.

    Checks that the arguments are a JSON object and carry every key the tool's
    ``parameters_schema`` lists as ``required``.
    """
    if not isinstance(arguments, Mapping):
        return f"the arguments must be a JSON object, got {type(arguments).__name__}"
    schema = tool.parameters_schema or {}
    required = schema.get("required") or ()
    missing = [key for key in required if key not in arguments]
    if missing:
        return f"missing required argument(s): {', '.join(map(str, missing))}"
    return None


def pending_results(chain: LLMChain) -> tuple[ToolResult, ...]:
    """The interrupted stand-in results of the chain's last message, if any."""
    if not chain.messages or chain.messages[-1].role != "tool":
        return ()
    return tuple(r for r in chain.messages[-1].tool_results if r.is_interrupt)


def interrupt_data(results: Sequence[ToolResult]) -> Mapping[str, Any]:
    """``RunResult.interrupt_data`` for a batch's interrupted results.

    One interrupted call: its data plus ``tool_call_id``. Several:
    ``{"interrupts": (data_1, data_2, ...)}``, each with its ``tool_call_id``, in
    call order.
    """
    datas = tuple(
        dict(r.interrupt_data or {"tool_call_id": r.tool_call_id}) for r in results
    )
    return datas[0] if len(datas) == 1 else {"interrupts": datas}


def _short(exception: BaseException) -> str:
    text = f"{type(exception).__name__}: {exception}"
    if len(text) > _MAX_ERROR_TEXT:
        text = text[: _MAX_ERROR_TEXT - 3] + "..."
    return text


def _interrupted(call: ToolCall, message: str, data: Mapping[str, Any]) -> ToolResult:
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=INTERRUPT_STAND_IN,
        display_text=message or None,
        is_interrupt=True,
        interrupt_data={**data, "tool_call_id": call.call_id},
    )


def _error(call: ToolCall, text: str, *, is_error: bool = True) -> ToolResult:
    return ToolResult(
        tool_call_id=call.call_id, name=call.name, content=text, is_error=is_error
    )


def _processor_fault(
    processor: object, problem: str, original: Exception | None
) -> LangHooksError:
    name = getattr(processor, "__qualname__", None) or repr(processor)
    return LangHooksError(
        "handler_error",
        f"message processor {name} {problem}; a processor returns the message "
        f"(changed or not) or Reject(reply)",
        original=original,
    )


def _metadata_events(chain: LLMChain, metadata: Mapping[str, Any]) -> _Steps[None]:
    headers = metadata.get("response_headers")
    if isinstance(headers, Mapping) and headers:
        yield _Fire("on_llm_response_headers", (chain, headers))
    ratelimit = metadata.get("ratelimit")
    if isinstance(ratelimit, Mapping) and ratelimit:
        yield _Fire("on_llm_ratelimit_info", (chain, ratelimit))


# --- the loop -----------------------------------------------------------------------


@attrs.define
class _Plan:
    """One call of a batch, after review."""

    call: ToolCall
    tool: Tool | None
    result: ToolResult | None = None  # set unless the call will run


@final
class Run:
    """The state of one run and the generator steps that make it."""

    def __init__(
        self,
        chain: LLMChain,
        *,
        mode: Mode = "while_needs_response",
        tool_name: str | None = None,
        max_runs: int = 25,
    ) -> None:
        self.chain = chain
        self.mode: Final = mode
        self.tool_name: Final = tool_name
        self.max_runs: Final = max_runs
        self.policy: Final = chain.retry if chain.retry is not None else RetryPolicy()
        self.tools: Final = {tool.name: tool for tool in chain.tools}

    # The frame every run shares: start, body, complete or error.
    def main(
        self, body: _Steps[tuple[RunStatus, Mapping[str, Any] | None]]
    ) -> _Steps[RunResult]:
        from ._chain import RunResult

        try:
            yield _Fire("on_run_start", (self.chain,))
            status, data = yield from body
            result = RunResult(status=status, chain=self.chain, interrupt_data=data)
            yield _Fire("on_run_complete", (self.chain, result))
        except _GiveUp as give_up:
            error = give_up.error
        except _HandlerFault as fault:
            original = fault.original
            error = LangHooksError(
                "handler_error",
                f"a chain handler's {fault.event} raised "
                f"{type(original).__name__}: {original}",
                original=original,
            )
        else:
            return result
        # A handler that raises in on_error itself propagates out of run().
        yield _Fire("on_error", (self.chain, error))
        return RunResult(status="error", chain=self.chain, error=error)

    def loop(self) -> _Steps[tuple[RunStatus, Mapping[str, Any] | None]]:
        """Model calls and tool batches until the mode is satisfied."""
        calls = 0
        while True:
            if calls >= self.max_runs:
                raise _GiveUp(
                    LangHooksError(
                        "exceeded_max_runs",
                        f"the run made {calls} model calls in mode {self.mode!r} "
                        f"without finishing; raise max_runs or check the tools",
                    )
                )
            calls += 1
            message = yield from self.call_model()
            if message is None:  # a message processor rejected the answer
                if self.mode == "single":
                    return "ok", None
                continue
            if not message.tool_calls:
                if self.mode == "until_tool_used":
                    continue
                return "ok", None
            results, ran = yield from self.batch(message.tool_calls, None)
            yield from self.add_tool_message(Message.tool(results), replace=False)
            interrupted = [r for r in results if r.is_interrupt]
            if interrupted:
                return "interrupted", interrupt_data(interrupted)
            if self.mode == "single":
                return "ok", None
            if self.mode == "until_tool_used" and self.tool_name in ran:
                return "ok", None
            if self.mode == "until_success":
                failed = [r for r in results if r.is_error]
                if not failed:
                    return "ok", None
                names = ", ".join(r.name for r in failed)
                yield from self.count_failure(
                    f"{len(failed)} tool call(s) failed ({names})", tuple(failed)
                )

    def resume(
        self, calls: Sequence[ToolCall], decisions: Sequence[Decision]
    ) -> _Steps[tuple[RunStatus, Mapping[str, Any] | None]]:
        """Run interrupted calls with human decisions and swap their stand-ins."""
        human = {
            call.call_id: decision
            for call, decision in zip(calls, decisions, strict=True)
        }
        results, _ = yield from self.batch(calls, human)
        message = self.chain.messages[-1]
        fresh = {result.tool_call_id: result for result in results}
        merged = attrs.evolve(
            message,
            tool_results=tuple(
                fresh.get(r.tool_call_id, r) for r in message.tool_results
            ),
        )
        yield from self.add_tool_message(merged, replace=True)
        waiting = [r for r in merged.tool_results if r.is_interrupt]
        if waiting:
            return "interrupted", interrupt_data(waiting)
        return "ok", None

    def count_failure(self, reason: str, original: object) -> _Steps[None]:
        """Count one failure; give up once the count reaches ``max_retry_count``.

        Args:
            reason: what failed, for the error message.
            original: the model error, or the failed tool results.
        """
        count = self.chain.current_failure_count + 1
        self.chain = attrs.evolve(self.chain, current_failure_count=count)
        if count >= self.chain.max_retry_count:
            yield _Fire("on_retries_exceeded", (self.chain,))
            raise _GiveUp(
                LangHooksError(
                    "exceeded_failure_count",
                    f"the run failed {count} time(s), reaching max_retry_count="
                    f"{self.chain.max_retry_count}; the last failure: {reason}",
                    original=original,
                )
            )

    def call_model(self) -> _Steps[Message | None]:
        """One model step: retries with backoff, then fallbacks."""
        models = (self.chain.model, *self.chain.fallbacks)
        last: LangHooksError | None = None
        for model in models:
            attempt = 0
            while True:
                attempt += 1
                request = ChatRequest(
                    messages=self.chain.messages, tools=self.chain.tools
                )
                yield _Fire("on_llm_call_start", (self.chain, model, request))
                try:
                    response, stream = yield _Stream(model, request)
                except LangHooksError as error:
                    yield from _metadata_events(self.chain, error.metadata)
                    yield _Fire("on_llm_error", (self.chain, error))
                    if not self.policy.should_retry(error):
                        self.chain = attrs.evolve(
                            self.chain,
                            current_failure_count=self.chain.current_failure_count + 1,
                        )
                        raise _GiveUp(error) from None
                    yield from self.count_failure(str(error), error)
                    last = error
                    if attempt < self.policy.max_attempts:
                        yield _Sleep(self.policy.delay(attempt, error))
                        continue
                    break
                yield _Fire("on_llm_call_complete", (self.chain, response))
                return (yield from self.process_response(response, stream))
        assert last is not None  # the loop above ran at least once and failed
        if len(models) == 1:
            raise _GiveUp(last)
        raise _GiveUp(
            LangHooksError(
                "all_fallbacks_failed",
                f"the model and its {len(models) - 1} fallback(s) all failed; "
                f"the last error: {last}",
                original=last,
            )
        )

    def process_response(
        self, response: ChatResponse, stream: _BridgeState
    ) -> _Steps[Message | None]:
        """Add the assistant message and fire what follows a model call.

        Calls the stream did not announce (a model that delivers its answer whole)
        are identified here, after ``on_llm_new_message``.

        Returns:
            The message as added, or None when a message processor rejected it
            (the rejected message and the reply to it are added, a failure is
            counted).
        """
        message = response.message
        yield from _metadata_events(self.chain, response.metadata)
        if not stream.streamed:
            yield _Fire("on_llm_new_message", (self.chain, message))
        # Indexes of a whole message may all be 0: pick the unseen calls first.
        unseen = [c for c in message.tool_calls if c.index not in stream.identified]
        for call in unseen:
            tool = self.tools.get(call.name)
            if tool is not None:
                yield _Fire("on_tool_call_identified", (self.chain, call, tool))
        message, rejection = self.apply_processors(message)
        self.chain = self.chain.add_message(message)
        if rejection is None:
            yield _Fire("on_message_processed", (self.chain, message))
        else:
            yield _Fire("on_message_processing_error", (self.chain, message))
            reply = Message.user(rejection.reply)
            self.chain = self.chain.add_message(reply)
            yield _Fire("on_error_message_created", (self.chain, reply))
        if response.token_usage is not None:
            yield _Fire("on_llm_token_usage", (self.chain, response.token_usage))
        if rejection is None:
            return message
        yield from self.count_failure(
            f"a message processor rejected the answer: {rejection.reply}", rejection
        )
        return None

    def apply_processors(self, message: Message) -> tuple[Message, Reject | None]:
        """Run the chain's message processors, in order, on a complete answer.

        Answers with tool calls, and cancelled or failed ones, are not processed.

        Returns:
            The message as the processors left it, and the ``Reject`` that
            stopped them (None when every processor accepted it).

        Raises:
            _GiveUp: a processor raised or returned something else than a
                Message or a Reject ("handler_error": a bug in the processor).
        """
        if message.tool_calls or message.status not in _PROCESSED_STATUSES:
            return message, None
        for processor in self.chain.message_processors:
            try:
                verdict: object = processor(self.chain, message)
            except Exception as exc:
                fault = _processor_fault(processor, f"raised {_short(exc)}", exc)
                raise _GiveUp(fault) from exc
            if isinstance(verdict, Reject):
                return message, verdict
            if not isinstance(verdict, Message) or verdict.role != "assistant":
                if inspect.iscoroutine(verdict):
                    verdict.close()  # never awaited: close it without a warning
                problem = f"returned {verdict!r}, not an assistant Message or a Reject"
                raise _GiveUp(_processor_fault(processor, problem, None))
            message = verdict
        return message, None

    def batch(
        self, calls: Sequence[ToolCall], human: Mapping[str, Decision] | None
    ) -> _Steps[tuple[list[ToolResult], frozenset[str]]]:
        """Review, announce, run and report one batch of tool calls.

        Returns:
            The results in call order, and the names of the tools that ran.
        """
        plans: list[_Plan] = []
        for call in calls:
            plans.append((yield from self.review(call, human)))
        for plan in plans:
            if plan.result is not None and not plan.result.is_interrupt:
                yield _Fire(
                    "on_tool_execution_failed", (self.chain, plan.call, plan.result)
                )
        to_run = [plan for plan in plans if plan.result is None]
        for plan in to_run:
            yield _Fire("on_tool_execution_started", (self.chain, plan.call, plan.tool))
        parallel = [p for p in to_run if p.tool is not None and p.tool.concurrent]
        if parallel:
            outcomes = yield _Execute(
                tuple(_Planned(p.call, p.tool) for p in parallel if p.tool), True
            )
            for outcome in outcomes:
                if outcome.fault is not None:
                    raise outcome.fault
            for plan, outcome in zip(parallel, outcomes, strict=True):
                yield from self.report(plan, outcome)
        in_parallel = {id(plan) for plan in parallel}
        for plan in to_run:
            if id(plan) in in_parallel or plan.tool is None:
                continue
            (outcome,) = yield _Execute((_Planned(plan.call, plan.tool),), False)
            if outcome.fault is not None:
                raise outcome.fault
            yield from self.report(plan, outcome)
        results = [plan.result for plan in plans if plan.result is not None]
        interrupted = [r for r in results if r.is_interrupt]
        if interrupted:
            yield _Fire("on_tool_interrupted", (self.chain, tuple(interrupted)))
        ran = frozenset(plan.call.name for plan in to_run)
        return results, ran

    def review(
        self, call: ToolCall, human: Mapping[str, Decision] | None
    ) -> _Steps[_Plan]:
        """Settle one call before the batch runs: unknown, rejected, reviewed."""
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            text = f"Error: there is no tool named {call.name!r}; available: {known}."
            return _Plan(call, None, _error(call, text))
        decision = human.get(call.call_id) if human is not None else None
        if decision is not None and decision.kind == "reject":
            return _Plan(call, tool, _error(call, decision.reason, is_error=False))
        if decision is not None and decision.arguments is not None:
            call = attrs.evolve(call, arguments=decision.arguments)
        human_decision: Literal["approve", "edit"] | None = None
        if decision is not None:
            human_decision = "edit" if decision.kind == "edit" else "approve"
        context = ReviewContext(
            human_decision=human_decision, custom_context=self.chain.custom_context
        )
        settled = yield _Fire("on_tool_call_review", (self.chain, call, tool, context))
        if isinstance(settled, UpdateArguments):
            call = attrs.evolve(call, arguments=settled.arguments)
        elif isinstance(settled, Deny):
            text = f"The tool call was denied: {settled.reason}"
            return _Plan(call, tool, _error(call, text, is_error=False))
        elif isinstance(settled, Interrupt):
            return _Plan(call, tool, _interrupted(call, settled.message, settled.data))
        problem = check_arguments(tool, call.arguments)
        if problem is not None:
            text = f"Error: invalid arguments for tool {tool.name!r}: {problem}."
            return _Plan(call, tool, _error(call, text))
        return _Plan(call, tool)

    def report(self, plan: _Plan, outcome: _Outcome) -> _Steps[None]:
        """Turn a tool's outcome into its result and fire completed / failed."""
        call = plan.call
        exception = outcome.exception
        value = outcome.value
        if exception is None and not isinstance(value, str | ToolResult):
            exception = TypeError(
                f"tool {call.name!r} returned {type(value).__name__}; a tool "
                f"function returns a str or a ToolResult"
            )
        if exception is not None:
            result = ToolResult(
                tool_call_id=call.call_id,
                name=call.name,
                content=f"Error: the tool failed: {_short(exception)}",
                is_error=True,
                exception=exception,
            )
            plan.result = result
            yield _Fire("on_tool_execution_failed", (self.chain, call, result))
            yield _Fire("on_tool_execution_exception", (self.chain, call, exception))
            return
        if isinstance(value, str):
            result = ToolResult(
                tool_call_id=call.call_id, name=call.name, content=value
            )
        else:
            assert isinstance(value, ToolResult)  # checked above
            result = attrs.evolve(value, tool_call_id=call.call_id, name=call.name)
        if result.is_interrupt:
            plan.result = attrs.evolve(
                result,
                content=result.content or INTERRUPT_STAND_IN,
                interrupt_data={
                    **(result.interrupt_data or {}),
                    "tool_call_id": call.call_id,
                },
            )
            return
        plan.result = result
        event = (
            "on_tool_execution_failed"
            if result.is_error
            else "on_tool_execution_completed"
        )
        yield _Fire(event, (self.chain, call, result))

    def add_tool_message(self, message: Message, *, replace: bool) -> _Steps[None]:
        """Add (or swap in) a batch's tool message and announce it."""
        kept = self.chain.messages[:-1] if replace else self.chain.messages
        self.chain = attrs.evolve(self.chain, messages=(*kept, message))
        yield _Fire("on_tool_response_created", (self.chain, message))
        yield _Fire("on_message_processed", (self.chain, message))

    def tool_context(self, call: ToolCall, inv: Invocation) -> ToolContext:
        return ToolContext(
            call=call,
            custom_context=self.chain.custom_context,
            invocation=inv,
            chain=self.chain,
        )


# --- the stream bridge: model partials -> chain events -----------------------------


@final
class _BridgeState:
    """Turns one stream's callbacks into chain events (shared by both bridges)."""

    __slots__ = ("identified", "run", "streamed")

    def __init__(self, run: Run) -> None:
        self.run = run
        self.identified: set[int] = set()
        self.streamed = False

    def delta(self, delta: MessageDelta) -> _Fire:
        self.streamed = True
        return _Fire("on_llm_new_delta", (self.run.chain, (delta,)))

    def identify(
        self, index: int, call_id: str | None, name: str, call: ToolCall | None
    ) -> _Fire | None:
        if index in self.identified:
            return None
        self.identified.add(index)
        tool = self.run.tools.get(name)
        if tool is None:
            return None
        if call is None:
            call = ToolCall(
                call_id=call_id or f"pending-{index}", name=name, index=index
            )
        return _Fire("on_tool_call_identified", (self.run.chain, call, tool))

    def end(self, response: ChatResponse) -> _Fire | None:
        if not self.streamed:
            return None
        delta = MessageDelta(status=response.message.status, usage=response.token_usage)
        return _Fire("on_llm_new_delta", (self.run.chain, (delta,)))


def _fire_sync(handlers: ChainCallbackHandler, event: _Fire | None) -> Any:
    if event is None:
        return None
    try:
        return getattr(handlers, event.name)(*event.args)
    except Exception as exc:
        raise _HandlerFault(event.name, exc) from exc


async def _fire_async(handlers: AsyncChainCallbackHandler, event: _Fire | None) -> Any:
    if event is None:
        return None
    try:
        return await getattr(handlers, event.name)(*event.args)
    except Exception as exc:
        raise _HandlerFault(event.name, exc) from exc


@final
class _SyncBridge(StreamingChatResponseHandler):
    """The streaming handler a sync run gives the model."""

    def __init__(self, state: _BridgeState, handlers: ChainCallbackHandler) -> None:
        self.state = state
        self._handlers = handlers

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        _fire_sync(self._handlers, self.state.delta(MessageDelta(text=partial.text)))

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        _fire_sync(
            self._handlers, self.state.delta(MessageDelta(thinking=partial.text))
        )

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        _fire_sync(self._handlers, self.state.delta(MessageDelta(tool_call=partial)))
        _fire_sync(
            self._handlers,
            self.state.identify(partial.index, partial.id, partial.name, None),
        )

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        call = complete.tool_call
        _fire_sync(
            self._handlers,
            self.state.identify(complete.index, call.call_id, call.name, call),
        )

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        _fire_sync(self._handlers, self.state.end(response))


@final
class _AsyncBridge(AsyncStreamingChatResponseHandler):
    """The streaming handler an async run gives the model."""

    def __init__(
        self, state: _BridgeState, handlers: AsyncChainCallbackHandler
    ) -> None:
        self.state = state
        self._handlers = handlers

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        await _fire_async(
            self._handlers, self.state.delta(MessageDelta(text=partial.text))
        )

    @override
    async def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        await _fire_async(
            self._handlers, self.state.delta(MessageDelta(thinking=partial.text))
        )

    @override
    async def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        await _fire_async(
            self._handlers, self.state.delta(MessageDelta(tool_call=partial))
        )
        await _fire_async(
            self._handlers,
            self.state.identify(partial.index, partial.id, partial.name, None),
        )

    @override
    async def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        call = complete.tool_call
        await _fire_async(
            self._handlers,
            self.state.identify(complete.index, call.call_id, call.name, call),
        )

    @override
    async def on_complete_response(self, response: ChatResponse) -> None:
        await _fire_async(self._handlers, self.state.end(response))


def _model_failure(model: object, exc: Exception) -> LangHooksError:
    """A model broke the protocol: it raised something other than LangHooksError."""
    return LangHooksError(
        "protocol_error",
        f"{model!r} raised {_short(exc)}; a ChatModel reports failures as "
        f"LangHooksError",
        original=exc,
    )


def _checked_response(model: object, response: object) -> ChatResponse:
    if not isinstance(response, ChatResponse):
        raise LangHooksError(
            "protocol_error",
            f"{model!r}.stream returned {type(response).__name__}, not a ChatResponse",
        )
    if response.message.status == "stream_error":
        # A model should raise when its stream dies; returning the remains must not
        # make a silent success either.
        raise LangHooksError(
            "stream_error",
            f"{model!r} returned a response whose stream failed (message status "
            f"'stream_error'); a ChatModel raises LangHooksError when that happens",
            retryable=True,  # as a stream cut mid-way, which providers retry
            metadata=response.metadata,
        )
    return response


# --- the drivers --------------------------------------------------------------------


def sync_callbacks(chain: LLMChain) -> list[ChainCallbackHandler]:
    """The chain's handlers, checked to be synchronous.

    Raises:
        TypeError: a handler is an ``AsyncChainCallbackHandler``.
    """
    handlers: list[ChainCallbackHandler] = []
    for handler in chain.callbacks:
        if not isinstance(handler, ChainCallbackHandler):
            raise TypeError(
                f"{handler!r} is an AsyncChainCallbackHandler: LLMChain.run() calls "
                f"handlers synchronously; use 'await chain.arun()' instead"
            )
        handlers.append(handler)
    return handlers


def _run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Finish an async tool's awaitable from synchronous code."""

    async def wait() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    # run() was called from inside an event loop: use a loop in a helper thread.
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, wait()).result()


def _execute_sync(run: Run, pre: ChainCallbackHandler, planned: _Planned) -> _Outcome:
    call, tool = planned.call, planned.tool
    with invocation(tool.name, custom_context=run.chain.custom_context) as inv:
        try:
            pre.on_tool_pre_execution(run.chain, call, tool)
        except Exception as exc:
            return _Outcome(fault=_HandlerFault("on_tool_pre_execution", exc))
        try:
            value = tool.function(call.arguments, run.tool_context(call, inv))
            if inspect.isawaitable(value):
                value = _run_awaitable(value)
        except Exception as exc:
            return _Outcome(exception=exc)
        return _Outcome(value=value)


def drive_sync(chain: LLMChain, run: Run, steps: _Steps[RunResult]) -> RunResult:
    """Perform a run's operations synchronously and return its result.

    Raises:
        Exception: what a handler raised in ``on_error`` (nothing else).
    """
    callbacks = sync_callbacks(chain)
    handlers = CompositeChainHandler(
        [HandlerWithoutInvocation.wrap(h) for h in callbacks]
    )
    pre = CompositeChainHandler(callbacks)

    def perform(op: _Op) -> Any:
        if isinstance(op, _Fire):
            return _fire_sync(handlers, op)
        if isinstance(op, _Stream):
            state = _BridgeState(run)
            try:
                response = op.model.stream(op.request, _SyncBridge(state, handlers))
            except (LangHooksError, _HandlerFault):
                raise
            except Exception as exc:
                raise _model_failure(op.model, exc) from exc
            return _checked_response(op.model, response), state
        if isinstance(op, _Sleep):
            run.policy.sleep(op.seconds)
            return None
        if not op.parallel:
            # Each call runs in its own copy of the context, as a worker would: what
            # on_tool_pre_execution sets is seen by the tool and by nothing after it.
            return [
                contextvars.copy_context().run(_execute_sync, run, pre, planned)
                for planned in op.planned
            ]
        with ThreadPoolExecutor(max_workers=len(op.planned)) as pool:
            futures = [
                pool.submit(
                    contextvars.copy_context().run, _execute_sync, run, pre, planned
                )
                for planned in op.planned
            ]
            return [future.result() for future in futures]

    return _drive(steps, perform)


def _drive(steps: _Steps[RunResult], perform: Callable[[_Op], Any]) -> RunResult:
    sent: Any = None
    thrown: Exception | None = None
    while True:
        try:
            op = steps.send(sent) if thrown is None else steps.throw(thrown)
        except StopIteration as stop:
            result: RunResult = stop.value
            return result
        except _HandlerFault as fault:
            raise fault.original from None
        sent, thrown = None, None
        try:
            sent = perform(op)
        except (LangHooksError, _HandlerFault) as exc:
            thrown = exc


async def _execute_async(
    run: Run,
    pre: AsyncChainCallbackHandler,
    pre_sync: ChainCallbackHandler | None,
    planned: _Planned,
    *,
    thread: bool,
) -> _Outcome:
    call, tool = planned.call, planned.tool
    if thread and not tool.is_async and pre_sync is not None:
        # A concurrent sync tool runs in a worker thread; with only sync handlers,
        # pre-execution runs there too (asyncio.to_thread copies the context).
        outcome: _Outcome = await asyncio.to_thread(
            _execute_sync, run, pre_sync, planned
        )
        return outcome
    with invocation(tool.name, custom_context=run.chain.custom_context) as inv:
        try:
            await pre.on_tool_pre_execution(run.chain, call, tool)
        except Exception as exc:
            return _Outcome(fault=_HandlerFault("on_tool_pre_execution", exc))
        try:
            context = run.tool_context(call, inv)
            if thread and not tool.is_async:
                value = await asyncio.to_thread(tool.function, call.arguments, context)
            else:
                value = tool.function(call.arguments, context)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return _Outcome(exception=exc)
        return _Outcome(value=value)


async def drive_async(chain: LLMChain, run: Run, steps: _Steps[RunResult]) -> RunResult:
    """Perform a run's operations with ``await`` and return its result.

    Raises:
        Exception: what a handler raised in ``on_error`` (nothing else).
    """
    handlers = AsyncCompositeChainHandler(
        [HandlerWithoutInvocation.wrap(h) for h in chain.callbacks]
    )
    pre = AsyncCompositeChainHandler(chain.callbacks)
    sync_only = all(isinstance(h, ChainCallbackHandler) for h in chain.callbacks)
    pre_sync = CompositeChainHandler(sync_callbacks(chain)) if sync_only else None

    async def perform(op: _Op) -> Any:
        if isinstance(op, _Fire):
            return await _fire_async(handlers, op)
        if isinstance(op, _Stream):
            state = _BridgeState(run)
            try:
                response = await op.model.astream(
                    op.request, _AsyncBridge(state, handlers)
                )
            except (LangHooksError, _HandlerFault):
                raise
            except Exception as exc:
                raise _model_failure(op.model, exc) from exc
            return _checked_response(op.model, response), state
        if isinstance(op, _Sleep):
            await run.policy.async_sleep(op.seconds)
            return None
        if not op.parallel:
            # A task of its own copies the context (as gather does for concurrent
            # calls): what on_tool_pre_execution sets stays with this call.
            return [
                await asyncio.create_task(
                    _execute_async(run, pre, pre_sync, planned, thread=False)
                )
                for planned in op.planned
            ]
        tasks: list[Coroutine[Any, Any, _Outcome]] = [
            _execute_async(run, pre, pre_sync, planned, thread=True)
            for planned in op.planned
        ]
        return list(await asyncio.gather(*tasks))

    sent: Any = None
    thrown: Exception | None = None
    while True:
        try:
            op = steps.send(sent) if thrown is None else steps.throw(thrown)
        except StopIteration as stop:
            result: RunResult = stop.value
            return result
        except _HandlerFault as fault:
            raise fault.original from None
        sent, thrown = None, None
        try:
            sent = await perform(op)
        except (LangHooksError, _HandlerFault) as exc:
            thrown = exc
