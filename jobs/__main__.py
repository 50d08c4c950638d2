"""``python -m symbolkg.jobs COMMAND ...`` is ``symbolkg COMMAND ...`` (e.g. a RayJob's entrypoint)."""

import sys

from symbolkg.jobs.cli import main

sys.exit(main())
