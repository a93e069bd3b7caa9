"""Chain handlers (after Elixir LangChain's ``ChainCallbacks``) and tool review.

``ChainCallbackHandler`` here is the spec of the chain events: the async interface,
the event names and the function handlers' keywords are generated from it
(``python scripts/generate.py``; import them from ``_chain_callbacks``).

The first argument of every event is the chain: an immutable snapshot of the run's
state when the event fired (an ``LLMChain`` under the reference runtime). The
interfaces are generic in it and typed against ``ChainView``, what a handler may read
of any chain, so the contract does not import the runtime: ``ChainCallbackHandler``
alone takes any chain, and an override may annotate its parameter ``LLMChain``
(``ChainCallbackHandler[LLMChain]`` says so for every event). ``chain.invocation`` is
the run's ``Invocation``, also in threads that did not copy the context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeAlias

import attrs
from typing_extensions import TypeVar, override

from ._handler import Fold, HandlerBase, folded
from ._messages import (
    ChatResponse,
    LangHooksError,
    Message,
    MessageDelta,
    TokenUsage,
    ToolCall,
    ToolResult,
    _arguments,
)
from ._validators import instance_of
from ._values import (
    _custom_context,
    _frozen_mapping,
    _reduce,
    _value_eq,
    _value_hash,
    _value_repr,
)

if TYPE_CHECKING:
    from ._model import ChatModel, ChatRequest
    from ._result import RunResult
    from ._tools import ChainView, Tool, ToolProgress

__all__ = [
    "Allow",
    "ChainCallbackHandler",
    "ChainT_contra",
    "Deny",
    "Interrupt",
    "ReviewContext",
    "ReviewDecision",
    "UpdateArguments",
]


@attrs.frozen(repr=False, eq=False)
class Allow:
    """Review decision: run the call as it is (returning None means the same)."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash


@attrs.frozen(repr=False, eq=False)
class UpdateArguments:
    """Review decision: run the call with these arguments instead."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    arguments: Mapping[str, Any] = attrs.field(converter=_arguments)


@attrs.frozen(repr=False, eq=False)
class Deny:
    """Review decision: do not run the call; the model is told ``reason``.

    A denial is not a failure: its result has ``is_error=False``.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    reason: str = attrs.field(validator=instance_of(str))


def _data(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return _frozen_mapping(value, "data")


@attrs.frozen(repr=False, eq=False)
class Interrupt:
    """Review decision: stop before running the call and ask a human.

    The run returns status "interrupted" with ``data`` (never sent to the model);
    resume with ``LLMChain.execute_tool_calls_with_decisions``.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    message: str = attrs.field(validator=instance_of(str))
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=_data)

    __reduce__ = _reduce


ReviewDecision: TypeAlias = Allow | UpdateArguments | Deny | Interrupt


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ReviewContext:
    """What a reviewer knows beside the call.

    Attributes:
        human_decision: "approve" or "edit" when a human already decided on this
            call (the run is resuming), else None.
        custom_context: the run's ``custom_context``.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    human_decision: Literal["approve", "edit"] | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.in_(("approve", "edit"))),
    )
    custom_context: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_custom_context
    )

    __reduce__ = _reduce


class _ReviewFold(Fold):
    """Review is a fold: each reviewer sees the arguments as rewritten by those
    before it; the first ``Deny`` or ``Interrupt`` settles the call (later reviewers
    are not asked); otherwise the answer is ``UpdateArguments`` with the final
    arguments if any reviewer rewrote them, else ``Allow()``. A reviewer that
    raised under ``isolate`` made no safe decision: it denies (fail closed)."""

    @override
    def step(
        self, owner: object, answer: object, args: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], object]:
        if answer is None or isinstance(answer, Allow):
            return args, None
        if isinstance(answer, UpdateArguments):
            chain, call, tool, review = args
            call = attrs.evolve(call, arguments=answer.arguments)
            return (chain, call, tool, review), None
        if isinstance(answer, Deny | Interrupt):
            return args, answer
        raise TypeError(
            f"{owner!r}.on_tool_call_review returned {answer!r}: return None, "
            f"Allow(), UpdateArguments(...), Deny(...) or Interrupt(...)"
        )

    @override
    def end(self, first: tuple[Any, ...], last: tuple[Any, ...]) -> object:
        # A rewrite always makes a new call (attrs.evolve), even to equal arguments.
        return Allow() if last[1] is first[1] else UpdateArguments(last[1].arguments)

    @override
    def failed(self) -> object:
        return Deny("the tool call was not run: a review handler failed")


#: The chain a handler's events receive. Unparameterized, an interface takes any
#: chain, so an override may annotate its parameter with the runtime's own class.
# (Its bound named, not imported: the tools' module, ChainView's, is not loaded by
# import langhooks.)
ChainT_contra = TypeVar(
    "ChainT_contra", bound="ChainView", contravariant=True, default=Any
)


class ChainCallbackHandler(
    HandlerBase, Generic[ChainT_contra], _langhooks_interface=True
):
    """Receives a chain run's events. Override the methods you need.

    Every method is a no-op. The runtime calls these methods with no current
    invocation (through ``HandlerWithoutInvocation``), except
    ``on_tool_pre_execution``, which runs in the tool's own thread or task.

    Events are delivered with positional arguments, and the parameters are
    positional-only: an override may name them as it likes, and a call the type
    checker accepts also works through every composite and wrapper.
    """

    _langhooks_async: ClassVar[bool] = False

    def on_run_start(self, chain: ChainT_contra, /) -> None:
        """A run began. The first event of every run."""

    def on_llm_call_start(
        self, chain: ChainT_contra, model: ChatModel, request: ChatRequest, /
    ) -> None:
        """A model attempt begins: before every call, each retry and fallback too.

        ``model`` is the model about to be called (the chain's own or a fallback).
        Each attempt ends with ``on_llm_call_complete`` or ``on_llm_error``.

        Runs in the attempt's own copy of the context, where the model then runs,
        with the run's invocation current: what it sets in a context variable (the
        current tracing span) is seen by the model's code during this attempt and
        by nothing after it.
        """

    def on_llm_call_complete(
        self, chain: ChainT_contra, response: ChatResponse, /
    ) -> None:
        """A model attempt succeeded; fires before its message is processed.

        ``response`` carries the response's id, model name, usage and finish reason.
        """

    def on_llm_new_delta(
        self, chain: ChainT_contra, deltas: Sequence[MessageDelta], /
    ) -> None:
        """A batch of streamed increments arrived, live, in stream order."""

    def on_llm_new_message(self, chain: ChainT_contra, message: Message, /) -> None:
        """A model answered with a complete, non-streamed message."""

    def on_llm_ratelimit_info(
        self, chain: ChainT_contra, info: Mapping[str, object], /
    ) -> None:
        """The provider reported rate-limit headers, parsed."""

    def on_llm_token_usage(self, chain: ChainT_contra, usage: TokenUsage, /) -> None:
        """Token usage, after the message that reported it is processed."""

    def on_llm_response_headers(
        self, chain: ChainT_contra, headers: Mapping[str, str], /
    ) -> None:
        """The provider's raw response headers."""

    def on_message_processed(self, chain: ChainT_contra, message: Message, /) -> None:
        """An assistant or tool message is complete and added to the chain."""

    def on_message_processing_error(
        self, chain: ChainT_contra, message: Message, /
    ) -> None:
        """A message processor rejected ``message``."""

    def on_error_message_created(
        self, chain: ChainT_contra, message: Message, /
    ) -> None:
        """The automated reply to a rejected message was added."""

    def on_tool_call_identified(
        self, chain: ChainT_contra, call: ToolCall, tool: Tool, /
    ) -> None:
        """A streamed call's name resolved to ``tool``; once per call, live.

        ``call.arguments`` may still be empty: the arguments are streaming.
        """

    @folded(_ReviewFold)
    def on_tool_call_review(
        self, chain: ChainT_contra, call: ToolCall, tool: Tool, review: ReviewContext, /
    ) -> ReviewDecision | None:
        """Decide on a call before it is announced or run.

        Returns:
            None or ``Allow()`` to run it, ``UpdateArguments`` to run it with other
            arguments, ``Deny`` to refuse it, ``Interrupt`` to ask a human. Any
            other value is an error; an exception aborts the whole batch before
            any call runs.
        """
        return None

    def on_tool_execution_started(
        self, chain: ChainT_contra, call: ToolCall, tool: Tool, /
    ) -> None:
        """A call will run; fires for every call of the batch before any runs."""

    def on_tool_pre_execution(
        self, chain: ChainT_contra, call: ToolCall, tool: Tool, /
    ) -> None:
        """Inside the thread or task that runs the tool, just before it runs.

        The tool's invocation is current: re-apply per-thread state here.
        """

    def on_tool_progress(
        self, chain: ChainT_contra, call: ToolCall, progress: ToolProgress, /
    ) -> None:
        """A running call reported how far it has got, live.

        From the tool through ``ToolContext.report_progress``, or from an MCP
        server's progress notifications. Fires in the order reported, between the
        call's ``on_tool_execution_started`` and its result, on the run's own
        thread or task (never the tool's worker thread).
        """

    def on_tool_execution_completed(
        self, chain: ChainT_contra, call: ToolCall, result: ToolResult, /
    ) -> None:
        """A call succeeded."""

    def on_tool_execution_failed(
        self, chain: ChainT_contra, call: ToolCall, result: ToolResult, /
    ) -> None:
        """A call did not succeed: it raised, returned an error, named an unknown
        tool, was rejected by a human or denied by review. ``result`` says which.
        """

    def on_tool_execution_exception(
        self, chain: ChainT_contra, call: ToolCall, exception: BaseException, /
    ) -> None:
        """The tool raised; fires after ``on_tool_execution_failed``.

        The traceback is on ``exception.__traceback__``.
        """

    def on_tool_interrupted(
        self, chain: ChainT_contra, results: Sequence[ToolResult], /
    ) -> None:
        """Once per batch, with every interrupted call's stand-in result."""

    def on_tool_response_created(
        self, chain: ChainT_contra, message: Message, /
    ) -> None:
        """The tool message for a batch was added to the chain."""

    def on_llm_error(self, chain: ChainT_contra, error: LangHooksError, /) -> None:
        """A model call failed, transiently or not (it may be retried)."""

    def on_llm_retry(
        self, chain: ChainT_contra, error: LangHooksError, delay: float, /
    ) -> None:
        """The call that failed with ``error`` will be retried on the same model.

        Fires after that failure's ``on_llm_error``, before the run waits ``delay``
        seconds (never more than the retry policy's ``max_delay``). A call moving
        on to a fallback, or not retried at all, fires no ``on_llm_retry``.
        """

    def on_retries_exceeded(self, chain: ChainT_contra, /) -> None:
        """The failure counter reached ``max_retry_count``."""

    def on_error(self, chain: ChainT_contra, error: LangHooksError, /) -> None:
        """The run gave up. Exactly once per failed run; the last event."""

    def on_run_complete(
        self, chain: ChainT_contra, result: RunResult[ChainT_contra], /
    ) -> None:
        """The run finished with status "ok" or "interrupted". The last event."""
