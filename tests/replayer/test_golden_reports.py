"""Full reports of the corpus under every preset match the ones recorded before the house was restructured (issue 29).

A restructure must not change behaviour: every replay, compare and sweep gives the same numbers. Each corpus
session (each session of a multi-session file) is replayed under every preset at 32k and 128k with the original
agent's compactions undone, and the whole report (every row, every event, the notes, the config it ran) plus the
context it ends with is reduced to one SHA-256. ``tests/replayer/golden/reports.json`` holds those digests beside a
few readable totals, so a mismatch says which figure moved. Nothing of the transcripts themselves is stored.

A seeded sweep over the sample sessions is held to its recorded table the same way.

Regenerate (only when a change of numbers is intended, and say why in the commit)::

    LAB_CORPUS=../shared/corpus python -m tests.replayer.test_golden_reports --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import lab
from lab.core.messages import Transcript
from lab.core.presets import preset_names
from lab.formats import load
from tests.corpus_sessions import cell_id, corpus_cells
from tests.conftest import CORPUS, ROOT, SAMPLES

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).parent / "golden" / "reports.json"
WINDOWS = (32_000, 128_000)
# The readable figures stored beside each digest: what a mismatch prints first.
TOTALS = (
    "requests", "peak_sent", "total_cost", "invalid_requests", "failures", "overflows", "summary_calls",
    "compactions_by_strategy", "needed_later_recall", "content_recall", "content_needed", "reread_tokens",
)
SWEEP_SPACE = {"spill.threshold": [4_000, 60_000], "watermark.ratio": [0.5, 0.95]}




def _canonical(value: Any) -> str:
    """The JSON of ``value`` with keys sorted and the machine's own paths taken out."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    for root, name in ((CORPUS, "<corpus>"), (ROOT, "<root>")):
        if root is not None:
            text = text.replace(str(root), name)
    return text


def _digest(report: lab.Report) -> dict[str, Any]:
    data = report.to_dict()
    data["meta"] = {k: v for k, v in data.get("meta", {}).items() if k != "source_path"}
    final = [m.model_dump(mode="json") for m in report.final_context()]
    sha = hashlib.sha256(_canonical({"report": data, "final": final}).encode()).hexdigest()
    return {"sha256": sha, **{k: data.get(k) for k in TOTALS}}


def _replays(t: Transcript, cell_id: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for preset in preset_names():
        for window in WINDOWS:
            report = lab.replay(t, preset, window=window, recorded_compactions="undo")
            out[f"{cell_id} | {preset} | {window}"] = _digest(report)
    return out


def _sweep_digest() -> dict[str, Any]:
    paths = sorted(SAMPLES.glob("claude-code-*.jsonl"))[:2]
    result = lab.sweep(paths, SWEEP_SPACE, trials=6, seed=7, window=32_000, folds=0)
    records = [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in result.records]
    return {"sha256": hashlib.sha256(_canonical(records).encode()).hexdigest(), "trials": len(records)}


def _golden() -> dict[str, Any]:
    if not GOLDEN.exists():
        pytest.fail(f"{GOLDEN} is missing: write it with `python -m tests.replayer.test_golden_reports --write`")
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


CELLS = corpus_cells()


@pytest.mark.parametrize("cell", CELLS, ids=[cell_id(c) for c in CELLS])
def test_every_report_matches_the_one_recorded(cell: tuple[Path, str | None]) -> None:
    golden = _golden()["reports"]
    name = cell_id(cell)
    if not any(key.startswith(f"{name} | ") for key in golden):
        pytest.skip(f"{name} is not in the golden reports (a corpus file added after they were recorded)")
    got = _replays(load(cell[0], session=cell[1]), name)
    moved = {}
    for key, digest in got.items():
        want = golden.get(key)
        if want is None or want["sha256"] != digest["sha256"]:
            changed = {k: (want or {}).get(k, "-") for k in TOTALS if (want or {}).get(k) != digest[k]}
            moved[key] = {k: f"{old} -> {digest[k]}" for k, old in changed.items()} or "same totals, other detail"
    assert not moved, "reports moved:\n" + "\n".join(f"  {k}: {v}" for k, v in moved.items())


def test_the_golden_reports_cover_this_corpus() -> None:
    if not CELLS:
        pytest.skip("no corpus: set LAB_CORPUS to a folder of transcripts")
    golden = _golden()["reports"]
    covered = {key.split(" | ")[0] for key in golden}
    assert covered & {cell_id(c) for c in CELLS}, "none of this corpus's sessions has a recorded report"


def _optuna_release() -> str:
    """Optuna's major.minor: the sampler's draws for a seed may change between its releases, never within one."""
    import optuna

    return ".".join(optuna.__version__.split(".")[:2])


def test_a_seeded_sweep_matches_the_one_recorded() -> None:
    want = dict(_golden()["sweep"])
    recorded = want.pop("optuna", None)
    if recorded is not None and recorded != _optuna_release():
        pytest.skip(f"the sweep was recorded with Optuna {recorded}, this is {_optuna_release()}: its seeded draws may differ; "
                    "record it again with `python -m tests.replayer.test_golden_reports --write`")
    assert _sweep_digest() == want


def _write() -> None:
    reports: dict[str, Any] = {}
    for cell in CELLS:
        print(cell_id(cell), file=sys.stderr)
        reports.update(_replays(load(cell[0], session=cell[1]), cell_id(cell)))
    GOLDEN.parent.mkdir(exist_ok=True)
    body = {"windows": list(WINDOWS), "reports": reports, "sweep": {**_sweep_digest(), "optuna": _optuna_release()}}
    GOLDEN.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(reports)} reports to {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.replayer.test_golden_reports --write")
    if not CELLS:
        sys.exit("error: no corpus: set LAB_CORPUS")
    _write()
