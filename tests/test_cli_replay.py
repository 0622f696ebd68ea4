"""``python -m lab replay`` and ``python -m lab compare``, run in-process through ``lab.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from lab.cli import main
from lab.replayer import Report
from tests.conftest import SAMPLES

SMALL = SAMPLES / "generated-small.lab.json"
ERRORS = SAMPLES / "generated-errors.lab.json"


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


class TestReplay:
    def test_hidden_tokens_count_on_every_request(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        base = ["replay", str(SMALL), "--preset", "minicode", "--window", "16000"]
        assert main([*base, "--report", str(tmp_path / "plain.json")]) == 0
        assert main([*base, "--hidden-tokens", "12000", "--report", str(tmp_path / "hidden.json")]) == 0
        plain, hidden = Report.read(tmp_path / "plain.json"), Report.read(tmp_path / "hidden.json")
        assert (plain.hidden_tokens, hidden.hidden_tokens) == (0, 12_000) and hidden.settings["hidden_tokens"] == 12_000
        # The provider's window counts the hidden part, so the same config now overflows (or costs more for it).
        assert hidden.overflows > plain.overflows or hidden.total_cost > plain.total_cost
        assert "this replay counts 12,000 hidden tokens on every request" in capsys.readouterr().out
        assert main([*base, "--hidden-tokens", "auto", "--report", str(tmp_path / "auto.json")]) == 0
        auto = Report.read(tmp_path / "auto.json")
        assert auto.usage_fit is not None and auto.hidden_tokens == max(0, auto.usage_fit["hidden_tokens"])
        assert main([*base, "--hidden-tokens", "lots", "--report", str(tmp_path / "bad.json")]) == 2

    def test_report_requests_and_summary(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        rc = main(["replay", str(SMALL), "--preset", "minicode", "--window", "16000", "--spill-dir", str(tmp_path / "spill"),
                   "--report", str(tmp_path / "REPORT.json"), "--dump-requests", str(tmp_path / "REQUESTS.jsonl")])
        assert rc == 0
        out = capsys.readouterr().out
        for text in ("requests: 40", "peak sent", "compactions:", "cost:", "cache-hit ratio:", "retention score:"):
            assert text in out, text
        report = Report.read(tmp_path / "REPORT.json")
        assert report.requests == 40 and report.window == 16_000 and report.config["label"] == "minicode"
        lines = (tmp_path / "REQUESTS.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 40
        first = json.loads(lines[0])
        assert first["index"] == 0 and set(first["request"]) == {"system", "messages"}
        assert first["request"]["messages"][0]["role"] == "user"
        # Spilled results went to the folder, under the session's sanitised name.
        assert list((tmp_path / "spill").glob("*/tool-results/*.txt"))

    def test_requests_in_openai_shape_from_a_config_file(self, tmp_path: Path) -> None:
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text("label: mine\nwindow: 20000\n", encoding="utf-8")
        rc = main(["replay", str(ERRORS), "--config", str(cfg), "--report", str(tmp_path / "r.json"),
                   "--dump-requests", str(tmp_path / "q.jsonl"), "--to", "openai"])
        assert rc == 0
        body = json.loads((tmp_path / "q.jsonl").read_text(encoding="utf-8").splitlines()[-1])["request"]
        assert set(body) == {"messages"} and body["messages"][0]["role"] == "system"
        assert any(m["role"] == "tool" for m in body["messages"])
        assert Report.read(tmp_path / "r.json").label == "mine"

    def test_llm_summarizer_through_a_local_server(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.testing.fake_provider import serve

        with serve() as fake:
            rc = main(["replay", str(SMALL), "--preset", "codex", "--window", "16000", "--summarizer", "openai",
                       "--base-url", fake.base_url_openai, "--model", "fake", "--report", str(tmp_path / "r.json")])
            calls = [r for r in fake.requests if r.is_generation]
        assert rc == 0, capsys.readouterr().err
        report = Report.read(tmp_path / "r.json")
        assert report.summary_calls == len(calls) >= 1
        assert report.summary_cost > 0 and report.config["summary"]["summarizer"] == "openai"

    def test_config_warnings_go_to_stderr_before_the_table(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        # MewCode at 40k: its 10k tail covers the 7k auto threshold, so auto-compaction can never remove anything.
        rc = main(["replay", str(SMALL), "--preset", "mewcode", "--window", "40000", "--report", str(tmp_path / "r.json")])
        assert rc == 0
        captured = capsys.readouterr()
        warnings = captured.err.splitlines()
        assert warnings and all(line.startswith("warning: ") for line in warnings)
        assert any("summary.tail_min_tokens (10,000)" in line and "nothing to summarise" in line for line in warnings)
        assert "requests: 40" in captured.out and "warning: " not in captured.out

    def test_loud_failures_print_as_warning_lines(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        # claude-code at 16k: every auto summary fails, the breaker opens and requests stay over the watermark.
        rc = main(["replay", str(SMALL), "--preset", "claude-code", "--window", "16000", "--report", str(tmp_path / "r.json")])
        assert rc == 0
        captured = capsys.readouterr()
        err = captured.err.splitlines()
        assert all(line.startswith("warning: ") for line in err)
        breaker = [line for line in err if "circuit breaker opened" in line]
        assert len(breaker) == 1 and "summary.tail_min_tokens" in breaker[0]
        report = Report.read(tmp_path / "r.json")
        assert report.breaker_open_over_watermark > 0
        assert f"breaker open over watermark: {report.breaker_open_over_watermark}" in captured.out
        assert "warning: " not in captured.out

    def test_no_warning_for_a_preset_at_200k(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["replay", str(SMALL), "--preset", "mewcode", "--report", str(tmp_path / "r.json")]) == 0
        assert capsys.readouterr().err == ""

    @pytest.mark.parametrize(
        "args, message",
        [
            (["replay", "missing.jsonl", "--preset", "minicode"], "no such file"),
            (["replay", str(SMALL), "--preset", "nope"], "unknown preset"),
            (["replay", str(SMALL), "--preset", "minicode", "--window", "500"], "window"),
            (["replay", str(SMALL), "--preset", "minicode", "--summarizer", "anthropic"], "ANTHROPIC_API_KEY"),
            (["replay", str(SMALL), "--preset", "minicode", "--window", "lots"], "whole number"),
            (["replay", str(SMALL)], "--config"),
        ],
        ids=["missing-file", "unknown-preset", "small-window", "no-key", "bad-window", "no-config"],
    )
    def test_bad_input_exits_2_with_one_line(self, args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(args + ["--report", str(tmp_path / "r.json")]) == 2
        assert message in _one_error_line(capsys)
        assert not (tmp_path / "r.json").exists()

    def test_bad_config_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        cfg = tmp_path / "bad.json"
        cfg.write_text('{"window": "big"}', encoding="utf-8")
        assert main(["replay", str(SMALL), "--config", str(cfg), "--report", str(tmp_path / "r.json")]) == 2
        assert "window" in _one_error_line(capsys)


CHEAP = {"pricing": {"model": "", "input_per_mtok": 0.5, "output_per_mtok": 1.0, "cache_write_per_mtok": 0.5, "cache_read_per_mtok": 0.05}}


class TestSettings:
    def _replay(self, tmp_path: Path, *extra: str) -> Report:
        out = tmp_path / f"r{len(list(tmp_path.glob('r*.json')))}.json"
        assert main(["replay", str(SMALL), *extra, "--window", "16000", "--report", str(out)]) == 0
        return Report.read(out)

    def test_settings_file_bills_the_replay(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "cheap.json"
        path.write_text(json.dumps({**CHEAP, "recorded_compactions": "keep"}), encoding="utf-8")
        default = self._replay(tmp_path, "--preset", "minicode")
        cheap = self._replay(tmp_path, "--preset", "minicode", "--settings", str(path))
        assert cheap.total_cost < default.total_cost and cheap.settings["pricing"]["input_per_mtok"] == 0.5
        assert cheap.recorded_compactions_mode == "keep" and "replay" not in cheap.config
        # --recorded-compactions still wins over the file.
        undone = self._replay(tmp_path, "--preset", "minicode", "--settings", str(path), "--recorded-compactions", "undo")
        assert undone.recorded_compactions_mode == "undo" and undone.total_cost == cheap.total_cost

    def test_an_old_config_with_a_replay_section_works_and_says_so(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        old = tmp_path / "old.json"
        old.write_text(json.dumps({"label": "mine", "replay": CHEAP}), encoding="utf-8")
        report = self._replay(tmp_path, "--config", str(old))
        err = capsys.readouterr().err
        assert "note: " in err and "'replay' section" in err and "Traceback" not in err
        assert report.settings["pricing"]["input_per_mtok"] == 0.5 and report.config["label"] == "mine"

    @pytest.mark.parametrize("text, message", [('{"cache": {"ttl_seconds": 7}}', "cache.ttl_seconds"), ("{not json", "not valid json"),
                                               (None, "cannot read replay settings")], ids=["bad-value", "bad-json", "missing"])
    def test_bad_settings_file_exits_2_with_one_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, message: str) -> None:
        path = tmp_path / "s.json"
        if text is not None:
            path.write_text(text, encoding="utf-8")
        for command in (["replay", str(SMALL), "--preset", "minicode", "--report", str(tmp_path / "r.json")],
                        ["compare", str(SMALL), "--preset", "minicode", "--out", str(tmp_path / "t.csv")]):
            assert main([*command, "--settings", str(path)]) == 2
            assert message in _one_error_line(capsys)
        assert not (tmp_path / "r.json").exists()

    def test_compare_bills_every_config_with_the_one_settings(self, tmp_path: Path) -> None:
        path = tmp_path / "cheap.toml"
        path.write_text('[pricing]\nmodel = ""\ninput_per_mtok = 0.5\noutput_per_mtok = 1.0\ncache_write_per_mtok = 0.5\ncache_read_per_mtok = 0.05\n',
                        encoding="utf-8")
        base = ["compare", str(SMALL), "--preset", "minicode", "--preset", "mewcode", "--window", "16000", "--processes", "1"]
        assert main([*base, "--out", str(tmp_path / "a.csv")]) == 0
        assert main([*base, "--settings", str(path), "--out", str(tmp_path / "b.csv")]) == 0
        a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
        assert (b["cost"] < a["cost"]).all() and list(b["peak_sent"]) == list(a["peak_sent"])


class TestCompare:
    def test_an_evaluation_output_compares_every_instance_and_says_so(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from tests.formats.test_sessions import _output, _record

        path = _output(tmp_path, [_record("a-1", "fix a"), _record("b-2", "fix b"), _record("c-3", "fix c")])
        assert main(["compare", str(path), "--preset", "minicode", "--processes", "1", "--out", str(tmp_path / "t.csv")]) == 0
        captured = capsys.readouterr()
        assert "3 transcript(s) x 1 config(s): 3 row(s)" in captured.out
        assert captured.err.count("note: ") == 1 and "holds 3 sessions (an OpenHands evaluation output.jsonl)" in captured.err
        assert list(pd.read_csv(tmp_path / "t.csv")["transcript"]) == [f"{path} [{i}]" for i in ("a-1", "b-2", "c-3")]

    def test_folder_to_csv(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        folder = tmp_path / "in"
        folder.mkdir()
        for src in (SMALL, ERRORS):
            (folder / src.name).write_bytes(src.read_bytes())
        (folder / "junk.jsonl").write_text("not json at all\n", encoding="utf-8")
        cfg = tmp_path / "tight.toml"
        cfg.write_text('label = "tight"\nwindow = 12000\n', encoding="utf-8")
        rc = main(["compare", str(folder), "--preset", "minicode", "--preset", "mewcode", "--config", str(cfg),
                   "--window", "30000", "--processes", "2", "--out", str(tmp_path / "TABLE.csv")])
        assert rc == 0
        out = capsys.readouterr().out
        assert "2 transcript(s) x 3 config(s): 6 row(s)" in out
        # One line for the file, naming every config it failed under (the error is the same for all).
        assert out.count("skipped: junk.jsonl") == 1 and "skipped: junk.jsonl [minicode, mewcode, tight]: " in out
        table = pd.read_csv(tmp_path / "TABLE.csv")
        assert sorted(set(table["config"])) == ["mewcode", "minicode", "tight"]
        assert set(table["window"]) == {30_000}

    def test_single_file_to_json(self, tmp_path: Path) -> None:
        assert main(["compare", str(SMALL), "--preset", "codex", "--processes", "1", "--out", str(tmp_path / "t.json")]) == 0
        data = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
        assert [r["config"] for r in data["rows"]] == ["codex"]

    @pytest.mark.parametrize(
        "args, message",
        [
            (["compare", str(SMALL), "--out", "t.csv"], "--preset or --config"),
            (["compare", str(SMALL), "--preset", "minicode", "--out", "t.xlsx"], ".csv"),
            (["compare", "nowhere", "--preset", "minicode", "--out", "t.csv"], "no such"),
            (["compare", str(SMALL), "--preset", "minicode", "--processes", "0", "--out", "t.csv"], ">= 1"),
        ],
        ids=["no-config", "bad-extension", "missing-path", "zero-processes"],
    )
    def test_bad_input_exits_2_with_one_line(self, args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
        monkeypatch.chdir(tmp_path)
        assert main(args) == 2
        assert message in _one_error_line(capsys)
