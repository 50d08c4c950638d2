"""Pipeline parts of a batch job.

Result rows and their store, the in-flight runner, per-stage gates, answers, the solve and retrieve
stages.
"""
