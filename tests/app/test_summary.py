"""The Summary page: each compaction's summary, the retention report, and the LLM summary beside the rules."""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from lab.core import CompactionConfig, preset
from lab.formats import load
from lab.replayer import replay
from lab.testing.fake_provider import CANNED_SUMMARY, FakeProvider, serve
from lab.replayer.report import LOST_TO
from lab.views.markdown import safe_markdown
from lab.views.summary import PART_LABELS, compaction_summaries, retention_table, summarise_request
from lab.core.config import with_values
from tests.builders import call_and_result, system, user
from tests.conftest import ROOT, SAMPLES

TIMEOUT = 120
PAGE = str(ROOT / "pages" / "summary.py")
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


def page_test(sample: str | None = None, config: CompactionConfig | None = None) -> AppTest:
    kwargs = {"page": PAGE, "sample": sample, "config_json": config.model_dump_json() if config is not None else None}
    return AppTest.from_function(_page, default_timeout=TIMEOUT, kwargs=kwargs)


def _summarising_config() -> CompactionConfig:
    """MiniCode with a window and tail small enough that the small sample gets summarised."""
    return with_values(preset("minicode"), {"window": 8000, "summary.tail_min_tokens": 1000, "summary.tail_max_tokens": 3000})


@pytest.fixture(scope="module")
def summarised() -> Any:
    return replay(load(SAMPLES / SMALL), _summarising_config())


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with serve() as f:
        yield f


class TestData:
    def test_summaries_come_from_the_events_with_the_attachment_apart(self, summarised: Any) -> None:
        items = compaction_summaries(summarised)
        events = [e for r in summarised.rows for e in r.events if e.get("summary_text")]
        assert items and len(items) == len(events)
        first = items[0]
        assert first.success and first.messages_removed > 0 and first.text in events[0]["summary_text"]
        assert first.title.startswith(f"request {first.request}: ")

    def test_attachment_is_split_off(self) -> None:
        cfg = with_values(_summarising_config(), {"summary.attachment_for_rules": True, "summary.session_memory": False})
        items = compaction_summaries(replay(load(SAMPLES / SMALL), cfg))
        assert items and items[0].attachment.startswith("## Recovery attachment")
        assert "## Recovery attachment" not in items[0].text

    def test_retention_rows_say_where_each_item_went(self, summarised: Any) -> None:
        rows = retention_table(summarised)
        assert {r["part"] for r in rows} <= set(PART_LABELS.values())
        assert sum(1 for r in rows if r["kept"]) == sum(p.kept for p in summarised.retention.parts.values())
        located = [r for r in rows if r["where"] in ("tail", "summary")]
        assert located and all(r["found in"].startswith("message ") for r in located)
        assert all(r["found in"] == "" for r in rows if r["where"] == "nowhere")
        assert all(r["lost to"] in LOST_TO for r in rows if r["where"] == "nowhere")
        assert all(r["lost to"] == "" for r in rows if r["where"] != "nowhere")

    def test_retention_items_read_as_text_not_ids_or_dicts(self, summarised: Any) -> None:
        rows = retention_table(summarised)
        items = [r["item"] for r in rows]
        assert items and all(isinstance(i, str) and not i.startswith(("{", "toolu_", "call_")) for i in items)
        removed = [r["item"] for r in rows if r["part"] == "recoverable output"]
        assert removed and all(" " in i for i in removed), "removed output is named by its tool and what it ran on"

    def test_pipeline_input_is_the_previous_context_plus_what_arrived(self, summarised: Any) -> None:
        k = next(r.index for r in summarised.rows if r.boundary_placed)
        before = summarised.input_at(k)
        prev = summarised.context_at(k - 1, include_boundaries=True)
        assert before[: len(prev)] == prev
        assert before[len(prev):] == summarised.raw_at(k)[summarised.rows[k - 1].message_index:]
        assert summarised.input_at(0) == summarised.raw_at(0)
        with pytest.raises(Exception, match="out of range"):
            summarised.input_at(len(summarised.rows))

    def test_rules_and_llm_get_the_same_request(self) -> None:
        seen = []

        class Echo:
            name = "echo"

            def summarize(self, request: Any) -> Any:
                seen.append(request)
                from lab.core import SummaryResult

                return SummaryResult(text="echo", strategy="llm")

        msgs = [system(), user("Please refactor the parser")]
        for i in range(8):
            msgs += call_and_result("Read", f"line {i}\n" * 300, file_path=f"f{i}.py")
        cfg = with_values(preset("mewcode"), {"summary.tail_min_tokens": 500, "summary.tail_min_messages": 2})
        out = summarise_request(msgs, cfg, Echo())
        assert out.llm is not None and out.llm.text == "echo"
        assert list(seen[0].messages) == list(out.removed) and out.removed[0] is msgs[1]
        assert out.kept == len(msgs) - len(out.removed) and "Please refactor the parser" in out.rules.text

    def test_nothing_to_summarise_is_a_summary_error(self) -> None:
        from lab.errors import SummaryError

        with pytest.raises(SummaryError, match="nothing to summarise"):
            summarise_request([system(), user("hi")], preset("minicode"))


HOSTILE = "Fix <script>alert(1)</script> and <img src=x onerror=alert(1)> as in [x](javascript:alert(1))"


def _hostile_page(page: str, hostile: str) -> None:
    """A session whose first request is hostile, summarised by the rules (which quote it verbatim)."""
    import runpy

    from lab.core import preset
    from lab.core.config import with_values
    from lab.core.messages import Transcript
    from lab.ui.settings import set_config
    from lab.ui.transcript import get_transcript, set_transcript
    from tests.builders import call_and_result, system, user

    if get_transcript() is None:
        msgs = [system(), user(hostile)]
        for i in range(12):
            msgs += call_and_result("Read", f"line {i}\n" * 400, file_path=f"src/f{i}.py")
        msgs.append(user("and now the tests"))
        set_transcript(Transcript(messages=msgs), "hostile")
        cfg = with_values(preset("minicode"), {"window": 8000, "summary.tail_min_tokens": 1000, "summary.tail_max_tokens": 3000,
                                               "summary.session_memory": False})
        set_config(cfg)
    runpy.run_path(page, run_name="__main__")


def _llm_on(at: AppTest) -> AppTest:
    at.toggle(key="lab.summary.llm").set_value(True).run()
    return at


class TestPage:
    def test_without_a_session(self) -> None:
        at = page_test().run()
        assert not at.exception
        assert at.title[0].value == "Summary"
        assert at.button(key="lab.load_sample")
        assert at.toggle(key="lab.summary.llm").value is False and not at.radio, "the LLM panel waits to be asked for"
        at.toggle(key="lab.summary.llm").set_value(True).run()
        assert at.radio(key="lab.llm.provider").value == "rules", "the LLM panel is there even before a session"

    def test_with_a_sample_and_no_compaction(self) -> None:
        at = page_test(SMALL).run()
        assert not at.exception and not at.error
        assert any("No compaction wrote a summary" in i.value for i in at.info)
        assert [m.label for m in at.metric][0] == "score"
        assert at.dataframe, "the retention table is drawn"

    def test_summaries_are_rendered_as_markdown_with_the_text_beside(self, summarised: Any) -> None:
        items = compaction_summaries(summarised)
        at = page_test(SMALL, _summarising_config()).run()
        assert not at.exception and not at.error
        assert [e.label for e in at.expander][: len(items)] == [i.title for i in items]
        markdown = [m.value for m in at.markdown]
        assert safe_markdown(items[0].text) in markdown, "rendered"
        assert "\n## " in items[0].text, "the summary really has markdown (headings) to render"
        assert items[0].text in [c.value for c in at.code], "and as plain text in its own tab"

    def test_retention_explains_its_parts_and_shows_readable_items(self, summarised: Any) -> None:
        at = page_test(SMALL, _summarising_config()).run()
        captions = [c.value for c in at.caption]
        assert any(c.startswith("Planted facts: ") for c in captions) and any(c.startswith("Recoverable: ") for c in captions)
        frame = at.dataframe[0].value
        assert list(frame.columns) == ["part", "item", "where", "kept", "lost to", "found in"]
        assert all(isinstance(v, str) for v in frame["item"])
        assert set(frame["part"]) <= set(PART_LABELS.values())

    def test_hostile_summary_text_is_escaped_not_rendered(self) -> None:
        at = AppTest.from_function(_hostile_page, default_timeout=TIMEOUT, kwargs={"page": PAGE, "hostile": HOSTILE}).run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        rendered = [m.value for m in at.markdown if "Fix " in m.value]
        assert rendered, "the summary quoting the hostile request is rendered as markdown"
        for value in rendered:
            assert "<script" not in value and "<img" not in value
            assert not re.search(r"(?<!\\)\]\(javascript:", value), "no link: its bracket is escaped"
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in value and "\\[x\\](javascript:alert(1))" in value
        assert any(HOSTILE in c.value for c in at.code), "the plain-text tab shows it as written"
        assert not at.get("html")

    def test_llm_panel_without_a_key_does_not_fail(self) -> None:
        at = _llm_on(page_test(SMALL).run())
        at.radio(key="lab.llm.provider").set_value("anthropic").run()
        assert not at.exception and not at.error
        assert any("No API key for anthropic" in i.value for i in at.info)
        assert at.button(key="lab.llm.run").disabled

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_llm_summary_from_the_fake_provider_is_shown_beside_the_rules(self, fake: FakeProvider, provider: str) -> None:
        at = _llm_on(page_test(SMALL, preset("mewcode")).run())
        at.radio(key="lab.llm.provider").set_value(provider).run()
        at.text_input(key="lab.llm.base_url").input(fake.base_url(provider)).run()  # type: ignore[arg-type]
        picker = at.number_input(key="lab.summary.request")
        picker.set_value(picker.max).run()  # the last request: MewCode's tail leaves plenty to summarise
        at.button(key="lab.llm.run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        codes = [c.value for c in at.code]
        assert any(CANNED_SUMMARY in v for v in codes), "the LLM's summary is shown"
        assert any(v.startswith("[Context compacted at") for v in codes), "the rule-based one beside it"
        assert len(fake.generation_requests) == 1 and fake.generation_requests[0].api == provider

    def test_provider_error_is_shown_and_the_app_keeps_running(self, fake: FakeProvider) -> None:
        fake.script("auth")
        at = _llm_on(page_test(SMALL, preset("mewcode")).run())
        at.radio(key="lab.llm.provider").set_value("openai").run()
        at.text_input(key="lab.llm.base_url").input(fake.base_url_openai).run()
        picker = at.number_input(key="lab.summary.request")
        picker.set_value(picker.max).run()
        at.button(key="lab.llm.run").click().run()
        assert not at.exception
        assert at.error and "authentication failed" in at.error[0].value
        assert at.title[0].value == "Summary" and at.metric, "the rest of the page is still drawn"

    def test_nothing_to_summarise_is_an_error_not_a_crash(self, fake: FakeProvider) -> None:
        at = _llm_on(page_test(SMALL).run())
        at.radio(key="lab.llm.provider").set_value("openai").run()
        at.text_input(key="lab.llm.base_url").input(fake.base_url_openai).run()
        at.button(key="lab.llm.run").click().run()  # request 0: one user message, nothing before the tail
        assert not at.exception
        assert at.error and "nothing to summarise" in at.error[0].value
        assert fake.generation_requests == []


def test_open_the_last_request_in_diff() -> None:
    at = AppTest.from_file(str(ROOT / "lab" / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("../pages/summary.py").run()
    at.button(key="lab.load_sample").click().run()
    at.button(key="lab.summary.to_diff").click().run()
    assert not at.exception
    assert at.title[0].value == "Diff"
    picker = at.number_input(key="lab.diff.request")
    assert picker.value == picker.max


def _timed_page(page: str, sample: str) -> None:
    """The page after the session is loaded and replayed (shared with every page), its own work timed."""
    import time

    import streamlit as st

    from lab.ui.replays import get_report
    from lab.ui.transcript import get_transcript, load_sample
    from tests.app.test_summary import _page

    if get_transcript() is None:
        load_sample(sample)
        get_report()
        # The Session page (the default one) has imported pandas, which st.dataframe needs, before any visit here.
        import pandas  # noqa: F401
    t = time.perf_counter()
    _page(page)
    st.session_state["test.seconds"] = time.perf_counter() - t


FIRST_VISIT = """
import sys
sys.path.insert(0, {root!r})
from streamlit.testing.v1 import AppTest
from tests.app.test_summary import _timed_page, PAGE, SMALL

at = AppTest.from_function(_timed_page, default_timeout=300, kwargs={{"page": PAGE, "sample": SMALL}}).run()
assert not at.exception, at.exception
print(at.session_state["test.seconds"], "anthropic" in sys.modules or "openai" in sys.modules)
"""


def test_the_first_visit_imports_no_provider_sdk_and_is_quick() -> None:
    """Measured in a fresh process: the SDK imports (seconds) made the first visit slow; now they wait for the toggle."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FIRST_VISIT.format(root=str(ROOT))], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    seconds, sdk = out.stdout.split()
    assert sdk == "False", "no provider SDK is imported until the LLM panel is turned on"
    # The page's own work took 0.03-0.25 s here, on a loaded 2-core machine; the bound only catches a regression to seconds.
    assert float(seconds) < 3.0, f"first visit took {seconds} s"


class TestProbePanel:
    """The "Probe this context" panel: off by default, uses the LLM settings kept in memory, scores from the fake judge."""

    def test_off_by_default_and_asks_for_a_model_first(self) -> None:
        at = page_test(SMALL).run()
        assert at.toggle(key="lab.summary.probe").value is False
        at.toggle(key="lab.summary.probe").set_value(True).run()
        assert not at.exception and not at.error
        assert any("Probes need a model" in i.value for i in at.info)
        assert all(b.key != "lab.probe.run" for b in at.button), "nothing to run without a model"

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_scores_from_the_fake_provider_equal_the_scripted_grades(self, fake: FakeProvider, provider: str) -> None:
        from statistics import mean

        from tests.probe.sessions import GRADES, script

        script(fake)
        at = _llm_on(page_test(SMALL, preset("mewcode")).run())
        at.radio(key="lab.llm.provider").set_value(provider).run()
        at.text_input(key="lab.llm.base_url").input(fake.base_url(provider)).run()  # type: ignore[arg-type]
        at.toggle(key="lab.summary.probe").set_value(True).run()
        picker = at.number_input(key="lab.probe.request")
        picker.set_value(picker.max).run()
        assert any(c.value.startswith("estimate: total <= $") for c in at.caption), "the estimate is shown before running"
        assert fake.generation_requests == []
        at.button(key="lab.probe.run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        table = at.dataframe[-2].value
        kinds = list(table["probe"])
        assert kinds and set(kinds) <= set(GRADES)
        for _, row in table.iterrows():
            assert row["score"] == f"{mean(GRADES[row['probe']].values()):.2f}"
        graded = [v for k in kinds for v in GRADES[k].values()]
        assert any(m.value == f"{mean(graded):.2f}" for m in at.metric if m.label == "probe score (0-5)")
        assert len(fake.generation_requests) == 2 * len(kinds) and all(r.api == provider for r in fake.generation_requests)

    def test_hostile_transcript_text_in_a_reference_is_not_rendered(self, fake: FakeProvider) -> None:
        from tests.probe.sessions import script

        script(fake)
        at = AppTest.from_function(_hostile_page, default_timeout=TIMEOUT, kwargs={"page": PAGE, "hostile": HOSTILE}).run()
        at = _llm_on(at)
        at.radio(key="lab.llm.provider").set_value("openai").run()
        at.text_input(key="lab.llm.base_url").input(fake.base_url_openai).run()
        at.toggle(key="lab.summary.probe").set_value(True).run()
        at.number_input(key="lab.probe.request").set_value(0).run()  # the hostile request is still the latest instruction
        at.button(key="lab.probe.run").click().run()
        assert not at.exception and not at.error
        references = [c.value for c in at.code if c.value.startswith("The user's latest instruction: ")]
        assert references and references[0].startswith(f"The user's latest instruction: {HOSTILE}"), "shown as text, verbatim"
        assert not any("<script" in m.value for m in at.markdown) and not at.get("html")


class TestCompactionsInWords:
    """Issue 31 §4: the Summary page counts summaries apart from spills and clearing, in the CLI's words."""

    def test_spills_without_a_summary_are_said_as_spills_not_as_no_compaction(self) -> None:
        from lab.replayer.report import describe_compactions

        cfg = preset("minicode")  # the small sample at 200k: spills and clearing, no summary
        at = page_test(SMALL, cfg)
        at.run()
        assert not at.exception
        report = replay(load(SAMPLES / SMALL), cfg)
        kinds = report.compactions_by_kind
        assert kinds["summary"] == 0 and sum(kinds.values()) > 0
        captions = "\n".join(c.value for c in at.caption)
        assert f"This replay's compactions: {describe_compactions(kinds)}." in captions
        assert "{" not in captions and "tool_budget" not in captions
        info = "\n".join(i.value for i in at.info)
        assert "No compaction wrote a summary" in info
        assert f"The {sum(kinds.values())} other compaction(s) above moved or cleared tool output" in info

    def test_a_summarised_replay_counts_its_summaries(self, summarised: Any) -> None:
        at = page_test(SMALL, _summarising_config())
        at.run()
        assert not at.exception
        n = summarised.compactions_by_kind["summary"]
        assert n > 0
        captions = "\n".join(c.value for c in at.caption)
        assert f"{n} {'summary' if n == 1 else 'summaries'}" in captions
