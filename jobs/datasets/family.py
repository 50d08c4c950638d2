"""What a dataset family is: a rule that finds its files in a data folder, and a reader.

A family never lists dataset names: :attr:`Family.find` looks at the data folder and returns a
:class:`Dataset` for every file or folder of its shape, so a file that follows the family's naming
rule is a dataset without a code change. The families themselves are data, in
:data:`symbolkg.jobs.datasets.registry.FAMILIES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.stream import ProblemStream, ReadOptions, Sink


@dataclass(frozen=True)
class Dataset:
    """One dataset that a data folder holds.

    Attributes:
        name: its name, ``<family>/<name>`` (e.g. ``"pararule_plus/depth7"``); the ``dataset``
            of every problem it loads.
        path: its data file.
        family: the family that found it.
        programs: recorded programs beside it (Logic-LM's layout: ``logiclm/programs/<Name>_dev_gpt-4.json``).
        language: the program language given by the user (``--language``); None: the records
            say it (Logic-LM's layout, see :mod:`symbolkg.jobs.datasets.logiclm`).
    """

    name: str
    path: Path
    family: Family
    programs: Path | None = None
    language: str | None = None

    def count(self) -> int:
        """Number of problems, as :meth:`load` would return for a clean file, without building them."""
        return self.family.count(self.path)

    def problems(self, sink: Sink) -> Iterator[Problem]:
        """The dataset's problems through ``sink`` (which applies ``skip_bad``, the limit and the shard), lazily.

        A file that cannot be read at all raises here (a JSON document is parsed now); the records
        are read as the problems are.
        """
        return self.family.read(self, sink)

    def open(self, options: ReadOptions = ReadOptions()) -> ProblemStream:
        """The dataset as a :class:`ProblemStream` (file-level errors raise now, bad records as it is read)."""
        sink = Sink(options)
        return ProblemStream(self.problems(sink), [sink])


@dataclass(frozen=True)
class Family:
    """A dataset family.

    Attributes:
        name: the first part of its datasets' names (``"symba"``).
        rule: where its files are and how they are named, in words (``symbolkg datasets`` and
            docs/USAGE.md show it; an unknown dataset name lists every family's rule).
        find: data folder -> the datasets of this family it holds.
        read: ``(dataset, sink)`` -> the dataset's problems through the sink, a generator (what
            cannot wait, such as parsing a JSON document, is done before it is returned).
        count: data file -> number of problems, without building them.
        carries_programs: whether its records may carry programs (our own format); the recorded path
            reads a dataset of another family for none.
    """

    name: str
    rule: str
    find: Callable[[Path], list[Dataset]]
    read: Callable[[Dataset, Sink], Iterator[Problem]]
    count: Callable[[Path], int]
    carries_programs: bool = False
