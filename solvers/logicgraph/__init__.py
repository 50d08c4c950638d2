"""LogicGraph: instances, propositional logic, minimal supports, proof reconstruction, the generator and its prompts."""
