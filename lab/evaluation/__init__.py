"""Evaluation: many replays scored and compared, one floor above the replayer and the probes.

    compare(transcript, configs)          one CompareTable row per config, reports kept
    compare_folder(folder, configs)       one row per transcript x config, across processes or Ray
    run_grid(transcripts, configs)        the grid both go through (and the sweep), scored by callables
    ProbeSpec                             the LLM-probe scorer: a ``probe_score`` column
    rank(table.df) / table.ranking()      configs ranked over sessions, with bootstrap intervals
    read_batch(source)                    every transcript of a folder, a file or a list, each file accounted for

Modules: ``rows`` (one report as a flat row), ``batch`` (what a batch run reads), ``grid`` (run_grid,
worker lifetime, Ray), ``scorers`` (the ``Scorer`` protocol and ``ProbeSpec``), ``compare``
(``CompareTable``), ``ranking``. This layer imports ``lab.replayer`` and (lazily, for its SDKs)
``lab.probe``; neither imports it back. ``lab.tuning`` builds its sweep on ``run_grid``.
"""

from .batch import Batch, folder_files, folder_listing, read_batch
from .compare import CompareTable, compare, compare_folder
from .grid import Cell, run_grid
from .ranking import Ranking, rank
from .rows import BASE_COLUMNS, summary_row
from .scorers import ProbeSpec, Scorer

__all__ = [
    "compare",
    "compare_folder",
    "CompareTable",
    "run_grid",
    "Cell",
    "Scorer",
    "ProbeSpec",
    "rank",
    "Ranking",
    "read_batch",
    "Batch",
    "folder_files",
    "folder_listing",
    "summary_row",
    "BASE_COLUMNS",
]
