"""The Pipeline page warns, under the widgets, about settings that cannot work at the chosen window."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from lab.core.diagnostics import config_warnings
from lab.core.presets import preset
from tests.app.conftest import no_exception, switch_to


@pytest.fixture
def mewcode(bare_app: AppTest) -> AppTest:
    at = switch_to(bare_app, "pipeline")
    at.selectbox(key="pipeline.preset").set_value("mewcode").run()
    no_exception(at)
    return at


def _warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


def test_presets_at_200k_show_no_warning(mewcode: AppTest) -> None:
    assert _warnings(mewcode) == []


def test_a_window_where_the_tail_swallows_the_threshold(mewcode: AppTest) -> None:
    mewcode.number_input(key="cfg1:window").set_value(40_000).run()
    no_exception(mewcode)
    shown = _warnings(mewcode)
    assert shown == config_warnings(preset("mewcode").model_copy(update={"window": 40_000}))
    assert any("summary.tail_min_tokens (10,000)" in w and "nothing to summarise" in w for w in shown)


def test_fixing_the_setting_clears_its_warning(mewcode: AppTest) -> None:
    mewcode.number_input(key="cfg1:window").set_value(40_000).run()
    mewcode.number_input(key="cfg1:summary.tail_min_tokens").set_value(5_000).run()
    no_exception(mewcode)
    assert not any("nothing to summarise" in w for w in _warnings(mewcode))


def _window_input(at: AppTest, prefix: str) -> str:
    keys = [str(w.key) for w in at.number_input if str(w.key or "").startswith(prefix) and str(w.key).endswith(":window")]
    assert len(keys) == 1, keys
    return keys[0]


def at_window(at: AppTest, name: str, window: int) -> AppTest:
    """The loaded sample under preset ``name`` at ``window``, set through the Pipeline page's own widgets."""
    switch_to(at, "pipeline")
    at.selectbox(key="pipeline.preset").set_value(name).run()
    at.number_input(key=_window_input(at, "cfg")).set_value(window).run()
    no_exception(at)
    return at


def test_a_breaker_that_opens_gets_an_error_banner(app: AppTest) -> None:
    # claude-code at 16k: its 10k tail swallows the 3k threshold, every auto summary fails, the breaker opens.
    at_window(app, "claude-code", 16_000)
    errors = [e.value for e in app.error]
    assert any("circuit breaker opened" in e and "summary.tail_min_tokens" in e for e in errors), errors
    assert any("No summary ever succeeded" in e for e in errors), errors


def test_a_config_that_copes_gets_no_banner(app: AppTest) -> None:
    # minicode's full compact keeps min(n/3, 5) messages, so it summarises at 16k on the same session.
    at_window(app, "minicode", 16_000)
    assert not app.error
    assert not any("circuit breaker" in w.value for w in app.warning)
