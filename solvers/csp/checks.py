"""The formalization checks of ``logiclm-csp``: answer format (option letters and texts), the scale's
direction and option positions (against the ``Domain:`` notes), disconnected constraints.

Each check is defined in :mod:`symbolkg.solvers.checks`, which runs :func:`check`; it only parses
the program (:mod:`symbolkg.solvers.csp.syntax`), never runs it.
"""

from __future__ import annotations

import re
from typing import Any

from symbolkg.solvers.answer_options import option_letters
from symbolkg.solvers.csp import syntax as csp
from symbolkg.solvers.findings import Finding, ProblemText
from symbolkg.solvers.shared_checks import components, letters_mismatch, parses, replace_line

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


#: The two ends of an ordering as the ``Domain:`` notes name them, each by a stem (``leftmost`` ->
#: ``left``), with the comparatives that point to that end ("to the left of", "cheaper than").
_END_STEMS = {
    "left": ("leftmost", "left"),
    "right": ("rightmost", "right"),
    "cheap": ("cheapest", "least expensive"),
    "expensive": ("most expensive",),
    "old": ("oldest",),
    "new": ("newest", "youngest"),
    "first": ("first", "1st"),
    "last": ("last",),
    "top": ("top", "topmost"),
    "bottom": ("bottom", "bottommost"),
    "high": ("highest",),
    "low": ("lowest",),
    "heavy": ("heaviest",),
    "light": ("lightest",),
    "tall": ("tallest",),
    "short": ("shortest",),
    "large": ("largest", "biggest"),
    "small": ("smallest",),
    "early": ("earliest",),
    "late": ("latest",),
    "fast": ("fastest",),
    "slow": ("slowest",),
}
_OPPOSITE = {
    "left": "right",
    "cheap": "expensive",
    "old": "new",
    "first": "last",
    "top": "bottom",
    "high": "low",
    "heavy": "light",
    "tall": "short",
    "large": "small",
    "early": "late",
    "fast": "slow",
}
_OPPOSITE.update({v: k for k, v in list(_OPPOSITE.items())})
_COMPARATIVES = {
    "left": r"(?:to\s+the\s+)?left\s+of",
    "right": r"(?:to\s+the\s+)?right\s+of",
    "cheap": r"(?:cheaper|less\s+expensive)\s+than",
    "expensive": r"(?:more\s+expensive|pricier|costlier)\s+than",
    "old": r"older\s+than",
    "new": r"(?:newer|younger)\s+than",
    "first": r"(?:above|before|ahead\s+of|earlier\s+than)",
    "last": r"(?:below|after|behind|later\s+than)",
    "top": r"above",
    "bottom": r"below",
    "high": r"higher\s+than",
    "low": r"lower\s+than",
    "heavy": r"heavier\s+than",
    "light": r"lighter\s+than",
    "tall": r"taller\s+than",
    "short": r"shorter\s+than",
    "large": r"(?:larger|bigger)\s+than",
    "small": r"smaller\s+than",
    "early": r"earlier\s+than",
    "late": r"later\s+than",
    "fast": r"faster\s+than",
    "slow": r"slower\s+than",
}
_SWAP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def _end_stem(note: str) -> str | None:
    """The end a Domain note names (``"leftmost"`` -> ``"left"``), or None when it names no end."""
    note = re.sub(r"^(?:the|is|are)\s+", "", note.lower().strip().rstrip("."))
    return next((stem for stem, words in _END_STEMS.items() if note in words), None)


def _scale(program: Any) -> tuple[int, int, dict[int, str]] | None:
    """The ordering the Domain notes fix: (lo, hi, value -> end stem) over the int variables' range.

    One note naming an end suffices (the other end is its opposite); notes naming both must be
    opposite ends. None when the notes name no end, or ends that do not pair.
    """
    ints = [v for v in program.variables if v.type == csp.Type.INT and v.domain]
    if not ints:
        return None
    lo, hi = min(min(v.domain) for v in ints), max(max(v.domain) for v in ints)  # type: ignore[type-var]
    named: dict[int, str] = {}
    for n in program.notes:
        m = _NOTE_RE.match(n.text)
        if m and int(m.group(1)) in (lo, hi):
            stem = _end_stem(m.group(2))
            if stem is not None and stem in _OPPOSITE:
                named.setdefault(int(m.group(1)), stem)
    if not named or lo == hi:
        return None
    if len(named) == 2 and _OPPOSITE[named[lo]] != named[hi]:
        return None
    given, stem = next(iter(named.items()))
    other = hi if given == lo else lo
    return lo, hi, {given: stem, other: _OPPOSITE[stem]}


def _mention(name: str, text: str) -> int | None:
    """Where variable ``name`` (``blue_book``) is first named in ``text`` ("the blue book"), or None."""
    words = [re.escape(w) for w in re.split(r"[_\s]+", name.lower()) if w]
    m = re.search(r"\b" + r"[\s_-]+".join(words) + r"(?:e?s)?\b", text) if words else None
    return m.start() if m else None


def _comparison_wants(c: Any, ends: dict[int, str], lo: int) -> tuple[bool, str] | None:
    """For ``a < b ::: "A is left of B"``: (whether the code follows the notes, the fixed code), or None.

    The comment's subject (the variable it names first) is nearer the end its comparative points to
    than the other variable; with that end at ``lo`` the subject's value is the smaller.
    """
    e = c.expr
    if not (isinstance(e, csp.Compare) and len(e.ops) == 1 and e.ops[0] in _SWAP):
        return None
    if not all(isinstance(x, csp.VarRef) for x in e.operands):
        return None
    a, b = (x.name for x in e.operands)
    text = c.comment.lower()
    pa, pb = _mention(a, text), _mention(b, text)
    if pa is None or pb is None or pa == pb:
        return None
    between = text[min(pa, pb) : max(pa, pb)]
    stems = {stem for stem, pattern in _COMPARATIVES.items() if re.search(rf"\b{pattern}\b", between)}
    stems &= set(ends.values())
    if len(stems) != 1:
        return None
    (stem,) = stems
    subject = a if pa < pb else b
    toward_lo = next(v for v, s in ends.items() if s == stem) == lo
    smaller = a if e.ops[0] in ("<", "<=") else b
    follows = (smaller == subject) == toward_lo
    fixed = re.sub(r"(<=|>=|<|>)", lambda m: _SWAP[m.group(1)], c.text, count=1)
    return follows, fixed


def _csp_scale_direction(text: str, program: Any, letters: dict[str, str]) -> list[Finding]:
    """``scale_direction`` for logiclm-csp (defined in :mod:`symbolkg.solvers.checks`)."""
    scale = _scale(program)
    if scale is None:
        return []
    lo, hi, ends = scale
    phrases = [(v, list(_END_STEMS[s])) for v, s in ends.items()]
    verdicts: list[tuple[Any, bool, str, str]] = []  # (constraint, follows, fixed code, what it says)
    for c in program.constraints:
        if not c.comment:
            continue
        pair = _position_literal(c.expr)
        if pair is not None:
            want = _position(c.comment, phrases, lo, hi)
            if want is not None:
                fixed = re.sub(rf"(?<![\w.]){pair[1]}(?![\w.])", str(want), c.text, count=1)
                verdicts.append((c, want == pair[1], fixed, f"position {want}"))
            continue
        compared = _comparison_wants(c, ends, lo)
        if compared is not None:
            verdicts.append((c, compared[0], compared[1], "the other order"))
    for o in program.options:  # options count as witnesses of the reading; option_position corrects them
        pair = _position_literal(o.expr)
        want = _position(letters.get(o.letter, ""), phrases, lo, hi) if pair else None
        if want is not None:
            verdicts.append((o, want == pair[1], o.text, ""))  # type: ignore[index]
    agree = sum(follows for _, follows, _, _ in verdicts)
    notes = "; ".join(n.text for n in program.notes)
    findings = []
    for line, follows, fixed, says in verdicts:
        if follows or isinstance(line, csp.Option):
            continue
        message = (
            f"the constraint {line.text!r} does not read positions as the Domain notes do ({notes}): "
            f"under them its comment {line.comment!r} means {says}"
        )
        if not agree:  # no line follows the notes: the notes are the odd one out
            findings.append(
                Finding("scale_direction", "warning", message + "; every line reads them the other way", line.line)
            )
            continue
        correction = replace_line(text, line.line, fixed)
        if fixed == line.text or parses(csp.parse, correction) is None:
            correction = None
        findings.append(Finding("scale_direction", "error", message + f"; write {fixed}", line.line, correction))
    return findings


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
    findings += _csp_scale_direction(text, program, letters)
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
    scale = _scale(program)
    if scale is not None:  # an end the notes name by its opposite only ("1: leftmost", "5: hummingbird")
        known = {v for v, phrases in ends if any(_end_stem(p) for p in phrases)}
        ends = [e for e in ends if e[0] in known]
        ends += [(v, list(_END_STEMS[stem])) for v, stem in scale[2].items() if v not in known]
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
