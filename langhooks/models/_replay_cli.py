"""``langhooks replay FILE --format FORMAT``: the events a recorded stream produces.

Each handler event is one line, the event name padded to a column and then its
payload, so a stream reads top to bottom in a terminal::

    partial_thinking     'The user is asking'
    partial_response     'Hello'
    partial_tool_call    #0 get_weather call_Qx3m '{"ci'
    complete_tool_call   #0 get_weather call_Qx3m {"city": "Edinburgh"}
    unmapped_raw_event   {"type": "ping"}
    complete_response    finish=tool_execution status=complete

then the assembled response. Exit status: 0 for a stream that completed, 1 for
one that failed (the error is printed), 2 for a file or format that cannot be
used.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Final

from typing_extensions import override

from .._messages import (
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
)
from .._streaming import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
)
from ._drive import STREAM_FORMATS
from ._replay import replay_stream

__all__ = ["add_arguments", "run"]

_WIDTH: Final = 21
_RAW_LIMIT: Final = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the replay command's arguments."""
    parser.add_argument("file", help="a recorded stream body (.sse or .ndjson)")
    parser.add_argument(
        "--format",
        required=True,
        metavar="FORMAT",
        help=f"the stream's wire format: {', '.join(STREAM_FORMATS)}",
    )


def run(args: argparse.Namespace) -> int:
    """Replay ``args.file`` and print each handler event, then the response.

    Returns:
        0 when the stream completed, 1 when it failed, 2 for an unusable file or
        format.
    """
    if args.format not in STREAM_FORMATS:
        print(
            f"langhooks replay: unknown format {args.format!r}; "
            f"use one of: {', '.join(STREAM_FORMATS)}",
            file=sys.stderr,
        )
        return 2
    try:
        response = replay_stream(args.file, format=args.format, handler=_Printer())
    except LangHooksError as error:
        print(f"langhooks replay: the stream failed: {error}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(
            f"langhooks replay: cannot read {args.file!r}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    _print_response(response)
    return 0


def _line(event: str, payload: str) -> None:
    print(f"{event:<{_WIDTH}}{payload}")


def _short(value: object) -> str:
    # Raw events and arguments come from JSON: they always serialise.
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= _RAW_LIMIT else text[: _RAW_LIMIT - 3] + "..."


class _Printer(StreamingChatResponseHandler):
    """Prints one line per event."""

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        _line("partial_response", repr(partial.text))

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        _line("partial_thinking", repr(partial.text))

    @override
    def on_partial_tool_call(
        self, partial: PartialToolCall, context: PartialToolCallContext
    ) -> None:
        _line(
            "partial_tool_call",
            f"#{partial.index} {partial.name} {partial.id or '-'} "
            f"{partial.partial_arguments!r}",
        )

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        call = complete.tool_call
        _line(
            "complete_tool_call",
            f"#{complete.index} {call.name} {call.call_id} {_short(call.arguments)}",
        )

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        _line("unmapped_raw_event", _short(raw_event))

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        reason = response.finish_reason.value if response.finish_reason else "-"
        _line(
            "complete_response",
            f"finish={reason} status={response.message.status}",
        )

    @override
    def on_error(self, error: BaseException) -> None:
        _line("error", str(error))


def _print_response(response: ChatResponse) -> None:
    message = response.message
    usage = response.token_usage
    print()
    print("response")
    rows: list[tuple[str, str]] = [
        ("id", response.id or "-"),
        ("model", response.model_name or "-"),
        (
            "finish_reason",
            response.finish_reason.value if response.finish_reason else "-",
        ),
        ("status", message.status),
        (
            "usage",
            "-"
            if usage is None
            else f"input {usage.input_tokens}, output {usage.output_tokens}, "
            f"total {usage.total_tokens}",
        ),
    ]
    if message.thinking:
        rows.append(("thinking", repr(message.thinking)))
    rows.append(("text", repr(message.text)))
    for call in message.tool_calls:
        rows.append(
            (
                f"tool_call #{call.index}",
                f"{call.name} {call.call_id} {_short(call.arguments)}",
            )
        )
    for name, value in rows:
        print(f"  {name + ':':<{_WIDTH - 2}}{value}")
