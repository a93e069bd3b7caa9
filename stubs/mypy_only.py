"""Typing contract: misuse only mypy can reject (checked by mypy, not by pyright).

pyright does not check the keyword arguments of ``attrs.evolve`` against the
class's converters, so these lines live apart, out of pyright's ``include``; each
still carries the ignore mypy must keep needing.
"""

from __future__ import annotations

import attrs

from langhooks.chain import LLMChain
from langhooks.models import ScriptedChatModel

chain = LLMChain(ScriptedChatModel([]))
attrs.evolve(chain, callbacks=[ScriptedChatModel([])])  # type: ignore[list-item]
