"""One LLM engine over several: each call goes to the engine with the fewest outstanding requests.

A job that runs several engine replicas (data parallelism: one vLLM engine per group of
GPUs) hands the stage code a :class:`BalancedEngine` over them; stage code still sees one
:class:`~symbolkg.actors.engines.base.LLMEngine`. Least-outstanding routing keeps replicas evenly
loaded even when calls differ in length (a long repair prompt, a short answer), which plain
round-robin does not.

Example:
    >>> import asyncio
    >>> from symbolkg.actors.engines.base import ChatRequest, Message
    >>> from symbolkg.actors.engines.scripted import ScriptedEngine
    >>> engines = [ScriptedEngine(lambda r: "ok") for _ in range(2)]
    >>> balanced = BalancedEngine(engines)
    >>> request = ChatRequest((Message("user", "hi"),))
    >>> _ = asyncio.run(balanced.generate([request])); _ = asyncio.run(balanced.generate([request]))
    >>> balanced.requests_per_engine   # no call overlapped, so ties went round-robin
    [1, 1]
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, LLMEngine


class BalancedEngine:
    """An :class:`~symbolkg.actors.engines.base.LLMEngine` that spreads calls over ``engines``.

    A ``generate`` call goes, whole, to the engine with the fewest requests outstanding
    through this balancer; ties go round-robin (the scan starts after the engine chosen
    last). Errors of the chosen engine propagate unchanged.

    Attributes:
        model: the engines' common model name.
        supports_structured: the engines' common answer.
        requests_per_engine: requests sent to each engine so far.
        calls_per_engine: ``generate`` calls sent to each engine so far.
    """

    def __init__(self, engines: Sequence[LLMEngine]) -> None:
        """Build the balancer; it owns the engines (:meth:`close` closes them).

        Args:
            engines: one or more engines serving the same model.

        Raises:
            ValueError: no engine, or engines that differ in model name or in
                ``supports_structured`` (callers build requests, and cache keys, from them).
        """
        if not engines:
            raise ValueError("BalancedEngine needs at least one engine")
        models = sorted({e.model for e in engines})
        if len(models) > 1:
            raise ValueError(f"the engines serve different models {models}; balance only replicas of one model")
        structured = {e.supports_structured for e in engines}
        if len(structured) > 1:
            raise ValueError("the engines disagree on supports_structured; balance only replicas of one configuration")
        self._engines = list(engines)
        self.model = models[0]
        self.supports_structured = structured.pop()
        self.requests_per_engine = [0] * len(self._engines)
        self.calls_per_engine = [0] * len(self._engines)
        self._outstanding = [0] * len(self._engines)
        self._next = 0
        self._closed = False

    @property
    def engines(self) -> list[LLMEngine]:
        """The engines, in the order given."""
        return list(self._engines)

    @property
    def outstanding(self) -> list[int]:
        """Requests each engine is working on for this balancer now."""
        return list(self._outstanding)

    def pick(self) -> int:
        """The index of the engine the next call goes to (least outstanding, ties round-robin)."""
        n = len(self._engines)
        order = [(self._next + k) % n for k in range(n)]
        return min(order, key=lambda i: self._outstanding[i])  # min keeps the first of equals

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Send the call to the least loaded engine and return its completions.

        Raises:
            EngineDeadError: the balancer was closed, or from the engine.
            EngineError: from the engine.
        """
        if self._closed:
            raise EngineDeadError("balanced engine is closed")
        requests = list(requests)
        i = self.pick()
        self._next = (i + 1) % len(self._engines)
        self._outstanding[i] += len(requests)
        self.requests_per_engine[i] += len(requests)
        self.calls_per_engine[i] += 1
        try:
            return await self._engines[i].generate(requests)
        finally:
            self._outstanding[i] -= len(requests)

    async def close(self) -> None:
        """Close every engine (all are tried; the first error is raised after). Idempotent."""
        if self._closed:
            return
        self._closed = True
        results = await asyncio.gather(*(e.close() for e in self._engines), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
