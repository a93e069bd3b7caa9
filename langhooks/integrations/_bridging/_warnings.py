"""The one warning class of every framework bridge."""

from __future__ import annotations

__all__ = ["BridgeWarning"]


class BridgeWarning(UserWarning):
    """A bridge could not do what a handler asked, and failed closed instead.

    Given by each bridge where its framework cannot honour a review decision (a
    LangChain callback cannot deny or rewrite a call; the OpenAI Agents SDK cannot
    run a call with other arguments; ADK and Strands cannot pause a call a second
    time): the call is refused, and the warning names the call and why. Filter it
    like any warning (``warnings.simplefilter("error", BridgeWarning)`` in tests).
    """
