"""``presets`` and ``config`` (``lab.cli.configs``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import run as _run


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

    def test_config_of_an_old_file_prints_the_agent_config_and_a_note(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:

        old = tmp_path / "old.json"
        old.write_text(json.dumps({"window": 64000, "replay": {"seconds_per_request": 5}}), encoding="utf-8")
        code, stdout, stderr = _run(["config", "--config", str(old)], capsys)
        assert code == 0 and "replay" not in json.loads(stdout) and json.loads(stdout)["window"] == 64000
        assert stderr.startswith("note: ") and "'replay' section" in stderr
