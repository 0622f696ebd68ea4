"""The headless front end: each subcommand works, and bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.cli import main
from tests.conftest import ROOT, SAMPLES

SAMPLE = SAMPLES / "generated-small.lab.json"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


class TestImport:
    def test_writes_lab_json_and_prints_summary(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "out.json"
        code, stdout, _ = _run(["import", str(SAMPLE), "--out", str(out), "--counter", "minicode"], capsys)
        assert code == 0
        data = json.loads(out.read_text())
        assert data["lab_transcript"] == 1
        assert "messages:" in stdout and "tool calls:" in stdout
        assert "tokens [minicode]:" in stdout and "skipped records:" in stdout

    def test_claude_code_sample_reports_skipped_records(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        src = next(p for p in SAMPLES.glob("*.jsonl") if "claude" in p.name and "generated" not in p.name)
        code, stdout, _ = _run(["import", str(src), "--out", str(tmp_path / "o.json"), "--counter", "chars/3.5"], capsys)
        assert code == 0
        skipped_line = next(line for line in stdout.splitlines() if line.startswith("skipped records:"))
        assert skipped_line != "skipped records: none"


class TestExportAndTokens:
    @pytest.mark.parametrize("to", ["anthropic", "openai"])
    def test_export_shapes(self, to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        out = tmp_path / "req.json"
        code, _, _ = _run(["export", str(SAMPLE), "--to", to, "--out", str(out)], capsys)
        assert code == 0
        body = json.loads(out.read_text())
        assert body["messages"]
        if to == "openai":
            assert any(m["role"] == "tool" for m in body["messages"])
        else:
            assert all(m["role"] in ("user", "assistant") for m in body["messages"])

    def test_tokens_json(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, stdout, _ = _run(["tokens", str(SAMPLE), "--counter", "minicode", "--counter", "o200k", "--json"], capsys)
        assert code == 0
        data = json.loads(stdout)
        assert set(data["tokens"]) == {"minicode", "o200k"}
        assert all(v > 0 for v in data["tokens"].values())
        assert 0 < data["tool_output_share"]["o200k"] < 1


class TestPresetsAndConfig:
    def test_presets_listed_as_modelled_on(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, stdout, _ = _run(["presets"], capsys)
        assert code == 0
        for name in ("minicode", "mewcode", "codex", "openhands-masking", "claude-code", "anthropic-context-editing"):
            assert name in stdout
        assert "modelled on" in stdout.lower()

    @pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
    def test_config_round_trips_through_the_cli(self, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.core.config import load_config
        from lab.core.presets import preset

        code, stdout, _ = _run(["config", "--preset", "mewcode", "--format", fmt], capsys)
        assert code == 0
        path = tmp_path / f"c.{fmt}"
        path.write_text(stdout)
        assert load_config(path) == preset("mewcode")


class TestBadInput:
    @pytest.mark.parametrize(
        "args",
        [
            ["import", "/nonexistent/x.jsonl", "--out", "/tmp/x.json"],
            ["tokens", "BAD_FILE"],
            ["tokens", "EMPTY_FILE"],
            ["export", "BAD_FILE", "--to", "openai", "--out", "OUT"],
            ["config", "--preset", "no-such-preset"],
            ["tokens", "SAMPLE", "--counter", "no-such-counter"],
            ["no-such-command"],
            ["import"],
        ],
        ids=["missing-path", "not-json", "empty", "export-bad", "unknown-preset", "unknown-counter", "unknown-command", "missing-arg"],
    )
    def test_exit_2_with_one_line(self, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n{not json\n')
        empty = tmp_path / "empty.json"
        empty.write_text("")
        subst = {"BAD_FILE": str(bad), "EMPTY_FILE": str(empty), "OUT": str(tmp_path / "o.json"), "SAMPLE": str(SAMPLE)}
        code, stdout, stderr = _run([subst.get(a, a) for a in args], capsys)
        assert code == 2
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")
        assert "Traceback" not in stderr

    def test_error_names_file_and_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        bad = tmp_path / "bad.jsonl"
        good = '{"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s", "isSidechain": false, "message": {"role": "user", "content": "hi"}}'
        bad.write_text(good + "\n{not json}\n" + good + "\n")
        code, _, stderr = _run(["tokens", str(bad)], capsys)
        assert code == 2
        assert str(bad) in stderr and "line 2" in stderr


def test_python_dash_m_lab_runs_as_a_module() -> None:
    proc = subprocess.run([sys.executable, "-m", "lab", "tokens", "/nonexistent"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1
