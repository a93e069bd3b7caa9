"""The resume driver: claim a stored run, settle its waiting calls, continue it, save
its end (the steps are in ``_resume``'s docstring). The async module is written by
hand, and the sync one is generated from it by ``scripts/unasync.py``: the same
steps without ``async`` and ``await``. What differs otherwise is in
``_resume_shared``: the heartbeat (a task here, a thread there) and the tools
wrapped to record each call.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ._claims_async import AsyncClaimBackend
from ._resume_shared import (
    ResumeCode,
    _aguarded,
    _arenewing,
    _chain,
    _Live,
    _match,
    _note_release_failure,
    _waiting,
)

if TYPE_CHECKING:
    from ..chain import Decision, RunResult

__all__ = ["aresume_once"]


async def aresume_once(
    backend: AsyncClaimBackend,
    run_id: str,
    decisions: Sequence[Decision] | Mapping[str, Decision],
    code: ResumeCode,
    *,
    claim_timeout: float,
) -> RunResult:
    """Claim run ``run_id``, settle its waiting calls, continue it, save its end.

    Raises:
        LangHooksError: "conflict" or "invalid_request" from the claim.
        ValueError: the decisions do not match the waiting calls (the run waits
            again, unchanged).
    """
    token = uuid.uuid4().hex
    state = await backend.claim(run_id, token)
    live = _Live()
    try:
        async with _arenewing(backend, run_id, token, claim_timeout / 3):
            tools = [_aguarded(backend, run_id, token, t, live) for t in code.tools]
            chain = _chain(state, code, tools)
            calls, chosen = _match(run_id, chain.pending_tool_calls, decisions)
            result = await chain.aexecute_tool_calls_with_decisions(calls, chosen)
            if result.status == "ok" and code.continue_run:
                result = await result.chain.arun()
            waiting = _waiting(result)
            await backend.settle(run_id, token, result.chain.to_state(), waiting)
    except BaseException as exc:
        # Nothing to hand back once settle() succeeded: release() is then a no-op.
        try:
            await backend.release(run_id, token)
        except Exception as failure:  # noted on what is raised
            _note_release_failure(exc, run_id, failure)
        raise
    finally:
        live.on = False
    return result
