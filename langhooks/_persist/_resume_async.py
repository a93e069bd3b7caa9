"""The driver every store runs above its backend (``_claims``): save a run as what
changed, and resume a stored run once: claim it, settle its waiting calls, continue
it, save its end (the steps are in ``_resume``'s docstring). The async module is
written by hand, and the sync one is generated from it by ``scripts/unasync.py``:
the same steps without ``async`` and ``await``. What differs otherwise is in
``_resume_shared``: the heartbeat (a task here, a thread there) and the tools
wrapped to record each call.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._claims_async import AsyncClaimBackend
from ._log import Known, state_of
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
from ._runs import check_expires_in, check_metadata, run_id_of

if TYPE_CHECKING:
    from ..chain import Decision, LLMChain, RunResult

__all__ = ["aresume_once", "asave_run"]


async def asave_run(
    backend: AsyncClaimBackend,
    known: Known,
    chain: LLMChain,
    metadata: Mapping[str, Any] | None,
    expires_in: float | None,
) -> str:
    """Save ``chain`` as what changed since the version ``known`` has of it (the
    whole log when none, or when the run changed since); its run id.

    Raises:
        TypeError: not an ``LLMChain``, metadata that is not JSON, or a state
            holding a value that cannot be encoded.
        ValueError: the chain has not run, or a bad ``expires_in``.
    """
    run_id = run_id_of(chain)
    data = check_metadata(metadata)
    seconds = check_expires_in(expires_in)
    write = known.plan(run_id, chain)
    if not await backend.write(write, data, seconds):
        write = known.whole(run_id, chain)
        await backend.write(write, data, seconds)  # a whole write always applies
    known.wrote(write, chain)
    return run_id


async def aresume_once(
    backend: AsyncClaimBackend,
    known: Known,
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
    saved = await backend.claim(run_id, token)
    live = _Live()
    try:
        async with _arenewing(backend, run_id, token, claim_timeout / 3):
            tools = [_aguarded(backend, run_id, token, t, live) for t in code.tools]
            chain = _chain(state_of(saved), code, tools)
            known.read(run_id, saved, chain)
            calls, chosen = _match(run_id, chain.pending_tool_calls, decisions)
            result = await chain.aexecute_tool_calls_with_decisions(calls, chosen)
            if result.status == "ok" and code.continue_run:
                result = await result.chain.arun()
            # What changed since the claim: nothing else writes a claimed run
            # (a save takes the claim away), so the claimed version is current.
            write = known.plan(run_id, result.chain, _waiting(result))
            await backend.settle(run_id, token, write)
            known.wrote(write, result.chain)
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
