"""``langhooks serve``: the demo agent behind the live web page.

Open the page, start a run, watch it stream, approve the tool call, read the answer.
The agent is ``langhooks demo``'s (scripted model by default, ``--base-url/--model``
for an OpenAI-compatible server). Starlette and uvicorn are imported when the command
runs, so that ``langhooks --help`` works without the ``web`` extra.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TextIO

from .._messages import Message
from ..chain import LLMChain
from ..chain._demo import (
    SYSTEM,
    WEATHER_TOOL,
    ApprovalGate,
    _server_model,
    scripted_model,
)

if TYPE_CHECKING:
    from ..models._base import ChatModel

__all__ = ["add_arguments", "demo_agent", "run"]

# Hosts that only this machine reaches, and the names a browser uses for them.
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options."""
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only)",
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="the port (default: 8000; 0: any free)"
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="keep runs in Redis at URL instead of in this process",
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=0.05,
        help="seconds between streamed pieces of the scripted model (default: 0.05)",
    )
    parser.add_argument(
        "--base-url",
        help="run on an OpenAI-compatible server at this URL instead of the "
        "scripted model (needs --model)",
    )
    parser.add_argument("--model", help="the model name on that server")
    parser.add_argument(
        "--api-key", help="the server's API key (default: $OPENAI_API_KEY or 'none')"
    )


def demo_agent(model: Callable[[], ChatModel]) -> Callable[[str], LLMChain]:
    """The demo's agent as the web app takes it: a prompt to a chain that answers it.

    Args:
        model: makes the model of one run (a scripted model is used up by a run).

    Returns:
        A function from a prompt to the chain to run.
    """

    def agent(prompt: str) -> LLMChain:
        return LLMChain(
            model(), tools=[WEATHER_TOOL], callbacks=[ApprovalGate()]
        ).add_messages([Message.system(SYSTEM), Message.user(prompt)])

    return agent


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def run(
    args: argparse.Namespace,
    out: TextIO | None = None,
    *,
    on_started: Callable[[Any], object] = lambda server: None,
) -> int:
    """Serve the page and the demo agent until interrupted.

    Args:
        args: the parsed options.
        out: where the startup line goes (default: standard output).
        on_started: called with the uvicorn server once it listens (tests stop it
            by setting its ``should_exit``).

    Returns:
        0 after a clean stop; 1 when the address cannot be used; 2 for bad options
        or a missing extra.
    """
    out = sys.stdout if out is None else out
    if (args.base_url is None) != (args.model is None):
        print("langhooks serve: --base-url and --model go together", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from .web import create_app
    except ImportError:
        print(
            "langhooks serve: needs Starlette and uvicorn "
            "(pip install 'langhooks[web]')",
            file=sys.stderr,
        )
        return 2
    if args.redis is not None:
        print("langhooks serve: --redis is not supported yet", file=sys.stderr)
        return 2
    if args.base_url is not None:
        server_model = _server_model(args)
        if server_model is None:
            print(
                "langhooks serve: OpenAIChatModel is not available in this install "
                "(pip install 'langhooks[openai]')",
                file=sys.stderr,
            )
            return 2
        source = f"{args.model} at {args.base_url}"
        agent = demo_agent(lambda: server_model)
    else:
        delay = max(0.0, args.delay)
        source = "the scripted model"
        agent = demo_agent(lambda: scripted_model(delay))
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    try:
        listener = socket.create_server((args.host, args.port), family=family)
    except OSError as exc:
        print(
            f"langhooks serve: cannot listen on {args.host}:{args.port}: {exc}",
            file=sys.stderr,
        )
        return 1
    app = create_app(agent=agent)
    if args.host in _LOOPBACK:
        # A page elsewhere could rebind its own name to 127.0.0.1 and then talk to
        # this server as if it were same-origin: answer only to local names.
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=sorted(_LOOPBACK))
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        # Open event streams end at once on Ctrl-C instead of holding the server.
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    port = listener.getsockname()[1]
    print(
        f"langhooks serve: {_url(args.host, port)} (the demo agent on {source}; "
        "Ctrl-C stops)",
        file=out,
        flush=True,
    )
    on_started(server)
    with listener:
        server.run(sockets=[listener])
    return 0
