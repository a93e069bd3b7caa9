"""What drivers share: a missing framework skips its tests (fails under ``CI``)."""

from __future__ import annotations

import importlib.util

from tests._services import unavailable

__all__ = ["need_module"]


def need_module(module: str, extra: str) -> None:
    """Skip the calling test module when ``module`` cannot be imported (fail under
    ``CI``: the ``dev`` extra installs every framework)."""
    if importlib.util.find_spec(module) is None:
        unavailable(
            f"{module} is not installed (pip install 'langhooks[{extra}]')", module
        )
