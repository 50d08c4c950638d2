"""LLM pruning of a retrieved subgraph: keep only the nodes the question needs.

The hull around the anchors is recall-oriented; SymbolLKG then asks the LLM which of its nodes
matter, so the solver program is written from a small, relevant premise set. This module builds
the prompt and the structured-output schema and parses the answer; the call itself is made by
stage code (``jobs/methods/symbolkg_retrieve.py``).

Nodes are shown to the model under short handles (``N1``, ``N2``, ... in hull order, nearest
first) rather than 32-hex canonical ids: the handles cost a token or two each, the schema makes
them an enum so the model cannot invent one, and :func:`parse_pruned` maps them back to node ids.

:class:`PruneConfig` has the cap on kept nodes, the cap on nodes shown, and ``enabled=False``,
the no-pruning switch for ablations (the hull, cut to ``max_shown`` nodes, is used as it is).

Example:
    >>> from symbolkg.retrieval.lkg.schema import Entity, Rule
    >>> nodes = [Entity.create("Ann"), Rule.create("teacher(x) -> kind(x)", "every teacher is kind")]
    >>> prompt = PrunePrompt.build("Is Ann kind?", nodes, PruneConfig(cap=4))
    >>> prompt.handles
    ('N1', 'N2')
    >>> parse_pruned('{"keep": ["N2", "N9"]}', prompt).kept == (nodes[1].id,)
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.retrieval.index import node_text
from symbolkg.retrieval.lkg.schema import Node

Messages = list[tuple[str, str]]


@dataclass(frozen=True)
class PruneConfig:
    """Pruning settings.

    Attributes:
        enabled: False = no pruning (ablation): keep the hull's first ``max_shown`` nodes.
        cap: most nodes the model may keep (the schema's ``maxItems``).
        max_shown: most hull nodes put in the prompt (nearest first); the rest are dropped unseen.
        max_node_chars: a node's text is cut to this many characters in the prompt.
    """

    enabled: bool = True
    cap: int = 24
    max_shown: int = 64
    max_node_chars: int = 200

    def __post_init__(self) -> None:
        if self.cap < 1 or self.max_shown < 1 or self.max_node_chars < 8:
            raise ValueError(f"PruneConfig needs cap >= 1, max_shown >= 1, max_node_chars >= 8; got {self}")


_SYSTEM = (
    "You select premises. Given a question and numbered facts, rules and constraints from a knowledge "
    "graph, list the handles of every item needed to answer the question, and nothing else. Keep rules "
    "whose conditions or conclusions mention the question's entities or classes. Answer with JSON only: "
    '{"keep": ["N1", ...]}.'
)


@dataclass(frozen=True)
class PrunePrompt:
    """A pruning request: the messages, the schema and the handle -> node id map.

    Attributes:
        question: the query.
        messages: ``(role, content)`` chat messages.
        schema: the structured-output JSON schema (handles as an enum, at most ``cap`` items).
        handles: handles in prompt order.
        node_ids: node id of each handle.
        cap: most nodes kept.
    """

    question: str
    messages: tuple[tuple[str, str], ...]
    schema: dict[str, Any]
    handles: tuple[str, ...]
    node_ids: tuple[str, ...]
    cap: int

    @classmethod
    def build(cls, question: str, nodes: Sequence[Node], config: PruneConfig | None = None) -> PrunePrompt:
        """The prompt for ``question`` over ``nodes`` (hull order; only the first ``max_shown`` are shown)."""
        config = config or PruneConfig()
        shown = list(nodes)[: config.max_shown]
        handles = tuple(f"N{i + 1}" for i in range(len(shown)))
        lines = []
        for handle, node in zip(handles, shown, strict=True):
            text = " ".join(node_text(node).split())
            if len(text) > config.max_node_chars:
                text = text[: config.max_node_chars - 3] + "..."
            lines.append(f"{handle} [{node.node_type}] {text}")
        user = f"Question: {question}\n\nItems:\n" + "\n".join(lines)
        schema = {
            "type": "object",
            # no "uniqueItems": vLLM's grammar backend (xgrammar) rejects the key and fails the
            # request; parse_pruned drops repeated handles instead
            "properties": {
                "keep": {"type": "array", "items": {"enum": list(handles) or ["N1"]}, "maxItems": config.cap}
            },
            "required": ["keep"],
            "additionalProperties": False,
        }
        return cls(
            question, (("system", _SYSTEM), ("user", user)), schema, handles, tuple(n.id for n in shown), config.cap
        )


@dataclass(frozen=True)
class PruneResult:
    """What the pruning kept.

    Attributes:
        kept: node ids kept, in prompt (hull) order.
        unknown: handles in the answer that were not in the prompt (dropped).
        error: why the answer could not be used (then ``kept`` is empty and the caller falls back).
        over_cap: the answer listed more than ``cap`` nodes; the first ``cap`` were kept.
    """

    kept: tuple[str, ...]
    unknown: tuple[str, ...] = ()
    error: str = ""
    over_cap: bool = False

    @property
    def ok(self) -> bool:
        return not self.error


def parse_pruned(text: str, prompt: PrunePrompt) -> PruneResult:
    """Parse the model's pruning answer against its prompt.

    Args:
        text: the model output, ``{"keep": ["N3", ...]}``.
        prompt: the prompt it answers.

    Returns:
        A :class:`PruneResult`; ``error`` is set on malformed JSON, a missing ``keep`` list, or an
        empty selection (a premise set of nothing cannot answer a question).
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        return PruneResult((), error=f"not JSON: {exc}")
    if not isinstance(data, dict) or not isinstance(data.get("keep"), list):
        return PruneResult((), error='expected an object {"keep": [...]}')
    position = {h: i for i, h in enumerate(prompt.handles)}
    picked: list[int] = []
    unknown: list[str] = []
    for item in data["keep"]:
        i = position.get(item) if isinstance(item, str) else None
        if i is None:
            unknown.append(str(item))
        elif i not in picked:
            picked.append(i)
    over_cap = len(picked) > prompt.cap
    picked = sorted(picked[: prompt.cap])
    if not picked:
        return PruneResult((), tuple(unknown), error="the answer keeps no known node")
    return PruneResult(tuple(prompt.node_ids[i] for i in picked), tuple(unknown), over_cap=over_cap)


def unpruned(node_ids: Sequence[str], config: PruneConfig | None = None) -> PruneResult:
    """The no-pruning result (ablation, or fallback after a failed call): the first ``max_shown`` hull nodes."""
    config = config or PruneConfig()
    return PruneResult(tuple(node_ids[: config.max_shown]))
