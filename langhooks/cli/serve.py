"""``langhooks serve``: the demo agent behind the live web page.

Open the page, start a run, watch it stream, approve the tool call, read the answer.
The agent is ``langhooks demo``'s (scripted model by default, ``--base-url/--model``
for an OpenAI-compatible server). Starlette and uvicorn are imported when the command
runs, so that ``langhooks --help`` works without the ``web`` extra.
"""

from __future__ import annotations

import argparse
import re
import secrets
import socket
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO, final

import attrs

from .._core._messages import ChatResponse, Message
from ..chain import LLMChain
from ..models._scripted import ScriptedChatModel
from .demo import (
    SYSTEM,
    WEATHER_TOOL,
    ApprovalGate,
    add_server_arguments,
    demo_turns,
    forecast,
    seconds,
    server_model,
    server_options_agree,
)

if TYPE_CHECKING:
    from .._core._model import ChatModel, ChatRequest
    from .._core._streaming import (
        AsyncStreamingChatResponseHandler,
        StreamingChatResponseHandler,
        StreamingHandle,
    )

__all__ = ["DemoModel", "add_arguments", "demo_agent", "port", "run", "token"]

_TOKEN: Final = re.compile(r"[A-Za-z0-9._~-]+")

# Hosts that only this machine reaches, and the names a browser uses for them.
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
# Hosts that mean every address: the URL printed names this machine by loopback.
_EVERYWHERE: Final = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535 (``--port``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected a port from 0 (any free one) to 65535, got {text!r}"
        )
    return value


def token(text: str) -> str:
    """An argparse type: a token of URL-safe characters (``--token``)."""
    if _TOKEN.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(
            "the token must be letters, digits, '-', '_', '.' or '~' (it goes into "
            "the URL)"
        )
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options."""
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only)",
    )
    parser.add_argument(
        "--port", type=port, default=8000, help="the port (default: 8000; 0: any free)"
    )
    access = parser.add_mutually_exclusive_group()
    access.add_argument(
        "--token",
        type=token,
        help="the token a browser or client must present (default: a random one, "
        "printed in the URL); a token given here is visible to other local users "
        "in the process list",
    )
    access.add_argument(
        "--no-auth",
        action="store_true",
        help="require no token: anyone who reaches the port can read every run and "
        "approve tool calls",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="keep runs in Redis at URL instead of in this process",
    )
    parser.add_argument(
        "--prefix",
        default="langhooks:",
        help="the key prefix of the runs in Redis (default: langhooks:)",
    )
    parser.add_argument(
        "--delay",
        type=seconds,
        default=0.05,
        help="seconds between streamed pieces of the scripted model (default: 0.05)",
    )
    add_server_arguments(parser)


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


@final
class DemoModel:
    """The demo's scripted answers, chosen by the conversation rather than by how
    often the model was called: a run resumed from saved state (in another
    process, with a new model object) gets the answer that comes next.

    Args:
        delay: seconds between streamed pieces.
    """

    def __init__(self, delay: float) -> None:
        self._delay = delay

    def _script(self, request: ChatRequest) -> ScriptedChatModel:
        answered = 0
        prompt = ""
        for message in reversed(request.messages):
            if message.role == "user":
                prompt = message.text
                break
            answered += message.role == "assistant"
        turns = demo_turns()
        turn = turns[min(answered, len(turns) - 1)]
        if answered == 0 and not _ABOUT_WEATHER.search(prompt):
            # Say plainly that the script does not answer this prompt.
            turn = attrs.evolve(
                turn,
                thinking=(
                    "The prompt is not about the weather, and my script only "
                    "looks up the weather in Paris. I should say so."
                ),
                text=f"{_ignored(prompt)} {turn.text}",
            )
        elif answered and (reason := _rejection(request.messages)) is not None:
            turn = attrs.evolve(
                turn,
                text=(
                    f"The weather lookup was rejected (“{reason}”), so I cannot say "
                    "whether you need an umbrella in Paris."
                ),
            )
        return ScriptedChatModel([turn], delay=self._delay)

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Stream the answer the conversation is at."""
        return self._script(request).stream(request, handler, handle=handle)

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin of ``stream``."""
        return await self._script(request).astream(request, handler, handle=handle)


#: A prompt the demo's weather script answers (anything else is said to be ignored).
_ABOUT_WEATHER: Final = re.compile(r"weather|umbrella|rain|paris", re.IGNORECASE)


def _ignored(prompt: str) -> str:
    """The scripted model's plain word that it does not answer ``prompt``."""
    shown = prompt if len(prompt) <= 80 else prompt[:79] + "…"
    return (
        f"I am the demo's scripted model and cannot answer “{shown}”: I only play "
        "one script, about the weather in Paris."
    )


def _rejection(messages: Sequence[Message]) -> str | None:
    """The reason a human rejected the last weather lookup, or None if it ran.

    A call that ran has the tool's own output as its result; anything else is the
    rejection's reason (``Decision.reject``)."""
    calls = {
        call.call_id: call
        for message in messages
        if message.role == "assistant"
        for call in message.tool_calls
    }
    last = messages[-1] if messages else None
    for result in last.tool_results if last is not None else ():
        call = calls.get(result.tool_call_id)
        text = "".join(part.content for part in result.content)
        if call is not None and text != forecast(call.arguments):
            return text or "no reason given"
    return None


def _redis_client(url: str) -> Any:
    """A client of the Redis at ``url`` that answers, or None (said on stderr)."""
    try:
        import redis
    except ImportError:
        print(
            "langhooks serve: --redis needs redis-py (pip install 'langhooks[redis]')",
            file=sys.stderr,
        )
        return None
    try:
        client = redis.Redis.from_url(url)
        client.ping()
    except (redis.RedisError, ValueError) as exc:
        print(f"langhooks serve: cannot use Redis at {url}: {exc}", file=sys.stderr)
        return None
    return client


def _url(host: str, port: int) -> str:
    host = _EVERYWHERE.get(host, host)
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
    if not server_options_agree(args, "serve"):
        return 2
    try:
        import uvicorn

        from ..integrations._auth import TokenAuth
        from ..integrations.web import create_app
    except ImportError:
        print(
            "langhooks serve: needs Starlette and uvicorn "
            "(pip install 'langhooks[web]')",
            file=sys.stderr,
        )
        return 2
    if args.base_url is not None:
        chosen = server_model(args, "serve")
        if chosen is None:
            return 2
        source = f"{args.model} at {args.base_url}"
        agent = demo_agent(lambda: chosen)
    else:
        delay = args.delay
        source = "the scripted model"
        demo = DemoModel(delay)
        agent = demo_agent(lambda: demo)
    client = None
    if args.redis is not None:
        client = _redis_client(args.redis)
        if client is None:
            return 2
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    try:
        listener = socket.create_server((args.host, args.port), family=family)
    except OSError as exc:
        print(
            f"langhooks serve: cannot listen on {args.host}:{args.port}: {exc}",
            file=sys.stderr,
        )
        return 1
    port = listener.getsockname()[1]
    url = _url(args.host, port)
    auth = None
    if not args.no_auth:
        secret = args.token or secrets.token_urlsafe(32)
        # Cookies are shared by every port of a host: one name per server.
        auth = TokenAuth(secret, cookie=f"langhooks_token_{port}")
    app: Any = create_app(agent=agent, redis=client, prefix=args.prefix, authorize=auth)
    if args.host in _LOOPBACK:
        # A page elsewhere could rebind its own name to 127.0.0.1 and then talk to
        # this server as if it were same-origin: answer only to local names.
        from starlette.middleware.trustedhost import TrustedHostMiddleware

        app.add_middleware(TrustedHostMiddleware, allowed_hosts=sorted(_LOOPBACK))
    if auth is not None:
        app = auth.wrap(app)
        url = f"{url}?token={secret}"
    else:
        print(
            f"langhooks serve: WARNING: --no-auth: anyone who can reach {url} can "
            "read every run and approve its tool calls",
            file=sys.stderr,
            flush=True,
        )
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,  # a request's URL can carry the token
        lifespan="on",
        # Open event streams end at once on Ctrl-C instead of holding the server.
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    print(
        f"langhooks serve: {url} (the demo agent on {source}"
        f"{'' if client is None else f'; runs in Redis at {args.redis}'}; "
        "Ctrl-C stops)",
        file=out,
        flush=True,
    )
    on_started(server)
    with listener:
        server.run(sockets=[listener])
    return 0
