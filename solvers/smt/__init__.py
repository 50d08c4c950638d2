"""SMT: SMT-LIB scripts for Z3 and Logic-LM's SAT/SMT DSL (AR-LSAT, the `logiclm-smt` language)."""
