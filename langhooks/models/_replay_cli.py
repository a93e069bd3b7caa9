"""``langhooks replay`` (placeholder until the stream adapters land)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the replay command's arguments."""
    parser.add_argument("file", help="a recorded stream")
    parser.add_argument("--format", required=True, help="the stream's wire format")


def run(args: argparse.Namespace) -> int:
    """Not available yet."""
    print("langhooks replay: the stream adapters are not built yet", file=sys.stderr)
    return 2
