"""The schemas of the results Parquet's JSON columns: ``trace``, ``attempts_log``, ``stage_seconds``, ``certificate``.

:data:`symbolkg.jobs.core.tables.RESULT_SCHEMA` types every flat column; these four hold nested
JSON text (they stay text, so that files written before keep their meaning and DuckDB reads them with
``json_extract``). What each holds is stated here, as JSON Schema (the 2020-12 keywords ``type``,
``enum``, ``properties``, ``required``, ``additionalProperties``, ``items`` and ``minimum``; any
JSON Schema validator accepts them), one schema per column, the ``trace`` and ``attempts_log`` ones per
method since each method writes its own (:func:`trace_schema`, :func:`attempts_schema`):

==============  ==========================================================================================
column          schema
==============  ==========================================================================================
trace           :data:`TRACE_SCHEMAS` [method] (``recorded``: the checks' report, ``cross_check``;
                ``logiclm``: the checks of the kept round, with ``--logiclm-samples K`` every sample
                (``samples[i].rounds``, ...) and the ``vote``; ``symbolkg``: lkg, retrieve, premises,
                route, hints; ``symba``; ``prolog-agent``; ``multipath``); other methods :data:`TRACE_BASE`
attempts_log    :data:`ATTEMPTS_SCHEMAS` [method]: one object per round (LLM loops: ``round``, ``purpose``,
                program, completion, tokens, ``outcome``, ``checks``; ``prolog-agent``: ``attempt``, ``stage``)
stage_seconds   :data:`STAGE_SECONDS_SCHEMA`: stage name -> seconds (>= 0)
certificate     :data:`CERTIFICATE_SCHEMAS` [kind] (``entailment``, ``derivation``, ``constraint``; the
                fields of :mod:`symbolkg.solvers.certificates`), or null
==============  ==========================================================================================

Keys a schema does not name are allowed (a method may record more), keys it names must have its types;
a trace names no required key at its top (a problem that fails early, before a stage, has ``{}``), the
records inside it do.
:func:`check_row` validates one row against them: every writer does so (``tables.result_table``), and
``tests/jobs/pipeline/test_schemas.py`` runs it over every row of the results files the tests produce.
The validator is the small one below (:func:`errors`): no dependency, fast on the rows' sizes, since
it never descends into what a schema leaves open (a model, a closure's atoms).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from symbolkg.jobs.core.rows import ResultRow
from symbolkg.solvers.certificates import KINDS
from symbolkg.solvers.outcomes import Status

JsonSchema = dict[str, Any]

# --------------------------------------------------------------------------- building blocks

STR: JsonSchema = {"type": "string"}
INT: JsonSchema = {"type": "integer"}
NUM: JsonSchema = {"type": "number"}
BOOL: JsonSchema = {"type": "boolean"}
OBJ: JsonSchema = {"type": "object"}
ARR: JsonSchema = {"type": "array"}


def _opt(schema: JsonSchema) -> JsonSchema:
    """``schema`` or null."""
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return {**schema, "type": [*types, "null"]}


def _list(items: JsonSchema) -> JsonSchema:
    return {"type": "array", "items": items}


def _obj(properties: dict[str, JsonSchema], required: Iterable[str] = ()) -> JsonSchema:
    return {"type": "object", "properties": properties, "required": list(required)}


#: A finding of the formalization checks (:meth:`symbolkg.solvers.outcomes.CheckFinding.to_dict`).
FINDING: JsonSchema = _obj(
    {
        "check": STR,
        "severity": {"enum": ["error", "warning", "info"]},
        "message": STR,
        "line": _opt(INT),
        "corrects": BOOL,
    },
    required=("check", "severity", "message", "line", "corrects"),
)

#: An outcome as an attempt records it (:meth:`symbolkg.solvers.outcomes.Outcome.log_entry`).
OUTCOME_ENTRY: JsonSchema = _obj(
    {
        "status": {"enum": [s.value for s in Status]},
        "answer": _opt(STR),
        "error_kind": _opt(STR),
        "error_message": _opt(STR),
        "error_line": _opt(INT),
        "seconds": NUM,
        "backend": STR,
        "certificate": _opt(OBJ),
        "checks": {"type": "null"},
        "readings": _opt(_list(STR)),
    },
    required=("status", "answer", "error_kind", "seconds", "backend"),
)

#: The checks' entries of a trace (:meth:`symbolkg.solvers.outcomes.CheckReport.trace`).
_CHECKS_TRACE: dict[str, JsonSchema] = {
    "checks": _list(FINDING),
    "corrected": BOOL,
    "corrections": _list(STR),
    "original_program": _opt(STR),
    "remaining": _list(FINDING),
}

#: Keys any method's trace may have (the row builder adds ``readings``).
_COMMON_TRACE: dict[str, JsonSchema] = {"readings": _list(STR)}

# --------------------------------------------------------------------------- trace

#: A trace of a method that records none of its own (``direct``, ``cot``, plugins).
TRACE_BASE: JsonSchema = _obj(_COMMON_TRACE)

_CROSS_CHECK: JsonSchema = _obj(
    {"backend": STR, "answer": _opt(STR), "agrees": _opt(BOOL), "status": STR}, required=("backend", "agrees")
)

#: One sample of ``--logiclm-samples K`` (:meth:`symbolkg.jobs.methods.logiclm.Sample.entry`).
SAMPLE: JsonSchema = _obj(
    {
        "seed": INT,
        "answer": _opt(STR),
        "solver_answer": _opt(STR),
        "executed": BOOL,
        "rank": {"enum": ["clean", "flagged", "failed"]},
        "counted": BOOL,
        "excluded": _opt(STR),
        "kept_round": _opt(INT),
        "rounds": {"type": "integer", "minimum": 0},
        "fixed_point": _opt(INT),
        "status": {"enum": [s.value for s in Status]},
        "error_kind": _opt(STR),
        "error_message": _opt(STR),
        "checks": _list(FINDING),
        "corrected": BOOL,
        "program": _opt(STR),
        "prompt_tokens": INT,
        "completion_tokens": INT,
    },
    required=("seed", "executed", "rank", "counted", "rounds", "status", "checks"),
)

_VOTE: JsonSchema = _obj(
    {
        "winner": _opt(STR),
        "counts": {"type": "object", "additionalProperties": INT},
        "counted": INT,
        "samples": INT,
        "agreement": _opt(NUM),
        "reason": STR,
        "seed": _opt(INT),
    },
    required=("winner", "counts", "counted", "samples"),
)

_ROUTE: JsonSchema = _obj(
    {
        "solver": STR,
        "rule": STR,
        "reasons": _list(STR),
        "features": OBJ,
        "language": STR,
        "run_as": STR,
        "language_reason": STR,
    },
    required=("solver", "language", "run_as"),
)

_MCP_CALL: JsonSchema = _obj({"tool": STR, "ok": BOOL, "seconds": NUM, "error": _opt(STR)}, required=("tool", "ok"))

#: method -> the schema of its rows' ``trace``.
TRACE_SCHEMAS: dict[str, JsonSchema] = {
    "recorded": _obj({**_COMMON_TRACE, **_CHECKS_TRACE, "cross_check": _CROSS_CHECK}),
    "logiclm": _obj(
        {**_COMMON_TRACE, **_CHECKS_TRACE, "refine_fixed_point": INT, "samples": _list(SAMPLE), "vote": _VOTE}
    ),
    "symbolkg": _obj(
        {
            **_COMMON_TRACE,
            "lkg": _obj(
                {"key": _opt(STR), "source": STR, "status": _opt(STR), "nodes": INT, "edges": INT, "issues": INT},
                required=("source", "nodes", "edges"),
            ),
            "retrieve": _opt(
                _obj(
                    {
                        "entities": _list(STR),
                        "entities_source": STR,
                        "anchors": ARR,
                        "hull": ARR,
                        "kept": ARR,
                        "prune_source": STR,
                        "errors": ARR,
                    }
                )
            ),
            "premises": _obj({"source": STR, "sentences": _list(INT), "of": INT}, required=("source", "sentences")),
            "route": _ROUTE,
            "route_vote_error": STR,
            "hints": STR,
            "refine_fixed_point": INT,
        }
    ),
    "symba": _obj(
        {
            **_COMMON_TRACE,
            "goal": STR,
            "statements": _list(OBJ),
            "world_rules": INT,
            "rejected": _list(OBJ),
            "asked": _list(STR),
            "no_applicable_fact": INT,
            "no_applicable_rule": INT,
            "stop": STR,
        }
    ),
    "prolog-agent": _obj(
        {
            **_COMMON_TRACE,
            "mcp_transport": STR,
            "mcp_calls": _list(_MCP_CALL),
            "reused_sessions": INT,
            "sldnf_closure": _opt(STR),
            "sldnf": _opt(OBJ),
            "rederived": _opt(OBJ),
            "refine_fixed_point": INT,
        }
    ),
    "multipath": _obj(
        {
            **_COMMON_TRACE,
            "paths": INT,
            "valid_paths": INT,
            "verdicts": _list(_obj({"valid": BOOL, "minimal": BOOL, "labels": _list(STR), "used_ids": ARR})),
            "supports": _list(ARR),
            "supports_complete": BOOL,
            "supports_certified": BOOL,
            "supports_covered": _list(ARR),
            "parse_errors": _list(STR),
            "truncated": BOOL,
        }
    ),
}

# --------------------------------------------------------------------------- attempts_log

#: A round of the formulate -> solve -> refine loop (``logiclm``, ``symbolkg``): a program written and
#: run (``formulate`` / ``refine``), the engine's failure to write one (``engine_error``), or the text-
#: resolved corrections applied after the loop (``correct``); ``seed`` tags a sample's rounds.
LOOP_ROUND: JsonSchema = _obj(
    {
        "round": _opt(INT),
        "seed": INT,
        "purpose": {"enum": ["formulate", "refine", "correct"]},
        "program": STR,
        "completion": STR,
        "prompt_tokens": INT,
        "completion_tokens": INT,
        "finish_reason": STR,
        "llm_seconds": NUM,
        "cached": BOOL,
        "stored_tokens": _list(INT),
        "outcome": OUTCOME_ENTRY,
        "checks": _list(FINDING),
        "corrections": _list(STR),
        "engine_error": STR,
    },
    required=("round", "purpose"),
)

_LOOP_ATTEMPTS: JsonSchema = _list(LOOP_ROUND)

#: method -> the schema of its rows' ``attempts_log``.
ATTEMPTS_SCHEMAS: dict[str, JsonSchema] = {
    "recorded": _list(OBJ),
    "logiclm": _LOOP_ATTEMPTS,
    "symbolkg": _LOOP_ATTEMPTS,
    "direct": _list(
        _obj(
            {"round": INT, "purpose": STR, "completion": _opt(STR), "predicted": _opt(STR), "engine_error": _opt(STR)},
            required=("round", "purpose"),
        )
    ),
    "prolog-agent": _list(
        _obj(
            {
                "attempt": INT,
                "completion": STR,
                "stage": STR,
                "error": _opt(OBJ),
                "program": STR,
                "goal": STR,
                "reused_session": BOOL,
                "outcome": STR,
                "stored_tokens": _list(INT),
            },
            required=("attempt",),
        )
    ),
    "multipath": _list(
        _obj(
            {
                "round": INT,
                "purpose": STR,
                "completion": STR,
                "parse_errors": _list(STR),
                "finish_reason": _opt(STR),
                "cached": BOOL,
                "stored_tokens": _list(INT),
                "prompt_version": STR,
            },
            required=("round", "purpose", "completion"),
        )
    ),
}
ATTEMPTS_SCHEMAS["cot"] = ATTEMPTS_SCHEMAS["direct"]

#: An ``attempts_log`` of a method not listed: a list of objects.
ATTEMPTS_BASE: JsonSchema = _list(OBJ)

# --------------------------------------------------------------------------- stage_seconds, certificate

STAGE_SECONDS_SCHEMA: JsonSchema = {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}}

#: What every certificate has (:mod:`symbolkg.solvers.certificates`: ``check`` dispatches on ``kind``).
CERTIFICATE_BASE: JsonSchema = _obj(
    {"kind": {"enum": list(KINDS)}, "version": INT, "producer": STR, "answer": _opt(STR)},
    required=("kind", "version", "producer"),
)

_LINE_TEXT: JsonSchema = _obj({"line": _opt(INT), "text": STR, "prover9": STR}, required=("text",))

#: kind -> the schema of a certificate of that kind (each module's docstring has the fields).
CERTIFICATE_SCHEMAS: dict[str, JsonSchema] = {
    "entailment": _obj(
        {
            **CERTIFICATE_BASE["properties"],
            "claim": {"enum": ["goal", "negation", "inconsistent", "independent"]},
            "goal": _LINE_TEXT,
            "premises": _list(_LINE_TEXT),
            "countermodels": _opt(_obj({"goal_false": _opt(OBJ), "goal_true": _opt(OBJ), "reason": _opt(STR)})),
        },
        required=("kind", "version", "producer", "answer", "claim", "goal", "premises"),
    ),
    "derivation": _obj(
        {
            **CERTIFICATE_BASE["properties"],
            "format": STR,
            "query": OBJ,
            "steps": _list(OBJ),
            # steps / closure (method, count, atoms): the forward chainer and SWI-Prolog; ``format: "tree"``:
            # SymBa's proof tree, its closure the goal searched under negation as failure (or a denial)
            "closure": _obj(
                {"method": STR, "count": INT, "atoms": _opt(OBJ), "searched": STR, "denial": OBJ}, required=("method",)
            ),
            "tree": OBJ,
        },
        required=("kind", "version", "producer", "answer", "query"),
    ),
    "constraint": _obj(
        {
            **CERTIFICATE_BASE["properties"],
            "language": {"enum": ["logiclm-csp", "logiclm-smt"]},
            "constraints": _list(_obj({"id": INT, "text": STR}, required=("id", "text"))),
            "model": _opt(OBJ),
            "options": _list(_obj({"letter": STR, "check": STR, "passes": BOOL, "facts": _list(OBJ)})),
        },
        required=("kind", "version", "producer", "answer", "language", "constraints"),
    ),
}


def trace_schema(method: str) -> JsonSchema:
    """The schema of ``method``'s ``trace`` (:data:`TRACE_BASE` for a method that records no trace of its own)."""
    return TRACE_SCHEMAS.get(method, TRACE_BASE)


def attempts_schema(method: str) -> JsonSchema:
    """The schema of ``method``'s ``attempts_log`` (:data:`ATTEMPTS_BASE` for a method not listed)."""
    return ATTEMPTS_SCHEMAS.get(method, ATTEMPTS_BASE)


def certificate_errors(certificate: Any, path: str = "$") -> list[str]:
    """What is wrong with a certificate object: :data:`CERTIFICATE_BASE`, then its kind's schema."""
    found = errors(certificate, CERTIFICATE_BASE, path)
    if found:
        return found
    return errors(certificate, CERTIFICATE_SCHEMAS[certificate["kind"]], path)


# --------------------------------------------------------------------------- the validator

#: The JSON type of each Python type ``json.loads`` gives (exact types: a bool is no integer here).
_JSON_TYPES: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
_TYPE_SETS: dict[int, frozenset[str]] = {}  # id(schema) -> its types; the schemas are module constants


def errors(value: Any, schema: JsonSchema, path: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema`` (JSON Schema's ``type``, ``enum``, ``properties``, ``required``,
    ``additionalProperties``, ``items``, ``minimum``), one line each naming the JSON path; [] when it fits.

    ``value`` is what ``json.loads`` returns (dict, list, str, int, float, bool, None).

    >>> errors({"rounds": "2"}, {"type": "object", "properties": {"rounds": {"type": "integer"}}})
    ["$.rounds: expected integer, got string '2'"]
    """
    found: list[str] = []
    _walk(value, schema, [path], found)
    return found


def _walk(value: Any, schema: JsonSchema, path: list[str], found: list[str]) -> None:
    """:func:`errors` on ``value`` at ``path`` (a stack of parts, joined only for a message)."""
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    if "type" in schema:
        types = _TYPE_SETS.get(id(schema))
        if types is None:
            named = schema["type"]
            types = _TYPE_SETS[id(schema)] = frozenset(named if isinstance(named, list) else [named])
        if kind not in types and not (kind == "integer" and "number" in types):
            found.append(f"{''.join(path)}: expected {' or '.join(sorted(types))}, got {kind} {_short(value)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{''.join(path)}: expected one of {schema['enum']}, got {_short(value)}")
        return
    if "minimum" in schema and kind in ("integer", "number") and value < schema["minimum"]:
        found.append(f"{''.join(path)}: expected >= {schema['minimum']}, got {value!r}")
        return
    if kind == "object":
        for key in schema.get("required", ()):
            if key not in value:
                found.append(f"{''.join(path)}: missing {key!r}")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = properties.get(key, extra)
            if sub is False:
                found.append(f"{''.join(path)}: unexpected key {key!r}")
            elif sub is not True and sub:
                path.append(f".{key}")
                _walk(item, sub, path, found)
                path.pop()
    elif kind == "array" and "items" in schema:
        items = schema["items"]
        for i, item in enumerate(value):
            path.append(f"[{i}]")
            _walk(item, items, path, found)
            path.pop()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- rows


class RowSchemaError(ValueError):
    """A result row whose JSON columns break their schemas (a bug of the code that built it)."""


def row_errors(row: ResultRow) -> list[str]:
    """Where ``row``'s JSON columns break their schemas, one line each (``column $.path: what``)."""
    found: list[str] = []
    columns = (
        ("trace", row.trace, trace_schema(row.method)),
        ("attempts_log", row.attempts_log, attempts_schema(row.method)),
        ("stage_seconds", row.stage_seconds, STAGE_SECONDS_SCHEMA),
    )
    for column, text, schema in columns:
        value = _parsed(column, text, found)
        if value is not _BAD:
            found += [f"{column} {e}" for e in errors(value, schema)]
    if row.certificate is not None:
        value = _parsed("certificate", row.certificate, found)
        if value is not _BAD:
            found += [f"certificate {e}" for e in certificate_errors(value)]
    return found


def check_row(row: ResultRow) -> None:
    """Raise :class:`RowSchemaError` when ``row``'s JSON columns break their schemas.

    Raises:
        RowSchemaError: naming the problem, the method, the column and the JSON path of each fault.
    """
    found = row_errors(row)
    if found:
        raise RowSchemaError(
            f"result row {row.problem_id!r} (method {row.method!r}) breaks the results schema "
            f"(jobs/core/schemas.py): "
            + "; ".join(found[:5])
            + (f" (and {len(found) - 5} more)" if len(found) > 5 else "")
        )


_BAD = object()


def _parsed(column: str, text: Any, found: list[str]) -> Any:
    if not isinstance(text, str):
        found.append(f"{column}: expected JSON text, got {type(text).__name__}")
        return _BAD
    try:
        return json.loads(text)
    except ValueError as exc:
        found.append(f"{column}: not JSON ({exc})")
        return _BAD
