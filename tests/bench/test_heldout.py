"""The heldout section: configs chosen leave-one-session-out on a table, and the section on a tiny setting."""

from __future__ import annotations

import pytest

from lab.bench.heldout import TIE, bench_heldout, choose, lab_variants, long_sessions, loso, summarise, target_misses
from tests.conftest import SAMPLES


def _row(content: float | None, cost: float, failures: int = 0, names: float | None = 0.9, invalid: int = 0, thin: bool = False) -> dict:
    return {"content_recall": content, "content_thin": thin, "needed_later_recall": names, "cost": cost,
            "failures": failures, "invalid_requests": invalid}


def _table() -> dict[str, dict[str, dict]]:
    # "steady" is good everywhere; "spike" is best only on session c (and poor elsewhere); "broken" is best on
    # recall but fails on session a.
    return {
        "steady": {"a": _row(0.8, 1.0), "b": _row(0.8, 1.0), "c": _row(0.8, 1.0)},
        "spike": {"a": _row(0.5, 1.0), "b": _row(0.5, 1.0), "c": _row(1.0, 1.0)},
        "broken": {"a": _row(0.99, 1.0, failures=1), "b": _row(0.99, 1.0), "c": _row(0.99, 1.0)},
    }


def test_each_session_is_scored_by_a_pick_made_without_it() -> None:
    table = _table()
    picks = loso(table, list(table), ["a", "b", "c"])
    # Without a, "broken" looks flawless and best; with a among the others its failure rules it out.
    assert picks == {"a": "broken", "b": "steady", "c": "steady"}
    for held, pick in picks.items():
        assert pick == choose(table, list(table), [s for s in "abc" if s != held])
    # "spike" is the best config on c alone, yet c is never scored with it: c was not there when it was picked.
    assert choose(table, ["steady", "spike"], ["c"]) == "spike"
    assert loso(table, ["steady", "spike"], ["a", "b", "c"])["c"] == "steady"


def test_ties_go_to_the_cheaper_config_and_failures_rule_out() -> None:
    table = {"dear": {"a": _row(0.9, 2.0)}, "cheap": {"a": _row(0.9 - TIE / 2, 1.0)}, "far": {"a": _row(0.9 - 2 * TIE, 0.5)}}
    assert choose(table, list(table), ["a"]) == "cheap"
    assert choose(table, list(table), ["a"], by="cost") == "far"
    table["cheap"]["a"] = _row(0.95, 1.0, invalid=1)
    assert choose(table, list(table), ["a"]) == "dear"
    with pytest.raises(ValueError):
        choose(table, list(table), ["a"], by="names")


def test_grouped_folds_hold_a_session_out_at_every_window() -> None:
    # Two windows of one session are one fold: the config best only on session c (at both windows) is never its pick.
    table = {c: {f"{s}@{w}": r for s, r in rows.items() for w in (1, 2)} for c, rows in _table().items()}
    keys = list(table["steady"])
    picks = loso(table, list(table), keys, group={k: k.split("@")[0] for k in keys})
    assert set(picks) == {"a", "b", "c"} and picks["c"] != "spike" and picks["a"] == "broken"


def test_summary_leaves_thin_and_empty_sessions_out_of_the_recall_means() -> None:
    s = summarise([_row(0.5, 1.0), _row(1.0, 3.0, thin=True), _row(None, 2.0, names=None, failures=2)])
    assert s["content_recall"] == 0.5 and s["content_recall_all"] == 0.75 and s["content_sessions"] == 1
    assert s["needed_later_recall"] == pytest.approx(0.9) and s["names_sessions"] == 2
    assert s["cost"] == 2.0 and s["failures"] == 2 and s["invalid"] == 0


def test_target_misses_name_what_falls_short() -> None:
    seed = {"content_recall": 0.8, "needed_later_recall": 0.9, "cost": 1.0, "failures": 0, "invalid": 0}
    seeds = {32_000: {"minicode": seed, "mewcode": {**seed, "content_recall": 0.85}}}
    assert target_misses({32_000: {**seed, "content_recall": 0.85, "cost": 1.1}}, seeds) == []
    misses = target_misses({32_000: {**seed, "cost": 1.2, "failures": 1}}, seeds)
    assert len(misses) == 3 and any("mewcode" in m for m in misses) and any("cost" in m for m in misses)


def test_variants_start_with_todays_lab() -> None:
    from lab.core.presets import preset

    variants = lab_variants({"spill.threshold": (50_000, 5000), "microcompact.enabled": (False, True)})
    assert len(variants) == 4 and len({label for label, _ in variants}) == 4
    today = preset("lab")
    first = variants[0][1]
    assert first.spill.threshold == today.spill.threshold and first.microcompact.enabled == today.microcompact.enabled


def test_long_sessions_reach_the_token_floor() -> None:
    from lab.generator import estimate_tokens

    ((name, t),) = long_sessions(1, min_tokens=20_000)
    assert sum(estimate_tokens(m) for m in t.messages) >= 20_000 and "generated long" in name


def test_section_runs_on_a_tiny_setting() -> None:
    files = [SAMPLES / "generated-small.lab.json", SAMPLES / "claude-code-compacted.jsonl", SAMPLES / "generated-huge-outputs.lab.json"]
    lines, data = bench_heldout(files, windows=(32_000,), grid={"spill.threshold": (5000, 50_000)}, long=0, processes=1,
                                peers=("minicode", "mewcode", "codex"))
    assert len(data["sessions"]) == 3 and len(data["variants"]) == 2
    rows = data["windows"]["32000"]["rows"]
    assert {"lab, per window (LOSO)", "lab, one config (LOSO)", "minicode", "mewcode", "codex"} <= set(rows)
    # A fixed preset's held-out figure is its in-sample one; the LOSO picks come from the variants.
    assert rows["codex"]["heldout"] == rows["codex"]["in_sample"]
    assert set(data["windows"]["32000"]["picks"].values()) <= set(data["variants"])
    assert any(line.startswith("verdict:") for line in lines)


def test_the_shipped_presets_are_points_of_the_grid() -> None:
    # lab and lab-lean were picked from GRID by the full run: each is lab's spec with grid values, and they differ
    # only in the knobs the grid varies.
    from lab.bench.heldout import GRID
    from lab.core.presets import preset

    lab, lean = preset("lab").model_dump(), preset("lab-lean").model_dump()
    for path, tried in GRID.items():
        section, key = path.split(".")
        assert lab[section][key] in tried and lean[section][key] in tried
        lab[section].pop(key), lean[section].pop(key)
    lab.pop("label"), lean.pop("label")
    assert lab == lean
