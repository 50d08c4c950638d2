"""The batch jobs and their parts.

Jobs: :mod:`.method_job` (``run_method_job``: any ``--method`` over a problem stream, many in
flight through one engine), :mod:`.programs_job` (``run_solve``: recorded programs through the
solver pool), :mod:`.lkg_build` (``symbolkg lkg build``: a corpus' LKGs offline). Parts: the
results :mod:`.store` (atomic parts, resume, shards), per-stage :mod:`.gates`, the lazy
:mod:`.intake` of problems not yet done, the :mod:`.reaper` of orphaned workers, the run's
:mod:`.provenance` and its typed config (:mod:`.run_config`).
"""
