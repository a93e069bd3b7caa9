"""What drivers and bridge tests share: a missing framework skips its tests (fails
under ``CI``, where the ``dev`` extra installs every framework)."""

from __future__ import annotations

import importlib.util

import pytest

from tests._services import MISSING, ci

__all__ = ["need_module"]


def need_module(module: str, extra: str) -> None:
    """Skip the calling test (or test module, when called at its import) when
    ``module`` cannot be imported; fail instead under ``CI``."""
    top = module.split(".")[0]
    if importlib.util.find_spec(top) is not None and importlib.util.find_spec(module):
        return
    reason = f"{module} is not installed (pip install 'langhooks[{extra}]')"
    if ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)")
    MISSING.add(module)
    pytest.skip(reason, allow_module_level=True)
