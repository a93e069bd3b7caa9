"""The reference chain runtime: ``LLMChain`` and ``RunResult``.

An ``LLMChain`` is an immutable snapshot: every ``add_*`` returns a new chain, and a
run returns the final chain in its ``RunResult``. Chain handlers receive these
snapshots; ``chain.invocation`` is the run's ``Invocation``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast, get_args

import attrs

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._invocation import Invocation, entered, invocation
from .._core._messages import Message, ToolCall
from .._core._model import ChatModel
from .._core._result import RunResult as _AnyRunResult
from .._core._tools import Tool, tool_tuple
from ._decision import Decision, RetryPolicy
from ._processors import MessageProcessor
from ._runtime import (
    Mode,
    Run,
    drive_async,
    drive_sync,
    pending_results,
    sync_callbacks,
    waiting_position,
)
from ._snapshot import ChainSnapshot, handler_tuple

if TYPE_CHECKING:
    from collections.abc import Generator

__all__ = ["ABANDONED", "Handler", "LLMChain", "RunResult", "shared_messages"]

#: A handler an ``LLMChain`` takes: of either chain interface, written for
#: ``LLMChain``, for any chain (``ChainView``), or unparameterised; a handler
#: written for another runtime's chain type is rejected by the type checkers.
Handler: TypeAlias = (
    "ChainCallbackHandler[LLMChain] | AsyncChainCallbackHandler[LLMChain]"
)


def _chain_handlers(values: Iterable[Handler]) -> tuple[Handler, ...]:
    # The snapshot's converter, typed for LLMChain's constructor and evolve().
    return handler_tuple(values)


_MODES = frozenset(get_args(Mode))

#: What the model is told about a call ``abandon_tool_calls`` settles by default.
ABANDONED: Final = (
    "The user moved on without deciding this tool call, so it was not run."
)


def shared_messages(earlier: Sequence[Message], later: Sequence[Message]) -> int:
    """How many messages ``later`` starts with that ``earlier`` starts with too:
    the length of their common beginning (a message compared by identity first,
    then by value)."""
    if len(later) >= len(earlier) and tuple(later[: len(earlier)]) == tuple(earlier):
        return len(earlier)  # the usual case: appended to, compared in C
    shared = 0
    for old, new in zip(earlier, later, strict=False):
        if old is not new and old != new:
            break
        shared += 1
    return shared


@attrs.frozen(kw_only=True)
class LLMChain(ChainSnapshot):
    """An immutable conversation with a model, its tools and its handlers.

    Args:
        model: the ``ChatModel`` to call.
        tools: the tools the model may call (names unique).
        messages: the conversation so far.
        callbacks: chain handlers, called in order for every event.
        message_processors: functions ``(chain, message) -> Message | Reject``
            run in order on each complete answer without tool calls before it is
            added: each may change it, or reject it with a reply the model
            gets (a failure; the default mode asks the model again).
        custom_context: caller data passed to tools, reviews and invocations.
        max_retry_count: consecutive conversation failures a run may have (a
            tool message with an error result, a rejected answer; model call
            failures are bounded by ``retry`` and ``fallbacks`` instead) before it
            gives up with ``on_retries_exceeded`` and an "exceeded_failure_count"
            error.
        current_failure_count: consecutive failures counted so far in the
            current run (a clean tool message or an accepted answer resets it).
        fallbacks: models tried in order when the model keeps failing.
        retry: the ``RetryPolicy`` for failed model calls (None: the default).
        invocation: the run's ``Invocation`` in the snapshots handlers receive.
    """

    # Declared again to type the constructor's callbacks for LLMChain.
    callbacks: tuple[Handler, ...] = attrs.field(default=(), converter=_chain_handlers)

    # --- saving and loading ----------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """What the chain needs to go on in another process, as JSON types.

        Messages, ``custom_context``, the counters, the run's invocation (so a
        resumed run keeps its run id), the tools' names and the calls waiting for
        a human decision. Code (model, tools, handlers, processors) is not saved:
        ``from_state`` takes it again.

        Returns:
            A dict of JSON types (``json.dumps`` takes it as it is).

        Raises:
            TypeError: caller data (tool arguments, metadata, custom_context, ...)
                is not JSON; the message names the path to it.
            ValueError: a float in caller data is NaN or infinite.
        """
        from ._state_codec import encode_state  # the codec loads on first use

        return encode_state(self)

    def state_since(self, earlier: LLMChain | int) -> dict[str, Any]:
        """What changed since ``earlier``: ``to_state()`` with only the messages
        that ``earlier`` does not have, for callers who keep states themselves
        and write each one as what changed (an append to a message log).

        The result has ``"since"``: how many of the messages at the start it
        leaves out, which are ``earlier``'s first ``since`` messages. When the
        history was only added to, ``since`` is the number of messages
        ``earlier`` has; when a message of ``earlier`` was changed or removed,
        it is the position of the first one changed, so the caller keeps its
        first ``since`` messages, drops the rest and appends ``"messages"``.
        ``from_state`` takes the whole state again:
        ``{**changes, "messages": kept[:changes["since"]] + changes["messages"]}``.

        Args:
            earlier: the chain whose state the caller keeps (an earlier chain
                of this run, or the one ``from_state`` gave), or the number of
                messages kept when the caller knows the history was only added
                to since.

        Returns:
            The ``to_state()`` dict with ``"messages"`` from position ``since``
            on, and ``"since"``.

        Raises:
            TypeError: ``earlier`` is not an ``LLMChain`` or an int, or caller
                data is not JSON (as ``to_state``).
            ValueError: an int larger than the number of messages, or < 0.
        """
        if isinstance(earlier, LLMChain):
            since = shared_messages(earlier.messages, self.messages)
        elif isinstance(earlier, bool) or not isinstance(earlier, int):
            raise TypeError(
                f"earlier must be an LLMChain or a number of messages, got {earlier!r}"
            )
        elif not 0 <= earlier <= len(self.messages):
            raise ValueError(
                f"earlier must be between 0 and the chain's {len(self.messages)} "
                f"messages, got {earlier}"
            )
        else:
            since = earlier
        from ._state_codec import encode_state

        state = encode_state(self, since)
        state["since"] = since
        return state

    @classmethod
    def from_state(
        cls,
        state: Mapping[str, Any],
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
        max_retry_count: int | None = None,
        message_processors: Sequence[MessageProcessor] = (),
    ) -> LLMChain:
        """The chain ``to_state()`` saved, with its code given again.

        Args:
            state: what ``to_state()`` returned (for instance through JSON).
            model: the model to call.
            tools: the tools, at least every tool the saved chain had.
            callbacks: the chain handlers.
            fallbacks: the fallback models.
            retry: the retry policy.
            max_retry_count: None keeps the saved value.
            message_processors: the message processors.

        Returns:
            The chain, to resume with ``execute_tool_calls_with_decisions(
            chain.pending_tool_calls, decisions)`` when it was interrupted.

        Raises:
            ValueError: not a saved chain, a newer schema version, invalid fields,
                or a saved tool missing from ``tools`` (the message names it).
            TypeError: ``state`` is not a mapping, or a bad model, tool or handler.
        """
        from ._state_codec import decode_state  # the codec loads on first use

        fields = decode_state(state)
        saved_tools: list[str] = fields.pop("tools")
        pending: list[ToolCall] = fields.pop("pending_tool_calls")
        given = {tool.name for tool in tool_tuple(tools)}
        missing = [name for name in saved_tools if name not in given]
        if missing:
            raise ValueError(
                f"the saved chain has tools that are not given: {missing}; pass "
                f"them in tools= (code is not saved with the state)"
            )
        if max_retry_count is not None:
            fields["max_retry_count"] = max_retry_count
        chain = cls(
            model,
            tools=tools,
            callbacks=callbacks,
            fallbacks=fallbacks,
            retry=retry,
            message_processors=message_processors,
            **fields,
        )
        # An earlier release saved a chain with messages after its waiting calls
        # (a new user message) as waiting for none: they wait, as they do now.
        last = len(chain.messages) - 1
        earlier = not pending and waiting_position(chain) not in (None, last)
        if list(chain.pending_tool_calls) != pending and not earlier:
            raise ValueError(
                "the saved chain's pending tool calls do not match its messages: "
                "the state was changed after to_state()"
            )
        return chain

    # --- running ------------------------------------------------------------------

    def _prepare(
        self, mode: str, tool_name: str | None, max_runs: int
    ) -> tuple[Mode, str | None, int]:
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
        if (mode == "until_tool_used") != (tool_name is not None):
            raise ValueError(
                "tool_name goes with mode='until_tool_used' and only with it"
            )
        if tool_name is not None and tool_name not in {t.name for t in self.tools}:
            raise ValueError(f"tool_name {tool_name!r} is not one of the chain's tools")
        if type(max_runs) is not int or max_runs < 1:
            raise ValueError(f"max_runs must be an int >= 1, got {max_runs!r}")
        if pending_results(self):
            raise ValueError(self._waiting_problem())
        return cast(Mode, mode), tool_name, max_runs

    def _waiting_problem(self) -> str:
        """What ``run()`` says of a chain whose calls wait for a human: which, and
        the two ways on."""
        calls = ", ".join(f"{c.name} ({c.call_id!r})" for c in self.pending_tool_calls)
        after = len(self.messages) - 1 - (waiting_position(self) or 0)
        added = f" ({after} message(s) were added after them)" if after else ""
        return (
            f"tool call(s) {calls} wait for a human decision{added}; the chain "
            f"runs on only once they are settled: decide them with "
            f"execute_tool_calls_with_decisions(chain.pending_tool_calls, "
            f"decisions), or abandon them with abandon_tool_calls(reason) (each is "
            f"answered with the reason, not run)"
        )

    def _invocation(self, name: str) -> AbstractContextManager[Invocation]:
        """The invocation a run or resume works in: a new one, or, when the chain
        continues a run that stopped at its tool calls (the last message is a tool
        message), that run's own again, so a resumed run keeps its run id."""
        kept = self.invocation
        if kept is not None and self.messages and self.messages[-1].role == "tool":
            return entered(attrs.evolve(kept, custom_context=self.custom_context))
        return invocation(name, custom_context=self.custom_context)

    def _started(self, current: Invocation) -> LLMChain:
        return attrs.evolve(self, invocation=current, current_failure_count=0)

    def run(
        self,
        mode: Mode = "while_needs_response",
        *,
        tool_name: str | None = None,
        max_runs: int = 25,
    ) -> RunResult:
        """Run the chain until ``mode`` is satisfied.

        Modes: "single" (one model call and the tools it asks for),
        "while_needs_response" (call the model and run tools until it answers
        without tool calls), "until_success" (like it, but stop after a tool
        batch that fully succeeds), and
        "until_tool_used" (until a call of ``tool_name`` has run).

        Args:
            mode: how long to run.
            tool_name: the tool "until_tool_used" waits for.
            max_runs: the most model calls this run may make.

        Returns:
            ``RunResult`` with status "ok", "interrupted" (a call waits for a
            human) or "error" (``error`` says why; ``on_error`` has fired).

        Raises:
            ValueError: a bad mode, tool_name or max_runs, or calls still wait for
                a human decision.
            TypeError: a handler is async (use ``arun``).
        """
        mode, tool_name, max_runs = self._prepare(mode, tool_name, max_runs)
        sync_callbacks(self)
        with self._invocation("run") as current:
            run = Run(
                self._started(current),
                mode=mode,
                tool_name=tool_name,
                max_runs=max_runs,
            )
            return _ours(drive_sync(run.chain, run, run.main(run.loop())))

    async def arun(
        self,
        mode: Mode = "while_needs_response",
        *,
        tool_name: str | None = None,
        max_runs: int = 25,
    ) -> RunResult:
        """The async twin of ``run``: async handlers are awaited, concurrent tools
        run as tasks (sync ones in threads).

        Returns:
            ``RunResult`` as ``run``.

        Raises:
            ValueError: as ``run``.
        """
        mode, tool_name, max_runs = self._prepare(mode, tool_name, max_runs)
        with self._invocation("run") as current:
            run = Run(
                self._started(current),
                mode=mode,
                tool_name=tool_name,
                max_runs=max_runs,
            )
            return _ours(await drive_async(run.chain, run, run.main(run.loop())))

    def _check_decisions(
        self, calls: Sequence[ToolCall], decisions: Sequence[Decision]
    ) -> None:
        if len(calls) != len(decisions):
            raise ValueError(
                f"give one decision per call: {len(calls)} call(s), "
                f"{len(decisions)} decision(s)"
            )
        waiting = {call.call_id: call for call in self.pending_tool_calls}
        seen: set[str] = set()
        for call, decision in zip(calls, decisions, strict=True):
            if not isinstance(call, ToolCall):
                raise TypeError(f"calls must be ToolCalls, got {call!r}")
            if not isinstance(decision, Decision):
                raise TypeError(
                    f"decisions must be Decision.approve(), Decision.edit(...) or "
                    f"Decision.reject(), got {decision!r}"
                )
            if call.call_id not in waiting:
                raise ValueError(
                    f"tool call {call.call_id!r} is not waiting for a decision; "
                    f"waiting: {sorted(waiting) or 'none'}"
                )
            if call.call_id in seen:
                # The tool would run once per listing: refuse before anything runs.
                raise ValueError(
                    f"tool call {call.call_id!r} is given more than once; give "
                    f"each waiting call one decision"
                )
            seen.add(call.call_id)
            asked = waiting[call.call_id]
            if call.name != asked.name or call.arguments != asked.arguments:
                # A human approved what the model asked for, not something else.
                raise ValueError(
                    f"tool call {call.call_id!r} is not the waiting call "
                    f"({asked.name} with {dict(asked.arguments)}): pass "
                    f"chain.pending_tool_calls, and change arguments with "
                    f"Decision.edit(...)"
                )

    def _resume(
        self, run: Run, calls: Sequence[ToolCall], decisions: Sequence[Decision]
    ) -> Generator[Any, Any, _AnyRunResult[ChainSnapshot]]:
        return run.main(run.resume(calls, decisions))

    def _waiting_split(self) -> tuple[LLMChain, tuple[Message, ...]]:
        """The chain up to the tool message whose calls wait, and the messages
        added after it (a resume settles the calls there, then adds them back)."""
        position = waiting_position(self)
        if position is None or position == len(self.messages) - 1:
            return self, ()
        head = attrs.evolve(self, messages=self.messages[: position + 1])
        return head, self.messages[position + 1 :]

    def execute_tool_calls_with_decisions(
        self, calls: Sequence[ToolCall], decisions: Sequence[Decision]
    ) -> RunResult:
        """Resume an interrupted run: settle its waiting calls with human decisions.

        Approved and edited calls are reviewed again (``review.human_decision``
        says what the human decided) and run; rejected calls are answered with
        the rejection's reason (not a failure). Their stand-in results are
        replaced in the tool message that holds them (messages added after it,
        such as a new user message, stay after it). No model call is made:
        continue with ``result.chain.run()``.

        Args:
            calls: the waiting calls (``chain.pending_tool_calls``), or some of
                them.
            decisions: one ``Decision`` per call.

        Returns:
            ``RunResult``: "ok", "interrupted" (calls still wait) or "error".

        Raises:
            ValueError: a call is not waiting (or not as the model made it) or
                is given twice, or the counts differ.
            TypeError: a bad call or decision, or an async handler (use
                ``aexecute_tool_calls_with_decisions``).
        """
        self._check_decisions(calls, decisions)
        sync_callbacks(self)
        head, added = self._waiting_split()
        with head._invocation("resume") as current:
            run = Run(head._started(current))
            done = drive_sync(run.chain, run, head._resume(run, calls, decisions))
        return _with_added(_ours(done), added)

    async def aexecute_tool_calls_with_decisions(
        self, calls: Sequence[ToolCall], decisions: Sequence[Decision]
    ) -> RunResult:
        """The async twin of ``execute_tool_calls_with_decisions``.

        Raises:
            ValueError: as the sync twin.
            TypeError: as the sync twin.
        """
        self._check_decisions(calls, decisions)
        head, added = self._waiting_split()
        with head._invocation("resume") as current:
            run = Run(head._started(current))
            done = await drive_async(
                run.chain, run, head._resume(run, calls, decisions)
            )
        return _with_added(_ours(done), added)

    def abandon_tool_calls(self, reason: str = ABANDONED) -> RunResult:
        """Settle every waiting call without running it, for a conversation that
        moves on (a new user message) before a human decided.

        Each waiting call is answered with ``reason``, which the model reads as
        the tool's result (not a failure): ``on_tool_execution_failed`` fires for
        it, then ``on_tool_response_created`` and ``on_message_processed`` for
        the tool message, as for a rejection
        (``execute_tool_calls_with_decisions`` with ``Decision.reject(reason)``
        for each call). Messages added after the waiting calls stay after them.
        No model call is made: continue with ``result.chain.run()``.

        Args:
            reason: what the model is told of each abandoned call.

        Returns:
            ``RunResult``: "ok", or "error" when a handler failed.

        Raises:
            ValueError: no call waits for a decision.
            TypeError: ``reason`` is not a str, or an async handler (use
                ``aabandon_tool_calls``).
        """
        calls, decisions = self._abandoned(reason)
        return self.execute_tool_calls_with_decisions(calls, decisions)

    async def aabandon_tool_calls(self, reason: str = ABANDONED) -> RunResult:
        """The async twin of ``abandon_tool_calls``.

        Raises:
            ValueError: as the sync twin.
            TypeError: ``reason`` is not a str.
        """
        calls, decisions = self._abandoned(reason)
        return await self.aexecute_tool_calls_with_decisions(calls, decisions)

    def _abandoned(self, reason: str) -> tuple[tuple[ToolCall, ...], list[Decision]]:
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, got {reason!r}")
        calls = self.pending_tool_calls
        if not calls:
            raise ValueError("no tool call of the chain waits for a decision")
        return calls, [Decision.reject(reason)] * len(calls)


def _with_added(result: RunResult, added: Sequence[Message]) -> RunResult:
    """``result`` with ``added`` (the messages after the settled calls) back at
    the end of its chain."""
    if not added:
        return result
    return attrs.evolve(result, chain=result.chain.add_messages(added))


def _ours(result: _AnyRunResult[ChainSnapshot]) -> RunResult:
    """A run's result, typed with the chain class that ran: every chain the
    runtime makes is an ``attrs.evolve`` of the one it was given, which keeps
    its class, so the runtime's ``ChainSnapshot`` is an ``LLMChain`` here."""
    return cast("RunResult", result)


if TYPE_CHECKING:
    #: How a run of an ``LLMChain`` ended: the core's result over this chain.
    RunResult: TypeAlias = _AnyRunResult[LLMChain]
else:
    RunResult = _AnyRunResult
