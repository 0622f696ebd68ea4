"""Issue 31 §12: what a config skips at its window on purpose is said beside the numbers on Timeline, Summary and Compare,
as on the Pipeline page, so a smaller window's bigger peak never reads as a bug."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import load_sample, new_app, no_exception, switch_to

NOTE = "Inactive by design: auto-compaction skipped by design"


@pytest.fixture
def mewcode_at_32k() -> AppTest:
    """The sample under MewCode at a 32k window, at or below its watermark.min_window (33,000): no auto-compaction."""
    at = switch_to(load_sample(new_app()), "pipeline")
    at.selectbox(key="pipeline.preset").set_value("mewcode").run()
    at.number_input(key=f"cfg{at.session_state['lab.widget_gen']}:window").set_value(32_000).run()
    no_exception(at)
    return at


def _notes(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if "Inactive by design" in c.value]


@pytest.mark.parametrize("page", ["timeline", "summary"])
def test_the_page_says_what_the_config_skips(mewcode_at_32k: AppTest, page: str) -> None:
    (note,) = _notes(switch_to(mewcode_at_32k, page))
    assert note.startswith(NOTE) and "32,000" in note and "watermark.min_window (33,000)" in note


def test_compare_says_it_per_config(mewcode_at_32k: AppTest) -> None:
    notes = _notes(switch_to(mewcode_at_32k, "compare"))
    # Every config runs at the current 32k window: the current config (MewCode) skips auto-compaction, MiniCode does not.
    assert len(notes) == 1 and notes[0].startswith("current") and NOTE in notes[0]


def test_nothing_is_said_when_every_stage_acts() -> None:
    at = load_sample(new_app())
    for page in ("timeline", "summary", "compare"):
        assert _notes(switch_to(at, page)) == [], page
