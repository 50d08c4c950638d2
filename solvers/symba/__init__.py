"""SymBa: its clause language, the tabled backward chainer, and its prompts."""
