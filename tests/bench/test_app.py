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
