"""Resume a stored run once: the claim, the heartbeat and the per-call records.

Every run store (in memory, Redis, PostgreSQL; sync and async) implements a few small
primitives (``ClaimBackend`` / ``AsyncClaimBackend``) and leaves the rest to the one
driver here:

1. ``claim``: the run changes state in the store, from waiting to claimed by this
   worker's token (a second resume gets "conflict"; a claim whose heartbeat stopped
   for ``claim_timeout`` seconds may be taken over).
2. A heartbeat (a thread, or a task for the async stores) renews the claim while the
   worker lives, so a slow tool or a long answer never lets the claim lapse.
3. Each tool call is marked started in the store before it runs and its outcome is
   saved as soon as it returns. A call with a saved outcome is not run again (the
   outcome is reused); a call marked started without an outcome (its worker died
   inside it) is never started again: it gets an error result saying so.
4. The run continues and its final state is saved (waiting again, or done).

A resume that raises before the end hands the claim back (the run waits again, its
call records kept), so retrying it reruns nothing that ran.

This module only re-exports: the primitives are in ``_claims_async`` (written by
hand) and ``_claims_sync`` (generated from it by ``scripts/unasync.py``), the driver
in ``_resume_async`` and ``_resume_sync`` the same way, and what the two drivers
share (the heartbeat, the tools wrapped to record each call) in ``_resume_shared``.
"""

from ._claims_async import AsyncClaimBackend
from ._claims_sync import ClaimBackend
from ._log import Known, Saved, Write
from ._resume_async import aresume_once, asave_run
from ._resume_shared import (
    ResumeCode,
    check_claim_timeout,
    loaded,
    outcome_text,
    stopped_result,
)
from ._resume_sync import resume_once, save_run

__all__ = [
    "AsyncClaimBackend",
    "ClaimBackend",
    "Known",
    "ResumeCode",
    "Saved",
    "Write",
    "aresume_once",
    "asave_run",
    "check_claim_timeout",
    "loaded",
    "outcome_text",
    "resume_once",
    "save_run",
    "stopped_result",
]
