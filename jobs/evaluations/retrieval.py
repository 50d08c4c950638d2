"""Multi-hop QA retrieval evaluation: BM25, dense and the LKG hybrid on HotpotQA, 2Wiki, MuSiQue.

The setting follows HippoRAG and SymbolLKG: every paragraph of every question of a dataset goes
into one pooled corpus (HotpotQA: ~6.8k passages, MuSiQue: ~5.8k, 2Wiki: ~1.6k), each question
retrieves from the whole pool, and Recall@k is the fraction of its gold supporting paragraphs in
the top k. The pool is the same whatever ``--limit`` is, so a short run measures the same task.

Methods (one :class:`PassageRetriever` holds all three over one pool):

* ``bm25``: :class:`symbolkg.retrieval.bm25.BM25Index` over ``"title. text"``.
* ``dense``: all-MiniLM-L6-v2 (or any :class:`~symbolkg.retrieval.embed.Embedder`) vectors of the same
  text in an exact :class:`~symbolkg.retrieval.index.VectorIndex`; vectors cached on disk
  (:mod:`symbolkg.retrieval.embed_cache`), so only the first run embeds.
* ``hybrid``: the topology-aware retrieval of SymbolLKG on a passage graph. Dense and BM25 ranks
  are fused (reciprocal rank fusion); the query's entities (lexical, or from the LLM) matched
  by canonical name against passage titles, plus the best fused passages, are the anchors; a
  2-hop :func:`~symbolkg.retrieval.hull.logical_hull` over ``DESCRIBES`` (passage -> its title entity) and
  ``MENTIONS`` (passage -> an entity whose passage it names) edges reaches the bridge passages;
  passages in the hull gain from the anchors that reach them. The graph is lexical (entities =
  passage titles, mentions = a title's name in another passage's text), not an LLM-extracted
  LKG: LLM extraction of ~14k passages is a multi-hour offline job on this CPU, and the embedded
  135M model's graphs do not validate (issue 4).

With an engine, ``answer`` mode also has the LLM read the top passages and answer; EM and F1
use SQuAD's answer normalization, best over the answer and its aliases.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from symbolkg.actors.engines.base import ChatRequest, EngineDeadError, EngineError, Message, SamplingParams
from symbolkg.jobs.core.concurrency import for_each_in_flight
from symbolkg.jobs.core.rows import Problem
from symbolkg.retrieval.anchors import lexical_query_entities
from symbolkg.retrieval.bm25 import BM25Index
from symbolkg.retrieval.embed import Embedder
from symbolkg.retrieval.embed_cache import EmbeddingCache, embed_with_cache
from symbolkg.retrieval.hull import Adjacency, HullConfig, logical_hull
from symbolkg.retrieval.index import IndexConfig, VectorIndex
from symbolkg.retrieval.lkg.canonical import entity_id, name_tokens, normalize_name

Method = Literal["bm25", "dense", "hybrid"]
METHODS: tuple[str, ...] = ("bm25", "dense", "hybrid")
MULTIHOP_DATASETS: tuple[str, ...] = ("multihop/hotpotqa", "multihop/2wikimultihopqa", "multihop/musique")
_DISAMBIGUATION = re.compile(r"\s*\([^)]*\)\s*$")
_MAX_NAME_WORDS = 8


@dataclass(frozen=True)
class Passage:
    """One pooled paragraph. ``key`` is the SHA-256 of title and text (first 16 hex digits)."""

    key: str
    title: str
    text: str

    @property
    def document(self) -> str:
        """What is indexed: ``"title. text"``."""
        return f"{self.title}. {self.text}"


@dataclass(frozen=True)
class MultihopQuestion:
    """A question with the keys of its gold supporting passages."""

    id: str
    question: str
    answer: str
    aliases: tuple[str, ...]
    gold: tuple[str, ...]


def passage_key(title: str, text: str) -> str:
    return hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()[:16]


def split_paragraphs(problem: Problem) -> list[tuple[str, str]]:
    """``(title, text)`` of each paragraph of a ``multihop/*`` problem, in context order.

    Raises:
        ValueError: if the context does not split into the titled paragraphs its meta lists.
    """
    titles = problem.meta.get("paragraph_titles") or []
    parts = problem.context.split("\n\n") if problem.context else []
    if len(parts) != len(titles):
        raise ValueError(f"{problem.id}: {len(parts)} paragraphs in the context but {len(titles)} titles")
    out = []
    for title, part in zip(titles, parts, strict=True):
        prefix = f"{title}: "
        if not part.startswith(prefix):
            raise ValueError(f"{problem.id}: paragraph does not start with its title {title!r}")
        out.append((title, part[len(prefix) :]))
    return out


def build_pool(problems: Sequence[Problem]) -> tuple[list[Passage], list[MultihopQuestion]]:
    """The pooled corpus of every paragraph (each distinct title + text once) and the questions with gold keys."""
    passages: dict[str, Passage] = {}
    questions: list[MultihopQuestion] = []
    for problem in problems:
        supporting = set(problem.meta.get("supporting_titles") or [])
        gold: list[str] = []
        for title, text in split_paragraphs(problem):
            key = passage_key(title, text)
            passages.setdefault(key, Passage(key, title, text))
            if title in supporting and key not in gold:
                gold.append(key)
        questions.append(
            MultihopQuestion(
                problem.id,
                problem.question,
                problem.answer or "",
                tuple(problem.meta.get("answer_aliases") or ()),
                tuple(gold),
            )
        )
    return list(passages.values()), questions


def entity_name(title: str) -> str:
    """The entity a passage is about: its title without a trailing disambiguation (``"X (film)"`` -> ``"X"``)."""
    return _DISAMBIGUATION.sub("", title).strip() or title


@dataclass(frozen=True)
class PassageGraph:
    """The lexical passage-entity graph of a pool.

    Attributes:
        adjacency: for the hull; passage nodes have type ``""``, entities ``"Entity"``.
        describes: passage key -> the id of the entity it is about (its title).
        mentions: passage key -> ids of the other entities its text names.
        edges: every ``(passage key, entity id, "DESCRIBES" | "MENTIONS")`` edge.
    """

    adjacency: Adjacency
    describes: dict[str, str]
    mentions: dict[str, frozenset[str]]
    edges: tuple[tuple[str, str, str], ...]


def passage_graph(passages: Sequence[Passage]) -> PassageGraph:
    """The lexical passage graph: ``P -DESCRIBES-> E(title of P)``, ``P -MENTIONS-> E`` when P's text names E.

    A mention is a run of up to 8 words of the text, starting with a capital letter, whose
    normalized form is an entity's name (so "the Blue Books" names "Blue Book"). Single-word
    names count only when the word is capitalized in the text (no link from "love" to "Love").
    """
    names: dict[str, str] = {}  # normalized name -> entity id
    describes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    node_types: dict[str, str] = {p.key: "" for p in passages}
    for p in passages:
        name = entity_name(p.title)
        normalized = normalize_name(name)
        if not normalized:
            continue
        eid = entity_id(name)
        names[normalized] = eid
        node_types[eid] = "Entity"
        describes[p.key] = eid
        edges.append((p.key, eid, "DESCRIBES"))
    longest = min(_MAX_NAME_WORDS, max((len(n.split()) for n in names), default=1))
    mentions: dict[str, frozenset[str]] = {}
    for p in passages:
        words = p.text.split()
        own = describes.get(p.key)
        linked: list[str] = []
        for i, word in enumerate(words):
            if not word[:1].isupper():
                continue
            for n in range(min(longest, len(words) - i), 0, -1):
                normalized = " ".join(name_tokens(" ".join(words[i : i + n])))
                if normalized.startswith(("the ", "a ", "an ")) and n > 1:
                    normalized = normalized.split(" ", 1)[1]
                eid = names.get(normalized)
                if eid is not None:
                    if eid != own and eid not in linked:
                        linked.append(eid)
                        edges.append((p.key, eid, "MENTIONS"))
                    break
        mentions[p.key] = frozenset(linked)
    return PassageGraph(Adjacency.from_edges(edges, node_types), describes, mentions, tuple(edges))


@dataclass(frozen=True)
class HybridConfig:
    """Settings of the multi-hop hybrid.

    Attributes:
        fusion_depth: how many top passages of each of dense and BM25 enter the fusion.
        rrf_k: the reciprocal-rank-fusion constant (60, as in Cormack et al.).
        anchor_passages: best fused passages used as anchors (besides name-matched entities).
        hops: hull depth (2 = anchor passage -> entity -> the entity's passage).
        bridge_weight: a hull passage gains this fraction of the score of the anchor that reaches it.
        name_bonus: extra score of a passage about an entity the query names (1/(rrf_k+1) = a first rank).
    """

    fusion_depth: int = 100
    rrf_k: float = 60.0
    anchor_passages: int = 5
    hops: int = 2
    bridge_weight: float = 0.5
    name_bonus: float = 1.0 / 61.0


class PassageRetriever:
    """BM25, dense and hybrid retrieval over one pooled corpus (module docstring).

    Args:
        passages: the pool.
        embedder: the dense model (query and passages).
        cache: where passage vectors are cached (None: embed every time).
        config: hybrid settings.
        progress: show a progress bar while embedding the pool.
    """

    def __init__(
        self,
        passages: Sequence[Passage],
        embedder: Embedder,
        *,
        cache: EmbeddingCache | None = None,
        config: HybridConfig | None = None,
        progress: bool = False,
    ) -> None:
        self.passages = list(passages)
        self.embedder = embedder
        self.config = config or HybridConfig()
        self.keys = [p.key for p in self.passages]
        t0 = time.perf_counter()
        self.bm25 = BM25Index([p.document for p in self.passages], ids=self.keys)
        bar = None
        if progress and (cache is None or any(p.document not in cache for p in self.passages)):
            from tqdm import tqdm

            bar = tqdm(
                total=sum(p.document not in cache for p in self.passages) if cache else len(self.passages),
                desc="embedding passages",
                unit="psg",
            )
        vectors = embed_with_cache(embedder, [p.document for p in self.passages], cache, progress=bar)
        if bar is not None:
            bar.close()
        self.index = VectorIndex(
            embedder.dim, IndexConfig(exact_max_vectors=max(50_000, len(self.passages))), embedder=embedder.name
        )
        self.index.add(vectors, self.keys)
        self.graph = passage_graph(self.passages)
        self._row = {k: i for i, k in enumerate(self.keys)}
        self.build_seconds = time.perf_counter() - t0

    def rank(self, query: str, method: Method, k: int = 5, entities: Sequence[str] | None = None) -> list[str]:
        """The keys of the ``k`` best passages for ``query`` by ``method``."""
        if method == "bm25":
            return [str(i) for i in self.bm25.search(query, k)[1]]
        depth = k if method == "dense" else max(k, self.config.fusion_depth)
        _, ids = self.index.search(self.embedder.embed([query]), min(depth, len(self.keys)))
        dense = [str(i) for i in ids[0] if i is not None]
        if method == "dense":
            return dense[:k]
        if method != "hybrid":
            raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
        return self._hybrid(query, dense, entities)[:k]

    def _hybrid(self, query: str, dense: list[str], entities: Sequence[str] | None) -> list[str]:
        cfg = self.config
        _, bm25_ids = self.bm25.search(query, cfg.fusion_depth)
        score: dict[str, float] = {}
        for ranking in (dense, [str(i) for i in bm25_ids]):
            for rank, key in enumerate(ranking):
                score[key] = score.get(key, 0.0) + 1.0 / (cfg.rrf_k + rank + 1)
        fused = sorted(score, key=lambda key: -score[key])
        mentions = list(entities) if entities is not None else lexical_query_entities(query)
        named = [entity_id(m) for m in mentions if normalize_name(m)]
        named = [e for e in named if e in self.graph.adjacency]
        anchors = fused[: cfg.anchor_passages]
        hull = logical_hull(
            self.graph.adjacency, anchors + named, HullConfig(k=cfg.hops, edge_types=("MENTIONS",), relations=True)
        )
        reached = hull.distances
        named_set = set(named)
        boosted = dict(score)
        for key, distance in reached.items():
            if distance == 0 or key not in self._row:
                continue
            entity = self.graph.describes.get(key)
            if entity is None:
                continue
            bonus = cfg.name_bonus if entity in named_set else 0.0
            # a bridge: an anchor passage names the entity this passage is about (an entity the
            # query names itself is an anchor, at distance 0, and has the name bonus instead)
            parents = (
                [score[a] for a in anchors if entity in self.graph.mentions.get(a, ())]
                if reached.get(entity) == 1
                else []
            )
            if parents:
                bonus += cfg.bridge_weight * max(parents)
            if bonus:
                boosted[key] = boosted.get(key, 0.0) + bonus
        return sorted(boosted, key=lambda key: (-boosted[key], self._row[key]))


# --------------------------------------------------------------------------- scoring


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Fraction of ``gold`` in the first ``k`` of ``ranked`` (1.0 when there is no gold)."""
    if not gold:
        return 1.0
    top = set(ranked[:k])
    return sum(g in top for g in gold) / len(gold)


def normalize_answer(text: str) -> str:
    """SQuAD answer normalization: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(c for c in text if c not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: Iterable[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(a) for a in answers))


def f1_score(prediction: str, answers: Iterable[str]) -> float:
    """Best token F1 of ``prediction`` against any of ``answers`` (SQuAD)."""
    best = 0.0
    pred = normalize_answer(prediction).split()
    for answer in answers:
        gold = normalize_answer(answer).split()
        common = sum((Counter(pred) & Counter(gold)).values())
        if not pred or not gold:
            best = max(best, float(pred == gold))
        elif common:
            precision, recall = common / len(pred), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


_ANSWER_SYSTEM = (
    "Answer the question from the passages. Reply with the answer only: a name, a date, a number, "
    "yes or no, or a short phrase. No explanation."
)


def answer_messages(question: str, passages: Sequence[Passage], max_chars: int = 1200) -> list[tuple[str, str]]:
    """The reading prompt: the retrieved passages (each cut to ``max_chars``), then the question."""
    blocks = [f"[{i + 1}] {p.title}: {p.text[:max_chars]}" for i, p in enumerate(passages)]
    return [
        ("system", _ANSWER_SYSTEM),
        ("user", "Passages:\n" + "\n".join(blocks) + f"\n\nQuestion: {question}\nAnswer:"),
    ]


def clean_prediction(text: str) -> str:
    """The first line of the model's reply, without an ``Answer:`` prefix or trailing period."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = re.sub(r"^(the\s+)?answer\s*(is)?\s*[:\-]?\s*", "", line, flags=re.IGNORECASE)
    return line.strip().rstrip(".").strip()


# --------------------------------------------------------------------------- the evaluation


@dataclass
class QuestionResult:
    """One question's outcome (one row of ``--out``)."""

    id: str
    ranked: list[str]
    gold: list[str]
    recall_2: float
    recall_5: float
    retrieval_ms: float
    prediction: str | None = None
    em: float | None = None
    f1: float | None = None


@dataclass
class EvalReport:
    """What ``symbolkg retrieval-eval --json`` prints."""

    dataset: str
    method: str
    questions: int
    passages: int
    recall_2: float
    recall_5: float
    p50_ms: float
    p95_ms: float
    index_seconds: float
    embedder: str
    embedding_cache_hits: int
    embedding_cache_misses: int
    answer_em: float | None = None
    answer_f1: float | None = None
    answer_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    note: str = (
        "small dev samples (HotpotQA 685, 2Wiki 164, MuSiQue 292 questions), pooled corpus of their "
        "paragraphs: not comparable to the papers' 1,000-question tables"
    )
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON object: the headline keys first, then the rest; unset answer fields left out."""
        out = {
            "dataset": self.dataset,
            "method": self.method,
            "questions": self.questions,
            "recall@2": self.recall_2,
            "recall@5": self.recall_5,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
        }
        rest = asdict(self)
        for key in ("recall_2", "recall_5", "extra"):
            rest.pop(key)
        out.update({k: v for k, v in rest.items() if k not in out and v is not None})
        out.update(self.extra)
        return out

    def format(self) -> str:
        lines = [
            f"{self.dataset} · {self.method} · {self.questions} questions over {self.passages} pooled passages",
            f"  Recall@2 {self.recall_2:.3f}   Recall@5 {self.recall_5:.3f}   "
            f"latency p50 {self.p50_ms:.1f} ms  p95 {self.p95_ms:.1f} ms",
            f"  index build {self.index_seconds:.1f} s ({self.embedder}; embedding cache "
            f"{self.embedding_cache_hits} hits / {self.embedding_cache_misses} misses)",
        ]
        if self.answer_em is not None:
            lines.append(
                f"  answers ({self.answer_model}): EM {self.answer_em:.3f}  F1 {self.answer_f1:.3f}  "
                f"tokens {self.prompt_tokens} in / {self.completion_tokens} out"
            )
        lines.append(f"  note: {self.note}")
        return "\n".join(lines)


def evaluate_retrieval(
    retriever: PassageRetriever, questions: Sequence[MultihopQuestion], method: Method, progress: bool = False
) -> list[QuestionResult]:
    """Rank passages for each question (one at a time: the latency is a single query's)."""
    iterator: Iterable[MultihopQuestion] = questions
    if progress:
        from tqdm import tqdm

        iterator = tqdm(questions, desc=f"retrieving ({method})", unit="q")
    out = []
    for q in iterator:
        t0 = time.perf_counter()
        ranked = retriever.rank(q.question, method, k=5)
        ms = (time.perf_counter() - t0) * 1000
        out.append(
            QuestionResult(
                q.id, ranked, list(q.gold), recall_at(ranked, q.gold, 2), recall_at(ranked, q.gold, 5), round(ms, 3)
            )
        )
    return out


async def answer_questions(
    engine,
    retriever: PassageRetriever,
    questions: Sequence[MultihopQuestion],
    results: Sequence[QuestionResult],
    *,
    top_k: int = 5,
    max_tokens: int = 32,
    max_in_flight: int = 64,
    progress: bool = False,
) -> tuple[int, int]:
    """Have the LLM answer each question from its top passages; fills ``prediction``, ``em``, ``f1``.

    Returns:
        (prompt tokens, completion tokens).
    """
    by_key = {p.key: p for p in retriever.passages}
    tokens = [0, 0]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(questions), desc="answering", unit="q")

    async def handle(pair: tuple[MultihopQuestion, QuestionResult]) -> None:
        q, r = pair
        messages = answer_messages(q.question, [by_key[k] for k in r.ranked[:top_k]])
        request = ChatRequest(
            tuple(Message(role, c) for role, c in messages),  # type: ignore[arg-type]
            SamplingParams(max_tokens=max_tokens),
            problem_id=q.id,
            purpose="answer",
            request_id=f"{q.id}/answer",
        )
        try:
            completion = (await engine.generate([request]))[0]
            r.prediction = clean_prediction(completion.text)
            tokens[0] += completion.prompt_tokens
            tokens[1] += completion.completion_tokens
        except EngineDeadError:
            raise
        except EngineError as exc:
            r.prediction = f"<engine error: {exc}>"
        answers = [q.answer, *q.aliases]
        r.em = exact_match(r.prediction, answers)
        r.f1 = f1_score(r.prediction, answers)
        if bar is not None:
            bar.update(1)

    try:
        await for_each_in_flight(list(zip(questions, results, strict=True)), handle, max_in_flight)
    finally:
        if bar is not None:
            bar.close()
    return tokens[0], tokens[1]


def summarize(
    dataset: str,
    method: str,
    retriever: PassageRetriever,
    results: Sequence[QuestionResult],
    cache: EmbeddingCache | None,
) -> EvalReport:
    """The report of an evaluation (answers included when they were made)."""
    n = len(results)
    latencies = np.array([r.retrieval_ms for r in results]) if n else np.zeros(1)
    answered = [r for r in results if r.em is not None]
    return EvalReport(
        dataset=dataset,
        method=method,
        questions=n,
        passages=len(retriever.passages),
        recall_2=round(float(np.mean([r.recall_2 for r in results])) if n else 0.0, 4),
        recall_5=round(float(np.mean([r.recall_5 for r in results])) if n else 0.0, 4),
        p50_ms=round(float(np.percentile(latencies, 50)), 3),
        p95_ms=round(float(np.percentile(latencies, 95)), 3),
        index_seconds=round(retriever.build_seconds, 3),
        embedder=retriever.embedder.name,
        embedding_cache_hits=cache.stats.hits if cache else 0,
        embedding_cache_misses=cache.stats.misses if cache else 0,
        answer_em=round(float(np.mean([r.em for r in answered])), 4) if answered else None,
        answer_f1=round(float(np.mean([r.f1 for r in answered])), 4) if answered else None,
    )


def write_results(path: str | Path, results: Sequence[QuestionResult]) -> None:
    """One JSON object per question."""
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
