"""Constraint certificates: option answers of ``logiclm-csp`` and ``logiclm-smt``, re-checked without Z3.

Both languages pick one answer option by satisfiability questions about the program's constraints
``C`` (Z3 answers them). The certificate records, for every such question the answer rests on, the
evidence: a **model** (the question is satisfiable) or an **unsatisfiable core** (it is not). The
checker (:func:`check`) re-reads the program with our own parser, re-evaluates every model with a
plain Python evaluator of the parsed AST, and re-proves every core unsatisfiable with its own
exhaustive backtracking search over the finite domains (no Z3 anywhere).

Fields (``version`` 1)::

    {"kind": "constraint", "version": 1, "producer": "z3",
     "language": "logiclm-csp" | "logiclm-smt",
     "answer": "C",
     "constraints": [{"id": 7, "text": "blue_book > green_book"}, ...],   # EVERY constraint of the program
     "model": {...},                    # a model of all constraints that agrees with the chosen option
     "options": [{"letter": "A", "line": 14, "text": "...", "check": "entailed" | "is_sat" | ...,
                  "passes": false,
                  "facts": [{"query": "negation", "sat": true, "model": {...}},
                            {"query": "option", "sat": false, "core": [7, 9], "minimal": true}]}, ...]}

* ``constraints``: constraint ids are the 1-based program lines, with the text as written (CSP: the
  line before ``:::``; DSL: the line without its ``:::`` and ``#`` comments). The list must be exactly
  the program's constraints (the checker compares both ways).
* ``model``: CSP: ``{variable: value}`` (int or string). DSL: ``{function: [value, ...]}``, the values in
  ``itertools.product`` order of the parameters' members (declaration order; ``bool`` is
  ``[false, true]``), one value for a constant; values are ints, booleans or member names. Applications
  to arguments outside a parameter's sort (``f(b + 1)`` at the last ``b``: Z3 gives them a value of the
  carrier sort, unrestricted by the declaration) that the formulas read are listed under ``"@outside"``
  as ``[function, [args], value]``. DSL certificates also carry ``signatures`` (each function's parameter
  member lists) for :func:`explain_lines` only; the checker takes the sorts from the program.
* A fact is the answer to one *query* ``C and q``: ``option`` (q = the option's formula e),
  ``negation`` (not e), ``item`` with ``index`` i (the i-th formula of ``is_accurate_list``), ``none``
  (not Or(items)). ``sat: true`` comes with a ``model`` of ``C and q``; ``sat: false`` with a ``core``:
  constraint ids such that ``core and bounds and q`` has no solution; ``minimal: true`` claims that
  dropping any one id of ``core`` makes it satisfiable (``false``: the producer did not minimise; the
  checker then skips minimality and says so). ``bounds`` (DSL programs with integer-valued functions
  only) lists the lines that bound those integers (``1 <= f(p) <= 6``, ``f(a) == 2``, ...): the checker's
  finite search needs them, so they are cited beside the core and kept when minimality is checked.

Per question type (what a passing / failing option needs; the checker derives each option's verdict
from its facts and rejects the certificate when a needed fact is missing):

* CSP (``check: "entailed"``): an option passes iff it holds in every solution: ``negation`` unsat
  (a core) passes, ``negation`` sat (a counter-model) fails.
* DSL ``is_sat(e)``: ``option`` sat passes (model), unsat fails (core). ``is_unsat(e)``: the reverse.
* DSL ``is_valid(e)`` ("must be true"): ``negation`` unsat passes (core), sat fails (counter-model).
* DSL ``is_accurate_list([e1..en])``: passes iff ``none`` is unsat and every ``item`` is sat; one
  failing fact suffices to fail it.
* DSL ``is_exception(check)``: the inner check's facts, verdict negated ("... EXCEPT" questions).

The answer is the only passing option. The top-level ``model`` shows the constraints consistent (so
no verdict holds vacuously); it must satisfy the chosen option's formula (``Or`` of the items for a
list) when the check's polarity is positive (entailed, is_sat, is_valid, is_accurate_list) and its
negation when negative (is_unsat; ``is_exception`` flips the polarity).

The checker's search (:class:`symbolkg.solvers.certificates.constraint_search.Search`) is a
backtracking search over the cells (CSP variables; DSL function applications to members) that a
cited formula reads, with three-valued evaluation (booleans, integer intervals, sets of names) for
pruning; it is complete over finite domains. Integer-valued DSL functions without a declared range
get their domain from bounds stated in the cited constraints themselves (top-level
``lo <= f(a) <= hi``, ``f(a) == k``, ``f(a) in [..]``, also under ``ForAll`` / ``And``); a core
whose search reads an integer cell without such a bound is ``unverifiable``. When dropping one
constraint leaves a cell unbounded, the full core's bounds serve as a window: a model found there
shows the constraint needed; none found leaves minimality open, which the verdict reason reports
(``minimality open for N of M cores``) without failing. Programs with quantifiers or function
parameters over ``int`` and ``%`` by zero are ``unverifiable`` (the evaluator cannot tabulate them),
as is a search past ``limits.timeout_s`` (all searches of one certificate share it).

Producers keep certificates under :data:`MAX_CERTIFICATE_CHARS` (measured: at most 2.9 KB on the GPT-4
LogicalDeduction and AR-LSAT programs) and attach none when Z3 cannot finish them in the call's time.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.certificates import Verdict
from symbolkg.solvers.certificates.constraint_csp import CspReader
from symbolkg.solvers.certificates.constraint_lsat import OUTSIDE, DslReader
from symbolkg.solvers.certificates.constraint_search import (
    Reader,
    Unbounded,
    Unsupported,
    conj,
    need,
    negate,
)
from symbolkg.solvers.outcomes import Deadline, Limits

VERSION = 1
CHECKER = "python-search"
#: the question words of facts
QUERIES = ("option", "negation", "item", "none")
_POSITIVE = {"entailed": True, "is_sat": True, "is_valid": True, "is_accurate_list": True, "is_unsat": False}
#: Certificates above this many characters are a producer defect (they go into every Parquet row).
MAX_CERTIFICATE_CHARS = 20_000


# --------------------------------------------------------------------------- helpers shared with producers


def minimise(core: Sequence[int], unsat: Callable[[list[int]], bool]) -> list[int]:
    """Deletion-based minimisation: drop each id whose removal keeps ``unsat`` true."""
    kept = list(core)
    for cid in list(kept):
        trial = [c for c in kept if c != cid]
        if unsat(trial):
            kept = trial
    return kept


def polarity(check: str, negated: bool = False) -> bool:
    """True when a passing option of ``check`` is one whose formula holds in some model."""
    return _POSITIVE[check] != negated


# --------------------------------------------------------------------------- checking


@dataclass
class _Ctx:
    """One check's state: its deadline (every search of the check polls it) and what minimality checks
    could not settle."""

    deadline: Deadline
    cores: int = 0
    minimality_open: int = 0
    minimality_skipped: int = 0
    open_reason: str = ""


def check(cert: dict[str, Any], *, language: str, program: str, answer: str | None, limits: Limits) -> Verdict:
    """Re-check a constraint certificate of ``program``'s ``answer`` (module docstring).

    Raises:
        CertificateError: the certificate is malformed or wrong (the verdict is ``failed``).
    """
    t0 = time.perf_counter()
    if cert.get("version") != VERSION:
        return Verdict(
            "unverifiable", f"constraint certificate version {cert.get('version')!r} is not {VERSION}", CHECKER
        )
    if language == "logiclm-csp":
        reader: Reader = CspReader(program)
    elif language == "logiclm-smt":
        reader = DslReader(program)
    else:
        return Verdict("unverifiable", f"no constraint checker for language {language!r}", CHECKER)
    ctx = _Ctx(deadline=Deadline(limits.timeout_s, every=256))
    try:
        _check(cert, reader, answer, ctx)
    except Unsupported as exc:
        return Verdict("unverifiable", f"the evaluator cannot check this program: {exc}", CHECKER)
    except Unbounded as exc:
        return Verdict(
            "unverifiable",
            f"a cited core reads the integer {reader.show_cell(exc.cell)}, which no cited "
            "constraint bounds; the finite search cannot cover it",
            CHECKER,
        )
    except TimeoutError:
        return Verdict("unverifiable", f"the independent search exceeded {limits.timeout_s:g} s", CHECKER)
    reason = ""
    if ctx.minimality_open or ctx.minimality_skipped:
        parts = []
        if ctx.minimality_open:
            parts.append(f"minimality open for {ctx.minimality_open} of {ctx.cores} cores ({ctx.open_reason})")
        if ctx.minimality_skipped:
            parts.append(f"minimality not claimed for {ctx.minimality_skipped} of {ctx.cores} cores")
        reason = "; ".join(parts)
    return Verdict("verified", reason, CHECKER, round(time.perf_counter() - t0, 6))


def _check(cert: dict[str, Any], reader: Reader, answer: str | None, ctx: _Ctx) -> None:
    need(
        isinstance(cert.get("constraints"), list) and isinstance(cert.get("options"), list),
        "a constraint certificate needs the lists 'constraints' and 'options'",
    )
    # 1. every cited constraint is in the program, line and text, and all of them are cited
    cited: dict[int, str] = {}
    for entry in cert["constraints"]:
        need(
            isinstance(entry, dict) and type(entry.get("id")) is int and isinstance(entry.get("text"), str),
            f"a constraint entry must be {{'id': line, 'text': ...}}, got {entry!r}"[:200],
        )
        cited[entry["id"]] = entry["text"]
    actual = reader.constraint_texts()
    for cid, text in cited.items():
        need(cid in actual, f"cited constraint line {cid} is not a constraint of the program")
        need(actual[cid] == text, f"cited constraint line {cid} reads {text!r}, the program has {actual[cid]!r}")
    missing = sorted(set(actual) - set(cited))
    need(not missing, f"the certificate leaves out the program's constraints on lines {missing}")
    reader.check_supported()
    # 2. the top-level model satisfies every constraint and agrees with the chosen option
    chosen = cert.get("answer")
    need(isinstance(chosen, str), "the certificate names no answer")
    need(answer == chosen, f"the certificate is for answer {chosen!r}, the row answers {answer!r}")
    options = reader.options()
    need(chosen in options, f"answer {chosen!r} is not an option of the program")
    model = reader.decode_model(cert.get("model"), "the top-level model")
    reader.require_model(model, None, "the top-level model")
    want = polarity(*reader.check_kind(chosen))
    formula = reader.option_formula(chosen)
    need(
        reader.holds(formula, model) == want,
        f"the top-level model does not make option {chosen}'s formula {'true' if want else 'false'}",
    )
    # 3. every option's verdict from its facts
    seen: set[str] = set()
    passing: list[str] = []
    for entry in cert["options"]:
        need(
            isinstance(entry, dict) and isinstance(entry.get("letter"), str) and isinstance(entry.get("facts"), list),
            "an option entry needs 'letter' and 'facts'",
        )
        letter = entry["letter"]
        need(letter in options and letter not in seen, f"option {letter!r} is not in the program or is given twice")
        seen.add(letter)
        line, text = options[letter]
        need(
            entry.get("line") == line and entry.get("text") == text,
            f"option {letter} is cited as line {entry.get('line')} {entry.get('text')!r}; the program has line "
            f"{line} {text!r}",
        )
        kind, negated = reader.check_kind(letter)
        described = f"is_exception({kind})" if negated else kind
        need(
            entry.get("check") == described,
            f"option {letter} is cited as {entry.get('check')!r}, the program checks {described}",
        )
        facts = _facts(entry["facts"], letter, reader, set(cited), ctx)
        verdict = _verdict(kind, reader.items(letter), facts)
        need(verdict is not None, f"the facts of option {letter} do not decide its {described} check")
        passes = verdict != negated
        need(
            entry.get("passes") is passes,
            f"option {letter} is claimed to {'pass' if entry.get('passes') else 'fail'}"
            f", its facts show it {'passes' if passes else 'fails'}",
        )
        if passes:
            passing.append(letter)
    need(seen == set(options), f"the certificate leaves out options {sorted(set(options) - seen)}")
    need(passing == [chosen], f"the options that pass are {passing}, not exactly the answer {chosen}")


def _verdict(kind: str, items: int, facts: dict[tuple[str, int], bool]) -> bool | None:
    """The check's verdict (before ``is_exception``) from the satisfiability facts; None if undecided."""

    def sat(query: str, index: int = 0) -> bool | None:
        return facts.get((query, index))

    if kind in ("entailed", "is_valid"):
        return negate(sat("negation"))
    if kind == "is_sat":
        return sat("option")
    if kind == "is_unsat":
        return negate(sat("option"))
    # is_accurate_list
    return conj([negate(sat("none"))] + [sat("item", i) for i in range(items)])


def _facts(entries: list[Any], letter: str, reader: Reader, ids: set[int], ctx: _Ctx) -> dict[tuple[str, int], bool]:
    found: dict[tuple[str, int], bool] = {}
    for fact in entries:
        need(
            isinstance(fact, dict) and fact.get("query") in QUERIES and isinstance(fact.get("sat"), bool),
            f"a fact of option {letter} needs 'query' (one of {QUERIES}) and 'sat'",
        )
        query, index = fact["query"], fact.get("index", 0)
        need(type(index) is int, f"option {letter}: a fact's index must be an integer")
        q = reader.query_formula(letter, query, index)
        what = f"option {letter}'s {query}" + (f" {index}" if query == "item" else "")
        if fact["sat"]:
            model = reader.decode_model(fact.get("model"), f"the model of {what}")
            reader.require_model(model, q, f"the model of {what}")
        else:
            core, bounds = fact.get("core"), fact.get("bounds", [])
            for name, listed in (("core", core), ("bounds", bounds)):
                need(
                    isinstance(listed, list) and all(type(c) is int for c in listed),
                    f"the {name} of {what} must list constraint ids",
                )
                need(
                    set(listed) <= ids,
                    f"the {name} of {what} cites lines {sorted(set(listed) - ids)} that are not constraints",
                )
            _check_core(
                reader,
                sorted(set(core)),
                sorted(set(bounds) - set(core)),
                q,
                what,
                fact.get("minimal") is not False,
                ctx,
            )
        found[(query, index)] = fact["sat"]
    return found


def _check_core(
    reader: Reader, core: list[int], bounds: list[int], query: Any, what: str, minimal: bool, ctx: _Ctx
) -> None:
    """``core + bounds`` with ``query`` has no solution; by default, no line of ``core`` can be dropped."""
    ctx.cores += 1
    witness = reader.search(core + bounds, query, ctx.deadline)
    cited = core + [f"{b} (bound)" for b in bounds]  # type: ignore[list-item]
    need(witness is None, f"the core {cited} of {what} is satisfiable: {reader.show_assignment(witness)}")
    if not minimal:
        ctx.minimality_skipped += 1
        return
    still_open = False
    for cid in core:
        rest = [c for c in core if c != cid] + bounds
        try:
            witness = reader.search(rest, query, ctx.deadline)
        except Unbounded as exc:
            try:  # a model within the full core's bounds still shows the dropped line needed
                witness = reader.search(rest, query, ctx.deadline, window=core + bounds)
            except Unbounded:
                witness = None
            if witness is None:
                still_open = True
                ctx.open_reason = f"dropping a bound leaves {reader.show_cell(exc.cell)} unbounded"
                continue
        need(
            witness is not None, f"the core {cited} of {what} is not minimal: it stays unsatisfiable without line {cid}"
        )
    ctx.minimality_open += still_open


# --------------------------------------------------------------------------- explain


def explain_lines(cert: dict[str, Any]) -> list[str]:
    """The certificate, readably: the chosen option with its model, each other option with its evidence.

    Every constraint the certificate cites (a core or its bounds) is listed by line and text under the
    option it decides, and no other constraint is.
    """
    texts = {c["id"]: c["text"] for c in cert.get("constraints", [])}
    signatures = cert.get("signatures")
    head = (
        f"answer {cert.get('answer')} ({cert.get('language')}, {cert.get('producer')}): "
        f"{len(texts)} constraints, {len(cert.get('options', []))} options"
    )
    lines = [head]
    lines.append(f"  a solution of all constraints: {_show_model(cert.get('model'), signatures)}")
    for option in cert.get("options", []):
        lines.append(
            f"option {option.get('letter')} (line {option.get('line')}: {option.get('text')}) "
            f"[{option.get('check')}] {'PASSES' if option.get('passes') else 'fails'}"
        )
        for fact in option.get("facts", []):
            query = _QUERY_WORDS.get(fact.get("query"), str(fact.get("query")))
            if fact.get("query") == "item":
                query += f" {fact.get('index')}"
            if fact.get("sat"):
                lines.append(f"  {query} is possible, e.g. {_show_model(fact.get('model'), signatures)}")
                continue
            lines.append(f"  {query} is impossible given these constraints together:")
            for cid in fact.get("core", []):
                lines.append(f"    line {cid}: {texts.get(cid, '?')}")
            for cid in fact.get("bounds", []):
                lines.append(f"    line {cid}: {texts.get(cid, '?')} (bounds the integers)")
            if not fact.get("core") and not fact.get("bounds"):
                lines.append("    (no constraint needed: it contradicts itself)")
    return lines


_QUERY_WORDS = {
    "option": "the option's formula",
    "negation": "its negation",
    "none": "none of the listed formulas",
    "item": "listed formula",
}


def _show_model(model: Any, signatures: dict[str, Any] | None, limit: int = 600) -> str:
    """``x=1, y=2``; DSL tables as ``f(a)=v`` (booleans: the true applications only)."""
    if not isinstance(model, dict):
        return repr(model)
    parts = []
    for name, value in model.items():
        if name == OUTSIDE and isinstance(value, list):
            parts += [
                f"{e[0]}({', '.join(map(str, e[1]))})={e[2]}" for e in value if isinstance(e, list) and len(e) == 3
            ]
        elif signatures is not None and name in signatures and isinstance(value, list):
            cells = list(itertools.product(*signatures[name]))
            for args, v in zip(cells, value, strict=False):
                call = f"{name}({', '.join(map(str, args))})" if args else name
                if v is True:
                    parts.append(call)
                elif v is not False:
                    parts.append(f"{call}={v}")
        else:
            parts.append(f"{name}={value}")
    text = ", ".join(parts) or "(all false)"
    return text if len(text) <= limit else text[:limit] + " ..."


def constraint_ids_in_explanation(lines: list[str]) -> set[int]:
    """The constraint ids :func:`explain_lines` lists (for tests and tools)."""
    found = set()
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("line ") and ":" in stripped:
            head = stripped[5:].split(":", 1)[0]
            if head.isdigit():
                found.add(int(head))
    return found


def premise_lines(cert: dict[str, Any]) -> list[int]:
    """Program lines of the constraints the answer rests on: every core and bound the facts cite.

    A fact shown by a model rests on every constraint (the model satisfies them all), so when no
    fact cites a core, all constraints are listed.
    """
    cited: set[int] = set()
    facts = [f for o in cert.get("options") or [] if isinstance(o, dict) for f in o.get("facts") or []]
    for fact in facts:
        if isinstance(fact, dict):
            cited.update(i for i in (fact.get("core") or []) + (fact.get("bounds") or []) if isinstance(i, int))
    if not cited:
        cited = {c["id"] for c in cert.get("constraints") or [] if isinstance(c, dict) and isinstance(c.get("id"), int)}
    return sorted(cited)
