"""The English of generated LogicGraph instances: atom readings, templates, and readings from an LLM.

Every atom gets a :class:`Proposition` (English both ways and a first-order Prover9 atom), drawn
from a theme's vocabulary (:func:`propositions`) or asked of a model (:func:`readings_request`,
checked by :func:`parse_readings`); :func:`verbalize` builds each premise's sentence from the
readings with fixed templates for the connectives, so wording can never change what a premise says.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.logicgraph.propositional import And, Atom, Formula, Iff, Implies, Not, Or

__all__ = [
    "READINGS_PROMPT_VERSION",
    "THEMES",
    "Proposition",
    "instantiate",
    "parse_readings",
    "propositions",
    "readings_request",
    "rename",
    "verbalize",
]


def rename(formula: Formula, names: Mapping[str, str]) -> Formula:
    """The formula with atoms renamed (atoms not in ``names`` kept)."""
    if isinstance(formula, Atom):
        return Atom(names.get(formula.name, formula.name))
    if isinstance(formula, Not):
        return Not(rename(formula.arg, names))
    return type(formula)(rename(formula.left, names), rename(formula.right, names))


# ----------------------------------------------------------------------------- natural language

#: Template vocabulary: per theme, subjects ``(Constant, noun phrase)`` and predicates in the base
#: form (``"be approved"``, ``"pass the inspection"``); a proposition is one subject with one
#: predicate. Six themes x 5 subjects x 20 predicates = 100 propositions per theme; beyond that a
#: numbered fallback keeps very large instances renderable.
THEMES: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "Archaeological Research": (
        (
            ("ResearchTeam", "the research team"),
            ("FieldDirector", "the field director"),
            ("Museum", "the museum"),
            ("SurveyCrew", "the survey crew"),
            ("Conservator", "the conservator"),
        ),
        (
            "find an ancient relic",
            "have a government grant",
            "preserve the excavation site",
            "document the findings",
            "halt the excavation",
            "identify ceramic fragments",
            "identify metal objects",
            "finish within the season",
            "publish a report",
            "be granted a permit",
            "date the samples",
            "map the trench",
            "be visited by inspectors",
            "request more funding",
            "catalogue the artifacts",
            "consult the archive",
            "hire local guides",
            "be delayed by rain",
            "store the finds safely",
            "present at the conference",
        ),
    ),
    "Hospital Operations": (
        (
            ("Clinic", "the clinic"),
            ("HeadNurse", "the head nurse"),
            ("Surgeon", "the surgeon"),
            ("Pharmacy", "the pharmacy"),
            ("Patient", "the patient"),
        ),
        (
            "pass the inspection",
            "be fully staffed",
            "admit new patients",
            "order more supplies",
            "schedule the surgery",
            "be on call",
            "receive the lab results",
            "update the records",
            "follow the protocol",
            "be discharged",
            "need a second opinion",
            "approve the treatment",
            "report an incident",
            "be short of beds",
            "renew the license",
            "train the interns",
            "delay the appointment",
            "be audited",
            "stock the vaccine",
            "call the specialist",
        ),
    ),
    "Software Release": (
        (
            ("BuildServer", "the build server"),
            ("QATeam", "the QA team"),
            ("ReleaseManager", "the release manager"),
            ("Library", "the library"),
            ("MobileApp", "the mobile app"),
        ),
        (
            "pass the test suite",
            "be deployed",
            "be rolled back",
            "have a critical bug",
            "be code reviewed",
            "meet the deadline",
            "be approved for release",
            "raise an alert",
            "update the documentation",
            "be flagged by the scanner",
            "freeze the branch",
            "be backward compatible",
            "ship a patch",
            "be signed",
            "exceed the memory limit",
            "be merged",
            "lose the cache",
            "be benchmarked",
            "notify the users",
            "be archived",
        ),
    ),
    "Urban Transit": (
        (
            ("MetroLine", "the metro line"),
            ("BusDepot", "the bus depot"),
            ("CityCouncil", "the city council"),
            ("Operator", "the operator"),
            ("Station", "the station"),
        ),
        (
            "run on schedule",
            "be closed for repairs",
            "add extra trains",
            "raise the fares",
            "be overcrowded",
            "receive a subsidy",
            "pass the safety review",
            "extend the service hours",
            "be inspected",
            "hire new drivers",
            "issue a delay warning",
            "open a new stop",
            "be electrified",
            "lose its permit",
            "publish the timetable",
            "reroute the buses",
            "be accessible",
            "meet the ridership target",
            "cut the night service",
            "upgrade the signals",
        ),
    ),
    "Environmental Monitoring": (
        (
            ("RiverAgency", "the river agency"),
            ("Sensor", "the sensor"),
            ("Wetland", "the wetland"),
            ("Laboratory", "the laboratory"),
            ("Ranger", "the ranger"),
        ),
        (
            "detect pollution",
            "be flooded",
            "issue a warning",
            "collect water samples",
            "be calibrated",
            "record a heat wave",
            "restore the habitat",
            "be protected",
            "report to the ministry",
            "lose power",
            "count the birds",
            "close the trail",
            "measure high nitrate",
            "be replanted",
            "fine the factory",
            "be dry this year",
            "request a new survey",
            "track the wolves",
            "be certified",
            "publish the data",
        ),
    ),
    "Manufacturing Quality": (
        (
            ("Factory", "the factory"),
            ("AssemblyLine", "the assembly line"),
            ("Supplier", "the supplier"),
            ("Inspector", "the inspector"),
            ("Batch", "the batch"),
        ),
        (
            "meet the tolerance",
            "be recalled",
            "pass the audit",
            "stop production",
            "use the new alloy",
            "be shipped",
            "report a defect",
            "be certified",
            "replace the tooling",
            "miss the quota",
            "be reworked",
            "receive the raw materials",
            "run a night shift",
            "be sampled",
            "sign the contract",
            "overheat",
            "be rejected",
            "train the operators",
            "cut costs",
            "be labelled",
        ),
    ),
}


def _third_person(verb_phrase: str) -> str:
    verb, _, rest = verb_phrase.partition(" ")
    if verb == "be":
        verb = "is"
    elif verb == "have":
        verb = "has"
    elif verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        verb += "es"
    elif verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        verb = verb[:-1] + "ies"
    else:
        verb += "s"
    return f"{verb} {rest}".strip()


def _negative(verb_phrase: str) -> str:
    verb, _, rest = verb_phrase.partition(" ")
    if verb == "be":
        return f"is not {rest}".strip()
    return f"does not {verb_phrase}"


@dataclass(frozen=True)
class Proposition:
    """An atom's reading: English both ways and a first-order Prover9 atom."""

    positive: str
    negative: str
    prover9: str


def propositions(rng: random.Random, theme: str, count: int) -> list[Proposition]:
    subjects, predicates = THEMES[theme]
    pairs = [(s, p) for s in subjects for p in predicates]
    rng.shuffle(pairs)
    out: list[Proposition] = []
    for (constant, noun), predicate in pairs[:count]:
        name = "_".join(
            w for w in re.sub(r"[^a-z ]", "", predicate).split() if w not in ("the", "a", "an", "be", "its")
        )
        out.append(
            Proposition(f"{noun} {_third_person(predicate)}", f"{noun} {_negative(predicate)}", f"{name}({constant})")
        )
    for k in range(len(out), count):  # more atoms than the theme has propositions
        out.append(
            Proposition(f"condition {k + 1} holds", f"condition {k + 1} does not hold", f"holds(Condition{k + 1})")
        )
    return out


def verbalize(formula: Formula, readings: Mapping[str, Proposition]) -> str:
    """English for a formula: literals from ``readings``, connectives from fixed templates.

    Nested compound sub-formulas are put in parentheses so that the sentence has one reading
    (templates cannot rephrase the way the dataset's LLM-written sentences do).

    >>> r = {"A": Proposition("a holds", "a fails", "a"), "B": Proposition("b holds", "b fails", "b")}
    >>> verbalize(Implies(Not(Atom("A")), Or(Atom("A"), Atom("B"))), r)
    'If a fails, then (either a holds or b holds)'
    """

    def inner(f: Formula) -> str:
        # a negation reads as a prefix ("it is not the case that (...)"), which needs no brackets
        text = say(f)
        return text if isinstance(f, (Atom, Not)) else f"({text})"

    def say(f: Formula) -> str:
        if isinstance(f, Atom):
            return readings[f.name].positive
        if isinstance(f, Not):
            if isinstance(f.arg, Atom):
                return readings[f.arg.name].negative
            return f"it is not the case that {inner(f.arg)}"
        if isinstance(f, Implies):
            return f"if {inner(f.left)}, then {inner(f.right)}"
        if isinstance(f, Or):
            return f"either {inner(f.left)} or {inner(f.right)}"
        if isinstance(f, And):
            return f"both {inner(f.left)} and {inner(f.right)}"
        if isinstance(f, Iff):
            return f"{inner(f.left)} if and only if {inner(f.right)}"
        raise TypeError(f"not a formula: {f!r}")

    text = say(formula)
    return text[0].upper() + text[1:]


def instantiate(formula: Formula, readings: Mapping[str, Proposition]) -> Formula:
    return rename(formula, {name: r.prover9 for name, r in readings.items()})


# ----------------------------------------------------------------------------- English from an LLM

#: part of the completion cache key of the readings request: bump when it changes.
READINGS_PROMPT_VERSION = "logicgraph-readings-1"

_READINGS_SYSTEM = """You write short English statements for the atoms of a logic puzzle.

For each atom you get, write one plain statement about the theme (a present-tense clause about a \
person, team, object or place of that theme, with no "if", "or", "not" of its own, no final period) \
and its negation. Every atom gets a different statement. Answer with one JSON object mapping each \
atom to {"positive": ..., "negative": ...}.

Example. Theme: Farming. Atoms: A1, A2
{"A1": {"positive": "the farmer harvests the wheat", "negative": "the farmer does not harvest the wheat"}, \
"A2": {"positive": "the tractor is repaired", "negative": "the tractor is not repaired"}}"""

_BAD_IN_READING = re.compile(r"[{}\[\]\n\r]|\b(if|then|or|either|unless)\b", re.IGNORECASE)


def readings_request(theme: str, atom_names: Sequence[str]) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Chat messages and JSON schema asking a model for the English of ``atom_names``.

    The logical structure never goes to the model: only what each atom *means* is asked for; the
    connectives stay in the templates (:func:`verbalize`), so the model's wording cannot change
    what a premise says.
    """
    statement = {"type": "string", "minLength": 3, "maxLength": 100}
    reading = {
        "type": "object",
        "properties": {"positive": statement, "negative": statement},
        "required": ["positive", "negative"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {a: reading for a in atom_names},
        "required": list(atom_names),
        "additionalProperties": False,
    }
    user = f"Theme: {theme}. Atoms: {', '.join(atom_names)}"
    return [{"role": "system", "content": _READINGS_SYSTEM}, {"role": "user", "content": user}], schema


def parse_readings(text: str, template: Mapping[str, Proposition]) -> tuple[dict[str, Proposition], list[str]]:
    """The model's readings, checked; an atom whose reading fails a check keeps its template reading.

    Checks per atom: both statements present, at most 100 characters, no brackets or line breaks,
    no connective words of their own (``if``, ``or``, ...: they would make the verbalized premise
    ambiguous), the two polarities different, and every statement different from every other
    atom's (two atoms that read the same would merge in English what the logic keeps apart).

    Returns:
        ``(readings for every atom of template, problems)``; the first-order atoms stay the
        template's. Never raises for bad model output.
    """
    problems: list[str] = []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return dict(template), [f"not JSON: {exc.msg}"]
    if not isinstance(data, dict):
        return dict(template), ["not a JSON object"]
    out: dict[str, Proposition] = {}
    seen: set[str] = set()
    for name, fallback in template.items():
        raw = data.get(name)
        pos = raw.get("positive") if isinstance(raw, dict) else None
        neg = raw.get("negative") if isinstance(raw, dict) else None
        if not isinstance(pos, str) or not isinstance(neg, str):
            problems.append(f"{name}: missing")
            out[name] = fallback
            continue
        pos, neg = pos.strip().rstrip("."), neg.strip().rstrip(".")
        keys = {pos.lower(), neg.lower()}
        why = (
            "empty"
            if not pos or not neg
            else "too long"
            if max(len(pos), len(neg)) > 100
            else "a connective or bracket inside"
            if _BAD_IN_READING.search(pos) or _BAD_IN_READING.search(neg)
            else "both polarities read the same"
            if len(keys) < 2
            else "the same words as another atom"
            if keys & seen
            else ""
        )
        if why:
            problems.append(f"{name}: {why}")
            out[name] = fallback
            continue
        seen |= keys
        out[name] = Proposition(
            pos[0].lower() + pos[1:] if pos[:2] != pos[:2].upper() else pos,
            neg[0].lower() + neg[1:] if neg[:2] != neg[:2].upper() else neg,
            fallback.prover9,
        )
    for name in template:  # a template reading kept for one atom must not clash with the model's
        if out[name] is template[name]:
            seen |= {template[name].positive.lower(), template[name].negative.lower()}
    return out, problems
