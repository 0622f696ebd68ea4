"""Every real transcript replays under every preset at a 32k window: valid requests, first request kept.

Every session of a file counts, as compare reads them: an evaluation output.jsonl holds several."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.core.presets import PRESETS
from lab.core.messages import Transcript
from lab.replayer import replay, request_points
from lab.evaluation.batch import read_batch
from tests.conftest import CORPUS_FILES, corpus_id


def _sessions(path: Path) -> list[tuple[str, Transcript]]:
    items = read_batch([path]).items
    assert items and all(t is not None for _, t, _ in items), [e for _, _, e in items]
    return [(Path(name).name, t) for name, t, _ in items if t is not None]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_replays_cleanly_under_every_preset(path: Path) -> None:
    for label, transcript in _sessions(path):
        points = len(request_points(transcript.messages))
        for name in PRESETS:
            report = replay(transcript, name, window=32_000)
            where = f"{label} under {name}"
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
    for label, transcript in _sessions(path):
        for name in PRESETS:
            report = replay(transcript, name, window=window, recorded_compactions="undo")
            lost = [r.index for r in report.rows if r.first_request_kept is False]
            assert not lost, f"{label} under {name} at {window}: first request lost at requests {lost[:5]}"
            assert report.recorded_compactions_mode == "undo"
