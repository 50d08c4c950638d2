"""Formalization checks: does a program say what the problem says? Run before solving.

A wrong formalization that runs is scored as confidently as a right one. On Logic-LM's recorded
GPT-4 programs most ProntoQA misses are queries that state the negation of the question, and
many programs split one concept into two predicate names (``Impus`` / ``Impuses``). These checks
compare a program with its problem's text. They only **parse** the program with the language's
own parser (:mod:`symbolkg.solvers.lp.syntax`, :mod:`~symbolkg.solvers.fol.syntax`, :mod:`~symbolkg.solvers.csp.syntax`,
:mod:`~symbolkg.solvers.smt.lsat_syntax`); they never run it, so they are cheap and safe to call in the
orchestrator. A program that does not parse gets no findings: the solver reports its error.

This module holds the definitions (below), the dispatch by language (:func:`check_program`) and the
corrections (:func:`correct_program`); each language's checks live beside its parser
(``solvers/lp/checks.py``, ``solvers/fol/checks.py``, ``solvers/csp/checks.py``,
``solvers/smt/lsat_checks.py``), what several share in :mod:`symbolkg.solvers.shared_checks`, and the
:class:`~symbolkg.solvers.findings.Finding` they report in :mod:`symbolkg.solvers.findings`.

Each check is stated for the language, not for a dataset:

``query_polarity`` (logiclm-lp, logiclm-fol; error, corrects)
    The query (LP) or a literal conclusion (FOL) must state the question's sentence with the same
    polarity. The sentence is the text after the question's last ``?`` (``Is the following
    statement true or false? Max is not sour.``); it must be atomic (no ``and``/``or``/``if``/
    quantifier words) with at most one negation word (``not``, ``n't``, ``never``, ``cannot``). The atom must
    match unambiguously: every word of the query predicate's name and of its constants occurs in
    the sentence (plural/verb ``s`` endings aside), no other predicate of the program matches more
    words, and no other constant of the program is named. A predicate whose name carries the
    negation (``NotBig``) absorbs the sentence's. The expected truth value is then fixed by the
    text, so the correction flips the query's (``Sour(Max, True)`` <-> ``Sour(Max, False)``; FOL:
    adds or removes the ``¬``). ``Sour(Max, False)`` for "Max is not sour" is correct and is left
    alone. Why it matters: the answer of the query is mapped onto the question's labels
    (:func:`symbolkg.jobs.core.answers.interpret`), so a negated query turns True into False; under a
    closed world (no Unknown option) an underivable atom reads as False either way, so a negated
    query is wrong there even when nothing is derived.

``one_name`` (logiclm-lp, logiclm-fol; error, corrects)
    One concept, one name: two predicates whose names differ only in case or a plural ending
    (``Impus``/``Impuses``, ``Wumpus``/``wumpuses``) split one concept, and rules written with
    one never fire on facts written with the other. When they have the same arity, the correction
    renames them all to one name everywhere (and drops the now duplicate declarations). That is no
    guess: renaming a predicate everywhere keeps the program's meaning, so the answer does not
    depend on which name is kept; it keeps the only declared one, else the one the
    query/conclusion uses, else the first written. Different arities: no correction.

``free_variables`` (logiclm-lp; warning)
    A variable in a rule's conclusion that its premises do not bind ranges over every constant
    of the program (``Cold($x, True) >>> Big($y, True)`` makes everything big), and so does a
    variable in a fact; that is rarely what the sentence says. (FOL: the language reads free
    ``x``..``w`` itself, see :mod:`symbolkg.solvers.fol.syntax`; CSP and the SMT DSL: undeclared names are
    parse errors.)

``unused_symbols`` (logiclm-lp, logiclm-fol; warning / info)
    A predicate or constant of the query (conclusion) that appears in no premise cannot be
    derived (warning: usually a renamed concept or entity); a declared predicate used nowhere
    (info).

``disconnected_premises`` (logiclm-lp, logiclm-fol, logiclm-csp; info)
    Premises (facts, rules, formulas, constraints) that share no predicate, constant or variable,
    even through other premises, with the query's symbols: they cannot take part in the answer,
    which usually means a symbol was spelled two ways.

``answer_format`` (every language; error)
    Per-dataset answer format. Verdict languages (LP, FOL) answer True/False/Unknown, so every
    option of the problem must be one of those texts (an Unknown option makes the set open-world;
    without one it is closed-world, see :func:`symbolkg.jobs.core.answers.interpret`). Option languages
    (CSP, SMT DSL) must have exactly the problem's option letters, and a CSP option whose comment
    repeats another option's text has the wrong letter.

``option_position`` (logiclm-csp; error, corrects)
    An option ``x == k`` whose text names a position counted from an end that a ``Domain:`` note
    names (``Domain: 1: oldest / 7: newest`` and "The truck is the second-newest" -> ``truck ==
    6``; "finished third" with ``1: first`` -> 3; "second-to-last" with ``7: last`` -> 6). When the
    literal differs, the constraints whose comments state a position decide which is the odd one
    out: if they follow the notes (or none states a position), the option is wrong and the
    correction writes the position; if they all follow the option's reading, the notes are
    reversed, the answer is right as written, and the finding is only a warning.

``scale_direction`` (logiclm-csp; error, corrects)
    The ``Domain:`` notes fix which end of the order is the lowest number (``1: leftmost``,
    ``1: most expensive``, ``1: first``); one note naming an end suffices, the other end being its
    opposite (left/right, cheapest/most expensive, oldest/newest, first/last, top/bottom,
    highest/lowest, heaviest/lightest, tallest/shortest, largest/smallest, earliest/latest,
    fastest/slowest; notes naming an end outside these fix nothing and the check stays silent), and
    notes naming two ends that are not opposites fix nothing. Every constraint must read positions
    that way: ``x == k`` whose comment names a position counted from an end ("the second from the
    right" is 4 of 5 when 1 is the leftmost), and ``a < b`` / ``a > b`` whose comment compares the
    two ("a is to the right of b", "cheaper than", "older than", "finished above"/"below") -- the
    object the comment names first is nearer the end its comparative points to. A constraint read
    the other way is corrected (the position written, or the comparison's direction swapped) when at
    least one line (constraint or option) reads the notes' way; when none does, the notes are the
    odd one out and the findings are warnings. Options are ``option_position``'s, which uses the
    same ends. Why it matters: the small models and GPT-4 alike write "the second-newest" as
    ``== 2`` under ``1: oldest`` and "finished below" as ``<`` under ``1: first``; the program runs
    and proves a wrong option.

``option_modality`` (logiclm-smt; error, corrects)
    The option checks must ask what the question asks. The question's main clause (the text after
    its ``which``, else after ``following``; a clause with its own ``if``, as in "which one of the
    following, if true, ...", is left alone) names one modality: "cannot", "could not", "must be
    false", "impossible", "not allowed" / "not possible" -> ``is_unsat``; "must" -> ``is_valid``; "could",
    "can", "acceptable", "allowable", "permissible", "possible", "allowed" -> ``is_sat``; with
    "EXCEPT", the exception of the positive check (``is_exception(is_sat(...))`` for "could be
    true EXCEPT", ``is_exception(is_valid(...))`` for "must be true EXCEPT"). A clause naming two
    modalities, or none, is left alone. Checks that mean the same are the same
    (``is_exception(is_sat(e))`` is ``is_unsat(e)``, ``is_exception(is_unsat(e))`` is
    ``is_sat(e)``). When an option check asks something else ("which one of the following could be
    an acceptable schedule?" checked with ``is_valid``: no full schedule is forced, so no option
    passes), the correction rewrites every option's check to the asked one (programs with
    ``is_accurate_list`` options are left alone: a list question is its own kind).

``unstated_facts`` (logiclm-lp and logiclm-lp-swipl; error, corrects; found by running, not by parsing)
    A program that derives its query both ways has no answer. When the contradiction rests on
    facts that no sentence of the context states (a small model writes the chain's conclusions
    as facts, and their opposites as often), those facts give way: :func:`revise` drops them and
    runs again, until the program is consistent (:mod:`symbolkg.solvers.lp.revision` says when a
    fact counts as stated). Facts the text states are never dropped, and a contradiction that
    rests on stated facts only is left as it is. It is the one correction that needs the
    program's run, so the worker makes it after solving, and only when the request asks for
    corrections (:func:`symbolkg.solvers.registry.run`).

A :class:`~symbolkg.solvers.findings.Finding` says what is wrong, where and what the text says, in words
an LLM can act on; the refine loop (:func:`symbolkg.jobs.methods.refine.formalize_solve_refine`) sends the errors
back as it sends solver errors, and the recorded path (:func:`symbolkg.jobs.pipeline.programs_job.run_solve`)
records them in the row's ``trace``, solving the corrected program unless corrections are off.

>>> from types import SimpleNamespace
>>> question = "Is the following statement true or false? Max is sour."
>>> p = SimpleNamespace(question=question, options=("A) True", "B) False"))
>>> prog = "Predicates:\\nSour($x, bool)\\nFacts:\\nSour(Max, False)\\nQuery:\\nSour(Max, False)"
>>> [f.check for f in check_program("logiclm-lp", prog, p)]
['query_polarity']
>>> correct_program("logiclm-lp", prog, p).text.splitlines()[-1]
'Sour(Max, True)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from symbolkg.solvers.csp import checks as csp_checks
from symbolkg.solvers.findings import CHECKS, Finding, ProblemText
from symbolkg.solvers.fol import checks as fol_checks
from symbolkg.solvers.lp import checks as lp_checks
from symbolkg.solvers.lp import revision as lp_revision
from symbolkg.solvers.outcomes import CheckFinding, CheckReport, Limits, ProgramError
from symbolkg.solvers.smt import lsat_checks


@dataclass(frozen=True)
class Corrected:
    """What :func:`correct_program` did.

    Attributes:
        text: the program after every correction (the input when none applied).
        findings: the findings on the input program.
        applied: the findings whose corrections were applied, in order (each checked on the
            program the previous one produced).
        remaining: the findings on the final program.
    """

    text: str
    findings: tuple[Finding, ...]
    applied: tuple[Finding, ...]
    remaining: tuple[Finding, ...]

    @property
    def corrected(self) -> bool:
        return bool(self.applied)


def check_program(language: str, program_text: str, problem: ProblemText) -> list[Finding]:
    """Run every check of ``language`` on a program for ``problem``; parse only, never solve.

    Args:
        language: a registry language (``logiclm-lp``, ``logiclm-lp-swipl``, ``logiclm-fol``,
            ``logiclm-csp``, ``logiclm-smt``); other languages have no checks (empty list).
        program_text: the program as written.
        problem: the problem it formalizes (its question and options are the text checked against).

    Returns:
        The findings, errors first; empty when the program does not parse (the solver will say
        why) or nothing is found. Each correction is relative to ``program_text``.
    """
    checker = _CHECKERS.get(language)
    if checker is None:
        return []
    try:
        findings = checker(program_text, problem)
    except ProgramError:
        return []
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: (order[f.severity], CHECKS.index(f.check), f.line or 0))


def correct_program(language: str, program_text: str, problem: ProblemText, *, max_steps: int = 16) -> Corrected:
    """Apply the corrections of :func:`check_program` one at a time until none is left.

    Each step re-checks the program the previous correction produced, so corrections compose
    (a flipped query and a merged predicate name). A correction that does not parse is dropped.

    Args:
        language, program_text, problem: as for :func:`check_program`.
        max_steps: most corrections applied.

    Returns:
        A :class:`Corrected`.
    """
    first = check_program(language, program_text, problem)
    text, findings, applied = program_text, first, []
    for _ in range(max_steps):
        fix = next((f for f in findings if f.correction is not None and f.correction != text), None)
        if fix is None or fix.correction is None:
            break
        applied.append(fix)
        text = fix.correction
        findings = check_program(language, text, problem)
    return Corrected(text, tuple(first), tuple(applied), tuple(findings))


def check_report(program_text: str, corrected: Corrected, *, corrections: bool) -> CheckReport:
    """What a worker returns of a program that went through :func:`correct_program` before it was solved
    (:attr:`symbolkg.solvers.outcomes.Outcome.checks`; a result row's ``trace`` keeps its
    :meth:`~symbolkg.solvers.outcomes.CheckReport.trace`): the findings on the program as given, and when
    ``corrections`` and a check corrected it, the checks applied, the program as given, the program
    solved and the findings on it."""
    done = corrections and corrected.corrected
    return CheckReport(
        findings=tuple(f.record() for f in corrected.findings),
        corrected=done,
        corrections=tuple(f.check for f in corrected.applied) if done else (),
        original_program=program_text if done else None,
        program=corrected.text if done else None,
        remaining=tuple(f.record() for f in corrected.remaining) if done else (),
    )


#: The LP language, as run by our engine and by SWI-Prolog: the languages :func:`revise` revises.
LP_LANGUAGES: tuple[str, ...] = ("logiclm-lp", "logiclm-lp-swipl")


def revise(language: str, program_text: str, context: str, limits: Limits | None = None) -> Finding | None:
    """``unstated_facts`` on a program whose run was inconsistent: the finding, its correction the revised program.

    Args:
        language: the program's language; only the LP language has a revision (:data:`LP_LANGUAGES`: run by
            our engine or by SWI-Prolog; the revision is of the program's text, found with our engine's run).
        program_text: the program that was solved (after the checks' corrections).
        context: the premises the program formalizes (empty: no revision).
        limits: bound the revision's runs (:func:`symbolkg.solvers.lp.revision.revise`).

    Returns:
        The finding, or None when the language has no revision, the context is empty, the program does not parse, or
        the text does not resolve the contradiction (:func:`symbolkg.solvers.lp.revision.revise`).
    """
    if language not in LP_LANGUAGES or not context.strip():
        return None
    try:
        revision = lp_revision.revise(program_text, context, limits)
    except ProgramError:
        return None
    if revision is None:
        return None
    facts = ", ".join(revision.dropped)
    return Finding(
        "unstated_facts",
        "error",
        f"the program derives its query both ways, and the contradiction rests on facts the text does not "
        f"state: {facts}; state only what the text says (conclusions follow from the rules)",
        revision.lines[0],
        revision.program,
    )


def with_revision(
    report: CheckReport, given: str, finding: Finding, language: str, problem: ProblemText
) -> CheckReport:
    """``report`` after :func:`revise`'s correction was applied to the program it solved: the finding joins
    the findings, ``unstated_facts`` the corrections, and ``remaining`` is checked on the revised program."""
    program = finding.correction or ""
    return CheckReport(
        findings=(*report.findings, finding.record()),
        corrected=True,
        corrections=(*report.corrections, finding.check),
        original_program=given,
        program=program,
        remaining=tuple(f.record() for f in check_program(language, program, problem)),
    )


def refine_message(findings: Sequence[Finding | CheckFinding]) -> str:
    """The error findings as one message for the refine prompt (what the solver error slot holds)."""
    errors = [f for f in findings if f.severity == "error"]
    lines = ["What the formalization checks found (fix each, then write the whole program again):"]
    for f in errors:
        where = f" (line {f.line})" if f.line is not None else ""
        lines.append(f"- [{f.check}]{where} {f.message}")
    return "\n".join(lines)


#: Language -> its checks (``logiclm-lp-swipl`` is the LP language run by SWI-Prolog).
_CHECKERS: dict[str, Callable[[str, ProblemText], list[Finding]]] = {
    "logiclm-lp": lp_checks.check,
    "logiclm-lp-swipl": lp_checks.check,
    "logiclm-fol": fol_checks.check,
    "logiclm-csp": csp_checks.check,
    "logiclm-smt": lsat_checks.check,
}
