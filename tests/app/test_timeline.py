"""The Timeline page: charts and totals from the replay, request selection shared with Diff, quick knobs."""

from __future__ import annotations

import re
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.app.test_pipeline import key
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
        assert {"Peak sent", "Over watermark", "Summaries", "Overflows / failures / invalid", "Cost", "Cache hits"} <= set(m)
        # Summaries are counted apart from spills and clearing, and every kind is said in words, never as a dict.
        assert int(m["Summaries"]) >= 0
        said = "\n".join(c.value for c in app.caption)
        assert "Compactions: " in said and "{" not in said
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
        assert links and "request 7" in links[0].proto.label

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

    from lab.ui.navigation import select_from_click

    points = st.session_state.get("test.points", [])
    st.text(str(select_from_click(points, 10, "test.memo")))
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
        app.number_input(key=key(app, "window", "tl")).set_value(12_000).run()
        before = int(metrics(app)["Summaries"])
        app.slider(key=key(app, "watermark.ratio", "tl")).set_value(0.5).run()
        no_exception(app)
        # A lower watermark lets the full compact (tail: the newest min(n/3, 5) messages) run where 85% never triggered.
        assert int(metrics(app)["Summaries"]) > before
        assert app.session_state["lab.config"].watermark.ratio == 0.5

    def test_pipeline_change_shows_on_the_timeline(self) -> None:
        at = load_sample(new_app())
        switch_to(at, "timeline")
        peak = metrics(at)["Peak sent"]
        switch_to(at, "pipeline")
        at.toggle(key=key(at, "spill.enabled")).set_value(False).run()
        at.toggle(key=key(at, "microcompact.enabled")).set_value(False).run()
        switch_to(at, "timeline")
        assert metrics(at)["Peak sent"] != peak


def _no_requests_page(page: str) -> None:
    import runpy

    from lab.core.messages import Transcript
    from lab.ui.transcript import get_transcript, set_transcript
    from tests.builders import system, user

    if get_transcript() is None:
        set_transcript(Transcript(messages=[system(), user("<b>hi</b> **there**")]), "no-requests")
    runpy.run_path(page, run_name="__main__")


def test_session_without_requests_explains_instead_of_charting() -> None:
    from tests.app.conftest import PAGES

    at = AppTest.from_function(_no_requests_page, default_timeout=TIMEOUT, kwargs={"page": str(PAGES / "timeline.py")})
    at.run()
    no_exception(at)
    assert any("no model requests" in i.value for i in at.info)
    assert not _charts(at)


class TestLoudFailures:
    def test_breaker_banner_and_honest_failure_count(self, app: AppTest) -> None:
        from tests.app.test_pipeline_warnings import at_window

        at_window(app, "claude-code", 16_000)
        switch_to(app, "timeline")
        errors = [e.value for e in app.error]
        assert any("circuit breaker opened" in e for e in errors), errors
        overflows, failures, _ = metrics(app)["Overflows / failures / invalid"].split(" / ")
        # Nothing overflowed, yet requests went over the watermark with the breaker open: those are failures.
        assert overflows == "0" and int(failures) > 0

    def test_no_banner_when_the_config_copes(self, app: AppTest) -> None:
        switch_to(app, "timeline")
        assert not app.error
        assert metrics(app)["Overflows / failures / invalid"] == "0 / 0 / 0"


class TestCostYouCanTrust:
    """Issue 12 §6: the cost says which model's prices it used, and "no change" when nothing changed."""

    @staticmethod
    def _cost(at: AppTest) -> Any:
        return next(m for m in at.metric if m.label == "Cost")

    @staticmethod
    def _captions(at: AppTest) -> str:
        return "\n".join(c.value for c in at.caption)

    def test_the_sessions_model_prices_the_replay_and_says_so(self, app: AppTest) -> None:
        from lab.replayer.prices import PRICES_TAKEN

        switch_to(app, "timeline")
        # The sample's model is claude-sonnet-4-5: billed at that row, named with its date and numbers.
        assert app.session_state["lab.replay_settings"].pricing.model == "Claude Sonnet 4.5"
        text = self._captions(app)
        assert "Claude Sonnet 4.5 prices" in text and PRICES_TAKEN in text and "input \\$3.00" in text
        # Every dollar sign is escaped: markdown would read a pair of them as math.
        assert re.search(r"(?<!\\)\$", text + self._cost(app).help) is None
        assert "The session's model 'claude-sonnet-4-5' is Claude Sonnet 4.5." in text
        assert "Claude Sonnet 4.5 prices" in self._cost(app).help

    def test_a_gpt_session_is_billed_at_its_row(self, bare_app: AppTest) -> None:
        switch_to(bare_app, "session")
        bare_app.selectbox(key="session.sample").set_value("codex-rollout-forecast.jsonl").run()
        bare_app.button(key="session.load_sample").click().run()
        switch_to(bare_app, "timeline")
        pricing = bare_app.session_state["lab.replay_settings"].pricing
        assert (pricing.model, pricing.input_per_mtok, pricing.cache_read_per_mtok) == ("GPT-5", 1.25, 0.125)
        assert "GPT-5 prices" in self._captions(bare_app)

    def test_edited_prices_are_called_custom_and_kept(self, app: AppTest) -> None:
        switch_to(app, "pipeline")
        # The key's generation moves as the session's window and prices are applied: found by its path.
        key = next(str(w.key) for w in app.number_input if str(w.key or "").endswith(":replay.pricing.input_per_mtok"))
        app.number_input(key=key).set_value(4.0).run()
        switch_to(app, "timeline")
        assert app.session_state["lab.replay_settings"].pricing.input_per_mtok == 4.0
        assert "Custom prices, edited from Claude Sonnet 4.5" in self._captions(app)

    def test_no_change_instead_of_a_zero_saving(self, app: AppTest) -> None:
        switch_to(app, "pipeline")
        # Every stage off: the compacted bill is the raw one.
        for stage in ("spill", "dedup", "microcompact", "watermark", "summary"):
            key = next(str(t.key) for t in app.toggle if str(t.key or "").endswith(f":{stage}.enabled"))
            app.toggle(key=key).set_value(False).run()
        switch_to(app, "timeline")
        cost = self._cost(app)
        assert cost.delta == "no change"
        assert "-$0.0000" not in cost.delta

    def test_a_real_saving_keeps_its_delta(self, app: AppTest) -> None:
        switch_to(app, "timeline")
        delta = self._cost(app).delta
        assert delta.endswith(" vs none") and delta != "no change"


def test_quick_knobs_are_disabled_when_idle(app: AppTest) -> None:
    switch_to(app, "pipeline")
    app.selectbox(key="pipeline.preset").set_value("claude-code").run()
    switch_to(app, "timeline")
    ratio = app.slider(key=key(app, "watermark.ratio", "tl"))
    assert ratio.disabled and "'reserve'" in ratio.help
    assert app.number_input(key=key(app, "spill.threshold", "tl")).disabled
    assert not app.number_input(key=key(app, "window", "tl")).disabled


def test_the_recorded_usage_fit_is_said_beside_the_chart(app: AppTest) -> None:
    switch_to(app, "timeline")
    said = [c.value for c in app.caption] + [i.value for i in app.info]
    assert any("tokens per request that this file does not hold" in s for s in said)
    no_exception(app)


def test_content_recall_is_shown_beside_the_names_score(app: AppTest) -> None:
    switch_to(app, "timeline")
    m = metrics(app)
    assert {"Content recall", "Content items needed", "Names recall", "Re-read tokens"} <= set(m)
    shown = next(x for x in app.metric if x.label == "Content recall")
    # Its help says what it rests on.
    assert "needed lines and spans" in (shown.help or "")
    assert m["Content items needed"].replace(",", "").isdigit()


class TestOneCostEverywhere:
    """Issue 31 §2: the library, `lab replay` and the Timeline bill one replay alike, and name the same row."""

    def test_library_cli_and_timeline_give_the_same_cost_and_model(self, app: AppTest, tmp_path: Any, capsys: Any) -> None:
        from lab.cli.main import main
        from lab.core.config import dump_config
        from lab.replayer import replay
        from lab.replayer.prices import cost_text
        from tests.conftest import SAMPLES

        switch_to(app, "timeline")
        cfg = app.session_state["lab.config"]
        path = SAMPLES / "generated-small.lab.json"
        # The library with no settings at all: the one rule picks the session's own model.
        report = replay(path, cfg)
        assert report.pricing_source == "session" and report.settings["pricing"]["model"] == "Claude Sonnet 4.5"
        said = cost_text(report.total_cost, report.settings)
        assert said.startswith(f"${report.total_cost:,.4f} (Claude Sonnet 4.5: $3/$15 per MTok in/out")
        # The CLI with the app's config and no --settings.
        config = tmp_path / "app-config.json"
        config.write_text(dump_config(cfg, "json"), encoding="utf-8")
        capsys.readouterr()
        assert main(["replay", str(path), "--config", str(config)]) == 0
        cost_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("cost: "))
        assert cost_line.startswith(f"cost: {said} with compaction")
        assert "priced at the session's own model (claude-sonnet-4-5" in cost_line
        # The Timeline: the same figure, the same row and prices beside it (dollars escaped for markdown).
        captions = "\n".join(c.value for c in app.caption)
        assert said.replace("$", "\\$") in captions
        assert next(m for m in app.metric if m.label == "Cost").value == f"${report.total_cost:.4f}"

    def test_chosen_prices_win_in_the_app_as_in_the_library(self, app: AppTest) -> None:
        switch_to(app, "pipeline")
        row = next(str(w.key) for w in app.selectbox if str(w.key or "").endswith(":replay.pricing.model"))
        app.selectbox(key=row).set_value("Claude Haiku 4.5").run()
        switch_to(app, "timeline")
        captions = "\n".join(c.value for c in app.caption)
        assert "(Claude Haiku 4.5: \\$1/\\$5 per MTok in/out" in captions
        assert "priced at the replay settings (chosen prices win" in captions
        # Following the session again: its own row at once, in the widgets and on the Timeline.
        switch_to(app, "pipeline")
        follow = next(str(w.key) for w in app.toggle if str(w.key or "").endswith(":replay.pricing.follow_session"))
        assert app.toggle(key=follow).value is False
        app.toggle(key=follow).set_value(True).run()
        pricing = app.session_state["lab.replay_settings"].pricing
        assert (pricing.model, pricing.follow_session) == ("Claude Sonnet 4.5", True)
        switch_to(app, "timeline")
        assert "priced at the session's own model" in "\n".join(c.value for c in app.caption)


def _with_invalid(real: Any) -> Any:
    """``lab.ui.replays.get_report`` over the real replay, two of its requests marked invalid as a source with blank text makes them."""

    def get_report() -> Any:
        report = real()
        rows = list(report.rows)
        for k in (2, 5):
            rows[k] = rows[k].model_copy(update={"valid_anthropic": False, "problems": [f"message {k} (assistant, id a_{k}): empty text block"]})
        return report.model_copy(update={"rows": rows, "invalid_requests": 2})

    return get_report


class TestInvalidExplained:
    """Issue 31 §6: the invalid count comes with its reasons and where, in the failures metric and a warning."""

    def test_the_timeline_shows_invalid_requests_with_their_reason(self, app: AppTest, monkeypatch: Any) -> None:
        from lab.ui import replays

        monkeypatch.setattr(replays, "get_report", _with_invalid(replays.get_report))
        switch_to(app, "timeline")
        shown = next(m for m in app.metric if m.label == "Overflows / failures / invalid")
        assert shown.value.endswith(" / 2")
        assert "empty text block" in shown.help and "requests 2, 5" in shown.help
        warned = [w.value for w in app.warning if "invalid request" in w.value]
        assert len(warned) == 1 and "2 invalid request(s)" in warned[0]
        # The ids come from the transcript: shown as written, escaped, never as markdown emphasis.
        assert "a\\_2" in warned[0] and "empty text block" in warned[0]
