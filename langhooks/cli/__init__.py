"""The ``langhooks`` command line.

Each command lives in its own module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; this module only builds the parser and dispatches. A command's
module is ``langhooks/cli/<command>.py`` (``serve`` imports its web libraries inside
``run``). To add a command, write that module
and add one entry to ``_COMMANDS``. Every command's module is imported to build the
parser: keep its top-level imports light (a heavy library goes inside ``run``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Final

from .._version import __version__

__all__ = ["main"]

# What a shell reports for a command a closed pipe ended (128 + SIGPIPE).
_CLOSED_PIPE: Final = 141

# command -> (module, one-line help)
_COMMANDS: Final = {
    "demo": (
        "langhooks.cli.demo",
        "run a scripted agent and show each handler event as it fires",
    ),
    "replay": (
        "langhooks.cli.replay",
        "show the handler events a recorded provider stream produces",
    ),
    "events": (
        "langhooks.cli.events",
        "print an event recording (EventRecorder's JSON Lines, demo --record)",
    ),
    "serve": (
        "langhooks.cli.serve",
        "run the demo agent behind a live web page (needs langhooks[web])",
    ),
    "runs": (
        "langhooks.cli.runs",
        "list and decide the runs waiting in a Redis or PostgreSQL run store",
    ),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="langhooks", description="Observe and steer LLM streams and chains."
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, summary) in _COMMANDS.items():
        command = commands.add_parser(name, help=summary, description=summary)
        importlib.import_module(module).add_arguments(command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``).

    Returns:
        The exit status (141, as for a process a SIGPIPE ended, when the output's
        reader closed the pipe: nothing is printed then).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `langhooks`: say what it can do
        parser.print_help()
        return 0
    module, _ = _COMMANDS[args.command]
    try:
        status: int = importlib.import_module(module).run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader of the output went away (`langhooks events FILE | head`):
        # end quietly, as Unix tools do. Output still buffered would fail again
        # when the interpreter flushes it at exit, so stdout goes to /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return _CLOSED_PIPE
    return status
