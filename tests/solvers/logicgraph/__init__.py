"""Tests of symbolkg.solvers.logicgraph."""
