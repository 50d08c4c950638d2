"""The formalization checks of ``logiclm-csp``: answer format (option letters and texts), option
position (against the ``Domain:`` notes), disconnected constraints.

Each check is defined in :mod:`symbolkg.solvers.checks`, which runs :func:`check`; it only parses
the program (:mod:`symbolkg.solvers.csp.syntax`), never runs it.
"""

from __future__ import annotations

import re
from typing import Any

from symbolkg.solvers.answer_options import option_letters
from symbolkg.solvers.csp import syntax as csp
from symbolkg.solvers.findings import Finding, ProblemText
from symbolkg.solvers.shared_checks import components, letters_mismatch, parses

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


def check(text: str, problem: ProblemText) -> list[Finding]:
    program = csp.parse(text)
    letters = option_letters(problem.options)
    findings = letters_mismatch(
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
    for line in components(premises, start):
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
    """``option_position`` for logiclm-csp (defined in :mod:`symbolkg.solvers.checks`)."""
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
            if new_code == o.text or parses(csp.parse, correction) is None:
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
