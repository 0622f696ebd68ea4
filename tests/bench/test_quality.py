"""The quality section: one table of preset x window, and the lab preset's targets checked in the same run."""

from __future__ import annotations

from lab.bench.quality import QUALITY_PRESETS, bench_quality
from tests.conftest import SAMPLES


def test_table_and_targets_on_the_sample_sessions() -> None:
    files = [SAMPLES / "generated-small.lab.json", SAMPLES / "claude-code-compacted.jsonl", SAMPLES / "generated-huge-outputs.lab.json"]
    lines, data = bench_quality(files, windows=(32_000,))
    assert [(c["preset"], c["window"]) for c in data["cells"]] == [(p, 32_000) for p in QUALITY_PRESETS]
    assert all(c["transcripts"] == 3 and c["requests"] > 0 for c in data["cells"])
    assert all(c["recall"] is None or 0.0 <= c["recall"] <= 1.0 for c in data["cells"])
    # Pooled recall is kept over needed of every request, whatever the per-transcript average says.
    for c in data["cells"]:
        assert (c["recall_pooled"] is None) == (c["recall"] is None)
    # Six targets per window, each printed as met or MISSED with its evidence.
    assert len(data["targets"]) == 6
    printed = [line for line in lines if line.strip().startswith(("met", "MISSED"))]
    assert len(printed) == 6 and all(":" in line for line in printed)
    assert all(c["content"] is None or 0.0 <= c["content"] <= 1.0 for c in data["cells"])
    assert any(line.startswith("lab ") for line in lines) and "calibrated" in lines[0]


def test_recorded_compactions_are_undone() -> None:
    # The compacted sample loses its first request when its recorded compaction is honoured; undone, no preset loses it.
    _, data = bench_quality([SAMPLES / "claude-code-compacted.jsonl"], windows=(32_000,))
    assert all(c["first_request_lost"] == 0 for c in data["cells"])


def test_a_seed_that_keeps_everything_is_named_as_unbeatable() -> None:
    from lab.bench.quality import _targets

    def cell(recall: float, cost: float) -> dict:
        return {"invalid": 0, "breaker_open": 0, "truncations": 0, "recall": recall, "cost": cost}

    cells = {("lab", 1000): cell(0.99, 1.0), ("minicode", 1000): cell(0.9, 1.0), ("mewcode", 1000): cell(1.0, 2.0), ("codex", 1000): cell(0.95, 2.0),
             # Printed beside the seeds, never a bar for lab: its perfect recall must not make lab's miss.
             ("lab-lean", 1000): cell(1.0, 0.5)}
    (recall,) = [t for t in _targets(cells, (1000,)) if t[0].endswith("recall above every seed")]
    assert recall[1] is False and "no config can be above it" in recall[2]
    cells[("mewcode", 1000)] = cell(0.98, 2.0)
    (recall,) = [t for t in _targets(cells, (1000,)) if t[0].endswith("recall above every seed")]
    assert recall[1] is True and "no config" not in recall[2]


def test_content_target_is_checked_against_the_seeds_only() -> None:
    from lab.bench.quality import _targets

    def cell(content: float | None, cost: float) -> dict:
        return {"invalid": 0, "breaker_open": 0, "truncations": 0, "recall": 0.9, "content": content, "cost": cost}

    cells = {("lab", 1000): cell(0.8, 1.0), ("minicode", 1000): cell(0.7, 1.0), ("mewcode", 1000): cell(0.8, 2.0),
             ("codex", 1000): cell(None, 2.0), ("lab-lean", 1000): cell(0.95, 0.5)}
    (content,) = [t for t in _targets(cells, (1000,)) if "content" in t[0]]
    assert content[1] is True and "80.0%" in content[2]
    cells[("mewcode", 1000)] = cell(0.81, 2.0)
    (content,) = [t for t in _targets(cells, (1000,)) if "content" in t[0]]
    assert content[1] is False
