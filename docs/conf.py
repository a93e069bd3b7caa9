"""Sphinx configuration for the langhooks documentation."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, Generic

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.ext import intersphinx

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
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "lh_diagrams",
]
lh_firing_order_pages = ["guide/runtime"]
html_static_path = ["_static"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_inventories"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
suppress_warnings = ["myst.xref_missing"]

# --- cross-references: checked (sphinx -n), and resolved offline ----------------------

# The inventories are in the repository (docs/_inventories/README.md says where they
# come from), so the build needs no network: intersphinx reads the local file.
_INVENTORIES = Path(__file__).parent / "_inventories"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3.11", str(_INVENTORIES / "python-3.11.inv")),
    "attrs": ("https://www.attrs.org/en/stable", str(_INVENTORIES / "attrs-22.2.inv")),
}

# Names that appear in signatures but have no page: each is private on purpose (a
# TypeVar, the keyword TypedDicts behind Unpack, the undocumented root class) or
# belongs to a library whose inventory we do not ship (OpenTelemetry's providers).
nitpick_ignore = [
    ("py:class", "langhooks._wrap._wrappers.H"),
    ("py:class", "langhooks._wrap._wrappers._Streaming"),
    ("py:class", "langhooks._wrap._wrappers._Chain"),
    ("py:class", "_H"),
    ("py:class", "langhooks._core._handler.HandlerBase"),
    ("py:class", "HandlerBase"),
    ("py:class", "langhooks._core._function_keywords.ChainCallbackFunctions"),
    ("py:class", "langhooks._core._function_keywords.AsyncChainCallbackFunctions"),
    ("py:class", "langhooks._core._function_keywords.StreamingCallbackFunctions"),
    ("py:class", "langhooks._core._function_keywords.AsyncStreamingCallbackFunctions"),
    ("py:class", "langhooks.models._sse.WireDecoder"),
    ("py:class", "langhooks.models._eventstream.BedrockEventDecoder"),
    # What in_background's overloads return for each interface (the checker's view).
    ("py:class", "_controls._StreamingBackground"),
    ("py:class", "_controls._AsyncStreamingBackground"),
    ("py:class", "_controls._ChainBackground"),
    ("py:class", "_controls._AsyncChainBackground"),
    ("py:class", "_controls._ChainAndStreamingBackground"),
    ("py:class", "_controls.ChainAndStreaming"),  # a handler of both sync interfaces
    ("py:class", "Handler"),  # langhooks.chain: a chain handler, sync or async
    ("py:class", "SyncHandler"),  # the Redis integration's sync handler union
    ("py:class", "ErrorPolicy"),  # the composites' errors="raise" | "log"
    ("py:class", "Starlette"),  # what create_app returns: Starlette ships none
    ("py:class", "TracerProvider"),
    ("py:class", "MeterProvider"),
    ("py:class", "LoggerProvider"),
    # Overloaded signatures name asyncio's classes by their defining module.
    ("py:class", "asyncio.queues.Queue"),
    ("py:class", "asyncio.events.AbstractEventLoop"),
    ("py:class", "langhooks._persist._codec_api._T"),  # decode/loads' TypeVar
    ("py:class", "langhooks._wrap._notify._Payload"),  # to_message's TypeVar
    # What BedrockChatModel calls on a boto3 client (a protocol, not exported).
    ("py:class", "ConverseStreamClient"),
]
# redis-py's client classes and Starlette's request: their inventories are not
# shipped either.
nitpick_ignore_regex = [("py:class", r"redis\..*"), ("py:class", r"starlette\..*")]
nitpick_ignore_regex += [("py:exc", r"redis\..*")]
# The MCP SDK's sessions and types, and anyio's portal (the mcp extra): no inventory
# shipped either.
nitpick_ignore_regex += [("py:class", r"(mcp|mcp_types|anyio)\..*")]
# Google ADK's and Strands' types (the google-adk and strands extras): no inventory
# shipped either.
nitpick_ignore_regex += [("py:class", r"(google\.adk|strands)\..*")]
# psycopg's connections and pools (the postgres extra): no inventory shipped either.
nitpick_ignore_regex += [("py:class", r"psycopg(_pool)?\..*")]
# The provider SDKs' clients a model takes as client= (no inventories shipped).
nitpick_ignore_regex += [("py:class", r"(google\.genai|cohere|mistralai)\..*")]
# The LangChain bridge's bases and arguments are LangChain's and LangGraph's types.
nitpick_ignore_regex += [("py:class", r"(langchain|langchain_core|langgraph)\..*")]
# The agent frameworks the bridges attach to (pydantic-ai, the OpenAI Agents SDK):
# no inventories shipped either.
nitpick_ignore_regex += [("py:class", r"(agents|pydantic_ai)\..*")]
# The chain type variables of the generic interfaces and results (ChainView's text
# and the interfaces' say what they stand for).
nitpick_ignore_regex += [("py:(class|obj)", r"(.*\.)?ChainT_(co|contra)")]

_PUBLIC_PACKAGES = (
    "langhooks",
    "langhooks.chain",
    "langhooks.models",
    "langhooks.notify",
    "langhooks.testing",
)


def _public_path(cls: type) -> str | None:
    """Where a langhooks class is public (``langhooks.models.ChatModel``), or None.

    A class outside langhooks counts as public where it is defined.
    """
    module = getattr(cls, "__module__", "")
    if not module.startswith("langhooks"):
        return f"{module}.{cls.__qualname__}"
    if cls.__name__.startswith("_"):
        return None
    public_module = ".".join(
        part for part in module.split(".") if not part.startswith("_")
    )
    for candidate in dict.fromkeys((public_module, *_PUBLIC_PACKAGES)):
        try:
            namespace = importlib.import_module(candidate)
        except ImportError:  # (an integration whose library is missing)
            continue
        if getattr(namespace, cls.__name__, None) is cls:
            return f"{candidate}.{cls.__name__}"
    return None


def _public_bases(bases: list[Any]) -> list[Any]:
    """``bases`` with each private class replaced by its own public bases."""
    shown: list[Any] = []
    for base in bases:
        origin = getattr(base, "__origin__", base)
        if not isinstance(origin, type) or _public_path(origin) is not None:
            shown.append(base)
        else:
            # (Generic, behind a private generic base, says nothing to a reader.)
            inherited = [b for b in origin.__bases__ if b is not Generic]
            shown.extend(_public_bases(inherited))
    without_object = [b for b in dict.fromkeys(shown) if b is not object]
    return without_object or [object]


def _process_bases(
    _app: Sphinx, _name: str, _obj: object, _options: object, bases: list[Any]
) -> None:
    bases[:] = _public_bases(bases)


def _resolve_private(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element
) -> nodes.Element | None:
    """Resolve a reference to a private module's name, or a bare short name, to
    the public name documented for it."""
    if node.get("refdomain") != "py":
        return None
    target: str = node["reftarget"]
    domain = env.get_domain("py")
    candidates: list[str] = []
    if target.startswith("typing_extensions."):
        candidates.append("typing." + target.removeprefix("typing_extensions."))
    elif target.startswith("langhooks."):
        module, _, name = target.rpartition(".")
        try:
            value = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            value = None
        if isinstance(value, type) and (path := _public_path(value)) is not None:
            candidates.append(path)
    elif "." not in target:
        candidates.extend(
            full
            for full in getattr(domain, "objects", {})
            if full.startswith("langhooks") and full.endswith("." + target)
        )
    for candidate in candidates:
        node["reftarget"] = candidate
        found = domain.resolve_xref(
            env,
            node.get("refdoc", ""),
            app.builder,
            node["reftype"],
            candidate,
            node,
            contnode,
        )
        if found is None and candidate.startswith("typing."):
            # The stdlib documents these typing names as data, not classes.
            reftype, node["reftype"] = node["reftype"], "obj"
            found = intersphinx.missing_reference(app, env, node, contnode)
            node["reftype"] = reftype
        if found is not None:
            return found
    node["reftarget"] = target
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-bases", _process_bases)
    app.connect("missing-reference", _resolve_private, priority=900)
    return {"parallel_read_safe": True}
