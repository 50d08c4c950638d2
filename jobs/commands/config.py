"""``symbolkg config``: a run as one file.

* ``config show RUN.parquet``: the config a run used (stored in its results file), as YAML that
  ``symbolkg solve --config FILE`` reads back; ``--provenance``: what else the run recorded
  (package version, commit, model and its files' hash, prompt ids, sampling, input fingerprint).
* ``config init [--method M]``: every option of ``symbolkg solve`` (and M's own) at its default,
  each under its flag's help: a file to edit and run with ``--config``.

The config logic is :mod:`symbolkg.jobs.pipeline.run_config`; this module only prints.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from symbolkg.jobs.pipeline.run_config import ConfigError, Option, RunConfig, resolve, stored_source, to_yaml


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "config",
        help="a run as one file: `config show RUN.parquet` prints the config a run used "
        "(YAML for `solve --config`); `config init` a file to start from",
    )
    actions = p.add_subparsers(dest="config_command", required=True, metavar="{show,init}")
    s = actions.add_parser(
        "show", help="print the config RUN.parquet stored, as YAML that `symbolkg solve --config FILE` runs again"
    )
    s.add_argument("run", metavar="RUN.parquet", help="a results file of `symbolkg solve`")
    s.add_argument(
        "--provenance",
        action="store_true",
        help="print the run's provenance instead: package version and commit, the model and its files' "
        "hash, the prompt template ids, sampling and seed, the input's fingerprint",
    )
    s.set_defaults(func=run)
    i = actions.add_parser(
        "init", help="print every option of `symbolkg solve` at its default, with its help, as a config file to edit"
    )
    i.add_argument("--method", default="recorded", help="include this method's own options (its section)")
    i.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return show(args) if args.config_command == "show" else init(args)


def show(args: argparse.Namespace) -> int:
    """``config show RUN.parquet [--provenance]``."""
    try:
        source, meta = stored_source(args.run)
    except ConfigError as exc:
        print(f"symbolkg config: {exc}", file=sys.stderr)
        return 2
    provenance = meta.get("provenance") or {}
    if args.provenance:
        print(to_yaml(provenance), end="")
        return 0
    commit = str(provenance.get("git_commit", "unknown"))[:12]
    header = [
        f"the config of {args.run} (symbolkg {provenance.get('symbolkg_version', 'unknown')}, commit {commit})",
        "run it again: symbolkg solve --config THIS.yaml --out NEW.parquet",
        f"          or: symbolkg solve --rerun {args.run} --out NEW.parquet",
    ]
    print(to_yaml(source.document, header), end="")
    return 0


def _commented(option: Option, value: Any, indent: str) -> str:
    help_text = " ".join(option.help.split()).replace("%%", "%")
    if len(help_text) > 110:
        help_text = help_text[:107] + "..."
    line = to_yaml({option.key: value}).rstrip("\n")
    return f"{indent}# {option.flag}: {help_text}\n{indent}{line}\n"


def init(args: argparse.Namespace) -> int:
    """``config init [--method M]``."""
    from symbolkg.jobs.commands.solve import schema  # the solve command's options, built on demand

    options = schema()
    try:
        method = options.dest("method").check(args.method, "--method")  # type: ignore[union-attr]
        config: RunConfig = resolve(options, {"method": method})
    except ConfigError as exc:
        print(f"symbolkg config: {exc}", file=sys.stderr)
        return 2
    out = [
        f"# symbolkg solve --config FILE: every option of --method {config.method} at its default.\n",
        "# Flags given on the command line override these; delete what you do not change.\n",
        f"method: {config.method}\n",
    ]
    for opt in options.options:
        if opt.section is None and opt.dest != "method":
            out.append(_commented(opt, config.values[opt.dest], ""))
    own = [o for o in options.options if o.section == config.method]
    if own:
        out.append(f"{config.method}:\n")
        out += [_commented(o, config.values[o.dest], "  ") for o in own]
    print("".join(out), end="")
    return 0
