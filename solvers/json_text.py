"""Reading JSON that a model's completion cut off at its token limit.

Shared by every parser of structured-decoded output (the LKG extraction, LogicGraph's proofs):
with structured decoding the text is always a prefix of a valid document, so what was completed
before the cut can be kept instead of losing the whole answer.
"""

from __future__ import annotations

import json
from typing import Any


def close_truncated(text: str) -> tuple[Any, int] | None:
    """Decode a JSON object cut off before its end (a completion stopped by its token limit).

    Keeps every value completed before the cut: the text is cut at the last point between two
    items (before a ``,`` or after a closing bracket, outside strings), and the brackets still
    open there are closed. Returns (value, characters kept), or None if nothing decodes.
    """
    stack: list[str] = []
    in_string = escaped = False
    best: tuple[int, str] | None = None  # (cut position, closers)
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return None
            stack.pop()
            if not stack:
                return None  # complete: not a truncation (the caller's decode failed for another reason)
            best = (i + 1, "".join(reversed(stack)))
        elif ch == "," and stack:
            best = (i, "".join(reversed(stack)))
    if best is None:
        return None
    cut, closers = best
    try:
        return json.loads(text[:cut] + closers), cut
    except (json.JSONDecodeError, RecursionError):
        return None
