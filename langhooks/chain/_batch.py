"""One batch of tool calls, step by step: review all, announce, run, report, add.

``ToolBatch(run, calls, human).steps()`` is the generator ``Run`` delegates to after
an answer with tool calls (``human`` is None) or when a human resumes interrupted
calls (``human`` holds the decisions, and the results are swapped into the last
tool message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, final

import attrs

from .._core._chain_callbacks import (
    ChainCallbackHandler,
    Deny,
    Interrupt,
    ReviewContext,
    UpdateArguments,
)
from .._core._messages import Message, ToolCall, ToolResult
from .._core._tools import Tool
from ._operations import Execute, HandlerFault, Outcome, Planned, RunState, Steps, fire
from ._tool_results import (
    check_arguments,
    error_result,
    interrupted_result,
    not_run_result,
    result_of,
)

if TYPE_CHECKING:
    from ._decision import Decision

__all__ = ["ToolBatch"]

_H = ChainCallbackHandler


@attrs.define
class _Plan:
    """One call of a batch, after review."""

    call: ToolCall
    tool: Tool | None
    result: ToolResult | None = None  # set unless the call will run


def _settle(call: ToolCall, tool: Tool, settled: object) -> _Plan:
    """The plan for a call after review settled it (the composite has checked
    ``settled`` is a decision)."""
    if isinstance(settled, UpdateArguments):
        call = attrs.evolve(call, arguments=settled.arguments)
    elif isinstance(settled, Deny):
        text = f"The tool call was denied: {settled.reason}"
        return _Plan(call, tool, error_result(call, text, is_error=False))
    elif isinstance(settled, Interrupt):
        interrupted = interrupted_result(call, settled.message, settled.data)
        return _Plan(call, tool, interrupted)
    problem = check_arguments(tool, call.arguments)
    if problem is not None:
        text = f"Error: invalid arguments for tool {tool.name!r}: {problem}."
        return _Plan(call, tool, error_result(call, text))
    return _Plan(call, tool)


@final
class ToolBatch:
    """The steps of one batch; each reads and updates ``run.chain``."""

    def __init__(
        self,
        run: RunState,
        calls: Sequence[ToolCall],
        human: Mapping[str, Decision] | None,
    ) -> None:
        self.run = run
        self.calls = calls
        self.human = human
        self.resuming = human is not None
        self.plans: list[_Plan] = []

    def steps(self) -> Steps[tuple[Message, frozenset[str]]]:
        """Review, announce, run and report the calls, and add the tool message.

        A handler fault while the tools run stops the calls not yet started; the
        results of those that ran are reported and recorded in the chain (with
        "not run" results for the others) before the fault ends the run.

        Returns:
            The tool message as added, and the names of the tools that ran.
        """
        yield from self.review_all()
        yield from self.announce()
        to_run = [(p, p.tool) for p in self.plans if p.result is None and p.tool]
        try:
            yield from self.run_concurrent(to_run)
            yield from self.run_sequential(to_run)
        except HandlerFault:
            self.record_after_fault()
            raise
        yield from self.report_interrupts()
        message = yield from self.add_tool_message()
        return message, frozenset(plan.call.name for plan, _ in to_run)

    def review_all(self) -> Steps[None]:
        """Settle every call before any runs: unknown, rejected, reviewed."""
        for call in self.calls:
            self.plans.append((yield from self.review(call)))

    def review(self, call: ToolCall) -> Steps[_Plan]:
        """Settle one call: its tool, the human's decision, review, its arguments."""
        run = self.run
        tool = run.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(run.tools)) or "none"
            text = f"Error: there is no tool named {call.name!r}; available: {known}."
            return _Plan(call, None, error_result(call, text))
        decision = self.human.get(call.call_id) if self.human is not None else None
        if decision is not None and decision.kind == "reject":
            rejected = error_result(call, decision.reason, is_error=False)
            return _Plan(call, tool, rejected)
        human_decision: Literal["approve", "edit"] | None = None
        if decision is not None:
            human_decision = "edit" if decision.kind == "edit" else "approve"
            if decision.arguments is not None:
                call = attrs.evolve(call, arguments=decision.arguments)
        context = ReviewContext(
            human_decision=human_decision, custom_context=run.chain.custom_context
        )
        settled = yield fire(_H.on_tool_call_review, run.chain, call, tool, context)
        return _settle(call, tool, settled)

    def announce(self) -> Steps[None]:
        """Report the calls settled by review, then announce the ones that run."""
        chain = self.run.chain
        for plan in self.plans:
            if plan.result is not None and not plan.result.is_interrupt:
                yield fire(_H.on_tool_execution_failed, chain, plan.call, plan.result)
        for plan in self.plans:
            if plan.result is None and plan.tool is not None:
                yield fire(_H.on_tool_execution_started, chain, plan.call, plan.tool)

    def run_concurrent(self, to_run: Sequence[tuple[_Plan, Tool]]) -> Steps[None]:
        """Run the concurrent calls together, then report each in call order.

        Raises:
            HandlerFault: a handler raised (the first, after every call that ran
                was reported).
        """
        together = [(plan, tool) for plan, tool in to_run if tool.concurrent]
        if not together:
            return
        outcomes: list[Outcome] = yield Execute(
            tuple(Planned(plan.call, tool) for plan, tool in together), True
        )
        for (plan, _), outcome in zip(together, outcomes, strict=True):
            if outcome.fault is None:
                yield from self.report(plan, outcome)
        for outcome in outcomes:
            if outcome.fault is not None:
                raise outcome.fault

    def run_sequential(self, to_run: Sequence[tuple[_Plan, Tool]]) -> Steps[None]:
        """Run the other calls one by one, in call order, reporting each.

        Raises:
            HandlerFault: a handler raised; the calls after it do not start.
        """
        for plan, tool in to_run:
            if tool.concurrent:
                continue
            (outcome,) = yield Execute((Planned(plan.call, tool),), False)
            if outcome.fault is not None:
                raise outcome.fault
            yield from self.report(plan, outcome)

    def report(self, plan: _Plan, outcome: Outcome) -> Steps[None]:
        """Settle a call's result from its outcome, then fire completed / failed
        (and the exception event when the tool raised)."""
        chain, call = self.run.chain, plan.call
        result, exception = result_of(call, outcome.value, outcome.exception)
        plan.result = result
        if exception is not None:
            yield fire(_H.on_tool_execution_failed, chain, call, result)
            yield fire(_H.on_tool_execution_exception, chain, call, exception)
        elif result.is_interrupt:
            return  # reported once per batch by on_tool_interrupted
        elif result.is_error:
            yield fire(_H.on_tool_execution_failed, chain, call, result)
        else:
            yield fire(_H.on_tool_execution_completed, chain, call, result)

    def report_interrupts(self) -> Steps[None]:
        """Once per batch, every interrupted call's stand-in."""
        interrupted = tuple(
            plan.result
            for plan in self.plans
            if plan.result is not None and plan.result.is_interrupt
        )
        if interrupted:
            yield fire(_H.on_tool_interrupted, self.run.chain, interrupted)

    def tool_message(self) -> tuple[Message, tuple[ToolResult, ...]]:
        """The batch's tool message and the results that are new in it.

        Resuming, the new results replace their stand-ins in the last message.
        """
        fresh = tuple(plan.result for plan in self.plans if plan.result is not None)
        if not self.resuming:
            return Message.tool(fresh), fresh
        last = self.run.chain.messages[-1]
        by_id = {result.tool_call_id: result for result in fresh}
        merged = attrs.evolve(
            last,
            tool_results=tuple(by_id.get(r.tool_call_id, r) for r in last.tool_results),
        )
        return merged, fresh

    def record(self, message: Message) -> None:
        """Add (or, resuming, swap in) the batch's tool message."""
        chain = self.run.chain
        kept = chain.messages[:-1] if self.resuming else chain.messages
        self.run.chain = attrs.evolve(chain, messages=(*kept, message))

    def record_after_fault(self) -> None:
        """Record what ran before a handler fault ends the run (no events)."""
        for plan in self.plans:
            if plan.result is None:
                plan.result = not_run_result(plan.call)
        self.record(self.tool_message()[0])

    def add_tool_message(self) -> Steps[Message]:
        """Add the tool message, announce it, count failures.

        A new error result counts one failure (denials and rejections are not
        errors); a message with no error at all ends a streak of failures.

        Returns:
            The message as added.
        """
        run = self.run
        message, fresh = self.tool_message()
        self.record(message)
        if not any(result.is_error for result in message.tool_results):
            run.chain = attrs.evolve(run.chain, current_failure_count=0)
        yield fire(_H.on_tool_response_created, run.chain, message)
        yield fire(_H.on_message_processed, run.chain, message)
        failed = tuple(result for result in fresh if result.is_error)
        if failed:
            names = ", ".join(result.name for result in failed)
            yield from run.count_failure(
                f"{len(failed)} tool call(s) failed ({names})", failed
            )
        return message
