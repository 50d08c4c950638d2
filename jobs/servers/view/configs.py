"""A run's config and provenance as the viewer shows them: one table per run, and what differs between two.

The run page lists every setting the run stored (``config`` in its metadata: the shared options,
then its method's section, as ``symbolkg config show`` prints them) and how it was made
(``provenance``: version, commit, model and its files' hash, prompt ids, sampling, input). The
compare page puts two runs' settings side by side, the ones that differ first and marked: a flip
in the table means little until one knows that the two runs differ in ``max_refine_rounds``, in a
prompt template, or in the model's files.

A run written before runs stored their config shows the metadata it has (``source``, ``engine``,
``workers``, ...) instead, marked as such.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: Metadata keys that are not settings: the sessions' bookkeeping (and the two blocks shown apart).
_NOT_SETTINGS = frozenset(
    {"sessions", "wall_seconds", "finished", "shards", "session", "session_elapsed_s", "config", "provenance"}
)


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, Mapping) and "sha256" in v for v in value):
        names = (f"{str(v.get('path', '?')).rsplit('/', 1)[-1]} ({str(v['sha256'])[:12]})" for v in value)
        return "; ".join(names) or "none"
    return json.dumps(value, ensure_ascii=False, default=str)


def _flatten(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(obj, Mapping) and obj:
        return [kv for k, v in obj.items() for kv in _flatten(v, f"{prefix}{k}.")]
    return [(prefix.rstrip("."), _shown(obj))]


def config_rows(run_info: Mapping[str, Any]) -> dict[str, Any]:
    """The run page's config block.

    Returns:
        ``{"stored": bool, "config": [(key, value)], "provenance": [(key, value)]}``: dotted keys
        (``symba.max_calls``, ``model.files_sha256``), values as text (null as ``null``); without a
        stored config, ``config`` lists the run's other metadata.
    """
    stored = isinstance(run_info.get("config"), Mapping)
    if stored:
        config = _flatten(run_info["config"])
    else:
        config = _flatten({k: v for k, v in run_info.items() if k not in _NOT_SETTINGS})
    provenance = _flatten(run_info.get("provenance") or {})
    return {"stored": stored, "config": config, "provenance": provenance}


def config_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Two runs' settings side by side (config, then provenance), the differing ones first.

    ``out`` and the input files' paths are left out (two runs always write different files; the
    input's ``fingerprint`` says whether they read the same bytes).

    Returns:
        ``{"rows": [{"key", "a", "b", "differs"}], "differ": n, "same": n, "stored": (bool, bool)}``
        (a key one run lacks shows ``–`` on its side and differs).
    """
    ra, rb = config_rows(a), config_rows(b)
    skip = {"out", "input.files"}
    sides = []
    for rows in (ra, rb):
        sides.append(
            {k: v for k, v in rows["config"]} | {f"provenance.{k}": v for k, v in rows["provenance"] if k not in skip}
        )
    keys = list(dict.fromkeys([*sides[0], *sides[1]]))
    rows = [
        {"key": k, "a": sides[0].get(k, "–"), "b": sides[1].get(k, "–"), "differs": sides[0].get(k) != sides[1].get(k)}
        for k in keys
        if k not in skip
    ]
    rows.sort(key=lambda r: not r["differs"])  # stable: the differing first, each part in its order
    differ = sum(r["differs"] for r in rows)
    return {"rows": rows, "differ": differ, "same": len(rows) - differ, "stored": (ra["stored"], rb["stored"])}
