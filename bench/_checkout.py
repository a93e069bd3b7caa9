"""Imported first by each benchmark script: this checkout's langhooks (and
``tests``), not an installed one, so a script run from a second checkout (another
commit, a worktree) measures that checkout.

Running ``python bench/x.py`` puts ``bench/`` first on ``sys.path``, not the
repository root; without this, ``import langhooks`` finds whatever is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if sys.path[1:2] != [ROOT]:
    sys.path.insert(1, ROOT)
