"""Frozen config values (lab.core.frozen): refused in place, changed by copy, fingerprinted once."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from lab.core.config import CompactionConfig, with_value, with_values
from lab.core.presets import preset
from lab.core.stages.watermark import WatermarkConfig
from lab.errors import ConfigError
from lab.replayer import replay
from lab.replayer.report import Report
from lab.replayer.settings import ReplaySettings
from tests.builders import session


class TestFrozen:
    @pytest.mark.parametrize(
        ("value", "path"),
        [(CompactionConfig(), "window"), (WatermarkConfig(), "ratio"), (ReplaySettings(), "hidden_tokens")],
        ids=["config", "stage-config", "replay-settings"],
    )
    def test_an_assignment_is_refused(self, value: object, path: str) -> None:
        with pytest.raises(ValidationError, match="frozen"):
            setattr(value, path, 1)

    def test_an_unknown_field_is_refused(self) -> None:
        with pytest.raises(ValidationError, match="Extra inputs"):
            CompactionConfig.model_validate({"windw": 1000})


class TestWithValue:
    def test_the_copy_changes_one_field_and_shares_the_other_sections(self) -> None:
        cfg = preset("minicode")
        moved = with_value(cfg, "watermark.ratio", 0.7)
        assert moved.watermark.ratio == 0.7 and cfg.watermark.ratio == 0.85
        assert moved.spill is cfg.spill and moved.summary is cfg.summary
        assert moved.watermark.model_dump(exclude={"ratio"}) == cfg.watermark.model_dump(exclude={"ratio"})

    def test_the_value_is_validated_and_the_field_named(self) -> None:
        with pytest.raises(ConfigError, match=r"^field watermark\.ratio: .*less than or equal to 1"):
            with_value(preset("minicode"), "watermark.ratio", 5.0)
        with pytest.raises(ConfigError, match=r"watermark\.nope: no such field"):
            with_value(preset("minicode"), "watermark.nope", 1)
        with pytest.raises(ConfigError, match="window"):
            with_value(preset("minicode"), "window", 5)

    def test_a_field_validator_still_runs(self) -> None:
        # dedup.cwd has its own check: it is run on the section that holds the field.
        with pytest.raises(ConfigError, match=r"dedup\.cwd"):
            with_value(CompactionConfig(), "dedup.cwd", "relative/dir")

    def test_several_paths_in_order(self) -> None:
        cfg = with_values(CompactionConfig(), {"window": 32_000, "summary.enabled": False, "watermark.ratio": 0.5})
        assert (cfg.window, cfg.summary.enabled, cfg.watermark.ratio) == (32_000, False, 0.5)

    def test_the_result_equals_a_full_validation(self) -> None:
        cfg = with_values(preset("lab"), {"window": 64_000, "spill.threshold": 9000})
        assert cfg == CompactionConfig.model_validate(cfg.model_dump())


class TestFingerprint:
    def test_equal_values_share_it_and_a_change_moves_it(self) -> None:
        a, b = preset("minicode"), CompactionConfig.model_validate(preset("minicode").model_dump())
        assert a is not b and a.fingerprint == b.fingerprint
        assert with_value(a, "watermark.ratio", 0.7).fingerprint != a.fingerprint

    def test_a_changed_copy_never_keeps_the_old_one(self) -> None:
        cfg = preset("mewcode")
        old = cfg.fingerprint  # cached on the instance, which model_copy copies
        moved = cfg.model_copy(update={"window": 64_000})
        assert moved.fingerprint != old and moved.json_data()["window"] == 64_000
        assert cfg.model_copy().fingerprint == old

    def test_json_data_is_the_dump_and_a_private_copy(self) -> None:
        cfg = preset("lab")
        data = cfg.json_data()
        assert data == cfg.model_dump(mode="json")
        data["window"] = 1
        assert cfg.json_data()["window"] == cfg.window

    def test_the_gate_free_fingerprint_ignores_the_gate_fields_alone(self) -> None:
        cfg = preset("mewcode")
        for path, value in (("watermark.ratio", 0.5), ("watermark.safety_margin", 1), ("watermark.min_window", 0), ("watermark.summary_reserve", 7)):
            assert with_value(cfg, path, value).gate_free_fingerprint == cfg.gate_free_fingerprint, path
        for path, value in (("watermark.mode", "ratio"), ("window", 64_000), ("spill.threshold", 9000)):
            assert with_value(cfg, path, value).gate_free_fingerprint != cfg.gate_free_fingerprint, path
        assert set(WatermarkConfig.GATE_FIELDS) <= set(WatermarkConfig.model_fields)


class TestReportConfig:
    def test_a_fresh_report_keeps_the_config_it_ran(self) -> None:
        cfg = with_value(preset("minicode"), "window", 8000)
        report = replay(session(6, 2000), cfg)
        assert report.compaction_config is cfg
        assert report.config == cfg.model_dump(mode="json")

    def test_a_report_read_back_parses_its_config_once(self) -> None:
        report = replay(session(6, 2000), "minicode")
        back = Report.from_dict(json.loads(report.to_json()))
        assert back == report and back.to_dict() == report.to_dict()
        assert back.compaction_config == report.compaction_config
        assert back.compaction_config is back.compaction_config
