"""What ``follow`` returns: the position to go on from, and whether the run ended."""

from __future__ import annotations

from typing import Self, final

from typing_extensions import override

__all__ = ["FollowPosition"]


@final
class FollowPosition(str):
    """The stream id of the last record ``follow`` delivered (a ``str``, to pass as
    ``last_id`` to the next call), with ``ended``: whether that record ended the run
    for good, so that a loop knows when to stop::

        position = follow(client, run_id, handler)
        while not position.ended:
            position = follow(client, run_id, handler, last_id=position)

    Attributes:
        ended: True when the run ended (nothing more will come); False when
            ``block_ms`` passed with nothing new.
    """

    __slots__ = ("ended",)
    ended: bool

    def __new__(cls, position: str, *, ended: bool) -> Self:
        """The position ``position``; ``ended`` says whether the run ended there."""
        made = super().__new__(cls, position)
        made.ended = ended
        return made

    @override
    def __repr__(self) -> str:
        return f"FollowPosition({str(self)!r}, ended={self.ended})"
