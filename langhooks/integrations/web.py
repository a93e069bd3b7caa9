"""A live view of runs in the browser, with human decisions (extra: ``langhooks[web]``).

``create_app()`` is an ASGI app (Starlette): a page that shows runs live, each run's
records as Server-Sent Events, and an endpoint that resumes an interrupted run with a
human's decisions. Serve it with uvicorn, or run ``langhooks serve``.

Who may watch and decide is ``authorize``'s to say (``owner_only`` keeps each user to
the runs they started); ``langhooks serve`` requires a token.
"""

from __future__ import annotations

try:
    import starlette  # noqa: F401
except ImportError as _missing:  # pragma: no cover - tested in a subprocess
    raise ImportError(
        "langhooks.integrations.web needs Starlette: pip install 'langhooks[web]'"
    ) from _missing

from ._auth import Action, Authorize, owner_only
from ._web._app import MAX_BODY_BYTES, Agent, create_app

__all__ = ["MAX_BODY_BYTES", "Action", "Agent", "Authorize", "create_app", "owner_only"]
