"""Tools the frontend runs: AG-UI's frontend tools (CopilotKit's frontend actions)
and the AI SDK's client-side tools (``onToolCall`` / ``addToolOutput``).

A client tool is a ``Tool`` whose function interrupts the run for the frontend.
The model may call it; the review fold settles the call as any other (a ``Deny``
answers it, an ``Interrupt`` asks a person first, and the call goes to the
frontend only once it is allowed); the allowed call's stand-in result waits with
``interrupt_data["kind"] == "client_tool"`` and the run is stored as any
interrupted run. The app sends the call to the frontend, whose result comes back
in the conversation of its next request; the app then resumes the stored run with
it through the store's claim (a result is used once: a second request with it
finds no run waiting), as a ``Decision.edit`` whose arguments carry the result
under ``CLIENT_RESULT``: the call is reviewed again (``human_decision="edit"``)
and the tool answers with the frontend's result.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..._core._messages import LangHooksError, Message, ToolCall, ToolResult
from ..._core._tools import Tool, ToolContext
from ...chain import Decision, LLMChain
from ._records import CLIENT_TOOL, awaits_client, tool_result_text, waiting_results

if TYPE_CHECKING:
    from ..._persist._pending import PendingRun
    from ._runner import Runs

__all__ = [
    "ANSWERED",
    "CLIENT_RESULT",
    "Refuse",
    "Resume",
    "Waiting",
    "client_answers",
    "client_metadata",
    "client_tool",
    "client_tool_names",
    "posted_answers",
    "posted_results",
    "unclaimed_results",
    "waiting_calls",
    "waits_for",
    "with_client_tools",
    "with_stored_tools",
]

#: The key of a call's arguments under which the app hands a client tool the
#: frontend's result (``{"content": str, "is_error": bool}``) when it resumes
#: the run.
CLIENT_RESULT: Final = "langhooks_client_result"
#: What a request is told whose run another request answered meanwhile.
ANSWERED: Final = "the run was answered by another request meanwhile; nothing was run"
# The store metadata key of the names of a run's client tools.
_CLIENTS: Final = "client_tools"
_WAITING: Final = "The user's app runs this tool; its result comes back later."


def _awaits_client(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    """A client tool's function: the frontend's result when the app resumed
    the run with it, else the stand-in of a call that waits for the frontend.

    Raises:
        TypeError: ``CLIENT_RESULT`` is not what the apps put there.
    """
    call = context.call
    given = arguments.get(CLIENT_RESULT)
    if given is None:
        return ToolResult(
            tool_call_id=call.call_id,
            name=call.name,
            content=_WAITING,
            is_interrupt=True,
            interrupt_data={"kind": CLIENT_TOOL},
        )
    if not (
        isinstance(given, Mapping)
        and isinstance(given.get("content"), str)
        and isinstance(given.get("is_error"), bool)
    ):
        raise TypeError(
            f"{CLIENT_RESULT!r} must be {{'content': str, 'is_error': bool}}, "
            f"got {given!r}"
        )
    return ToolResult(
        tool_call_id=call.call_id,
        name=call.name,
        content=given["content"],
        is_error=given["is_error"],
    )


def client_tool(
    name: str,
    *,
    description: str = "",
    parameters_schema: Mapping[str, Any] | None = None,
) -> Tool:
    """A tool the frontend runs, for the agent's ``tools``: the model may call
    it, and an allowed call goes to the frontend (``useChat``'s ``onToolCall``;
    an AG-UI client's frontend tool) instead of running on the server.

    The AG-UI app adds the request's ``tools`` as client tools itself; declare
    one here for the AI SDK (whose client does not send its tools), or to give
    a frontend tool the description and schema the server decides.

    Args:
        name: what the model calls it (1-64 letters, digits, ``_`` or ``-``).
        description: what the tool does, for the model.
        parameters_schema: a JSON Schema object for the arguments.

    Raises:
        ValueError: a bad name.
        TypeError: a bad description or schema.
    """
    return Tool(
        name,
        _awaits_client,
        description=description,
        parameters_schema=parameters_schema,
    )


def client_tool_names(chain: LLMChain) -> frozenset[str]:
    """The names of ``chain``'s client tools."""
    return frozenset(t.name for t in chain.tools if t.function is _awaits_client)


def with_client_tools(
    chain: LLMChain, tools: Iterable[tuple[str, str, Any]]
) -> LLMChain:
    """``chain`` with the frontend's ``tools`` (name, description, JSON Schema)
    added as client tools. A tool of the agent's with the same name stays: the
    server decides what runs where.

    Raises:
        ValueError: a bad name.
        TypeError: a schema that is not an object.
    """
    names = {tool.name for tool in chain.tools}
    added = [
        client_tool(name, description=description, parameters_schema=schema)
        for name, description, schema in tools
        if name not in names
    ]
    return chain.add_tools(added) if added else chain


def client_metadata(chain: LLMChain) -> dict[str, Any]:
    """What a run of ``chain`` is stored with beside its own metadata: the
    names of its client tools, if any (a stored run is loaded with every tool
    it had, and a later request may declare fewer: ``with_stored_tools``)."""
    names = sorted(client_tool_names(chain))
    return {_CLIENTS: names} if names else {}


def with_stored_tools(chain: LLMChain, rows: Sequence[PendingRun]) -> LLMChain:
    """``chain`` with a client tool for each one the stored ``rows`` were
    started with (``client_metadata``) that it lacks."""
    names = dict.fromkeys(n for row in rows for n in row.metadata.get(_CLIENTS, ()))
    return with_client_tools(chain, [(name, "", None) for name in names])


def posted_results(messages: Sequence[Message]) -> dict[str, ToolResult]:
    """The results the tool messages that end ``messages`` hold (after the
    last message of another role), by call id; stand-ins of calls that wait
    are none."""
    trailing = itertools.takewhile(lambda m: m.role == "tool", reversed(messages))
    return {
        result.tool_call_id: result
        for message in trailing
        for result in message.tool_results
        if not result.is_interrupt
    }


def _decision(call: ToolCall, result: ToolResult) -> Decision:
    given = {"content": tool_result_text(result), "is_error": result.is_error}
    return Decision.edit({**call.arguments, CLIENT_RESULT: given})


async def client_answers(
    runs: Runs, run: PendingRun, chain: LLMChain
) -> tuple[frozenset[str], dict[str, Decision]] | None:
    """The calls of stored ``run`` that wait for the frontend, and the
    decisions the results posted at the end of ``chain``'s conversation make
    of them (by call id); None when the run no longer waits for the calls it
    was listed with (another request answered it since, or the store forgot
    it)."""
    try:
        stored = await runs.load(run.run_id, chain)
    except LangHooksError as exc:
        if exc.type != "invalid_request":  # pragma: no cover - a store failure
            raise
        return None
    results = waiting_results(stored.messages)
    if {r.tool_call_id for r in results} != {call.call_id for call in run.calls}:
        return None
    waiting = frozenset(r.tool_call_id for r in results if awaits_client(r))
    posted = posted_results(chain.messages)
    calls = {call.call_id: call for call in run.calls}
    decisions = {
        call_id: _decision(calls[call_id], posted[call_id])
        for call_id in sorted(waiting)
        if call_id in posted
    }
    return waiting, decisions


def unclaimed_results(chain: LLMChain) -> list[ToolCall]:
    """The calls of ``chain``'s client tools whose results end its
    conversation: posted for a run that no longer waits (answered already,
    expired, never made), which a request must not run on."""
    names = client_tool_names(chain)
    posted = posted_results(chain.messages)
    return [
        call
        for message in chain.messages
        for call in message.tool_calls
        if call.name in names and call.call_id in posted
    ]


@attrs.frozen
class Waiting:
    """How a protocol says what calls wait for, in its refusal: ``decide``
    (how to answer a person's calls; ``{calls}`` names them), ``run`` (how
    to send the results of the calls the client runs) and ``new`` (how to
    move on instead)."""

    decide: str
    run: str
    new: str


def waiting_calls(calls: Sequence[ToolCall]) -> str:
    """The calls a refusal names: ``name ('call id')``, comma-separated."""
    return ", ".join(f"{call.name} ({call.call_id!r})" for call in calls)


def waits_for(
    where: str,
    calls: Sequence[ToolCall],
    said: Waiting,
    client: frozenset[str] = frozenset(),
    results: Mapping[str, Decision] | None = None,
) -> str:
    """What ``calls`` waiting in ``where`` (a thread, a chat) wait for, as
    ``said``: an answer for those that wait for a person, a result for those
    the client runs (``client``) whose results were not posted
    (``results``)."""
    posted = results or {}
    person = [call for call in calls if call.call_id not in client]
    missing = [c for c in calls if c.call_id in client and c.call_id not in posted]
    wants = [
        text.format(calls=waiting_calls(some))
        for text, some in ((said.decide, person), (said.run, missing))
        if some
    ]
    return f"{where} waits for {' and '.join(wants)}; or {said.new}"


@attrs.frozen
class Resume:
    """Resume stored run ``run_id`` with ``decisions``: the results the client
    posted (``posted`` names their calls, which the stream does not repeat)."""

    run_id: str
    decisions: dict[str, Decision]

    @property
    def posted(self) -> frozenset[str]:
        """The calls whose results the client posted."""
        return frozenset(self.decisions)


@attrs.frozen
class Refuse:
    """Refuse the request, nothing run: a ``conflict`` (the results were used
    already) or calls that still wait (409), with what to do in ``message``."""

    conflict: bool
    message: str


async def posted_answers(
    runs: Runs,
    rows: Sequence[PendingRun],
    chain: LLMChain,
    where: str,
    said: Waiting,
) -> Resume | Refuse | None:
    """What a request that is no new message makes of the calls waiting in
    ``where`` (a thread, a chat: its stored ``rows``, or ``chain``'s own):
    the client's results of every call of the first row resume it; results
    no run waits for, or calls left without an answer, refuse it; None when
    nothing waits and nothing was posted (a new run)."""
    if rows:
        found = await client_answers(runs, rows[0], chain)
        if found is None:
            return Refuse(True, ANSWERED)
        client, results = found
        if results and len(results) == len(rows[0].calls):
            return Resume(rows[0].run_id, results)
        return Refuse(False, waits_for(where, rows[0].calls, said, client, results))
    unclaimed = unclaimed_results(chain)
    if unclaimed:
        return Refuse(
            True,
            f"no run in {where} waits for the result of client tool call(s) "
            f"{waiting_calls(unclaimed)}: answered already, expired or never "
            f"made; nothing was run",
        )
    if chain.pending_tool_calls:
        return Refuse(False, waits_for(where, chain.pending_tool_calls, said))
    return None
