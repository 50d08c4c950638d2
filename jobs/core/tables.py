"""The Arrow side of the records of :mod:`symbolkg.jobs.core.rows`: the Parquet schemas and tables.

:data:`RESULT_SCHEMA` is the contract of the results Parquet: every writer goes through
:func:`result_table` and every reader can rely on these columns (:func:`conform_results` brings
files of older versions up to it). :data:`PROBLEM_SCHEMA` is the generic Parquet input of
``symbolkg solve --programs``. (Apart from the records so that importing them costs no pyarrow.)
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from symbolkg.jobs.core.rows import ResultRow
from symbolkg.jobs.core.schemas import check_row

PROBLEM_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("context", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("options", pa.list_(pa.string())),
        pa.field("answer", pa.string()),
        pa.field("program_language", pa.string()),
        pa.field("program_text", pa.string()),
        pa.field("meta", pa.string()),  # JSON object
    ]
)


RESULT_SCHEMA = pa.schema(
    [
        pa.field("problem_id", pa.string(), nullable=False),
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),
        pa.field("language", pa.string()),
        pa.field("program", pa.string()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("executed", pa.bool_(), nullable=False),
        pa.field("answer", pa.string()),
        pa.field("predicted", pa.string()),
        pa.field("gold", pa.string()),
        pa.field("correct", pa.bool_(), nullable=False),
        pa.field("error_kind", pa.string()),
        pa.field("error_message", pa.string()),
        pa.field("error_line", pa.int64()),
        pa.field("proof", pa.string()),
        pa.field("backend", pa.string(), nullable=False),
        pa.field("solve_seconds", pa.float64(), nullable=False),
        pa.field("latency_seconds", pa.float64(), nullable=False),
        pa.field("worker", pa.string(), nullable=False),
        pa.field("attempts", pa.int64(), nullable=False),
        pa.field("finished_at", pa.float64(), nullable=False),
        pa.field("model", pa.string()),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
        pa.field("llm_calls", pa.int64(), nullable=False),
        pa.field("cached_calls", pa.int64(), nullable=False),
        pa.field("llm_seconds", pa.float64(), nullable=False),
        pa.field("rounds", pa.int64(), nullable=False),
        pa.field("success_round", pa.int64()),
        pa.field("attempts_log", pa.string(), nullable=False),  # JSON list: schemas.ATTEMPTS_SCHEMAS
        pa.field("fallback_method", pa.string()),
        pa.field("fallback_predicted", pa.string()),
        pa.field("fallback_correct", pa.bool_()),
        pa.field("route", pa.string()),
        pa.field("trace", pa.string()),  # JSON object: schemas.TRACE_SCHEMAS
        pa.field("stage_seconds", pa.string()),  # JSON object: schemas.STAGE_SECONDS_SCHEMA
        pa.field("certificate", pa.string()),  # JSON object or null: schemas.CERTIFICATE_SCHEMAS
    ]
)

#: Columns added after the first results were written, with the value older files get.
_LATER_COLUMNS: dict[str, Any] = {"route": None, "trace": "{}", "stage_seconds": "{}", "certificate": None}


def conform_results(table: pa.Table) -> pa.Table:
    """A results table read from disk, cast to :data:`RESULT_SCHEMA`.

    Files written before a column existed (:data:`_LATER_COLUMNS`) get it with its default,
    so a run started by an older version can be reported and resumed.
    """
    for name, default in _LATER_COLUMNS.items():
        if name not in table.column_names:
            table = table.append_column(
                RESULT_SCHEMA.field(name), pa.array([default] * table.num_rows, RESULT_SCHEMA.field(name).type)
            )
    return table.select(RESULT_SCHEMA.names).cast(RESULT_SCHEMA)


def result_table(rows: list[ResultRow]) -> pa.Table:
    """Rows -> an Arrow table with exactly :data:`RESULT_SCHEMA`, each row's JSON columns checked against
    their schemas first (:func:`symbolkg.jobs.core.schemas.check_row`).

    Raises:
        RowSchemaError: a row whose ``trace``, ``attempts_log``, ``stage_seconds`` or ``certificate``
            breaks its schema (the code that built it has a bug; nothing of the batch is written).
    """
    for row in rows:
        check_row(row)
    return pa.Table.from_pylist([r.to_row() for r in rows], schema=RESULT_SCHEMA)
