"""The choices of the ``symbolkg`` method's enumerated flags, defined once.

Both the flags (:mod:`symbolkg.jobs.methods.symbolkg`, which every command imports to list its
options, so it stays light) and the settings they build
(:class:`~symbolkg.jobs.methods.symbolkg_stages.SymbolKGConfig`, which validates them) read these;
this module imports nothing, so neither import costs the other.
"""

from __future__ import annotations

#: Which graphs show their symbols in the formalization prompt (``--lkg-hints``): every one, only a
#: graph that passed validation, none (the prompt is logiclm's). The first is the default.
HINTS: tuple[str, ...] = ("all", "valid", "none")

#: What a graph that failed validation is used for (``--invalid-lkg``): ``use`` (like a valid one)
#: or ``skip`` (nothing: the whole context, routed on its text, no symbols). The first is the default.
INVALID_LKG: tuple[str, ...] = ("use", "skip")
