"""Logic-LM LP programs run on SWI-Prolog (language ``logiclm-lp-swipl``).

The same language as ``logiclm-lp`` (:mod:`symbolkg.solvers.lp.language`: the parser, the grammar, the answer
semantics), but the program is translated to tabled Prolog (:func:`symbolkg.solvers.lp.language.to_prolog`)
and answered by SWI-Prolog instead of the in-process forward chainer. This is what the
router's ``prolog`` route runs: the LLM writes the LP language it has few-shot examples for,
and a real Prolog engine answers it.
"""

from __future__ import annotations

from symbolkg.solvers.lp.language import parse
from symbolkg.solvers.lp.language import solve_with_prolog as solve

__all__ = ["parse", "solve"]
