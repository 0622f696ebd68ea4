"""``lab.cli.settings``: which replay settings a command runs with, and the note an old config file gets."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lab.cli.settings import run_inputs
from lab.core.presets import preset
from lab.errors import ConfigError


def _args(**kw: object) -> argparse.Namespace:
    return argparse.Namespace(**{"config": None, "preset": "minicode", "settings": None, "recorded_compactions": None, **kw})


@pytest.fixture
def old(tmp_path: Path) -> Path:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"label": "old", "replay": {"seconds_per_request": 7, "recorded_compactions": "keep"}}), encoding="utf-8")
    return path


def test_a_preset_runs_with_the_default_settings() -> None:
    cfg, settings = run_inputs(_args())
    assert cfg == preset("minicode") and settings.seconds_per_request == 30 and settings.recorded_compactions == "undo"


def test_an_old_files_section_is_used_and_noted(old: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, settings = run_inputs(_args(config=str(old)))
    assert cfg.label == "old" and settings.seconds_per_request == 7
    assert capsys.readouterr().err.startswith(f"note: {old}: replay settings moved out of the agent config")


def test_settings_file_wins_over_the_section_and_the_flag_over_both(old: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("seconds_per_request = 3.0\n", encoding="utf-8")
    _, settings = run_inputs(_args(config=str(old), settings=str(path)))
    assert settings.seconds_per_request == 3.0 and settings.recorded_compactions == "undo"
    _, settings = run_inputs(_args(config=str(old), recorded_compactions="undo"))
    assert settings.seconds_per_request == 7 and settings.recorded_compactions == "undo"


def test_a_bad_settings_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("use_timestamps: maybe-later\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="use_timestamps"):
        run_inputs(_args(settings=str(path)))
