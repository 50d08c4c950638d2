"""Dataset families: every input becomes :class:`~symbolkg.jobs.core.rows.Problem` records.

A *family* is a reader plus a rule that finds its files (:mod:`.family`); the registry
(:mod:`.registry`) holds the families as data and lists whatever a data folder holds:

* :mod:`.logiclm`: ``logiclm/<name>`` for every ``logiclm/<Name>/dev.json`` (Logic-LM's layout),
  with recorded programs ``logiclm/programs/<Name>_dev_gpt-4.json``; also Logic-LM program files;
* :mod:`.pararule_plus`: ``pararule_plus/depth<N>`` for every ``PARARULE_Plus_Depth<N>_*.jsonl``;
* :mod:`.symba`: ``symba/<folder>`` for every folder holding SymBa's ``test_data.json``;
* :mod:`.logicgraph`: ``logicgraph/<tier>`` for every ``logicgraph/<tier>.jsonl``;
* :mod:`.multihop`: ``multihop/<name>`` for every ``multihop/<name>/dev.jsonl``;
* :mod:`.user`: our own format (JSON Lines, JSON, Parquet): ``custom/<name>`` for every
  ``custom/<name>.jsonl``, and any such file given by its path.

:mod:`.records` holds the input errors and record validation, :mod:`.files` the data folder and
the JSON / JSON Lines record sources, :mod:`.stream` what every reader yields through: problems read
as the job reads them, with the skip-bad policy, the limit, the shard and repeated ids on the way.
"""
