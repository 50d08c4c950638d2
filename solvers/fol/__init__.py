"""First-order logic: Logic-LM's FOL language (FOLIO), Prover9 input, and the engines that decide them (Prover9, Z3)."""
