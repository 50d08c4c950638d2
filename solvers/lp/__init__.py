"""Logic-LM's logic-program language (ProntoQA, ProofWriter).

Its syntax, the forward chainer, and SWI-Prolog as a second engine.
"""
