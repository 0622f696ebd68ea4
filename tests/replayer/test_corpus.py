"""Every real transcript replays under every preset at a 32k window: valid requests, first request kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.core.presets import PRESETS
from lab.replayer import replay, request_points
from tests.conftest import CORPUS_FILES, corpus_id


@pytest.mark.timeout(120)
@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_replays_cleanly_under_every_preset(path: Path) -> None:
    from lab.formats import load

    transcript = load(path)
    points = len(request_points(transcript.messages))
    for name in PRESETS:
        report = replay(transcript, name, window=32_000)
        where = f"{path.name} under {name}"
        assert report.requests == points, where
        assert report.invalid_requests == 0, (where, [r.problems for r in report.rows if r.problems][:1])
        assert report.failures == 0, where
        if points:
            assert report.first_request_kept is True, where
            assert report.peak_sent <= 32_000, where
            assert report.total_cost > 0 and 0.0 <= report.cache_hit_ratio <= 1.0, where


@pytest.mark.timeout(300)
@pytest.mark.parametrize("window", [32_000, 64_000])
@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_with_recorded_compactions_undone_every_request_keeps_the_first_request(path: Path, window: int) -> None:
    from lab.formats import load

    transcript = load(path)
    for name in PRESETS:
        report = replay(transcript, name, window=window, recorded_compactions="undo")
        lost = [r.index for r in report.rows if r.first_request_kept is False]
        assert not lost, f"{path.name} under {name} at {window}: first request lost at requests {lost[:5]}"
        assert report.recorded_compactions_mode == "undo"
