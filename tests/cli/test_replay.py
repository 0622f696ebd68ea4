"""``python -m lab replay`` and ``python -m lab compare``, run in-process through ``lab.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from lab.cli.main import main
from lab.replayer import Report
from tests.cli import run as _run
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

    def test_the_proposed_window_is_the_apps(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """``--window proposed`` replays at the window the app applies on load, its hidden part counted as the app does."""
        from lab.formats import load
        from lab.replayer import propose_window, replay
        from lab.replayer.settings import ReplaySettings
        from lab.replayer.window import settings_for

        session = SAMPLES / "generated-claude-code.jsonl"
        proposal = propose_window(load(session))
        assert proposal.window is not None and proposal.hidden > 0
        assert main(["replay", str(session), "--preset", "minicode", "--window", "proposed", "--report", str(tmp_path / "r.json")]) == 0
        assert capsys.readouterr().out.startswith(f"window: {proposal.reason}\n")
        got = Report.read(tmp_path / "r.json")
        want = replay(load(session), "minicode", window=proposal.window, settings=settings_for(proposal, ReplaySettings()))
        assert (got.window, got.hidden_tokens, got.total_cost) == (want.window, want.hidden_tokens, want.total_cost)
        assert got.hidden_tokens == proposal.hidden and got.summary_calls >= 1
        # No proposal (a session too small for one): the config's own window, and the reason says so.
        assert main(["replay", str(SMALL), "--preset", "minicode", "--window", "proposed", "--report", str(tmp_path / "s.json")]) == 0
        assert capsys.readouterr().out.startswith("window: no window proposed")
        assert Report.read(tmp_path / "s.json").window == 200_000

    def test_report_requests_and_summary(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        rc = main(["replay", str(SMALL), "--preset", "minicode", "--window", "16000", "--spill-dir", str(tmp_path / "spill"),
                   "--report", str(tmp_path / "REPORT.json"), "--dump-requests", str(tmp_path / "REQUESTS.jsonl")])
        assert rc == 0
        out = capsys.readouterr().out
        for text in ("requests: 40", "peak sent", "compactions:", "cost:", "cache-hit ratio:", "retention score:"):
            assert text in out, text
        report = Report.read(tmp_path / "REPORT.json")
        assert report.requests == 40 and report.window == 16_000 and report.config["label"] == "minicode"
        # Content recall, with what it rests on, beside the names score.
        names = "n/a" if report.needed_later_recall is None else f"{report.needed_later_recall:.3f}"
        assert f"({report.content_needed} needed; names recall {names})" in out and "content recall " in out
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

    def test_requests_in_responses_shape(self, tmp_path: Path) -> None:
        from tests.wire_rules import responses_wire_problems

        rc = main(["replay", str(ERRORS), "--preset", "minicode", "--window", "20000", "--report", str(tmp_path / "r.json"),
                   "--dump-requests", str(tmp_path / "q.jsonl"), "--to", "responses"])
        assert rc == 0
        lines = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text(encoding="utf-8").splitlines()]
        assert lines and all(set(line["request"]) <= {"instructions", "input", "tools"} for line in lines)
        assert any(item["type"] == "function_call_output" for item in lines[-1]["request"]["input"])
        assert [p for line in lines for p in responses_wire_problems(line["request"], strict=True, shape=True)] == []

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
            (["replay", str(SMALL), "--preset", "minicode", "--window", "lots"], "expected a whole number or 'proposed', got 'lots'"),
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
        # Every file is in the table: the unreadable one as error rows, one per config, with nothing measured.
        assert "2 of 3 compared; 1 unreadable: junk.jsonl (" in out
        table = pd.read_csv(tmp_path / "TABLE.csv")
        assert sorted(set(table["config"])) == ["mewcode", "minicode", "tight"]
        ok, bad = table[table["error"].isna()], table[table["error"].notna()]
        assert set(ok["window"]) == {30_000} and len(ok) == 6
        assert list(bad["transcript"]) == ["junk.jsonl"] * 3 and bad["window"].isna().all()

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


# --- secrets, interrupted runs and lone surrogates (issue 27, part 4) -------------------------------------

SURROGATES = Path(__file__).parents[1] / "formats" / "fixtures" / "surrogates" / "lone-surrogates.anthropic.json"
# Built from pieces, so the test file holds no string a secret scanner would flag.
ANT_KEY = "sk-" + "ant-api03-" + "Q8x2Lm4Np6Rt8Vx0Zb2Dc4Fe6Hg8Jk0Ml2Nn4Pp6"


def _secret_session(path: Path) -> Path:
    """A key in the task, and in a tool result big enough to spill."""
    big = f"export ANTHROPIC_API_KEY={ANT_KEY}\n" + "".join(f"line {i}: nothing secret here\n" for i in range(400))
    body = {
        "system": "You are a coding agent.",
        "messages": [
            {"role": "user", "content": f"My key is {ANT_KEY}; read .env and fix the deploy"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "cat .env"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": big}]},
            {"role": "assistant", "content": "Fixed."},
        ],
    }
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


class TestReplayWrites:
    def test_report_dump_and_spill_are_redacted(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src = _secret_session(tmp_path / "s.json")
        rc = main(["replay", str(src), "--preset", "minicode", "--spill-dir", str(tmp_path / "spill"),
                   "--report", str(tmp_path / "r.json"), "--dump-requests", str(tmp_path / "q.jsonl")])
        err = capsys.readouterr().err
        assert rc == 0
        spilled = list((tmp_path / "spill").glob("*/tool-results/*.txt"))
        assert spilled
        for path in [tmp_path / "r.json", tmp_path / "q.jsonl", *spilled]:
            assert ANT_KEY.encode() not in path.read_bytes(), path.name
        assert "[REDACTED:anthropic-key]" in (tmp_path / "q.jsonl").read_text(encoding="utf-8")
        assert "[REDACTED:anthropic-key]" in spilled[0].read_text(encoding="utf-8")
        assert "note: redacted 1 secret (anthropic-key 1) in " in err

    def test_no_redact_keeps_them_everywhere(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src = _secret_session(tmp_path / "s.json")
        rc = main(["replay", str(src), "--preset", "minicode", "--spill-dir", str(tmp_path / "spill"), "--no-redact",
                   "--report", str(tmp_path / "r.json"), "--dump-requests", str(tmp_path / "q.jsonl")])
        assert rc == 0 and "redacted" not in capsys.readouterr().err
        assert ANT_KEY in (tmp_path / "q.jsonl").read_text(encoding="utf-8")
        assert any(ANT_KEY in p.read_text(encoding="utf-8") for p in (tmp_path / "spill").glob("*/tool-results/*.txt"))

    def test_report_names_its_dump_and_run(self, tmp_path: Path) -> None:
        import hashlib

        report, dump = tmp_path / "r.json", tmp_path / "q.jsonl"
        assert main(["replay", str(SMALL), "--preset", "minicode", "--window", "16000", "--report", str(report), "--dump-requests", str(dump)]) == 0
        run = json.loads(report.read_text(encoding="utf-8"))["run"]
        lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
        assert run["requests"] == str(dump) and run["requests_count"] == len(lines) == Report.read(report).requests
        assert run["requests_sha256"] == hashlib.sha256(dump.read_bytes()).hexdigest()
        assert {line["run"] for line in lines} == {run["id"]}
        # A second run without a dump: its report says so, and a different id from the dump left beside it.
        assert main(["replay", str(SMALL), "--preset", "mewcode", "--window", "16000", "--report", str(report)]) == 0
        again = json.loads(report.read_text(encoding="utf-8"))["run"]
        assert again["requests"] is None and again["id"] != run["id"] and "requests_sha256" not in again

    def test_stale_temp_dumps_of_dead_runs_are_removed(self, tmp_path: Path) -> None:
        import subprocess
        import sys

        import lab.atomic as atomic

        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait(timeout=30)
        stale = tmp_path / f".q.jsonl.{proc.pid}-{atomic._HOST}-0badcafe.tmp"
        stale.write_text("half a dump", encoding="utf-8")
        assert main(["replay", str(SMALL), "--preset", "minicode", "--window", "16000",
                     "--report", str(tmp_path / "r.json"), "--dump-requests", str(tmp_path / "q.jsonl")]) == 0
        assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl", "r.json"]

    def test_lone_surrogates_write_valid_utf8(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        for to in ("anthropic", "openai"):
            rc = main(["replay", str(SURROGATES), "--preset", "minicode", "--report", str(tmp_path / "r.json"),
                       "--dump-requests", str(tmp_path / "q.jsonl"), "--to", to])
            assert rc == 0 and "Traceback" not in capsys.readouterr().err
            for name in ("r.json", "q.jsonl"):
                text = (tmp_path / name).read_bytes().decode("utf-8")  # strict
                assert "\ud800" not in text
            assert "\ufffd" in (tmp_path / "q.jsonl").read_text(encoding="utf-8")
            Report.read(tmp_path / "r.json")

    def test_report_and_dump_of_a_python_transcript_with_surrogates(self, tmp_path: Path) -> None:
        # Strings the reader never saw (a Transcript made in Python): the writers alone must cope.
        from lab.cli.replay import write_requests
        from lab.core.messages import Transcript
        from lab.replayer import replay
        from tests.builders import call_and_result, system, user

        t = Transcript(messages=[system(), user("list \ud800"), *call_and_result("Bash", "a\udfff.txt\n" * 3, tool_id="toolu_\ud800", command="ls")])
        report = replay(t, "minicode", retention_each=True)
        report.write(tmp_path / "r.json")
        assert write_requests(report, tmp_path / "q.jsonl", "openai") == len(report.rows)
        for name in ("r.json", "q.jsonl"):
            assert "\ufffd" in (tmp_path / name).read_bytes().decode("utf-8"), name


# --- every verb says what the import warned about; a folder compare lists every file ----------------------------------------

_CHAT = [
    {"role": "user", "content": "fix the bug"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
    {"role": "assistant", "content": "done"},
]


def _cut_chat(path: Path) -> Path:
    """An OpenAI chat log still being written: four whole lines, then one cut off mid-record; no timestamps."""
    path.write_text("".join(json.dumps(rec) + "\n" for rec in _CHAT) + '{"role": "user", "con', encoding="utf-8")
    return path


class TestImportWarnings:
    def test_replay_prints_the_import_warnings_once_on_stderr(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.replayer.explain import CLOCK_WARNING

        src = _cut_chat(tmp_path / "chat.jsonl")
        assert main(["replay", str(src), "--preset", "minicode", "--report", str(tmp_path / "r.json")]) == 0
        out, err = capsys.readouterr()
        cut = [line for line in err.splitlines() if "last line cut off" in line]
        assert len(cut) == 1 and cut[0].startswith(f"warning: {src}: line 5: ")
        assert f"warning: {src}: {CLOCK_WARNING}" in err.splitlines()
        assert "last line cut off" not in out

    def test_compare_prints_each_files_import_warnings(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        folder = tmp_path / "in"
        folder.mkdir()
        _cut_chat(folder / "chat.jsonl")
        assert main(["compare", str(folder), "--preset", "minicode", "--preset", "mewcode", "--processes", "1", "--out", str(tmp_path / "t.csv")]) == 0
        err = capsys.readouterr().err.splitlines()
        # Once per file, not once per config.
        assert len([line for line in err if line.startswith("warning: chat.jsonl: line 5: ") and "cut off" in line]) == 1


class TestCompareTellsAll:
    def test_strict_exits_2_naming_the_unreadable_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        folder = tmp_path / "in"
        folder.mkdir()
        (folder / SMALL.name).write_bytes(SMALL.read_bytes())
        (folder / "junk.jsonl").write_text("not json at all\n", encoding="utf-8")
        args = ["compare", str(folder), "--preset", "minicode", "--processes", "1", "--out", str(tmp_path / "t.csv")]
        assert main([*args, "--strict"]) == 2
        line = _one_error_line(capsys)
        assert "1 of 2 transcript(s) unreadable (strict): junk.jsonl (" in line
        assert not (tmp_path / "t.csv").exists()
        assert main(args) == 0
        assert "1 of 2 compared; 1 unreadable: junk.jsonl (" in capsys.readouterr().out

    def test_each_line_shows_overflows_and_failures_and_the_constraint_every_config_broke(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        rc = main(["compare", str(SMALL), "--preset", "minicode", "--preset", "mewcode", "--window", "1000", "--processes", "1",
                   "--out", str(tmp_path / "t.csv")])
        assert rc == 0
        out = capsys.readouterr().out.splitlines()
        table = pd.read_csv(tmp_path / "t.csv")
        assert (table["failures"] > 0).all()
        for _, r in table.iterrows():
            [line] = [x for x in out if x.startswith(f"  {r['transcript']} | {r['config']}:")]
            assert line.endswith(f"invalid {r['invalid_requests']}, overflows {r['overflows']} (failed {r['failures']})")
        [why] = [x for x in out if x.startswith("infeasible: ")]
        assert "all 2 config(s) broke one constraint, failed requests" in why and "1,000-token window" in why and "a window of at least" in why

    def test_a_config_that_keeps_the_constraints_prints_no_infeasible_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["compare", str(SMALL), "--preset", "minicode", "--processes", "1", "--out", str(tmp_path / "t.csv")]) == 0
        assert "infeasible:" not in capsys.readouterr().out

    def test_the_config_warnings_replay_prints_are_printed_once_per_config(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.core.diagnostics import config_warnings
        from lab.replayer import resolve_config

        # MewCode at 40k: its tail covers the auto threshold (what replay warns about).
        rc = main(["compare", str(SMALL), "--preset", "mewcode", "--preset", "minicode", "--window", "40000", "--processes", "1",
                   "--out", str(tmp_path / "t.csv")])
        assert rc == 0
        err = capsys.readouterr().err.splitlines()
        expected = config_warnings(resolve_config("mewcode", 40_000))
        assert expected and [line for line in err if line.startswith("warning: mewcode: ")] == [f"warning: mewcode: {w}" for w in expected]
        mini = config_warnings(resolve_config("minicode", 40_000))
        assert [line for line in err if line.startswith("warning: minicode: ")] == [f"warning: minicode: {w}" for w in mini]


def test_replay_without_report_prints_the_summary_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["replay", str(SMALL), "--preset", "minicode", "--window", "16000"]) == 0
    out = capsys.readouterr().out
    assert "requests:" in out and "cost:" in out and "report ->" not in out
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_compare_takes_several_paths_and_says_what_its_columns_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.csv"
    assert main(["compare", str(SMALL), str(ERRORS), "--preset", "minicode", "--processes", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "compared 2 transcript(s) x 1 config(s)" in printed
    assert "legend: peak = most tokens sent in one request" in printed and " tokens, cost $" in printed
    assert len(pd.read_csv(out)) == 2
    assert main(["compare", str(SMALL), str(ERRORS), "--session", "x", "--preset", "lab", "--out", str(out)]) == 2


class TestSummaryInOneVocabulary:
    """Issue 31 §2, §4, §6: the replay summary names its prices, counts summaries apart from spills, explains invalid requests."""

    def test_cost_names_the_row_its_prices_and_why(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.replayer.prices import cost_text

        assert main(["replay", str(SMALL), "--preset", "minicode", "--report", str(tmp_path / "r.json")]) == 0
        out = capsys.readouterr().out
        report = Report.read(tmp_path / "r.json")
        assert report.pricing_source == "session"
        cost = next(line for line in out.splitlines() if line.startswith("cost: "))
        assert cost.startswith(f"cost: {cost_text(report.total_cost, report.settings)} with compaction")
        assert f"({report.settings['pricing']['model']}: $" in cost and "per MTok in/out" in cost
        assert f"priced at the session's own model ({report.meta['model']})" in cost

    def test_chosen_prices_are_billed_and_said(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        settings = tmp_path / "s.json"
        settings.write_text('{"pricing": {"model": "GPT-4.1", "input_per_mtok": 2, "output_per_mtok": 8, '
                            '"cache_write_per_mtok": 2, "cache_read_per_mtok": 0.5}}', encoding="utf-8")
        assert main(["replay", str(SMALL), "--preset", "minicode", "--settings", str(settings)]) == 0
        cost = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("cost: "))
        assert "(GPT-4.1: $2/$8 per MTok in/out, cache write $2, cache read $0.50)" in cost
        assert "priced at the replay settings" in cost

    def test_compactions_are_counted_by_kind_in_words(self, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.replayer import replay
        from lab.replayer.report import describe_compactions

        assert main(["replay", str(SMALL), "--preset", "minicode"]) == 0
        out = capsys.readouterr().out
        report = replay(SMALL, "minicode")
        kinds = report.compactions_by_kind
        assert sum(kinds.values()) == sum(report.compactions_by_strategy.values()) > 0
        line = next(x for x in out.splitlines() if x.startswith("compactions: "))
        assert line.startswith(f"compactions: {describe_compactions(kinds)};")
        # Summaries are always said, even when none were written; strategy names never are.
        assert "summar" in line and "tool_budget" not in line and "{" not in line
        # The raw-history peak says which counter counted it.
        assert f"raw history peak {report.peak_raw:,} tokens by the {report.counter} counter" in out

    def test_invalid_requests_are_printed_with_their_reasons(self, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.cli.replay import _print_summary
        from lab.core.messages import TextBlock
        from lab.replayer import replay
        from tests.builders import assistant, system, user

        blank = assistant("x").model_copy(update={"content": (TextBlock(text="   "),)})
        # repair=False: the source as written, which a provider refuses (the lab's repair would drop the blank block).
        report = replay([system(), user("fix it"), blank, user("go on"), assistant("done")], "minicode", repair=False)
        assert report.invalid_requests > 0
        _print_summary("blank.jsonl", report)
        out = capsys.readouterr().out
        assert f"invalid requests: {report.invalid_requests};" in out
        explained = [x for x in out.splitlines() if x.startswith("  invalid: ")]
        assert explained and any(
            ("empty text block" in x or "empty content" in x or "neither text nor tool calls" in x) and "request" in x for x in explained)


def test_compare_lines_say_where_a_request_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What replay warns about is said on the compare line too: here a window no request fits."""
    out = tmp_path / "t.csv"
    assert main(["compare", str(SMALL), "--preset", "minicode", "--window", "1200", "--processes", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    row = pd.read_csv(out).iloc[0]
    assert row["failures"] > 0
    assert "    first failure: " in printed


class TestCompareRanking:
    @pytest.fixture
    def folder(self, tmp_path: Path) -> Path:
        from lab.formats import dump
        from lab.generator import GeneratorConfig, generate

        d = tmp_path / "sessions"
        d.mkdir()
        for seed in (1, 2, 3):
            dump(generate(GeneratorConfig(seed=seed, requests=10)), to="lab", path=d / f"s{seed}.lab.json")
        return d

    def test_writes_the_ranking_and_marks_identical_configs_not_distinguishable(self, folder: Path, tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]) -> None:
        import pandas as pd

        ranking = tmp_path / "ranking.csv"
        code, out, _ = _run(["compare", str(folder), "--preset", "minicode", "--preset", "minicode", "--preset", "lab", "--window", "4000",
                             "--processes", "1", "--out", str(tmp_path / "t.csv"), "--ranking", str(ranking)], capsys)
        assert code == 0 and f"ranking -> {ranking}" in out
        df = pd.read_csv(ranking)
        assert set(df["config"]) == {"minicode", "minicode#2", "lab"} and {"needed_later_recall", "cost"} <= set(df["objective"])
        assert (df["low"] <= df["mean"] + 1e-12).all() and (df["mean"] <= df["high"] + 1e-12).all()
        # Each config meets 2 others on 3 sessions (cost is measured on every session).
        cost = df[df["objective"] == "cost"]
        assert (cost["wins"] + cost["losses"] + cost["ties"] == 6).all() and (cost["sessions"] == 3).all()
        assert "not distinguishable: minicode and minicode#2" in out or "not distinguishable: minicode#2 and minicode" in out
        assert "cost (lower is better): mean over sessions, 95% bootstrap interval" in out

    def test_a_bad_ranking_extension_exits_2(self, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        code, _, err = _run(["compare", str(folder), "--preset", "minicode", "--out", str(tmp_path / "t.csv"),
                             "--ranking", str(tmp_path / "r.xlsx")], capsys)
        assert code == 2 and err.strip().splitlines()[-1].startswith("error: --ranking must end in .csv, .parquet or .json")
        assert not (tmp_path / "t.csv").exists()
