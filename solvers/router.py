"""The logic router: which solver a problem goes to, decided by explainable features.

SymbolLKG routes each problem to Z3 (constraint satisfaction: orderings, all-different,
arithmetic, multiple choice over assignments), Prover9 (first-order entailment with a
True / False / Unknown answer: open world) or Prolog / LP (Horn clauses and relational queries
with a True / False answer: closed world). This router is deterministic: a short decision list
over :class:`RouteFeatures`, and the :class:`Route` it returns names the features that decided,
so a user can see why a problem went where it did. ``force`` overrides it (ablations).

Features come from two places: the problem's text (:func:`text_features`: the answer options,
ordering and arithmetic vocabulary, quantifiers, disjunctions) and, when an LKG exists, its
graph (counts of typed Constraint nodes, Rule nodes and typed relations), passed in as plain
numbers so this module needs nothing outside ``solvers/``.

Example:
    >>> f = text_features("Each cat is a pet. Tom is a cat.", "Is the following true or false? Tom is a pet.",
    ...                   ("A) True", "B) False"))
    >>> r = route(f)
    >>> r.solver, r.reasons[0]
    ('prolog', 'True/False answer over Horn-like rules (closed world)')
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

Solver = Literal["z3", "prover9", "prolog"]
SOLVERS: tuple[str, ...] = ("z3", "prover9", "prolog")
OptionsKind = Literal["true_false", "true_false_unknown", "choices", "none"]

_OPTION = re.compile(r"^\s*\(?[A-Ha-h]\)\s*")
_TRUE_FALSE = {"true", "false", "yes", "no"}
_UNKNOWN = {"unknown", "uncertain", "cannot be determined", "undetermined"}
_ORDERING = re.compile(
    r"\b(left|right|leftmost|rightmost|first|second|third|fourth|fifth|sixth|seventh|last|before|after|"
    r"above|below|older|oldest|younger|youngest|newer|newest|cheaper|cheapest|more expensive|most expensive|"
    r"earlier|later|position|order|ranked|finished|scheduled|slot|immediately)\b",
    re.IGNORECASE,
)
_ASSIGNMENT_QUESTION = re.compile(
    r"\b(could be|must be|cannot be|which one of the following|which of the following|"
    r"acceptable|assignment|schedule|complete and accurate list)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\b\d+(?:\.\d+)?\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|exactly|at least|"
    r"at most|more than|fewer than)\b",
    re.IGNORECASE,
)
_QUANTIFIER = re.compile(
    r"\b(all|every|each|any|no|none|some|everyone|someone|nobody|if|then|only if|whoever)\b", re.IGNORECASE
)
# "someone" / "something" are left out: "If someone is red then they are kind" is universal.
_DISJUNCTIVE = re.compile(r"\b(either|or|some|neither|nor|unless|exists?|at least one)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class RouteFeatures:
    """What the router looks at (plain numbers; see the module docstring).

    Attributes:
        options_kind: ``true_false``, ``true_false_unknown`` (a third option Unknown / Uncertain),
            ``choices`` (options with other texts), or ``none``.
        n_options: number of answer options.
        ordering_words: ordering / position words in the context and options.
        assignment_question: the question asks which option could / must be (an assignment).
        numbers: numbers and counting phrases in the context.
        quantifiers: quantifier and conditional words in the context.
        disjunctive_sentences: context sentences with a disjunction or an existential.
        sentences: context sentences.
        graph_constraints: LKG Constraint nodes by constraint type (empty without a graph).
        graph_rules: LKG Rule nodes.
        graph_relations: LKG typed entity-entity relation edges.
        has_graph: an LKG was available.
    """

    options_kind: OptionsKind
    n_options: int
    ordering_words: int
    assignment_question: bool
    numbers: int
    quantifiers: int
    disjunctive_sentences: int
    sentences: int
    graph_constraints: Mapping[str, int] = field(default_factory=dict)
    graph_rules: int = 0
    graph_relations: int = 0
    has_graph: bool = False

    def with_graph(self, constraints: Mapping[str, int], rules: int, relations: int) -> RouteFeatures:
        """These features plus counts read from the problem's LKG."""
        return replace(
            self, graph_constraints=dict(constraints), graph_rules=rules, graph_relations=relations, has_graph=True
        )

    @property
    def typed_constraints(self) -> int:
        """Constraint nodes of a solver-relevant type (Ordering, AllDifferent, Arithmetic)."""
        return sum(n for t, n in self.graph_constraints.items() if t in ("Ordering", "AllDifferent", "Arithmetic"))


def _option_text(option: str) -> str:
    return _OPTION.sub("", option).strip().rstrip(".").strip().lower()


def options_kind(options: Sequence[str]) -> OptionsKind:
    """Classify the answer options (see :class:`RouteFeatures`)."""
    texts = [_option_text(o) for o in options]
    if not texts:
        return "none"
    if all(t in _TRUE_FALSE for t in texts):
        return "true_false"
    if all(t in _TRUE_FALSE | _UNKNOWN for t in texts) and any(t in _UNKNOWN for t in texts):
        return "true_false_unknown"
    return "choices"


def text_features(context: str, question: str, options: Sequence[str], *, use_options: bool = True) -> RouteFeatures:
    """Features of a problem's text (no LKG).

    Args:
        context: the premises.
        question: the question.
        options: the answer options.
        use_options: False hides the answer options (an ablation: the options' format nearly
            names the dataset, so this shows what the content alone supports).
    """
    sentences = [s for s in _SENTENCE.split(context.strip()) if s]
    if not use_options:
        options = ()
    return RouteFeatures(
        options_kind=options_kind(options),
        n_options=len(options),
        ordering_words=len(_ORDERING.findall(context)) + len(_ORDERING.findall(" ".join(options))),
        assignment_question=bool(_ASSIGNMENT_QUESTION.search(question)),
        numbers=len(_NUMBER.findall(context)),
        quantifiers=len(_QUANTIFIER.findall(context)),
        disjunctive_sentences=sum(bool(_DISJUNCTIVE.search(s)) for s in sentences),
        sentences=len(sentences),
    )


@dataclass(frozen=True)
class Route:
    """The router's decision.

    Attributes:
        solver: ``z3``, ``prover9`` or ``prolog``.
        rule: the name of the decision-list rule that fired.
        reasons: human-readable reasons, the deciding one first.
        features: what the decision was made from.
    """

    solver: Solver
    rule: str
    reasons: tuple[str, ...]
    features: RouteFeatures


def route(features: RouteFeatures, force: Solver | None = None) -> Route:
    """Choose a solver by the decision list below; the first rule that fires decides.

    1. ``forced``: ``force`` is given (ablations).
    2. ``lkg_constraints``: the LKG holds >= 2 typed constraints (Ordering / AllDifferent / Arithmetic) -> z3.
    3. ``choice_assignment``: multiple choice (not True/False) over positions or assignments -> z3.
    4. ``open_world``: the options include Unknown / Uncertain -> prover9.
    4b. ``ordering``: no options to go by, and >= 4 ordering / position words -> z3.
    5. ``disjunctive``: >= 1/4 of the context's sentences use a disjunction or an existential
       (beyond Horn clauses) -> prover9.
    6. ``closed_world_horn``: a True / False answer over Horn-like rules -> prolog.
    7. ``arithmetic``: many numbers in the context -> z3.
    8. ``default``: prover9.

    Args:
        features: the problem's features.
        force: a solver to use whatever the features say.

    Returns:
        The :class:`Route`.
    """
    if force is not None:
        if force not in SOLVERS:
            raise ValueError(f"unknown solver {force!r}; expected one of {SOLVERS}")
        return Route(force, "forced", (f"forced to {force}",), features)
    f = features
    if f.typed_constraints >= 2:
        kinds = ", ".join(f"{t} x{n}" for t, n in sorted(f.graph_constraints.items()) if n)
        return Route("z3", "lkg_constraints", (f"LKG has {f.typed_constraints} typed constraints ({kinds})",), f)
    if f.options_kind == "choices" and (f.assignment_question or f.ordering_words >= 2):
        why = [f"multiple choice over {f.n_options} options"]
        if f.assignment_question:
            why.append("the question asks which option could / must hold (an assignment)")
        if f.ordering_words:
            why.append(f"{f.ordering_words} ordering / position words")
        return Route("z3", "choice_assignment", tuple(why), f)
    if f.options_kind == "true_false_unknown":
        return Route("prover9", "open_world", ("True/False/Unknown answer: entailment in an open world",), f)
    if f.options_kind == "none" and f.ordering_words >= 4:
        return Route("z3", "ordering", (f"{f.ordering_words} ordering / position words",), f)
    if f.sentences and f.disjunctive_sentences * 4 >= f.sentences:
        return Route(
            "prover9",
            "disjunctive",
            (
                f"{f.disjunctive_sentences} of {f.sentences} sentences use a disjunction or an existential "
                f"(not Horn clauses)",
            ),
            f,
        )
    if f.options_kind in ("true_false", "none") and (f.quantifiers or f.graph_rules):
        return Route(
            "prolog",
            "closed_world_horn",
            (
                "True/False answer over Horn-like rules (closed world)",
                f"{f.quantifiers} quantifier / conditional words, {f.graph_rules} LKG rules",
            ),
            f,
        )
    if f.numbers >= 4:
        return Route("z3", "arithmetic", (f"{f.numbers} numbers or counting phrases",), f)
    return Route("prover9", "default", ("no decisive feature: first-order logic is the most general",), f)


# --------------------------------------------------------------------------- route -> program language

#: A question that is not a plain "which statement is entailed": possibility (could / cannot /
#: may), counting (maximum / minimum / how many), a hypothesis (if ...) or an exception.
_SMT_QUESTION = re.compile(
    r"\b(could|cannot|can|may|might|must|maximum|minimum|how many|number|if|acceptable|"
    r"except|possible|impossible)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Target:
    """What the LLM writes for a route and what runs it.

    Attributes:
        solver: the route's solver.
        language: the program language the LLM is prompted for (it has few-shot examples).
        run_as: the :data:`symbolkg.solvers.registry.LANGUAGES` entry the solver pool runs.
        reason: why this language.
    """

    solver: Solver
    language: str
    run_as: str
    reason: str


def target_for(solver: Solver, question: str) -> Target:
    """The program language of a route.

    * ``prolog``: the Logic-LM LP language, translated to tabled Prolog and answered by SWI-Prolog;
    * ``prover9``: Logic-LM first-order logic, proved by Prover9;
    * ``z3``: the constraint language (variables over a finite domain, the entailed option wins)
      when the question only asks which statement is true; the Z3 DSL (sorts, functions,
      counting, per-option sat / valid checks) when it asks what could / cannot / must be,
      for a count, under a hypothesis or with an exception.

    Example:
        >>> target_for("z3", "Which of the following is true?").language
        'logiclm-csp'
        >>> target_for("z3", "Which one of the following could be the order?").language
        'logiclm-smt'
    """
    if solver == "prolog":
        return Target("prolog", "logiclm-lp", "logiclm-lp-swipl", "Horn rules and facts, run in SWI-Prolog")
    if solver == "prover9":
        return Target("prover9", "logiclm-fol", "logiclm-fol", "first-order premises and conclusion, run in Prover9")
    if solver == "z3":
        found = _SMT_QUESTION.search(question)
        if found:
            return Target(
                "z3",
                "logiclm-smt",
                "logiclm-smt",
                f"the question asks beyond plain entailment ({found.group(0)!r}): the Z3 DSL",
            )
        return Target(
            "z3", "logiclm-csp", "logiclm-csp", "the question asks which statement holds: a finite-domain CSP"
        )
    raise ValueError(f"unknown solver {solver!r}; expected one of {SOLVERS}")


# --------------------------------------------------------------------------- the LLM vote (optional)

#: Rules whose evidence is weak enough that an LLM vote may overrule them.
WEAK_RULES: frozenset[str] = frozenset({"default", "arithmetic", "disjunctive"})

_VOTE_SYSTEM = (
    "You choose the solver for a logic problem. Answer with one word:\n"
    "z3 - constraint satisfaction: orderings, positions, assignments, counting, arithmetic, "
    "multiple choice over arrangements;\n"
    "prover9 - first-order entailment where the answer may be True, False or Unknown (open world), "
    "with quantifiers, disjunctions, existentials;\n"
    "prolog - Horn-clause rules and facts, a True/False query under the closed-world assumption."
)


def vote_messages(
    context: str, question: str, options: Sequence[str], max_context_chars: int = 2000
) -> list[tuple[str, str]]:
    """The chat messages asking an LLM which solver fits (its answer: one of :data:`SOLVERS`)."""
    body = context if len(context) <= max_context_chars else context[:max_context_chars] + " ..."
    listed = "\n".join(options)
    return [
        ("system", _VOTE_SYSTEM),
        ("user", f"Problem:\n{body}\n\nQuestion: {question}\n{listed}\n\nSolver (z3, prover9 or prolog):"),
    ]


def parse_vote(text: str) -> Solver | None:
    """The solver an LLM named (first of :data:`SOLVERS` in its answer), or None."""
    found = re.search(r"\b(z3|prover9|prolog)\b", text.lower())
    return found.group(1) if found else None  # type: ignore[return-value]


def combine_vote(feature_route: Route, vote: Solver | None) -> Route:
    """The route with an LLM vote: it overrules only a weak feature rule (:data:`WEAK_RULES`).

    Strong evidence (typed constraints in the LKG, the answer format, a Horn-shaped closed-world
    question) keeps the feature choice; the vote is recorded either way.
    """
    if vote is None:
        return replace(feature_route, reasons=feature_route.reasons + ("LLM vote: none (unparsable)",))
    if feature_route.rule in WEAK_RULES and vote != feature_route.solver:
        return Route(
            vote,
            "llm_vote",
            (
                f"LLM vote {vote} overrules the weak feature rule {feature_route.rule} ({feature_route.solver})",
                *feature_route.reasons,
            ),
            feature_route.features,
        )
    return replace(feature_route, reasons=feature_route.reasons + (f"LLM vote: {vote}",))
