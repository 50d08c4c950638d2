"""``symbolkg mcp serve``: SWI-Prolog sessions as tools for agents; the server is :mod:`symbolkg.jobs.mcp_server`."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    mcp = sub.add_parser("mcp", help="SWI-Prolog sessions as tools for agents: a Model Context Protocol server")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    p = mcp_sub.add_parser("serve", help="serve the Prolog tools over stdio (default) or Streamable HTTP; see docs/MCP.md")
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
    # the MCP SDK (over half a second to import): when the server starts, never to build the parser
    from symbolkg.jobs.mcp_server import main as serve

    return serve(args)
