"""Tests of the Logic-LM LP language: parser, forward chainer, and Prolog translation."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolkg.solvers.lp import engine as lp
from symbolkg.solvers.lp import swipl
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, Status

DATA = Path(os.environ.get("SYMBOLKG_DATA", "/work/shared/data"))
PROGRAMS = DATA / "logiclm" / "programs"
# Every answer test below finishes far inside this limit: the slowest call takes 0.19 s (measured:
# the SWI-Prolog translation of a hand program, process start included).
LIMITS = Limits(timeout_s=10)
HAS_SWIPL = shutil.which(os.environ.get("SYMBOLKG_SWIPL") or "swipl") is not None


def program(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def recorded(dataset: str) -> list[dict]:
    path = PROGRAMS / f"{dataset}_dev_gpt-4.json"
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return json.loads(path.read_text())


# A small ProofWriter-style world, hand-checked:
#   facts: Bob is cold and quiet; Anne is red.
#   rules: quiet & cold -> smart; smart -> round; red -> not smart.
#   => Smart(Bob) True, Round(Bob) True, Smart(Anne) False, Round(Anne) unknown.
WORLD = program(
    """
    Predicates:
    Cold($x, bool) ::: Is x cold?
    Quiet($x, bool) ::: Is x quiet?
    Smart($x, bool) ::: Is x smart?
    Round($x, bool) ::: Is x round?
    Red($x, bool) ::: Is x red?

    Facts:
    Cold(Bob, True) ::: Bob is cold.
    Quiet(Bob, True) ::: Bob is quiet.
    Red(Anne, True) ::: Anne is red.

    Rules:
    Quiet($x, True) && Cold($x, True) >>> Smart($x, True) ::: Quiet, cold things are smart.
    Smart($x, True) >>> Round($x, True) ::: Smart things are round.
    Red($x, True) >>> Smart($x, False) ::: Red things are not smart.

    Query:
    {query}
    """
)


def world(query: str) -> str:
    return WORLD.replace("{query}", query)


# ----------------------------------------------------------------------------- parser


def test_parse_sections_and_comments() -> None:
    p = lp.parse(world("Round(Bob, True) ::: Bob is round."))
    assert [d.name for d in p.predicates] == ["Cold", "Quiet", "Smart", "Round", "Red"]
    assert p.predicates[0].description == "Is x cold?"
    assert p.predicates[0].arity == 1
    assert [str(f) for f in p.facts] == ["Cold(Bob, True)", "Quiet(Bob, True)", "Red(Anne, True)"]
    assert p.facts[0].line == 9
    assert len(p.rules) == 3
    assert [str(a) for a in p.rules[0].body] == ["Quiet($x, True)", "Cold($x, True)"]
    assert str(p.query) == "Round(Bob, True)" and p.query.line == 19


def test_parse_is_lenient_about_layout_and_placement() -> None:
    text = (
        "Here is the program.\n"  # prose before the first header: ignored, as Logic-LM did
        "Facts:   \n"
        "Big(Bob, True)   \n"
        "Big($x, True) >>> Kind($x, True)\n"  # a rule under Facts: is a rule
        "\n\n"
        "**Rules:**\n"
        "Kind(Anne, True)\n"  # an atom under Rules: is a fact
        "Kind($x, True) >>> Nice($x, True) && Green($x, False)\n"  # conjunctive head
        "Query: !Green(Bob, True) ::: Bob is not green.\n"  # query on the header line, '!' negation
    )
    p = lp.parse(text)
    assert [str(f) for f in p.facts] == ["Big(Bob, True)", "Kind(Anne, True)"]
    assert len(p.rules) == 2 and [str(h) for h in p.rules[1].head] == ["Nice($x, True)", "Green($x, False)"]
    assert str(p.query) == "Green(Bob, False)"
    # Big(Bob) -> Kind(Bob) -> Green(Bob, False): the query Green(Bob, False) holds.
    out = lp.solve(text, LIMITS)
    assert (out.status, out.answer) == (Status.PROVED, "True")


def test_negated_premise_means_false_value() -> None:
    text = program(
        """
        Facts:
        Nice(Anne, True)
        White(Anne, False)
        Rules:
        Nice($x, True) && !White($x, True) >>> Green($x, True)
        Query:
        Green(Anne, True)
        """
    )
    # !White(Anne, True) is White(Anne, False), a fact; so Green(Anne) is derived.
    assert lp.solve(text, LIMITS).answer == "True"


@pytest.mark.parametrize(
    ("text", "line", "kind", "words"),
    [
        ("Facts:\nCold(Bob, bool)\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "True or False"),
        (
            "Facts:\nCold(Bob, True)\nRules:\nCold($x, True) >>>\nQuery:\nCold(Bob, True)\n",
            4,
            ErrorKind.SYNTAX,
            "no conclusion",
        ),
        (
            "Facts:\nCold(Bob, True)\nRules:\nCold($x, True) && >>> Red($x, True)\nQuery:\nRed(Bob, True)\n",
            4,
            ErrorKind.SYNTAX,
            "empty conjunct",
        ),
        ("Facts:\nCold(Bob, Alice, True\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "expected an atom"),
        ("Facts:\nCold(Bob+Smith, True)\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "invalid argument"),
        ("Facts:\nCold(Bob, True)\n", None, ErrorKind.NO_ANSWER, "no query"),
        ("Facts:\nCold(Bob, True)\nQuery:\nCold(Bob, True)\nRed(Bob, True)\n", 5, ErrorKind.NO_ANSWER, "exactly one"),
        ("Facts:\nCold(Bob, True)\nQuery:\nCold($x, True)\n", 4, ErrorKind.NO_ANSWER, "variable"),
        (
            "Predicates:\nLikes($x, $y, bool)\nFacts:\nLikes(Bob, True)\nQuery:\nLikes(Bob, True)\n",
            4,
            ErrorKind.TYPE,
            "Likes takes 2",
        ),
        (
            "Facts:\nCold(Bob, True)\nCold(Bob, Anne, True)\nQuery:\nCold(Bob, True)\n",
            3,
            ErrorKind.TYPE,
            "Cold takes 1",
        ),
        ("Predicates:\nCold(Bob, True)\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "looks like a fact"),
    ],
)
def test_malformed_programs_report_line_and_kind(text: str, line: int | None, kind: ErrorKind, words: str) -> None:
    with pytest.raises(ProgramError) as info:
        lp.parse(text)
    assert info.value.line == line
    assert info.value.kind == kind
    assert words in info.value.message
    out = lp.solve(text, LIMITS)
    assert out.status is Status.PARSE_ERROR
    assert (out.error_line, out.error_kind) == (line, kind.value)
    assert out.backend == "forward-chainer"


def test_undeclared_predicates_are_accepted() -> None:
    # ProntoQA programs routinely use predicates missing from Predicates: (Logic-LM ran them).
    text = (
        "Predicates:\nCold($x, bool)\nFacts:\nCold(Bob, True)\n"
        "Rules:\nCold($x, True) >>> Blue($x, True)\nQuery:\nBlue(Bob, True)\n"
    )
    assert lp.solve(text, LIMITS).answer == "True"


# ----------------------------------------------------------------------------- other models' variants
# Each variant with exactly one reading is accepted (module docstring, "Variants other models
# write"); each test checks the reading, not just that the program parses.


def test_multi_word_constants_are_one_constant_in_every_spelling() -> None:
    text = program(
        """
        Facts:
        Big(bald eagle, True)
        Eats(bald eagle, brown  bear, True)
        Rules:
        Big($x, True) && Eats($x, Brown_Bear, True) >>> Fears(brown bear, $x, True)
        Query:
        Fears(BROWN BEAR, Bald\tEagle, True)
        """
    )
    p = lp.parse(text)
    # case, runs of spaces/tabs and '_' for a space do not matter; the first spelling names the constant
    assert p.constants() == ["bald eagle", "brown bear"]
    assert str(p.query) == "Fears(brown bear, bald eagle, True)"
    assert lp.solve(text, LIMITS).answer == "True"
    # a different name is a different constant: nothing is known about the golden eagle
    assert lp.solve(text.replace("Bald\tEagle, True)", "golden eagle, True)"), LIMITS).answer == "Unknown"


def test_constants_the_parser_does_not_merge_get_a_hint() -> None:
    text = "Facts:\nBig(BaldEagle, True)\nQuery:\nBig(bald eagle, True)\n"
    out = lp.solve(text, LIMITS)
    assert out.answer == "Unknown"  # CamelCase is not merged with spaces: word boundaries would be a guess
    assert "hint: constants BaldEagle (line 2) and bald eagle (line 4) look like the same entity" in out.proof


@pytest.mark.parametrize(
    ("text", "reading"),
    [
        # declared arity 2: Eats(bear, cow) is Eats(bear, cow, True), in facts, rules and the query
        (
            "Predicates:\nEats($x, $y, bool)\nFacts:\nEats(bear, cow)\nRules:\nEats($x, cow) >>> Big($x)\nQuery:\n"
            "Big(bear)\n",
            ["Eats(bear, cow, True)", "Big(bear, True)"],
        ),
        # undeclared, arity fixed by an atom written with its value (the False fact)
        (
            "Facts:\nEats(bear, cow)\nEats(cow, bear, False)\nQuery:\nEats(bear, cow, True)\n",
            ["Eats(bear, cow, True)", "Eats(bear, cow, True)"],
        ),
        # undeclared and never written with a value: the uses agree on two arguments
        (
            "Facts:\nEats(bear, cow)\nRules:\nEats($x, $y) >>> Likes($y, $x)\nQuery:\nLikes(cow, bear)\n",
            ["Eats(bear, cow, True)", "Likes(cow, bear, True)"],
        ),
    ],
)
def test_omitted_truth_value_reads_true_when_the_arguments_match_the_arity(text: str, reading: list[str]) -> None:
    p = lp.parse(text)
    assert [str(p.facts[0]), str(p.query)] == reading
    assert lp.solve(text, LIMITS).answer == "True"


def test_not_wrappers_negate_the_atom() -> None:
    text = program(
        """
        Facts:
        Not(Cold(Bob, True), True)
        Not(Red(Bob))
        not Kind(Bob, True)
        Not(Big(Bob, True), False)
        Not(Not(Round(Bob, True)))
        Rules:
        Not(Cold($x, True)) && !Red($x) && Kind($x, False) && Big($x, True) && Round($x) >>> Nice($x)
        Query:
        Not(Nice(Bob, False), True)
        """
    )
    p = lp.parse(text)
    assert [str(f) for f in p.facts] == [
        "Cold(Bob, False)",
        "Red(Bob, False)",
        "Kind(Bob, False)",
        "Big(Bob, True)",
        "Round(Bob, True)",
    ]
    assert str(p.query) == "Nice(Bob, True)"
    assert lp.solve(text, LIMITS).answer == "True"
    # a Not whose argument is not an atom is an ordinary predicate named Not
    assert str(lp.parse("Facts:\nNot(Bob, True)\nQuery:\nNot(Bob, True)\n").query) == "Not(Bob, True)"


@pytest.mark.parametrize("arrow", ["=>", "==>", "->", "-->", "→", "⇒"])
@pytest.mark.parametrize("conj", ["&", "∧", "and", ",", "AND"])
def test_connective_variants_read_as_implication_and_conjunction(arrow: str, conj: str) -> None:
    text = (
        "Facts:\nCold(Bob, True)\nQuiet(Bob, True)\nRules:\n"
        f"Cold($x, True) {conj} Quiet($x, True) {arrow} Smart($x, True)\nQuery:\nSmart(Bob, True)\n"
    )
    rule = lp.parse(text).rules[0]
    assert ([str(a) for a in rule.body], [str(a) for a in rule.head]) == (
        ["Cold($x, True)", "Quiet($x, True)"],
        ["Smart($x, True)"],
    )
    # a constant with a hyphen is not an arrow, and a comma inside an atom is not a conjunction
    assert lp.parse("Facts:\nCold(x-ray, True)\nQuery:\nCold(x-ray, True)\n").facts[0].args == ("x-ray",)


def test_layout_variants_other_models_write() -> None:
    text = (
        "```\r\n"
        "## Predicates\r\n"
        "Cold($x, bool)   // is x cold?\r\n"
        "\r\n"
        "Fact:\r\n"
        "- Cold(Bob, True)\t# Bob is cold\r\n"
        "1. `Quiet(Bob, True)`.\r\n"
        "% a Prolog comment line\r\n"
        "**Rules**\r\n"
        "Rule 1: (Cold($x, True) && Quiet($x, True)) >>> Smart($x, True)   \r\n"
        "\tRule 2:Smart($x, True) >>> Round($x, True)\r\n"
        "Query\r\n"
        "Smart(Bob, True)?\r\n"
        "```\r\n"
    )
    p = lp.parse(text)
    assert [d.name for d in p.predicates] == ["Cold"]
    assert [str(f) for f in p.facts] == ["Cold(Bob, True)", "Quiet(Bob, True)"]
    assert len(p.rules) == 2 and str(p.query) == "Smart(Bob, True)"
    assert lp.solve(text, LIMITS).answer == "True"


@pytest.mark.parametrize(
    ("text", "line", "kind", "words"),
    [
        # an English sentence: which predicate and constant it names is a guess; the atom is suggested
        (
            "Facts:\nSally is a Yumpus.\nQuery:\nYumpus(Sally, True)\n",
            2,
            ErrorKind.SYNTAX,
            "such as Yumpus(Sally, True)",
        ),
        (
            "Facts:\nSally is not a Yumpus\nQuery:\nYumpus(Sally, True)\n",
            2,
            ErrorKind.SYNTAX,
            "such as Yumpus(Sally, False)",
        ),
        # a non-value where the truth value goes
        (
            "Predicates:\nCold($x, bool)\nFacts:\nCold(Bob, X)\nQuery:\nCold(Bob, True)\n",
            4,
            ErrorKind.SYNTAX,
            "X stands where the truth value goes",
        ),
        (
            "Facts:\nCold(Bob, $v)\nQuery:\nCold(Bob, True)\n",
            2,
            ErrorKind.SYNTAX,
            "$v stands where the truth value goes",
        ),
        ("Facts:\nCold(Bob, Unknown)\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "there are no Unknown atoms"),
        ("Facts:\nCold(Bob, boolean)\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "type written in Predicates"),
        # a missing comma, or a constant called 'Bob True'?
        ("Facts:\nCold(Bob True)\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "is a comma missing"),
        # no arguments
        ("Facts:\nCold(True)\nQuery:\nCold(Bob, True)\n", 2, ErrorKind.SYNTAX, "no argument before its truth value"),
        # disjunction is not a Horn rule
        (
            "Facts:\nCold(Bob, True)\nRules:\nCold($x, True) || Big($x, True) >>> Red($x, True)\nQuery:\n"
            "Red(Bob, True)\n",
            4,
            ErrorKind.UNSUPPORTED,
            "two rules",
        ),
        (
            "Facts:\nCold(Bob, True) or Big(Bob, True)\nQuery:\nRed(Bob, True)\n",
            2,
            ErrorKind.UNSUPPORTED,
            "disjunction",
        ),
        # written without values only, with two arities: which one is meant?
        ("Facts:\nEats(bear, cow)\nEats(bear)\nQuery:\nEats(bear, cow)\n", 3, ErrorKind.TYPE, "Eats takes 2"),
        # Not(...) with something other than a truth value after the atom
        (
            "Facts:\nNot(Cold(Bob, True), Anne)\nQuery:\nCold(Bob, True)\n",
            2,
            ErrorKind.SYNTAX,
            "Not(...) takes one atom",
        ),
    ],
)
def test_variants_without_exactly_one_reading_are_refused(text: str, line: int, kind: ErrorKind, words: str) -> None:
    with pytest.raises(ProgramError) as info:
        lp.parse(text)
    assert (info.value.line, info.value.kind) == (line, kind)
    assert words in info.value.message


# ----------------------------------------------------------------------------- chainer


@pytest.mark.parametrize(
    ("query", "status", "answer"),
    [
        ("Smart(Bob, True)", Status.PROVED, "True"),  # quiet & cold
        ("Smart(Bob, False)", Status.DISPROVED, "False"),  # Smart(Bob, True) holds
        ("Round(Bob, True)", Status.PROVED, "True"),  # two steps
        ("Smart(Anne, False)", Status.PROVED, "True"),  # red -> not smart
        ("Smart(Anne, True)", Status.DISPROVED, "False"),
        ("Round(Anne, True)", Status.UNKNOWN, "Unknown"),  # not smart says nothing about round (open world)
        ("Round(Anne, False)", Status.UNKNOWN, "Unknown"),
        ("Cold(Carol, True)", Status.UNKNOWN, "Unknown"),  # unknown constant
    ],
)
def test_three_valued_answers(query: str, status: Status, answer: str) -> None:
    out = lp.solve(world(query), LIMITS)
    assert (out.status, out.answer) == (status, answer)
    assert out.executed and out.error_kind is None
    assert out.backend == "forward-chainer" and out.seconds > 0


def test_proof_is_the_derivation_chain() -> None:
    out = lp.solve(world("Round(Bob, True)"), LIMITS)
    lines = out.proof.splitlines()
    # premises first (in the rule's body order: Quiet && Cold), then the rule
    # instances that use them, ending with the query
    assert lines[0].startswith("Quiet(Bob, True)") and "[fact, line 10]" in lines[0]
    assert lines[1].startswith("Cold(Bob, True)") and "[fact, line 9]" in lines[1]
    assert lines[2].startswith("Smart(Bob, True)") and "rule, line 14" in lines[2] and "$x=Bob" in lines[2]
    assert lines[3].startswith("Round(Bob, True)") and "rule, line 15" in lines[3]
    assert len(lines) == 4  # Red(Anne) plays no part


def test_relations_join_on_shared_variables() -> None:
    text = program(
        """
        Facts:
        Chases(Cat, Dog, True)
        Chases(Dog, Mouse, True)
        Big(Dog, True)
        Rules:
        Chases($x, $y, True) && Chases($y, $z, True) >>> Fears($z, $x, True)
        Chases($x, $y, True) && Big($y, True) >>> Brave($x, True)
        Query:
        Fears(Mouse, Cat, True)
        """
    )
    # Cat chases Dog, Dog chases Mouse: Fears(Mouse, Cat). Cat chases big Dog: Brave(Cat).
    assert lp.solve(text, LIMITS).answer == "True"
    assert lp.solve(text.replace("Fears(Mouse, Cat, True)\n", "Fears(Cat, Mouse, True)\n"), LIMITS).answer == "Unknown"
    assert lp.solve(text.replace("Fears(Mouse, Cat, True)\n", "Brave(Cat, True)\n"), LIMITS).answer == "True"
    assert lp.solve(text.replace("Fears(Mouse, Cat, True)\n", "Brave(Dog, True)\n"), LIMITS).answer == "Unknown"


def test_cyclic_rules_terminate() -> None:
    text = program(
        """
        Facts:
        Red(Bob, True)
        Rules:
        Red($x, True) >>> Rough($x, True)
        Rough($x, True) >>> Cold($x, True)
        Cold($x, True) >>> Red($x, True)
        Likes($x, $y, True) >>> Likes($y, $x, True)
        Red($x, True) >>> Likes($x, Anne, True)
        Query:
        Likes(Anne, Bob, True)
        """
    )
    # Red -> Rough -> Cold -> Red (cycle); Likes is symmetric (cycle): Likes(Bob, Anne) -> Likes(Anne, Bob).
    # The fixpoint is reached in 0.5 ms (measured), 4000x inside the limit.
    out = lp.solve(text, Limits(timeout_s=2))
    assert (out.status, out.answer) == (Status.PROVED, "True")


def test_variables_only_in_the_conclusion_range_over_all_constants() -> None:
    text = program(
        """
        Facts:
        Big(Bob, True)
        Small(Anne, True)
        Big($x, False) ::: a universal fact: nothing is big (contradicts Big(Bob) only)
        Rules:
        Big(Bob, True) >>> Likes(Bob, $y, True)
        Query:
        Likes(Bob, Anne, True)
        """
    )
    # $y ranges over the program's constants {Bob, Anne}, so Likes(Bob, Anne) holds.
    assert lp.solve(text, LIMITS).answer == "True"
    # the universal fact makes Big(Anne, False) hold
    assert lp.solve(text.replace("Likes(Bob, Anne, True)\n", "Big(Anne, True)\n"), LIMITS).answer == "False"


def test_inconsistent_query_atom_is_unsat_without_answer_and_both_derivations() -> None:
    text = program(
        """
        Facts:
        Impus(Fae, True)
        Rules:
        Impus($x, True) >>> Happy($x, False)
        Impus($x, True) >>> Zumpus($x, True)
        Zumpus($x, True) >>> Happy($x, True)
        Query:
        Happy(Fae, False)
        """
    )
    out = lp.solve(text, LIMITS)
    assert out.status is Status.UNSAT and out.error_kind == "inconsistent" and out.executed
    assert out.answer is None and out.error_line == 8
    assert "Happy(Fae, False)" in out.error_message and "Happy(Fae, True)" in out.error_message
    assert "--- and ---" in out.proof and "Zumpus(Fae, True)" in out.proof


def test_inconsistency_elsewhere_does_not_matter() -> None:
    # Red(Bob) is both True and False, but nothing is derived from a contradiction.
    text = "Facts:\nRed(Bob, True)\nRed(Bob, False)\nCold(Bob, True)\nQuery:\nCold(Bob, True)\n"
    assert lp.solve(text, LIMITS).answer == "True"
    assert lp.solve(text.replace("Query:\nCold(Bob, True)", "Query:\nNice(Bob, True)"), LIMITS).answer == "Unknown"


def test_unknown_answers_carry_hints_about_split_predicates() -> None:
    text = program(
        """
        Facts:
        Impuses(Max, True)
        Rules:
        Impus($x, True) >>> Sour($x, True)
        Query:
        Sour(Max, True)
        """
    )
    out = lp.solve(text, LIMITS)
    assert out.answer == "Unknown"
    assert "hint: predicates Impus (line 4) and Impuses (line 2) look like the same concept" in out.proof


def test_timeout_is_respected() -> None:
    # 60 constants and a transitive closure over a 3-place relation under argument swaps: a fixpoint
    # of up to 60^3 atoms joined pairwise, far beyond 1 ms of work (measured: still chaining at a
    # 120 s limit, 10^5 times this one).
    consts = [f"C{i}" for i in range(60)]
    facts = "\n".join(f"R({a}, {b}, {c}, True)" for a, b, c in zip(consts, consts[1:], consts[2:], strict=False))
    text = (
        f"Facts:\n{facts}\nRules:\n"
        "R($a, $b, $c, True) && R($c, $d, $e, True) >>> R($a, $d, $e, True)\n"
        "R($a, $b, $c, True) >>> R($b, $a, $c, True)\n"
        "R($a, $b, $c, True) >>> R($a, $c, $b, True)\n"
        "Query:\nR(C0, C1, C59, False)\n"
    )
    out = lp.solve(text, Limits(timeout_s=0.001))
    assert out.status is Status.TIMEOUT and out.error_kind == "timeout"
    assert out.seconds < 1.0  # idle: 0.0013-0.0017 s; the bound is far over 10x that


def test_memory_bound_on_derived_atoms() -> None:
    text = (
        "Facts:\n"
        + "\n".join(f"P(C{i}, True)" for i in range(300))
        + "\nRules:\nP($x, True) >>> Q($x, $y, $z, True)\nQuery:\nP(C0, True)\n"
    )
    # 300**3 atoms > 64 * 2000. The bound is reached after 0.8-1.1 s (measured); a 60 s limit is far
    # above that, so the outcome is MEMORY on a loaded machine too, never TIMEOUT.
    out = lp.solve(text, Limits(timeout_s=60, memory_mb=64))
    assert out.status is Status.MEMORY and out.error_kind == "memory"


REGRESSION_775_Q9 = program(
    # ProofWriter_RelNoneg-OWA-D5-775_Q9, GPT-4's recorded program (faithful to the text).
    # Logic-LM answered Unknown: its query parser only handles one-argument predicates.
    # Hand check: Green(Tiger) -> Eats(Tiger, Rabbit) -> Needs(Tiger, Squirrel)
    #             -> Nice(Tiger) -> Needs(Tiger, Rabbit). Gold: A (True).
    """
    Predicates:
    Chases($x, $y, bool) ::: Does x chase y?
    Eats($x, $y, bool) ::: Does x eat y?
    Young($x, bool) ::: Is x young?
    Needs($x, $y, bool) ::: Does x need y?
    Round($x, bool) ::: Is x round?
    Green($x, bool) ::: Is x green?
    Nice($x, bool) ::: Is x nice?
    Kind($x, bool) ::: Is x kind?

    Facts:
    Chases(Dog, Squirrel, True) ::: The dog chases the squirrel.
    Chases(Dog, Tiger, True) ::: The dog chases the tiger.
    Eats(Dog, Tiger, True) ::: The dog eats the tiger.
    Young(Dog, True) ::: The dog is young.
    Needs(Dog, Squirrel, True) ::: The dog needs the squirrel.
    Chases(Rabbit, Dog, True) ::: The rabbit chases the dog.
    Chases(Rabbit, Tiger, True) ::: The rabbit chases the tiger.
    Chases(Squirrel, Dog, True) ::: The squirrel chases the dog.
    Round(Squirrel, True) ::: The squirrel is round.
    Needs(Squirrel, Rabbit, True) ::: The squirrel needs the rabbit.
    Needs(Squirrel, Tiger, True) ::: The squirrel needs the tiger.
    Chases(Tiger, Dog, True) ::: The tiger chases the dog.
    Eats(Tiger, Dog, True) ::: The tiger eats the dog.
    Eats(Tiger, Squirrel, True) ::: The tiger eats the squirrel.
    Green(Tiger, True) ::: The tiger is green.
    Round(Tiger, True) ::: The tiger is round.

    Rules:
    Green($x, True) >>> Eats($x, Rabbit, True) ::: If someone is green then they eat the rabbit.
    Needs($x, Squirrel, True) && Green(Squirrel, True) >>> Needs($x, Tiger, True) ::: If someone needs the squirrel and the squirrel is green then they need the tiger.
    Eats($x, Rabbit, True) >>> Needs($x, Squirrel, True) ::: If someone eats the rabbit then they need the squirrel.
    Needs(Tiger, Rabbit, True) >>> Green(Rabbit, True) ::: If the tiger needs the rabbit then the rabbit is green.
    Nice($x, True) >>> Needs($x, Rabbit, True) ::: If someone is nice then they need the rabbit.
    Round(Tiger, True) >>> Young(Tiger, True) ::: If the tiger is round then the tiger is young.
    Chases($x, Tiger, True) && Kind(Tiger, True) >>> Eats(Tiger, Rabbit, True) ::: If someone chases the tiger and the tiger is kind then the tiger eats the rabbit.
    Needs($x, Squirrel, True) >>> Nice($x, True) ::: If someone needs the squirrel then they are nice.
    Chases($x, Tiger, True) >>> Chases(Tiger, Squirrel, True) ::: If someone chases the tiger then the tiger chases the squirrel.

    Query:
    Needs(Tiger, Rabbit, True) ::: The tiger needs the rabbit.
    """  # noqa: E501 - a program line is one line for the parser
)


def test_regression_proofwriter_relnoneg_775_q9_is_true_and_deterministic() -> None:
    outcomes = [lp.solve(REGRESSION_775_Q9, LIMITS) for _ in range(5)]
    assert {(o.status, o.answer) for o in outcomes} == {(Status.PROVED, "True")}
    assert len({o.proof for o in outcomes}) == 1
    assert outcomes[0].proof.splitlines()[-1].startswith("Needs(Tiger, Rabbit, True)")
    assert "Nice(Tiger, True)" in outcomes[0].proof


def test_regression_matches_recorded_program() -> None:
    by_id = {x["id"]: x for x in recorded("ProofWriter")}
    x = by_id["ProofWriter_RelNoneg-OWA-D5-775_Q9"]
    assert x["answer"] == "A"
    assert lp.parse(x["raw_logic_programs"][0]) == lp.parse(REGRESSION_775_Q9)


# ----------------------------------------------------------------------------- recorded programs


def accuracy(dataset: str, mapping: dict[str, str]) -> tuple[float, float]:
    rows = recorded(dataset)
    executed = correct = 0
    for x in rows:
        out = lp.solve(x["raw_logic_programs"][0], LIMITS)
        if out.executed:
            executed += 1
            correct += out.answer is not None and mapping[out.answer] == x["answer"]
    return executed / len(rows), correct / len(rows)


def test_recorded_proofwriter_programs() -> None:
    # Logic-LM's own solver: execution 99.0%, accuracy 78.8%. The two programs we
    # get wrong are GPT-4 translation slips (a missing fact, a wrong rule subject).
    executed, acc = accuracy("ProofWriter", {"True": "A", "False": "B", "Unknown": "C"})
    assert executed == 1.0
    assert acc >= 0.995


def test_recorded_prontoqa_programs() -> None:
    # ProntoQA has only True/False options. Errors are GPT-4's: 76 queries state the
    # negation of the question, 23 split one predicate into Impus/Impuses, 1 is inconsistent
    # (ran: UNSAT, no answer). Logic-LM's own solver: execution 100%, accuracy 83.2%.
    executed, acc = accuracy("ProntoQA", {"True": "A", "False": "B", "Unknown": "C"})
    assert executed == 1.0
    assert acc >= 0.80
    # Closed world (no Unknown option: not derivable = False), as symbolkg.jobs.core.answers reads it.
    executed, acc = accuracy("ProntoQA", {"True": "A", "False": "B", "Unknown": "B"})
    assert acc >= 0.832


# ----------------------------------------------------------------------------- Prolog translation


def test_to_prolog_tables_every_predicate() -> None:
    text = swipl.to_prolog(lp.parse(world("Round(Bob, True)")))
    for name in ("Cold", "Quiet", "Smart", "Round", "Red"):
        assert f":- table '{name}'/2." in text
    assert "'Smart'(V_x, true) :- 'Quiet'(V_x, true), 'Cold'(V_x, true)." in text
    assert text.rstrip().endswith("% query: lp_answer(Answer)")


HAND_PROGRAMS = [
    world("Round(Bob, True)"),
    world("Smart(Anne, True)"),
    world("Round(Anne, False)"),
    REGRESSION_775_Q9,
    "Facts:\nRed(Bob, True)\nRules:\nRed($x, True) >>> Cold($x, True)\nCold($x, True) >>> Red($x, True)\n"
    "Likes($x, $y, True) >>> Likes($y, $x, True)\nRed($x, True) >>> Likes($x, Anne, True)\nQuery:\n"
    "Likes(Anne, Bob, True)\n",
    "Facts:\nBig(Bob, True)\nSmall(Anne, True)\nRules:\nBig(Bob, True) >>> Likes(Bob, $y, True)\nQuery:\n"
    "Likes(Bob, Anne, True)\n",
    "Facts:\nImpus(Fae, True)\nRules:\nImpus($x, True) >>> Happy($x, False)\nImpus($x, True) >>> Happy($x, True)\n"
    "Query:\nHappy(Fae, False)\n",
    # other models' variants: multi-word constants (quoted Prolog atoms), omitted values, Not(...), '=>'
    "Facts:\nBig(bald eagle)\nNot(Eats(bald eagle, brown bear))\nRules:\n"
    "Big($x) & Not(Eats($x, Brown_Bear, True)) => Fears(brown bear, $x)\n"
    "Query:\nFears(Brown Bear, Bald Eagle)\n",
]


def same_verdict(text: str, limits: Limits) -> None:
    chained = lp.solve(text, limits)
    prolog = swipl.solve(text, limits)
    assert (prolog.status, prolog.answer) == (chained.status, chained.answer), text
    assert prolog.backend == "swipl"


@pytest.mark.skipif(not HAS_SWIPL, reason="SWI-Prolog not installed")
@pytest.mark.parametrize("text", HAND_PROGRAMS)
def test_prolog_translation_agrees_with_chainer_on_hand_programs(text: str) -> None:
    same_verdict(text, LIMITS)


@pytest.mark.skipif(not HAS_SWIPL, reason="SWI-Prolog not installed")
def test_prolog_translation_agrees_with_chainer_on_recorded_programs() -> None:
    for x in recorded("ProofWriter")[:30] + recorded("ProntoQA")[:10]:
        same_verdict(x["raw_logic_programs"][0], LIMITS)


@pytest.mark.skipif(not HAS_SWIPL, reason="SWI-Prolog not installed")
def test_prolog_path_reports_parse_errors_like_the_chainer() -> None:
    out = swipl.solve("Facts:\nCold(Bob, bool)\nQuery:\nCold(Bob, True)\n", LIMITS)
    assert (out.status, out.error_line, out.error_kind) == (Status.PARSE_ERROR, 2, "syntax")


# ----------------------------------------------------------------------------- properties

_CONSTS = ["Ann", "Bob", "Cat"]
_UNARY = ["Red", "Big", "Kind", "Cold"]


@st.composite
def random_programs(draw: st.DrawFn) -> tuple[str, str]:
    """A random small LP program (unary predicates plus one relation), and the same with facts and rules reversed."""
    value = st.sampled_from(["True", "False"])
    facts = [
        f"{draw(st.sampled_from(_UNARY))}({draw(st.sampled_from(_CONSTS))}, {draw(value)})"
        for _ in range(draw(st.integers(1, 6)))
    ]
    facts += [
        f"Likes({draw(st.sampled_from(_CONSTS))}, {draw(st.sampled_from(_CONSTS))}, {draw(value)})"
        for _ in range(draw(st.integers(0, 3)))
    ]
    arg = st.sampled_from(["$x", "$x", "$y"] + _CONSTS)
    rules = []
    for _ in range(draw(st.integers(1, 6))):
        body = [f"{draw(st.sampled_from(_UNARY))}({draw(arg)}, {draw(value)})" for _ in range(draw(st.integers(1, 2)))]
        if draw(st.booleans()):
            body.append(f"Likes({draw(arg)}, {draw(arg)}, {draw(value)})")
        head = f"{draw(st.sampled_from(_UNARY + ['Likes']))}"
        head += f"({draw(arg)}, {draw(arg)}, {draw(value)})" if head == "Likes" else f"({draw(arg)}, {draw(value)})"
        rules.append(f"{' && '.join(body)} >>> {head}")
    query = f"{draw(st.sampled_from(_UNARY))}({draw(st.sampled_from(_CONSTS))}, {draw(value)})"
    forward = "Facts:\n" + "\n".join(facts) + "\nRules:\n" + "\n".join(rules) + f"\nQuery:\n{query}\n"
    backward = (
        "Facts:\n" + "\n".join(reversed(facts)) + "\nRules:\n" + "\n".join(reversed(rules)) + f"\nQuery:\n{query}\n"
    )
    return forward, backward


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs())
def test_verdict_does_not_depend_on_statement_order(programs: tuple[str, str]) -> None:
    forward, backward = programs
    a, b = lp.solve(forward, LIMITS), lp.solve(backward, LIMITS)
    assert (a.status, a.answer) == (b.status, b.answer)


@pytest.mark.skipif(not HAS_SWIPL, reason="SWI-Prolog not installed")
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs())
def test_prolog_translation_agrees_with_chainer_on_random_programs(programs: tuple[str, str]) -> None:
    same_verdict(programs[0], LIMITS)
