"""Evaluation: many replays scored and compared, one floor above the replayer and the probes.

    compare(transcript, configs)          one CompareTable row per config, reports kept
    compare_folder(folder, configs)       one row per transcript x config, across processes or Ray
    run_grid(transcripts, configs)        the grid both go through (and the sweep), scored by callables
    ProbeSpec                             the LLM-probe scorer: a ``probe_score`` column
    rank(table.df) / table.ranking()      configs ranked over sessions, with bootstrap intervals
    read_batch(source)                    every transcript of a folder, a file or a list, each file accounted for

Modules: ``rows`` (one report as a flat row), ``batch`` (what a batch run reads), ``grid`` (run_grid,
worker lifetime, Ray), ``scorers`` (the ``Scorer`` protocol and ``ProbeSpec``), ``compare_table``
(``CompareTable``), ``ranking``. This layer imports ``lab.replayer`` and (lazily, for its SDKs)
``lab.probe``; neither imports it back. ``lab.tuning`` builds its sweep on ``run_grid``.
"""

from __future__ import annotations

from ..lazy import lazy_exports

# public name -> submodule, loaded on first use: the CLI reads the objectives (``evaluation.objectives``) for its
# --help without loading the replay engine, pandas or numpy through this package.
_EXPORTS: dict[str, str] = {
    "compare": ".compare_table",
    "compare_folder": ".compare_table",
    "CompareTable": ".compare_table",
    "run_grid": ".grid",
    "Cell": ".grid",
    "Scorer": ".scorers",
    "ProbeSpec": ".scorers",
    "rank": ".ranking",
    "Ranking": ".ranking",
    "read_batch": ".batch",
    "Batch": ".batch",
    "folder_files": ".batch",
    "folder_listing": ".batch",
    "summary_row": ".rows",
    "BASE_COLUMNS": ".rows",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
