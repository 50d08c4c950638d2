"""The subcommands of ``symbolkg``, one module each (see :mod:`symbolkg.jobs` for the layout rule)."""
