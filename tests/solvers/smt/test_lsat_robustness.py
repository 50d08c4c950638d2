"""Robustness of the logiclm-smt parser: GPT-4's recorded AR-LSAT programs, respelled the way other models
write them, must give identical answers (issue 17, "parsers that hold beyond one model's style").

Each mutation below has exactly one reading (see the module docstring of solvers/smt/lsat_syntax.py): each must parse to
the very formulas of the recorded program, and all four together must give the same status and answer.
The sample is fixed: 40 programs (every 105/40-th, in file order, of those that executed before issue 17,
contain no quotes and solve in under 0.08 s; measured 2026-12-02): 19 with a unique answer, 15 with none or
several, 6 with contradictory constraints, so every kind of outcome is kept.

Names bound nowhere (issue 27): every recorded program that parses and states a constraint as
``Exists([x:s], body)`` where ``x`` is written as an argument of sort ``s`` (26 programs) must read the very
same formulas with the binder left out, ``body`` alone, and give the same answers, with the reading in the
proof; a left-out binder that spells a member in another case (``f`` beside the food ``F``) stays refused.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError
from symbolkg.solvers.smt import lsat_engine as lsat
from symbolkg.solvers.smt import lsat_syntax

DATA = Path(os.environ.get("SYMBOLKG_DATA", "/work/shared/data"))
PROGRAMS = DATA / "logiclm" / "programs" / "AR-LSAT_dev_gpt-4.json"

SAMPLE = (
    "ar_lsat_200006_1-G_2_8",
    "ar_lsat_200006_1-G_2_11",
    "ar_lsat_200310_2-G_1_1",
    "ar_lsat_200310_2-G_1_3",
    "ar_lsat_200310_2-G_1_6",
    "ar_lsat_201106_2-G_1_2",
    "ar_lsat_201106_2-G_1_4",
    "ar_lsat_201106_2-G_2_8",
    "ar_lsat_201106_2-G_4_18",
    "ar_lsat_201106_2-G_4_20",
    "ar_lsat_201112_2-G_1_2",
    "ar_lsat_201112_2-G_3_12",
    "ar_lsat_201112_2-G_3_16",
    "ar_lsat_201210_3-G_1_3",
    "ar_lsat_201210_3-G_1_5",
    "ar_lsat_201210_3-G_2_8",
    "ar_lsat_201210_3-G_2_11",
    "ar_lsat_201210_3-G_3_13",
    "ar_lsat_201210_3-G_3_16",
    "ar_lsat_201306_2-G_1_1",
    "ar_lsat_201306_2-G_1_4",
    "ar_lsat_201306_2-G_3_13",
    "ar_lsat_201306_2-G_3_15",
    "ar_lsat_201306_2-G_4_20",
    "ar_lsat_201306_2-G_4_23",
    "ar_lsat_201409_3-G_1_2",
    "ar_lsat_201409_3-G_1_5",
    "ar_lsat_201409_3-G_1_7",
    "ar_lsat_201409_3-G_3_17",
    "ar_lsat_201409_3-G_4_20",
    "ar_lsat_201506_4-G_1_5",
    "ar_lsat_201506_4-G_2_8",
    "ar_lsat_201506_4-G_4_19",
    "ar_lsat_201506_4-G_4_23",
    "ar_lsat_201512_3-G_4_20",
    "ar_lsat_201609_3-G_2_7",
    "ar_lsat_201609_3-G_2_10",
    "ar_lsat_201609_3-G_3_14",
    "ar_lsat_201609_3-G_3_16",
    "ar_lsat_201609_3-G_4_20",
)

pytestmark = pytest.mark.skipif(not PROGRAMS.exists(), reason=f"shared data not found at {PROGRAMS}")


@functools.lru_cache(maxsize=1)
def _programs() -> dict[str, str]:
    records = json.loads(PROGRAMS.read_text())
    return {r["id"]: r["raw_logic_programs"][0] for r in records}


# ------------------------------------------------------------------ mutations


def _close(text: str, open_at: int) -> int:
    """Index of the bracket closing the one at ``open_at`` (brackets of any kind nest)."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced: {text!r}")


def _split_args(inner: str) -> list[str]:
    args, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(inner[start:i])
            start = i + 1
    args.append(inner[start:])
    return [a.strip() for a in args]


def _infix(code: str, func: str, render: Callable[[list[str]], str | None]) -> str:
    """Rewrite every call ``func(...)`` in ``code`` (innermost first) with ``render(args)``, unless it returns None."""
    out, i = [], 0
    pattern = re.compile(rf"(?<![A-Za-z0-9_]){func}\(")
    while True:
        m = pattern.search(code, i)
        if m is None:
            out.append(code[i:])
            return "".join(out)
        end = _close(code, m.end() - 1)
        args = [_infix(a, func, render) for a in _split_args(code[m.end() : end])]
        rendered = render(args)
        out.append(code[i : m.start()])
        out.append(rendered if rendered is not None else f"{func}({', '.join(args)})")
        i = end + 1


def _code_lines(text: str, change: Callable[[str], str]) -> str:
    """Apply ``change`` to the code of every formula line (not declarations, headers or ``:::`` comments)."""
    lines = []
    for line in text.splitlines():
        code, sep, comment = line.partition(":::")
        if (
            code.strip()
            and not code.lstrip().startswith("#")
            and not re.search(r"=\s*(EnumSort|IntSort|Function)\(", code)
        ):
            code = change(code)
        lines.append(code + sep + comment)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def and_or_infix(text: str) -> str:
    """``And(a, b)`` -> ``((a) && (b))`` and ``Or(a, b)`` -> ``((a) || (b))`` (not the list forms)."""

    def render(op: str) -> Callable[[list[str]], str | None]:
        return lambda args: (
            None if len(args) < 2 or args[0].startswith("[") else ("(" + f" {op} ".join(f"({a})" for a in args) + ")")
        )

    return _code_lines(text, lambda code: _infix(_infix(code, "And", render("&&")), "Or", render("||")))


def implies_arrow(text: str) -> str:
    """``Implies(a, b)`` -> ``((a) -> (b))``."""
    return _code_lines(
        text,
        lambda code: _infix(code, "Implies", lambda args: f"(({args[0]}) -> ({args[1]}))" if len(args) == 2 else None),
    )


def split_option_conjunction(text: str) -> str:
    """``is_sat(And(a, b))`` -> ``is_sat(a, b)``, likewise is_unsat / is_valid."""

    def change(code: str) -> str:
        m = re.match(r"(\s*)(is_sat|is_unsat|is_valid)\(And\((.*)\)\)\s*$", code)
        if m is None or _close(code, code.index("(", code.index("And"))) != len(code.rstrip()) - 2:
            return code
        args = _split_args(m.group(3))
        return code if len(args) < 2 or args[0].startswith("[") else f"{m.group(1)}{m.group(2)}({', '.join(args)}) "

    return _code_lines(text, change)


def comments_and_whitespace(text: str) -> str:
    """Indented lines, ``#`` instead of ``:::`` on constraints, blank lines, spaces inside brackets, CRLF."""
    out, section = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"#\s*(declarations|constraints|options)", stripped, re.IGNORECASE):
            section = stripped.lower()
            out += ["", stripped.replace("# ", "#") + ":"]
            continue
        code, sep, comment = stripped.partition(":::")
        code = re.sub(r"\(", "( ", code)
        code = re.sub(r"\)", " )", code)
        if "constraints" in section and sep:
            sep, comment = "  # ", comment.replace("#", "")
        out.append("    " + code + sep + comment)
        out.append("")
    return "\r\n".join(out) + "\r\n"


MUTATIONS = {
    "and_or_infix": and_or_infix,
    "implies_arrow": implies_arrow,
    "split_option_conjunction": split_option_conjunction,
    "comments_and_whitespace": comments_and_whitespace,
}


# ---------------------------------------------------------------------- tests


LIMITS = Limits(timeout_s=10)


def test_the_mutations_change_most_programs():
    # A mutation that never fires would make the identity test below vacuous.
    programs = _programs()
    texts = [programs[i] for i in SAMPLE]
    assert len(texts) == 40
    for name, mutate in MUTATIONS.items():
        changed = sum(mutate(t) != t for t in texts)
        assert changed >= 10, f"{name} changed only {changed} of 40 programs"


def test_the_mutations_are_the_documented_respellings():
    assert (
        and_or_infix("# Constraints\nAnd(a == 1, Or(b, c)) ::: x\n")
        == "# Constraints\n((a == 1) && (((b) || (c)))) ::: x\n"
    )
    assert implies_arrow("Implies(And(a, b), c)\n") == "((And(a, b)) -> (c))\n"
    assert split_option_conjunction("is_sat(And(f(a) == 1, g(b))) ::: (A)\n") == "is_sat(f(a) == 1, g(b)) ::: (A)\n"


def _reading(program: lsat_syntax.Program) -> tuple:
    """What a program means, without line numbers (the whitespace mutation moves lines)."""
    return (program.sorts.keys(), [c.expr for c in program.constraints], [(o.letter, o.check) for o in program.options])


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_respelling_parses_to_the_same_formulas(name):
    programs = _programs()
    differ = [
        pid
        for pid in SAMPLE
        if _reading(lsat.parse(MUTATIONS[name](programs[pid]))) != _reading(lsat.parse(programs[pid]))
    ]
    assert not differ, f"{name} changes the formulas of {differ}"


def test_respelled_programs_give_identical_answers():
    # All four mutations at once, solved: same status and answer as the program as recorded.
    programs = _programs()
    differ = []
    for pid in SAMPLE:
        mutated = programs[pid]
        for mutation in MUTATIONS.values():
            mutated = mutation(mutated)
        before, after = lsat.solve(programs[pid], LIMITS), lsat.solve(mutated, LIMITS)
        assert before.executed, f"{pid} no longer executes: {before.error_message}"
        if (after.status, after.answer) != (before.status, before.answer):
            differ.append(
                f"{pid}: {before.status.value}/{before.answer} -> {after.status.value}/{after.answer} "
                f"({after.error_message})"
            )
    assert not differ, "\n".join(differ)


# ----------------------------------------------- names bound nowhere: Exists left implicit (issue 27)

_FUNCTION_DECL = re.compile(r"^\s*(\w+)\s*=\s*Function\(\s*\[(.*?)\]\s*->")
_SORT_DECL = re.compile(r"^\s*\w+\s*=\s*(?:EnumSort|IntSort)\(\s*\[(.*)\]\s*\)")
_TOP_EXISTS = re.compile(r"(\s*)Exists\(\[([^\]]*)\],\s*")


def _argument_sorts(body: str, name: str, params: dict[str, list[str]]) -> tuple[list[str], int]:
    """The sorts of the declared-function parameters at which ``body`` writes ``name`` as a whole argument, and
    how many of ``name``'s occurrences are such arguments."""
    sorts, places = [], 0
    for m in re.finditer(r"(?<![A-Za-z0-9_])(\w+)\(", body):
        if m.group(1) not in params:
            continue
        args = _split_args(body[m.end() : _close(body, m.end() - 1)])
        for arg, sort in zip(args, params[m.group(1)], strict=False):
            if arg == name:
                sorts.append(sort)
                places += 1
    return sorts, places


def free_existential(text: str) -> str:
    """A constraint line ``Exists([x:s, ...], body)`` -> ``body``, so that its variables are bound nowhere, where
    that has the one reading of the parser's rule: each variable is written in ``body`` as an argument of a
    declared function whose parameter there is ``s`` (and of no other sort), is not ``_``, spells no member in
    another case, and the variables first appear in binder order. Other lines are left as they are."""
    params = {
        m.group(1): [p.strip() for p in m.group(2).split(",") if p.strip()]
        for m in map(_FUNCTION_DECL.match, text.splitlines())
        if m
    }
    members = {
        x.strip().strip("'\"").casefold()
        for m in map(_SORT_DECL.match, text.splitlines())
        if m
        for x in m.group(1).split(",")
    }
    out = []
    for line in text.splitlines():
        code, sep, comment = line.partition(":::")
        m = _TOP_EXISTS.match(code)
        if m and "(" in code and _close(code, code.index("(")) == len(code.rstrip()) - 1:
            body = code[m.end() : len(code.rstrip()) - 1]
            binders = [tuple(p.strip() for p in b.split(":")) for b in m.group(2).split(",")]
            firsts = [re.search(rf"(?<![A-Za-z0-9_]){re.escape(x)}(?![A-Za-z0-9_])", body) for x, _ in binders]
            told = all(
                f is not None
                and x != "_"
                and x.casefold() not in members
                and set(_argument_sorts(body, x, params)[0]) == {s}
                for (x, s), f in zip(binders, firsts, strict=True)
            )
            if (
                told
                and [f.start() for f in firsts] == sorted(f.start() for f in firsts)
                and not re.search(r"\w\s*:", body)
            ):
                code = m.group(1) + body + " "
        out.append(code + sep + comment)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


@functools.lru_cache(maxsize=1)
def _free_existential_corpus() -> dict[str, tuple[str, str]]:
    """Every recorded program that parses and has a line ``free_existential`` rewrites.

    id -> (as recorded, rewritten).
    """
    corpus = {}
    for pid, text in _programs().items():
        rewritten = free_existential(text)
        if rewritten != text:
            try:
                lsat.parse(text)
            except Exception:  # noqa: BLE001 - a program refused as recorded has no formulas to compare
                continue
            corpus[pid] = (text, rewritten)
    return corpus


def test_free_existential_is_the_documented_respelling():
    text = (
        "# Declarations\np = EnumSort([A, B])\nc = EnumSort([x, y])\nf = Function([p, c] -> [bool])\n"
        "sub = EnumSort([x])\n# Constraints\n"
        "Exists([k:c], And(f(A, k), f(B, k))) ::: same\n"  # rewritten
        "Exists([k:sub], f(A, k)) ::: a subset: the binder's sort is not the parameter's\n"
        "Exists([k:c, q:p], f(q, k)) ::: first uses out of binder order\n"
        "Exists([_:c], f(A, _))\n"
    )
    assert free_existential(text).splitlines()[6:] == [
        "And(f(A, k), f(B, k)) ::: same",
        "Exists([k:sub], f(A, k)) ::: a subset: the binder's sort is not the parameter's",
        "Exists([k:c, q:p], f(q, k)) ::: first uses out of binder order",
        "Exists([_:c], f(A, _))",
    ]


def test_recorded_programs_with_their_exists_left_implicit_read_the_same_formulas():
    corpus = _free_existential_corpus()
    assert len(corpus) >= 20, f"the rewrite fires on only {len(corpus)} recorded programs"
    differ = []
    for pid, (text, rewritten) in corpus.items():
        before, after = lsat.parse(text), lsat.parse(rewritten)
        dropped = sum(a != b for a, b in zip(text.splitlines(), rewritten.splitlines(), strict=False))
        if [c.expr for c in after.constraints] != [c.expr for c in before.constraints] or len(
            after.readings
        ) != dropped:
            differ.append(pid)
    assert not differ, f"leaving Exists implicit changes the formulas of {differ}"


def test_recorded_programs_with_their_exists_left_implicit_give_identical_answers():
    differ = []
    for pid, (text, rewritten) in _free_existential_corpus().items():
        before, after = lsat.solve(text, LIMITS), lsat.solve(rewritten, LIMITS)
        assert after.proof.startswith("reading: line "), pid
        if (after.status, after.answer) != (before.status, before.answer):
            differ.append(f"{pid}: {before.status.value}/{before.answer} -> {after.status.value}/{after.answer}")
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("pid", ["ar_lsat_201112_2-G_3_13", "ar_lsat_201112_2-G_3_14", "ar_lsat_201112_2-G_3_16"])
def test_a_recorded_binder_that_spells_a_member_stays_refused_when_left_implicit(pid):
    # `Exists([f:desserts], selected(f))` without its binder: is `f` the member F misspelled, or some food?
    text = _programs()[pid]
    line = next(i for i, code in enumerate(text.splitlines(), start=1) if re.match(r"\s*Exists\(\[f:", code))
    lines = text.splitlines()
    m = _TOP_EXISTS.match(lines[line - 1])
    code, sep, comment = lines[line - 1].partition(":::")
    lines[line - 1] = code[m.end() : len(code.rstrip()) - 1] + " " + sep + comment
    with pytest.raises(ProgramError) as info:
        lsat.parse("\n".join(lines) + "\n")
    assert info.value.line == line and info.value.kind is ErrorKind.UNDECLARED
    assert "has the member 'F'" in info.value.message
