"""The price table: rows valid and dated, model names matched, and prices that round-trip through a config file."""

from __future__ import annotations

from datetime import date

import pytest

from lab.core.presets import preset
from lab.replayer.settings import DEFAULT_PRICE_ROW, PricingConfig, ReplaySettings, dump_settings, load_settings, split_config
from lab.replayer import replay
from lab.formats import load
from lab.replayer.prices import (
    PRICE_ROWS,
    cost_text,
    price_tag,
    pricing_rule,
    session_pricing,
    PRICES_TAKEN,
    describe_settings,
    describe_pricing,
    explain_pricing,
    match_model,
    price_row,
    pricing_row_matches,
    with_row,
)
from tests.conftest import SAMPLES


class TestTable:
    def test_every_row_is_valid_pricing_for_both_ttls(self) -> None:
        for row in PRICE_ROWS:
            for ttl in (300, 3600):
                p = row.pricing(ttl)
                assert p.model == row.name
                # A cache hit is cheaper than input, which is cheaper than output, on every published row.
                assert 0 < p.cache_read_per_mtok < p.input_per_mtok <= p.cache_write_per_mtok < p.output_per_mtok * 2

    def test_names_unique_and_both_families_present(self) -> None:
        names = [r.name for r in PRICE_ROWS]
        assert len(set(names)) == len(names)
        for family in ("Claude Sonnet", "Claude Opus", "Claude Haiku", "GPT-4.1", "GPT-5"):
            assert any(n.startswith(family) for n in names), family

    def test_every_row_is_dated_and_sourced(self) -> None:
        assert date.fromisoformat(PRICES_TAKEN) <= date.today()
        for row in PRICE_ROWS:
            assert date.fromisoformat(row.taken)
            assert row.source.startswith("https://")

    def test_anthropic_write_prices_follow_the_ttl(self) -> None:
        sonnet = price_row("Claude Sonnet 4.5")
        assert sonnet is not None
        assert sonnet.pricing(300).cache_write_per_mtok == pytest.approx(1.25 * sonnet.input)
        assert sonnet.pricing(3600).cache_write_per_mtok == pytest.approx(2 * sonnet.input)

    def test_openai_bills_a_cache_write_as_input(self) -> None:
        gpt = price_row("GPT-4.1")
        assert gpt is not None and gpt.pricing(300).cache_write_per_mtok == gpt.input

    def test_the_config_defaults_are_the_default_row(self) -> None:
        row = price_row(DEFAULT_PRICE_ROW)
        # The same numbers; the defaults follow the session, a row picked from the table is prices chosen.
        assert row is not None and row.pricing(300) == PricingConfig().model_copy(update={"follow_session": False})
        assert pricing_row_matches(PricingConfig())


class TestMatching:
    @pytest.mark.parametrize("name, row", [
        ("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5"),
        ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
        ("claude-sonnet-4-5[1m]", "Claude Sonnet 4.5"),
        ("us.anthropic.claude-opus-4-1-20250805-v1:0", "Claude Opus 4.1"),
        ("claude-opus-4@20250514", "Claude Opus 4"),
        ("claude-opus-4-5-20251101", "Claude Opus 4.5"),
        ("claude-3-5-haiku-latest", "Claude Haiku 3.5"),
        ("Claude-Haiku-4-5", "Claude Haiku 4.5"),
        ("gpt-5-mini-2025-08-07", "GPT-5 mini"),
        ("gpt-5", "GPT-5"),
        ("openai/gpt-4.1", "GPT-4.1"),
        ("gpt-4.1-nano-2025-04-14", "GPT-4.1 nano"),
    ])
    def test_known_names(self, name: str, row: str) -> None:
        found = match_model(name)
        assert found is not None and found.name == row

    @pytest.mark.parametrize("name", [None, "", "<synthetic>", "gpt-5.2", "gpt-4o", "gemini-2.5-pro", "claude-3-5-sonnet-20241022"])
    def test_unknown_names_match_nothing(self, name: str | None) -> None:
        # gpt-5.2 is not GPT-5: a different price, so no row rather than the wrong one.
        assert match_model(name) is None


class TestConfig:
    @pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
    def test_an_exported_row_round_trips(self, fmt: str) -> None:
        settings = ReplaySettings()
        settings = settings.model_copy(update={"pricing": with_row(settings.pricing, "GPT-5 mini")})
        back = load_settings(dump_settings(settings, fmt), fmt)  # type: ignore[arg-type]
        assert back.pricing == settings.pricing and back.pricing.model == "GPT-5 mini"

    def test_an_old_config_without_a_model_still_loads(self) -> None:
        data = {**preset("minicode").model_dump(mode="json"), "replay": ReplaySettings().model_dump(mode="json")}
        del data["replay"]["pricing"]["model"]
        data["replay"]["pricing"]["input_per_mtok"] = 4.0
        _, settings, _ = split_config(data)
        assert settings is not None and settings.pricing.input_per_mtok == 4.0
        # Its numbers are not the default row's any more: said, not hidden.
        assert describe_pricing(settings.pricing).startswith("Custom prices, edited from")

    def test_unknown_row_keeps_the_numbers_as_custom(self) -> None:
        p = with_row(PricingConfig(input_per_mtok=9), "no such model")
        assert p.model == "" and p.input_per_mtok == 9
        assert describe_pricing(p).startswith("Custom prices:")

    def test_describe_names_row_date_and_numbers(self) -> None:
        text = describe_settings(ReplaySettings().model_dump(mode="json"))
        assert DEFAULT_PRICE_ROW in text and PRICES_TAKEN in text and "$3.00" in text and "$0.30" in text

    def test_explain_compares_with_the_sessions_model(self) -> None:
        cfg = ReplaySettings()
        assert "is GPT-4.1, not these prices' row" in explain_pricing(cfg, "gpt-4.1")
        cfg = cfg.model_copy(update={"pricing": with_row(cfg.pricing, "GPT-4.1")})
        assert explain_pricing(cfg, "gpt-4.1").endswith("The session's model 'gpt-4.1' is GPT-4.1.")
        assert "does not name its model" in explain_pricing(cfg, None)

    def test_the_replay_bills_with_the_chosen_row(self) -> None:
        t = SAMPLES / "generated-small.lab.json"
        nano = ReplaySettings()
        nano = nano.model_copy(update={"pricing": with_row(nano.pricing, "GPT-4.1 nano")})
        a, b = replay(t, "minicode"), replay(t, "minicode", settings=nano)
        assert a.total_cost > 0 and b.total_cost < a.total_cost
        assert b.settings["pricing"]["model"] == "GPT-4.1 nano" and "replay" not in b.config



class TestOneRule:
    """Issue 31 §2: one pricing rule for the library, the CLI and the app, recorded in the report."""

    def test_defaults_follow_the_sessions_model_and_chosen_prices_win(self) -> None:
        assert PricingConfig().follow_session and ReplaySettings().pricing.follow_session
        # Naming any price is choosing it, whatever the way it is given.
        assert not PricingConfig(input_per_mtok=1).follow_session
        assert not ReplaySettings.model_validate({"pricing": {"model": "GPT-5"}}).pricing.follow_session
        assert not load_settings(b'{"pricing": {"cache_read_per_mtok": 0.1}}', "json").pricing.follow_session
        assert ReplaySettings.model_validate({"pricing": {"input_per_mtok": 1, "follow_session": True}}).pricing.follow_session
        # A dump says it explicitly, so a report's settings read back as they were.
        dumped = ReplaySettings().model_dump(mode="json")
        assert ReplaySettings.model_validate(dumped).pricing.follow_session

    def test_session_pricing_picks_the_sessions_row_then_the_default(self) -> None:
        opus, source = session_pricing(ReplaySettings(), "claude-opus-4-20250514")
        assert source == "session" and opus.pricing.model == "Claude Opus 4" and opus.pricing.input_per_mtok == 15
        # Applying the rule to its own answer changes nothing (the app settles it, the replay applies it again).
        again, _ = session_pricing(opus, "claude-opus-4-20250514")
        assert again is opus
        # A model the table lacks, or none: the default row, even after another session's row was applied.
        for model in ("gpt-5.2", None):
            fallback, source = session_pricing(opus, model)
            assert source == "default" and fallback.pricing.model == DEFAULT_PRICE_ROW and fallback.pricing.follow_session
        chosen = ReplaySettings(pricing=with_row(PricingConfig(), "Claude Haiku 4.5"))
        kept, source = session_pricing(chosen, "claude-opus-4-20250514")
        assert source == "settings" and kept is chosen

    def test_the_1h_ttl_bills_the_rows_1h_write(self) -> None:
        s = ReplaySettings.model_validate({"cache": {"ttl_seconds": 3600}})
        priced, _ = session_pricing(s, "claude-opus-4-1")
        row = price_row("Claude Opus 4.1")
        assert row is not None and priced.pricing.cache_write_per_mtok == row.cache_write_1h

    def test_the_replay_records_the_row_and_why(self) -> None:
        t = SAMPLES / "generated-small.lab.json"
        own = replay(t, "minicode")
        model = load(t).meta.model
        row = match_model(model)
        assert row is not None
        assert own.pricing_source == "session" and own.settings["pricing"]["model"] == row.name
        haiku = ReplaySettings(pricing=with_row(PricingConfig(), "Claude Haiku 4.5"))
        chosen = replay(t, "minicode", settings=haiku)
        assert chosen.pricing_source == "settings" and chosen.settings["pricing"]["model"] == "Claude Haiku 4.5"
        assert chosen.total_cost < own.total_cost
        # Read back from JSON, the report still says where its prices came from.
        assert type(own).from_dict(own.to_dict()).pricing_source == "session"

    def test_cost_text_names_the_row_and_its_prices(self) -> None:
        assert price_tag(PricingConfig()) == "Claude Sonnet 4.6: $3/$15 per MTok in/out, cache write $3.75, cache read $0.30"
        assert cost_text(0.22744, ReplaySettings()) == f"$0.2274 ({price_tag(PricingConfig())})"
        edited = PricingConfig(model="Claude Sonnet 4.6", input_per_mtok=4)
        assert price_tag(edited).startswith("custom prices (edited from Claude Sonnet 4.6): $4/$15")
        assert price_tag(PricingConfig(model="", input_per_mtok=0.125)).startswith("custom prices: $0.125/$15")
        gpt = price_row("GPT-5")
        assert gpt is not None and "cache read $0.125" in price_tag(gpt.pricing())

    def test_pricing_rule_says_why(self) -> None:
        assert pricing_rule("session", "claude-opus-4") == "the session's own model (claude-opus-4)"
        assert "'gpt-5.2' has no row" in pricing_rule("default", "gpt-5.2")
        assert "names no model" in pricing_rule("default", None)
        assert "chosen prices win" in pricing_rule("settings", "claude-opus-4")


def test_a_price_set_by_path_is_chosen_as_the_app_and_the_notebook_set_it() -> None:
    from lab.fields import run_with_value

    cfg = preset("minicode")
    _, settings = run_with_value(cfg, ReplaySettings(), "replay.pricing.input_per_mtok", 1.0)
    assert settings.pricing.input_per_mtok == 1.0 and not settings.pricing.follow_session
    kept, source = session_pricing(settings, "claude-opus-4")
    assert source == "settings" and kept.pricing.input_per_mtok == 1.0
    # Setting anything else leaves the session's prices to the rule.
    _, other = run_with_value(cfg, ReplaySettings(), "replay.hidden_tokens", 100)
    assert other.pricing.follow_session
