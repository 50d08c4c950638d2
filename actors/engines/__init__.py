"""LLM engine backends behind one small async interface (:mod:`actors.engines.base`)."""
