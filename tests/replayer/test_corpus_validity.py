"""Every corpus session, under every preset at 32k, 64k and 128k, sends only requests the providers accept (issue 27).

Each session (each one of a multi-session file too) is replayed with the original agent's
compactions undone, once per preset and window. Every request must be valid by the lab's
validator (the rows' validity fields) and by the independent reader of ``tests.wire_rules``, on
the Anthropic, OpenAI Chat and Responses bodies the lab's exporters write for that request's context, Bedrock's
user-opening rule included; and on the context sent block for block (``literal_*``), so its
validity owes nothing to the exporters' own mends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import lab
from lab.core.messages import Transcript
from lab.core.presets import preset_names
from lab.formats import load
from lab.formats.export import to_anthropic, to_openai, to_responses
from tests.corpus_sessions import cell_id, corpus_cells
from tests.conftest import CORPUS_FILES
from tests.wire_rules import anthropic_wire_problems, literal_anthropic, literal_openai, openai_wire_problems, responses_wire_problems

pytestmark = pytest.mark.slow

WINDOWS = [32_000, 64_000, 128_000]



CELLS = corpus_cells()
_loaded: dict[tuple[Path, str | None], Transcript] = {}


def _load(path: Path, session: str | None) -> Transcript:
    # One import per session for all presets: the replays of one transcript share their per-message caches.
    key = (path, session)
    if key not in _loaded:
        _loaded[key] = load(path, session=session)
    return _loaded[key]



@pytest.mark.parametrize("preset", preset_names())
@pytest.mark.parametrize("cell", CELLS, ids=[cell_id(c) for c in CELLS])
def test_every_request_is_valid_by_both_readers(cell: tuple[Path, str | None], preset: str) -> None:
    t = _load(*cell)
    for window in WINDOWS:
        report = lab.replay(t, preset, window=window, recorded_compactions="undo")
        where = f"{cell_id(cell)} under {preset} at {window:,}"
        bad = [(r.index, r.problems[:2]) for r in report.rows if not r.valid]
        assert report.invalid_requests == 0 and not bad, f"{where}: {bad[:3]}"
        for k, row in enumerate(report.rows):
            context = report.context_at(k)
            wire = anthropic_wire_problems(to_anthropic(context), strict=True, shape=True)
            wire += openai_wire_problems(to_openai(context), strict=True, shape=True)
            wire += responses_wire_problems(to_responses(context), strict=True, shape=True)
            # The context itself, sent block for block with no exporter's mends, is as valid.
            wire += anthropic_wire_problems(literal_anthropic(context), strict=True) + openai_wire_problems(literal_openai(context), strict=True)
            assert wire == [], f"{where}, request {row.index}: {wire[:3]}"


def test_the_corpus_has_sessions_to_replay() -> None:
    if not CORPUS_FILES:
        pytest.skip("no corpus: set LAB_CORPUS to a folder of transcripts")
    assert CELLS and all(_load(*cell).messages for cell in CELLS)
