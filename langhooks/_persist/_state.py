"""The chain's saved state, as the persistence layer provides it to the runtime.

``LLMChain.to_state`` and ``LLMChain.from_state`` encode with the codec, which sits
above the runtime: the runtime declares what it needs (``StateCodec``) and this
module hands it the codec's functions when it is loaded (the runtime loads it by
name on the first save or load, so ``import langhooks`` stays light).
"""

from __future__ import annotations

from typing import Final

from ..chain._chain import StateCodec, use_state_codec
from ._codec import decode_state, encode_state

__all__ = ["STATE_CODEC"]

#: The codec ``to_state``/``from_state`` use: the JSON codec of ``langhooks.codec``.
STATE_CODEC: Final = StateCodec(encode=encode_state, decode=decode_state)

use_state_codec(STATE_CODEC)
