"""Prompts of the SymBa method, and the parsers of their output.

SymBa (Lee & Hwang, 2025) asks the LLM for one reasoning step only when the backward chainer
(:mod:`symbolkg.solvers.symba.engine`) meets a subgoal that no clause can prove. One step is four
calls, each a module of its own:

* **fact search**: the context and the subgoal -> the sentences that state it, or the
  sentinel :data:`NO_FACT`;
* **fact translation**: one such sentence and the subgoal -> one fact, or :data:`NO_STATEMENT`
  when the sentence does not state the subgoal;
* **rule search** / **rule translation**: the same for rules whose conclusion matches it.

The few-shot examples are this project's own (deductive, relational and arithmetic), and each
module shows a negative example (nothing applicable; a sentence that does not match), which the
paper found to matter. Every prompt puts what is fixed first (instructions, examples), then the
context shared by every call of a problem, then the subgoal: the layout a prefix cache shares.

The last user message carries the request's fields on lines of their own (``Goal: ...``,
``Sentence: ...``), so that :func:`read_request` can tell what a call asks without the method's
help (the gold engine answers from it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["fact", "rule"]
MODULES = ("fact-search", "fact-translate", "rule-search", "rule-translate")

NO_FACT = "No applicable fact."
NO_RULE = "No applicable rule."
NO_STATEMENT = "No statement."
MAX_SENTENCES = 6  # the most sentences one search may return

_SEARCH_SYSTEM = {
    "fact": (
        "You are the fact-search step of a logic prover. The prover needs to prove a goal written in logic "
        "notation. Copy from the text every sentence that directly states the goal as a fact (at most six, "
        f"one per line, word for word). If no sentence states it, answer exactly: {NO_FACT}"
    ),
    "rule": (
        "You are the rule-search step of a logic prover. The prover needs to prove a goal written in logic "
        "notation, and no fact states it. Copy from the text every sentence that is a general rule (an if-then "
        "statement, a definition, a calculation) whose conclusion is the goal (at most six, one per line, word "
        f"for word). If no sentence concludes it, answer exactly: {NO_RULE}"
    ),
}
_TRANSLATE_SYSTEM = {
    "fact": (
        "You are the fact-translation step of a logic prover. Translate the sentence into one logic-program "
        "fact that proves the goal: reuse the goal's predicate name and constants, lower-case constants, end "
        f"with a period. If the sentence does not state the goal, answer exactly: {NO_STATEMENT}"
    ),
    "rule": (
        "You are the rule-translation step of a logic prover. Translate the sentence into one logic-program "
        "rule `head :- body.` whose head proves the goal: reuse the goal's predicate names, write variables in "
        "upper case, `not` for negation, `X = A + B` for arithmetic, end with a period. If the sentence does not "
        f"conclude the goal, answer exactly: {NO_STATEMENT}"
    ),
}

_TEXT_A = (
    "Anne is kind. The cat chases the mouse. If someone is kind and young then they are happy. "
    "Anne is young. Big things are not blue."
)
_TEXT_B = "[Mia] baked a cake with her father [Tom]. [Tom]'s sister [Ada] came over to help."
_TEXT_C = "Sam has 12 apples. He gives away a third of them. How many apples does Sam have left?"

#: (text, goal, answer) per search kind: positive and negative examples.
_SEARCH_EXAMPLES: dict[Kind, tuple[tuple[str, str, str], ...]] = {
    "fact": (
        (_TEXT_A, "is(anne, kind)", "Anne is kind."),
        (_TEXT_B, "isRelationOf(ada, sister, tom)", "[Tom]'s sister [Ada] came over to help."),
        (_TEXT_C, "has(sam, apples, N)", "Sam has 12 apples."),
        (_TEXT_A, "chases(mouse, cat)", NO_FACT),
    ),
    "rule": (
        (_TEXT_A, "is(anne, happy)", "If someone is kind and young then they are happy."),
        (_TEXT_C, "answer(X)", "He gives away a third of them. How many apples does Sam have left?"),
        (_TEXT_A, "is(cat, red)", NO_RULE),
    ),
}
#: (goal, sentence, answer) per translation kind: positive and negative examples.
_TRANSLATE_EXAMPLES: dict[Kind, tuple[tuple[str, str, str], ...]] = {
    "fact": (
        ("is(anne, kind)", "Anne is kind.", "is(anne, kind)."),
        (
            "isRelationOf(ada, sister, tom)",
            "[Tom]'s sister [Ada] came over to help.",
            "isRelationOf(ada, sister, tom).",
        ),
        ("has(sam, apples, N)", "Sam has 12 apples.", "has(sam, apples, 12)."),
        ("is(anne, big)", "Anne is young.", NO_STATEMENT),
    ),
    "rule": (
        (
            "is(anne, happy)",
            "If someone is kind and young then they are happy.",
            "is(X, happy) :- is(X, kind), is(X, young).",
        ),
        ("-is(box, blue)", "Big things are not blue.", "-is(X, blue) :- is(X, big)."),
        (
            "answer(X)",
            "He gives away a third of them. How many apples does Sam have left?",
            "answer(X) :- has(sam, apples, N), X = N - N / 3.",
        ),
        ("is(anne, happy)", "The cat chases the mouse.", NO_STATEMENT),
    ),
}


def _literal(text: str) -> str:
    """``text`` as a regex matching itself (only metacharacters escaped: xgrammar warns on ``\\ ``)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


#: Structured-decoding constraints (vLLM regex): the sentinel or sentences; the sentinel or one clause.
SEARCH_REGEX = {
    "fact": rf"({_literal(NO_FACT)}|[^\n]{{1,300}}(\n[^\n]{{1,300}}){{0,{MAX_SENTENCES - 1}}})",
    "rule": rf"({_literal(NO_RULE)}|[^\n]{{1,300}}(\n[^\n]{{1,300}}){{0,{MAX_SENTENCES - 1}}})",
}
TRANSLATE_REGEX = {
    # no ":-" in a fact (a ':' only inside a quoted string); `not p(a).` states that p(a) is false
    "fact": rf"({_literal(NO_STATEMENT)}|(not )?-?[a-z][A-Za-z0-9_]*(\((\"[^\"\n]{{0,300}}\"|[^\n:\"]){{1,400}}\))?\.)",
    "rule": rf"({_literal(NO_STATEMENT)}|(not )?-?[a-z][A-Za-z0-9_]*(\([^\n]{{1,200}}\))? :- [^\n]{{1,400}}\.)",
}


def _search_user(text: str, goal: str) -> str:
    return f"Text:\n{text}\n\nGoal: {goal}"


def _translate_user(goal: str, sentence: str) -> str:
    return f"Sentence: {sentence}\nGoal: {goal}"


def search_messages(kind: Kind, context: str, goal: str) -> list[tuple[str, str]]:
    """(role, content) pairs of a fact or rule search for ``goal`` over ``context``."""
    pairs: list[tuple[str, str]] = [("system", _SEARCH_SYSTEM[kind])]
    for text, example_goal, answer in _SEARCH_EXAMPLES[kind]:
        pairs += [("user", _search_user(text, example_goal)), ("assistant", answer)]
    pairs.append(("user", _search_user(context, goal)))
    return pairs


def translate_messages(kind: Kind, goal: str, sentence: str) -> list[tuple[str, str]]:
    """(role, content) pairs of the translation of ``sentence`` into a statement that proves ``goal``."""
    pairs: list[tuple[str, str]] = [("system", _TRANSLATE_SYSTEM[kind])]
    for example_goal, example_sentence, answer in _TRANSLATE_EXAMPLES[kind]:
        pairs += [("user", _translate_user(example_goal, example_sentence)), ("assistant", answer)]
    pairs.append(("user", _translate_user(goal, sentence)))
    return pairs


@dataclass(frozen=True)
class Request:
    """What one SymBa call asks, read back from its messages (:func:`read_request`)."""

    module: str  # one of MODULES
    goal: str
    sentence: str | None = None  # translations only


_FIELD = re.compile(r"^(Goal|Sentence): (.*)$", re.MULTILINE)


def read_request(kind_module: str, last_user_message: str) -> Request:
    """The goal (and sentence) of a call of ``kind_module`` from its last user message.

    Raises:
        ValueError: the message is not one this module wrote.
    """
    if kind_module not in MODULES:
        raise ValueError(f"not a SymBa module: {kind_module!r}")
    found = dict(_FIELD.findall(last_user_message))
    if "Goal" not in found or (kind_module.endswith("translate") and "Sentence" not in found):
        raise ValueError(f"not a SymBa {kind_module} prompt: no Goal/Sentence line")
    return Request(kind_module, found["Goal"].strip(), found.get("Sentence"))


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")


def parse_search(text: str) -> list[str]:
    """The sentences a search returned (none for the sentinel or empty output), at most MAX_SENTENCES.

    >>> parse_search("1. Anne is kind.\\n- Anne is young.")
    ['Anne is kind.', 'Anne is young.']
    >>> parse_search("No applicable fact.")
    []
    """
    sentences: list[str] = []
    for line in text.strip().splitlines():
        line = _BULLET.sub("", line).strip().strip('"').strip()
        if not line:
            continue
        if line.lower().startswith("no applicable"):
            return [] if not sentences else sentences
        if line not in sentences:
            sentences.append(line)
        if len(sentences) == MAX_SENTENCES:
            break
    return sentences


_FENCE = re.compile(r"^```\w*\s*$")


def parse_translation(text: str) -> str | None:
    """The statement a translation returned, or None for the sentinel or no statement.

    Tolerates what models add around it: code fences, a ``Statement:`` label, a missing
    final period, text after the first statement line.

    >>> parse_translation("```prolog\\nis(anne, kind)\\n```")
    'is(anne, kind).'
    >>> parse_translation("No statement.") is None
    True
    """
    for line in text.strip().splitlines():
        line = line.strip()
        if not line or _FENCE.match(line):
            continue
        if line.lower().startswith("no statement"):
            return None
        line = re.sub(r"^(statement|fact|rule|answer)\s*:\s*", "", line, flags=re.IGNORECASE).strip().strip("`").strip()
        if not line:
            continue
        return line if line.endswith(".") else line + "."
    return None


def sentinel(kind: Kind) -> str:
    """What a search of ``kind`` answers when nothing applies."""
    return NO_FACT if kind == "fact" else NO_RULE


def few_shot_goals() -> Sequence[str]:
    """Every goal the examples use (tests check that each parses as a goal of the clause language)."""
    goals = [g for examples in _SEARCH_EXAMPLES.values() for _, g, _ in examples]
    return goals + [g for examples in _TRANSLATE_EXAMPLES.values() for g, _, _ in examples]


def few_shot_statements() -> Sequence[str]:
    """Every statement the translation examples answer (tests check that each parses)."""
    return [a for examples in _TRANSLATE_EXAMPLES.values() for _, _, a in examples if a != NO_STATEMENT]
