"""The one scripted conversation every bridge runs, in framework-neutral terms.

A driver (``_driver.py``) turns it into its framework's agent: the model turns into a
scripted model of that framework, the tools into its tools, ``Reviewer`` into the
review its bridge offers. Nothing here imports a framework.

The conversation, turn by turn (what the model says on each call):

1. thinking, text, and two tool calls in one turn: ``get_weather`` (allowed) and
   ``delete_file`` (denied by the reviewer);
2. the call fails once with a retryable error (a rate limit), is retried, and then
   calls ``get_weather`` with ``city="PARIS"``, which the reviewer rewrites to
   ``"Paris"``;
3. ``transfer_money``, which the reviewer interrupts; a human approves it in a second
   process, where the run resumes;
4. ``lookup_order``, whose tool raises;
5. a plain text answer, which ends the run.

``transfer_money`` appends a line to a ledger file each time it runs, so a test can
count that the approved call ran exactly once across both processes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
from typing_extensions import override

from langhooks import (
    Allow,
    ChainCallbackHandler,
    Deny,
    Interrupt,
    LangHooksError,
    ReviewContext,
    ReviewDecision,
    TokenUsage,
    Tool,
    ToolCall,
    UpdateArguments,
)
from langhooks._core._messages import ErrorType

__all__ = [
    "PROMPT",
    "TURNS",
    "Reviewer",
    "ScriptTool",
    "Turn",
    "ledger_count",
    "script_tools",
]

PROMPT: Final = "Check the weather in Paris, delete /etc/passwd, pay Bob, find order 7."


@attrs.frozen
class Turn:
    """What the model answers on one call.

    Attributes:
        text: the answer's text (streamed word by word).
        thinking: its reasoning (streamed before the text).
        calls: the tool calls it asks for.
        fail_first: when set, the first attempt at this turn fails with this
            retryable error type ("rate_limited") and the retry gives the turn.
    """

    text: str = ""
    thinking: str = ""
    calls: tuple[ToolCall, ...] = ()
    fail_first: ErrorType | None = None
    usage: TokenUsage = attrs.field(
        factory=lambda: TokenUsage(input_tokens=10, output_tokens=5)
    )


TURNS: Final = (
    Turn(
        thinking="Two things at once.",
        text="Let me check.",
        calls=(
            ToolCall(call_id="call_1", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(
                call_id="call_2",
                name="delete_file",
                arguments={"path": "/etc/passwd"},
                index=1,
            ),
        ),
    ),
    Turn(
        fail_first="rate_limited",
        calls=(
            ToolCall(call_id="call_3", name="get_weather", arguments={"city": "PARIS"}),
        ),
    ),
    Turn(
        calls=(
            ToolCall(
                call_id="call_4",
                name="transfer_money",
                arguments={"to": "Bob", "amount": 100},
            ),
        ),
    ),
    Turn(
        calls=(ToolCall(call_id="call_5", name="lookup_order", arguments={"id": 7}),),
    ),
    Turn(text="All done."),
)


@attrs.frozen
class ScriptTool:
    """A tool of the script: its schema and what it does, for any framework.

    ``run(arguments, ledger)`` returns the tool's text or raises.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[[Mapping[str, Any], Path], str]

    def as_langhooks(self, ledger: Path) -> Tool:
        """The tool for ``LLMChain``."""
        run = self.run
        return Tool(
            self.name,
            lambda arguments, _context: run(arguments, ledger),
            description=self.description,
            parameters_schema=dict(self.parameters),
        )


def _weather(arguments: Mapping[str, Any], _ledger: Path) -> str:
    return f"Sunny in {arguments['city']}"


def _delete(arguments: Mapping[str, Any], _ledger: Path) -> str:
    raise AssertionError("delete_file is denied by review and must never run")


def _transfer(arguments: Mapping[str, Any], ledger: Path) -> str:
    with ledger.open("a") as out:
        out.write(f"{arguments['to']} {arguments['amount']}\n")
    return "transferred"


class OrderLookupError(RuntimeError):
    """What ``lookup_order`` raises."""


def _lookup(arguments: Mapping[str, Any], _ledger: Path) -> str:
    raise OrderLookupError(f"order {arguments['id']} not found")


def _schema(**properties: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }


def script_tools() -> tuple[ScriptTool, ...]:
    """The script's four tools."""
    return (
        ScriptTool(
            "get_weather", "The weather in a city.", _schema(city="string"), _weather
        ),
        ScriptTool("delete_file", "Delete a file.", _schema(path="string"), _delete),
        ScriptTool(
            "transfer_money",
            "Send money.",
            _schema(to="string", amount="integer"),
            _transfer,
        ),
        ScriptTool("lookup_order", "Find an order.", _schema(id="integer"), _lookup),
    )


def ledger_count(ledger: Path) -> int:
    """How many times ``transfer_money`` ran."""
    return len(ledger.read_text().splitlines()) if ledger.exists() else 0


class Reviewer(ChainCallbackHandler):
    """The script's review: deny ``delete_file``, rewrite a shouted city, interrupt
    ``transfer_money`` until a human approved it, allow the rest."""

    @override
    def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext, /
    ) -> ReviewDecision:
        if call.name == "delete_file":
            return Deny("deleting system files is not allowed")
        if call.name == "get_weather" and call.arguments["city"] != "Paris":
            return UpdateArguments({"city": str(call.arguments["city"]).title()})
        if call.name == "transfer_money" and review.human_decision is None:
            return Interrupt(
                "approve the transfer", {"amount": call.arguments["amount"]}
            )
        return Allow()


def retryable(kind: ErrorType) -> LangHooksError:
    """The error a scripted model raises for ``Turn.fail_first``."""
    return LangHooksError(kind, "scripted: slow down", retryable=True)
