"""Sphinx configuration for the langhooks documentation."""

from __future__ import annotations

import sys
from pathlib import Path

from langhooks import __version__

# The docs' own extension: pictures drawn at build time (docs/_ext/lh_diagrams.py).
sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "langhooks"
author = "The langhooks developers"
copyright = "2026, the langhooks developers"
release = __version__
version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "lh_diagrams",
]
lh_firing_order_pages = ["guide/runtime"]
html_static_path = ["_static"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
suppress_warnings = ["myst.xref_missing"]
