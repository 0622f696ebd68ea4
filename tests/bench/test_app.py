"""The app bench drives the real app: a generated session through the Generate tab, the Timeline knob, the verdict."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.bench.app import GENERATED_TARGET_SECONDS, bench_app_generated, knob_key
from lab.ui import keys


def test_knob_key_follows_the_widget_generation() -> None:
    assert knob_key(SimpleNamespace(session_state={})) == "tl0:watermark.ratio"
    # Loading a session applies its window, which starts a new generation of widget keys.
    assert knob_key(SimpleNamespace(session_state={keys.GEN: 2}), "window") == "tl2:window"


@pytest.mark.timeout(300)
def test_generated_session_goes_through_the_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_APP_TMP", str(tmp_path / "outer"))
    # A tiny session keeps this fast; the bench itself uses 2,000 requests.
    data = bench_app_generated(requests=12, moves=1, seed=5)
    assert data["transcript"] == "generated (seed 5, 12 requests)"
    assert data["requests"] == 12
    assert len(data["slider_to_timeline_s"]) == 1
    assert all(x > 0 for x in (*data["slider_to_timeline_s"], data["slider_to_timeline_cached_s"], data["core_replay_s"]))
    assert data["target_s"] == GENERATED_TARGET_SECONDS
    assert data["meets_target"] == (data["slider_to_timeline_median_s"] <= GENERATED_TARGET_SECONDS)
    # The bench's own temp dir is gone and the caller's setting is back.
    assert os.environ["LAB_APP_TMP"] == str(tmp_path / "outer")


def test_sized_session_is_the_file_nearest_the_message_count() -> None:
    from lab.bench.app import sized_session
    from lab.formats import load
    from lab.ui.transcript import SAMPLES_DIR

    files = sorted(p for p in SAMPLES_DIR.glob("generated-*.lab.json"))
    counts = {p: len(load(p).messages) for p in files}
    for target in (1, 120, 10_000):
        picked = sized_session(files, target)
        assert abs(counts[picked] - target) == min(abs(n - target) for n in counts.values())


@pytest.mark.timeout(300)
def test_page_timings_print_every_figure_against_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 31 §10: the sample's slider move, page switches and Diff at an 11k window; without a corpus the sized session is skipped.
    from lab.bench.app import DIFF_WINDOW, SWITCH_PAGES, TARGET_SECONDS, page_timings

    monkeypatch.setenv("LAB_APP_TMP", str(tmp_path))
    monkeypatch.delenv("LAB_CORPUS", raising=False)
    lines, data = page_timings(quick=True)
    text = "\n".join(lines)
    assert f"target {TARGET_SECONDS} s" in lines[0]
    for what in ("slider move on Timeline", "page switch (replay cached)", f"Diff at window {DIFF_WINDOW:,}"):
        assert sum(what in line for line in lines) == 1, what
    assert text.count(f"x the {TARGET_SECONDS} s target") == 3
    assert "corpus session of ~120 messages: skipped" in text
    sample = data["sample"]
    assert set(sample["switch_s"]) == set(SWITCH_PAGES)
    assert {"open", "last_request"} <= set(sample["diff_s"])
    assert sample["meets_target"] == {k: v <= TARGET_SECONDS for k, v in sample["verdict_s"].items()}
