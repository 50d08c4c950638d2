"""Formalization checks: does a program say what the problem says? Run before solving.

A wrong formalization that runs is scored as confidently as a right one. On Logic-LM's recorded
GPT-4 programs most ProntoQA misses are queries that state the negation of the question, and
many programs split one concept into two predicate names (``Impus`` / ``Impuses``). These checks
compare a program with its problem's text. They only **parse** the program with the language's
own parser (:mod:`symbolkg.solvers.lp.syntax`, :mod:`~symbolkg.solvers.fol.syntax`, :mod:`~symbolkg.solvers.csp.syntax`,
:mod:`~symbolkg.solvers.smt.lsat_syntax`); they never run it, so they are cheap and safe to call in the
orchestrator. A program that does not parse gets no findings: the solver reports its error.

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
    (:func:`symbolkg.jobs.pipeline.answers.interpret`), so a negated query turns True into False; under a
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
    without one it is closed-world, see :func:`symbolkg.jobs.pipeline.answers.interpret`). Option languages
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

A :class:`Finding` says what is wrong, where and what the text says, in words an LLM can act on;
the refine loop (:func:`symbolkg.jobs.methods.logiclm.formalize_solve_refine`) sends the errors
back as it sends solver errors, and the recorded path (:func:`symbolkg.jobs.pipeline.solve.run_solve`)
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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from symbolkg.solvers.answer_options import VERDICT_TEXTS, option_letters
from symbolkg.solvers.csp import syntax as csp
from symbolkg.solvers.fol import syntax as fol
from symbolkg.solvers.lp import syntax as lp
from symbolkg.solvers.outcomes import ProgramError
from symbolkg.solvers.smt import lsat_syntax as lsat

Severity = Literal["error", "warning", "info"]


class ProblemText(Protocol):
    """What the checks read of a problem (a job's problem record has both): the text checked against."""

    @property
    def question(self) -> str: ...

    @property
    def options(self) -> Sequence[str]: ...


#: The checks, in the order they run (see the module docstring for each definition).
CHECKS = (
    "answer_format",
    "query_polarity",
    "one_name",
    "option_position",
    "option_modality",
    "free_variables",
    "unused_symbols",
    "disconnected_premises",
)


@dataclass(frozen=True)
class Finding:
    """One thing a check found wrong with a program.

    Attributes:
        check: the check's name (one of :data:`CHECKS`).
        severity: ``"error"`` (the program does not say what the text says: worth a refine round),
            ``"warning"`` (likely wrong), ``"info"`` (worth knowing).
        message: what is wrong, where, and what the text says, for an LLM to act on.
        line: the 1-based program line it refers to, if one.
        correction: the whole corrected program when the text resolves the mismatch without
            guessing; None otherwise.
    """

    check: str
    severity: Severity
    message: str
    line: int | None = None
    correction: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        """A finding from :meth:`to_dict`'s form (its correction only when that form holds it)."""
        return cls(d["check"], d["severity"], d["message"], d.get("line"), d.get("correction"))

    def to_dict(self, *, with_correction: bool = False) -> dict[str, Any]:
        """JSON-friendly form for a row's trace (the corrected text only on request: it is long)."""
        out: dict[str, Any] = {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "line": self.line,
            "corrects": self.correction is not None,
        }
        if with_correction:
            out["correction"] = self.correction
        return out


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


def checked_solve_entries(program_text: str, corrected: Corrected, *, corrections: bool) -> dict:
    """The trace entries of a program that went through :func:`correct_program` before it was solved
    (what :attr:`symbolkg.solvers.outcomes.Outcome.checks` holds and a result row's ``trace`` keeps):
    ``checks`` (the findings on the program as given), ``corrected``, and when ``corrections`` and a
    check corrected it, ``corrections`` (the checks applied), ``original_program`` (as given),
    ``program`` (what is solved) and ``remaining`` (the findings on it)."""
    entries: dict = {
        "checks": [f.to_dict() for f in corrected.findings],
        "corrected": corrections and corrected.corrected,
    }
    if entries["corrected"]:
        entries.update(
            corrections=[f.check for f in corrected.applied],
            original_program=program_text,
            program=corrected.text,
            remaining=[f.to_dict() for f in corrected.remaining],
        )
    return entries


def refine_message(findings: list[Finding] | tuple[Finding, ...]) -> str:
    """The error findings as one message for the refine prompt (what the solver error slot holds)."""
    errors = [f for f in findings if f.severity == "error"]
    lines = ["What the formalization checks found (fix each, then write the whole program again):"]
    for f in errors:
        where = f" (line {f.line})" if f.line is not None else ""
        lines.append(f"- [{f.check}]{where} {f.message}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- text helpers

_STOP = {
    "a",
    "an",
    "the",
    "is",
    "are",
    "be",
    "was",
    "were",
    "does",
    "do",
    "did",
    "of",
    "to",
    "it",
    "its",
    "has",
    "have",
    "x",
    "y",
    "z",
}
_NEGATIONS = {"not", "never", "n't", "cannot"}
#: Words that make a sentence more than one atom (connectives, quantifiers) or its negation unclear.
_NOT_ATOMIC = {
    "and",
    "or",
    "if",
    "then",
    "all",
    "every",
    "each",
    "some",
    "either",
    "neither",
    "nor",
    "unless",
    "only",
    "everything",
    "something",
    "anything",
    "everyone",
    "someone",
    "anyone",
    "any",
    "no",
    "nothing",
    "nobody",
    "none",
    "both",
    "whether",
    "because",
}
_NAME_NEGATIONS = {"not", "no", "non", "never"}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _words(text: str) -> list[str]:
    """Lower-case words of a name or sentence: ``IsRed`` -> ``is red``; ``doesn't`` -> ``does n't``."""
    text = _CAMEL.sub(" ", text)
    text = re.sub(r"n't\b", " n't", text, flags=re.IGNORECASE)
    return re.findall(r"n't|[a-z0-9]+", text.lower())


def _forms(word: str) -> set[str]:
    """A word and its forms without a plural / third-person ending (``wumpuses`` -> ``wumpus``)."""
    forms = {word}
    if len(word) > 3 and word.endswith("ies"):
        forms.add(word[:-3] + "y")
    if len(word) > 3 and word.endswith("es"):
        forms.add(word[:-2])
    if len(word) > 2 and word.endswith("s") and not word.endswith("ss"):
        forms.add(word[:-1])
    return forms


def _same_word(a: str, b: str) -> bool:
    return bool(_forms(a) & _forms(b))


def _content(words: list[str]) -> list[str]:
    return [w for w in words if w not in _STOP]


def _covered(name_words: list[str], sentence: list[str]) -> bool:
    """Every word of a name occurs in the sentence (up to plural endings); a name with no words is not."""
    return bool(name_words) and all(any(_same_word(w, s) for s in sentence) for w in name_words)


def _same_concept(a: str, b: str) -> bool:
    la, lb = a.lower(), b.lower()
    return a != b and (la == lb or lb in (la + "s", la + "es") or la in (lb + "s", lb + "es"))


@dataclass(frozen=True)
class _Sentence:
    """The statement a True/False question asks about."""

    text: str
    words: tuple[str, ...]  # content words, negations removed
    negated: bool


def _question_sentence(question: str) -> _Sentence | None:
    """The atomic sentence after the question's last ``?``, or None when it is not one atom."""
    text = question.rsplit("?", 1)[-1].strip() if "?" in question else question.strip()
    if not text:
        return None
    words = _words(text)
    if any(w in _NOT_ATOMIC for w in words):
        return None
    negations = [w for w in words if w in _NEGATIONS]
    if len(negations) > 1:
        return None
    content = tuple(w for w in _content(words) if w not in _NEGATIONS)
    return _Sentence(text, content, bool(negations))


def _replace_code(line: str, new_code: str) -> str:
    """Replace the code part of a program line, keeping an inline ``Query:`` header and a ``:::`` comment."""
    code, sep, comment = line.partition(":::")
    header = re.match(r"^(\s*[#*\s]*(?:query|queries|conclusion)\s*\**\s*:\s*\**\s*)(\S.*)$", code, re.IGNORECASE)
    prefix = header.group(1) if header else re.match(r"^\s*", code).group(0)  # type: ignore[union-attr]
    return f"{prefix}{new_code}" + (f" {sep} {comment.strip()}" if sep else "")


def _replace_line(text: str, line: int, new_code: str) -> str:
    lines = text.split("\n")
    lines[line - 1] = _replace_code(lines[line - 1].rstrip("\r"), new_code)
    return "\n".join(lines)


def _rename(text: str, old: str, new: str, *, drop_line: int | None = None) -> str:
    """Rename predicate ``old`` to ``new`` in every call ``old(`` outside ``:::`` comments."""
    pattern = re.compile(rf"(?<![A-Za-z0-9_$]){re.escape(old)}(?=\s*\()")
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        if number == drop_line:
            continue
        code, sep, comment = line.partition(":::")
        out.append(pattern.sub(new, code) + sep + comment)
    return "\n".join(out)


def _parses(parse: Callable[[str], Any], text: str) -> Any | None:
    try:
        return parse(text)
    except ProgramError:
        return None


# --------------------------------------------------------------------------- shared check logic


def _polarity_expectation(
    pred: str, constants: list[str], predicates: set[str], all_constants: set[str], sentence: _Sentence
) -> bool | None:
    """The truth value the text gives the atom ``pred(constants)``, or None when the match is not unambiguous."""
    pred_words = _content(_words(pred))
    name_negated = any(w in _NAME_NEGATIONS for w in pred_words)
    pred_words = [w for w in pred_words if w not in _NAME_NEGATIONS]
    words = list(sentence.words)
    if not _covered(pred_words, words):
        return None
    const_words = [_content(_words(c)) for c in constants]
    if not all(_covered(cw, words) for cw in const_words if cw) or not all(const_words):
        return None
    # No other predicate of the program may match the sentence as well or better.
    for other in predicates:
        if other == pred or _same_concept(other, pred):
            continue
        ow = [w for w in _content(_words(other)) if w not in _NAME_NEGATIONS]
        if _covered(ow, words) and not set(ow) < set(pred_words):
            return None
    # No other constant of the program may be named in the sentence.
    used = {w for cw in const_words for w in cw} | set(pred_words)
    for other in all_constants - set(constants):
        ow = _content(_words(other))
        if _covered(ow, words) and not all(any(_same_word(w, u) for u in used) for w in ow):
            return None
    return sentence.negated == name_negated  # True: the sentence asserts the atom


def _one_name_groups(arities: dict[str, set[int]]) -> list[list[str]]:
    """Groups of predicate names that are one concept (linked by :func:`_same_concept`), sorted."""
    names = sorted(arities)
    group: dict[str, int] = {n: i for i, n in enumerate(names)}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if _same_concept(a, b):
                old, new = group[b], group[a]
                for n, g in group.items():
                    if g == old:
                        group[n] = new
    out: dict[int, list[str]] = {}
    for n in names:
        out.setdefault(group[n], []).append(n)
    return [g for g in out.values() if len(g) > 1]


def _pick_name(names: list[str], declared: set[str], asked: set[str], first_use: dict[str, int]) -> str:
    """The name to keep: the only declared one, else the only one the query uses, else the first written.

    Which one is kept does not change any answer (renaming a predicate everywhere keeps the program's
    meaning); the preference only keeps the name the program's author chose on purpose.
    """
    d = [n for n in names if n in declared]
    if len(d) == 1:
        return d[0]
    q = [n for n in names if n in asked]
    if len(q) == 1:
        return q[0]
    return min(d or names, key=lambda n: (first_use.get(n, 1 << 30), n))


def _components(premises: list[tuple[int, set[str]]], start: set[str]) -> list[int]:
    """Lines of the premises that share no symbol, even through other premises, with ``start``."""
    reached = set(start)
    pending = list(premises)
    changed = True
    while changed:
        changed = False
        rest = []
        for line, symbols in pending:
            if symbols & reached:
                reached |= symbols
                changed = True
            else:
                rest.append((line, symbols))
        pending = rest
    return [line for line, _ in pending]


def _verdict_options(problem: ProblemText) -> list[Finding]:
    texts = {t for ts in VERDICT_TEXTS.values() for t in ts}  # the texts a verdict is mapped onto
    letters = option_letters(problem.options)
    bad = [f"{k}) {v}" for k, v in letters.items() if v.lower() not in texts]
    if not bad:
        return []
    return [
        Finding(
            "answer_format",
            "error",
            f"this language answers True, False or Unknown, but the problem's options {bad} are not "
            "verdicts; the answer cannot be mapped onto them",
        )
    ]


# --------------------------------------------------------------------------- logiclm-lp


def _one_name(
    text: str,
    arities: dict[str, set[int]],
    declarations: tuple,
    asked: set[str],
    first_use: dict[str, int],
    first_line: Callable[[list[str]], int | None],
    parse: Callable[[str], Any],
    effect: str,
) -> list[Finding]:
    """``one_name`` for a language whose predicates are declared by ``declarations`` (LP, FOL).

    Args:
        text: the program.
        arities: predicate name -> the arities it is used (or declared) with.
        declarations: the program's predicate declarations (``name``, ``line``).
        asked: the predicates of the query / conclusion.
        first_use: predicate -> the first line that uses it.
        first_line: the line a finding about a group of names points at.
        parse: the language's parser (a correction must parse).
        effect: what the split does, in words (after "so").
    """
    declared = {d.name for d in declarations}
    findings = []
    for names in _one_name_groups(arities):
        keep = _pick_name(names, declared, asked, first_use)
        correction: str | None = None
        if len(set().union(*(arities[n] for n in names))) == 1:  # same arity: renaming keeps the meaning
            correction = text
            for other in names:
                if other != keep:
                    drop = next((d.line for d in declarations if d.name == other), None) if keep in declared else None
                    correction = _rename(correction, other, keep, drop_line=drop)
            if _parses(parse, correction) is None:
                correction = None
        findings.append(
            Finding(
                "one_name",
                "error",
                f"the predicates {', '.join(names)} name one concept in {len(names)} ways, so {effect}; use one name, "
                f"{keep}, everywhere",
                first_line(names),
                correction,
            )
        )
    return findings


def _check_lp(text: str, problem: ProblemText) -> list[Finding]:
    program = lp.parse(text)
    atoms = list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)]
    arities: dict[str, set[int]] = {}
    for a in (*atoms, program.query):
        arities.setdefault(a.predicate, set()).add(len(a.args))
    for d in program.predicates:
        arities.setdefault(d.name, set()).add(d.arity)
    q = program.query
    first_use: dict[str, int] = {}
    for a in sorted((*atoms, q), key=lambda a: a.line):
        first_use.setdefault(a.predicate, a.line)
    return (
        _verdict_options(problem)
        + _lp_polarity(text, program, set(arities), problem)
        + _one_name(
            text,
            arities,
            program.predicates,
            {q.predicate},
            first_use,
            lambda names: min((a.line for a in atoms if a.predicate in names), default=None),
            lp.parse,
            "rules written with one never apply to facts written with another",
        )
        + _lp_free_variables(program)
        + _lp_unused(program, atoms)
        + _lp_disconnected(program)
    )


def _lp_polarity(text: str, program: Any, predicates: set[str], problem: ProblemText) -> list[Finding]:
    """``query_polarity`` for logiclm-lp."""
    q = program.query
    sentence = _question_sentence(problem.question)
    if sentence is None:
        return []
    constants = [str(c) for c in q.args]
    expected = _polarity_expectation(q.predicate, constants, predicates, set(program.constants()), sentence)
    if expected is None or expected == q.value:
        return []
    fixed = f"{q.predicate}({', '.join((*constants, str(expected)))})"
    correction = _replace_line(text, q.line, fixed)
    check = _parses(lp.parse, correction)
    ok = check is not None and check.query.predicate == q.predicate and check.query.value == expected
    return [
        Finding(
            "query_polarity",
            "error",
            f"the query {q} states the opposite of the question's statement {sentence.text!r}"
            f" ({'negative' if sentence.negated else 'positive'}); the query must be the statement itself, "
            f"{fixed}, so that True means the statement is true",
            q.line,
            correction if ok else None,
        )
    ]


def _lp_free_variables(program: Any) -> list[Finding]:
    """``free_variables`` for logiclm-lp."""
    findings = []
    for r in program.rules:
        bound = {v for a in r.body for v in a.variables()}
        free = sorted({v.name for a in r.head for v in a.variables()} - {v.name for v in bound})
        if free and r.body:
            findings.append(
                Finding(
                    "free_variables",
                    "warning",
                    f"the rule {r.text!r} concludes about {', '.join('$' + v for v in free)}, which its premises do "
                    "not mention, so it holds for every constant of the program; bind the variable in a premise",
                    r.line,
                )
            )
        elif free:
            findings.append(
                Finding(
                    "free_variables",
                    "info",
                    f"the fact {r.text!r} has a variable, so it holds for every constant of the program",
                    r.line,
                )
            )
    return findings


def _lp_unused(program: Any, atoms: list) -> list[Finding]:
    """``unused_symbols`` for logiclm-lp."""
    q = program.query
    findings = []
    concluded = {a.predicate for a in program.facts} | {h.predicate for r in program.rules for h in r.head}
    if q.predicate not in concluded:
        findings.append(
            Finding(
                "unused_symbols",
                "warning",
                f"no fact or rule concludes {q.predicate}(...), so the query {q} can only be Unknown; check the "
                "predicate's name against the premises",
                q.line,
            )
        )
    premise_constants = {c for a in atoms for c in a.args if isinstance(c, str)}
    for c in q.args:
        if isinstance(c, str) and c not in premise_constants:
            findings.append(
                Finding(
                    "unused_symbols",
                    "warning",
                    f"the query's constant {c} appears in no fact or rule; check its spelling against the premises",
                    q.line,
                )
            )
    used = {a.predicate for a in (*atoms, q)}
    for d in program.predicates:
        if d.name not in used:
            findings.append(
                Finding("unused_symbols", "info", f"the declared predicate {d.name} is used nowhere", d.line)
            )
    return findings


def _lp_disconnected(program: Any) -> list[Finding]:
    """``disconnected_premises`` for logiclm-lp."""

    def symbols(items: tuple) -> set[str]:
        return {f"p:{a.predicate}" for a in items} | {f"c:{c}" for a in items for c in a.args if isinstance(c, str)}

    premises = [(a.line, symbols((a,))) for a in program.facts] + [
        (r.line, symbols((*r.body, *r.head))) for r in program.rules
    ]
    return [
        Finding(
            "disconnected_premises",
            "info",
            f"the premise on line {line} shares no predicate or constant with the query, even through other "
            "premises, so it cannot affect the answer",
            line,
        )
        for line in _components(premises, symbols((program.query,)))
    ]


# --------------------------------------------------------------------------- logiclm-fol


def _fol_walk(formula: Any):  # type: ignore[no-untyped-def]
    yield formula
    if isinstance(formula, fol.Not):
        yield from _fol_walk(formula.body)
    elif isinstance(formula, fol.Binary):
        yield from _fol_walk(formula.left)
        yield from _fol_walk(formula.right)
    elif isinstance(formula, fol.Quantified):
        yield from _fol_walk(formula.body)


def _fol_constants(term: Any) -> set[str]:
    if isinstance(term, fol.Const):
        return {term.name}
    if isinstance(term, fol.Func):
        return {c for a in term.args for c in _fol_constants(a)}
    return set()


def _fol_symbols(formula: Any) -> tuple[dict[str, set[int]], set[str]]:
    preds: dict[str, set[int]] = {}
    consts: set[str] = set()
    for f in _fol_walk(formula):
        if isinstance(f, fol.Atom):
            preds.setdefault(f.predicate, set()).add(len(f.args))
            for t in f.args:
                consts |= _fol_constants(t)
        elif isinstance(f, fol.Equals):
            consts |= _fol_constants(f.left) | _fol_constants(f.right)
    return preds, consts


def _fol_flip(literal: str) -> str:
    """``¬P(a)`` -> ``P(a)`` and ``P(a)`` -> ``¬P(a)``, as written (the caller re-parses the result)."""
    literal = literal.strip()
    if literal[:1] in ("¬", "~", "!"):
        inner = literal[1:].strip()
        if inner.startswith("(") and inner.endswith(")"):
            inner = inner[1:-1].strip()
        return inner
    return f"¬{literal}" if re.fullmatch(r"[\w]+\s*\([^()]*\)", literal) else f"¬({literal})"


def _check_fol(text: str, problem: ProblemText) -> list[Finding]:
    program = fol.parse(text)
    concl = program.conclusion
    per_premise = [(s, *_fol_symbols(s.formula)) for s in program.premises]
    c_preds, c_consts = _fol_symbols(concl.formula)
    arities: dict[str, set[int]] = {}
    constants: set[str] = set(c_consts)
    for _, preds, consts in per_premise:
        for k, v in preds.items():
            arities.setdefault(k, set()).update(v)
        constants |= consts
    for k, v in c_preds.items():
        arities.setdefault(k, set()).update(v)
    for d in program.predicates:
        arities.setdefault(d.name, set()).add(d.arity)
    first_use: dict[str, int] = {}
    for statement, preds, _ in per_premise:
        for name in preds:
            first_use.setdefault(name, statement.line)
    return (
        _verdict_options(problem)
        + _fol_polarity(text, concl, set(arities), constants, problem)
        + _one_name(
            text,
            arities,
            program.predicates,
            set(c_preds),
            first_use,
            lambda names: min((s.line for s, preds, _ in per_premise if set(preds) & set(names)), default=None),
            fol.parse,
            "premises written with one say nothing about the other",
        )
        + _fol_unused(program, per_premise, c_preds, c_consts)
    )


def _fol_polarity(
    text: str, concl: Any, predicates: set[str], constants: set[str], problem: ProblemText
) -> list[Finding]:
    """``query_polarity`` for logiclm-fol: a literal conclusion about constants."""
    formula, negated = concl.formula, False
    if isinstance(formula, fol.Not):
        formula, negated = formula.body, True
    sentence = _question_sentence(problem.question)
    if sentence is None or not isinstance(formula, fol.Atom) or not all(isinstance(t, fol.Const) for t in formula.args):
        return []
    names = [t.name for t in formula.args]  # type: ignore[union-attr]
    expected = _polarity_expectation(formula.predicate, names, predicates, constants, sentence)
    if expected is None or expected != negated:
        return []
    fixed = _fol_flip(concl.text)
    correction = _replace_line(text, concl.line, fixed)
    check = _parses(fol.parse, correction)
    ok = check is not None and check.conclusion.formula == (formula if negated else fol.Not(formula))
    return [
        Finding(
            "query_polarity",
            "error",
            f"the conclusion {concl.text!r} states the opposite of the question's statement {sentence.text!r} "
            f"({'negative' if sentence.negated else 'positive'}); the conclusion must be the statement itself, "
            f"{fixed}",
            concl.line,
            correction if ok else None,
        )
    ]


def _fol_unused(program: Any, per_premise: list, c_preds: dict[str, set[int]], c_consts: set[str]) -> list[Finding]:
    """``unused_symbols`` and ``disconnected_premises`` for logiclm-fol."""
    concl = program.conclusion
    findings = []
    premise_preds = {p for _, preds, _ in per_premise for p in preds}
    premise_consts = {c for _, _, consts in per_premise for c in consts}
    for p in sorted(set(c_preds) - premise_preds):
        findings.append(
            Finding(
                "unused_symbols",
                "warning",
                f"the conclusion's predicate {p} appears in no premise, so the conclusion can only be Uncertain; check "
                "its name against the premises",
                concl.line,
            )
        )
    for c in sorted(c_consts - premise_consts):
        findings.append(
            Finding(
                "unused_symbols",
                "warning",
                f"the conclusion's constant {c} appears in no premise; check its spelling against the premises",
                concl.line,
            )
        )
    used = premise_preds | set(c_preds)
    for d in program.predicates:
        if d.name not in used:
            findings.append(
                Finding("unused_symbols", "info", f"the declared predicate {d.name} is used nowhere", d.line)
            )
    premises = [(s.line, {f"p:{p}" for p in preds} | {f"c:{c}" for c in consts}) for s, preds, consts in per_premise]
    start = {f"p:{p}" for p in c_preds} | {f"c:{c}" for c in c_consts}
    for line in _components(premises, start):
        findings.append(
            Finding(
                "disconnected_premises",
                "info",
                f"the premise on line {line} shares no predicate or constant with the conclusion, even through other "
                "premises, so it cannot affect the answer",
                line,
            )
        )
    return findings


# --------------------------------------------------------------------------- logiclm-csp

_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
    "5th": 5,
    "6th": 6,
    "7th": 7,
}
_NOTE_RE = re.compile(r"^\s*(-?\d+)\s*:\s*(.+?)\s*\.?\s*$")
_ORD = "|".join(sorted(_ORDINALS, key=len, reverse=True))


def _csp_vars(expr: Any) -> set[str]:
    if isinstance(expr, csp.VarRef):
        return {expr.name}
    out: set[str] = set()
    for value in vars(expr).values() if hasattr(expr, "__dict__") else ():
        for item in value if isinstance(value, tuple) else (value,):
            if hasattr(item, "__dataclass_fields__"):
                out |= _csp_vars(item)
    return out


def _end_phrases(note: str) -> list[str]:
    """The words an option text may use for the end a Domain note names (``most expensive`` -> ``expensive``)."""
    note = note.lower().strip()
    note = re.sub(r"^(?:the|is|are)\s+", "", note)
    phrases = {note}
    if note.startswith("most "):
        phrases.add(note[5:])
    if note.endswith("most") and len(note) > 4 and " " not in note:  # leftmost -> left
        phrases.add(note[:-4])
    return sorted(phrases, key=len, reverse=True)


def _position(text: str, ends: list[tuple[int, list[str]]], lo: int, hi: int) -> int | None:
    """The position an option text names, counted from an end a Domain note names; None if it names none or several."""
    found: set[int] = set()
    low = text.lower()
    for value, phrases in ends:
        step = 1 if value == lo else -1
        for phrase in phrases:
            p = re.escape(phrase).replace(r"\ ", r"[\s-]+")
            k = None
            m = re.search(rf"\b({_ORD})[\s-]+(?:(?:from|to)[\s-]+(?:the[\s-]+)?)?(?:most[\s-]+)?{p}\b", low)
            if m:
                k = _ORDINALS[m.group(1)]
            elif re.search(rf"\b{p}\b", low) and not re.search(rf"\b({_ORD})\b", low.replace(phrase, " ")):
                k = 1
            elif phrase in _ORDINALS and _ORDINALS[phrase] == 1 and value == lo:
                m = re.search(rf"\b({_ORD})\b", low)  # 'finished third' counts from the note '1: first'
                k = _ORDINALS[m.group(1)] if m else None
            if k is not None:
                found.add(value + step * (k - 1))
                break
    return found.pop() if len(found) == 1 else None


def _position_literal(expr: Any) -> tuple[str, int] | None:
    """``x == 3`` (either way round) -> ``("x", 3)``; None for anything else."""
    if not (isinstance(expr, csp.Compare) and expr.ops == ("==",)):
        return None
    left, right = expr.operands
    if isinstance(left, csp.IntLit) and isinstance(right, csp.VarRef):
        left, right = right, left
    if isinstance(left, csp.VarRef) and isinstance(right, csp.IntLit):
        return left.name, right.value
    return None


def _letters_mismatch(
    section: str, mine: set[str], letters: dict[str, str], advice: str, line: int | None
) -> list[Finding]:
    """``answer_format``: the program's option letters must be the problem's (CSP, SMT DSL)."""
    if not letters or mine == set(letters):
        return []
    missing, extra = sorted(set(letters) - mine), sorted(mine - set(letters))
    return [
        Finding(
            "answer_format",
            "error",
            f"the {section} section has the options {sorted(mine)} but the problem has {sorted(letters)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; not in the problem {extra}" if extra else "")
            + f"; {advice}",
            line,
        )
    ]


def _check_csp(text: str, problem: ProblemText) -> list[Finding]:
    program = csp.parse(text)
    letters = option_letters(problem.options)
    findings = _letters_mismatch(
        "Query",
        {o.letter for o in program.options},
        letters,
        "write one option per problem option, with the problem's letters",
        program.options[0].line if program.options else None,
    )
    norm = {k: re.sub(r"\W+", " ", v.lower()).strip() for k, v in letters.items()}
    for o in program.options:
        c = re.sub(r"\W+", " ", o.comment.lower()).strip()
        if c and norm.get(o.letter) != c:
            other = [k for k, v in norm.items() if v == c]
            if other:
                findings.append(
                    Finding(
                        "answer_format",
                        "error",
                        f"option {o.letter}) has the text of option {other[0]}) ({letters[other[0]]!r}); the problem's "
                        f"option {o.letter}) is {letters.get(o.letter)!r}",
                        o.line,
                    )
                )
    findings += _csp_option_position(text, program, letters)
    start: set[str] = set()
    for o in program.options:
        start |= _csp_vars(o.expr)
    premises = [(c.line, _csp_vars(c.expr)) for c in program.constraints]
    for line in _components(premises, start):
        findings.append(
            Finding(
                "disconnected_premises",
                "info",
                f"the constraint on line {line} shares no variable with the options, even through other constraints, "
                "so it cannot affect the answer",
                line,
            )
        )
    return findings


def _csp_option_position(text: str, program: Any, letters: dict[str, str]) -> list[Finding]:
    """``option_position`` for logiclm-csp (see the module docstring)."""
    ints = [v for v in program.variables if v.type == csp.Type.INT and v.domain]
    if not ints:
        return []
    lo, hi = min(min(v.domain) for v in ints), max(max(v.domain) for v in ints)  # type: ignore[type-var]
    ends = []
    for n in program.notes:
        m = _NOTE_RE.match(n.text)
        if m and int(m.group(1)) in (lo, hi):
            ends.append((int(m.group(1)), _end_phrases(m.group(2))))
    # The constraints that state a position in their comment show which reading the program
    # follows: when they all follow the option's reading against the notes, the notes are the odd
    # one out and the answer is right as written (no correction); when they follow the notes (or
    # none states a position) the option is the odd one out.
    agree = disagree = 0
    for c in program.constraints:
        pair = _position_literal(c.expr)
        want = _position(c.comment, ends, lo, hi) if pair and c.comment else None
        if want is not None:
            agree += want == pair[1]  # type: ignore[index]
            disagree += want != pair[1]  # type: ignore[index]
    findings = []
    for o in program.options:
        pair = _position_literal(o.expr)
        option_text = letters.get(o.letter)
        if pair is None or option_text is None:
            continue
        name, value = pair
        want = _position(option_text, ends, lo, hi)
        if want is None or want == value:
            continue
        notes = "; ".join(n.text for n in program.notes)
        if disagree and not agree:
            findings.append(
                Finding(
                    "option_position",
                    "warning",
                    f"option {o.letter}) {o.text!r} puts {name} at {value}, but the option's text {option_text!r} "
                    f"names position {want} under the Domain notes ({notes}); the constraints read positions the "
                    "option's way, so the Domain notes are reversed",
                    o.line,
                )
            )
            continue
        correction = None
        if not disagree:
            lines = text.split("\n")
            code, sep, comment = lines[o.line - 1].partition(":::")
            new_code = re.sub(rf"(?<![\w.]){value}(?![\w.])", str(want), o.text, count=1)
            lines[o.line - 1] = code.replace(o.text, new_code, 1) + sep + comment
            correction = "\n".join(lines)
            if new_code == o.text or _parses(csp.parse, correction) is None:
                correction = None
        findings.append(
            Finding(
                "option_position",
                "error",
                f"option {o.letter}) {o.text!r} puts {name} at {value}, but the option's text {option_text!r} "
                f"names position {want} under the Domain notes ({notes})",
                o.line,
                correction,
            )
        )
    return findings


# --------------------------------------------------------------------------- logiclm-smt


def _check_smt(text: str, problem: ProblemText) -> list[Finding]:
    program = lsat.parse(text)
    return _smt_answer_format(program, problem) + _smt_modality(text, program, problem)


def _smt_answer_format(program: Any, problem: ProblemText) -> list[Finding]:
    return _letters_mismatch(
        "Options",
        {o.letter for o in program.options},
        option_letters(problem.options),
        "write one option check per problem option, marked ::: (A) and so on",
        program.options[0].line if program.options else None,
    )


_MODAL_NEGATIVE = re.compile(
    r"\b(?:cannot|can ?not|could not|couldn't|can't|must be false|impossible|"
    r"not (?:be )?(?:allowed|acceptable|possible|permissible))\b"
)
_MODAL_MUST = re.compile(r"\bmust\b")
_MODAL_COULD = re.compile(r"\b(?:could|can|acceptable|allowable|permissible|possible|allowed)\b")
#: What each asked check means, in words for the finding.
_MODAL_WORDS = {
    "is_sat": "which option could be true (is_sat: consistent with the constraints)",
    "is_valid": "which option must be true (is_valid: true in every model of the constraints)",
    "is_unsat": "which option cannot be true (is_unsat: inconsistent with the constraints)",
    "is_exception(is_sat)": "which option is the EXCEPTION to 'could be true' (is_exception(is_sat(...)))",
    "is_exception(is_valid)": "which option is the EXCEPTION to 'must be true' (is_exception(is_valid(...)))",
}


def _asked_check(question: str) -> str | None:
    """The option check a question's main clause asks for (see ``option_modality``), or None."""
    text = question.lower()
    clause = re.search(r"\bwhich\b(.*)", text, re.DOTALL) or re.search(r"\bfollowing\b(.*)", text, re.DOTALL)
    if clause is None or re.search(r"\bif\b", clause.group(1)):
        return None
    span = clause.group(1)
    kinds = set()
    if _MODAL_NEGATIVE.search(span):
        kinds.add("is_unsat")
        span = _MODAL_NEGATIVE.sub(" ", span)
    if _MODAL_MUST.search(span):
        kinds.add("is_valid")
    if _MODAL_COULD.search(span):
        kinds.add("is_sat")
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if re.search(r"\bexcept\b", span):
        return None if kind == "is_unsat" else f"is_exception({kind})"
    return kind


#: Checks that mean the same: the exception of "could be true" is "cannot be true" and vice versa.
_SAME_CHECK = {"is_exception(is_sat)": "is_unsat", "is_exception(is_unsat)": "is_sat"}


def _check_meaning(check: Any) -> str:
    """A check's meaning as an :func:`_asked_check` value, equivalent spellings mapped to one value."""
    name = f"is_exception({check.inner.kind})" if check.kind == "is_exception" and check.inner else check.kind
    return _SAME_CHECK.get(name, name)


_OPTION_CALL = re.compile(r"^(\s*)(is_\w+)\s*\((.*)\)\s*$", re.DOTALL)


def _rewrite_check(code: str, asked: str) -> str | None:
    """One option's code with its check rewritten to ``asked``; None when its shape is not ``f(...)``/``f(g(...))``."""
    call = _OPTION_CALL.match(code)
    if call is None:
        return None
    indent, name, argument = call.groups()
    if name == "is_exception":
        inner = _OPTION_CALL.match(argument)
        if inner is None:
            return None
        argument = inner.group(3)
    wrapper = re.fullmatch(r"is_exception\((\w+)\)", asked)
    if wrapper:
        return f"{indent}is_exception({wrapper.group(1)}({argument}))"
    return f"{indent}{asked}({argument})"


def _smt_modality(text: str, program: Any, problem: ProblemText) -> list[Finding]:
    asked = _asked_check(problem.question)
    checks = [o.check for o in program.options]
    if (
        asked is None
        or not checks
        or any(
            c.kind == "is_accurate_list" or (c.inner is not None and c.inner.kind == "is_accurate_list") for c in checks
        )
    ):
        return []
    wrong = [o for o in program.options if _check_meaning(o.check) != _SAME_CHECK.get(asked, asked)]
    if not wrong:
        return []
    lines = text.split("\n")
    corrected: str | None = None
    for option in program.options:  # every option: the question asks one thing of all of them
        code, sep, comment = lines[option.line - 1].partition(":::")
        new = _rewrite_check(code.rstrip(), asked)
        if new is None:
            break
        lines[option.line - 1] = new + (f" {sep}{comment}" if sep else "")
    else:
        corrected = "\n".join(lines)
        again = _parses(lsat.parse, corrected)  # the rewrite must parse and ask what the question asks
        if again is None or any(_check_meaning(o.check) != _SAME_CHECK.get(asked, asked) for o in again.options):
            corrected = None
    used = sorted({o.check.describe() for o in wrong})
    form = f"{asked[:-1]}(<formula>))" if asked.startswith("is_exception") else f"{asked}(<formula>)"
    return [
        Finding(
            "option_modality",
            "error",
            f"the question asks {_MODAL_WORDS[asked]}, but option(s) {', '.join(o.letter for o in wrong)} check "
            f"{', '.join(used)}; write every option as {form}",
            wrong[0].line,
            corrected,
        )
    ]


_CHECKERS: dict[str, Callable[[str, ProblemText], list[Finding]]] = {
    "logiclm-lp": _check_lp,
    "logiclm-lp-swipl": _check_lp,
    "logiclm-fol": _check_fol,
    "logiclm-csp": _check_csp,
    "logiclm-smt": _check_smt,
}
