"""The bench's serve section runs end to end on loopback and reports its numbers (small sizes here)."""

from __future__ import annotations

import pytest

from lab.bench import SECTIONS, _load_optional_sections
from lab.bench import serve as bench

pytestmark = pytest.mark.timeout(180)


def test_serve_section_measures_latency_memory_and_throughput(monkeypatch):
    _load_optional_sections()
    assert SECTIONS["serve"] is bench.bench_serve
    monkeypatch.setattr(bench, "QUICK_PAIRS", 12)
    monkeypatch.setattr(bench, "QUICK_CONVERSATIONS", 4)
    monkeypatch.setattr(bench, "QUICK_REQUESTS", 3)
    monkeypatch.setattr(bench, "MEMORY_CONVERSATIONS", 3)
    lines, data = bench.bench_serve(quick=True)
    assert data["load"] == {"conversations": 4, "requests": 3, "pairs": 12}
    for mode in ("audit", "compact"):
        assert data[mode]["throughput"]["errors"] == 0 and data[mode]["throughput"]["requests_per_second"] > 0
        assert data[mode]["added_p99_ms"] >= data[mode]["added_p50_ms"]
    assert data["direct_throughput"]["errors"] == 0
    assert data["memory_per_conversation_kb"] > 0
    assert any(line.startswith("added latency, compaction off") for line in lines)
