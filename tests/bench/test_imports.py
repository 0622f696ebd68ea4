"""The import bench: its ratios are measured in one run, beside the floor any importer must pay."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.bench.imports import _floor_once, time_import
from lab.formats import load
from lab.generator import generate_jsonl_bytes


def test_the_floor_and_the_import_are_timed_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "generated.jsonl"
    generate_jsonl_bytes(path, 200_000, seed=1)
    row = time_import(path, repeats=1, floor=True)
    assert row["import_s"] > 0 and row["json_loads_s"] > 0 and row["floor_s"] > 0
    # Ratios come from the unrounded seconds of the same run.
    assert row["ratio"] > 0 and row["floor_ratio"] > 0
    # The floor builds no fewer messages than the file's user and assistant lines hold: it is the import's own work, minus its logic.
    assert _floor_once(path) > 0 and len(load(path).messages) > 0
    assert "floor_s" not in time_import(path, repeats=1)


def test_every_side_is_timed_on_the_same_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A clock that moves one second per reading: each timed run lasts one second whatever it does, so
    # every ratio is 1 only if the import, both baselines and the floor all read the bench's clock.
    from lab.bench import imports

    ticks = iter(range(10_000))
    monkeypatch.setattr(imports, "_clock", lambda: float(next(ticks)))
    path = tmp_path / "generated.jsonl"
    generate_jsonl_bytes(path, 50_000, seed=2)
    row = time_import(path, repeats=1, floor=True)
    assert row["import_s"] == row["json_loads_s"] == row["json_kept_s"] == row["floor_s"] == 1.0
    assert row["ratio"] == row["ratio_kept"] == row["floor_ratio"] == 1.0
