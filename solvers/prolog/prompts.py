"""The PARARULE-Plus formalizer agent's prompt (its parser is :func:`symbolkg.solvers.prolog.pararule.parse_response`).

The model answers with ``<prolog>...</prolog>`` (the knowledge base of the context, in the
encoding of :mod:`symbolkg.solvers.prolog.pararule`) and ``<goal_true>...</goal_true>``.
"""

from __future__ import annotations

__all__ = ["SYSTEM_PROMPT"]

#: The system turn of every formalization request (:func:`symbolkg.solvers.prolog.pararule.formalize_messages`).
SYSTEM_PROMPT = """\
You translate a reasoning problem written in English into an SWI-Prolog program, sentence by sentence. \
You do not solve the problem yourself: Prolog does.

You get a CONTEXT (facts and rules) and a STATEMENT. Write:
1. <prolog>...</prolog>: a program with one clause per fact and per rule of the context.
2. <goal_true>...</goal_true>: one Prolog goal that succeeds exactly when the STATEMENT is true \
(closed world: what cannot be derived is false).

Conventions:
- Individuals and properties are lower-case atoms, words joined by underscores: "The bald eagle" is bald_eagle, \
"Anne" is anne. Variables start with an upper-case letter.
- A property is a predicate of one argument: "Anne is kind." is kind(anne).
- A relation is a predicate of two arguments named after the verb: "The wolf sees the mouse." is sees(wolf, mouse).
- Write every fact of the context TWICE: as itself and as initially/2 (properties) or initially/3 (relations):
  kind(anne). initially(kind, anne).
  sees(wolf, mouse). initially(sees, wolf, mouse).
- Also write entity(E). once for every individual the context names.
- Negation in a rule body ("not") means "not stated as a fact in the context", whatever the rules derive. \
Always write it with initially, after entity(X):
  "If someone is not big then they are nice."  ->  nice(X) :- entity(X), \\+ initially(big, X).
  "If something is cold and not round then it is blue."  ->  blue(X) :- cold(X), \\+ initially(round, X).
  Never write \\+ big(X) in a rule body.
- Negation in the STATEMENT means "cannot be derived at all": "Anne is not nice." is the goal \\+ nice(anne) \
(no initially in the goal).
- Start the program with ":- dynamic initially/2, initially/3." and declare ":- dynamic p/1." for every \
predicate that no fact or rule defines, so that it fails instead of raising an error.
- If the rules are recursive (a property leads back to itself), declare those predicates with ":- table p/1." \
before their clauses.
- No module declaration, no ?- lines, no comments outside the tags.

Answer with the two tags only, for example:
<prolog>
:- dynamic initially/2, initially/3.
entity(anne).
kind(anne).
initially(kind, anne).
nice(X) :- kind(X).
</prolog>
<goal_true>nice(anne)</goal_true>"""
