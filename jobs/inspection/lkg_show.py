"""``symbolkg lkg show``: one stored Logical Knowledge Graph as Graphviz DOT, SVG/PNG or a standalone HTML page."""

from __future__ import annotations

from pathlib import Path

from symbolkg.retrieval.lkg.schema import ContextRecord, Graph
from symbolkg.retrieval.lkg.store import LKGStore


def graph_to_dot(graph: Graph, title: str = "") -> str:
    """Graphviz DOT source of ``graph``: one shape and colour per node type, edges labelled by type."""
    styles = {
        "Entity": 'shape=box, style="rounded,filled", fillcolor="#dbeafe"',
        "Concept": 'shape=ellipse, style=filled, fillcolor="#dcfce7"',
        "Rule": 'shape=note, style=filled, fillcolor="#fef9c3"',
        "Constraint": 'shape=hexagon, style=filled, fillcolor="#fee2e2"',
    }

    def quote(text: str, limit: int = 60) -> str:
        text = text if len(text) <= limit else text[: limit - 1] + "…"
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'

    lines = [
        "digraph LKG {",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    if title:
        lines.append(f"  labelloc=t; label={quote(title, 120)};")
    for node in graph.nodes:
        kind = type(node).__name__
        label = _node_label(node)
        lines.append(f"  {quote(node.id, 100)} [label={quote(f'{kind}: {label}')}, {styles.get(kind, '')}];")
    for e in graph.edges:
        lines.append(f"  {quote(e.source_id, 100)} -> {quote(e.target_id, 100)} [label={quote(e.edge_type, 40)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_label(node) -> str:
    for attr in ("name", "expression", "raw_expression"):
        value = getattr(node, attr, "")
        if value:
            return value
    return node.id


def render_dot(dot: str, fmt: str) -> bytes:
    """Run Graphviz ``dot`` on ``dot`` source (``fmt`` png or svg).

    Raises:
        RuntimeError: Graphviz is not installed (Debian: ``apt-get install graphviz``) or failed.
    """
    import shutil
    import subprocess

    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "Graphviz 'dot' is not installed (apt-get install graphviz); "
            "use --out FILE.html for a page without the drawing"
        )
    done = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {done.stderr.decode(errors='replace')[:500]}")
    return done.stdout


def graph_to_html(graph: Graph, record: ContextRecord | None, problem_id: str, context: str | None = None) -> str:
    """A self-contained HTML page: the drawing (inline SVG when Graphviz is installed) and node/edge tables."""
    import html

    esc = html.escape
    try:
        svg = render_dot(graph_to_dot(graph, problem_id), "svg").decode()
        svg = svg[svg.find("<svg") :]
    except RuntimeError as exc:
        svg = f"<p><em>{esc(str(exc))}</em></p>"
    rows = []
    for node in graph.nodes:
        prov = ", ".join(f"s{p.sentence}" for p in node.provenance)
        detail = {
            k: v
            for k, v in node.to_row("").items()
            if k not in ("context_key", "node_id", "node_type", "provenance") and v not in (None, "", [], {})
        }
        rows.append(
            f"<tr><td>{esc(type(node).__name__)}</td><td><code>{esc(node.id[:12])}</code></td>"
            f"<td>{esc(_node_label(node))}</td><td>{esc(str(detail))}</td><td>{esc(prov)}</td></tr>"
        )
    names = {n.id: _node_label(n) for n in graph.nodes}
    erows = [
        f"<tr><td>{esc(names.get(e.source_id, e.source_id))}</td><td>{esc(e.edge_type)}</td>"
        f"<td>{esc(names.get(e.target_id, e.target_id))}</td><td>{esc(e.raw_text)}</td></tr>"
        for e in graph.edges
    ]
    status = ""
    if record is not None:
        status = (
            f"<p>status <b>{esc(record.status)}</b>, model {esc(record.model)}, prompt {esc(record.prompt_version)}, "
            f"{record.rounds} LLM call(s), {record.prompt_tokens}+{record.completion_tokens} tokens</p>"
        )
        if record.errors:
            status += (
                "<ul>"
                + "".join(f"<li>{esc(e.path)} ({esc(e.kind)}): {esc(e.message)}</li>" for e in record.errors)
                + "</ul>"
            )
    ctx = f"<h2>Context</h2><p>{esc(context)}</p>" if context else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>LKG "
        f"{esc(problem_id)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px;vertical-align:top}</style>"
        "</head><body>"
        f"<h1>LKG of {esc(problem_id)}</h1>{status}{ctx}{svg}"
        "<h2>Nodes</h2><table><tr><th>type</th><th>id</th><th>label</th><th>fields</th><th>sentences</th></tr>"
        + "".join(rows)
        + "</table><h2>Edges</h2><table><tr><th>source</th><th>type</th><th>target</th><th>raw text</th></tr>"
        + "".join(erows)
        + "</table></body></html>\n"
    )


def show(store: LKGStore, problem_id: str, out: Path, context: str | None = None) -> Graph:
    """Render the newest graph of ``problem_id`` to ``out`` (``.png`` or ``.html``).

    Raises:
        KeyError: the store has no graph for the problem.
        ValueError: ``out`` has another suffix.
        RuntimeError: PNG without Graphviz.
    """
    suffix = out.suffix.lower()
    if suffix not in (".png", ".html"):
        raise ValueError(f"--out must end in .png or .html, got {out.name!r}")
    graph = store.graph_for_problem(problem_id)
    if graph is None:
        raise KeyError(f"no graph for problem {problem_id!r} in {store.path}")
    record = store.context(graph.context_key)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        out.write_bytes(render_dot(graph_to_dot(graph, problem_id), "png"))
    else:
        out.write_text(graph_to_html(graph, record, problem_id, context), encoding="utf-8")
    return graph
