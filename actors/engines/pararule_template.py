"""An engine that formalizes PARARULE-Plus by template, no model (``pararule-template``).

The ``prolog-agent`` method asks a model for a Prolog program and a goal; this engine answers
with :func:`symbolkg.solvers.prolog.pararule.translate`, the deterministic translator of the
dataset's templated English. It is the stand-in for a model that formalizes perfectly, so the
rest of the loop (parsing the answer, the MCP client, the server, the Prolog sessions, the
verdict) runs on real data and is measured on its own: it must give 100% on depths 2-4.

It reads the context and statement from the first user message of a request (the one
:func:`~symbolkg.solvers.prolog.pararule.formalize_messages` writes), so a repair request
(the same conversation plus an error) gets the same translation: the translator has nothing
to repair. A request of any other shape, or a sentence outside the templates, is an
:class:`~symbolkg.actors.engines.base.EngineError` naming it. Completions cost nothing:
0 prompt and completion tokens.
"""

from __future__ import annotations

from symbolkg.actors.engines.base import ChatRequest, CodeEngine, EngineError
from symbolkg.solvers.prolog import pararule as P


class PararuleTemplateEngine(CodeEngine):
    """Answers the ``prolog-agent`` method's formalization requests with the template translator."""

    model = "pararule-template"

    def answer(self, request: ChatRequest) -> str:
        """The ``<prolog>``/``<goal_true>`` answer to ``request``.

        Raises:
            EngineError: not a formalization request, or a sentence the translator cannot read.
        """
        first_user = next((m.content for m in request.messages if m.role == "user"), None)
        if first_user is None:
            raise EngineError(
                f"the pararule-template engine needs a user message ({request.request_id or request.purpose})"
            )
        try:
            context, statement = P.read_request(first_user)
            translation = P.translate(context, statement)
        except ValueError as exc:  # TranslationError is a ValueError
            raise EngineError(
                f"the pararule-template engine cannot answer {request.request_id or request.purpose!r}: {exc}"
            ) from exc
        return P.render_response(translation.program, translation.goal)
