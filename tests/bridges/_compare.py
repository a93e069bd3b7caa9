"""The comparison: each framework's events against ``LLMChain``'s, as a table.

An event sequence is projected to ``(event, detail)`` entries: consecutive
``on_llm_new_delta`` records become one (token sizes are the model's business), a
tool event keeps its tool's name (and, when it runs, its arguments), a run's end its
status. Per event, a framework is "same" (the same entries in the same order),
"absent" (LLMChain has the event, the framework never says it) or "different".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langhooks.events import EventRecord

__all__ = ["ROWS", "Entry", "documented", "project", "statuses", "table"]

Entry = tuple[str, str]

#: What the suite found, per framework and mode ("langchain sync"), for the table.
ROWS: dict[str, dict[str, str]] = {}

_DOCS = Path(__file__).parents[2] / "docs" / "guide" / "bridges.md"


def _detail(record: EventRecord) -> str:
    payload: Mapping[str, Any] = record.payload
    call = payload.get("call")
    if isinstance(call, Mapping):
        if record.event in ("on_tool_execution_started", "on_tool_call_review"):
            arguments = call.get("arguments", {}).get("value", call.get("arguments"))
            return f"{call.get('name')} {arguments}"
        return str(call.get("name"))
    result = payload.get("result")
    if record.event == "on_run_complete" and isinstance(result, Mapping):
        return str(result.get("status"))
    if record.event == "on_tool_interrupted":
        return str(len(payload.get("results", ())))
    return ""


def project(records: Iterable[EventRecord]) -> list[Entry]:
    """The entries of a recording (see the module)."""
    entries: list[Entry] = []
    for record in records:
        entry = (record.event, _detail(record))
        if entry[0] == "on_llm_new_delta" and entries and entries[-1] == entry:
            continue
        entries.append(entry)
    return entries


def statuses(reference: Sequence[Entry], bridged: Sequence[Entry]) -> dict[str, str]:
    """Per event name: "same", "absent" or "different"."""
    names = dict.fromkeys(e for e, _ in (*reference, *bridged))
    out: dict[str, str] = {}
    for name in names:
        ours = [d for e, d in reference if e == name]
        theirs = [d for e, d in bridged if e == name]
        if ours == theirs:
            out[name] = "same"
        elif ours and not theirs:
            out[name] = "absent"
        else:
            out[name] = "different"
    return out


def table(rows: Mapping[str, Mapping[str, str]]) -> str:
    """The framework x event table, as text."""
    events = list(dict.fromkeys(e for row in rows.values() for e in row))
    width = max(len(e) for e in events)
    widths = {f: max(len(f), len("different")) for f in rows}
    lines = [f"{'event':<{width}}  " + "  ".join(f"{f:<{widths[f]}}" for f in rows)]
    for event in events:
        cells = "  ".join(f"{rows[f].get(event, '-'):<{widths[f]}}" for f in rows)
        lines.append(f"{event:<{width}}  {cells}".rstrip())
    return "\n".join(lines)


_ROW = re.compile(r"^\|\s*(\w+)\s*\|\s*`(on_\w+)`\s*\|\s*(absent|different)\s*\|")


def documented(text: str | None = None) -> dict[tuple[str, str], str]:
    """The differences docs/guide/bridges.md documents: (framework, event) ->
    status, from the rows of its "Differences" table."""
    text = _DOCS.read_text() if text is None else text
    found: dict[tuple[str, str], str] = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            found[(match[1], match[2])] = match[3]
    return found
