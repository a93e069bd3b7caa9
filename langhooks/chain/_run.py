"""The state machine of one run: the frame, the loop, a model step, the counter.

``Run`` holds the run's chain snapshot (replaced as messages are added) and writes
every step as a generator of operations (``_ops``), so the firing order is defined
once for ``run()`` and ``arun()``. Tool batches are ``_batch.ToolBatch``'s steps.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, final

import attrs

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._invocation import Invocation
from .._core._messages import (
    ChatResponse,
    LangHooksError,
    Message,
    ToolCall,
    ToolResult,
)
from .._core._model import ChatRequest
from .._core._result import ErrorResult, run_result
from .._core._tools import ProgressSink, ToolContext
from ._batch import ToolBatch
from ._decision import Decision, RetryPolicy
from ._ops import (
    Complete,
    GiveUp,
    HandlerFault,
    Sleep,
    Steps,
    Stream,
    fire,
    handler_error,
)
from ._processors import Reject
from ._tool_results import interrupt_data, short_description

if TYPE_CHECKING:
    from .._core._result import RunResult, RunStatus
    from ._bridge import BridgeState
    from ._snapshot import ChainSnapshot

__all__ = ["Ending", "Mode", "Run"]

Mode: TypeAlias = Literal[
    "single", "while_needs_response", "until_success", "until_tool_used"
]
#: How a run's body ended: its status and, when interrupted, the interrupt data.
Ending: TypeAlias = "tuple[RunStatus, Mapping[str, Any] | None]"

_H = ChainCallbackHandler
# The answers message processors see: complete ones, and ones cut off by a length
# limit (as Elixir LangChain); a cancelled answer is left alone.
_PROCESSED_STATUSES: Final = frozenset({"complete", "length"})


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


def _metadata_events(chain: ChainSnapshot, metadata: Mapping[str, Any]) -> Steps[None]:
    headers = metadata.get("response_headers")
    if isinstance(headers, Mapping) and headers:
        yield fire(_H.on_llm_response_headers, chain, headers)
    ratelimit = metadata.get("ratelimit")
    if isinstance(ratelimit, Mapping) and ratelimit:
        yield fire(_H.on_llm_ratelimit_info, chain, ratelimit)


@final
class Run:
    """The state of one run and the generator steps that make it."""

    def __init__(
        self,
        chain: ChainSnapshot,
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

    # --- the frame every run shares: start, body, complete or error ---------------

    def main(self, body: Steps[Ending]) -> Steps[RunResult[ChainSnapshot]]:
        """Start, run ``body``, and end with ``on_run_complete`` or ``on_error``.

        Each handler sees exactly one terminal event. When a handler raises in
        ``on_run_complete``, the handlers before it (and it) have received it and
        only the ones after it receive ``on_error``.

        Returns:
            The run's result ("error" whenever ``on_error`` fired).
        """
        skip = 0
        try:
            yield fire(_H.on_run_start, self.chain)
            status, data = yield from body
            result = run_result(status=status, chain=self.chain, interrupt_data=data)
            failed = yield Complete(self.chain, result)
            if failed is None:
                return result
            index, fault = failed
            skip = index + 1
            error = handler_error(fault)
        except GiveUp as give_up:
            error = give_up.error
        except HandlerFault as fault:
            error = handler_error(fault)
        # A handler that raises in on_error itself propagates out of run().
        yield attrs.evolve(fire(_H.on_error, self.chain, error), skip=skip)
        return ErrorResult(chain=self.chain, error=error)

    # --- the bodies -----------------------------------------------------------------

    def loop(self) -> Steps[Ending]:
        """Model calls and tool batches until the mode is satisfied."""
        calls = 0
        while True:
            if calls >= self.max_runs:
                raise GiveUp(
                    LangHooksError(
                        "exceeded_max_runs",
                        f"the run made {calls} model calls in mode {self.mode!r} "
                        f"without finishing; raise max_runs or check the tools",
                    )
                )
            calls += 1
            message = yield from self.call_model()
            ending = yield from self.after_answer(message)
            if ending is not None:
                return ending

    def after_answer(self, message: Message | None) -> Steps[Ending | None]:
        """Run the answer's tool calls, if any; how the run ends, or None to go on.

        Args:
            message: the answer as added, or None when a processor rejected it.
        """
        if message is None:  # a message processor rejected the answer
            return ("ok", None) if self.mode == "single" else None
        if not message.tool_calls:
            return None if self.mode == "until_tool_used" else ("ok", None)
        batch = ToolBatch(self, message.tool_calls, None)
        tool_message, ran = yield from batch.steps()
        return self.after_batch(tool_message.tool_results, ran)

    def after_batch(
        self, results: Sequence[ToolResult], ran: frozenset[str]
    ) -> Ending | None:
        """How the run ends after a batch with ``results``, or None to go on."""
        interrupted = [r for r in results if r.is_interrupt]
        if interrupted:
            return "interrupted", interrupt_data(interrupted)
        if self.mode == "single":
            return "ok", None
        if self.mode == "until_tool_used" and self.tool_name in ran:
            return "ok", None
        if self.mode == "until_success" and not any(r.is_error for r in results):
            return "ok", None
        return None

    def resume(
        self, calls: Sequence[ToolCall], decisions: Sequence[Decision]
    ) -> Steps[Ending]:
        """Run interrupted calls with human decisions and swap their stand-ins."""
        human = {
            call.call_id: decision
            for call, decision in zip(calls, decisions, strict=True)
        }
        merged, _ = yield from ToolBatch(self, calls, human).steps()
        waiting = [r for r in merged.tool_results if r.is_interrupt]
        if waiting:
            return "interrupted", interrupt_data(waiting)
        return "ok", None

    # --- the failure counter -------------------------------------------------------

    def count_failure(self, reason: str, original: object) -> Steps[None]:
        """Count one conversation failure; give up once the count reaches
        ``max_retry_count``.

        Model call failures do not count: the retry policy and the fallbacks
        bound them.

        Args:
            reason: what failed, for the error message.
            original: the rejection, or the failed tool results.
        """
        count = self.chain.current_failure_count + 1
        self.chain = attrs.evolve(self.chain, current_failure_count=count)
        if count >= self.chain.max_retry_count:
            yield fire(_H.on_retries_exceeded, self.chain)
            raise GiveUp(
                LangHooksError(
                    "exceeded_failure_count",
                    f"the run failed {count} time(s), reaching max_retry_count="
                    f"{self.chain.max_retry_count}; the last failure: {reason}",
                    original=original,
                )
            )

    # --- one model step ------------------------------------------------------------

    def call_model(self) -> Steps[Message | None]:
        """One model step: retries with backoff, then fallbacks.

        Bounded by the retry policy (attempts per model, waits never over
        ``max_delay``) and by the fallback list, not by the failure counter.

        Returns:
            The answer as added, or None when a message processor rejected it.
        """
        models = (self.chain.model, *self.chain.fallbacks)
        last: LangHooksError | None = None
        for model in models:
            attempt = 0
            while True:
                attempt += 1
                request = ChatRequest(
                    messages=self.chain.messages, tools=self.chain.tools
                )
                start = fire(_H.on_llm_call_start, self.chain, model, request)
                try:
                    response, stream = yield Stream(model, request, start)
                except LangHooksError as error:
                    last = error
                    delay = yield from self.after_failed_call(attempt, error)
                    if delay is None:
                        break
                    yield Sleep(delay)
                    continue
                yield fire(_H.on_llm_call_complete, self.chain, response)
                return (yield from self.process_response(response, stream))
        assert last is not None  # the loop above ran at least once and failed
        if len(models) == 1:
            raise GiveUp(last)
        raise GiveUp(
            LangHooksError(
                "all_fallbacks_failed",
                f"the model and its {len(models) - 1} fallback(s) all failed; "
                f"the last error: {last}",
                original=last,
            )
        )

    def after_failed_call(
        self, attempt: int, error: LangHooksError
    ) -> Steps[float | None]:
        """Report a failed attempt; the wait before retrying it, or None to move on.

        Raises:
            GiveUp: the error is not worth retrying nor failing over.
        """
        yield from _metadata_events(self.chain, error.metadata)
        yield fire(_H.on_llm_error, self.chain, error)
        if not self.policy.should_retry(error):
            raise GiveUp(error) from None
        delay = self.policy.retry_delay(attempt, error)
        if delay is not None:  # else: attempts spent, or asked to wait too long
            yield fire(_H.on_llm_retry, self.chain, error, delay)
        return delay

    def process_response(
        self, response: ChatResponse, stream: BridgeState
    ) -> Steps[Message | None]:
        """Add the assistant message and fire what follows a model call.

        Returns:
            The message as added, or None when a message processor rejected it
            (the rejected message and the reply to it are added, a failure is
            counted).
        """
        message = response.message
        yield from _metadata_events(self.chain, response.metadata)
        if not stream.streamed:
            yield fire(_H.on_llm_new_message, self.chain, message)
        yield from self.identify_unannounced(message, stream)
        message, rejection = self.apply_processors(message)
        self.chain = self.chain.add_message(message)
        if rejection is None:
            if not message.tool_calls:  # a plain answer ends a streak of failures
                self.chain = attrs.evolve(self.chain, current_failure_count=0)
            yield fire(_H.on_message_processed, self.chain, message)
        else:
            yield fire(_H.on_message_processing_error, self.chain, message)
            reply = Message.user(rejection.reply)
            self.chain = self.chain.add_message(reply)
            yield fire(_H.on_error_message_created, self.chain, reply)
        if response.token_usage is not None:
            yield fire(_H.on_llm_token_usage, self.chain, response.token_usage)
        if rejection is None:
            return message
        yield from self.count_failure(
            f"a message processor rejected the answer: {rejection.reply}", rejection
        )
        return None

    def identify_unannounced(
        self, message: Message, stream: BridgeState
    ) -> Steps[None]:
        """Identify the calls the stream did not announce (a model that delivers its
        answer whole), after ``on_llm_new_message``."""
        # Indexes of a whole message may all be 0: pick the unseen calls first.
        unseen = [c for c in message.tool_calls if c.index not in stream.identified]
        for call in unseen:
            tool = self.tools.get(call.name)
            if tool is not None:
                yield fire(_H.on_tool_call_identified, self.chain, call, tool)

    def apply_processors(self, message: Message) -> tuple[Message, Reject | None]:
        """Run the chain's message processors, in order, on a complete answer.

        Answers with tool calls, and cancelled or failed ones, are not processed.

        Returns:
            The message as the processors left it, and the ``Reject`` that
            stopped them (None when every processor accepted it).

        Raises:
            GiveUp: a processor raised or returned something else than a
                Message or a Reject ("handler_error": a bug in the processor).
        """
        if message.tool_calls or message.status not in _PROCESSED_STATUSES:
            return message, None
        for processor in self.chain.message_processors:
            try:
                verdict: object = processor(self.chain, message)
            except Exception as exc:
                problem = f"raised {short_description(exc)}"
                raise GiveUp(_processor_fault(processor, problem, exc)) from exc
            if isinstance(verdict, Reject):
                return message, verdict
            if not isinstance(verdict, Message) or verdict.role != "assistant":
                if inspect.iscoroutine(verdict):
                    verdict.close()  # never awaited: close it without a warning
                problem = f"returned {verdict!r}, not an assistant Message or a Reject"
                raise GiveUp(_processor_fault(processor, problem, None))
            message = verdict
        return message, None

    def tool_context(
        self, call: ToolCall, inv: Invocation, progress: ProgressSink
    ) -> ToolContext:
        """What a tool function receives beside its arguments."""
        return ToolContext(
            call=call,
            custom_context=self.chain.custom_context,
            invocation=inv,
            chain=self.chain,
            progress_sink=progress,
        )
