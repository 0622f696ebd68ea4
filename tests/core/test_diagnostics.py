"""config_warnings: every setting that cannot work at its window is named; the shipped presets at 200k are clean."""

from __future__ import annotations

from typing import Any

import pytest

import lab.core
from lab.core.config import CompactionConfig, parse_config
from lab.core.diagnostics import attachment_cap, config_warnings, first_trigger
from lab.core.presets import preset, preset_names
from lab.core.config import with_value


def _with(name: str, window: int, **stages: dict[str, Any]) -> CompactionConfig:
    """The preset at ``window`` with some stage fields changed, validated like a user's config."""
    data = preset(name).model_dump()
    data["window"] = window
    for stage, fields in stages.items():
        data[stage].update(fields)
    return parse_config(data)


def _one(warnings: list[str], fragment: str) -> str:
    hits = [w for w in warnings if fragment in w]
    assert len(hits) == 1, warnings
    return hits[0]


class TestShippedPresets:
    @pytest.mark.parametrize("name", preset_names())
    def test_no_warning_at_200k(self, name: str) -> None:
        assert config_warnings(preset(name)) == []

    def test_defaults_are_clean(self) -> None:
        assert config_warnings(CompactionConfig()) == []

    def test_exported_from_the_core(self) -> None:
        assert "config_warnings" in lab.core.__all__ and lab.core.config_warnings is config_warnings


class TestTailSwallowsTheThreshold:
    @pytest.mark.parametrize("window", [34_000, 40_000, 43_000], ids=["34k", "40k", "43k"])
    def test_mewcode_between_34k_and_43k(self, window: int) -> None:
        warning = _one(config_warnings(_with("mewcode", window)), "summary.tail_min_tokens (10,000)")
        first = window - 33_000
        assert f"the {first:,} tokens at which auto-compaction first triggers" in warning
        assert "nothing to summarise" in warning and "circuit breaker" in warning

    def test_mewcode_at_44k_is_past_it(self) -> None:
        assert not any("nothing to summarise" in w for w in config_warnings(_with("mewcode", 44_000)))

    def test_ratio_mode_counts_strictly_above(self) -> None:
        # MiniCode triggers above int(0.85 x window): 9,999 + 1 = 10,000 reaches the 10k tail, 10,000 + 1 does not.
        assert first_trigger(_with("minicode", 11_764)) == 10_000
        assert any("nothing to summarise" in w for w in config_warnings(_with("minicode", 11_764)))
        assert first_trigger(_with("minicode", 11_765)) == 10_001
        assert not any("nothing to summarise" in w for w in config_warnings(_with("minicode", 11_765)))

    def test_claude_code_at_16k(self) -> None:
        _one(config_warnings(_with("claude-code", 16_000)), "the 3,000 tokens at which auto-compaction first triggers")

    def test_no_warning_when_summary_is_off(self) -> None:
        assert not any("tail_min_tokens" in w for w in config_warnings(_with("mewcode", 40_000, summary={"enabled": False})))


class TestWatermark:
    def test_skipped_at_or_below_min_window(self) -> None:
        warning = _one(config_warnings(_with("mewcode", 33_000)), "Auto-compaction never runs")
        assert "(33,000) is at or below watermark.min_window (33,000)" in warning

    def test_skipped_when_the_reserve_leaves_nothing(self) -> None:
        cfg = _with("mewcode", 60_000, watermark={"summary_reserve": 40_000, "safety_margin": 20_000})
        warning = _one(config_warnings(cfg), "Auto-compaction never runs")
        assert "60,000 - 40,000 - 20,000 = 0 is not a positive threshold" in warning

    def test_watermark_at_the_window(self) -> None:
        warning = _one(config_warnings(_with("minicode", 200_000, watermark={"ratio": 1.0})), "not below the window")
        assert "only above 200,000 tokens" in warning and "Lower watermark.ratio" in warning

    def test_watermark_off_warns_nothing(self) -> None:
        assert config_warnings(_with("mewcode", 20_000, watermark={"enabled": False}, spill={"enabled": False})) == []


class TestAttachment:
    def test_share_plus_tail_over_the_window(self) -> None:
        cfg = _with("mewcode", 50_000, summary={"attachment_for_rules": True, "attachment_max_window_share": 0.9})
        assert attachment_cap(cfg) == 45_000
        warning = _one(config_warnings(cfg), "recovery attachment")
        assert "up to 45,000 tokens (90% of the window)" in warning and "at least 10,000" in warning

    def test_llm_summaries_always_carry_it(self) -> None:
        cfg = _with("minicode", 12_000, summary={"summarizer": "openai", "tail_min_tokens": 9_500})
        assert attachment_cap(cfg) == 3_000
        _one(config_warnings(cfg), "recovery attachment")

    def test_rule_summary_without_attachment_is_not_counted(self) -> None:
        cfg = _with("minicode", 12_000, summary={"tail_min_tokens": 9_500})
        assert attachment_cap(cfg) == 0
        assert not any("recovery attachment" in w for w in config_warnings(cfg))


class TestSpillAndClearing:
    def test_threshold_larger_than_the_window(self) -> None:
        warning = _one(config_warnings(_with("mewcode", 13_000)), "spill.threshold")
        assert "50,000 bytes" in warning and "about 14,286 tokens at 3.5 characters per token" in warning

    def test_threshold_in_chars_at_minicode_rate(self) -> None:
        warning = _one(config_warnings(_with("minicode", 16_000, spill={"threshold": 80_000})), "spill.threshold")
        assert "about 20,000 tokens at 4 characters per token" in warning

    def test_message_budget_larger_than_the_window(self) -> None:
        warning = _one(config_warnings(_with("mewcode", 32_000)), "spill.message_budget")
        assert "200,000 bytes" in warning and "57,143 tokens" in warning
        assert not any("message_budget" in w for w in config_warnings(_with("mewcode", 64_000)))

    def test_token_trigger_at_or_above_the_window(self) -> None:
        for window in (64_000, 100_000):
            _one(config_warnings(_with("anthropic-context-editing", window)), "microcompact.trigger_tokens (100,000)")
        assert config_warnings(_with("anthropic-context-editing", 100_001)) == []


class TestRecovery:
    def test_mewcode_tail_at_the_giveup_limit(self) -> None:
        warning = _one(config_warnings(_with("mewcode", 13_000)), "emergency give-up limit")
        assert "window - recovery.giveup_margin = 10,000" in warning
        assert not any("give-up" in w for w in config_warnings(_with("mewcode", 13_001)))

    def test_margin_at_least_the_window(self) -> None:
        cfg = _with("mewcode", 100_000, recovery={"giveup_margin": 100_000})
        _one(config_warnings(cfg), "the emergency recovery always gives up")

    def test_minicode_ladder_is_not_judged(self) -> None:
        assert not any("give" in w for w in config_warnings(_with("minicode", 13_000)))


def test_pure_and_plain_text() -> None:
    cfg = _with("mewcode", 40_000)
    before = cfg.model_dump()
    first = config_warnings(cfg)
    assert config_warnings(cfg) == first and cfg.model_dump() == before
    assert all(isinstance(w, str) and w and "\n" not in w for w in first)


class TestSmallWindows:
    """Every preset at 16k, 32k and 64k: the warnings name the setting that stops a stage."""

    @pytest.mark.parametrize("window", [16_000, 32_000], ids=["16k", "32k"])
    def test_minicode_session_memory_tail_max(self, window: int) -> None:
        w = _one(config_warnings(_with("minicode", window)), "summary tail max 40,000")
        assert f"≥ watermark {int(0.85 * window):,}" in w and "session memory" in w
        # The full compact keeps min(n/3, 5) messages: it is not said to fail, and the breaker is not in play.
        assert "the full summary (tail: the newest min(n/3, tail_min_messages) messages) does the work" in w
        assert "circuit breaker" not in w

    def test_minicode_at_64k_can_summarise_from_session_memory(self) -> None:
        assert config_warnings(_with("minicode", 64_000)) == []

    def test_one_tail_for_both_summaries_names_the_issue_example(self) -> None:
        warnings = config_warnings(_with("minicode", 32_000, summary={"full_tail_policy": "same"}))
        w = _one(warnings, "summary tail max 40,000 ≥ watermark 27,200")
        assert "session memory and the full summary keep" in w and "never summarise" in w and "circuit breaker" in w
        assert "set summary.full_tail_policy to 'third'" in w
        # The recovery ladder's forced compact has the same tail, at a context just over the window.
        _one(warnings, "recovery ladder's forced full compact keeps the whole context")

    def test_tail_max_between_the_watermark_and_the_window(self) -> None:
        w = _one(config_warnings(_with("minicode", 64_000, summary={"tail_max_tokens": 60_000})), "summary tail max 60,000")
        assert "only once the context passes 60,000 tokens" in w

    def test_ladder_rejects_when_the_tail_floor_is_over_the_accept_limit(self) -> None:
        cfg = _with("minicode", 200_000, summary={"full_tail_policy": "same", "tail_min_tokens": 180_000, "tail_max_tokens": 190_000})
        _one(config_warnings(cfg), "the recovery ladder's forced full compact is always rejected")

    def test_codex_keeps_more_user_text_than_the_threshold_at_16k(self) -> None:
        w = _one(config_warnings(_with("codex", 16_000)), "summary.keep_user_messages_tokens (20,000)")
        assert "14,401 tokens" in w
        assert not any("keep_user_messages_tokens" in x for x in config_warnings(_with("codex", 32_000)))

    def test_llm_summary_budget_over_the_threshold(self) -> None:
        cfg = _with("mewcode", 64_000, summary={"summarizer": "anthropic", "summary_max_tokens": 40_000})
        _one(config_warnings(cfg), "summary.summary_max_tokens (40,000)")

    @pytest.mark.parametrize("name", preset_names())
    @pytest.mark.parametrize("window", [16_000, 32_000, 64_000], ids=["16k", "32k", "64k"])
    def test_every_warning_names_a_setting(self, name: str, window: int) -> None:
        for w in config_warnings(_with(name, window)):
            assert any(f"{stage}." in w for stage in ("summary", "watermark", "spill", "microcompact", "recovery")), w


class TestInactiveByDesign:
    """Issue 31, item 12: what a config skips at its window on purpose, in a note for beside the numbers."""

    def test_mewcode_at_or_below_its_min_window_skips_auto_compaction(self) -> None:
        from lab.core.diagnostics import inactive_by_design
        from lab.core.presets import preset

        cfg = preset("mewcode")
        cfg = with_value(cfg, "window", cfg.watermark.min_window)
        (note,) = inactive_by_design(cfg)
        assert note.startswith("auto-compaction skipped by design") and f"({cfg.watermark.min_window:,})" in note
        assert inactive_by_design(with_value(cfg, "window", 48_000)) == []

    def test_stages_switched_off_are_said(self) -> None:
        from lab.core.diagnostics import inactive_by_design
        from lab.core.presets import preset

        cfg = with_value(preset("minicode"), "watermark.enabled", False)
        assert "watermark is off" in inactive_by_design(cfg)[0]
        cfg = with_value(cfg, "summary.enabled", False)
        assert "summary stage is off" in inactive_by_design(cfg)[0]
