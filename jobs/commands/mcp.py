"""``symbolkg mcp serve``: SWI-Prolog sessions as tools for agents; the server is :mod:`symbolkg.jobs.servers.mcp`,
started by :mod:`symbolkg.jobs.servers.mcp.start`."""

from __future__ import annotations

import argparse
import gc
import sys

from symbolkg.jobs.servers.mcp.start import answer_initialize, claim_stdio, config_from_args, is_pipe


def add_parser(sub: argparse._SubParsersAction) -> None:
    mcp = sub.add_parser("mcp", help="SWI-Prolog sessions as tools for agents: a Model Context Protocol server")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    p = mcp_sub.add_parser(
        "serve", help="serve the Prolog tools over stdio (default) or Streamable HTTP; see docs/MCP.md"
    )
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP: address to listen on (non-loopback needs a token)")
    p.add_argument("--port", type=int, default=8765, help="HTTP: port (the endpoint is /mcp)")
    p.add_argument("--token-file", help="HTTP: file holding the bearer token (else $SYMBOLKG_MCP_TOKEN)")
    p.add_argument("--max-sessions", type=int, default=64, help="Prolog sessions alive at once (LRU eviction beyond)")
    p.add_argument("--idle-ttl", type=float, default=1800.0, help="seconds before an unused session is closed")
    p.add_argument("--memory-mb", type=int, default=1024, help="address-space limit of each session's swipl process")
    p.add_argument("--solver-workers", type=int, default=1, help="solver worker processes for solve_program")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve; over stdio pipes ``initialize`` is answered before the SDK is imported.

    (:mod:`symbolkg.jobs.servers.mcp.start` holds those steps.)

    Returns:
        The exit status: 0, or 2 on a bad flag (reported before anything is answered).
    """
    if args.transport == "stdio" and is_pipe(0) and is_pipe(1):
        try:
            config_from_args(args)
        except ValueError as exc:
            print(f"symbolkg mcp serve: {exc}", file=sys.stderr)
            return 2
        with claim_stdio() as pipes:
            answer_initialize(pipes)
            # the MCP SDK and the tools (about a second of imports), once the client has its answer to initialize
            from symbolkg.jobs.servers.mcp.transport import main as serve

            return _exiting(serve(args, pipes=pipes))
    # the MCP SDK and the tools (about a second of imports): when the server starts, never to build the parser
    from symbolkg.jobs.servers.mcp.transport import main as serve

    return _exiting(serve(args))


def _exiting(status: int) -> int:
    """The server is done (every session and worker closed) and the process ends with ``status``: freeze the
    garbage collector first, so that the interpreter's exit skips its collections over the SDK's objects (about
    0.5 s of a stdio session's life on a loaded 2-core VM, 20 ms frozen). Objects are still freed by refcount."""
    gc.freeze()
    return status
