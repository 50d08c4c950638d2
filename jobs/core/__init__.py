"""What every job, method and dataset family shares, and imports nothing else of ``jobs``.

* :mod:`.rows`: the typed records, :class:`~.rows.Problem` and :class:`~.rows.ResultRow`;
  :mod:`.tables`: their Arrow schemas; :mod:`.schemas`: the JSON columns' schemas (``trace``,
  ``attempts_log``, ``stage_seconds``, ``certificate``) every row is checked against when written;
* :mod:`.results`: a problem's checks request, its LLM ledger and its scored result row, built once;
* :mod:`.answers`: an outcome's answer as an option letter, scored against the gold;
* :mod:`.ids`: stable id hashes, shards and compact id sets;
* :mod:`.concurrency`: the in-flight loop both LLM jobs run.
"""
