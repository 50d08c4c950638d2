"""Keep many items in flight through one shared backend: the loop both LLM jobs run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def for_each_in_flight(items: Iterable[T], handle: Callable[[T], Awaitable[None]], max_in_flight: int) -> None:
    """Await ``handle(item)`` for every item, at most ``max_in_flight`` at a time.

    ``max_in_flight`` coroutines share one iterator, so each item is handled exactly once
    and a slow item (a repair round, a long output) holds up no other: a finished
    coroutine takes the next item at once, and the engine always has work queued.

    Args:
        items: the work (consumed lazily).
        handle: awaited once per item; what it records is up to it.
        max_in_flight: concurrent coroutines (>= 1).

    Raises:
        ValueError: ``max_in_flight`` < 1.
        BaseException: the first exception of any ``handle``; the other coroutines are
            cancelled (and awaited) before it propagates, so no work continues behind it.
    """
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
    shared = iter(items)

    async def worker() -> None:
        for item in shared:
            await handle(item)

    tasks = [asyncio.create_task(worker()) for _ in range(max_in_flight)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
