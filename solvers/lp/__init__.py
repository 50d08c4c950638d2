"""Logic-LM's logic-program language (ProntoQA, ProofWriter): syntax, the forward chainer, SWI-Prolog as a second engine."""
