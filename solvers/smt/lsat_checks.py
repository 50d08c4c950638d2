"""The formalization checks of ``logiclm-smt`` (the AR-LSAT DSL): answer format (option letters) and
option modality (the option checks ask what the question asks).

Each check is defined in :mod:`symbolkg.solvers.checks`, which runs :func:`check`; it only parses
the program (:mod:`symbolkg.solvers.smt.lsat_syntax`), never runs it.
"""

from __future__ import annotations

import re
from typing import Any

from symbolkg.solvers.answer_options import option_letters
from symbolkg.solvers.findings import Finding, ProblemText
from symbolkg.solvers.shared_checks import letters_mismatch, parses
from symbolkg.solvers.smt import lsat_syntax as lsat


def check(text: str, problem: ProblemText) -> list[Finding]:
    program = lsat.parse(text)
    return _smt_answer_format(program, problem) + _smt_modality(text, program, problem)


def _smt_answer_format(program: Any, problem: ProblemText) -> list[Finding]:
    return letters_mismatch(
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
        again = parses(lsat.parse, corrected)  # the rewrite must parse and ask what the question asks
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
