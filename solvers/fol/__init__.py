"""First-order logic: Logic-LM's FOL language (FOLIO), Prover9 input, and the engines that decide them (Prover9, Z3).

Syntax (imports only :mod:`symbolkg.solvers.outcomes` and other syntax): ``lexical_syntax`` (sections
and tokens), ``syntax`` (the ``logiclm-fol`` tree, parser and readings), ``prover9_syntax`` (Prover9's
notation: the ``prover9`` language's parser, input files, FOL to and from Prover9 formulas).
Independent evaluator: ``z3_eval`` (FOL in Z3, finite models; shared with the certificate checker).
Engines: ``prover9`` (the Prover9 backend and the ``prover9`` language), ``engine`` (``logiclm-fol``
by Prover9), ``z3_engine`` (``logiclm-fol-z3``), ``race`` (the finite-model search: Unknown
answers' countermodels, the pre-check before Prover9 and the race beside a slow Prover9), and
``readings`` (how both FOL engines combine a program's readings).
"""
