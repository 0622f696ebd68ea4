"""``lab.explore`` driven by setting its widgets' values, as a user moving them would."""

from __future__ import annotations

import annotated_types as at
import ipywidgets as w
import plotly.graph_objects as go
import pytest

import lab
from lab.generator import generate
from lab.core.stages.watermark import WatermarkConfig
from lab.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Transcript
from lab.notebook import Explorer, explore, notable
from lab.core.config import with_value
from tests.conftest import SAMPLES

WINDOW = 64_000


@pytest.fixture(scope="module")
def session() -> Transcript:
    # Its raw history peaks near 124k tokens, so at 64k minicode has to compact.
    return generate(seed=3, requests=150)


@pytest.fixture()
def ex(session: Transcript) -> Explorer:
    return explore(session, "minicode", window=WINDOW)


def _trace(fig: go.FigureWidget, name: str) -> go.Scatter:
    return next(t for t in fig.data if t.name == name)


class TestControls:
    def test_every_setting_has_a_control_with_the_fields_bounds_and_help(self, ex: Explorer) -> None:
        ratio = ex.controls.widgets["watermark.ratio"]
        assert isinstance(ratio, w.FloatSlider)
        field = WatermarkConfig.model_fields["ratio"]
        assert ratio.tooltip == field.description
        assert ratio.min == next(m.ge for m in field.metadata if isinstance(m, at.Ge))
        assert ratio.max == next(m.le for m in field.metadata if isinstance(m, at.Le))
        assert isinstance(ex.controls.widgets["summary.enabled"], w.Checkbox)
        assert isinstance(ex.controls.widgets["counter"], w.Dropdown)
        assert "anthropic" not in ex.controls.widgets["counter"].options
        # A 200k-wide window gets a number box that does not clamp to ipywidgets' default 0..100.
        assert ex.controls.widgets["window"].value == WINDOW

    def test_one_accordion_section_per_stage_and_off_stages_say_so(self, ex: Explorer) -> None:
        titles = [ex.controls.sections.get_title(i) for i in range(len(ex.controls.sections.children))]
        assert [t.split(" (")[0] for t in titles] == ["Active", "Spill", "Dedup", "Microcompact", "Watermark", "Summary", "Recovery", "Replay"]
        ex.set("summary.enabled", False)
        assert ex.controls.sections.get_title(5) == "Summary (off)"


    def test_a_setting_with_no_effect_is_disabled_and_says_why(self, session: Transcript) -> None:
        ex = explore(session, "mewcode", window=WINDOW)
        ratio = ex.controls.widgets["watermark.ratio"]
        assert ratio.disabled and "No effect now" in ratio.tooltip and "reserve" in ratio.tooltip
        ex.set("watermark.mode", "ratio")
        assert not ratio.disabled and "No effect now" not in (ratio.tooltip or "")

class TestReplayOnChange:
    def test_a_slider_move_replays_and_updates_the_same_figure_widget(self, ex: Explorer) -> None:
        fig, report = ex.figure, ex.report
        watermark = list(_trace(fig, "watermark").y)
        sent = list(_trace(fig, "sent").y)
        ex.controls.widgets["watermark.ratio"].value = 0.5
        assert ex.report is not report
        assert ex.config.watermark.ratio == 0.5
        assert ex.figure is fig
        assert list(_trace(fig, "watermark").y) != watermark
        assert list(_trace(fig, "sent").y) != sent
        assert list(_trace(fig, "sent").y) == [r.sent_tokens for r in ex.report.rows]
        # The figure's traces are the ones a fresh chart of the new report would draw, in its order.
        assert [t.name for t in fig.data] == [t.name for t in lab.figures.timeline(ex.report).data]

    def test_a_rejected_value_is_put_back_and_explained(self, ex: Explorer) -> None:
        report = ex.report
        before = ex.controls.widgets["microcompact.clear_text"].value
        ex.set("microcompact.clear_text", "x" * 501)  # the field's max_length is 500; a text box does not enforce it
        assert ex.report is report
        assert ex.controls.widgets["microcompact.clear_text"].value == before
        assert "Not applied" in ex.status.value and "microcompact.clear_text" in ex.status.value

    def test_a_number_box_keeps_to_the_fields_bounds(self, ex: Explorer) -> None:
        ex.set("window", 500)  # below the field's ge=1000: the box clamps, the config takes the bound
        assert ex.controls.widgets["window"].value == 1000
        assert ex.config.window == ex.report.window == 1000

    def test_config_exports_and_is_a_value(self, ex: Explorer) -> None:
        ex.set("window", 48_000)
        assert '"window": 48000' in lab.dump_config(ex.config)
        changed = with_value(ex.config, "window", 100_000)
        assert changed.window == 100_000 and ex.config.window == 48_000

    def test_replay_settings_are_controls_beside_the_config(self, session: Transcript) -> None:
        ex = explore(session, "minicode", settings={"pricing": {"input_per_mtok": 1.0}}, window=WINDOW)
        assert ex.settings.pricing.input_per_mtok == 1.0 and ex.report.settings["pricing"]["input_per_mtok"] == 1.0
        cost = ex.report.total_cost
        ex.set("replay.pricing.input_per_mtok", 0.1)
        assert ex.settings.pricing.input_per_mtok == 0.1 and ex.report.total_cost < cost
        assert "replay" not in ex.config.model_dump()
        # Cache off: its TTL goes idle, said in the tooltip, as for config fields.
        ex.set("replay.cache.enabled", False)
        ttl = ex.controls.widgets["replay.cache.ttl_seconds"]
        assert ttl.disabled and "No effect now" in ttl.tooltip

    def test_unknown_path_is_an_error(self, ex: Explorer) -> None:
        with pytest.raises(lab.LabError, match="no config control"):
            ex.set("watermark.nope", 1)


class TestRequestPicker:
    def test_picking_a_request_changes_the_html_and_the_marker_line(self, ex: Explorer) -> None:
        first = ex.detail.value
        k = next(r.index for r in ex.report.rows if notable(r) and r.index > 0)
        ex.request.value = k
        assert ex.detail.value != first
        assert f"Request {k} of" in ex.detail.value
        assert [s.x0 for s in ex.figure.layout.shapes] == [k]

    def test_jump_lists_the_requests_where_something_happened(self, ex: Explorer) -> None:
        targets = [v for _, v in ex.jump.options if v is not None]
        assert targets == [r.index for r in ex.report.rows if notable(r)]
        ex.jump.value = targets[-1]
        assert ex.request.value == targets[-1]

    def test_the_left_side_can_be_the_pipeline_input(self, ex: Explorer) -> None:
        ex.select(len(ex.report.rows) - 1)
        raw = ex.detail.value
        ex.before.value = "pipeline input"
        assert ex.detail.value != raw and "Against the pipeline input" in ex.detail.value


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _hostile_session() -> Transcript:
    msgs = [
        Message(id="u1", role="user", content=(TextBlock(text=f"please {HOSTILE}"),)),
        Message(id="a1", role="assistant", content=(ToolUseBlock(id="t1", name=f"Read{HOSTILE}", input={"path": HOSTILE}),)),
        Message(id="u2", role="user", content=(ToolResultBlock(tool_use_id="t1", content=HOSTILE * 200),)),
        Message(id="a2", role="assistant", content=(TextBlock(text=HOSTILE),)),
    ]
    return Transcript(messages=msgs)


def test_hostile_transcript_text_is_escaped() -> None:
    ex = explore(_hostile_session(), "minicode")
    for k in range(len(ex.report.rows)):
        ex.select(k)
        for side in ("raw history", "pipeline input"):
            ex.before.value = side
            html = ex.detail.value
            assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in ex.detail.value


def test_a_path_loads_and_the_proposed_window_says_why() -> None:
    from lab.replayer.window import propose_window

    path = SAMPLES / "generated-small.lab.json"
    proposal = propose_window(path, config="mewcode")
    ex = explore(path, "mewcode", window="proposed")
    assert ex.transcript.messages
    assert ex.report.window == (proposal.window or lab.preset("mewcode").window)
    assert proposal.reason.split(":")[0] in ex.note.value


def test_a_transcript_without_requests_explains_itself() -> None:
    ex = explore(Transcript(messages=[Message(id="u", role="user", content=(TextBlock(text="hi"),))]))
    assert ex.report.rows == []
    assert "no model requests" in ex.detail.value
    assert ex.request.max == 0


def test_the_explorer_displays_as_a_widget() -> None:
    ex = explore(_hostile_session(), "minicode")
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_lab_explore_is_the_notebook_explore_and_all_is_complete() -> None:
    import lab.notebook as nb

    assert lab.explore is nb.explore
    assert all(hasattr(nb, name) for name in nb.__all__)


def test_a_window_where_auto_compaction_is_skipped_says_so_beside_the_numbers(session: Transcript) -> None:
    # Issue 31, item 12: MewCode skips auto-compaction at or below 33,000 tokens, so 32k can peak higher than 48k.
    ex = explore(session, "mewcode", window=48_000)
    assert ex.inactive == [] and "Inactive by design" not in ex.status.value
    ex.set("window", 32_000)
    (note,) = ex.inactive
    assert "watermark.min_window (33,000)" in note
    assert "Inactive by design" in ex.status.value and "peak sent" in ex.status.value


def test_the_status_line_says_content_and_names_recall_and_the_priced_model(session: Transcript) -> None:
    """The notebook reads the numbers as the CLI and the app do: compactions by kind, both recalls, the prices."""
    ex = explore(session, "lab", window=16_000)
    report = ex._report
    status = ex.status.value
    assert "content recall" in status and f"({report.content_needed} needed" in status and "names recall" in status
    assert "summar" in status and "per MTok" in status
    assert "{" not in status  # never a raw mapping
