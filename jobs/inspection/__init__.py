"""Tools that read a run after the fact: nothing here solves a problem.

* :mod:`.report`: accuracy, execution rate, errors and timings (``symbolkg report``);
* :mod:`.certificates`: every executed answer's certificate re-checked by another engine (``symbolkg verify``);
* :mod:`.explain`: one answer's premises, proof and sentences (``symbolkg explain``);
* :mod:`.profile`: where the time of a run went, stage by stage (``symbolkg profile``);
* :mod:`.lkg_show`: one stored Logical Knowledge Graph drawn (``symbolkg lkg show``).
"""
