"""`symbolkg explain RUN.parquet --id ID`: one answer, the premises it rests on, and its proof, readably.

The command line is :mod:`symbolkg.jobs.commands.explain`; this module is the job.

What it shows comes from the row's certificate (:mod:`symbolkg.solvers.certificates`), never from
the solver's free-text ``proof``: the question and options (from the dataset, when it can be
loaded), the answer against the gold, the verdict of ``symbolkg verify`` if it has run, the
premises the certificate cites, each with the context sentence it formalizes, and the proof in
the certificate kind's own rendering (``explain_lines`` of the kind's module).

Premise provenance, per cited program line:

* ``stated``: the line carries the text it formalizes (Logic-LM's ``formula ::: sentence``), or the
  method recorded it (the ``symba`` method translates one sentence per statement and keeps the
  pair in the row's trace, ``statements[].sentence``); the line cites **every** context sentence
  whose words that text contains (a line written from four sentences cites all four);
* ``close``: the line's text contains no context sentence whole, but most of one (at least
  :data:`CLOSE_COVERAGE` of its words: a paraphrase); it cites the sentences covered best;
* ``unmatched``: the line's text matches no context sentence; it says so, and cites nothing
  rather than the nearest sentence;
* ``matched``: the line has no text of its own; the context sentence shown is the one sharing the
  most words with the line's symbols (``Jompus($x, True) >>> Shy($x, False)`` -> "Jompuses are not
  shy."), a best guess, marked as such;
* ``none``: the line has no text of its own and no context sentence shares a word with it.

Where the formalization was written from a subset of the sentences, the match is made among
those only: the ``symbolkg`` method formalizes the sentences its knowledge graph's kept nodes
and edges were read from (the LKG records each node's and edge's sentence; the row's trace lists
them as ``premises.sentences``), so every premise formalizes one of them. Such a premise is marked
``lkg`` (its sentence came to the formalizer through the graph); the index shown is still the
sentence's position in the whole context.
"""

from __future__ import annotations

import html
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.inspection.certificates import verdicts_path
from symbolkg.retrieval.lkg.canonical import split_sentences
from symbolkg.solvers.certificates import KINDS


@dataclass(frozen=True)
class Premise:
    """One premise an answer rests on, and where it comes from in the text.

    Attributes:
        line: 1-based line of the program.
        text: the program line, as written.
        sentence: the context sentence it formalizes (None when none shares a word with it).
        sentence_index: that sentence's 0-based index in the context.
        how: ``stated``, ``close``, ``unmatched``, ``matched`` or ``none`` (module docstring).
        lkg: the sentence is one of those the knowledge graph selected for the formalizer (module
            docstring); False when the row has no such selection.
        cited: every context sentence the line formalizes, as (index, sentence), in context order
            (``sentence``/``sentence_index`` are the first of them).
    """

    line: int
    text: str
    sentence: str | None
    sentence_index: int | None
    how: str
    lkg: bool = False
    cited: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Explanation:
    """Everything ``symbolkg explain`` prints for one row."""

    problem_id: str
    dataset: str
    question: str | None
    options: tuple[str, ...]
    answer: str | None
    predicted: str | None
    gold: str | None
    correct: bool
    language: str | None
    backend: str
    kind: str | None
    verdict: str | None
    verdict_reason: str | None
    premises: tuple[Premise, ...]
    proof: tuple[str, ...]


_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "of",
        "in",
        "on",
        "to",
        "and",
        "or",
        "not",
        "no",
        "all",
        "every",
        "each",
        "some",
        "x",
        "y",
        "z",
        "true",
        "false",
        "if",
        "then",
        "it",
        "its",
        "that",
        "this",
    ]
)


def _words(text: str) -> set[str]:
    """Lower-case word stems of ``text``: CamelCase and snake_case split, trailing ``s``/``e`` dropped.

    Dropping every trailing s and e maps a noun and its plural to one stem (``yumpus``,
    ``yumpuses`` -> ``yumpu``; ``impus`` -> ``impu``; ``blue``, ``blues`` -> ``blu``).
    """
    out = set()
    for w in _WORD.findall(text.replace("_", " ")):
        w = w.lower()
        if w in _STOP or len(w) < 2:
            continue
        stem = w.rstrip("se")
        out.add(stem if len(stem) >= 3 else w)
    return out


def best_sentence(text: str, sentences: list[str]) -> tuple[int, str] | None:
    """The sentence sharing the most word stems with ``text`` (ties: the earlier); None if none shares one."""
    want = _words(text)
    best, best_score = None, 0
    for i, s in enumerate(sentences):
        score = len(want & _words(s))
        if score > best_score:
            best, best_score = (i, s), score
    return best


#: ``close``: the share of a context sentence's words a line's text must contain to cite it as a
#: paraphrase when it contains no sentence whole (on the recorded GPT-4 FOLIO premises, 988 of
#: 1,056 texts contain a sentence whole; 55 more cover one at 0.8-0.9).
CLOSE_COVERAGE = 0.75


def stated_sentences(text: str, sentences: list[str], pool: list[int]) -> tuple[list[int], str]:
    """The context sentences (indices from ``pool``) a line's own ``text`` formalizes, and how.

    Every sentence all of whose words ``text`` contains (``stated``); else the best-covered ones
    when they reach :data:`CLOSE_COVERAGE` (``close``); else none (``unmatched``).
    """
    want = _words(text)
    words = {i: _words(sentences[i]) for i in pool}
    whole = [i for i in pool if words[i] and words[i] <= want]
    if whole:
        return whole, "stated"
    coverage = {i: len(words[i] & want) / len(words[i]) for i in pool if words[i]}
    best = max(coverage.values(), default=0.0)
    if best >= CLOSE_COVERAGE:
        return [i for i in pool if coverage.get(i) == best], "close"
    return [], "unmatched"


def provenance(
    program: str,
    lines: list[int],
    context: str | None,
    selected: list[int] | None = None,
    recorded: dict[str, str] | None = None,
) -> tuple[Premise, ...]:
    """The cited program ``lines`` with the context sentence each formalizes (module docstring).

    ``selected``: indices of the context sentences the formalizer was shown (the LKG's premise
    sentences), matched among only; None or empty: every sentence. ``recorded``: program line
    (stripped) -> the sentence the method says it translates.
    """
    program_lines = program.splitlines()
    sentences = split_sentences(context) if context else []
    valid = sorted({i for i in (selected or []) if 0 <= i < len(sentences)})
    pool = valid or list(range(len(sentences)))
    from_lkg = bool(valid)
    out = []
    for n in lines:
        text = program_lines[n - 1].strip() if 0 < n <= len(program_lines) else ""
        formula, sep, stated = text.partition(":::")
        said = (recorded or {}).get(text)
        if not sep and said:
            formula, sep, stated = text, ":::", said
        if sep and not sentences:  # the line says its sentence; show it even without a context
            out.append(Premise(n, text, stated.strip(), None, "stated"))
            continue
        if sep:
            indices, how = stated_sentences(stated, sentences, pool)
        else:
            hit = best_sentence(formula, [sentences[i] for i in pool]) if sentences else None
            indices, how = ([pool[hit[0]]], "matched") if hit else ([], "none")
        cited = tuple((i, sentences[i]) for i in sorted(indices))
        first = cited[0] if cited else (None, None)
        out.append(Premise(n, text, first[1], first[0], how, lkg=bool(cited) and from_lkg, cited=cited))
    return tuple(out)


def _recorded_sentences(row: dict[str, Any]) -> dict[str, str]:
    """Statement -> the sentence it translates, as the method recorded them (``symba`` rows), else empty."""
    try:
        statements = json.loads(row.get("trace") or "{}").get("statements") or []
    except (ValueError, AttributeError):
        return {}
    return {
        str(s["statement"]).strip(): str(s["sentence"])
        for s in statements
        if isinstance(s, dict) and s.get("statement") and s.get("sentence")
    }


def _lkg_sentences(row: dict[str, Any]) -> list[int] | None:
    """The context sentences the LKG selected for the formalizer (``symbolkg`` rows), else None."""
    try:
        premises = json.loads(row.get("trace") or "{}").get("premises") or {}
    except (ValueError, AttributeError):
        return None
    if premises.get("source") != "subgraph" or not premises.get("sentences"):
        return None
    return [int(i) for i in premises["sentences"]]


def _kind_module(kind: str | None) -> Any:
    if kind not in KINDS:
        return None
    return importlib.import_module(f"symbolkg.solvers.certificates.{kind}")


def explain_row(
    row: dict[str, Any],
    *,
    question: str | None = None,
    options: tuple[str, ...] = (),
    context: str | None = None,
    verdict: dict[str, Any] | None = None,
) -> Explanation:
    """The :class:`Explanation` of one results row (the problem's text given when known)."""
    cert = json.loads(row["certificate"]) if row.get("certificate") else None
    module = _kind_module(cert.get("kind")) if cert else None
    premises: tuple[Premise, ...] = ()
    proof: tuple[str, ...] = ()
    if module is not None:
        premises = provenance(
            row["program"] or "",
            list(module.premise_lines(cert)),
            context,
            _lkg_sentences(row),
            _recorded_sentences(row),
        )
        proof = tuple(module.explain_lines(cert))
    return Explanation(
        problem_id=row["problem_id"],
        dataset=row["dataset"],
        question=question,
        options=tuple(options),
        answer=row["answer"],
        predicted=row["predicted"],
        gold=row["gold"],
        correct=bool(row["correct"]),
        language=row["language"],
        backend=row["backend"],
        kind=cert.get("kind") if cert else None,
        verdict=verdict["verdict"] if verdict else None,
        verdict_reason=verdict.get("reason") if verdict else None,
        premises=premises,
        proof=proof,
    )


def format_text(e: Explanation) -> str:
    lines = [f"{e.problem_id} ({e.dataset})"]
    if e.question:
        lines.append(f"question: {e.question}")
    lines += [f"  {o}" for o in e.options]
    mark = "correct" if e.correct else "wrong"
    lines.append(f"answer: {e.answer} -> {e.predicted} (gold {e.gold}: {mark}); {e.language}, solved by {e.backend}")
    if e.kind is None:
        lines.append("certificate: none (nothing to explain beyond the answer)")
        return "\n".join(lines)
    verdict = (
        "not checked (run `symbolkg verify`)"
        if e.verdict is None
        else e.verdict + (f" ({e.verdict_reason})" if e.verdict_reason else "")
    )
    lines.append(f"certificate: {e.kind}; symbolkg verify: {verdict}")
    lines.append(f"premises used ({len(e.premises)}):")
    labels = {"stated": "states", "close": "paraphrases", "matched": "best match"}
    for p in e.premises:
        lines.append(f"  line {p.line}: {p.text}")
        if p.how == "unmatched":
            lines.append("      (its text matches no sentence of the context)")
        shown = p.cited or (((p.sentence_index, p.sentence),) if p.sentence is not None else ())
        for index, sentence in shown:
            where = f"sentence {index + 1}" if index is not None else "sentence"
            label = labels.get(p.how, p.how) + (", via the LKG" if p.lkg else "")
            lines.append(f"      {where} ({label}): {sentence}")
    lines.append("proof:")
    lines += [f"  {line}" for line in e.proof]
    return "\n".join(lines)


def format_html(e: Explanation) -> str:
    esc = html.escape
    rows = "".join(
        f"<tr><td>{p.line}</td><td><code>{esc(p.text)}</code></td>"
        f"<td>{'<br>'.join(esc(s) for _, s in p.cited) or esc(p.sentence or '')}</td>"
        f"<td>{p.how}{' (LKG)' if p.lkg else ''}</td></tr>"
        for p in e.premises
    )
    verdict = esc(e.verdict or "not checked") + (f" ({esc(e.verdict_reason)})" if e.verdict_reason else "")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{esc(e.problem_id)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td{{padding:2px 8px;vertical-align:top}}
pre{{background:#f4f4f4;padding:1em}}</style></head><body>
<h2>{esc(e.problem_id)} <small>({esc(e.dataset)})</small></h2>
<p><b>Question:</b> {esc(e.question or "(not available)")}</p>
<ul>{"".join(f"<li>{esc(o)}</li>" for o in e.options)}</ul>
<p><b>Answer:</b> {esc(str(e.answer))} &rarr; {esc(str(e.predicted))} (gold {esc(str(e.gold))}:
{"correct" if e.correct else "wrong"}); {esc(str(e.language))}, solved by {esc(e.backend)}</p>
<p><b>Certificate:</b> {esc(e.kind or "none")}; <b>symbolkg verify:</b> {verdict}</p>
<h3>Premises used</h3><table><tr><th>line</th><th>premise</th><th>sentence</th><th>link</th></tr>{rows}</table>
<h3>Proof</h3><pre>{esc(chr(10).join(e.proof))}</pre></body></html>
"""


def problem_text(dataset: str, problem_id: str, data_dir: str | None) -> tuple[str | None, tuple[str, ...], str | None]:
    """(question, options, context) of a problem, or Nones when its dataset cannot be loaded here."""
    try:
        problems = load_dataset(dataset, data_dir).problems
    except (FileNotFoundError, ValueError, KeyError):
        return None, (), None
    for p in problems:
        if p.id == problem_id:
            return p.question, p.options, p.context
    return None, (), None


def recorded_verdict(run: str | Path, problem_id: str) -> dict[str, Any] | None:
    """The row of ``symbolkg verify``'s verdicts for ``problem_id``, when verify has run on ``run``."""
    path = verdicts_path(run)
    if not path.exists():
        return None
    found = [v for v in pq.read_table(path).to_pylist() if v["problem_id"] == problem_id]
    return found[0] if found else None
