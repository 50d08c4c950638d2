"""The README's first screen, and its sample of what ``make demo`` prints, checked against the code.

The block between the README's ``demo-output`` markers is rebuilt here from a real run of the demo's
commands: its LLM job (Logic-LM's method on 50 ProntoQA problems) replayed from the completions the
embedded model gave when the block was made (``tests/fixtures/demo/completions``: ``--engine replay``,
no model loaded), and its recorded-programs jobs on the shared data, then summarised by the function
behind ``symbolkg report --summary`` (what ``make demo`` ends with). A README that no longer shows
what the code prints fails with a diff. The LKG build of the demo is not in the sample: it prints its
own report, and replaying it would ship its completions too.

When the demo's prompts change, the replay misses (the test says so). Record the completions again
with the embedded model, from the repository root, into a new folder::

    .venv/bin/symbolkg solve --method logiclm --dataset prontoqa --limit 50 --max-tokens 384 \\
        --max-refine-rounds 1 --out /tmp/demo-rec/demo-logiclm-prontoqa.parquet \\
        --cache /tmp/demo-rec/completions --workers 2 --data-dir ../shared/data

then merge the cache's write-ahead log into its one file and ship that file::

    .venv/bin/python -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode=DELETE')" \\
        /tmp/demo-rec/completions/completions.sqlite
    cp /tmp/demo-rec/completions/completions.sqlite tests/fixtures/demo/completions/

and paste the summary this test prints into the README.
"""

from __future__ import annotations

import difflib
import re
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.inspection.report import summary
from tests.conftest import FIXTURES, REPO, data_or_skip

README = REPO / "README.md"
MAKEFILE = REPO / "Makefile"
START, END = "<!-- demo-output:start -->", "<!-- demo-output:end -->"
#: What a reader sees before scrolling: the README must say what SymbolKG is and give both commands there.
FIRST_SCREEN_LINES = 60

#: The demo's LLM job, as the Makefile's ``demo`` target runs it (without its paths and worker count).
DEMO_LLM_ARGS = (
    "--method",
    "logiclm",
    "--dataset",
    "prontoqa",
    "--limit",
    "50",
    "--max-tokens",
    "384",
    "--max-refine-rounds",
    "1",
)
#: The Logic-LM datasets whose recorded GPT-4 programs the demo solves, in the Makefile's order.
DEMO_SETS = ("ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT")
# Per program. Every recorded program ends within 0.31 s idle but FOLIO_dev_119 (1.7 s in a two-worker
# job); FOLIO_dev_120 never ends and times out at any limit (as in tests/jobs/test_logiclm_acceptance.py).
# The demo's 10 s default gives the same rows: the solvers' budgets are counted in steps, not seconds.
TIMEOUT_S = 20


@dataclass(frozen=True)
class ReplayedRun:
    """One LLM job of the demo, replayed from completions shipped in the repository.

    Attributes:
        out: the results file name ``make demo`` writes under ``runs/``.
        model: the model the completions came from (part of every cache key).
        completions: the completion cache folder (its ``completions.sqlite``).
        args: the job's flags as the Makefile's ``solve`` line gives them, in its order, without
            ``--engine``/``--model``/``--cache``/``--out`` and the worker and data settings.
        max_bytes: how large its completions file may grow (the repository ships it).
    """

    out: str
    model: str
    completions: Path
    args: tuple[str, ...] = DEMO_LLM_ARGS
    max_bytes: int = 2_000_000


#: The demo's LLM rows, in the order of the summary. A stronger model's row is one more entry here
#: (its completions shipped in the repository, e.g. ``benchmarks/out/qwen/completions``; its own
#: ``args`` if they differ), one more ``solve`` in the Makefile's demo (for a row that ships its
#: completions: ``--engine replay --model M --cache DIR``) and one more file in its ``report --summary``.
LLM_RUNS = (
    ReplayedRun("demo-logiclm-prontoqa.parquet", "smollm2-135m", FIXTURES / "demo" / "completions"),
    # the 1.5B model that can formalize, on the first 50 of each set (benchmarks/llm_formalizer.py)
    ReplayedRun(
        "demo-logiclm-qwen.parquet",
        "qwen2.5-coder-1.5b",
        REPO / "benchmarks" / "out" / "qwen" / "completions",
        ("--method", "logiclm", "--dataset", "prontoqa,proofwriter,folio,logicaldeduction,ar-lsat", "--limit", "50"),
        # every kept run's completions (8,314 on 2026-12-07: 6.8 MB of text, 10.5 MB on disk), since every run replays
        max_bytes=12_000_000,
    ),
)


def readme_sample(text: str) -> str:
    """The text inside the README's demo-output block (its code fence removed)."""
    if START not in text or END not in text:
        raise AssertionError(f"README.md has no {START} ... {END} block")
    block = text.split(START, 1)[1].split(END, 1)[0].strip()
    fence = re.fullmatch(r"```[a-z]*\n(.*)\n```", block, flags=re.S)
    if fence is None:
        raise AssertionError("the README's demo-output block must be one fenced code block")
    return fence.group(1)


def demo_recipe(makefile: str) -> str:
    """The Makefile's ``demo`` target, its continued lines joined and blanks squeezed."""
    match = re.search(r"^demo:.*?\n((?:\t.*\n|\s*\n)+)", makefile, flags=re.M)
    assert match, "the Makefile has no demo target"
    return re.sub(r"\s+", " ", match.group(1).replace("\\\n", " "))


def test_first_screen_says_what_it_is_and_gives_the_two_commands():
    lines = README.read_text().splitlines()
    screen = "\n".join(lines[:FIRST_SCREEN_LINES])
    assert lines[0] == "# SymbolKG"
    intro = screen.split("\n## ", 1)[0]
    # what it is and for whom, in prose, before the first section
    assert len(intro.split()) >= 40 and "solver" in intro and "LLM" in intro, intro
    assert "make demo" in screen and "make test" in screen
    commands = re.search(r"```bash\n(.*?)\n```", screen, flags=re.S)
    assert commands and [c.split()[:2] for c in commands.group(1).splitlines()] == [["make", "demo"], ["make", "test"]]
    # what they print: the sample is on the first screen too
    assert START in screen and END in screen


def test_makefile_demo_runs_what_this_test_replays():
    """The replayed commands are the demo's own: a flag changed in one place fails here until both agree."""
    makefile = MAKEFILE.read_text()
    recipe = demo_recipe(makefile)
    for run in LLM_RUNS:
        assert "solve " + " ".join(run.args) in recipe, run
        assert f"--out runs/{run.out}" in recipe, run
        if run.completions != FIXTURES / "demo" / "completions":  # a model the demo does not install: replayed
            assert f"--engine replay --model {run.model}" in recipe, run
    sets = re.search(r"^DEMO_SETS\s*:=\s*(.*)$", makefile, flags=re.M)
    assert sets and tuple(sets.group(1).split()) == DEMO_SETS
    assert "for ds in $(DEMO_SETS)" in recipe and "_dev_gpt-4.json" in recipe
    files = " ".join(f"runs/{run.out}" for run in LLM_RUNS)
    assert f"report --summary {files} $(foreach ds,$(DEMO_SETS),runs/demo-$(ds).parquet)" in recipe


def _replay(run: ReplayedRun, tmp: Path, data: Path) -> Path:
    """Run the demo's LLM job from a copy of its completions (SQLite writes beside the file it opens)."""
    if not (run.completions / "completions.sqlite").is_file():
        pytest.fail(f"{run.completions}/completions.sqlite is missing: record it (see this module's docstring)")
    cache = tmp / f"cache-{run.model}"
    shutil.copytree(run.completions, cache)
    out = tmp / run.out
    rc = main(
        [
            "solve",
            *run.args,
            "--engine",
            "replay",
            "--model",
            run.model,
            "--cache",
            str(cache),
            "--out",
            str(out),
            "--workers",
            "2",
            "--executor",
            "local",
            "--timeout-s",
            str(TIMEOUT_S),
            "--no-progress",
            "--data-dir",
            str(data),
        ]
    )
    assert rc == 0
    misses = [
        r["problem_id"]
        for r in pq.read_table(out, columns=["problem_id", "error_message"]).to_pylist()
        if "replay miss" in (r["error_message"] or "")
    ]
    assert not misses, (
        f"{len(misses)} problems asked a prompt the shipped completions lack ({misses[:3]}...): "
        "the demo's prompts changed; record the completions again (see this module's docstring)"
    )
    return out


def _recorded(name: str, tmp: Path, data: Path) -> Path:
    """Run one of the demo's recorded-programs jobs."""
    programs = data_or_skip("logiclm", "programs", f"{name}_dev_gpt-4.json")
    out = tmp / f"demo-{name}.parquet"
    rc = main(
        [
            "solve",
            "--programs",
            str(programs),
            "--out",
            str(out),
            "--workers",
            "2",
            "--executor",
            "local",
            "--timeout-s",
            str(TIMEOUT_S),
            "--no-progress",
            "--data-dir",
            str(data),
        ]
    )
    assert rc == 0
    return out


def drift(shown: str, built: str) -> str | None:
    """Why the README's sample is stale (a unified diff and the text to paste), or None when it is not."""
    if built == shown:
        return None
    diff = "\n".join(
        difflib.unified_diff(shown.splitlines(), built.splitlines(), "README.md", "the demo now", lineterm="")
    )
    return (
        f"README.md's demo sample drifted from what `make demo` prints:\n{diff}\n\n"
        f"the demo now prints (paste it between the markers):\n{built}"
    )


@pytest.fixture(scope="module")
def demo_summary(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The summary of the demo's runs, run for real here: the LLM job replayed, the recorded ones solved."""
    data = data_or_skip("logiclm").parent
    tmp = tmp_path_factory.mktemp("demo")
    runs = [_replay(run, tmp, data) for run in LLM_RUNS] + [_recorded(name, tmp, data) for name in DEMO_SETS]
    return summary(runs)


@pytest.mark.slow
def test_readme_sample_is_what_the_demo_prints(demo_summary):
    problem = drift(readme_sample(README.read_text()), demo_summary)
    if problem:
        pytest.fail(problem)


@pytest.mark.slow
def test_a_changed_number_in_the_sample_is_caught(demo_summary):
    """The comparison can fail: one count changed in the sample is reported, with the line it came from."""
    lines = demo_summary.splitlines()
    planted = "\n".join(
        [*lines[:2], re.sub(r" (\d+) ", lambda m: f" {int(m.group(1)) + 1} ", lines[2], count=1), *lines[3:]]
    )
    problem = drift(planted, demo_summary)
    assert problem and f"-{planted.splitlines()[2]}" in problem and f"+{lines[2]}" in problem


def test_shipped_completions_are_one_small_sqlite_file():
    """The fixture is the cache's one file, its write-ahead log merged (a -wal beside it would hold rows), and small."""
    for run in LLM_RUNS:
        files = sorted(p.name for p in run.completions.iterdir())
        assert files == ["completions.sqlite"], files
        db = run.completions / "completions.sqlite"
        assert db.stat().st_size < run.max_bytes
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # opens read-only, no -wal needed
            assert conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0] > 0
