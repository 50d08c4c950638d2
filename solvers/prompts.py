"""Prompts and output parsing for the LLM methods ``direct``, ``cot`` and ``logiclm``.

This module builds chat messages and parses completions; it never calls a model
(stage code in ``jobs/`` does, through an engine it is given) and imports nothing
outside ``solvers/``. Messages are lists of ``(role, content)`` tuples with
``role`` in ``system`` / ``user`` / ``assistant``; the caller converts them to its
own message type.

Logic-LM (``logiclm``): :func:`formulation_messages` asks for a program in the
problem's language (one of :data:`EXAMPLES`); :func:`extract_program` cuts the
program out of the completion; the solver runs it; on an error (or when it runs
but gives no unique answer) :func:`refine_messages` continues the formulation
conversation: the model's own reply, then the solver's message (with the line it
points at) and a request for a corrected program.

Each language's prompt lives beside its parser (``solvers/lp/prompts.py``, ``solvers/fol/prompts.py``,
``solvers/csp/prompts.py``, ``solvers/smt/lsat_prompts.py``, made of :mod:`symbolkg.solvers.prompt_parts`);
this module builds the messages of all of them. Each language's system message states exactly what its
parser accepts (:mod:`symbolkg.solvers.lp.syntax`, :mod:`symbolkg.solvers.fol.syntax`,
:mod:`symbolkg.solvers.csp.syntax`, :mod:`symbolkg.solvers.smt.lsat_syntax`) and is followed by
hand-written few-shot examples (:data:`EXAMPLES`: made-up problems in the style of each dataset, not
taken from any dev set or from Logic-LM's prompts); the tests run every example program through its
solver and check the intended answer. Prompts are laid out for an engine's prefix cache (vLLM): the
fixed system message and examples first, then the problem (context before question), and a refine
prompt is the formulation prompt, word for word, followed by the model's reply to it and the error:
the engine computes only the error turn anew.

Baselines: :func:`direct_messages` (answer letter only) and :func:`cot_messages`
(short reasoning ending with ``The answer is X.``); :func:`extract_answer` reads
the option letter back; :func:`answer_structured_output` gives the matching
decoding constraint.

Structured decoding (:func:`program_structured_output`): the LP language gets a
regular expression of its full line grammar (sections, declarations, atoms,
rules, one query atom); the other languages get a regular expression of their
section skeleton (headers in order, one item per line, option lines of the right
shape, nothing after the last section), which keeps prose and Markdown out but
does not check formulas. All regexes use only what both xgrammar and Python's
``re`` read the same way: no flags, lookarounds or backreferences. With
``constraint="full"`` every language gets the grammar of its whole program instead
(GBNF, kept beside its parser: ``solvers/<family>/grammar.py``), bounded so that a
completion that stops is a whole program.

Example:
    >>> msgs = formulation_messages("logiclm-lp", "Bob is big.", "Is Bob big?", ["A) True", "B) False"])
    >>> [role for role, _ in msgs][:2], msgs[-1][0]
    (['system', 'user'], 'user')
    >>> extract_answer("Reasoning...\\nThe answer is B.", ["A) True", "B) False"])
    'B'
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from symbolkg.solvers.csp import grammar as csp_grammar
from symbolkg.solvers.csp import prompts as csp_prompts
from symbolkg.solvers.fol import grammar as fol_grammar
from symbolkg.solvers.fol import prompts as fol_prompts
from symbolkg.solvers.lp import grammar as lp_grammar
from symbolkg.solvers.lp import prompts as lp_prompts
from symbolkg.solvers.prompt_parts import ONLY, FewShot
from symbolkg.solvers.smt import lsat_grammar, lsat_prompts

Messages = list[tuple[str, str]]


# --------------------------------------------------------------------------- the languages

#: Logic-LM language -> its prompt module, beside its parser (system message, examples, section
#: headers, skeleton regex).
_LANGUAGES = {
    "logiclm-lp": lp_prompts,
    "logiclm-fol": fol_prompts,
    "logiclm-csp": csp_prompts,
    "logiclm-smt": lsat_prompts,
}

#: Few-shot examples per language, in prompt order.
EXAMPLES: dict[str, tuple[FewShot, ...]] = {language: module.EXAMPLES for language, module in _LANGUAGES.items()}


def _check_language(language: str) -> None:
    if language not in _LANGUAGES:
        raise ValueError(f"no prompts for language {language!r}; known: {', '.join(sorted(_LANGUAGES))}")


# --------------------------------------------------------------------------- problem text


def _problem_text(context: str, question: str, options: Sequence[str], hints: str = "") -> str:
    parts = [f"Context:\n{context.strip()}"]
    if hints.strip():
        parts.append(hints.strip())
    parts.append(f"Question: {question.strip()}")
    if options:
        parts.append("Options:\n" + "\n".join(o.strip() for o in options))
    return "\n\n".join(parts)


def _program_prefix(language: str) -> Messages:
    """System message and few-shot turns: the shared prefix of formulation and refine prompts."""
    _check_language(language)
    messages: Messages = [("system", _LANGUAGES[language].SYSTEM)]
    for ex in EXAMPLES[language]:
        messages.append(("user", _problem_text(ex.context, ex.question, ex.options)))
        messages.append(("assistant", ex.program))
    return messages


def formulation_messages(
    language: str, context: str, question: str, options: Sequence[str], hints: str = ""
) -> Messages:
    """Messages asking for a program in ``language`` for one problem.

    Args:
        language: a Logic-LM language (a key of :data:`EXAMPLES`).
        context: the problem's premises or setup.
        question: the question, as the dataset phrases it.
        options: the answer options (``"A) True"`` ...), shown to the model.
        hints: extra text between the context and the question (the symbols of a retrieved
            knowledge-graph subgraph, :func:`symbolkg.jobs.methods.symbolkg_stages.subgraph_hints`); empty for none.

    Returns:
        System message, few-shot user/assistant turns, then the problem as the last user turn.

    Raises:
        ValueError: ``language`` has no prompts.
    """
    return _program_prefix(language) + [("user", _problem_text(context, question, options, hints))]


#: Longest solver message quoted in a refine prompt (characters); the rest is cut.
MAX_ERROR_CHARS = 1500

_REFINE_LEADS = {
    "no_answer": "The program runs, but it does not give exactly one answer.",
    "inconsistent": "The program runs, but its premises contradict each other, so they prove anything.",
    "timeout": "The solver ran out of time on the program; make it simpler.",
    "memory": "The solver ran out of memory on the program; make it simpler.",
    "formalization": "The program runs, but it does not say what the problem says.",
}


def refine_messages(
    language: str,
    context: str,
    question: str,
    options: Sequence[str],
    program: str,
    error_kind: str | None,
    error_message: str,
    error_line: int | None,
    hints: str = "",
    reply: str | None = None,
) -> Messages:
    """Messages asking for a corrected program after the solver rejected ``program``.

    Also for a program that ran but gave no unique answer (``error_kind="no_answer"``):
    the message then says so and carries the solver's explanation (entailed options,
    the atom derived both ways, an unsatisfiable core).

    The messages continue the formulation conversation: the formulation prompt as
    :func:`formulation_messages` builds it, the model's reply as the assistant turn, then
    one user turn with the error (quoting the line it points at) and the request for a
    full corrected program. So the whole prompt up to the error turn is what the engine
    saw and wrote before, and its prefix cache serves it.

    Args:
        language: the program's language.
        context, question, options: the problem, as for :func:`formulation_messages`.
        program: the program as it was run (what ``error_line`` counts lines in).
        error_kind: an :class:`symbolkg.solvers.outcomes.ErrorKind` value, or None.
        error_message: the solver's message.
        error_line: 1-based line the error refers to, if known.
        hints: as for :func:`formulation_messages`.
        reply: the model's completion the program was extracted from, exactly as it came
            (default ``program``): the assistant turn.

    Returns:
        The formulation messages, the assistant turn and one user turn.
    """
    lines = program.splitlines()
    lead = _REFINE_LEADS.get(error_kind or "", "The solver could not run the program.")
    message = error_message.strip() or "(no message)"
    if len(message) > MAX_ERROR_CHARS:  # solver messages can carry whole models or derivations
        message = message[:MAX_ERROR_CHARS].rstrip() + " ..."
    error = f"Error ({error_kind or 'error'})"
    if error_line is not None:
        error += f" on line {error_line}"
    error += f": {message}"
    if error_line is not None and 1 <= error_line <= len(lines):
        error += f"\nLine {error_line}: {lines[error_line - 1].strip()}"
    body = f"{lead}\n{error}\n\nWrite the corrected full program. " + ONLY
    return [
        *formulation_messages(language, context, question, options, hints),
        ("assistant", program if reply is None else reply),
        ("user", body),
    ]


# --------------------------------------------------------------------------- program extraction

# A header line, possibly decorated with Markdown (**Rules:**, ## Rules, ### Rules:, **Query:** atom).
# Without a colon only the bare name counts; 'Premises ::: ...' is a formula with a comment.
_DECORATED_HEADER = re.compile(r"^[\s#*_>]*(?P<name>[A-Za-z]+)[\s*_]*(?::(?!::)[\s*_]*(?P<rest>.*))?$")
_LINE_NUMBER = re.compile(r"^\s*\d+\s*[|:]\s?")
_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def _header_of(language: str, line: str) -> tuple[str, str] | None:
    """(canonical header, rest of the line) when ``line`` is a section header of ``language``."""
    match = _DECORATED_HEADER.match(line)
    if not match:
        return None
    name = match.group("name").lower()
    for header in _LANGUAGES[language].SECTIONS:
        canonical = header.lstrip("# ").rstrip(":").lower()
        if name in (canonical, canonical + "s", "queries" if canonical == "query" else canonical):
            rest = (match.group("rest") or "").strip().strip("*_ ")
            if language == "logiclm-smt" and rest:
                return None  # '# Constraints' must be alone on its line (else it is a comment)
            return header, rest
    return None


def _pick_candidate(language: str, text: str) -> str:
    blocks = [b for b in _FENCE.findall(text) if b.strip()]
    if not blocks:
        return text

    def headers(s: str) -> int:
        return sum(1 for line in s.splitlines() if _header_of(language, line))

    best = max(blocks, key=headers)  # max() keeps the first of equals
    if headers(best):
        return best
    if any(_header_of(language, line) for line in text.splitlines()):
        return re.sub(r"^```[^\n]*$", "", text, flags=re.MULTILINE)
    return max(blocks, key=len)


def extract_program(language: str, text: str) -> str:
    """Cut the program out of an LLM completion, as the language's parser expects it.

    Takes the fenced block that holds the language's section headers (or the whole
    text), removes line numbers copied from a refine prompt (when every line has
    one), rewrites Markdown-decorated headers (``**Rules:**``, ``## Premises``) to
    the plain form, drops prose before the first header and, after the last
    section's header, everything from the first line that does not look like an
    item of that section (trailing explanations). Never raises.

    Args:
        language: the program's language.
        text: the completion.

    Returns:
        The best candidate program, stripped; possibly empty.
    """
    if language not in _LANGUAGES or not text:
        return (text or "").strip()
    candidate = _pick_candidate(language, text.replace("\r\n", "\n"))
    lines = candidate.split("\n")
    nonblank = [line for line in lines if line.strip()]
    if nonblank and all(_LINE_NUMBER.match(line) for line in nonblank):
        lines = [_LINE_NUMBER.sub("", line, count=1) for line in lines]

    out: list[str] = []
    started = False
    last = _LANGUAGES[language].SECTIONS[-1]
    in_last = False
    for line in lines:
        header = _header_of(language, line)
        if header:
            started = True
            name, rest = header
            in_last = name == last
            out.append(name)
            if rest:  # 'Query: Atom' -> the atom on its own line (the CSP parser wants that)
                out.append(rest)
            continue
        if not started:
            continue
        if line.strip().startswith("```"):
            if in_last:
                break
            continue
        if in_last and line.strip() and not _LANGUAGES[language].LAST_SECTION_LINE.match(line):
            break
        out.append(line.rstrip())
    if not started:
        return candidate.strip()
    return "\n".join(out).strip()


# --------------------------------------------------------------------------- structured decoding

#: What :func:`program_structured_output` constrains: the section skeleton (each language's
#: ``PROGRAM_REGEX``) or the full grammar.
PROGRAM_CONSTRAINTS = ("skeleton", "full")

_PROGRAM_GRAMMARS: dict[str, Callable[[], str]] = {
    "logiclm-lp": lp_grammar.program_grammar,
    "logiclm-fol": fol_grammar.program_grammar,
    "logiclm-csp": csp_grammar.program_grammar,
    "logiclm-smt": lsat_grammar.program_grammar,
}


@functools.cache
def program_grammar(language: str) -> str | None:
    """The whole-program GBNF grammar of ``language`` (built once per process), or None if it has none."""
    build = _PROGRAM_GRAMMARS.get(language)
    return build() if build else None


def program_structured_output(language: str, constraint: str = "skeleton") -> dict | None:
    """A structured-decoding constraint for programs of ``language``, or None.

    Args:
        language: the program language.
        constraint: ``"skeleton"`` (the language's ``PROGRAM_REGEX``) or ``"full"`` (the whole grammar).

    Returns:
        With ``"skeleton"``, ``{"regex": ...}``. For ``logiclm-lp`` the regex is the language's line grammar in
        the canonical spelling the prompts show (an output that matches it parses, unless
        it uses a predicate with two arities); atoms take at most three arguments before
        the truth value, so that a weak model cannot loop inside one atom.
        For FOL, CSP and the AR-LSAT DSL it is a section skeleton: headers in order,
        one item per line, nothing after the last section. It admits every recorded
        GPT-4 program that our parser accepts (tested), so it never forbids a good
        program of the style the prompts ask for. With ``"full"``, ``{"grammar": ...}``:
        the language's whole-program grammar (:func:`program_grammar`), every line's
        syntax and every repetition bounded, so a completion that ends with ``stop``
        is a whole program; it admits every recorded program of the three Logic-LM
        models that our parser accepts (``tests/solvers/test_grammars.py``).
        None for other languages.
        The output of a constrained completion needs no :func:`extract_program`,
        though running it is harmless.

    Raises:
        ValueError: ``constraint`` is not one of :data:`PROGRAM_CONSTRAINTS`.
    """
    if constraint not in PROGRAM_CONSTRAINTS:
        raise ValueError(f"constraint must be one of {', '.join(PROGRAM_CONSTRAINTS)}, got {constraint!r}")
    if constraint == "full":
        grammar = program_grammar(language)
        return {"grammar": grammar} if grammar else None
    module = _LANGUAGES.get(language)
    return {"regex": module.PROGRAM_REGEX} if module else None


# --------------------------------------------------------------------------- direct / CoT

_LETTER_PREFIX = re.compile(r"^\s*\(?([A-Za-z])\s*[).:]\s*(.*)$", re.DOTALL)


def _parse_options(options: Sequence[str]) -> list[tuple[str, str]]:
    """(letter, text) per option: ``"A) True"`` -> ``("A", "True")``; unlabelled options get A, B, ..."""
    parsed = []
    for i, option in enumerate(options):
        match = _LETTER_PREFIX.match(option)
        if match and match.group(1).isupper():
            parsed.append((match.group(1), match.group(2).strip()))
        else:
            parsed.append((chr(ord("A") + i), option.strip()))
    return parsed


_DIRECT_SYSTEM = "Answer the question about the context. Reply with the letter of the correct option only."
_COT_SYSTEM = (
    "Answer the question about the context. Reason step by step in a few short sentences, "
    "then end with a last line of the form: The answer is X. (X is the letter of the correct option.)"
)
_COT_EXAMPLE = (
    _problem_text(
        "Tom is a cat. Every cat is an animal. No animal is made of metal. Some robots are made of metal.",
        "Is the following statement true, false, or unknown? Tom is made of metal.",
        ("A) True", "B) False", "C) Unknown"),
    ),
    "Tom is a cat, so Tom is an animal. No animal is made of metal, so Tom is not made of metal. "
    "The statement is false.\nThe answer is B.",
)


def direct_messages(context: str, question: str, options: Sequence[str]) -> Messages:
    """Messages for the ``direct`` baseline: the model replies with an option letter."""
    return [("system", _DIRECT_SYSTEM), ("user", _problem_text(context, question, options))]


def cot_messages(context: str, question: str, options: Sequence[str]) -> Messages:
    """Messages for the ``cot`` baseline: short reasoning, then ``The answer is X.`` (one worked example)."""
    return [
        ("system", _COT_SYSTEM),
        ("user", _COT_EXAMPLE[0]),
        ("assistant", _COT_EXAMPLE[1]),
        ("user", _problem_text(context, question, options)),
    ]


def answer_structured_output(options: Sequence[str], *, cot: bool) -> dict | None:
    """The decoding constraint matching :func:`direct_messages` / :func:`cot_messages`.

    Returns:
        ``{"choice": ["A", "B", ...]}`` for direct answers; for CoT a regex that lets
        the model write any lines and then requires the last one to be
        ``The answer is X.`` with X an option letter. None when there are no options.
    """
    letters = sorted({letter for letter, _ in _parse_options(options)})
    if not letters:
        return None
    if not cot:
        return {"choice": letters}
    return {"regex": rf"([^\n]*\n)*The answer is [{''.join(letters)}]\."}


_MARKER = re.compile(
    r"(?:\b(?i:final\s+answer|correct\s+answer|correct\s+option|correct\s+choice|answer)\b"
    r"(?:\s*(?i:is|would\s+be|=|:|-))?(?:\s*(?i:option|choice))?\s*:?"
    r"|\\boxed\{)"
    r"(?P<rest>[^\n]*)"
)
_SYNONYMS = {
    "unknown": ("unknown", "uncertain", "undetermined", "cannot be determined", "not enough information"),
    "uncertain": ("uncertain", "unknown", "undetermined", "cannot be determined", "not enough information"),
}
_AMBIGUOUS = "?"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.lower())).strip()


def _resolve(fragment: str, parsed: list[tuple[str, str]], *, strict: bool) -> str | None:
    """The option a fragment names: a letter, ``_AMBIGUOUS``, or None.

    ``strict`` (no answer marker before the fragment): a letter counts only as
    ``B``, ``B)``, ``(B)``, ``B.``, ``B:`` and an option text only as the whole fragment.
    """
    letters = {letter for letter, _ in parsed}
    frag = re.sub(r"^[\s*_`\"'“:$]*(?:\\boxed\{)?", "", fragment).strip()
    if strict:
        match = re.match(r"\(([A-Z])\)|([A-Z])(?:[).:](?!\w)|\s*$)", frag)
    else:  # after "answer is": B, (B), [B], B) False; a lowercase letter only as b)
        match = re.match(r"[(\[{]?([A-Z])(?![A-Za-z0-9'])|\(?([a-z])\)", frag)
    if match:
        letter = (match.group(1) or match.group(2)).upper()
        if letter not in letters:
            return None
        rest = frag[match.end() :]
        other = re.match(r"[)\]}*]*\s*(?:or|and|/|,|&)\s*\(?([A-Z])(?![A-Za-z0-9'])", rest)
        if other and other.group(1) != letter and other.group(1) in letters:
            return _AMBIGUOUS
        return letter
    norm = _norm(frag)
    if not norm:
        return None
    hits: dict[str, int] = {}
    for letter, text in parsed:
        for name in _SYNONYMS.get(_norm(text), (_norm(text),)):
            if not name:
                continue
            if norm == name or (not strict and norm.startswith(name + " ")):
                hits[letter] = max(hits.get(letter, 0), len(name))
    if not hits:
        return None
    best = max(hits.values())
    winners = [letter for letter, n in hits.items() if n == best]
    return winners[0] if len(winners) == 1 else _AMBIGUOUS


def extract_answer(text: str, options: Sequence[str]) -> str | None:
    """The option letter a direct or CoT completion gives, or None.

    Read in this order: answer statements (``The answer is B``, ``Answer: (B)``,
    ``Final answer: B) False``, ``\\boxed{B}``, ``The answer is True``), which must all
    agree; else a bare first or last line (``B``, ``B)``, ``(B)``, ``B. False``,
    ``True``); else a single parenthesised letter anywhere. ``Unknown`` and
    ``Uncertain`` name the same option.

    Args:
        text: the completion.
        options: the problem's options (``"A) True"`` ...).

    Returns:
        The letter, or None when no option is named, the letter is not an option,
        or the completion names several (``A or B``; two answer statements that differ).
    """
    parsed = _parse_options(options)
    if not text or not parsed:
        return None
    found = set()
    for match in _MARKER.finditer(text):
        result = _resolve(match.group("rest"), parsed, strict=False)
        if result == _AMBIGUOUS:
            return None
        if result:
            found.add(result)
    if found:
        return found.pop() if len(found) == 1 else None
    lines = [line.strip().strip("*_`").strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    ends = {_resolve(line, parsed, strict=True) for line in {lines[0], lines[-1]}} - {None}
    if ends:
        return ends.pop() if len(ends) == 1 and _AMBIGUOUS not in ends else None
    letters = {letter for letter, _ in parsed}
    bracketed = set(re.findall(r"\(([A-Z])\)", text)) & letters
    return bracketed.pop() if len(bracketed) == 1 else None
