"""``RedisRunStore``: an interrupted run's state, shared by every worker."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, final

import redis

from .._core._messages import LangHooksError, Tool, ToolCall
from ..chain import Decision, LLMChain, RunResult
from ._redis_wire import check_count, check_seconds, check_sync_client

if TYPE_CHECKING:
    from ..chain import RetryPolicy
    from ..chain._chain import Handler
    from ..models import ChatModel

__all__ = ["RedisRunStore"]

# Deletes the lock only if this resume still holds it: a resume that outlived its
# lock must not release the lock of the resume that took over.
_RELEASE: Final = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


@final
class RedisRunStore:
    """Saves chains' run state in Redis so any worker can load and resume a run.

    Keys: ``{prefix}state:{run_id}`` holds the state (``chain.to_state()`` as JSON,
    expiring ``expire_after`` seconds after the last save) and
    ``{prefix}resume:{run_id}`` is the lock a resume holds. Code (model, tools,
    callbacks) is never stored: the worker passes it again.

    Args:
        client: a synchronous ``redis.Redis`` client (its ``decode_responses``
            setting does not matter).
        prefix: prepended to every key.
        expire_after: seconds a saved state is kept after its last save.
        lock_timeout: seconds after which the lock of a resume whose worker died
            expires, so the run can be resumed again.

    Raises:
        TypeError: ``client`` is not a ``redis.Redis``, or a bad option.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "langhooks:",
        expire_after: int = 7 * 24 * 3600,
        lock_timeout: float = 300.0,
    ) -> None:
        check_sync_client(client, "RedisRunStore")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {prefix!r}")
        check_count("expire_after", expire_after, 1)
        check_seconds("lock_timeout", lock_timeout)
        self._client: Final = client
        self._prefix: Final = prefix
        self._expire_after: Final = expire_after
        self._lock_ms: Final = max(1, round(lock_timeout * 1000))
        self._release: Final = client.register_script(_RELEASE)

    def _state_key(self, run_id: str) -> str:
        return f"{self._prefix}state:{run_id}"

    def save(self, chain: LLMChain) -> str:
        """Save ``chain``'s state under its run id (replacing an earlier save).

        Returns:
            The run id (``chain.invocation.id``).

        Raises:
            ValueError: the chain has not run (it has no run id).
            TypeError: the state holds a value that cannot be encoded.
        """
        if not isinstance(chain, LLMChain):
            raise TypeError(f"save takes an LLMChain, got {chain!r}")
        if chain.invocation is None:
            raise ValueError(
                "the chain has not run, so it has no run id: save the chain of a "
                "RunResult (result.chain)"
            )
        run_id = chain.invocation.id
        text = json.dumps(chain.to_state(), separators=(",", ":"))
        self._client.set(self._state_key(run_id), text, ex=self._expire_after)
        return run_id

    def load(
        self,
        run_id: str,
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
    ) -> LLMChain:
        """The saved chain of run ``run_id``, with this worker's code.

        Raises:
            LangHooksError: type "invalid_request" when no state is saved under
                ``run_id`` (never saved, or expired).
        """
        text = self._client.get(self._state_key(run_id))
        if text is None:
            raise LangHooksError(
                "invalid_request",
                f"no saved run {run_id!r} under prefix {self._prefix!r} (never "
                f"saved, or expired after {self._expire_after}s)",
            )
        state = json.loads(text)
        return LLMChain.from_state(
            state,
            model,
            tools=tools,
            callbacks=callbacks,
            fallbacks=fallbacks,
            retry=retry,
        )

    def resume(
        self,
        run_id: str,
        decisions: Sequence[Decision] | Mapping[str, Decision],
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
        continue_run: bool = True,
    ) -> RunResult:
        """Resume an interrupted run with human decisions, once.

        Takes the run's lock atomically (``SET NX``); a second resume of the same
        run while one holds it, or after the run stopped waiting, runs nothing and
        raises "conflict": a double-clicked "approve" runs the tool once. After the
        decisions, the run continues to the model's answer (``continue_run``), and
        the state it ends in is saved under the same run id.

        Args:
            run_id: the run to resume.
            decisions: one ``Decision`` per waiting call, in the order of
                ``chain.pending_tool_calls``, or a mapping from tool call id to
                ``Decision`` (for some of the waiting calls).
            model: the model the run continues on; ``tools``, ``callbacks``,
                ``fallbacks`` and ``retry`` as ``LLMChain.from_state``.
            continue_run: after the decisions, ``run()`` on to the model's
                answer (when they did not end the run).

        Returns:
            The ``RunResult`` the run ended with here.

        Raises:
            LangHooksError: type "conflict" when another resume of the run holds
                the lock or the run waits for no decision; "invalid_request" for
                an unknown run.
            ValueError: the decisions do not match the waiting calls.
        """
        lock_key = f"{self._prefix}resume:{run_id}"
        token = uuid.uuid4().hex
        if not self._client.set(lock_key, token, nx=True, px=self._lock_ms):
            raise LangHooksError(
                "conflict",
                f"run {run_id!r} is being resumed by another request; nothing was run",
            )
        try:
            chain = self.load(
                run_id,
                model,
                tools=tools,
                callbacks=callbacks,
                fallbacks=fallbacks,
                retry=retry,
            )
            calls, chosen = _match(run_id, chain.pending_tool_calls, decisions)
            result = chain.execute_tool_calls_with_decisions(calls, chosen)
            if result.status == "ok" and continue_run:
                result = result.chain.run()
            self.save(result.chain)
            return result
        finally:
            self._release(keys=[lock_key], args=[token])


def _match(
    run_id: str,
    waiting: Sequence[ToolCall],
    decisions: Sequence[Decision] | Mapping[str, Decision],
) -> tuple[list[ToolCall], list[Decision]]:
    if not waiting:
        raise LangHooksError(
            "conflict",
            f"run {run_id!r} waits for no decision (it was resumed already); "
            f"nothing was run",
        )
    if isinstance(decisions, Mapping):
        by_id = {call.call_id: call for call in waiting}
        unknown = sorted(set(decisions) - set(by_id))
        if unknown:
            raise ValueError(
                f"tool call(s) {unknown} of run {run_id!r} do not wait for a "
                f"decision; waiting: {sorted(by_id)}"
            )
        return [by_id[i] for i in decisions], list(decisions.values())
    return list(waiting), list(decisions)
