"""What the problem page shows, as plain data for the templates (the run page's charts: :mod:`.charts`).

The server (:mod:`.app`) and the static bundle (:mod:`.bundle`) render the same templates from
these functions, so a published bundle shows exactly what the server shows.

* :func:`problem_view`: one problem: question, options, gold and predicted answer, every attempt
  (the prompt rebuilt with the method's own prompt builder, the program with its failing line
  marked, the solver's error, the check findings), the final program with the premises its
  certificate cites, the certificate drawn (cited premises linked to the context sentences they
  formalize, the proof as a tree, countermodels and models as tables), the verify verdict, and
  per method what it adds: the retrieved LKG subgraph (``symbolkg``, drawn with Graphviz), the
  statements the LLM contributed with their sentences (``symba``), the MCP calls
  (``prolog-agent``), the sampled programs and the vote that chose the answer (``logiclm`` with
  ``--logiclm-samples``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from symbolkg.jobs.datasets.logiclm import SET_LANGUAGE
from symbolkg.jobs.inspection.explain import explain_row
from symbolkg.jobs.inspection.lkg_show import render_dot
from symbolkg.jobs.servers.view.queries import RunError, RunSource, problem_text
from symbolkg.retrieval.lkg.canonical import split_sentences
from symbolkg.retrieval.lkg.schema import Graph
from symbolkg.retrieval.lkg.store import LKGStore
from symbolkg.solvers import prompts

# --------------------------------------------------------------------------- one problem


def _json(text: Any, default: Any) -> Any:
    if not isinstance(text, str) or not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def program_lines(
    program: str | None,
    *,
    error_line: int | None = None,
    cited: dict[int, Any] | None = None,
    findings: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """A program's lines with what the page marks on them: the failing line, cited premises, findings."""
    cited = cited or {}
    by_line: dict[int, list[str]] = {}
    for f in findings or []:
        if isinstance(f, dict) and isinstance(f.get("line"), int):
            by_line.setdefault(f["line"], []).append(f"{f.get('severity')}: {f.get('message')}")
    out = []
    for n, text in enumerate((program or "").splitlines(), start=1):
        out.append(
            {"n": n, "text": text, "error": n == error_line, "cited": cited.get(n), "findings": by_line.get(n, [])}
        )
    return out


def _prompt(
    row: dict[str, Any], text: dict[str, Any] | None, trace: dict[str, Any], attempts: list[dict[str, Any]], index: int
) -> dict[str, Any] | None:
    """The prompt of attempt ``index``, rebuilt with the method's own prompt builder (logiclm, symbolkg).

    The prompts are deterministic functions of the problem, the method's trace and the earlier
    attempts (:mod:`symbolkg.solvers.prompts`), so the run need not store them. Returns None where
    they cannot be rebuilt (other methods, the problem text not loadable here).
    """
    if text is None or row.get("method") not in ("logiclm", "symbolkg"):
        return None
    attempt = attempts[index]
    if attempt.get("purpose") not in ("formulate", "refine"):
        return None
    context = text["context"]
    hints = ""
    language = row.get("language") or SET_LANGUAGE.get(row["dataset"])
    if row["method"] == "symbolkg":
        route = trace.get("route") or {}
        language = route.get("language") or language
        hints = trace.get("hints") or ""
        chosen = (trace.get("premises") or {}).get("sentences") or []
        sentences = split_sentences(context)
        if chosen:
            context = " ".join(sentences[i] for i in chosen if 0 <= i < len(sentences))
    if language is None:
        return None
    try:
        if index == 0 or attempt.get("purpose") == "formulate":
            messages = prompts.formulation_messages(language, context, text["question"], text["options"], hints)
        else:
            prev = attempts[index - 1]
            outcome = prev.get("outcome") or {}
            errors = [f for f in prev.get("checks") or [] if f.get("severity") == "error"]
            if outcome.get("executed") and errors:
                kind, message, line = (
                    "formalization",
                    "\n".join(f"- {f['message']}" for f in errors),
                    errors[0].get("line"),
                )
            else:
                kind = outcome.get("error_kind")
                message = outcome.get("error_message") or outcome.get("status") or ""
                line = outcome.get("error_line")
            messages = prompts.refine_messages(
                language,
                context,
                text["question"],
                text["options"],
                prev.get("program") or "",
                kind,
                message,
                line,
                hints,
                reply=prev.get("completion"),
            )
    except (ValueError, KeyError, TypeError):
        return None
    return {
        "last": messages[-1][1],
        "messages": [{"role": r, "content": c} for r, c in messages],
        "exact": not (
            index > 0
            and attempt.get("purpose") == "refine"
            and (attempts[index - 1].get("outcome") or {}).get("executed")
        ),
    }


def _attempts(row: dict[str, Any], text: dict[str, Any] | None, trace: dict[str, Any]) -> list[dict[str, Any]]:
    attempts = _json(row.get("attempts_log"), [])
    if not isinstance(attempts, list):
        return []
    out = []
    for i, a in enumerate(attempts):
        if not isinstance(a, dict):
            continue
        outcome = a.get("outcome") if isinstance(a.get("outcome"), dict) else {}
        error_line = outcome.get("error_line") if isinstance(outcome.get("error_line"), int) else None
        findings = [f for f in a.get("checks") or [] if isinstance(f, dict)]
        program = a.get("program")
        if program is None and a.get("completion") and a.get("engine_error") is None:
            program = None
        shown_keys = {
            "round",
            "attempt",
            "purpose",
            "program",
            "completion",
            "outcome",
            "checks",
            "prompt_tokens",
            "completion_tokens",
            "llm_seconds",
            "cached",
            "stored_tokens",
            "engine_error",
            "seed",
        }
        n = a.get("round") or a.get("attempt") or i + 1
        seed = a.get("seed")  # a sampled loop's attempt (logiclm --logiclm-samples): rounds restart per sample
        out.append(
            {
                "n": n,
                "seed": seed,
                "key": f"s{seed}-{n}" if seed is not None else n,
                "purpose": a.get("purpose") or a.get("stage") or "",
                "program": program_lines(program, error_line=error_line, findings=findings) if program else [],
                "completion": a.get("completion"),
                "status": outcome.get("status")
                if outcome
                else (a.get("outcome") if isinstance(a.get("outcome"), str) else None),
                "error": {
                    "kind": outcome.get("error_kind"),
                    "message": outcome.get("error_message"),
                    "line": error_line,
                }
                if outcome.get("error_kind") or outcome.get("error_message")
                else None,
                "answer": outcome.get("answer"),
                "engine_error": a.get("engine_error"),
                "findings": findings,
                "tokens": (a.get("prompt_tokens"), a.get("completion_tokens")) if "prompt_tokens" in a else None,
                "llm_seconds": a.get("llm_seconds"),
                "cached": a.get("cached"),
                "stored_tokens": a.get("stored_tokens"),
                "extra": {k: v for k, v in a.items() if k not in shown_keys},
                "prompt": _prompt(row, text, trace, attempts, i),
            }
        )
    return out


def _tree_from_steps(cert: dict[str, Any]) -> dict[str, Any] | None:
    """The LP derivation's steps (premises before conclusions) as a tree rooted at the deciding atom."""
    steps = [s for s in cert.get("steps") or [] if isinstance(s, dict)]
    if not steps:
        return None
    by_id = {s.get("id"): s for s in steps}

    def node(step: dict[str, Any], depth: int) -> dict[str, Any]:
        is_fact = step.get("rule") is None
        binding = ", ".join(f"{k}={v}" for k, v in (step.get("binding") or {}).items())
        children = [] if depth > 40 else [node(by_id[i], depth + 1) for i in step.get("body") or [] if i in by_id]
        return {
            "goal": step.get("atom"),
            "how": "fact" if is_fact else "rule",
            "line": step.get("line"),
            "clause": step.get("rule_text"),
            "binding": binding,
            "children": children,
        }

    return node(steps[-1], 0)


def _tree_from_symba(tree: Any, depth: int = 0) -> dict[str, Any] | None:
    if not isinstance(tree, dict):
        return None
    if tree.get("naf"):
        how = "naf"
    elif tree.get("builtin"):
        how = "builtin"
    elif tree.get("truncated"):
        how = "truncated"
    elif not tree.get("children") and not tree.get("binding"):
        how = "fact"
    else:
        how = "rule"
    binding = ", ".join(f"{k}={v}" for k, v in (tree.get("binding") or {}).items())
    children = (
        []
        if depth > 60
        else [c for c in (_tree_from_symba(ch, depth + 1) for ch in tree.get("children") or []) if c is not None]
    )
    return {
        "goal": tree.get("goal"),
        "how": how,
        "line": tree.get("line"),
        "clause": tree.get("clause"),
        "binding": binding,
        "atom": tree.get("atom"),
        "children": children,
    }


def _model_table(model: Any) -> dict[str, Any] | None:
    """A first-order countermodel (entailment certificate) as tables: constants, and per predicate its tuples."""
    if not isinstance(model, dict):
        return None
    size = model.get("domain_size")
    constants = model.get("constants") or {}
    names = {}
    for name, i in constants.items():
        names.setdefault(i, []).append(name)

    def individual(i: Any) -> str:
        return "/".join(names.get(i, [])) or f"#{i}"

    predicates = []
    for name, tuples in sorted((model.get("predicates") or {}).items()):
        if tuples == [[]]:
            holds = "true"
        elif tuples == []:
            holds = "false (true of nothing)"
        else:
            holds = "; ".join("(" + ", ".join(individual(i) for i in t) + ")" for t in tuples)
        predicates.append({"name": name, "holds": holds})
    functions = [
        {
            "name": name,
            "holds": "; ".join(
                f"{name}({', '.join(individual(i) for i in args)}) = {individual(v)}" for args, v in table
            ),
        }
        for name, table in sorted((model.get("functions") or {}).items())
    ]
    return {
        "domain_size": size,
        "individuals": [{"i": i, "names": individual(i)} for i in range(size or 0)],
        "predicates": predicates,
        "functions": functions,
    }


def _value_rows(model: Any) -> list[dict[str, str]]:
    if not isinstance(model, dict):
        return []
    return [
        {"name": str(k), "value": json.dumps(v) if not isinstance(v, (str, int, float)) else str(v)}
        for k, v in model.items()
    ]


def certificate_view(cert: dict[str, Any] | None, explanation: Any) -> dict[str, Any] | None:
    """The certificate as the page draws it (kind-specific parts, plus the explain text as a fallback)."""
    if not cert:
        return None
    kind = cert.get("kind")
    view: dict[str, Any] = {
        "kind": kind,
        "answer": cert.get("answer"),
        "producer": cert.get("producer"),
        "text": list(explanation.proof) if explanation else [],
        "raw": json.dumps(cert, indent=1),
    }
    if kind == "entailment":
        view["claim"] = cert.get("claim")
        view["goal"] = cert.get("goal")
        cms = cert.get("countermodels") or {}
        view["countermodels"] = [
            {"which": label, "model": _model_table(cms.get(key))}
            for key, label in (
                ("goal_false", "a model of the premises where the goal is false"),
                ("goal_true", "a model of the premises where the goal is true"),
            )
            if cms.get(key)
        ]
        view["countermodel_reason"] = cms.get("reason")
    elif kind == "derivation":
        view["query"] = cert.get("query")
        if cert.get("format") == "tree":
            view["tree"] = _tree_from_symba(cert.get("tree"))
        else:
            view["tree"] = _tree_from_steps(cert)
        closure = cert.get("closure")
        if isinstance(closure, dict):
            view["closure"] = {
                "method": closure.get("method"),
                "count": closure.get("count"),
                "searched": closure.get("searched"),
                "atoms": [{"group": g, "atoms": e} for g, e in (closure.get("atoms") or {}).items()],
            }
    elif kind == "constraint":
        texts = {c.get("id"): c.get("text") for c in cert.get("constraints") or [] if isinstance(c, dict)}
        view["model"] = _value_rows(cert.get("model"))
        options = []
        for o in cert.get("options") or []:
            if not isinstance(o, dict):
                continue
            facts = []
            for f in o.get("facts") or []:
                if not isinstance(f, dict):
                    continue
                facts.append(
                    {
                        "query": f.get("query") + (f" {f['index']}" if f.get("index") is not None else ""),
                        "sat": f.get("sat"),
                        "model": _value_rows(f.get("model")) if f.get("sat") else [],
                        "core": [{"id": i, "text": texts.get(i)} for i in f.get("core") or []],
                        "minimal": f.get("minimal"),
                    }
                )
            options.append(
                {
                    "letter": o.get("letter"),
                    "text": o.get("text"),
                    "check": o.get("check"),
                    "passes": o.get("passes"),
                    "line": o.get("line"),
                    "facts": facts,
                }
            )
        view["options"] = options
    return view


def lkg_view(
    source: RunSource, row: dict[str, Any], trace: dict[str, Any], lkg_store: Path | None
) -> dict[str, Any] | None:
    """The retrieved subgraph of a ``symbolkg`` row: counts, node lists and a Graphviz drawing (SVG)."""
    lkg = trace.get("lkg")
    retrieve = trace.get("retrieve") or {}
    if not isinstance(lkg, dict):
        return None
    out: dict[str, Any] = {
        "trace": lkg,
        "retrieve": {k: v for k, v in retrieve.items() if not isinstance(v, list)},
        "route": trace.get("route"),
        "premises": trace.get("premises"),
        "svg": None,
        "note": None,
        "nodes": [],
    }
    if lkg_store is None:
        out["note"] = "the run's LKG store was not found (run_info symbolkg.lkg_store)"
        return out
    try:
        graph = LKGStore(lkg_store).get(lkg.get("key") or "")
    except Exception as exc:  # noqa: BLE001 - a damaged store costs the drawing, not the page
        out["note"] = f"cannot read the LKG store {lkg_store}: {exc}"
        return out
    if graph is None:
        out["note"] = f"graph {lkg.get('key')} is not in {lkg_store}"
        return out
    hull = set(retrieve.get("hull") or [])
    anchors = set(retrieve.get("anchors") or [])
    kept = set(retrieve.get("kept") or [])
    dot, out["nodes"] = lkg_drawing(graph, hull, anchors, kept)
    try:
        svg = render_dot(dot, "svg").decode()
        out["svg"] = svg[svg.find("<svg") :]
    except RuntimeError as exc:
        out["note"] = str(exc)
    out["counts"] = {
        "graph_nodes": len(graph.nodes),
        "graph_edges": len(graph.edges),
        "hull": len(hull),
        "anchors": len(anchors),
        "kept": len(kept),
    }
    return out


#: per node type: its fill colour and its shape in the drawing
_NODE_COLORS = {"Entity": "#dbeafe", "Concept": "#dcfce7", "Rule": "#fef9c3", "Constraint": "#fee2e2"}
_NODE_SHAPES = {"Entity": "box", "Concept": "ellipse", "Rule": "note", "Constraint": "hexagon"}


def _dot_quote(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def lkg_drawing(graph: Graph, hull: set[str], anchors: set[str], kept: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """The retrieved part of ``graph`` as Graphviz DOT source, and its nodes as the page lists them.

    The hull's nodes are drawn (every node when the hull is empty), anchors in bold blue, nodes the
    pruning dropped greyed (``state``: ``kept``, ``pruned``, or ``retrieved`` when nothing was pruned),
    and the edges among them.
    """
    shown = [n for n in graph.nodes if not hull or n.id in hull]
    ids = {n.id for n in shown}
    lines = [
        "digraph LKG {",
        "  rankdir=LR; bgcolor=transparent;",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8, color="#64748b"];',
    ]
    nodes = []
    for n in shown:
        kind = type(n).__name__
        label = next((getattr(n, a) for a in ("name", "expression", "raw_expression") if getattr(n, a, "")), n.id)
        state = "kept" if n.id in kept else ("pruned" if kept else "retrieved")
        fill = _NODE_COLORS.get(kind, "#eee") if state != "pruned" else "#f1f5f9"
        style = f'style="filled{",bold" if n.id in anchors else ""}", fillcolor="{fill}"'
        pen = (
            ', penwidth=2.5, color="#1d4ed8"'
            if n.id in anchors
            else (', color="#94a3b8", fontcolor="#64748b"' if state == "pruned" else "")
        )
        lines.append(
            f"  {_dot_quote(n.id, 100)} [label={_dot_quote(f'{kind}: {label}')}, "
            f"shape={_NODE_SHAPES.get(kind, 'box')}, {style}{pen}];"
        )
        nodes.append(
            {
                "id": n.id,
                "kind": kind,
                "label": label,
                "anchor": n.id in anchors,
                "state": state,
                "sentences": [p.sentence for p in getattr(n, "provenance", ())],
            }
        )
    for e in graph.edges:
        if e.source_id in ids and e.target_id in ids:
            lines.append(
                f"  {_dot_quote(e.source_id, 100)} -> {_dot_quote(e.target_id, 100)} "
                f"[label={_dot_quote(e.edge_type, 40)}];"
            )
    lines.append("}")
    return "\n".join(lines) + "\n", nodes


def lkg_store_of(source: RunSource, meta: dict[str, Any]) -> Path | None:
    """The LKG store a ``symbolkg`` run names, resolved against the working directory and the run's folder."""
    raw = ((meta.get("run_info") or {}).get("symbolkg") or {}).get("lkg_store")
    if not raw:
        return None
    candidates = (
        [Path(raw)]
        if Path(raw).is_absolute()
        else [
            Path.cwd() / raw,
            source.files.path.parent / raw,
            source.files.root / raw,
            source.files.path.parent / Path(raw).name,
        ]
    )
    return next((c for c in candidates if c.is_dir()), None)


def samples_view(trace: dict[str, Any]) -> dict[str, Any] | None:
    """The sampled programs of a vote and the count (logiclm ``--logiclm-samples K``), or None for a row without.

    One entry per sample in seed order (:meth:`symbolkg.jobs.methods.logiclm.Sample.entry`): its answer,
    whether it executed, its check findings of severity ``error``, whether it counted and why not,
    its program's lines; ``vote`` is ``trace["vote"]`` (:meth:`symbolkg.jobs.methods.vote.Vote.to_dict`).
    """
    samples = trace.get("samples")
    if not isinstance(samples, list) or not samples:
        return None
    rows = []
    for s in samples:
        if not isinstance(s, dict):
            continue
        findings = [f for f in s.get("checks") or [] if isinstance(f, dict)]
        errors = [str(f.get("check")) for f in findings if f.get("severity") == "error"]
        rows.append(
            {
                **s,
                "errors": errors,
                "findings": len(findings),
                "program_lines": program_lines(s.get("program"), findings=findings) if s.get("program") else [],
            }
        )
    vote = trace.get("vote") if isinstance(trace.get("vote"), dict) else {}
    return {"samples": rows, "vote": vote}


def _method_part(
    source: RunSource, row: dict[str, Any], trace: dict[str, Any], summary: dict[str, Any]
) -> dict[str, Any]:
    """What a method adds to its rows: the LKG subgraph (symbolkg), the statements (symba), the MCP calls
    (prolog-agent), the sampled programs and their vote (logiclm with samples)."""
    method_part: dict[str, Any] = {"samples": samples_view(trace)}
    if row.get("method") == "symbolkg":
        method_part["lkg"] = lkg_view(source, row, trace, lkg_store_of(source, summary))
    statements = trace.get("statements")
    if isinstance(statements, list):
        method_part["statements"] = [s for s in statements if isinstance(s, dict)]
        method_part["rejected"] = [s for s in trace.get("rejected") or [] if isinstance(s, dict)]
        method_part["asked"] = trace.get("asked") or []
        method_part["stop"] = trace.get("stop")
    if "mcp_calls" in trace:
        calls = [dict(c, phase="answer") for c in trace.get("mcp_calls") or [] if isinstance(c, dict)]
        sldnf = trace.get("sldnf") or {}
        calls += [dict(c, phase="SLDNF comparison") for c in sldnf.get("mcp_calls") or [] if isinstance(c, dict)]
        method_part["mcp"] = {
            "calls": calls,
            "transport": trace.get("mcp_transport"),
            "sldnf": {k: v for k, v in sldnf.items() if k != "mcp_calls"},
            "rederived": trace.get("rederived"),
        }
    return method_part


def problem_view(source: RunSource, problem_id: str, data_dir: str | None) -> dict[str, Any] | None:
    """Everything the problem page shows (module docstring); None when the run has no such problem.

    Raises:
        RunError: the run cannot be read.
    """
    row = source.row(problem_id)
    if row is None:
        return None
    summary = source.summary()
    text = problem_text(summary.get("source"), data_dir, problem_id)
    trace = _json(row.get("trace"), {})
    trace = trace if isinstance(trace, dict) else {}
    cert = _json(row.get("certificate"), None)
    verdict = row.get("verdict")
    try:
        explanation = explain_row(
            row,
            question=text["question"] if text else None,
            options=tuple(text["options"]) if text else (),
            context=text["context"] if text else None,
            verdict=verdict,
        )
    except Exception:  # noqa: BLE001 - a malformed certificate still leaves the rest of the page
        explanation = None
    sentences = split_sentences(text["context"]) if text and text.get("context") else []
    cited: dict[int, Any] = {}
    cites_of: dict[int, list[int]] = {}
    premises = []
    if explanation is not None:
        for p in explanation.premises:
            cited[p.line] = {"sentence": p.sentence_index, "how": p.how, "lkg": p.lkg}
            for index, _ in p.cited:
                cites_of.setdefault(index, []).append(p.line)
            shown = [{"index": i, "sentence": s} for i, s in p.cited] or (
                [{"index": None, "sentence": p.sentence}] if p.sentence is not None else []
            )
            premises.append(
                {
                    "line": p.line,
                    "text": p.text,
                    "sentence": p.sentence,
                    "index": p.sentence_index,
                    "how": p.how,
                    "lkg": p.lkg,
                    "cited": shown,
                }
            )
    lkg_selected = (
        set((trace.get("premises") or {}).get("sentences") or []) if row.get("method") == "symbolkg" else set()
    )
    context = [
        {"i": i, "text": s, "cited_by": cites_of.get(i, []), "selected": i in lkg_selected}
        for i, s in enumerate(sentences)
    ]
    method_part = _method_part(source, row, trace, summary)
    checks = trace.get("checks") if isinstance(trace.get("checks"), list) else []
    prev, nxt = source.neighbours(problem_id)
    return {
        "row": row,
        "text": text,
        "context": context,
        "trace": trace,
        "stage_seconds": _json(row.get("stage_seconds"), {}),
        "outcome": "correct" if row["correct"] else ("unanswered" if row.get("predicted") is None else "wrong"),
        "attempts": _attempts(row, text, trace),
        "program": program_lines(row.get("program"), error_line=row.get("error_line"), cited=cited, findings=checks),
        "checks": checks,
        "corrected": trace.get("corrected"),
        "premises": premises,
        "certificate": certificate_view(cert, explanation),
        "verdict": verdict,
        "method_part": method_part,
        "prev": prev,
        "next": nxt,
        "trace_json": json.dumps(trace, indent=1, ensure_ascii=False)[:20000],
    }


def safe_name(problem_id: str) -> str:
    """A file name for a problem id (the static bundle's pages); distinct ids stay distinct."""
    import hashlib

    clean = re.sub(r"[^A-Za-z0-9._-]", "_", problem_id)[:80]
    return clean if clean == problem_id else f"{clean}-{hashlib.sha1(problem_id.encode()).hexdigest()[:8]}"


__all__ = [
    "RunError",
    "certificate_view",
    "lkg_view",
    "problem_view",
    "safe_name",
    "samples_view",
]
