"""What a framework gives the conformance suite: the ``Driver`` protocol.

To add a framework, add ONE module under ``tests/bridges/drivers/`` that defines
``DRIVER``, an object of this protocol (and, when the framework's package is missing,
calls ``tests.bridges._support.need_module`` at import so its tests skip, or fail
under ``CI``). The suite finds it by itself: ``test_conformance.py`` runs every
driver, sync and async, and compares its events with ``LLMChain``'s (the driver
``drivers/llmchain.py``, the reference).

A driver builds its framework's agent from the shared script (``_script.py``): a
scripted model of that framework answering ``TURNS`` in order (streamed: text word by
word, thinking, tool-call fragments), the four ``script_tools()`` as the framework's
tools, and the langhooks handlers attached through its bridge (``Reviewer`` among
them, so its bridge must offer review). It runs the script in two steps:

- ``start`` in the test's process, from ``PROMPT`` until the run pauses on the
  reviewer's ``Interrupt`` of ``transfer_money`` (turn 3);
- ``resume`` in a second, fresh process (``python -m tests.bridges._second``):
  rebuilds the agent, loads the paused run from ``place`` (a PostgreSQL schema of the
  test's own, or files in ``place.directory``) and continues it with a human's
  approval of the interrupted call, to the final answer.

The handlers a driver is given in each process are an ``EventRecorder`` (first, so
it hears every review before the reviewer settles it) and ``Reviewer``; the suite
reads both recordings and compares them, event by event, with ``LLMChain``'s.
A difference must be documented in ``docs/guide/bridges.md`` (the table under
"Differences", one row per framework and event) or the suite fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import attrs

__all__ = ["Driver", "Place"]


@attrs.frozen
class Place:
    """Where a paused run lives between the two processes.

    Attributes:
        directory: a directory of the test's own (the ledger file is
            ``directory / "ledger"``; a driver may keep files here).
        postgres: a PostgreSQL conninfo whose ``search_path`` is a schema of the
            test's own (never the default one); for frameworks that checkpoint
            there.
        thread: the conversation's id, the same in both processes.
    """

    directory: Path
    postgres: str
    thread: str

    @property
    def ledger(self) -> Path:
        """The file ``transfer_money`` appends to each time it runs."""
        return self.directory / "ledger"


class Driver(Protocol):
    """One framework in the conformance suite (see the module docstring)."""

    #: The row name in the suite's table and in docs/guide/bridges.md.
    name: str

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        """Run the script from ``PROMPT`` until the interrupt of ``transfer_money``.

        Args:
            place: where the paused run is kept for ``resume``.
            handlers: langhooks handlers to attach through the framework's bridge
                (sync ones; with ``use_async`` the run is the framework's async one).
            use_async: run the framework's async entry point (``ainvoke``,
                ``arun``...) in ``asyncio.run``.

        Raises:
            AssertionError: the run did not pause on that interrupt.
        """
        ...

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        """In a fresh process: approve the interrupted call and run to the end.

        Returns:
            The final answer's text.
        """
        ...
