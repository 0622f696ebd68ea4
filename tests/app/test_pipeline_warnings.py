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
