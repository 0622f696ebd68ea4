"""The Timeline page: charts and totals from the replay, request selection shared with Diff, quick knobs."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from tests.app.conftest import TIMEOUT, load_sample, metrics, new_app, no_exception, switch_to


def _charts(at: AppTest) -> list[Any]:
    return list(at.get("plotly_chart"))


class TestRendering:
    def test_no_session_shows_the_empty_state(self, bare_app: AppTest) -> None:
        switch_to(bare_app, "timeline")
        assert bare_app.button(key="lab.load_sample")
        assert not _charts(bare_app) and not bare_app.metric

    def test_sample_draws_three_charts_and_the_totals(self, app: AppTest) -> None:
        switch_to(app, "timeline")
        assert len(_charts(app)) == 3
        m = metrics(app)
        assert {"Peak sent", "Over watermark", "Compactions", "Overflows / failures", "Cost", "Cache hits"} <= set(m)
        assert int(m["Compactions"]) > 0  # the small sample spills and dedups under minicode
        assert not app.error

    def test_empty_state_button_loads_and_draws(self, bare_app: AppTest) -> None:
        switch_to(bare_app, "timeline")
        load_sample(bare_app)
        assert len(_charts(bare_app)) == 3


class TestSelection:
    def test_number_input_selects_the_request_for_diff(self, app: AppTest) -> None:
        switch_to(app, "timeline")
        app.number_input(key="timeline.request").set_value(7).run()
        no_exception(app)
        assert app.session_state["lab.request"] == 7
        assert list(app.query_params["request"]) == ["7"]
        assert any(t.value.startswith("request 7:") for t in app.text)
        links = list(app.get("page_link"))
        if links:  # the Diff page exists once app helper B's file is in the tree
            assert "request 7" in links[0].proto.label

    def test_url_query_param_opens_at_that_request(self) -> None:
        at = load_sample(new_app())
        switch_to(at, "timeline")
        at.query_params["request"] = "5"
        at.run()
        assert any(t.value.startswith("request 5:") for t in at.text)

    def test_request_beyond_the_last_is_clamped(self, app: AppTest) -> None:
        app.session_state["lab.request"] = 10_000
        switch_to(app, "timeline")
        assert any(t.value.startswith("request 39:") for t in app.text)


def _click_script() -> None:
    import streamlit as st

    from lab.ui import state

    points = st.session_state.get("test.points", [])
    st.text(str(state.select_from_click(points, 10, "test.memo")))
    st.text(str(st.session_state.get("lab.request")))


class TestChartClick:
    def test_a_click_selects_once_and_later_picks_win(self) -> None:
        at = AppTest.from_function(_click_script, default_timeout=TIMEOUT)
        at.session_state["test.points"] = [{"x": 4, "y": 100, "curve_number": 1}]
        at.run()
        assert [t.value for t in at.text] == ["True", "4"]
        # The chart still reports the same point after another widget picked request 2.
        at.session_state["lab.request"] = 2
        at.run()
        assert [t.value for t in at.text] == ["False", "2"]
        at.session_state["test.points"] = [{"x": 99}]
        at.run()
        assert [t.value for t in at.text] == ["True", "10"]  # clamped to the last request


class TestQuickKnobs:
    def test_knob_changes_the_replay_like_the_pipeline_page(self, app: AppTest) -> None:
        switch_to(app, "timeline")
        app.number_input(key="tl0:window").set_value(12_000).run()
        before = int(metrics(app)["Over watermark"])
        app.slider(key="tl0:watermark.ratio").set_value(0.5).run()
        no_exception(app)
        assert int(metrics(app)["Over watermark"]) > before
        assert app.session_state["lab.config"].watermark.ratio == 0.5

    def test_pipeline_change_shows_on_the_timeline(self) -> None:
        at = load_sample(new_app())
        switch_to(at, "timeline")
        peak = metrics(at)["Peak sent"]
        switch_to(at, "pipeline")
        at.toggle(key="cfg0:spill.enabled").set_value(False).run()
        at.toggle(key="cfg0:microcompact.enabled").set_value(False).run()
        switch_to(at, "timeline")
        assert metrics(at)["Peak sent"] != peak


def _no_requests_page(page: str) -> None:
    import runpy

    from lab.core.messages import Transcript
    from lab.ui import state
    from tests.builders import system, user

    if state.get_transcript() is None:
        state.set_transcript(Transcript(messages=[system(), user("<b>hi</b> **there**")]), "no-requests")
    runpy.run_path(page, run_name="__main__")


def test_session_without_requests_explains_instead_of_charting() -> None:
    from tests.app.conftest import PAGES

    at = AppTest.from_function(_no_requests_page, default_timeout=TIMEOUT, kwargs={"page": str(PAGES / "timeline.py")})
    at.run()
    no_exception(at)
    assert any("no model requests" in i.value for i in at.info)
    assert not _charts(at)
