"""Logic-LM's constraint language (LogicalDeduction): syntax and the Z3 engine."""
