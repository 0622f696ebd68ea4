"""The evaluation layer's public names are complete (its floor, above the replayer and the probes, is held by tests/test_layers.py)."""

from __future__ import annotations

import lab.evaluation as pkg


def test_package_all_is_complete() -> None:
    assert len(pkg.__all__) == len(set(pkg.__all__))
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name
    for name in ("compare", "compare_folder", "CompareTable", "run_grid", "Cell", "ProbeSpec", "Scorer", "rank", "read_batch"):
        assert name in pkg.__all__
