"""A live view of runs in the browser, with human decisions (extra: ``langhooks[web]``).

``create_app()`` is an ASGI app (Starlette): a page that shows runs live, each run's
records as Server-Sent Events, and an endpoint that resumes an interrupted run with a
human's decisions. Serve it with uvicorn, or run ``langhooks serve``.
"""

from __future__ import annotations

try:
    import starlette  # noqa: F401
except ImportError as _missing:  # pragma: no cover - tested in a subprocess
    raise ImportError(
        "langhooks.integrations.web needs Starlette: pip install 'langhooks[web]'"
    ) from _missing

from ._web import MAX_BODY_BYTES, Agent, create_app

__all__ = ["MAX_BODY_BYTES", "Agent", "create_app"]
