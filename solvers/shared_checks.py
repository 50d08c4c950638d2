"""The parts of the formalization checks that several languages share.

Reading the question's statement and matching it against a predicate and its constants
(``query_polarity``: LP and FOL), one concept under two names (``one_name``: LP and FOL), the
answer formats (verdict options for LP and FOL, option letters for CSP and the AR-LSAT DSL),
premises disconnected from the query, and the text edits a correction makes. The checks are
defined in :mod:`symbolkg.solvers.checks`; each language's ``checks`` module applies these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.answer_options import VERDICT_TEXTS, option_letters
from symbolkg.solvers.findings import Finding, ProblemText
from symbolkg.solvers.outcomes import ProgramError

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


def states(sentences: Sequence[str], predicate: str, args: Sequence[object], value: bool) -> bool:
    """Whether one of ``sentences`` states the atom ``predicate(args..., value)`` in its own words.

    Every word of every argument and every content word of the predicate's name occur in the
    sentence (plural and verb ``s`` endings aside), and the sentence is negated exactly when the
    atom is false; a negation in the name (``NotHot``) counts as one (:mod:`symbolkg.solvers.lp.revision`).

    >>> states(["Alex is not small."], "Small", ["alex"], False), states(["Alex is small."], "NotSmall", ["alex"], True)
    (True, False)
    """
    name = _words(predicate)
    negated_name = sum(w in _NAME_NEGATIONS for w in name) % 2 == 1
    concept = [w for w in _content(name) if w not in _NAME_NEGATIONS]
    required = concept + [w for a in args for w in _words(str(a))]
    if not concept:
        return False
    for sentence in sentences:
        words = _words(sentence)
        negated = sum(w in _NEGATIONS or w in _NAME_NEGATIONS for w in words) % 2 == 1
        if negated == (value == negated_name) and all(any(_same_word(r, w) for w in words) for r in required):
            return True
    return False


@dataclass(frozen=True)
class Sentence:
    """The statement a True/False question asks about."""

    text: str
    words: tuple[str, ...]  # content words, negations removed
    negated: bool


def question_sentence(question: str) -> Sentence | None:
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
    return Sentence(text, content, bool(negations))


def _replace_code(line: str, new_code: str) -> str:
    """Replace the code part of a program line, keeping an inline ``Query:`` header and a ``:::`` comment."""
    code, sep, comment = line.partition(":::")
    header = re.match(r"^(\s*[#*\s]*(?:query|queries|conclusion)\s*\**\s*:\s*\**\s*)(\S.*)$", code, re.IGNORECASE)
    prefix = header.group(1) if header else re.match(r"^\s*", code).group(0)  # type: ignore[union-attr]
    return f"{prefix}{new_code}" + (f" {sep} {comment.strip()}" if sep else "")


def replace_line(text: str, line: int, new_code: str) -> str:
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


def parses(parse: Callable[[str], Any], text: str) -> Any | None:
    try:
        return parse(text)
    except ProgramError:
        return None


# --------------------------------------------------------------------------- shared check logic


def polarity_expectation(
    pred: str, constants: list[str], predicates: set[str], all_constants: set[str], sentence: Sentence
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


def components(premises: list[tuple[int, set[str]]], start: set[str]) -> list[int]:
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


def verdict_options(problem: ProblemText) -> list[Finding]:
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


def one_name(
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
            if parses(parse, correction) is None:
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


def letters_mismatch(
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
