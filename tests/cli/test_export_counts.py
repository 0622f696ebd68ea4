"""``lab export`` says why it wrote fewer (or more) messages than ``lab import`` counted (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli.main import main
from lab.formats import load
from tests.conftest import SAMPLES

SMALL = SAMPLES / "generated-small.lab.json"


def _export(to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["export", str(SMALL), "--to", to, "--out", str(tmp_path / f"body.{to}.json")]) == 0
    return capsys.readouterr().out.splitlines()[0]


def test_anthropic_export_says_the_system_prompt_moved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    read = len(load(SMALL).messages)
    line = _export("anthropic", tmp_path, capsys)
    assert line.startswith(f"exported {read - 1} messages to anthropic shape")
    assert line.endswith(f"(of the {read} imported: 1 system message(s) moved to the body's system field)")


def test_openai_export_says_tool_results_are_their_own_messages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    read = len(load(SMALL).messages)
    line = _export("openai", tmp_path, capsys)
    count = int(line.split()[1])
    assert count > read
    assert f"(of the {read} imported: net {count - read} more as tool results are messages of their own" in line


def test_lab_export_keeps_every_message_and_says_nothing_more(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    read = len(load(SMALL).messages)
    assert _export("lab", tmp_path, capsys) == f"exported {read} messages to lab shape -> {tmp_path / 'body.lab.json'}"
