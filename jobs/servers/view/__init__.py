"""`symbolkg view [PATH ...]`: a local, read-only web viewer for runs; `--bundle OUT` writes it as a static site.

Every run under the paths (results Parquet files, or folders searched for them) is served with
what lies beside it: its verify verdicts, its LLM request and gate logs, and for ``symbolkg``
runs the LKG store its metadata names. The runs list, one page per run (the report's numbers,
plots, and a problem table that filters, sorts, searches and pages through DuckDB), one page per
problem (attempts, programs, outcome, certificate drawn, verdict, the method's own intermediates)
and two runs side by side, the settings they differ in marked. Modules: :mod:`.queries` (finding and
querying runs), :mod:`.pages` (what each page shows), :mod:`.configs` (a run's config and
provenance), :mod:`.app` (the ASGI app), :mod:`.bundle` (the static site); templates in
``templates/``, the stylesheet and the table script in ``static/``.

This module stays light: the CLI builds its parser on every command, so the web stack is
imported only when ``view`` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

DEFAULT_PORT = 7575


def read_token(token_file: str | None) -> str | None:
    """The access token: the first line of ``token_file``, else ``$SYMBOLKG_VIEW_TOKEN``, else None.

    Raises:
        ValueError: the token file is empty.
        OSError: the token file cannot be read.
    """
    if token_file:
        token = Path(token_file).read_text(encoding="utf-8").strip().splitlines()
        if not token or not token[0].strip():
            raise ValueError(f"token file {token_file} is empty")
        return token[0].strip()
    return os.environ.get("SYMBOLKG_VIEW_TOKEN") or None


def _cmd_view(args: argparse.Namespace) -> int:
    paths = args.paths or ["runs"]
    missing = [p for p in paths if not Path(p).exists()]
    if missing and len(missing) == len(paths):
        print(f"symbolkg view: nothing at {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.bundle:
        # the web stack (jinja2, duckdb, matplotlib) only when the command runs: the CLI builds every parser
        from symbolkg.jobs.servers.view.bundle import write_bundle

        summary = write_bundle(
            paths, Path(args.bundle), data_dir=args.data_dir, max_problem_pages=args.bundle_max_problems
        )
        print(
            f"symbolkg view: wrote {summary['runs']} run(s), {summary['problem_pages']} problem page(s) and "
            f"{summary['compare_pages']} comparison(s) to {args.bundle}; open {Path(args.bundle) / 'index.html'}"
        )
        for note in summary["notes"]:
            print(f"  note: {note}", file=sys.stderr)
        return 0
    # the web stack (starlette, jinja2, duckdb) only when the command runs: the CLI builds every parser
    from symbolkg.jobs.servers.view.app import serve

    try:
        token = read_token(args.token_file)
        serve(paths, host=args.host, port=args.port, data_dir=args.data_dir, token=token)
    except (ValueError, OSError) as exc:
        print(f"symbolkg view: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


def add_parser(sub: Any) -> None:
    """``symbolkg view``: registered by :func:`symbolkg.jobs.cli.build_parser`."""
    p = sub.add_parser(
        "view",
        help="a local, read-only web viewer of runs (every problem, its program, certificate "
        "and verdict; filters, search, two runs side by side); --bundle writes a static site",
    )
    p.add_argument(
        "paths", nargs="*", metavar="PATH", help="results Parquet files or folders holding them (default: runs)"
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other needs a token)"
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument(
        "--token-file", help="file holding the access token (else $SYMBOLKG_VIEW_TOKEN); required off loopback"
    )
    p.add_argument(
        "--data-dir", help="data root, for the problems' text (default: $SYMBOLKG_DATA, else ../shared/data)"
    )
    p.add_argument(
        "--bundle", metavar="OUT", help="write the viewer as a static folder (opens from disk) instead of serving"
    )
    p.add_argument(
        "--bundle-max-problems",
        type=int,
        default=5000,
        metavar="N",
        help="with --bundle: problem pages per run (the table lists every row; default 5000)",
    )
    p.set_defaults(func=_cmd_view)
