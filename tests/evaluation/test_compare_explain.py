"""A folder compare accounts for every file, and a compare whose every config breaks a constraint says which, where and the fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from lab.errors import TranscriptError
from lab.generator import GeneratorConfig, generate, write_lab_json
from lab.evaluation import CompareTable, compare, compare_folder
from lab.replayer import Report, Row
from lab.replayer.explain import CLOCK_WARNING, batch_line, blocked, broken, broken_row, first_invalid, import_warnings
from tests.builders import assistant, tool_call, user

PRESETS = ["minicode", "mewcode"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    for seed in (1, 2):
        write_lab_json(generate(GeneratorConfig(seed=seed, requests=6)), root / f"gen-{seed}.lab.json")
    (root / "bad.json").write_text('{"lab_transcript": 1, "messages": [{"role": "robot"}]}', encoding="utf-8")
    (root / "junk.jsonl").write_text("not json at all\n", encoding="utf-8")
    (root / "README.md").write_text("# notes\nnot a transcript\n", encoding="utf-8")
    (root / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return root


class TestEveryFileIsListed:
    def test_unreadable_files_are_rows_with_an_error_and_a_summary_line(self, folder: Path, tmp_path: Path) -> None:
        table = compare_folder(folder, PRESETS, processes=1, window=16_000)
        assert table.listed == ["bad.json", "gen-1.lab.json", "gen-2.lab.json", "junk.jsonl"]
        assert sorted(table.unreadable) == ["bad.json", "junk.jsonl"] and all(table.unreadable.values())
        assert table.left_out == ["README.md", "data.csv"]
        line = table.summary()
        assert line.startswith("2 of 4 compared; 2 unreadable: bad.json (") and "junk.jsonl (" in line
        assert line.endswith("left out, not transcripts: README.md, data.csv")
        # The DataFrame and every written table hold every transcript: the unreadable ones as rows with an error.
        df = table.df
        assert "error" in df.columns and list(df["transcript"].drop_duplicates()) == table.listed
        errors = df[df["error"].notna()]
        assert sorted(set(errors["transcript"])) == ["bad.json", "junk.jsonl"] and len(errors) == 4
        assert errors["peak_sent"].isna().all() and df[df["error"].isna()]["peak_sent"].notna().all()
        csv = pd.read_csv(table.write(tmp_path / "t.csv"))
        assert len(csv) == 8 and csv["error"].notna().sum() == 4
        data = json.loads(table.write(tmp_path / "t.json").read_text(encoding="utf-8"))
        assert data["summary"] == line and data["left_out"] == ["README.md", "data.csv"] and set(data["unreadable"]) == {"bad.json", "junk.jsonl"}

    def test_strict_refuses_before_any_replay(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        compare_module = sys.modules["lab.evaluation.compare_table"]
        monkeypatch.setattr(compare_module, "run_grid", lambda *a, **k: pytest.fail("strict must refuse before replaying"))
        with pytest.raises(TranscriptError, match=r"2 of 4 transcript\(s\) unreadable \(strict\): bad\.json .*junk\.jsonl"):
            compare_folder(folder, PRESETS, processes=1, strict=True)

    def test_strict_passes_a_clean_folder(self, folder: Path) -> None:
        table = compare_folder([folder / "gen-1.lab.json"], PRESETS, processes=1, strict=True)
        assert len(table.rows) == 2 and not table.errors and table.summary() == "1 of 1 compared"

    def test_batch_line_names_at_most_five(self) -> None:
        line = batch_line([f"f{k}" for k in range(10)], {f"f{k}": "why" for k in range(7)})
        assert line.startswith("3 of 10 compared; 7 unreadable: f0 (why)") and line.endswith("f4 (why), ... and 2 more")


def _tiny_window_table() -> CompareTable:
    t = generate(GeneratorConfig(seed=1, requests=8))
    return compare(t, PRESETS, window=1000)


class TestBlocked:
    def test_every_config_failing_names_failures_where_and_a_bigger_window(self) -> None:
        table = _tiny_window_table()
        assert all(r["failures"] > 0 and r["first_failure"].startswith("request ") for r in table.rows)
        stuck = table.blocked()
        assert stuck is not None and stuck.constraint == "failures" and stuck.count == 2
        first = next(r for r in table.rows if r["failures"])
        assert first["first_failure"] in stuck.where and "1,000-token window" in stuck.where
        peak = max(r["peak_raw"] for r in table.rows)
        assert f"a window of at least {peak:,} tokens" in stuck.fix
        assert stuck.text.startswith("all 2 config(s) broke one constraint, failed requests")

    def test_one_config_that_keeps_the_constraints_means_nothing_is_blocked(self) -> None:
        rows = [{"config": "a", "invalid_requests": 0, "failures": 0}, {"config": "b", "invalid_requests": 2, "failures": 0}]
        assert blocked(rows) is None
        assert blocked([]) is None

    def test_a_config_breaks_it_when_any_of_its_transcripts_does(self) -> None:
        rows = [
            {"config": "a", "transcript": "x", "invalid_requests": 0, "failures": 0},
            {"config": "a", "transcript": "y", "invalid_requests": 3, "failures": 0, "first_invalid": "request 4 (message 9): anthropic: no", "first_invalid_source": True},
            {"config": "b", "transcript": "x", "invalid_requests": 1, "failures": 0, "first_invalid": "request 2 (message 5): anthropic: no", "first_invalid_source": True},
        ]
        stuck = blocked(rows)
        assert stuck is not None and stuck.constraint == "invalid_requests" and stuck.count == 2
        assert stuck.where == "y: request 4 (message 9): anthropic: no"
        assert "the source itself is invalid there" in stuck.fix

    def test_invalid_made_by_compaction_is_told_from_an_invalid_source(self) -> None:
        rows = [{"config": "a", "invalid_requests": 1, "first_invalid": "request 1 (message 3): x", "first_invalid_source": False}]
        stuck = blocked(rows)
        assert stuck is not None and "the compaction made the request invalid" in stuck.fix

    def test_a_trial_row_from_broken_reads_the_same(self) -> None:
        rows = [{"transcript": "s.jsonl", "invalid_requests": 0, "failures": 2, "first_failure": "request 3 (message 7): 900 tokens", "peak_raw": 4200}]
        found = broken(rows)
        assert found == {"failures": {"count": 2, "where": "s.jsonl: request 3 (message 7): 900 tokens", "source": False, "peak_raw": 4200}}
        stuck = blocked([broken_row(0, found), broken_row(1, found)], by="trial", allow_failures_hint=True)
        assert stuck is not None and stuck.text.startswith("all 2 trial(s) broke one constraint, failed requests")
        assert "4,200 tokens" in stuck.fix and "--allow-failures" in stuck.fix


def _report_over(raw: list, *, bad_row: int) -> Report:
    rows = [Row(index=k, message_index=k + 1, time=0.0, raw_tokens=0, tokens_before=0, sent_tokens=0, sent_messages=0) for k in range(len(raw) - 1)]
    rows[bad_row] = rows[bad_row].model_copy(update={"valid_anthropic": False, "problems": ["anthropic: tool_use t1 is not answered"]})
    report = Report(rows=rows, requests=len(rows))
    report._attach([tuple(raw[: r.message_index]) for r in rows], raw, tuple(raw))
    return report


class TestFirstInvalid:
    def test_a_source_that_breaks_the_rule_itself_is_named(self) -> None:
        # An assistant call that no result answers, then the user speaks: the uncompacted history is invalid too.
        raw = [user("go"), tool_call("Read", "t1", path="a.py"), user("and?"), assistant("done")]
        where, in_source = first_invalid(_report_over(raw, bad_row=1))
        assert where == "request 1 (message 2): anthropic: tool_use t1 is not answered" and in_source is True

    def test_a_valid_source_is_not_blamed(self) -> None:
        raw = [user("go"), assistant("ok"), user("more"), assistant("done")]
        where, in_source = first_invalid(_report_over(raw, bad_row=0))
        assert where is not None and where.startswith("request 0 (message 1)") and in_source is False

    def test_every_valid_request_gives_none(self) -> None:
        table = compare(generate(GeneratorConfig(seed=2, requests=4)), ["minicode"], window=64_000)
        assert table.rows[0]["first_invalid"] is None and table.rows[0]["first_invalid_source"] is None
        assert table.rows[0]["first_failure"] is None and table.blocked() is None


class TestImportWarnings:
    def test_each_warning_once_and_the_clock_only_for_a_replay(self) -> None:
        t = generate(GeneratorConfig(seed=1, requests=3))
        stamped = any(m.timestamp is not None for m in t.messages)
        t.notes.warnings += ["line 9: last line cut off mid-record", "line 9: last line cut off mid-record"]
        assert import_warnings(t) == ["line 9: last line cut off mid-record"]
        bare = t.model_copy(update={"messages": [m.model_copy(update={"timestamp": None}) for m in t.messages]})
        assert import_warnings(bare, replayed=True)[-1] == CLOCK_WARNING
        assert CLOCK_WARNING not in import_warnings(bare, replayed=True, use_timestamps=False)
        assert (CLOCK_WARNING in import_warnings(t, replayed=True)) is not stamped

    def test_a_folder_compare_carries_each_transcripts_warnings(self, tmp_path: Path) -> None:
        t = generate(GeneratorConfig(seed=1, requests=3))
        t.notes.warnings.append("12 records skipped (notice 12)")
        write_lab_json(t, tmp_path / "one.lab.json")
        table = compare_folder(tmp_path, ["minicode"], processes=1)
        assert "12 records skipped (notice 12)" in table.warnings["one.lab.json"]
