"""Where programs run: the solver worker process, the local pool of workers, child-process limits."""
