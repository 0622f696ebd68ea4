"""The dispatch (``lab.cli.main``): bad input is one line and exit 2 whatever the verb, a failed write leaves nothing, ``python -m lab`` runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import SAMPLE, run as _run
from tests.conftest import ROOT


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


class TestFailedWritesLeaveNothing:
    @pytest.mark.parametrize(
        "args",
        [
            ["import", "SAMPLE", "--out", "DIR"],
            ["export", "SAMPLE", "--to", "anthropic", "--out", "DIR"],
            ["export", "SAMPLE", "--to", "openai", "--out", "DIR"],
            ["export", "SAMPLE", "--to", "lab", "--out", "DIR"],
            ["replay", "SAMPLE", "--preset", "minicode", "--window", "32000", "--report", "DIR"],
            ["replay", "SAMPLE", "--preset", "minicode", "--window", "32000", "--report", "REPORT", "--dump-requests", "DIR"],
            ["bench", "--section", "tokens", "--json", "DIR"],
        ],
        ids=["import", "export-anthropic", "export-openai", "export-lab", "replay-report", "replay-requests", "bench-json"],
    )
    def test_out_is_a_folder(self, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        # Without a corpus the bench's tokens section is skipped at once and only the JSON is written.
        monkeypatch.delenv("LAB_CORPUS", raising=False)
        work = tmp_path / "work"
        target = work / "out"
        target.mkdir(parents=True)
        subst = {"SAMPLE": str(SAMPLE), "DIR": str(target), "REPORT": str(work / "report.json")}
        code, _, stderr = _run([subst.get(a, a) for a in args], capsys)
        assert code == 2
        # A replay may warn about its config first; the failure itself is one line, the last.
        errors = [line for line in stderr.strip().splitlines() if not line.startswith("warning: ")]
        assert len(errors) == 1 and errors[0].startswith("error: ")
        # Nothing beside the folder but what the command was asked to write (a later `compare .` reads them all).
        leftovers = sorted(p.name for p in work.iterdir() if p.name not in ("out", "report.json"))
        assert leftovers == []
        assert list(target.iterdir()) == []

    def test_a_failure_while_writing_removes_the_temp_file(self, tmp_path: Path) -> None:
        from lab.atomic import atomic_writer

        target = tmp_path / "out.json"
        target.write_text("old")
        with pytest.raises(RuntimeError, match="mid-write"), atomic_writer(target) as fh:
            fh.write("half")
            assert [p.name for p in tmp_path.iterdir() if p.name != "out.json"]  # the temp file exists here
            raise RuntimeError("mid-write")
        assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
        assert target.read_text() == "old"


def test_python_dash_m_lab_runs_as_a_module() -> None:
    proc = subprocess.run([sys.executable, "-m", "lab", "tokens", "/nonexistent"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1


# --- secrets and lone surrogates on the write side (issue 27, part 4) ---------------------------------------
