"""The Compare page: 2-4 configs (current, presets, saved) replayed and overlaid, the table with the best values."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from lab.core.presets import preset_names
from tests.app.conftest import no_exception, switch_to


def _table(at: AppTest):  # noqa: ANN202 - a pandas DataFrame
    return at.dataframe[0].value


class TestCompare:
    def test_no_session_shows_the_empty_state(self, bare_app: AppTest) -> None:
        switch_to(bare_app, "compare")
        assert bare_app.button(key="lab.load_sample")
        assert not bare_app.dataframe

    def test_default_compares_current_with_another_preset(self, app: AppTest) -> None:
        switch_to(app, "compare")
        table = _table(app)
        assert list(table["config"]) == ["current", "mewcode"]
        assert {"peak_sent", "cost", "cache_hit_ratio", "retention_score", "invalid_requests"} <= set(table.columns)
        assert len(list(app.get("plotly_chart"))) == 1
        # under minicode the small sample spills and clears; mewcode's 50 KB threshold never fires on it
        assert table.loc[0, "peak_sent"] < table.loc[1, "peak_sent"]

    def test_offers_current_every_preset_and_at_most_four(self, app: AppTest) -> None:
        switch_to(app, "compare")
        pick = app.multiselect(key="compare.pick")
        assert pick.options == ["current", *preset_names()]
        assert pick.proto.max_selections == 4

    def test_three_configs(self, app: AppTest) -> None:
        switch_to(app, "compare")
        app.multiselect(key="compare.pick").set_value(["minicode", "mewcode", "codex"]).run()
        no_exception(app)
        assert list(_table(app)["config"]) == ["minicode", "mewcode", "codex"]

    def test_fewer_than_two_asks_for_more(self, app: AppTest) -> None:
        switch_to(app, "compare")
        app.multiselect(key="compare.pick").set_value(["current"]).run()
        no_exception(app)
        assert any("at least two" in i.value for i in app.info)
        assert not app.dataframe

    def test_saved_config_can_be_compared(self, app: AppTest) -> None:
        switch_to(app, "pipeline")
        app.toggle(key="cfg0:spill.enabled").set_value(False).run()
        switch_to(app, "compare")
        app.text_input(key="compare.save_name").set_value("no spill").run()
        app.button(key="compare.save").click().run()
        no_exception(app)
        assert "saved: no spill" in app.multiselect(key="compare.pick").options
        app.multiselect(key="compare.pick").set_value(["minicode", "saved: no spill"]).run()
        table = _table(app)
        assert list(table["config"]) == ["minicode", "saved: no spill"]
        assert table.loc[0, "compactions_tool_budget"] > 0 and table.loc[1, "compactions_tool_budget"] == 0

    def test_save_without_a_name_is_an_error(self, app: AppTest) -> None:
        switch_to(app, "compare")
        app.button(key="compare.save").click().run()
        no_exception(app)
        assert any("needs a name" in e.value for e in app.error)
