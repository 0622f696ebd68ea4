"""inactive_fields: every setting it calls idle really changes nothing, and the ones the issue names are caught.

The replay settings' half (``settings_relevance``) is tested beside them, in tests/replayer/test_settings.py.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import annotated_types as at
import pytest

import lab
from lab.core.config import CompactionConfig
from lab.core.presets import preset, preset_names
from lab.core.relevance import inactive_fields
from lab.ui.widgets import config_specs, get_path, with_value

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
# A small window makes every stage act on these sessions, so a field that matters shows in the replay.
WINDOW = 12_000


def _variants() -> dict[str, CompactionConfig]:
    """Every preset, plus modes no preset uses, so each rule is exercised at least once."""
    out = {name: preset(name) for name in preset_names()}
    edits: dict[str, dict[str, Any]] = {
        "minicode+llm": {"summary.summarizer": "anthropic", "summary.llm_base_url": "http://127.0.0.1:9/v1"},
        "minicode+token-trigger": {"microcompact.mode": "token_trigger", "microcompact.trigger_window_share": 0.5},
        "minicode+always": {"microcompact.mode": "always"},
        "minicode+one-attempt": {"recovery.max_attempts": 1},
        "minicode+no-memory": {"summary.session_memory": False},
        "mewcode+watermark-off": {"watermark.enabled": False},
        "mewcode+rules-attachment": {"summary.attachment_for_rules": True},
    }
    for name, changes in edits.items():
        cfg = preset(name.split("+")[0])
        for path, value in changes.items():
            cfg = with_value(cfg, path, value)
        out[name] = cfg
    return out


VARIANTS = _variants()
PATHS = {s.path for s in config_specs()}


def _other_value(cfg: CompactionConfig, path: str) -> Any:
    """A valid value for ``path`` different from the current one."""
    parent, name = (path.rsplit(".", 1) + [""])[:2] if "." in path else ("", path)
    model = get_path(cfg, parent) if parent else cfg
    info = type(model).model_fields[name]
    value = getattr(model, name)
    ann = info.annotation
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if ann is bool:
        return not value
    if typing.get_origin(ann) is typing.Literal:
        return next(o for o in typing.get_args(ann) if o != value)
    if ann in (int, float):
        lo = next((m.ge for m in info.metadata if isinstance(m, at.Ge)), 0)
        hi = next((m.le for m in info.metadata if isinstance(m, at.Le)), value * 2 + 10)
        return ann(hi if value != hi else lo)
    if typing.get_origin(ann) is list:
        return [*value, "zz-other"]
    if ann is str or str in args:
        return "/other" if name == "cwd" else "other text"
    raise AssertionError(f"no other value for {path} ({ann!r})")


def _fingerprint(report: Any) -> Any:
    # Notes say what the replay was asked for (e.g. an LLM summarizer it had no key for), not what it did.
    return report.model_dump(exclude={"config", "settings", "label", "meta", "notes"})


@pytest.fixture(scope="module")
def sessions() -> dict[str, Any]:
    return {name: lab.load(SAMPLES / name) for name in ("generated-small.lab.json", "generated-huge-outputs.lab.json")}


class TestShape:
    @pytest.mark.parametrize("name", list(VARIANTS))
    def test_every_path_is_a_setting_with_a_reason(self, name: str) -> None:
        found = inactive_fields(VARIANTS[name])
        assert set(found) <= PATHS
        assert all(reason.strip().endswith(".") for reason in found.values())

    def test_pure(self) -> None:
        cfg = preset("claude-code")
        before = cfg.model_dump()
        assert inactive_fields(cfg) == inactive_fields(cfg)
        assert cfg.model_dump() == before

    def test_a_config_where_everything_counts_has_few_idle_fields(self) -> None:
        # minicode uses nearly every stage; only the other design's alternatives are idle.
        idle = set(inactive_fields(preset("minicode")))
        assert "watermark.ratio" not in idle and "spill.threshold" not in idle
        assert "watermark.summary_reserve" in idle and "recovery.giveup_margin" in idle


class TestTheIssuesExamples:
    def test_ratio_is_idle_in_reserve_mode(self) -> None:
        found = inactive_fields(preset("claude-code"))
        assert "watermark.ratio" in found and "'reserve'" in found["watermark.ratio"]

    def test_spill_threshold_is_idle_while_spill_is_off(self) -> None:
        found = inactive_fields(preset("claude-code"))
        assert "Spill is off" in found["spill.threshold"]
        assert "spill.enabled" not in found

    def test_a_stage_that_is_off_is_the_reason_over_its_mode(self) -> None:
        cfg = with_value(preset("openhands-masking"), "microcompact.enabled", False)
        assert "Microcompact is off" in inactive_fields(cfg)["microcompact.trigger_tokens"]

    def test_switching_the_mode_moves_the_idle_fields(self) -> None:
        ratio = inactive_fields(preset("minicode"))
        reserve = inactive_fields(with_value(preset("minicode"), "watermark.mode", "reserve"))
        assert "watermark.ratio" not in ratio and "watermark.ratio" in reserve
        assert "watermark.safety_margin" in ratio and "watermark.safety_margin" not in reserve


class TestIdleReallyMeansNoEffect:
    # Without a key the replay falls back to rule summaries (and says so in its notes), so an LLM config is not what runs here.
    @pytest.mark.parametrize("name", [n for n in VARIANTS if "llm" not in n])
    def test_moving_an_idle_value_leaves_every_replay_unchanged(self, name: str, sessions: dict[str, Any]) -> None:
        cfg = with_value(VARIANTS[name], "window", WINDOW)
        idle = inactive_fields(cfg)
        assert idle
        # All idle values moved at once: one replay per session; on a difference, name the culprits one by one.
        moved = cfg
        for path in idle:
            moved = with_value(moved, path, _other_value(cfg, path))
        for s, t in sessions.items():
            base = _fingerprint(lab.replay(t, cfg))
            if _fingerprint(lab.replay(t, moved)) != base:
                culprits = [p for p in idle if _fingerprint(lab.replay(t, with_value(cfg, p, _other_value(cfg, p)))) != base]
                pytest.fail(f"{name}: idle settings changed the replay of {s}: {culprits or 'only together'}")

    def test_the_check_can_fail(self, sessions: dict[str, Any]) -> None:
        # The same comparison sees an active field move: the sessions are sensitive enough for the test above to mean something.
        cfg = with_value(preset("minicode"), "window", 12_000)
        moved = with_value(cfg, "watermark.ratio", 0.5)
        assert "watermark.ratio" not in inactive_fields(cfg)
        t = sessions["generated-small.lab.json"]
        assert _fingerprint(lab.replay(t, moved)) != _fingerprint(lab.replay(t, cfg))
