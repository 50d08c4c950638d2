"""Logic-LM LP programs run on SWI-Prolog (language ``logiclm-lp-swipl``): the registry entry ``parse``/``solve``.

The same language as ``logiclm-lp`` (:mod:`symbolkg.solvers.lp.syntax`: the parser, the grammar; the answer
semantics of :mod:`symbolkg.solvers.lp.engine`), but the program is translated to tabled Prolog
(:func:`to_prolog`) and answered by SWI-Prolog instead of the in-process forward chainer. This is what the
router's ``prolog`` route runs: the LLM writes the LP language it has few-shot examples for,
and a real Prolog engine answers it.

Every SWI-Prolog query of this module goes through :func:`_run_query` (one call site of
:mod:`symbolkg.solvers.prolog.language`'s process wrapper).
"""

from __future__ import annotations

import json
from dataclasses import replace

from symbolkg.solvers.certificates import derivation
from symbolkg.solvers.lp.syntax import (
    ANSWER_FALSE,
    ANSWER_TRUE,
    ANSWER_UNKNOWN,
    Atom,
    GroundAtom,
    LPProgram,
    Term,
    Var,
    format_atom,
    parse,
)
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.prolog import language as prolog

__all__ = ["PROLOG_ANSWER_GOAL", "parse", "solve", "to_prolog"]


def _pl_atom(name: str) -> str:
    """A quoted Prolog atom: keeps LP case and avoids clashes with built-ins."""
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _pl_term(term: Term) -> str:
    return f"V_{term.name}" if isinstance(term, Var) else _pl_atom(term)


def _pl_goal(atom: Atom) -> str:
    args = [_pl_term(a) for a in atom.args] + ["true" if atom.value else "false"]
    return f"{_pl_atom(atom.predicate)}({', '.join(args)})"


#: The goal of to_prolog's query line. Its helpers (lp_answer/1, lp_holds/0,
#: lp_negated/0, lp_const/1) cannot clash with LP predicates, which always have
#: at least two arguments (one or more terms plus the truth value).
PROLOG_ANSWER_GOAL = "lp_answer(Answer)"


def _run_query(source: str, goal: str, limits: Limits) -> prolog.QueryResult:
    """The solutions of ``goal`` against the Prolog text ``source``, in a SWI-Prolog process within ``limits``.

    Raises:
        symbolkg.solvers.prolog.language.PrologUnavailable: SWI-Prolog cannot be started.
    """
    return prolog.run_query(source, goal, limits)


def to_prolog(program: LPProgram) -> str:
    """Translate an LP program into tabled SWI-Prolog text for :mod:`symbolkg.solvers.prolog.language`.

    Every predicate ``P`` becomes ``'P'(Args..., true|false)`` and is tabled, so
    cyclic rules terminate (the same least fixpoint the forward chainer computes).
    Head variables that do not occur in the body range over ``lp_const/1``, the
    program's constants. The ``% query:`` line asks ``lp_answer(Answer)``, which
    binds ``Answer`` to ``'True'``, ``'False'``, ``'Unknown'`` or ``'Inconsistent'``
    with the same meaning as :func:`symbolkg.solvers.lp.engine.solve`.

    Args:
        program: a parsed program.

    Returns:
        Prolog source text.
    """
    arity: dict[str, int] = {}
    atoms = list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query]
    for atom in atoms:
        arity.setdefault(atom.predicate, len(atom.args) + 1)
    for decl in program.predicates:
        arity.setdefault(decl.name, decl.arity + 1)
    out = ["% Translated from a Logic-LM LP program (symbolkg.solvers.lp.swipl.to_prolog)."]
    for name, n in arity.items():
        out.append(f":- table {_pl_atom(name)}/{n}.")
        # dynamic: a predicate with no clauses fails instead of raising an existence error.
        out.append(f":- dynamic {_pl_atom(name)}/{n}.")
    out.append(":- dynamic lp_const/1.")
    for const in program.constants():
        out.append(f"lp_const({_pl_atom(const)}).")
    for fact in program.facts:
        out.append(f"{_pl_goal(fact)}.  % LP line {fact.line}")
    for rule in program.rules:
        body_vars = {v.name for a in rule.body for v in a.variables()}
        for head in rule.head:
            goals = [_pl_goal(a) for a in rule.body]
            free = sorted({v.name for v in head.variables()} - body_vars)
            goals += [f"lp_const(V_{v})" for v in free]
            body = ", ".join(goals) if goals else "true"
            out.append(f"{_pl_goal(head)} :- {body}.  % LP line {rule.line}")
    q = program.query
    negated = Atom(q.predicate, q.args, not q.value, q.line)
    out += [
        f"lp_holds :- {_pl_goal(q)}.",
        f"lp_negated :- {_pl_goal(negated)}.",
        "lp_answer(A) :-",
        "    (   lp_holds, lp_negated -> A = 'Inconsistent'",
        "    ;   lp_holds -> A = 'True'",
        "    ;   lp_negated -> A = 'False'",
        "    ;   A = 'Unknown'",
        "    ).",
        f"% query: {PROLOG_ANSWER_GOAL}",
    ]
    return "\n".join(out) + "\n"


def solve(text: str, limits: Limits) -> Outcome:
    """Like :func:`symbolkg.solvers.lp.engine.solve`, but runs the :func:`to_prolog` translation in SWI-Prolog.

    Statuses and answers match the forward chainer's; ``backend`` is ``"swipl"``. ``proof`` holds
    the answer binding; ``certificate`` the derivation certificate SWI-Prolog finds in a second
    query (:func:`_prolog_certificate`; None when that runs out of the time the answer left).
    ``seconds`` is the time of the answer alone.

    Args:
        text: the LP program.
        limits: passed to :func:`_run_query`.

    Returns:
        The outcome.

    Raises:
        symbolkg.solvers.prolog.language.PrologUnavailable: SWI-Prolog cannot be started.
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as exc:
            return exc.to_outcome(seconds=sw.elapsed(), backend=prolog.BACKEND)
        source = to_prolog(program)
        query_line = source.count("\n")  # the '% query:' line is the last one
        result = _run_query(source, PROLOG_ANSWER_GOAL, limits)
    answer = result.solutions[0].bindings[0][1] if result.status == "ok" and result.solutions else None
    certificate = None
    left_s = limits.timeout_s - sw.seconds
    if answer in _PROLOG_ANSWERS and left_s > 0.01:
        # A second query, in the time the answer left: a certificate search that runs out costs no answer,
        # and both calls together stay inside the worker pool's limit.
        try:
            certificate = _prolog_certificate(
                text, program, source, _PROLOG_ANSWERS[answer], replace(limits, timeout_s=left_s)
            )
        # a proof too deep to read back, or output cut off mid-line: no certificate
        except (RecursionError, ValueError):
            certificate = None
    mapping = {
        "'True'": (Status.PROVED, ANSWER_TRUE),
        "'False'": (Status.DISPROVED, ANSWER_FALSE),
        "'Unknown'": (Status.UNKNOWN, ANSWER_UNKNOWN),
    }
    if answer in mapping:
        status, value = mapping[answer]
        return Outcome(
            status=status,
            answer=value,
            proof=f"Answer = {answer}",
            seconds=sw.seconds,
            backend=prolog.BACKEND,
            certificate=certificate,
        )
    if answer == "'Inconsistent'":
        return Outcome(
            status=Status.UNSAT,
            proof=f"Answer = {answer}",
            error_kind=ErrorKind.INCONSISTENT.value,  # as our engine says it: the worker may revise it
            error_message=f"the program is inconsistent: it derives both {program.query} and its negation",
            error_line=program.query.line,
            seconds=sw.seconds,
            backend=prolog.BACKEND,
            certificate=certificate,
        )
    return prolog.to_outcome(result, prolog.PrologProgram(source, PROLOG_ANSWER_GOAL, query_line), limits, sw.seconds)


_PROLOG_ANSWERS = {"'True'": ANSWER_TRUE, "'False'": ANSWER_FALSE, "'Unknown'": ANSWER_UNKNOWN, "'Inconsistent'": None}

#: The proof search added to :func:`to_prolog`'s text for a certificate. ``'lp-rule'(Kind, Head, Body,
#: Binding)`` lists every fact (``fact(Line)``) and rule head (``rule(Index)``, the index into
#: ``LPProgram.rules``); ``'lp-call'/1`` calls a (tabled) LP atom. The search proves a ground goal
#: by a rule whose body atoms all hold (the tables say which), never using a goal inside its own
#: proof, so it ends on cyclic rules; the tree is written as JSON, one line per goal. The names
#: contain '-', so no LP predicate can clash with them.
_PROLOG_PROOF = r"""
'lp-prove'(G, Anc, node(K, G, B, Ps)) :- 'lp-rule'(K, G, Body, B), 'lp-prove-all'(Body, [G|Anc], Ps).
'lp-prove-all'([], _, []).
'lp-prove-all'([G|Gs], Anc, [P|Ps]) :-
    'lp-call'(G), \+ memberchk(G, Anc), once('lp-prove'(G, Anc, P)), 'lp-prove-all'(Gs, Anc, Ps).
'lp-certificate'(Goals) :- forall(member(G, Goals), (once('lp-prove'(G, [], P)), 'lp-json'(P), nl)), write(end), nl.
'lp-closure'(N) :-
    findall(G, 'lp-call'(G), Gs0), sort(Gs0, Gs), length(Gs, N),
    forall(member(G, Gs), ('lp-json-atom'(G), nl)), write(end), nl.
'lp-json'(node(K, G, B, Ps)) :-
    write('{"k":'), 'lp-json-kind'(K), write(',"a":'), 'lp-json-atom'(G),
    write(',"b":['), 'lp-json-binding'(B), write('],"p":['), 'lp-json-list'(Ps), write(']}').
'lp-json-kind'(fact(L)) :- write('["fact",'), write(L), write(']').
'lp-json-kind'(rule(I)) :- write('["rule",'), write(I), write(']').
'lp-json-atom'(G) :- G =.. [P|Args], write('["'), write(P), write('",['), 'lp-json-strs'(Args), write(']]').
'lp-json-strs'([]).
'lp-json-strs'([A]) :- !, write('"'), write(A), write('"').
'lp-json-strs'([A|As]) :- write('"'), write(A), write('",'), 'lp-json-strs'(As).
'lp-json-binding'([]).
'lp-json-binding'([N-V]) :- !, write('["'), write(N), write('","'), write(V), write('"]').
'lp-json-binding'([N-V|Bs]) :- write('["'), write(N), write('","'), write(V), write('"],'), 'lp-json-binding'(Bs).
'lp-json-list'([]).
'lp-json-list'([P]) :- !, 'lp-json'(P).
'lp-json-list'([P|Ps]) :- 'lp-json'(P), write(','), 'lp-json-list'(Ps).
"""


def _prolog_certificate(text: str, program: LPProgram, source: str, answer: str | None, limits: Limits) -> dict | None:
    """The derivation certificate of SWI-Prolog's ``answer`` (:func:`derivation_certificate`'s format).

    SWI-Prolog itself finds the proof tree (True/False; both trees for an inconsistent program)
    or the set of all atoms it derives (Unknown), with the search of :data:`_PROLOG_PROOF` run on
    the same tabled translation that answered. None when that query fails, runs out of limits,
    or its output is cut off (the harness keeps 10,000 characters); a closure that is cut off
    keeps its count only, which the checker recomputes.
    """
    q = program.query
    query: GroundAtom = (q.predicate, tuple(str(a) for a in q.args), q.value)
    negation: GroundAtom = (q.predicate, query[1], not q.value)
    arity: dict[str, int] = {}
    for atom in list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query]:
        arity.setdefault(atom.predicate, len(atom.args) + 1)
    for decl in program.predicates:
        arity.setdefault(decl.name, decl.arity + 1)
    out = [_PROLOG_PROOF]
    for name, n in arity.items():
        params = ", ".join(f"A{i}" for i in range(n))
        out.append(f"'lp-call'({_pl_atom(name)}({params})) :- {_pl_atom(name)}({params}).")
    for fact in program.facts:
        out.append(f"'lp-rule'(fact({fact.line}), {_pl_goal(fact)}, [], []).")
    for index, rule in enumerate(program.rules):
        names = sorted({v.name for a in (*rule.body, *rule.head) for v in a.variables()})
        binding = "[" + ", ".join(f"{_pl_atom(v)}-V_{v}" for v in names) + "]"
        body = "[" + ", ".join(_pl_goal(a) for a in rule.body) + "]"
        for head in rule.head:
            out.append(f"'lp-rule'(rule({index}), {_pl_goal(head)}, {body}, {binding}).")
    cert_source = source + "\n".join(out) + "\n"

    def ground(atom: GroundAtom) -> str:
        return _pl_goal(Atom(atom[0], atom[1], atom[2]))

    if answer == ANSWER_UNKNOWN:
        result = _run_query(cert_source, "'lp-closure'(N)", limits)
        if result.status != "ok" or not result.solutions:
            return None
        count = int(result.solutions[0].bindings[0][1])
        lines = result.output.splitlines()
        if not lines or lines[-1] != "end":  # cut off: keep the count, the checker recomputes the atoms
            return derivation.closure_certificate(
                producer=prolog.BACKEND, query=query, query_line=q.line, atoms=None, count=count
            )
        atoms = [_json_atom(json.loads(line)) for line in lines[:-1]]
        if len(atoms) != count:
            return None
        return derivation.closure_certificate(producer=prolog.BACKEND, query=query, query_line=q.line, atoms=atoms)
    goals = {ANSWER_TRUE: (query,), ANSWER_FALSE: (negation,), None: (query, negation)}[answer]
    result = _run_query(cert_source, f"'lp-certificate'([{', '.join(ground(g) for g in goals)}])", limits)
    lines = result.output.splitlines()
    if result.status != "ok" or not result.solutions or not lines or lines[-1] != "end":
        return None
    steps: list[dict] = []
    ids: dict[GroundAtom, int] = {}
    source_lines = text.splitlines()
    for line in lines[:-1]:  # one tree per goal; for True/False the goal's step comes last
        _flatten_proof(json.loads(line), program, source_lines, ids, steps)
    return derivation.proof_certificate(
        producer=prolog.BACKEND, answer=answer, query=query, query_line=q.line, steps=steps
    )


def _json_atom(encoded: list) -> GroundAtom:
    """``["Cold", ["Bob", "true"]]`` (as :data:`_PROLOG_PROOF` writes an atom) -> ``("Cold", ("Bob",), True)``."""
    predicate, args = encoded
    return (predicate, tuple(args[:-1]), args[-1] == "true")


def _flatten_proof(
    node: dict, program: LPProgram, lines: list[str], ids: dict[GroundAtom, int], steps: list[dict]
) -> int:
    """Add the steps of SWI-Prolog's proof tree ``node`` (premises first, each atom once); returns its id."""
    atom = _json_atom(node["a"])
    if atom in ids:
        return ids[atom]
    # The search never uses a goal inside its own proof, so ``atom`` is not among its premises' steps.
    body = [_flatten_proof(child, program, lines, ids, steps) for child in node["p"]]
    ids[atom] = len(ids) + 1
    kind, where = node["k"]
    if kind == "fact":
        steps.append(
            {
                "id": ids[atom],
                "atom": format_atom(*atom),
                "rule": None,
                "line": where,
                "rule_text": lines[where - 1].split(":::", 1)[0].strip(),
                "binding": {},
                "body": [],
            }
        )
    else:
        rule = program.rules[where]
        steps.append(
            {
                "id": ids[atom],
                "atom": format_atom(*atom),
                "rule": rule.line,
                "line": rule.line,
                "rule_text": rule.text,
                "binding": {f"${k}": v for k, v in sorted(node["b"])},
                "body": body,
            }
        )
    return ids[atom]
