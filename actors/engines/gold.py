"""An engine that answers SymBa's search and translation calls from a record's gold program (``gold``).

SymBa's records carry gold programs: statements, each paired with the sentence of the text it
translates. This engine plays the LLM of the ``symba`` method from those pairs, so the whole
LLM-in-the-loop path (the solver asking for a subgoal, search, translation, symbolic validation,
re-proving) runs on real data without a model:

* a **search** for a subgoal answers the sentences whose gold statement is of the kind asked
  (fact or rule) and whose head unifies with the subgoal, one per line, or the module's
  "No applicable ..." sentinel when there is none;
* a **translation** of a sentence answers the gold statement paired with it whose head unifies
  with the subgoal, or "No statement." when none does.

So a statement reaches the solver only when a subgoal asks for it, exactly as with a model.
Any other request (another method's, or a problem without a SymBa record) is an
:class:`EngineError`. Completions cost nothing: 0 prompt and completion tokens.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from symbolkg.actors.engines.base import ChatRequest, CodeEngine, EngineError
from symbolkg.solvers.outcomes import ProgramError
from symbolkg.solvers.symba import prompts as P
from symbolkg.solvers.symba.engine import head_unifies
from symbolkg.solvers.symba.syntax import parse_clause, parse_goal


class GoldEngine(CodeEngine):
    """Answers the ``symba`` method's calls from the gold programs under ``data_dir/symba``.

    Every folder ``data_dir/symba/<set>`` with a ``test_data.json`` is a set (its problem ids are
    ``<set>_<record id>``). A statement without a ``description`` is its own sentence: the search
    answers the statement's text, and its translation is the statement. A statement the clause
    language does not read is never offered (the record's other statements still are).

    Args:
        data_dir: the benchmark data folder (holding ``symba/<set>/test_data.json``).
    """

    model = "gold"

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir)
        if not (self.data_dir / "symba").is_dir():
            raise ValueError(f"--engine gold needs SymBa's data: no folder {self.data_dir / 'symba'}")
        self._programs: dict[str, dict[str, list[tuple[str, str]]]] = {}  # folder -> id -> [(statement, sentence)]

    def _folder(self, problem_id: str) -> str:
        """The set a problem id belongs to: the longest folder name it starts with (``<folder>_``)."""
        folders = [p.name for p in (self.data_dir / "symba").iterdir() if (p / "test_data.json").is_file()]
        matching = [f for f in folders if problem_id.startswith(f + "_")]
        if not matching:
            raise EngineError(
                f"the gold engine only knows SymBa's sets ({', '.join(sorted(folders))}); "
                f"{problem_id!r} is not one of their ids"
            )
        return max(matching, key=len)

    def _pairs(self, problem_id: str) -> list[tuple[str, str]]:
        folder = self._folder(problem_id)
        if folder not in self._programs:
            path = self.data_dir / "symba" / folder / "test_data.json"
            try:
                records = json.loads(path.read_text(encoding="utf-8"))
                self._programs[folder] = {f"{folder}_{r['id']}": _statements(r) for r in records}
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise EngineError(f"cannot read the gold programs of {folder}: {exc!r}") from exc
        pairs = self._programs[folder].get(problem_id)
        if pairs is None:
            raise EngineError(f"no SymBa record {problem_id!r}")
        return pairs

    def answer(self, request: ChatRequest) -> str:
        """The text the gold program answers ``request`` with."""
        module = request.purpose.removeprefix("symba-")
        if module not in P.MODULES:
            raise EngineError(
                f"the gold engine only answers SymBa's search and translation calls, not {request.purpose!r}"
            )
        asked = P.read_request(module, request.messages[-1].content)
        kind = "fact" if module.startswith("fact") else "rule"
        try:
            goal = parse_goal(asked.goal)
        except ProgramError as exc:
            raise EngineError(f"the goal {asked.goal!r} does not parse: {exc}") from exc
        matching: list[tuple[str, str]] = []
        for statement, sentence in self._pairs(request.problem_id):
            try:
                clauses = parse_clause(statement)
            except ProgramError:
                continue  # a statement outside the language is never offered
            is_rule = any(c.body for c in clauses)
            if is_rule == (kind == "rule") and any(head_unifies(c, goal) for c in clauses):
                matching.append((statement, sentence))
        if module.endswith("search"):
            sentences = list(dict.fromkeys(sentence for _, sentence in matching))
            return "\n".join(sentences) if sentences else P.sentinel(kind)  # type: ignore[arg-type]
        return next(
            (statement for statement, sentence in matching if sentence == " ".join((asked.sentence or "").split())),
            P.NO_STATEMENT,
        )


def _statements(record: dict) -> list[tuple[str, str]]:
    """(statement, sentence) of a record's program; a statement without a description is its own sentence."""
    pairs = []
    for s in record.get("program") or []:
        statement = str(s.get("statement") or "").strip()
        if statement:
            pairs.append((statement, " ".join(str(s.get("description") or statement).split())))
    return pairs
