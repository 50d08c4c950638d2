"""Derivation certificates: the proof tree of a rule-based answer, and its independent checker.

Produced for the Logic-LM LP language (``logiclm-lp``, answered by the forward chainer of
:mod:`symbolkg.solvers.lp.engine`, which keeps the first derivation of every atom; ``logiclm-lp-swipl``,
answered by SWI-Prolog, where a proof search over Prolog's own tables finds the tree,
:func:`symbolkg.solvers.lp.swipl.solve`). The program's
semantics (:mod:`symbolkg.solvers.lp.engine`): ``P(c, True)`` and ``P(c, False)`` are two atoms; the
answer is ``True`` when the query atom is derivable, ``False`` when its negation (the same atom
with the other truth value) is, ``Unknown`` when neither is. (Datasets posed under the closed
world read ``Unknown`` as ``False``, :func:`symbolkg.jobs.core.answers.interpret`: negation as
failure. The certificate of both readings is the same: neither atom is derivable.) An
inconsistent program has no answer and no certificate.

Fields (version 1; every atom is written ``Pred(arg, ..., True|False)``, the truth value last,
constants spelled as the parser names them):

* ``kind``: ``"derivation"``; ``version``: ``1``; ``producer``: the backend that answered
  (``forward-chainer``, ``swipl``);
* ``answer``: ``"True"``, ``"False"`` or ``"Unknown"``; ``null`` for an inconsistent program
  (``Status.UNSAT``, no answer): its ``steps`` prove both the query and its negation;
* ``query``: ``{"atom", "line"}``, the program's query atom (a ``!``/``Not`` already folded
  into its truth value) and its 1-based program line;
* for ``True``/``False``, ``steps``: the proof tree of the deciding atom (the query for True,
  its negation for False), premises before conclusions, each atom once; the last step is the
  deciding atom. Each step is ``{"id", "atom", "rule", "line", "rule_text", "binding", "body"}``:

  - ``id``: an int, unique;
  - ``atom``: the ground atom the step establishes;
  - ``rule``: the program line of the rule applied, or ``null`` for a fact;
  - ``line``: the program line of the rule or fact (equal to ``rule`` for a rule);
  - ``rule_text``: for a rule, its text as the parser keeps it (``Rule.text``: the statement
    without its comment); for a fact, the program line up to its ``:::`` comment, stripped;
  - ``binding``: ``{"$x": constant}``, a value for every variable of the rule (empty for a fact;
    a variable of the conclusion only ranges over the program's constants);
  - ``body``: the ids of earlier steps that establish the rule's premises, in the rule's order.

* for ``Unknown``, ``closure``: what the search found, so a checker can confirm that neither
  atom is derivable: ``{"method": "negation_as_failure", "count": N, "atoms": {...}}``. ``atoms``
  is every derived atom (the least fixpoint), grouped compactly as ``{"Pred/True": ["a", "a, b",
  ...]}`` (each entry the arguments joined by ``", "``; constants never contain a comma), or
  ``null`` when there are more than :data:`MAX_CLOSURE_ATOMS`, so that the checker recomputes it.

The checker (:func:`check`) trusts none of it. It reads the program with
:func:`symbolkg.solvers.lp.syntax.parse` (the syntax module only; no engine code runs) and:

* for a proof: every cited fact is a fact of the program on that line with that text, every
  cited rule is a rule on that line with that text; the binding gives every rule variable a
  program constant, and applied to the rule gives the step's atom (one of the conclusions) and,
  in order, the atoms of the body steps, each an earlier step; the last step is the query
  (True) or its negation (False). Then its own small evaluator computes the least fixpoint and
  confirms that the opposite atom is not derivable (else the program is inconsistent and has no
  answer);
* for ``Unknown``: the closure contains every fact, is closed under every rule instance (no rule
  adds an atom it lacks), has the stated count, and holds neither the query nor its negation. A
  set that contains the facts and is closed under the rules contains the least fixpoint, so
  neither atom is derivable. When ``atoms`` is ``null`` the checker computes the fixpoint itself
  and says so in the verdict's ``reason``;
* in both cases: the certificate's answer and query are the row's and the program's.

:func:`explain_lines` renders a certificate for people (``symbolkg explain``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from typing import Any

from symbolkg.solvers.certificates import Verdict, field_of, symba_tree
from symbolkg.solvers.lp.syntax import parse
from symbolkg.solvers.outcomes import CertificateError, Deadline, Limits, ProgramError

KIND = "derivation"
VERSION = 1
#: Above this many derived atoms an ``Unknown`` certificate stores only the count.
MAX_CLOSURE_ATOMS = 5000
#: The program languages whose derivation certificates :func:`check` understands.
LANGUAGES = ("logiclm-lp", "logiclm-lp-swipl", "symba")
CHECKER = "derivation-checker"
CLOSURE_METHOD = "negation_as_failure"

#: A ground atom: (predicate, constants, truth value).
GroundAtom = tuple[str, tuple[str, ...], bool]


def format_atom(atom: GroundAtom) -> str:
    """``("Cold", ("Bob",), True)`` -> ``"Cold(Bob, True)"``."""
    predicate, args, value = atom
    return f"{predicate}({', '.join((*args, str(value)))})"


# --------------------------------------------------------------------------- producing


def proof_certificate(
    *, producer: str, answer: str | None, query: GroundAtom, query_line: int, steps: list[dict[str, Any]]
) -> dict[str, Any]:
    """A True/False (or, ``answer`` None, inconsistency) certificate from ``steps``, premises first."""
    return {
        "kind": KIND,
        "version": VERSION,
        "producer": producer,
        "answer": answer,
        "query": {"atom": format_atom(query), "line": query_line},
        "steps": steps,
    }


def closure_certificate(
    *, producer: str, query: GroundAtom, query_line: int, atoms: Iterable[GroundAtom] | None, count: int | None = None
) -> dict[str, Any]:
    """An Unknown certificate: every derived atom, or only their count.

    Only the count is stored when there are more than :data:`MAX_CLOSURE_ATOMS` atoms, or when
    the producer has the count but not the atoms (``atoms`` None, ``count`` given).
    """
    listed = None if atoms is None else list(atoms)
    if listed is not None:
        count = len(listed)
    if count is None:
        raise ValueError("closure_certificate needs the atoms or their count")
    encoded = encode_atoms(listed) if listed is not None and count <= MAX_CLOSURE_ATOMS else None
    return {
        "kind": KIND,
        "version": VERSION,
        "producer": producer,
        "answer": "Unknown",
        "query": {"atom": format_atom(query), "line": query_line},
        "closure": {"method": CLOSURE_METHOD, "count": count, "atoms": encoded},
    }


def encode_atoms(atoms: Iterable[GroundAtom]) -> dict[str, list[str]]:
    """``{"Pred/True": ["a", "a, b"]}``: ground atoms grouped by predicate and truth value."""
    out: dict[str, list[str]] = {}
    for predicate, args, value in atoms:
        out.setdefault(f"{predicate}/{value}", []).append(", ".join(args))
    return out


def decode_atoms(encoded: Any) -> set[GroundAtom]:
    """The atoms of :func:`encode_atoms`'s output; raises CertificateError when malformed."""
    if not isinstance(encoded, dict):
        raise CertificateError('closure.atoms must be an object {"Pred/True": ["a, b", ...]}')
    atoms: set[GroundAtom] = set()
    for key, entries in encoded.items():
        predicate, _, value = str(key).rpartition("/")
        if not predicate or value not in ("True", "False") or not isinstance(entries, list):
            raise CertificateError(f'closure.atoms: bad group {key!r} (expected "Pred/True" or "Pred/False" -> list)')
        for entry in entries:
            if not isinstance(entry, str):
                raise CertificateError(f"closure.atoms[{key!r}]: entries are strings, got {entry!r}")
            atoms.add((predicate, tuple(a.strip() for a in entry.split(",")), value == "True"))
    return atoms


# --------------------------------------------------------------------------- checking


def _ground(atom: Any, binding: dict[str, str]) -> GroundAtom:
    """``atom`` (an :class:`symbolkg.solvers.lp.syntax.Atom`) with its variables replaced by ``binding``."""
    args = tuple(binding[str(a)] if not isinstance(a, str) else a for a in atom.args)
    return (atom.predicate, args, atom.value)


def _variables(rule: Any) -> set[str]:
    return {str(a) for atom in (*rule.body, *rule.head) for a in atom.args if not isinstance(a, str)}


def _constants(program: Any) -> list[str]:
    """Every constant the program writes, in order: the domain of conclusion-only variables."""
    seen: dict[str, None] = {}
    for atom in (*program.facts, *(a for r in program.rules for a in (*r.body, *r.head)), program.query):
        for arg in atom.args:
            if isinstance(arg, str):
                seen.setdefault(arg, None)
    return list(seen)


def _instances(
    rule: Any,
    atoms: set[GroundAtom],
    index: dict[tuple[str, bool], list[tuple[str, ...]]],
    constants: list[str],
    deadline: Deadline,
) -> Iterator[tuple[dict[str, str], GroundAtom]]:
    """Every (binding, conclusion) of ``rule`` whose premises all lie in ``atoms`` (a nested-loop join)."""

    def join(i: int, binding: dict[str, str]) -> Iterator[dict[str, str]]:
        if i == len(rule.body):
            yield binding
            return
        premise = rule.body[i]
        for args in list(index.get((premise.predicate, premise.value), ())):
            deadline.tick()
            if len(args) != len(premise.args):
                continue
            extended = dict(binding)
            for term, value in zip(premise.args, args, strict=True):
                if isinstance(term, str):
                    if term != value:
                        break
                elif extended.setdefault(str(term), value) != value:
                    break
            else:
                yield from join(i + 1, extended)

    for binding in join(0, {}):
        free = sorted({str(a) for h in rule.head for a in h.args if not isinstance(a, str)} - binding.keys())
        for values in itertools.product(constants, repeat=len(free)):
            deadline.tick()
            full = {**binding, **dict(zip(free, values, strict=True))}
            for head in rule.head:
                yield full, _ground(head, full)


def _index(atoms: Iterable[GroundAtom]) -> dict[tuple[str, bool], list[tuple[str, ...]]]:
    index: dict[tuple[str, bool], list[tuple[str, ...]]] = {}
    for predicate, args, value in atoms:
        index.setdefault((predicate, value), []).append(args)
    return index


def least_fixpoint(program: Any, deadline: Deadline) -> set[GroundAtom]:
    """Every atom ``program`` derives: naive iteration of all rules until nothing is added.

    Deliberately the plainest algorithm (no semi-naive deltas, no derivation bookkeeping), so
    that it shares nothing with the forward chainer it re-checks.
    """
    atoms = {(f.predicate, tuple(f.args), f.value) for f in program.facts}
    constants = _constants(program)
    while True:
        index = _index(atoms)
        new = {
            head for rule in program.rules for _, head in _instances(rule, atoms, index, constants, deadline)
        } - atoms
        if not new:
            return atoms
        atoms |= new


def _check_step(
    step: Any,
    lines: list[str],
    rules_at: dict[int, list[Any]],
    facts_at: dict[int, list[GroundAtom]],
    constants: set[str],
    proved: dict[Any, str],
) -> None:
    """One step follows from the program and earlier steps (``proved``: id -> atom); raises CertificateError."""
    if not isinstance(step, dict):
        raise CertificateError(f"a step must be an object, got {step!r}")
    sid = step.get("id")
    where = f"step {sid!r}"
    if not isinstance(sid, (int, str)) or isinstance(sid, bool) or sid in proved:
        raise CertificateError(f"{where}: ids must be unique ints or strings")
    atom = field_of(step, "atom", str, where)
    line = field_of(step, "line", int, where)
    text = field_of(step, "rule_text", str, where)
    binding = field_of(step, "binding", dict, where)
    body = field_of(step, "body", list, where)
    rule_line = step.get("rule")
    if rule_line is None:  # a fact
        if not 1 <= line <= len(lines) or lines[line - 1].split(":::", 1)[0].strip() != text.strip():
            raise CertificateError(
                f"{where} cites the fact {text!r} on line {line}, but the program's line {line} reads "
                f"{(lines[line - 1] if 1 <= line <= len(lines) else '(no such line)')!r}"
            )
        if atom not in {format_atom(f) for f in facts_at.get(line, [])}:
            raise CertificateError(f"{where}: {atom} is not a fact of line {line}")
        if binding or body:
            raise CertificateError(f"{where}: a fact has no binding and no premises")
        proved[sid] = atom
        return
    if rule_line != line:
        raise CertificateError(f"{where}: rule {rule_line!r} and line {line} differ")
    candidates = [r for r in rules_at.get(line, []) if r.text == text]
    if not candidates:
        said = "; ".join(repr(r.text) for r in rules_at.get(line, [])) or "no rule"
        raise CertificateError(f"{where} cites the rule {text!r} on line {line}, but the program has {said} there")
    for name, value in binding.items():
        if not isinstance(name, str) or not isinstance(value, str) or value not in constants:
            raise CertificateError(
                f"{where}: the binding {name!r}={value!r} does not give a variable a constant of the program"
            )
    for ident in body:
        if isinstance(ident, bool) or not isinstance(ident, (int, str)) or ident not in proved:
            raise CertificateError(f"{where}: premise {ident!r} is not an earlier step")
    premises = [proved[i] for i in body]
    problems = []
    for rule in candidates:
        if _variables(rule) != set(binding):
            problems.append(f"the binding names {sorted(binding)}, the rule's variables are {sorted(_variables(rule))}")
            continue
        heads = {format_atom(_ground(h, binding)) for h in rule.head}
        wanted = [format_atom(_ground(b, binding)) for b in rule.body]
        if atom not in heads:
            problems.append(f"the binding gives {', '.join(sorted(heads))}, not {atom}")
        elif premises != wanted:
            problems.append(f"the binding needs the premises {wanted}, the step cites {premises}")
        else:
            proved[sid] = atom
            return
    raise CertificateError(f"{where} (rule, line {line}): {problems[0]}")


def check(
    cert: dict[str, Any], *, language: str, program: str, answer: str | None, limits: Limits | None = None
) -> Verdict:
    """Re-check a derivation certificate (module docstring) with this module's own evaluator.

    Args:
        cert: the certificate.
        language: the row's program language (:data:`LANGUAGES`).
        program: the program text.
        answer: the row's answer.
        limits: ``timeout_s`` bounds the check (a check that runs out is ``unverifiable``).

    Returns:
        The verdict.

    Raises:
        CertificateError: the certificate is malformed or does not follow from the program.
    """
    if cert.get("format") == "tree" or language == "symba":  # SymBa's proof trees: their own checker
        return symba_tree.check(cert, language=language, program=program, answer=answer, limits=limits)
    limits = limits or Limits()
    t0 = time.perf_counter()
    if language not in LANGUAGES:
        return Verdict(
            "unverifiable",
            f"derivation certificates of language {language!r} are not checked (known: {', '.join(LANGUAGES)})",
            CHECKER,
        )
    if cert.get("version") != VERSION:
        return Verdict(
            "unverifiable",
            f"derivation certificate version {cert.get('version')!r} unknown (this checker: {VERSION})",
            CHECKER,
        )
    try:
        parsed = parse(program)
    except ProgramError as err:
        raise CertificateError(f"the program does not parse, so it has no answer: {err}") from None
    claimed = cert.get("answer")
    if claimed not in ("True", "False", "Unknown", None):
        raise CertificateError(f"answer must be True, False, Unknown or null, got {claimed!r}")
    if claimed != answer:
        raise CertificateError(f"the certificate proves {claimed!r}, the row answers {answer!r}")
    query, negation = _stated_query(cert, parsed)
    deadline = Deadline(limits.timeout_s)
    try:
        if claimed == "Unknown":
            reason = _check_closure(cert, parsed, query, negation, deadline)
        elif claimed is None:
            proved = _check_proof(cert, parsed, program.splitlines())
            missing = [format_atom(a) for a in (query, negation) if format_atom(a) not in proved]
            if missing:
                raise CertificateError(
                    f"an inconsistency certificate must prove the query and its negation; "
                    f"it does not prove {', '.join(missing)}"
                )
            reason = "the program is inconsistent: it derives the query and its negation"
        else:
            goal, opposite = (query, negation) if claimed == "True" else (negation, query)
            proved = _check_proof(cert, parsed, program.splitlines())
            last = proved[-1]
            if last != format_atom(goal):
                raise CertificateError(f"the proof ends with {last}, but answering {claimed} needs {format_atom(goal)}")
            if opposite in least_fixpoint(parsed, deadline):
                raise CertificateError(
                    f"the program also derives {format_atom(opposite)}: it is inconsistent and has no answer"
                )
            reason = ""
    except TimeoutError:
        return Verdict(
            "unverifiable",
            f"the check did not finish within {limits.timeout_s:g} s",
            CHECKER,
            round(time.perf_counter() - t0, 6),
        )
    return Verdict("verified", reason, CHECKER, round(time.perf_counter() - t0, 6))


def _stated_query(cert: dict[str, Any], parsed: Any) -> tuple[GroundAtom, GroundAtom]:
    """The program's query and its negation, once the certificate is found to state that query."""
    q = parsed.query
    query: GroundAtom = (q.predicate, tuple(q.args), q.value)
    negation: GroundAtom = (q.predicate, tuple(q.args), not q.value)
    stated = field_of(cert, "query", dict, "the certificate")
    if stated.get("atom") != format_atom(query) or stated.get("line") != q.line:
        raise CertificateError(
            f"the certificate's query {stated.get('atom')!r} (line {stated.get('line')!r}) is not the "
            f"program's, {format_atom(query)} (line {q.line})"
        )
    return query, negation


def _check_proof(cert: dict[str, Any], program: Any, lines: list[str]) -> list[str]:
    """Check every step (module docstring); returns the atoms proved, in order."""
    steps = field_of(cert, "steps", list, "the certificate")
    if not steps:
        raise CertificateError("the proof has no steps")
    rules_at: dict[int, list[Any]] = {}
    for rule in program.rules:
        rules_at.setdefault(rule.line, []).append(rule)
    facts_at: dict[int, list[GroundAtom]] = {}
    for fact in program.facts:
        facts_at.setdefault(fact.line, []).append((fact.predicate, tuple(fact.args), fact.value))
    constants = set(_constants(program))
    proved: dict[Any, str] = {}
    for step in steps:
        _check_step(step, lines, rules_at, facts_at, constants, proved)
    return list(proved.values())


def _check_closure(
    cert: dict[str, Any], program: Any, query: GroundAtom, negation: GroundAtom, deadline: Deadline
) -> str:
    closure = field_of(cert, "closure", dict, "the certificate")
    if closure.get("method") != CLOSURE_METHOD:
        raise CertificateError(f"closure.method must be {CLOSURE_METHOD!r}, got {closure.get('method')!r}")
    count = field_of(closure, "count", int, "closure")
    if closure.get("atoms") is None:
        atoms = least_fixpoint(program, deadline)
        if len(atoms) != count:
            raise CertificateError(
                f"the closure is said to hold {count} atoms; the checker's fixpoint holds {len(atoms)}"
            )
        reason = f"closure of {len(atoms)} atoms recomputed by the checker (the certificate stores only the count)"
    else:
        atoms = decode_atoms(closure["atoms"])
        if len(atoms) != count:
            raise CertificateError(f"the closure lists {len(atoms)} distinct atoms but says {count}")
        for fact in program.facts:
            if (fact.predicate, tuple(fact.args), fact.value) not in atoms:
                raise CertificateError(
                    f"the closure lacks the fact {format_atom((fact.predicate, tuple(fact.args), fact.value))} "
                    f"(line {fact.line})"
                )
        index, constants = _index(atoms), _constants(program)
        for rule in program.rules:
            for binding, head in _instances(rule, atoms, index, constants, deadline):
                if head not in atoms:
                    shown = ", ".join(f"{k}={v}" for k, v in sorted(binding.items()))
                    raise CertificateError(
                        f"the closure is not closed: rule line {rule.line} with {shown} derives "
                        f"{format_atom(head)}, which it lacks"
                    )
        reason = ""
    for atom in (query, negation):
        if atom in atoms:
            raise CertificateError(
                f"{format_atom(atom)} is derivable (it is in the closure), so the answer is not Unknown"
            )
    return reason


# --------------------------------------------------------------------------- explaining


def explain_lines(cert: dict[str, Any]) -> list[str]:
    """The certificate for people: one line per proof step, or the closure for Unknown.

    A proof step reads ``[id] atom  <- rule text [$x=c]  (rule, line N; from [i], [j])``, a fact
    ``[id] atom  <- fact, line N``. An Unknown certificate gives one line saying what was searched,
    then one line per predicate and truth value with the atoms of the closure.
    """
    if cert.get("format") == "tree":  # SymBa's proof trees
        return symba_tree.explain_lines(cert)
    query = cert.get("query") or {}
    answer = cert.get("answer") or "Inconsistent (no answer)"
    head = f"{answer}: query {query.get('atom')} (line {query.get('line')}), by {cert.get('producer')}"
    lines = [head]
    if "closure" in (cert or {}):
        closure = cert["closure"]
        lines.append(
            f"neither the query nor its negation is derivable: the {closure.get('count')} derived atoms "
            f"are closed under every rule ({closure.get('method')})"
        )
        if closure.get("atoms") is None:
            lines.append("  (the atoms were not stored: too many; the checker recomputes them)")
        else:
            for group, entries in closure["atoms"].items():
                predicate, _, value = group.rpartition("/")
                lines.append(f"  {'; '.join(f'{predicate}({e}, {value})' for e in entries)}")
        return lines
    for step in cert.get("steps", []):
        if step.get("rule") is None:
            lines.append(f"[{step['id']}] {step['atom']}  <- fact, line {step['line']}")
        else:
            binding = ", ".join(f"{k}={v}" for k, v in step["binding"].items())
            premises = ", ".join(f"[{i}]" for i in step["body"]) or "no premises"
            lines.append(
                f"[{step['id']}] {step['atom']}  <- {step['rule_text']}"
                + (f" [{binding}]" if binding else "")
                + f"  (rule, line {step['line']}; from {premises})"
            )
    return lines


def premise_lines(cert: dict[str, Any]) -> list[int]:
    """Program lines of the facts and rules the proof uses, in proof order (none for Unknown)."""
    if cert.get("format") == "tree":  # SymBa's proof trees
        return symba_tree.premise_lines(cert)
    out: list[int] = []
    for step in cert.get("steps") or []:
        line = step.get("line") if isinstance(step, dict) else None
        if isinstance(line, int) and line not in out:
            out.append(line)
    return out
