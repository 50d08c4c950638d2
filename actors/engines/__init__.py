"""LLM engine backends behind one small async interface (:mod:`symbolkg.actors.engines.base`)."""
