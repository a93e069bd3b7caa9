"""``langhooks demo`` (placeholder until the runtime lands: lists the public API)."""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the demo's options."""


def run(args: argparse.Namespace) -> int:
    """Print the contracts langhooks has."""
    import langhooks

    print(f"langhooks {langhooks.__version__}: public API")
    for name in langhooks.__all__:
        print(f"  {name}")
    return 0
