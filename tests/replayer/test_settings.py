"""Replay settings beside the agent config: old files split with a note, replays billed by the settings, one for every row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import yaml

from lab.core.config import CompactionConfig, load_config, parse_config
from lab.core.messages import Transcript
from lab.core.presets import preset
from lab.errors import ConfigError, MovedSettingsWarning
from lab.fields import inactive_run_fields, run_with_value
from lab.evaluation import compare, run_grid
from lab.replayer import Report, replay
from lab.replayer.settings import (
    MOVED_NOTE,
    ReplaySettings,
    dump_settings,
    load_settings,
    load_split,
    resolve_settings,
    settings_relevance,
    split_config,
)
from lab.core.config import with_values
from tests.builders import session

# Prices no preset default has, so a replay billed by them is told apart from the defaults.
CHEAP = {"pricing": {"model": "", "input_per_mtok": 0.5, "output_per_mtok": 1.0, "cache_write_per_mtok": 0.5, "cache_read_per_mtok": 0.05}}


def _old_file(settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """A config as exported before the split: the agent config plus a ``replay`` section."""
    return {**preset("mewcode").model_dump(mode="json"), "replay": ReplaySettings.model_validate(settings or CHEAP).model_dump(mode="json")}


def _no_none(value: Any) -> Any:
    # TOML has no null; the lab's writer leaves unset optionals out the same way.
    if isinstance(value, dict):
        return {k: _no_none(v) for k, v in value.items() if v is not None}
    return value


class TestOldFiles:
    @pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
    def test_an_old_file_splits_into_config_and_settings_with_a_note(self, tmp_path: Path, fmt: str) -> None:
        path = tmp_path / f"old.{fmt}"
        data = _old_file({**CHEAP, "use_timestamps": False, "seconds_per_request": 12})
        writers = {"json": json.dumps, "yaml": yaml.safe_dump, "toml": lambda d: tomli_w.dumps(_no_none(d))}
        text = writers[fmt](data)
        path.write_text(text, encoding="utf-8")
        cfg, settings, notes = load_split(path)
        assert cfg == preset("mewcode")
        assert settings is not None and settings.pricing.input_per_mtok == 0.5 and settings.seconds_per_request == 12
        assert not settings.use_timestamps
        assert notes == [MOVED_NOTE] and "'replay' section" in notes[0]

    def test_a_new_file_has_no_settings_and_no_note(self) -> None:
        cfg, settings, notes = split_config(preset("minicode").model_dump(mode="json"))
        assert (cfg, settings, notes) == (preset("minicode"), None, [])

    def test_a_bad_old_section_names_the_field_where_the_file_has_it(self) -> None:
        data = _old_file()
        data["replay"]["cache"]["ttl_seconds"] = 7
        with pytest.raises(ConfigError, match=r"replay\.cache\.ttl_seconds"):
            split_config(data)

    def test_load_config_warns_and_drops_the_section(self, tmp_path: Path) -> None:
        path = tmp_path / "old.json"
        path.write_text(json.dumps(_old_file()), encoding="utf-8")
        with pytest.warns(MovedSettingsWarning, match="'replay' section"):
            cfg = load_config(path)
        assert cfg == preset("mewcode") and "replay" not in cfg.model_dump()

    def test_a_config_without_the_section_loads_without_a_warning(self) -> None:
        # pytest turns warnings into errors here: parsing a current config must stay silent.
        assert parse_config({"window": 64_000}).window == 64_000

    def test_the_agent_config_has_no_replay_field(self) -> None:
        with pytest.raises(AttributeError):
            CompactionConfig().replay  # type: ignore[attr-defined]  # noqa: B018 - the access is the test

    def test_an_old_report_loads_its_settings_from_the_config(self) -> None:
        report = replay(session(3, 3000), "minicode", settings=CHEAP)
        old = report.to_dict()
        old["config"] = {**old["config"], "replay": old.pop("settings")}
        back = Report.from_dict(old)
        assert back.settings == report.settings and back.config == report.config


class TestFiles:
    @pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
    def test_settings_round_trip(self, fmt: str) -> None:
        settings = ReplaySettings.model_validate({**CHEAP, "recorded_compactions": "keep"})
        assert load_settings(dump_settings(settings, fmt), fmt) == settings  # type: ignore[arg-type]

    def test_an_old_config_file_given_as_settings_reads_its_section(self, tmp_path: Path) -> None:
        path = tmp_path / "old.json"
        path.write_text(json.dumps(_old_file()), encoding="utf-8")
        assert load_settings(path).pricing.input_per_mtok == 0.5

    @pytest.mark.parametrize("data, match", [(b"[1]", "must be a mapping"), (b'{"cache": {"enabled": "often"}}', r"cache\.enabled"),
                                             (b'{"window": 1000}', "window")], ids=["list", "bad-value", "config-field"])
    def test_bad_settings_are_config_errors(self, data: bytes, match: str) -> None:
        with pytest.raises(ConfigError, match=match):
            load_settings(data, "json")

    def test_recorded_compactions_overrides_and_is_checked(self) -> None:
        assert resolve_settings(CHEAP, "keep").recorded_compactions == "keep"
        with pytest.raises(ConfigError, match="recorded_compactions"):
            resolve_settings(None, "maybe")


class TestReplay:
    def test_settings_change_the_cost_and_are_recorded_beside_the_config(self) -> None:
        t = session(4, 4000)
        default, cheap = replay(t, "minicode"), replay(t, "minicode", settings=ReplaySettings.model_validate(CHEAP))
        assert default.total_cost > 0 and cheap.total_cost < default.total_cost / 3
        assert cheap.settings["pricing"]["input_per_mtok"] == 0.5 and "replay" not in cheap.config
        # Everything but the bill is the same replay.
        assert [r.sent_tokens for r in cheap.rows] == [r.sent_tokens for r in default.rows]

    def test_a_mapping_works_as_settings(self) -> None:
        t = session(3, 3000)
        assert replay(t, "minicode", settings=CHEAP).total_cost == replay(t, "minicode", settings=ReplaySettings.model_validate(CHEAP)).total_cost

    def test_compare_bills_every_row_with_the_one_settings(self) -> None:
        t = session(4, 4000)
        table = compare(t, ["minicode", "mewcode"], window=16_000, settings=CHEAP)
        assert {json.dumps(r.settings, sort_keys=True) for r in table.reports.values()} == {json.dumps(table.reports["minicode"].settings, sort_keys=True)}
        for label, report in table.reports.items():
            alone = replay(t, label, window=16_000, settings=CHEAP)
            assert report.total_cost == pytest.approx(alone.total_cost)
            assert report.total_cost < replay(t, label, window=16_000).total_cost

    @pytest.mark.parametrize("processes", [1, 2])
    def test_run_grid_ships_the_settings_to_every_job(self, processes: int) -> None:
        ts = [Transcript(messages=session(3, 4000)), Transcript(messages=session(3, 6000))]
        configs = [preset("minicode"), preset("mewcode")]
        plain = run_grid(ts, configs, processes=processes)
        cheap = run_grid(ts, configs, processes=processes, settings=CHEAP)
        for i in range(2):
            for j in range(2):
                assert cheap[i][j].row is not None and plain[i][j].row is not None
                assert cheap[i][j].row["cost"] < plain[i][j].row["cost"]


class TestRelevance:
    def test_cache_off_makes_ttl_and_cache_prices_idle(self) -> None:
        assert settings_relevance(ReplaySettings()) == {}
        idle = settings_relevance(ReplaySettings.model_validate({"cache": {"enabled": False}}))
        assert set(idle) == {"cache.ttl_seconds", "cache.min_cacheable_tokens", "pricing.cache_write_per_mtok", "pricing.cache_read_per_mtok"}
        assert all(why.endswith(".") for why in idle.values())

    def test_moving_the_idle_settings_changes_no_replay(self) -> None:
        off = ReplaySettings.model_validate({"cache": {"enabled": False}})
        moved = with_values(off, {"cache.ttl_seconds": 3600, "cache.min_cacheable_tokens": 0,
                                  "pricing.cache_write_per_mtok": 99.0, "pricing.cache_read_per_mtok": 42.0})
        t = session(4, 4000)
        a, b = replay(t, "minicode", settings=off), replay(t, "minicode", settings=moved)
        assert a.model_dump(exclude={"settings"}) == b.model_dump(exclude={"settings"})
        # The check can fail: with the cache on, the same move changes the bill.
        on_a = replay(t, "minicode")
        on_b = replay(t, "minicode", settings=moved.model_copy(update={"cache": moved.cache.model_copy(update={"enabled": True})}))
        assert on_a.total_cost != on_b.total_cost

    def test_the_front_ends_ask_both_halves_by_control_path(self) -> None:
        cfg, settings = run_with_value(preset("claude-code"), ReplaySettings(), "replay.cache.enabled", False)
        idle = inactive_run_fields(cfg, settings)
        assert "replay.cache.ttl_seconds" in idle and "spill.threshold" in idle
        with pytest.raises(ConfigError, match=r"replay\.cache\.ttl_seconds"):
            run_with_value(cfg, settings, "replay.cache.ttl_seconds", 7)
