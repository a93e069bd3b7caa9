"""Typing contract: misuse only mypy can reject (checked by mypy, not by pyright).

pyright does not check the keyword arguments of ``attrs.evolve`` against the
class's converters, so these lines live apart, out of pyright's ``include``; each
still carries the ignore mypy must keep needing.
"""

from __future__ import annotations

import attrs

from langhooks import ChainCallbackHandler, ChainView
from langhooks.chain import LLMChain
from langhooks.models import ScriptedChatModel

chain = LLMChain(ScriptedChatModel([]))
attrs.evolve(chain, callbacks=[ScriptedChatModel([])])  # type: ignore[list-item]


class OtherChain(ChainView):
    """Another runtime's chain type (issue 40)."""


class ForOtherChain(ChainCallbackHandler[OtherChain]):
    pass


# A handler for another runtime's chain, through evolve (pyright does not check it).
attrs.evolve(chain, callbacks=[ForOtherChain()])  # type: ignore[list-item]
