"""The bench's replay section without a corpus: its generated-session parts still run."""

from __future__ import annotations

import pytest

from lab.bench import replay as section
from lab.corpus import CORPUS_ENV


def test_without_a_corpus_growth_and_compare_still_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CORPUS_ENV, raising=False)
    ran: list[str] = []
    monkeypatch.setattr(section, "bench_growth", lambda *a, **k: (ran.append("growth") or ["growth line"], {"ok": 1}))
    monkeypatch.setattr(section, "bench_compare", lambda *a, **k: (ran.append("compare") or ["compare line"], {"ok": 2}))

    def corpus_part(*a: object, **k: object) -> tuple[list[str], dict]:
        raise AssertionError("a corpus part ran without a corpus")

    for name in ("bench_corpus", "bench_throughput", "bench_recall"):
        monkeypatch.setattr(section, name, corpus_part)
    lines, data = section.bench_replay(quick=True)
    assert ran == ["growth", "compare"] and data == {"growth": {"ok": 1}, "compare": {"ok": 2}}
    assert lines[0].startswith("-- corpus replay, corpus throughput and recall cost: skipped: no corpus")
    assert "growth line" in lines and "compare line" in lines
