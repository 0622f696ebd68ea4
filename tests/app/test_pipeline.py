"""The Pipeline page and lab.ui.widgets: widgets generated from CompactionConfig, presets, markers, validation."""

from __future__ import annotations

from datetime import datetime, UTC
from typing import Literal

import pytest
from pydantic import BaseModel, Field
from streamlit.testing.v1 import AppTest

from lab.core.config import STAGE_FIELDS, CompactionConfig
from lab.core.presets import preset, preset_names
from lab.errors import ConfigError
from lab.fields import settings_specs
from lab.ui import widgets
from tests.app.conftest import load_sample, metrics, no_exception, switch_to, widget_keys

KEY = "cfg0:"  # widget keys of the first widget generation


def key(at: AppTest, path: str, prefix: str = "cfg") -> str:
    """The widget key of ``path`` now: loading a session applies its window and prices, which rebuilds the widgets."""
    return f"{prefix}{at.session_state.get('lab.widget_gen', 0)}:{path}"


@pytest.fixture
def pipeline(bare_app: AppTest) -> AppTest:
    return switch_to(bare_app, "pipeline")


def _session_config(at: AppTest) -> CompactionConfig:
    return at.session_state["lab.config"]


class TestGeneratedWidgets:
    def test_every_setting_has_exactly_one_widget(self, pipeline: AppTest) -> None:
        paths = {s.path for s in [*widgets.config_specs(), *settings_specs()]}
        assert widget_keys(pipeline, KEY) == paths
        # window, counter, a toggle per stage and the replay settings are all there
        assert {"window", "counter", "replay.pricing.input_per_mtok", "replay.cache.ttl_seconds"} <= paths
        assert {f"{stage}.enabled" for stage in STAGE_FIELDS} <= paths

    def test_bounds_and_help_come_from_the_field(self, pipeline: AppTest) -> None:
        ratio = pipeline.slider(key=KEY + "watermark.ratio")
        field = CompactionConfig.model_fields["watermark"].annotation.model_fields["ratio"]  # type: ignore[union-attr]
        assert (ratio.min, ratio.max, ratio.value) == (0.1, 1.0, 0.85)
        assert ratio.help == field.description
        window = pipeline.number_input(key=KEY + "window")
        assert (window.min, window.max, window.value) == (1000, 2_000_000, 200_000)

    def test_literal_is_a_selectbox_and_bool_a_toggle(self, pipeline: AppTest) -> None:
        assert pipeline.selectbox(key=KEY + "microcompact.mode").options == ["interval", "idle", "always", "token_trigger"]
        assert pipeline.toggle(key=KEY + "spill.enabled").value is True
        assert "o200k" in pipeline.selectbox(key=KEY + "counter").options

    def test_list_field_is_comma_separated_text(self, pipeline: AppTest) -> None:
        assert pipeline.text_input(key=KEY + "dedup.path_keys").value.startswith("file_path, path")


class TestPresetsAndMarkers:
    def test_changed_value_gets_a_marker_and_reset_clears_it(self, pipeline: AppTest) -> None:
        pipeline.number_input(key=KEY + "window").set_value(50_000).run()
        no_exception(pipeline)
        assert _session_config(pipeline).window == 50_000
        assert pipeline.number_input(key=KEY + "window").label.startswith(widgets.MARK)
        assert not pipeline.slider(key=KEY + "watermark.ratio").label.startswith(widgets.MARK)
        assert any("changed from the preset: window" in c.value for c in pipeline.caption)
        pipeline.button(key="pipeline.reset").click().run()
        no_exception(pipeline)
        assert _session_config(pipeline) == preset("minicode")
        # Reset rebuilt the widgets (new generation) showing the preset's values, unmarked.
        assert pipeline.number_input(key="cfg1:window").value == 200_000
        assert not pipeline.number_input(key="cfg1:window").label.startswith(widgets.MARK)

    def test_preset_picker_switches_the_whole_config(self, pipeline: AppTest) -> None:
        assert pipeline.selectbox(key="pipeline.preset").options == preset_names()
        pipeline.selectbox(key="pipeline.preset").set_value("mewcode").run()
        no_exception(pipeline)
        assert _session_config(pipeline) == preset("mewcode")
        assert pipeline.number_input(key="cfg1:spill.threshold").value == 50_000
        assert any("MewCode" in c.value for c in pipeline.caption)

    def test_invalid_value_shows_config_error_and_keeps_the_config(self, pipeline: AppTest) -> None:
        pipeline.text_input(key=KEY + "microcompact.clear_text").set_value("").run()
        no_exception(pipeline)
        assert any("microcompact.clear_text" in e.value for e in pipeline.error)
        assert _session_config(pipeline).microcompact.clear_text == preset("minicode").microcompact.clear_text


class TestReplayFollowsWidgets:
    def test_no_session_shows_the_empty_state(self, pipeline: AppTest) -> None:
        assert pipeline.button(key="lab.load_sample")
        assert "Over watermark" not in metrics(pipeline)

    def test_slider_changes_the_replay_totals(self, pipeline: AppTest) -> None:
        load_sample(pipeline)
        pipeline.number_input(key=key(pipeline, "window")).set_value(12_000).run()
        before = metrics(pipeline)["Summaries"]
        pipeline.slider(key=key(pipeline, "watermark.ratio")).set_value(0.5).run()
        no_exception(pipeline)
        # At 50% the full compact runs where 85% never triggered.
        after = metrics(pipeline)["Summaries"]
        assert int(after) > int(before)

    def test_stage_toggle_changes_the_replay(self, pipeline: AppTest) -> None:
        load_sample(pipeline)
        peak = metrics(pipeline)["Peak sent"]
        pipeline.toggle(key=key(pipeline, "spill.enabled")).set_value(False).run()
        pipeline.toggle(key=key(pipeline, "microcompact.enabled")).set_value(False).run()
        no_exception(pipeline)
        assert metrics(pipeline)["Peak sent"] != peak
        assert "Spill (off)" in [e.label.split("  ")[0] for e in pipeline.expander]


# --- widgets as plain functions ---------------------------------------------------------------


class _Inner(BaseModel):
    share: float = Field(0.5, ge=0, le=1, description="A share.")


class _Model(BaseModel):
    flag: bool = Field(True, description="A flag.")
    mode: Literal["a", "b"] = "a"
    small: int = Field(3, ge=1, le=10)
    big: int = Field(5000, ge=0, le=10_000_000)
    names: list[str] = Field(default_factory=lambda: ["x", "y"])
    note: str | None = None
    when: datetime = datetime(2025, 1, 1, tzinfo=UTC)
    inner: _Inner = Field(default_factory=_Inner)


class TestFieldSpecs:
    def test_kinds_bounds_and_groups(self) -> None:
        specs = {s.path: s for s in widgets.field_specs(_Model)}
        assert [specs[p].kind for p in ("flag", "mode", "small", "big", "names", "note", "when", "inner.share")] == [
            "toggle", "select", "slider", "number", "list", "textarea", "datetime", "slider",
        ]
        assert specs["inner.share"].group == "inner" and specs["flag"].group == ""
        # float bounds written as ints become floats, or Streamlit rejects the mixed types
        assert isinstance(specs["inner.share"].min_value, float) and specs["inner.share"].step == 0.01
        assert specs["mode"].options == ("a", "b")
        assert specs["flag"].help == "A flag."

    def test_exclude_and_choices(self) -> None:
        specs = {s.path: s for s in widgets.field_specs(_Model, exclude=("big",), choices={"note": ["p", "q"]})}
        assert "big" not in specs and specs["note"].kind == "select" and specs["note"].options == ("p", "q")

    @pytest.mark.parametrize(
        ("path", "model_value", "shown"),
        [("names", ["a", "b"], "a, b"), ("note", None, ""), ("small", 4, 4), ("inner.share", 0.25, 0.25)],
        ids=["list", "optional-str", "int", "float"],
    )
    def test_round_trip_through_the_widget(self, path: str, model_value: object, shown: object) -> None:
        spec = {s.path: s for s in widgets.field_specs(_Model)}[path]
        assert widgets.to_widget(spec, model_value) == shown
        assert widgets.from_widget(spec, shown) == model_value

    def test_from_widget_cleans_lists_and_float_noise(self) -> None:
        specs = {s.path: s for s in widgets.field_specs(_Model)}
        assert widgets.from_widget(specs["names"], " a, ,b ,") == ["a", "b"]
        assert widgets.from_widget(specs["inner.share"], 0.8600000000000001) == 0.86

    def test_with_value_validates_and_names_the_field(self) -> None:
        cfg = preset("minicode")
        new = widgets.with_value(cfg, "watermark.ratio", 0.5)
        assert new.watermark.ratio == 0.5 and cfg.watermark.ratio == 0.85  # the input is not changed
        with pytest.raises(ConfigError, match="watermark.ratio"):
            widgets.with_value(cfg, "watermark.ratio", 5.0)
        with pytest.raises(ConfigError, match="small"):
            widgets.with_value(_Model(), "small", 99)

    def test_config_specs_cover_every_leaf_except_the_label(self) -> None:
        def leaves(model: type[BaseModel], prefix: str = "") -> set[str]:
            out: set[str] = set()
            for name, info in model.model_fields.items():
                ann = info.annotation
                if isinstance(ann, type) and issubclass(ann, BaseModel):
                    out |= leaves(ann, f"{prefix}{name}.")
                else:
                    out.add(prefix + name)
            return out

        assert {s.path for s in widgets.config_specs()} == leaves(CompactionConfig) - {"label"}
        assert widgets.config_choices()["counter"] and "anthropic" not in widgets.config_choices()["counter"]


class TestIdleKnobs:
    """Issue 12: a knob with no effect under the current mode is disabled, its reason first in its help."""

    @pytest.fixture
    def claude_code(self, pipeline: AppTest) -> AppTest:
        pipeline.selectbox(key="pipeline.preset").set_value("claude-code").run()
        no_exception(pipeline)
        return pipeline

    def test_ratio_is_disabled_in_reserve_mode_with_the_reason(self, claude_code: AppTest) -> None:
        ratio = claude_code.slider(key="cfg1:watermark.ratio")
        assert ratio.disabled
        assert ratio.help.startswith("No effect now:") and "'reserve'" in ratio.help
        assert not claude_code.number_input(key="cfg1:watermark.safety_margin").disabled

    def test_spill_threshold_is_disabled_while_spill_is_off(self, claude_code: AppTest) -> None:
        threshold = claude_code.number_input(key="cfg1:spill.threshold")
        assert threshold.disabled and "Spill is off" in threshold.help
        # The switch that brings them back stays usable.
        assert not claude_code.toggle(key="cfg1:spill.enabled").disabled

    def test_switching_the_mode_enables_the_knob(self, claude_code: AppTest) -> None:
        claude_code.selectbox(key="cfg1:watermark.mode").set_value("ratio").run()
        no_exception(claude_code)
        assert not claude_code.slider(key="cfg1:watermark.ratio").disabled
        assert claude_code.number_input(key="cfg1:watermark.safety_margin").disabled

    def test_every_disabled_widget_is_one_the_core_calls_idle(self, claude_code: AppTest) -> None:
        from lab.fields import inactive_run_fields

        kinds = (claude_code.toggle, claude_code.selectbox, claude_code.slider, claude_code.number_input,
                 claude_code.text_input, claude_code.text_area)
        disabled = {str(w.key)[len("cfg1:"):] for kind in kinds for w in kind if str(w.key or "").startswith("cfg1:") and w.disabled}
        found = inactive_run_fields(_session_config(claude_code), claude_code.session_state["lab.replay_settings"])
        assert disabled == set(found) and disabled


class TestPricing:
    def test_picking_a_row_sets_its_prices(self, pipeline: AppTest) -> None:
        pipeline.selectbox(key=KEY + "replay.pricing.model").set_value("GPT-4.1").run()
        no_exception(pipeline)
        pricing = pipeline.session_state["lab.replay_settings"].pricing
        assert "replay" not in _session_config(pipeline).model_dump()
        assert (pricing.model, pricing.input_per_mtok, pricing.cache_read_per_mtok, pricing.output_per_mtok) == ("GPT-4.1", 2.0, 0.5, 8.0)
        # The number widgets are rebuilt to show the row's numbers.
        assert pipeline.number_input(key="cfg1:replay.pricing.input_per_mtok").value == 2.0

    def test_the_cost_metric_names_the_prices(self, pipeline: AppTest) -> None:
        load_sample(pipeline)
        cost = next(m for m in pipeline.metric if m.label == "Cost")
        assert "Claude Sonnet 4.5 prices" in cost.help and "per million tokens" in cost.help


class TestEffectBesideTheControls:
    """Issue 31, items 7 and 12: the effect of a slider is above the controls, and what is off by design is said beside it."""

    def test_the_effect_is_drawn_before_the_first_control(self, pipeline: AppTest) -> None:
        load_sample(pipeline)
        order = [getattr(node, "type", "") + ":" + str(getattr(node, "label", getattr(node, "value", ""))) for node in pipeline.main]
        effect = next(i for i, n in enumerate(order) if n.endswith("Effect on the loaded session"))
        first_metric = next(i for i, n in enumerate(order) if n.startswith("metric:"))
        first_control = next(i for i, n in enumerate(order) if n.startswith("expander:"))
        assert effect < first_metric < first_control
        assert {"Peak sent", "Summaries", "Spills & clearing", "Cost", "Recall"} <= set(metrics(pipeline))

    def test_a_window_where_mewcode_skips_auto_compaction_says_so_beside_the_numbers(self, pipeline: AppTest) -> None:
        load_sample(pipeline)
        pipeline.selectbox(key="pipeline.preset").set_value("mewcode").run()
        assert not [c for c in pipeline.caption if c.value.startswith("Inactive by design")]
        pipeline.number_input(key=key(pipeline, "window")).set_value(32_000).run()
        no_exception(pipeline)
        (note,) = [c.value for c in pipeline.caption if c.value.startswith("Inactive by design")]
        assert "32,000" in note and "watermark.min_window (33,000)" in note
        assert metrics(pipeline)["Summaries"] == "0"
