"""The Diff page: empty state, side-by-side stubs and summaries, and literal rendering of transcript text."""

from __future__ import annotations

from typing import Any

import re

import pytest
from streamlit.testing.v1 import AppTest

from lab.core import preset
from lab.formats import load
from lab.replayer import replay
from lab.views.diff import diff_context, event_requests
from lab.core.config import with_values
from tests.conftest import ROOT, SAMPLES

TIMEOUT = 120
APP = ROOT / "lab" / "app.py"
PAGE = str(ROOT / "pages" / "diff.py")
XSS_SAMPLE = "claude-code-preview-xss.jsonl"
SMALL = "generated-small.lab.json"


def _page(page: str, sample: str | None = None, config_json: str | None = None) -> None:
    """Load a sample (and a config) into the session once, then run one page file as its own script."""
    import runpy

    import streamlit as st

    from lab.core.config import CompactionConfig
    from lab.ui.settings import set_config
    from lab.ui.transcript import get_transcript, load_sample

    if sample is not None and get_transcript() is None:
        load_sample(sample)
    if config_json is not None and not st.session_state.get("test.config_set"):
        st.session_state["test.config_set"] = True
        set_config(CompactionConfig.model_validate_json(config_json))
    runpy.run_path(page, run_name="__main__")


def page_test(sample: str | None = None, config_json: str | None = None) -> AppTest:
    return AppTest.from_function(_page, default_timeout=TIMEOUT, kwargs={"page": PAGE, "sample": sample, "config_json": config_json})


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _markdown_like(at: AppTest) -> list[str]:
    """Every rendered value that Streamlit would interpret as markdown or HTML."""
    values: list[str] = []
    for kind in ("markdown", "caption", "title", "header", "subheader", "info", "warning", "error", "success", "html", "latex"):
        values += [str(getattr(e, "value", "")) for e in at.get(kind)]
    values += [str(e.label) for e in at.get("expander")]
    values += [str(getattr(e, "label", "")) for e in at.get("metric")]
    for kind in ("button", "toggle", "radio", "selectbox", "number_input", "text_input", "checkbox"):
        values += [str(getattr(e, "label", "")) for e in at.get(kind)]
    return values


class TestEmpty:
    def test_without_a_session_the_page_offers_a_sample(self) -> None:
        at = page_test().run()
        _no_exception(at)
        assert at.title[0].value == "Diff"
        assert any("No session loaded" in i.value for i in at.info)
        assert at.button(key="lab.load_sample").label == "Load a sample session"

    def test_one_click_loads_the_sample_and_draws_the_diff(self) -> None:
        at = page_test().run()
        at.button(key="lab.load_sample").click().run()
        _no_exception(at)
        assert [m.label for m in at.metric][:2] == ["tokens before", "tokens sent"]

    def test_through_the_router(self) -> None:
        at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
        at.switch_page("../pages/diff.py").run()
        _no_exception(at)
        assert at.title[0].value == "Diff"


@pytest.fixture(scope="module")
def small_report() -> Any:
    return replay(load(SAMPLES / SMALL), preset("minicode"))


def _first_stub(report: Any) -> int:
    for k in range(len(report.rows)):
        if diff_context(report.raw_at(k), report.context_at(k, include_boundaries=True)).counts["stubs"]:
            return k
    raise AssertionError("the sample must spill somewhere under minicode")


class TestWithSample:
    def test_a_stub_sits_beside_the_output_it_replaced(self, small_report: Any) -> None:
        k = _first_stub(small_report)
        diff = diff_context(small_report.raw_at(k), small_report.context_at(k, include_boundaries=True))
        stub = next(c for r in diff.rows for c in r.blocks if c.status == "stub")
        at = page_test(SMALL).run()
        at.number_input(key="lab.diff.request").set_value(k).run()
        _no_exception(at)
        codes = [c.value for c in at.code]
        assert any(stub.after.text[:200] in v for v in codes), "the stub is shown"  # type: ignore[union-attr]
        assert any(stub.before.text[:200] in v for v in codes), "what it held is shown"  # type: ignore[union-attr]
        texts = [t.value for t in at.text]
        assert any("stub standing in for" in t and stub.after.spill_path in t for t in texts)  # type: ignore[union-attr]
        # The output it replaced is labelled as such, never as a stub itself.
        assert any(t == f"{stub.before.label}\nreplaced by a stub in the context sent" for t in texts)  # type: ignore[union-attr]
        assert not any(t == f"{stub.before.label}\nstub" for t in texts)  # type: ignore[union-attr]
        # The tool pair is labelled with its id.
        assert any(stub.before.tool_id in t and t.startswith("tool call id(s)") for t in texts)  # type: ignore[union-attr]
        assert at.metric[3].label == "stubs" and int(at.metric[3].value) >= 1

    def test_the_request_number_is_shared_through_the_url(self, small_report: Any) -> None:
        at = page_test(SMALL)
        at.query_params["request"] = "3"
        at.run()
        _no_exception(at)
        assert at.number_input(key="lab.diff.request").value == 3

    def test_a_summary_is_shown_as_inserted(self) -> None:
        cfg = with_values(preset("minicode"), {"window": 8000, "summary.tail_min_tokens": 1000, "summary.tail_max_tokens": 3000})
        report = replay(load(SAMPLES / SMALL), cfg)
        k = next(r.index for r in report.rows if r.boundary_placed)
        at = page_test(SMALL, cfg.model_dump_json()).run()
        at.number_input(key="lab.diff.request").set_value(k).run()
        at.radio(key="lab.diff.before").set_value("pipeline input").run()
        _no_exception(at)
        assert int(next(m for m in at.metric if m.label == "messages removed").value) > 0
        assert any(t.value.startswith("[Compaction boundary") or "Compaction boundary" in t.value for t in at.code)
        assert any("removed by the pipeline" in e.label for e in at.expander)
        assert any("· summary ·" in t.value for t in at.text)

    def test_text_diff_of_a_changed_block(self, small_report: Any) -> None:
        k = _first_stub(small_report)
        at = page_test(SMALL).run()
        at.number_input(key="lab.diff.request").set_value(k).run()
        _no_exception(at)
        diffs = [c for c in at.code if c.language == "diff"]
        assert diffs and diffs[0].value.startswith("--- before\n+++ sent")


class TestEscaping:
    def test_script_and_markdown_render_as_literal_text(self) -> None:
        raw = load(SAMPLES / XSS_SAMPLE).messages[0].content[0].text  # type: ignore[union-attr]
        assert "<script>alert(1)</script>" in raw and "**Preview**" in raw
        at = page_test(XSS_SAMPLE).run()
        at.toggle(key="lab.diff.only").set_value(False).run()
        _no_exception(at)
        literal = [c.value for c in at.code] + [t.value for t in at.text]
        assert any(raw in v for v in literal), "the user's text appears verbatim in a text/code element"
        for value in _markdown_like(at):
            assert "<script" not in value and "onerror" not in value and "**Preview**" not in value
        assert not at.get("html"), "no raw HTML element at all"


def _summarising() -> Any:
    return with_values(preset("minicode"), {"window": 8000, "summary.tail_min_tokens": 1000, "summary.tail_max_tokens": 3000})


@pytest.fixture(scope="module")
def summarised_report() -> Any:
    return replay(load(SAMPLES / SMALL), _summarising())


PICK = "lab.diff.request"


class TestNavigation:
    def test_opens_at_the_first_compaction_not_request_zero(self, summarised_report: Any) -> None:
        first = next(r.index for r in summarised_report.rows if r.boundary_placed)
        at = page_test(SMALL, _summarising().model_dump_json()).run()
        _no_exception(at)
        assert first > 0 and at.number_input(key=PICK).value == first
        assert any(c.value.startswith(f"What happened: request {first}: ") and "boundary" in c.value for c in at.caption)

    def test_previous_and_next_go_to_requests_with_events(self, small_report: Any) -> None:
        events = [e.index for e in event_requests(small_report.rows)]
        at = page_test(SMALL).run()
        at.number_input(key=PICK).set_value(0).run()
        assert at.button(key=f"{PICK}.prev").disabled
        at.button(key=f"{PICK}.next").click().run()
        _no_exception(at)
        assert at.number_input(key=PICK).value == events[0]
        at.button(key=f"{PICK}.next").click().run()
        assert at.number_input(key=PICK).value == events[1]
        at.button(key=f"{PICK}.prev").click().run()
        assert at.number_input(key=PICK).value == events[0]

    def test_the_list_names_what_happened_and_jumps_there(self, small_report: Any) -> None:
        events = event_requests(small_report.rows)
        at = page_test(SMALL).run()
        box = at.selectbox(key=f"{PICK}.events")
        assert box.options == [e.label for e in events] and box.label == f"Requests with events ({len(events)})"
        box.set_value(events[-1].index).run()
        _no_exception(at)
        assert at.number_input(key=PICK).value == events[-1].index
        at.number_input(key=PICK).set_value(events[-1].index - 1).run()
        assert at.selectbox(key=f"{PICK}.events").value is None, "a quiet request shows no event in the list"


class TestReadingOrder:
    @pytest.fixture
    def at_summary(self, summarised_report: Any) -> AppTest:
        at = page_test(SMALL, _summarising().model_dump_json()).run()
        _no_exception(at)
        return at

    def test_the_summary_comes_before_every_message(self, at_summary: AppTest) -> None:
        texts = [t.value for t in at_summary.text]
        summary = next(i for i, t in enumerate(texts) if "· summary ·" in t)
        first_message = next(i for i, t in enumerate(texts) if "· message ·" in t)
        assert summary < first_message
        assert at_summary.tabs[0].label == "rendered"

    def test_removed_messages_fold_into_one_block_with_count_and_tokens(self, summarised_report: Any, at_summary: AppTest) -> None:
        k = at_summary.number_input(key=PICK).value
        removed = [r for r in diff_context(summarised_report.raw_at(k), summarised_report.context_at(k, include_boundaries=True)).rows
                   if r.status == "removed"]
        labels = [e.label for e in at_summary.expander if "removed by the pipeline" in e.label]
        assert len(labels) == 1
        found = re.match(r"(\d+) message\(s\) removed by the pipeline \(#\d+ to #\d+\), ([\d,]+) tokens", labels[0])
        assert found and int(found[1]) == len(removed) and int(found[2].replace(",", "")) > 0
        assert int(next(m for m in at_summary.metric if m.label == "messages removed").value) == len(removed)
        frame = at_summary.dataframe[0].value
        assert len(frame) == len(removed) and list(frame.columns) == ["#", "role", "kind", "tokens", "preview"]
        headers = {t.value.split("\n")[0] for t in at_summary.text}
        drawn = [r for r in removed if f"#{r.index} {r.message.role} · {r.kind} · {r.message.id}" in headers]
        assert drawn == [], "removed messages are not printed one by one"

    def test_tool_inputs_read_as_path_or_command(self, small_report: Any) -> None:
        at = page_test(SMALL).run()
        at.toggle(key="lab.diff.only").set_value(False).run()
        _no_exception(at)
        codes = [c.value for c in at.code]
        assert any(re.match(r"\w+ \((read|write|run|search)\)\n(path: |\$ )", c) for c in codes)
        assert not any('"file_path":' in c or '"command":' in c for c in codes), "no JSON for tools the lab can read"

    def test_pages_keep_the_element_count_bounded(self, small_report: Any) -> None:
        at = page_test(SMALL).run()
        at.number_input(key=PICK).set_value(len(small_report.rows) - 1).run()
        at.toggle(key="lab.diff.only").set_value(False).run()
        _no_exception(at)
        page = at.number_input(key="lab.diff.page")
        assert page.max > 1, "the last request of the sample needs more than one page"
        first_codes = [c.value for c in at.code]
        assert len(first_codes) <= 60
        page.set_value(2).run()
        _no_exception(at)
        assert len(at.code) <= 60 and [c.value for c in at.code] != first_codes
        assert any(c.value.startswith("Page 2 of ") for c in at.caption)
