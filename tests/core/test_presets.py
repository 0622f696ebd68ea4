"""Presets: the two designs' numbers, the modelled presets, copies and round trips."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lab.core.config import dump_config, load_config
from lab.core.presets import PRESETS, preset, preset_description, preset_names
from lab.core.stages.watermark import threshold
from lab.errors import ConfigError
from lab.core.config import with_value

MODELLED = ["codex", "openhands-masking", "claude-code", "anthropic-context-editing"]


class TestMiniCode:
    def test_reproduces_the_design_defaults(self) -> None:
        c = preset("minicode")
        assert c.label == "minicode" and c.counter == "minicode"
        assert (c.spill.enabled, c.spill.unit, c.spill.threshold, c.spill.preview_format) == (True, "chars", 4000, "minicode")
        assert (c.spill.head_lines, c.spill.tail_lines, c.spill.preview_chars) == (8, 3, 500)
        assert not c.spill.message_budget_enabled
        assert c.dedup.enabled
        assert (c.microcompact.enabled, c.microcompact.mode, c.microcompact.interval_seconds, c.microcompact.keep_recent) == (True, "interval", 3600, 5)
        assert (c.watermark.mode, c.watermark.ratio, c.watermark.breaker_failures, c.watermark.use_usage_anchor) == ("ratio", 0.85, 3, False)
        s = c.summary
        assert (s.session_memory, s.summarizer, s.tail_policy) == (True, "rules", "minicode")
        assert (s.tail_min_tokens, s.tail_max_tokens, s.tail_min_messages, s.min_saving, s.memory_max_tokens) == (10_000, 40_000, 5, 0.05, 6000)
        r = c.recovery
        assert (r.strategy, r.max_attempts, r.blocking_ratio, r.accept_ratio) == ("minicode", 3, 0.97, 0.9)
        assert (r.truncate_start, r.truncate_step, r.truncate_floor, r.truncate_min_messages) == (0.4, 0.1, 0.15, 3)

    def test_watermark_at_85_percent(self) -> None:
        c = preset("minicode")
        assert threshold(c.watermark, 200_000) == 170_000

    def test_follows_the_design_where_it_is_explicit(self) -> None:
        c = preset("minicode")
        # The preview as _generate_preview writes it, the full compact's len(non_system) // 3 tail, the truncation
        # share of the same count, and the rule summary's four lists from the removed messages only.
        assert c.spill.preview_shape == "seed"
        assert (c.summary.full_tail_policy, c.summary.full_tail_unit, c.summary.rules_format) == ("third", "minicode_messages", "seed")
        assert c.recovery.truncate_unit == "minicode_messages"

    def test_the_lab_preset_keeps_its_own_choices(self) -> None:
        c = preset("lab")
        assert (c.spill.preview_format, c.summary.full_tail_policy, c.summary.rules_format) == ("mewcode", "same", "lab")
        assert c.recovery.truncate_unit == "messages"
        # The defaults are the lab's: a custom config changes only when it asks for the seed's behaviour.
        assert preset("codex").spill.preview_shape == "lab"


class TestMewCode:
    def test_reproduces_the_design_defaults(self) -> None:
        c = preset("mewcode")
        assert c.counter == "chars/3.5"
        sp = c.spill
        assert (sp.unit, sp.threshold, sp.message_budget_enabled, sp.message_budget, sp.preview_format) == ("bytes", 50_000, True, 200_000, "mewcode")
        assert (sp.mewcode_preview_lines, sp.mewcode_preview_bytes, sp.retention_days) == (20, 2048, 30)
        assert not c.dedup.enabled and not c.microcompact.enabled
        w = c.watermark
        assert (w.mode, w.summary_reserve, w.safety_margin, w.manual_margin, w.min_window) == ("reserve", 20_000, 13_000, 3_000, 33_000)
        assert w.use_usage_anchor and w.breaker_failures == 3
        s = c.summary
        assert (s.session_memory, s.tail_policy, s.tail_min_tokens, s.tail_min_messages) == (False, "mewcode", 10_000, 5)
        assert (s.attachment_files, s.attachment_file_tokens) == (5, 5000)
        # The new history carries MewCode's recovery attachment even with the offline rule summary standing in for its LLM.
        assert s.attachment_for_rules and s.full_tail_policy == "same" and s.min_saving == 0.0
        assert (c.recovery.strategy, c.recovery.giveup_margin) == ("mewcode", 3_000)

    def test_thresholds(self) -> None:
        w = preset("mewcode").watermark
        assert threshold(w, 200_000) == 167_000
        assert threshold(w, 33_000) is None


class TestModelled:
    @pytest.mark.parametrize("name", MODELLED)
    def test_description_says_it_is_a_model(self, name: str) -> None:
        text = preset_description(name).lower()
        assert "modelled on" in text and "not the real implementation" in text

    def test_codex_summarises_at_90_percent_and_keeps_user_messages(self) -> None:
        c = preset("codex")
        assert threshold(c.watermark, 200_000) == 180_000
        assert c.summary.keep_user_messages_tokens == 20_000

    def test_openhands_masks_every_request_without_summary(self) -> None:
        c = preset("openhands-masking")
        assert (c.microcompact.enabled, c.microcompact.mode) == (True, "always")
        assert c.microcompact.keep_recent > 0
        assert not c.summary.enabled

    def test_claude_code_compacts_at_window_minus_13k(self) -> None:
        c = preset("claude-code")
        assert (c.watermark.summary_reserve, c.watermark.safety_margin) == (0, 13_000)
        assert threshold(c.watermark, 200_000) == 187_000
        assert c.microcompact.enabled and c.summary.enabled

    def test_anthropic_context_editing_defaults(self) -> None:
        mc = preset("anthropic-context-editing").microcompact
        assert (mc.mode, mc.trigger_tokens, mc.keep_recent, mc.clear_at_least, mc.clear_tool_inputs, mc.exclude_tools) == (
            "token_trigger", 100_000, 3, 0, False, [],
        )
        assert not preset("anthropic-context-editing").summary.enabled


class TestAccess:
    def test_the_seeds_the_modelled_agents_then_the_lab_preset(self) -> None:
        assert preset_names() == ["minicode", "mewcode", *MODELLED, "lab", "lab-lean"]
        assert all(PRESETS[name].label == name for name in PRESETS)

    def test_unknown_name_lists_the_choices(self) -> None:
        with pytest.raises(ConfigError, match="unknown preset 'nope'.*minicode, mewcode, codex"):
            preset("nope")
        with pytest.raises(ConfigError):
            preset_description("nope")

    def test_a_preset_is_a_frozen_value_and_a_change_a_new_one(self) -> None:
        a = preset("minicode")
        with pytest.raises(ValidationError, match="frozen"):
            a.window = 16_000  # type: ignore[misc]
        b = with_value(a, "window", 16_000)
        assert b.window == 16_000 and PRESETS["minicode"].window == 200_000
        # The sections the change did not cross are shared, not copied.
        assert b.dedup is a.dedup and b.fingerprint != a.fingerprint

    def test_design_presets_have_no_disclaimer(self) -> None:
        for name in ("minicode", "mewcode"):
            assert "not the real implementation" not in preset_description(name)


@pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_round_trips(name: str, fmt: str) -> None:
    config = preset(name)
    assert load_config(dump_config(config, fmt), fmt=fmt) == config  # type: ignore[arg-type]


def test_config_bytes_without_a_format_or_not_utf8_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="needs its format"):
        load_config(b'{"window": 64000}')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(b"\xff\xfe window = 1", fmt="toml")
    assert load_config(b'{"window": 64000}', fmt="json").window == 64_000


class TestLab:
    """The lab's own preset: each choice is in its description with the reason, and the mechanisms it names are on."""

    def test_description_gives_the_reasons(self) -> None:
        text = preset_description("lab")
        for reason in ("bench", "read it rather than guess", "cached prompt prefix", "window-relative", "verbatim", "idle gap"):
            assert reason in text

    def test_mechanisms(self) -> None:
        cfg = preset("lab")
        assert cfg.spill.enabled and cfg.spill.preview_format == "mewcode" and cfg.spill.message_budget_enabled
        assert cfg.dedup.enabled
        # Old results are cleared only once the prompt cache has expired anyway: after an idle gap of its 5-minute lifetime.
        assert cfg.microcompact.enabled and cfg.microcompact.mode == "idle" and cfg.microcompact.interval_seconds == 300
        assert cfg.summary.keep_user_messages_tokens > 0 and cfg.summary.tail_window_share > 0
        assert cfg.watermark.breaker_cooldown_seconds == 300 and cfg.watermark.breaker_reset_on_forced
        assert cfg.counter == "calibrated"

    @pytest.mark.parametrize("window", [16_000, 32_000, 64_000, 128_000, 200_000])
    def test_no_setting_is_inert_at_common_windows(self, window: int) -> None:
        from lab.core.diagnostics import config_warnings

        cfg = with_value(preset("lab"), "window", window)
        assert config_warnings(cfg) == []
