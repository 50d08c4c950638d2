"""How clients reach the server: stdio on the event loop, Streamable HTTP behind a bearer token; ``main``."""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import signal
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from symbolkg.jobs.servers.mcp.start import (
    StdioPipes,
    claim_stdio,
    config_from_args,
    is_pipe,
)

if TYPE_CHECKING:
    pass
from symbolkg.jobs.servers.mcp.server import PrologMCPServer

log = logging.getLogger(__name__)

TOKEN_ENV = "SYMBOLKG_MCP_TOKEN"

# ------------------------------------------------------------------------------------------ transports


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``.

    The comparison is constant-time (:func:`hmac.compare_digest`), so response timing
    does not leak how much of a guessed token was right. Anything else gets ``401``
    with ``WWW-Authenticate: Bearer``. Lifespan events pass through.
    """

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("an empty token would let anyone in")
        self.app = app
        self._expected = b"Bearer " + token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            given = next((v for k, v in scope.get("headers", []) if k.lower() == b"authorization"), b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps(
                    {"error": "unauthorized", "error_description": "missing or wrong bearer token"}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="symbolkg-mcp"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(token_file: str | None, env: dict[str, str] | None = None) -> str | None:
    """The bearer token: the first line of ``token_file``, else ``$SYMBOLKG_MCP_TOKEN``, else None.

    Raises:
        ValueError: the token file is empty.
        OSError: the token file cannot be read.
    """
    env = os.environ if env is None else env
    if token_file:
        token = Path(token_file).read_text().strip()
        if not token:
            raise ValueError(f"token file {token_file} is empty")
        return token
    return env.get(TOKEN_ENV, "").strip() or None


def check_http_options(host: str, token: str | None) -> None:
    """Refuse to serve HTTP without a token (on a non-loopback host, say where the risk is).

    Raises:
        ValueError: no token.
    """
    if token:
        return
    if not is_loopback(host):
        raise ValueError(
            f"refusing to listen on non-loopback host {host!r} without a bearer token: "
            f"give --token-file FILE or set {TOKEN_ENV}"
        )
    raise ValueError(
        f"the HTTP transport needs a bearer token: give --token-file FILE or set {TOKEN_ENV} "
        "(any local process could otherwise run goals)"
    )


async def serve_stdio(app: PrologMCPServer, pipes: StdioPipes | None = None) -> None:
    """Serve one MCP connection over stdin/stdout until the client closes it.

    When stdin and stdout are pipes (as an MCP client starts a server), they are read and written
    on the event loop (:class:`~symbolkg.jobs.mcp_start.PipeLines`,
    :class:`~symbolkg.jobs.mcp_start.PipeWriter`) through private duplicates (``pipes``, claimed by
    :func:`symbolkg.jobs.commands.mcp.run`, which may have answered ``initialize`` already; else
    claimed here), not through the SDK's file wrappers, which hand every line read, write and flush
    to a worker thread. Otherwise (a terminal, a file) the SDK's transport serves them.
    """
    from mcp.server.stdio import stdio_server

    if pipes is None and not (is_pipe(0) and is_pipe(1)):
        async with stdio_server() as (read_stream, write_stream):
            await app.server.run(read_stream, write_stream, app.server.create_initialization_options())
        return
    with claim_stdio() if pipes is None else nullcontext(pipes) as claimed:
        async with stdio_server(stdin=claimed.reader, stdout=claimed.writer) as (read_stream, write_stream):
            await app.server.run(read_stream, write_stream, app.server.create_initialization_options())


async def serve_http(app: PrologMCPServer, *, host: str, port: int, token: str) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp``, every request checked for the token."""
    import uvicorn

    check_http_options(host, token)
    asgi = BearerTokenMiddleware(app.server.streamable_http_app(host=host), token)
    # A long keep-alive: with uvicorn's 5 s default, a client reusing a pooled connection at the moment
    # the server drops it gets a ReadError (seen under load with many clients).
    server = uvicorn.Server(
        uvicorn.Config(asgi, host=host, port=port, log_level="warning", lifespan="on", timeout_keep_alive=120)
    )
    print(f"symbolkg mcp: listening on http://{host}:{port}/mcp (bearer token required)", file=sys.stderr, flush=True)
    await server.serve()


def _terminate_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds to main()'s finally, which closes every session


def main(args: Any, *, pipes: StdioPipes | None = None) -> int:
    """``symbolkg mcp serve`` (args from the CLI parser) once the SDK is imported. Returns the exit status.

    ``pipes``: stdin and stdout, claimed (and ``initialize`` perhaps answered) by
    :func:`symbolkg.jobs.commands.mcp.run`, the command.

    The server object lives outside the event loop so that its sessions are closed on
    every way out: the client closing stdin, SIGINT, or SIGTERM (uvicorn handles the
    signal for a graceful HTTP shutdown, then re-raises it; it arrives here as
    ``KeyboardInterrupt``).
    """
    try:
        config = config_from_args(args)
        token = None
        if args.transport == "http":
            token = read_token(args.token_file)
            check_http_options(args.host, token)
    except (OSError, ValueError) as exc:
        print(f"symbolkg mcp serve: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # on stdio, stdout is the protocol channel
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    app = PrologMCPServer(config)
    try:
        try:
            if token is None:
                anyio.run(serve_stdio, app, pipes)
            else:
                anyio.run(lambda: serve_http(app, host=args.host, port=args.port, token=token))
        except* (BrokenPipeError, ConnectionResetError):  # a stdio client killed mid-call: our stdout is gone
            log.warning("the client went away; closing every session")
    except KeyboardInterrupt:
        pass
    finally:
        app.close()
    return 0
