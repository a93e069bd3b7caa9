"""What ``in_background`` counts and says when an event cannot be delivered."""

from __future__ import annotations

import logging
import threading
from typing import Final, final

from .._core._messages import LangHooksError

__all__ = ["Counters", "closed_error"]

logger: Final = logging.getLogger("langhooks")


def closed_error(owner: str) -> LangHooksError:
    return LangHooksError(
        "handler_error",
        f"in_background({owner}) was closed: it takes no more events; wrap the "
        f"handler again for a new run",
        retryable=False,
    )


@final
class Counters:
    """What went wrong, for the wrapper's ``error_count`` and ``dropped_count``."""

    __slots__ = ("dropped", "errors", "lock", "owner")

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.lock = threading.Lock()
        self.errors = 0
        self.dropped = 0

    def failed(self, name: str) -> None:
        """Log the exception being handled (a handler's) and count it."""
        with self.lock:
            self.errors += 1
        logger.exception(
            "langhooks: %s.%s raised in the background; the event is lost and the "
            "worker goes on",
            self.owner,
            name,
        )

    def drop(self, maxsize: int) -> None:
        """Count a dropped event; the first drop is logged."""
        with self.lock:
            self.dropped += 1
            first = self.dropped == 1
        if first:
            logger.warning(
                "langhooks: in_background(%s) has %d events waiting and drops the "
                "oldest ones (overflow='drop_oldest'); see dropped_count for how many",
                self.owner,
                maxsize,
            )
