"""SymBa proof-tree certificates, and their checker: the prover's tree against a bottom-up model.

Produced for the SymBa clause language (``symba``, :mod:`symbolkg.solvers.symba.syntax`), answered by
its top-down tabled SLDNF prover (:mod:`symbolkg.solvers.symba.engine`): ``True`` when the query
holds (with the prover's justification tree), ``False`` when the search was complete without a
proof (closed world: negation as failure) or the program is inconsistent (a denial ``not h :-
body.`` is violated, so SymBa's solver proves no query). These certificates are of kind
``derivation`` with ``format: "tree"``; :mod:`.derivation` hands them to this module.

Fields (version 1; atoms, literals and clauses written as :func:`symbolkg.solvers.symba.terms_syntax.format_clause`
and friends print them, so that :func:`symbolkg.solvers.symba.syntax.parse` reads them back):

* ``kind``: ``"derivation"``; ``format``: ``"tree"``; ``version``: ``1``; ``producer``:
  ``"symba-chainer"``;
* ``answer``: ``"True"`` or ``"False"``;
* ``query``: ``{"goal", "line"}``, the program's query as written (``is(bob, red)``,
  ``not is(eric, round)``, ``answer(X)``) and its 1-based program line;
* for ``True``, ``tree``: the proof, a node of one of three sorts:

  - a clause node ``{"goal", "line", "clause", "binding", "children"}``: ``goal`` the atom it
    proves; ``line`` and ``clause`` the program line and text (``format_clause``) of the
    clause applied (for a disjunction in braces, a ``#count`` or pooling: the alternative
    used, as the parser expands it); ``binding`` ``{"X": "term"}``, a value for every variable
    of the clause (an anonymous ``_`` is named ``_#k``, the k-th of its clause); ``children``
    one node per body literal, in order. A value may hold a variable (``A``, ``B``, ...): the
    proof then holds for every value of it (a fact ``p(X).`` proves ``p(A)``).
    ``truncated: true`` marks a node the prover did not expand (a tree deeper or larger than
    it writes out);
  - a builtin leaf ``{"goal": "3 = 2 + 1", "builtin": true}``: a comparison instance;
  - a negation-as-failure leaf ``{"goal": "not p(a)", "naf": true, "atom": "p(a)"}``: ``atom``
    was searched and has no proof. A variable in it ranges over everything (``not p(a, B)``:
    no ``p(a, anything)``). For a query ``not g`` the tree is one such leaf.

* for ``False``, ``closure``: ``{"method": "negation_as_failure", "searched": goal}``: the
  search for the query (``goal`` as in ``query``) was complete and found no proof; for a query
  ``not g`` this says that ``g`` has a proof. Or ``{"method": "inconsistent", "searched": goal,
  "denial": {"line", "statement"}}``: the denial on that line (text as ``format_clause`` prints
  it) is violated, so no query holds.

The checker (:func:`check`) does not trust the top-down search and imports none of it. It reads
the program and the certificate's terms with :mod:`symbolkg.solvers.symba.syntax`, evaluates
arithmetic and comparisons with :mod:`symbolkg.solvers.symba.arith_eval`, and decides atoms on
the bottom-up model of :mod:`symbolkg.solvers.symba.model_eval`. Then:

* for ``True``: every clause node cites a clause of the program on that line with that text;
  the binding gives every variable of the clause a value, and applied to the clause gives the
  node's goal as head and, in order, the children's goals as body (a comparison instance
  unevaluated); builtin leaves evaluate to true; the root is an instance of the query (for
  ``not g``: one negation leaf of ``g`` itself). Each negation leaf's atom must have no
  instance in the program's model; and no denial of the program is violated in it;
* for ``False`` by negation as failure: the query has no instance in that model (for
  ``not g``: ``g`` has one); by inconsistency: the cited denial is a denial of the program
  and some instance of its body and atom holds in the model;
* in all cases the certificate's answer and query are the row's and the program's.

The model may leave the check ``unverifiable`` (recursion through negation, a domain without
end, :data:`~symbolkg.solvers.symba.model_eval.MAX_MODEL_ATOMS` atoms, no closure within ``limits.timeout_s``;
:mod:`symbolkg.solvers.symba.model_eval`), and so does a truncated proof tree.

:func:`explain_lines` renders a certificate for people (``symbolkg explain``);
:func:`premise_lines` gives the program lines a proof uses.
"""

from __future__ import annotations

import time
from typing import Any

from symbolkg.solvers.certificates import Verdict, field_of
from symbolkg.solvers.outcomes import CertificateError, Deadline, Limits, ProgramError
from symbolkg.solvers.symba.model_eval import (
    INCONSISTENT_TARGET,
    Model,
    Unverifiable,
    compare_literal,
    same_literal,
    same_term,
    subst,
    variables,
)
from symbolkg.solvers.symba.syntax import from_prolog, parse, parse_literal, parse_term
from symbolkg.solvers.symba.terms_syntax import (
    Atom,
    Clause,
    Comparison,
    Expr,
    Goal,
    Naf,
    Program,
    Undefined,
    Var,
    format_atom,
    format_clause,
    format_goal,
    format_literal,
)

KIND = "derivation"
FORMAT = "tree"
VERSION = 1
PRODUCER = "symba-chainer"
LANGUAGE = "symba"
#: Prolog rows (the prolog-agent method) whose answer SymBa re-derived: checked on
#: :func:`symbolkg.solvers.symba.syntax.from_prolog` of the row's program.
PROLOG = "prolog"
CHECKER = "bottom-up-evaluator"
CLOSURE_METHOD = "negation_as_failure"
#: The closure of a ``False`` answer of an inconsistent program.
INCONSISTENT_METHOD = "inconsistent"


# --------------------------------------------------------------------------- producing


def certificate(program: Program, result: Any, answer: str) -> dict[str, Any]:
    """The certificate of ``answer`` (``"True"``/``"False"``) that :func:`symbolkg.solvers.symba.engine.prove` found.

    Args:
        program: the parsed program.
        result: the prover's :class:`~symbolkg.solvers.symba.engine.ProofResult` (its ``tree`` and
            ``violated`` are read).
        answer: ``"True"`` or ``"False"``.

    Raises:
        ValueError: ``answer`` is neither, or a ``True`` result has no proof tree.
    """
    goal = format_goal(program.goal)
    cert: dict[str, Any] = {
        "kind": KIND,
        "format": FORMAT,
        "version": VERSION,
        "producer": PRODUCER,
        "answer": answer,
        "query": {"goal": goal, "line": program.goal.source_line or None},
    }
    if answer == "True":
        if not isinstance(result.tree, dict):
            raise ValueError("a proved result without a proof tree has no certificate")
        cert["tree"] = _certificate_node(result.tree)
    elif answer == "False" and getattr(result, "violated", None):
        violated = result.violated
        cert["closure"] = {
            "method": INCONSISTENT_METHOD,
            "searched": goal,
            "denial": {"line": violated["line"], "statement": violated["statement"]},
        }
    elif answer == "False":
        cert["closure"] = {"method": CLOSURE_METHOD, "searched": goal}
    else:
        raise ValueError(f"SymBa certificates are for True/False answers, got {answer!r}")
    return cert


def _certificate_node(node: dict[str, Any]) -> dict[str, Any]:
    """One node of :attr:`symbolkg.solvers.symba.engine.ProofResult.tree` in the certificate's format."""
    goal = str(node["goal"])
    if node.get("naf"):
        return {"goal": goal, "naf": True, "atom": goal.removeprefix("not ").strip()}
    if node.get("builtin"):
        return {"goal": goal, "builtin": True}
    out: dict[str, Any] = {
        "goal": goal,
        "line": node.get("line"),
        "clause": node.get("clause"),
        "binding": dict(node.get("bindings") or {}),
        "children": [_certificate_node(c) for c in node.get("children") or []],
    }
    if node.get("truncated"):
        out["truncated"] = True
    return out


# --------------------------------------------------------------------------- tree helpers


def _clause_variables(clause: Clause) -> list[Var]:
    out: dict[Var, None] = {}
    for part in (clause.head, *clause.body):
        variables(part, out)
    return list(out)


def _var_key(v: Var) -> str:
    """The binding's name of a clause variable (as the prover writes it)."""
    return f"_#{v.anon}" if v.anon else v.name


def _instance(lit: Any, env: dict[Var, Any]) -> Any:
    """A body literal or head with ``env`` applied (comparisons left unevaluated, as the tree prints them)."""
    if isinstance(lit, Atom):
        return Atom(lit.pred, tuple(subst(a, env) for a in lit.args))
    if isinstance(lit, Naf):
        return Naf(_instance(lit.atom, env))
    return Comparison(lit.op, subst(lit.left, env, False), subst(lit.right, env, False))


# --------------------------------------------------------------------------- checking


def _read_literal(text: Any, where: str) -> Any:
    if not isinstance(text, str):
        raise CertificateError(f"{where}: the goal must be a string, got {text!r}")
    try:
        return parse_literal(text)
    except ProgramError as exc:
        raise CertificateError(f"{where}: unreadable goal {text!r}: {exc.message}") from None


def _read_term(text: Any, where: str) -> Any:
    if not isinstance(text, str):
        raise CertificateError(f"{where}: a binding value must be a string, got {text!r}")
    try:
        return parse_term(text)
    except ProgramError as exc:
        raise CertificateError(f"{where}: unreadable binding value {text!r}: {exc.message}") from None


class _TreeCheck:
    """The structural check of a proof tree; collects the negation leaves for the model."""

    def __init__(self, program: Program) -> None:
        self.clauses_at: dict[int, list[Clause]] = {}
        for clause in program.clauses:
            self.clauses_at.setdefault(clause.source_line, []).append(clause)
        self.negations: list[tuple[str, Atom]] = []  # (path, atom)
        self.values: list[Any] = []
        self.nodes = 0

    def run(self, root: Any) -> None:
        work: list[tuple[Any, str, Any]] = [(root, "root", None)]
        while work:
            node, path, expected = work.pop()
            if not isinstance(node, dict):
                raise CertificateError(f"{path}: a node must be an object, got {node!r}")
            literal = _read_literal(node.get("goal"), path)
            if expected is not None and not same_literal(literal, expected):
                raise CertificateError(
                    f"{path}: the parent's clause needs `{format_literal(expected)}` here, "
                    f"the node proves `{node.get('goal')}`"
                )
            if node.get("naf"):
                self._negation(node, literal, path)
            elif node.get("builtin"):
                _check_builtin(literal, path)
            else:
                work.extend(reversed(self._clause_node(node, literal, path)))

    def _negation(self, node: dict[str, Any], literal: Any, path: str) -> None:
        if not isinstance(literal, Naf):
            raise CertificateError(f"{path}: a negation leaf's goal must be `not atom`, found {node.get('goal')!r}")
        atom = _read_literal(node.get("atom"), f"{path}.atom")
        if not same_literal(atom, literal.atom):
            raise CertificateError(
                f"{path}: the searched atom {node.get('atom')!r} is not the one in {node.get('goal')!r}"
            )
        if node.get("children"):
            raise CertificateError(f"{path}: a negation leaf has no children")
        self.negations.append((path, atom))
        self.values.extend(atom.args)

    def _clause_node(self, node: dict[str, Any], literal: Any, path: str) -> list[tuple[Any, str, Any]]:
        """Check one clause node; returns its children with the literal each must prove."""
        self.nodes += 1
        if node.get("truncated"):
            raise Unverifiable(
                f"{path}: the prover did not write out this subtree (truncated), so it cannot be checked"
            )
        if not isinstance(literal, Atom):
            raise CertificateError(f"{path}: a clause node proves an atom, not {node.get('goal')!r}")
        line = field_of(node, "line", int, path)
        text = field_of(node, "clause", str, path)
        binding = field_of(node, "binding", dict, path)
        children = field_of(node, "children", list, path)
        clause = self._cited(line, text, path)
        env = self._binding(clause, binding, path)
        where = f"{path} (`{text}`, line {line})"
        try:
            head = _instance(clause.head, env)
            body = [_instance(lit, env) for lit in clause.body]
        except Undefined as exc:
            raise CertificateError(f"{where}: the clause instance is undefined: {exc}") from None
        if not same_literal(head, literal):
            raise CertificateError(
                f"{where}: the binding gives the head `{format_atom(head)}`, not the node's goal `{node['goal']}`"
            )
        if len(children) != len(body):
            raise CertificateError(
                f"{where}: the clause has {len(body)} body literal(s), the node {len(children)} child(ren)"
            )
        out = []
        for j, (lit, child) in enumerate(zip(body, children, strict=True)):
            cpath = f"{path}.children[{j}]"
            if isinstance(child, dict):
                wanted = "naf" if isinstance(lit, Naf) else "builtin" if isinstance(lit, Comparison) else "clause"
                found = "naf" if child.get("naf") else "builtin" if child.get("builtin") else "clause"
                if wanted != found:
                    raise CertificateError(
                        f"{cpath}: the body literal `{format_literal(lit)}` needs a {wanted} node, found a {found} node"
                    )
            out.append((child, cpath, lit))
        return out

    def _cited(self, line: int, text: str, path: str) -> Clause:
        for clause in self.clauses_at.get(line, []):
            if format_clause(clause) == text:
                return clause
        there = "; ".join(f"`{format_clause(c)}`" for c in self.clauses_at.get(line, [])) or "no clause"
        raise CertificateError(f"{path} cites the clause `{text}` on line {line}, but the program has {there} there")

    def _binding(self, clause: Clause, binding: dict[str, Any], path: str) -> dict[Var, Any]:
        by_key = {_var_key(v): v for v in _clause_variables(clause)}
        unknown = sorted(set(binding) - set(by_key))
        missing = sorted(set(by_key) - set(binding))
        if unknown or missing:
            raise CertificateError(
                f"{path}: the binding must give every variable of the clause a value "
                f"(unknown: {unknown or 'none'}; missing: {missing or 'none'})"
            )
        env = {}
        for key, text in binding.items():
            value = _read_term(text, f"{path}.binding[{key!r}]")
            env[by_key[key]] = value
            self.values.append(value)
        return env


def _check_builtin(literal: Any, path: str) -> None:
    """A builtin leaf holds as it stands (a variable left in it holds for every value, so it may not bind one)."""
    if not isinstance(literal, Comparison):
        raise CertificateError(f"{path}: a builtin leaf's goal must be a comparison, found `{format_literal(literal)}`")
    shown = format_literal(literal)
    ways = compare_literal(literal, {})
    if ways is None:
        try:
            left, right = subst(literal.left, {}), subst(literal.right, {})
        except Undefined:
            left, right = literal.left, literal.right
        if literal.op == "=" and same_term(left, right):  # the same term with variables on both sides
            return
        raise CertificateError(f"{path}: `{shown}` cannot be evaluated (a side is not ground)")
    outcome = next(iter(ways), None)
    if outcome is None:
        raise CertificateError(f"{path}: `{shown}` does not hold")
    if outcome:
        raise CertificateError(
            f"{path}: `{shown}` holds only for one value of {', '.join(map(str, outcome))}, not for every value"
        )


def _check_root(tree: dict[str, Any], goal: Goal) -> None:
    """The root proves the query: an instance of it, or for ``not g`` the negation leaf of ``g``."""
    root = _read_literal(tree.get("goal"), "root")
    try:
        query = Atom(goal.atom.pred, tuple(subst(a, {}) for a in goal.atom.args))
    except Undefined as exc:
        raise CertificateError(f"the query {format_goal(goal)} is undefined: {exc}") from None
    if goal.negated:
        if not (
            tree.get("naf")
            and isinstance(root, Naf)
            and _instance_of(root.atom, query)
            and _instance_of(query, root.atom)
        ):
            raise CertificateError(
                f"the proof of `{format_goal(goal)}` must be one negation leaf of that atom, found {tree.get('goal')!r}"
            )
    elif tree.get("naf") or tree.get("builtin") or not isinstance(root, Atom) or not _instance_of(root, query):
        raise CertificateError(
            f"the proof's root `{tree.get('goal')}` is not an instance of the query `{format_goal(goal)}`"
        )


def _instance_of(specific: Atom, general: Atom) -> bool:
    """``specific`` is ``general`` with some of its variables replaced (one-way matching)."""
    if specific.pred != general.pred or len(specific.args) != len(general.args):
        return False
    sigma: dict[Var, Any] = {}

    def match(p: Any, t: Any) -> bool:
        if isinstance(p, Var):
            return same_term(sigma.setdefault(p, t), t)
        if isinstance(p, Expr):
            return (
                isinstance(t, Expr) and p.op == t.op and len(p.args) == len(t.args) and all(map(match, p.args, t.args))
            )
        return same_term(p, t)

    return all(map(match, general.args, specific.args))


def check(
    cert: dict[str, Any], *, language: str, program: str, answer: str | None, limits: Limits | None = None
) -> Verdict:
    """Re-check a SymBa proof-tree certificate (module docstring) with this module's bottom-up evaluator.

    Args:
        cert: the certificate.
        language: the row's program language (``symba``, or ``prolog`` for a Prolog program SymBa
            re-derived: the program is rewritten with :func:`symbolkg.solvers.symba.syntax.from_prolog`).
        program: the program text.
        answer: the row's answer.
        limits: ``timeout_s`` bounds the check (one that runs out is ``unverifiable``).

    Returns:
        The verdict: ``verified``, or ``unverifiable`` with the reason.

    Raises:
        CertificateError: the certificate is malformed or does not follow from the program.
    """
    limits = limits or Limits()
    t0 = time.perf_counter()
    if language not in (LANGUAGE, PROLOG):
        return Verdict(
            "unverifiable",
            f"proof-tree certificates are checked for the {LANGUAGE!r} and {PROLOG!r} languages, not {language!r}",
            CHECKER,
        )
    if language == PROLOG:  # a Prolog row re-derived by SymBa: the same rewriting, done here again
        try:
            program = from_prolog(program)
        except ProgramError as err:
            raise CertificateError(f"the Prolog program cannot be read as a SymBa program: {err}") from None
    if cert.get("format") != FORMAT or cert.get("version") != VERSION:
        return Verdict(
            "unverifiable",
            f"certificate format {cert.get('format')!r} version {cert.get('version')!r} unknown "
            f"(this checker: {FORMAT!r} version {VERSION})",
            CHECKER,
        )
    try:
        parsed = parse(program)
    except ProgramError as err:
        raise CertificateError(f"the program does not parse, so it has no answer: {err}") from None
    claimed = cert.get("answer")
    if claimed not in ("True", "False"):
        raise CertificateError(f"answer must be True or False, got {claimed!r}")
    if claimed != answer:
        raise CertificateError(f"the certificate proves {claimed!r}, the row answers {answer!r}")
    _check_query(cert, parsed.goal)
    budget = Deadline(limits.timeout_s, every=1024)
    try:
        reason = _check_proof(cert, parsed, budget) if claimed == "True" else _check_closure(cert, parsed, budget)
    except Unverifiable as exc:
        return Verdict("unverifiable", str(exc), CHECKER, round(time.perf_counter() - t0, 6))
    except TimeoutError:
        return Verdict(
            "unverifiable",
            f"the bottom-up model did not close within {limits.timeout_s:g} s (arithmetic may "
            "generate values without end)",
            CHECKER,
            round(time.perf_counter() - t0, 6),
        )
    return Verdict("verified", reason, CHECKER, round(time.perf_counter() - t0, 6))


def _check_query(cert: dict[str, Any], goal: Goal) -> None:
    stated = field_of(cert, "query", dict, "the certificate")
    written = format_goal(goal)
    if stated.get("goal") != written or stated.get("line") != (goal.source_line or None):
        raise CertificateError(
            f"the certificate's query {stated.get('goal')!r} (line {stated.get('line')!r}) is not the "
            f"program's, `{written}` (line {goal.source_line})"
        )


def _check_proof(cert: dict[str, Any], program: Program, budget: Deadline) -> str:
    tree = field_of(cert, "tree", dict, "the certificate")
    _check_root(tree, program.goal)
    walk = _TreeCheck(program)
    walk.run(tree)
    if not walk.negations and not program.denials:
        return f"{walk.nodes} clause node(s) checked"
    targets = [atom for _, atom in walk.negations] + ([INCONSISTENT_TARGET] if program.denials else [])
    model = Model(program, targets, walk.values, budget)
    if program.denials and model.violated() is not None:
        denial = program.denials[model.violated()]
        raise CertificateError(
            f"the program is inconsistent: `{format_clause(denial)}` (line {denial.source_line}) is "
            "violated in the bottom-up model, so no query holds and the answer is not True"
        )
    for path, atom in walk.negations:
        if model.holds(atom):
            raise CertificateError(
                f"{path}: `{format_atom(atom)}` is derivable (the bottom-up model has an "
                f"instance of it), so `not {format_atom(atom)}` does not hold"
            )
    return (
        f"{walk.nodes} clause node(s) checked; {len(walk.negations)} negation leaf/leaves decided on a bottom-up "
        f"model of {model.size} atom(s)"
    )


def _check_closure(cert: dict[str, Any], program: Program, budget: Deadline) -> str:
    closure = field_of(cert, "closure", dict, "the certificate")
    if closure.get("method") not in (CLOSURE_METHOD, INCONSISTENT_METHOD):
        raise CertificateError(
            f"closure.method must be {CLOSURE_METHOD!r} or {INCONSISTENT_METHOD!r}, got {closure.get('method')!r}"
        )
    goal = program.goal
    if closure.get("searched") != format_goal(goal):
        raise CertificateError(f"the closure searched {closure.get('searched')!r}, the query is `{format_goal(goal)}`")
    if closure["method"] == INCONSISTENT_METHOD:
        return _check_inconsistent(closure, program, budget)
    model = Model(program, [goal.atom], (), budget)
    derivable = model.holds(goal.atom)
    atom = format_atom(goal.atom)
    if goal.negated and not derivable:
        raise CertificateError(
            f"`{atom}` is not derivable (no instance in the bottom-up model), so `not {atom}` holds: "
            "the answer is True, not False"
        )
    if not goal.negated and derivable:
        raise CertificateError(
            f"`{atom}` is derivable (the bottom-up model has an instance of it), so the answer is True, not False"
        )
    return f"decided on a bottom-up model of {model.size} atom(s)"


def _check_inconsistent(closure: dict[str, Any], program: Program, budget: Deadline) -> str:
    """The cited denial is the program's, and the bottom-up model violates it."""
    cited = field_of(closure, "denial", dict, "the closure")
    line, text = cited.get("line"), cited.get("statement")
    index = next((k for k, d in enumerate(program.denials) if d.source_line == line and format_clause(d) == text), None)
    if index is None:
        there = "; ".join(f"`{format_clause(d)}` (line {d.source_line})" for d in program.denials) or "none"
        raise CertificateError(
            f"the closure cites the denial {text!r} on line {line!r}; the program's denials: {there}"
        )
    denial = program.denials[index]
    model = Model(Program(program.clauses, program.goal, (denial,)), [INCONSISTENT_TARGET], (), budget)
    if model.violated() is None:
        raise CertificateError(
            f"`{text}` (line {line}) is not violated: no instance of its body and atom holds in the "
            "bottom-up model, so the program is not inconsistent there"
        )
    return f"the denial on line {line} is violated in a bottom-up model of {model.size} atom(s): no query holds"


# --------------------------------------------------------------------------- explaining


def explain_lines(cert: dict[str, Any]) -> list[str]:
    """The certificate for people: the proof as an indented tree, or what the closed-world search found.

    A clause node reads ``goal  <- clause [X=v, ...]  (line N)`` (a fact ``goal  <- fact, line N``),
    its children indented under it; a builtin leaf ``3 = 2 + 1  (arithmetic)``; a negation leaf
    ``not p(a)  (negation as failure: p(a) has no proof)``.
    """
    query = cert.get("query") or {}
    lines = [f"{cert.get('answer')}: query {query.get('goal')} (line {query.get('line')}), by {cert.get('producer')}"]
    closure = cert.get("closure")
    if isinstance(closure, dict):
        searched = str(closure.get("searched"))
        denial = closure.get("denial")
        if closure.get("method") == INCONSISTENT_METHOD and isinstance(denial, dict):
            lines.append(
                f"the program is inconsistent: the denial `{denial.get('statement')}` (line {denial.get('line')}) "
                f"is violated, so no query holds, {searched} included"
            )
        elif searched.startswith("not "):
            lines.append(
                f"{searched.removeprefix('not ')} has a proof, so `{searched}` fails ({closure.get('method')})"
            )
        else:
            lines.append(
                f"the search for {searched} was complete and found no proof (closed world: {closure.get('method')})"
            )
        return lines
    work: list[tuple[Any, int]] = [(cert.get("tree"), 0)]
    while work:
        node, depth = work.pop()
        lines.append("  " * depth + _explain_node(node))
        if isinstance(node, dict) and isinstance(node.get("children"), list):
            work.extend((child, depth + 1) for child in reversed(node["children"]))
    return lines


def _explain_node(node: Any) -> str:
    if not isinstance(node, dict):
        return f"(malformed node {node!r})"
    goal = node.get("goal")
    if node.get("naf"):
        return f"{goal}  (negation as failure: {node.get('atom')} has no proof)"
    if node.get("builtin"):
        return f"{goal}  (arithmetic)"
    if node.get("truncated"):
        return f"{goal}  <- {node.get('clause')}  (line {node.get('line')}; subtree not written out)"
    if not node.get("children") and not node.get("binding"):
        return f"{goal}  <- fact, line {node.get('line')}"
    binding = ", ".join(f"{k}={v}" for k, v in (node.get("binding") or {}).items())
    return f"{goal}  <- {node.get('clause')}" + (f" [{binding}]" if binding else "") + f"  (line {node.get('line')})"


def premise_lines(cert: dict[str, Any]) -> list[int]:
    """Program lines of the clauses the proof uses, in the order the tree first cites them (none for False)."""
    out: list[int] = []
    work: list[Any] = [cert.get("tree")]
    while work:
        node = work.pop()
        if not isinstance(node, dict):
            continue
        line = node.get("line")
        if isinstance(line, int) and not isinstance(line, bool) and line not in out:
            out.append(line)
        if isinstance(node.get("children"), list):
            work.extend(reversed(node["children"]))
    return out
