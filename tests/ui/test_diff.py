"""lab.views.diff: lining up a context before and after the pipeline, without Streamlit."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core import Compactor, preset
from lab.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from lab.replayer.report import Row
from lab.views.diff import (
    PAGE_LINES,
    BlockChange,
    ContextDiff,
    RequestEvents,
    block_view,
    clip,
    default_request,
    diff_context,
    event_requests,
    page_layout,
    paginate,
    recall_note,
    render_block,
    section_lines,
    step_request,
    text_diff,
    tool_input_text,
)
from lab.core.config import with_values
from tests.builders import assistant, call_and_result, system, tool_result, user

XSS = "Please fix <script>alert(1)</script> in **app** <img src=x onerror=alert(2)>"


def _session() -> list[Message]:
    msgs = [system(), user(XSS)]
    for i in range(6):
        # The first two reads pass MiniCode's 4000-char spill threshold; the rest stay.
        msgs += call_and_result("Read", (f"line {i}\n" * (5000 if i < 2 else 400)), file_path=f"src/f{i}.py")
    msgs += [user("next please")] + call_and_result("Read", "small\n", file_path="x.py") + [assistant("fine")]
    return msgs


def _summarising_compactor() -> Compactor:
    cfg = with_values(preset("minicode"), {"summary.tail_min_tokens": 0, "summary.tail_max_tokens": 1000, "summary.tail_min_messages": 3,
                                           "summary.session_memory": False})
    return Compactor(cfg)


@pytest.fixture(scope="module")
def spilled() -> tuple[list[Message], list[Message]]:
    msgs = _session()
    return msgs, Compactor(preset("minicode")).process_request(msgs).messages


@pytest.fixture(scope="module")
def summarised() -> tuple[list[Message], list[Message]]:
    msgs = _session()
    c = _summarising_compactor()
    out = c.compact(c.process_request(msgs).messages)
    assert out.boundary is not None, "the fixture must really summarise"
    return msgs, out.messages


class TestAlignment:
    def test_identical_contexts_are_all_kept(self) -> None:
        msgs = _session()
        d = diff_context(msgs, list(msgs))
        assert [r.status for r in d.rows] == ["kept"] * len(msgs)
        assert d.counts["kept"] == len(msgs) and d.changed_blocks() == []

    def test_empty_sides(self) -> None:
        msgs = _session()
        assert diff_context([], []).rows == ()
        assert {r.status for r in diff_context(msgs, []).rows} == {"removed"}
        assert {r.status for r in diff_context([], msgs).rows} == {"inserted"}

    def test_removed_rows_come_before_inserted_ones_in_a_gap(self, summarised: tuple[list[Message], list[Message]]) -> None:
        before, after = summarised
        statuses = [r.status for r in diff_context(before, after).rows]
        first_inserted = statuses.index("inserted")
        assert "removed" in statuses[:first_inserted]
        assert "removed" not in statuses[first_inserted:]

    def test_duplicate_ids_line_up_one_to_one(self) -> None:
        a = Message(role="user", content=(TextBlock(text="one"),), id="dup")
        b = Message(role="assistant", content=(TextBlock(text="two"),), id="dup")
        d = diff_context([a, b], [a, b])
        assert [r.status for r in d.rows] == ["kept", "kept"]

    def test_out_of_order_message_is_shown_as_removed_and_inserted(self) -> None:
        a, b = user("a"), assistant("b")
        d = diff_context([a, b], [b, a])
        assert sorted(r.status for r in d.rows) == ["inserted", "kept", "removed"]

    def test_inputs_are_not_mutated(self, summarised: tuple[list[Message], list[Message]]) -> None:
        before, after = list(summarised[0]), list(summarised[1])
        snap = copy.deepcopy((before, after))
        diff_context(before, after)
        assert (before, after) == snap


def _messages(draw: st.DrawFn) -> tuple[list[Message], list[Message]]:
    n = draw(st.integers(0, 12))
    before = [Message(role="user" if i % 2 == 0 else "assistant", content=(TextBlock(text=f"m{i}"),), id=f"m{i}") for i in range(n)]
    after: list[Message] = []
    for m in before:
        fate = draw(st.sampled_from(["keep", "drop", "edit"]))
        if draw(st.booleans()):
            after.append(Message(role="user", content=(TextBlock(text="new"),), id=f"new-{len(after)}", tag="summary"))
        if fate == "keep":
            after.append(m)
        elif fate == "edit":
            after.append(m.model_copy(update={"content": (TextBlock(text=f"{m.id} edited"),)}))
    return before, after


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_message_appears_once_on_its_side_in_order(data: st.DataObject) -> None:
    before, after = _messages(data.draw)
    d = diff_context(before, after)
    assert [r.before for r in d.rows if r.before is not None] == before
    assert [r.after for r in d.rows if r.after is not None] == after
    for r in d.rows:
        if r.before is not None and r.after is not None:
            assert r.before.id == r.after.id
            assert r.status == ("kept" if r.before == r.after else "changed")
    assert sum(d.counts[k] for k in ("kept", "changed", "removed", "inserted")) == len(d.rows)


class TestStubs:
    def test_spilled_result_is_a_stub_showing_what_it_held(self, spilled: tuple[list[Message], list[Message]]) -> None:
        before, after = spilled
        d = diff_context(before, after)
        stubs = [c for r in d.rows for c in r.blocks if c.status == "stub"]
        assert len(stubs) == 2 and d.counts["stubs"] == 2
        for c in stubs:
            assert c.before is not None and c.after is not None
            assert c.before.text.startswith("line ") and len(c.before.text) > 4000
            assert c.after.compacted == "spill"
            assert c.after.spill_path and c.after.original_chars == len(c.before.text)
            assert "stub: spill" in c.after.label and c.before.tool_id in c.after.label

    def test_changed_blocks_are_labelled_with_message_and_block(self, spilled: tuple[list[Message], list[Message]]) -> None:
        labels = [label for label, _ in diff_context(*spilled).changed_blocks()]
        assert len(labels) == 2
        assert all("tool_result [" in label and "(stub)" in label for label in labels)

    def test_cleared_tool_input_is_a_changed_block(self) -> None:
        call, result = call_and_result("Read", "x", file_path="a.py")
        use = call.content[-1]
        assert isinstance(use, ToolUseBlock)
        cleared = call.model_copy(update={"content": (use.model_copy(update={"input": {}}),)})
        d = diff_context([call, result], [cleared, result])
        assert d.rows[0].status == "changed"
        assert [c.status for c in d.rows[0].blocks] == ["changed"]

    def test_added_and_removed_blocks(self) -> None:
        m = Message(role="assistant", content=(TextBlock(text="a"), TextBlock(text="b")), id="x")
        shorter = m.model_copy(update={"content": (TextBlock(text="a"),)})
        assert [c.status for c in diff_context([m], [shorter]).rows[0].blocks] == ["same", "removed"]
        assert [c.status for c in diff_context([shorter], [m]).rows[0].blocks] == ["same", "added"]


class TestSummaryAndBoundary:
    def test_summary_and_boundary_are_inserted(self, summarised: tuple[list[Message], list[Message]]) -> None:
        d = diff_context(*summarised)
        kinds = [r.kind for r in d.rows if r.status == "inserted"]
        assert "boundary" in kinds and "summary" in kinds
        summary = next(r for r in d.rows if r.kind == "summary")
        assert summary.before is None and summary.blocks[0].status == "added"
        assert "Please fix" in summary.blocks[0].after.text  # type: ignore[union-attr]

    def test_removed_messages_keep_their_content_on_the_left(self, summarised: tuple[list[Message], list[Message]]) -> None:
        removed = [r for r in diff_context(*summarised).rows if r.status == "removed"]
        assert removed and all(r.after is None and r.before is not None for r in removed)
        assert any(r.blocks[0].before.text == XSS for r in removed)  # type: ignore[union-attr]


class TestToolPairs:
    def test_a_call_and_its_result_share_a_group(self, spilled: tuple[list[Message], list[Message]]) -> None:
        d = diff_context(*spilled)
        by_id: dict[str, set[int | None]] = {}
        for r in d.rows:
            for tid in r.tool_ids:
                by_id.setdefault(tid, set()).add(r.group)
        assert by_id and all(len(groups) == 1 and None not in groups for groups in by_id.values())
        assert len({next(iter(g)) for g in by_id.values()}) == len(by_id)

    def test_parallel_calls_form_one_group(self) -> None:
        call = Message(role="assistant", content=(ToolUseBlock(id="t1", name="Read", input={}), ToolUseBlock(id="t2", name="Read", input={})), id="a")
        go, r1, r2 = user("go"), tool_result("t1", "one"), tool_result("t2", "two")
        d = diff_context([go, call, r1, r2], [go, call, r1, r2])
        assert [r.group for r in d.rows] == [None, 1, 1, 1]
        sections = d.sections()
        assert [len(s.rows) for s in sections] == [1, 3]
        assert sections[1].tool_ids == ("t1", "t2")

    def test_removed_pair_stays_together(self, summarised: tuple[list[Message], list[Message]]) -> None:
        for s in diff_context(*summarised).sections():
            if s.group is not None:
                assert len({r.status for r in s.rows}) == 1, "a pair is kept, stubbed or removed together"
                assert len(s.rows) >= 2


class TestSections:
    def test_without_filter_every_row_is_drawn_once(self, summarised: tuple[list[Message], list[Message]]) -> None:
        d = diff_context(*summarised)
        drawn = [r.index for s in d.sections() for r in s.rows]
        assert drawn == [r.index for r in d.rows]
        assert not any(s.folded for s in d.sections())

    def test_only_changes_folds_unchanged_runs_but_keeps_changed_pairs_whole(self, spilled: tuple[list[Message], list[Message]]) -> None:
        d = diff_context(*spilled)
        sections = d.sections(only_changes=True)
        shown = [s for s in sections if not s.folded]
        assert {r.status for s in shown for r in s.rows} == {"kept", "changed"}
        # The kept tool_use rides along with its stubbed result.
        assert all(len(s.rows) == 2 and s.group is not None for s in shown)
        folded = [s for s in sections if s.folded]
        assert folded and all(r.status == "kept" for s in folded for r in s.rows)
        assert sum(len(s.rows) for s in sections) == len(d.rows)


class TestText:
    def test_render_keeps_markup_literally(self) -> None:
        assert render_block(TextBlock(text=XSS)) == XSS
        assert render_block(ToolResultBlock(tool_use_id="t", content=XSS)) == XSS

    def test_render_tool_use_and_image(self) -> None:
        use = ToolUseBlock(id="t", name="Read", input={"file_path": "a.py", "offset": 10})
        assert render_block(use) == "Read (read)\npath: a.py\noffset: 10"
        view = block_view(use)
        assert view.kind == "tool_use" and view.tool_id == "t" and "[t]" in view.label

    def test_unified_diff_of_a_stub(self, spilled: tuple[list[Message], list[Message]]) -> None:
        _, change = diff_context(*spilled).changed_blocks()[0]
        assert isinstance(change, BlockChange) and change.before and change.after
        out = text_diff(change.before.text, change.after.text, before_label="raw", after_label="sent")
        lines = out.splitlines()
        assert lines[0] == "--- raw" and lines[1] == "+++ sent"
        assert any(ln.startswith("-line ") for ln in lines)
        assert any(ln.startswith("+") and not ln.startswith("+++") for ln in lines)

    def test_equal_texts_have_no_diff(self) -> None:
        assert text_diff("a\nb", "a\nb") == ""

    def test_clip(self) -> None:
        assert clip("abc", 5) == "abc"
        out = clip("x" * 10, 4)
        assert out.startswith("xxxx\n") and "6 more characters" in out
        with pytest.raises(ValueError, match="limit must be >= 0"):
            clip("x", -1)


def test_context_diff_is_a_plain_value() -> None:
    d = diff_context([user("a")], [user("b")])
    assert isinstance(d, ContextDiff) and len(d.rows) == 2


def test_pure_helpers_do_not_import_streamlit() -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = "import sys, lab.views.diff, lab.views.summary, lab.views.export; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", "diff, summary and export data must stay usable without Streamlit"


class TestRecallNote:
    def test_lost_mentions_read_as_sentences_with_their_attribution(self) -> None:
        from lab.replayer.report import LostMention, Row

        row = Row(index=7, message_index=30, time=0.0, raw_tokens=1, tokens_before=1, sent_tokens=1, sent_messages=1,
                  needed_mentions=3, kept_mentions=1, recoverable_mentions=0, lost_recorded=1, lost_config=1, needed_later_recall=1 / 3,
                  lost_mentions=[LostMention(mention="app/billing.py", kind="path", lost_to="recorded compaction"),
                                 LostMention(mention=XSS, kind="identifier", lost_to="this config")])
        head, lines = recall_note(row)
        assert head is not None and "33%" in head and "request 7" in head
        assert lines[0] == "the response at 7 used path app/billing.py; this context no longer holds it (lost to recorded compaction)"
        # Transcript text comes back as it is, for st.text to draw; nothing is turned into markup here.
        assert XSS in lines[1]

    def test_nothing_needed_has_no_note(self) -> None:
        from lab.replayer.report import Row

        row = Row(index=0, message_index=1, time=0.0, raw_tokens=1, tokens_before=1, sent_tokens=1, sent_messages=1)
        assert recall_note(row) == (None, [])


def _use(name: str, **inputs: object) -> ToolUseBlock:
    return ToolUseBlock(id="t1", name=name, input=inputs)


class TestToolInputText:
    def test_a_shell_call_is_its_command_with_real_line_breaks(self) -> None:
        text = tool_input_text(_use("Bash", command="cd app && cat main.py\nls -la", description="look around"))
        assert text.splitlines() == ["Bash (read)", "$ cd app && cat main.py", "ls -la", "description: look around"]
        assert "\\n" not in text and "{" not in text

    def test_an_edit_names_its_file_and_what_changed(self) -> None:
        text = tool_input_text(_use("Edit", file_path="app/x.py", old_string="x = 1\ny = 2", new_string="x = 1\ny = 3"))
        lines = text.splitlines()
        assert lines[:3] == ["Edit (write)", "path: app/x.py", 'change: replaced "2" with "3"']
        assert "old_string:" in lines and "y = 2" in lines, "multi-line inputs keep their lines"
        assert "file_path" not in text

    def test_a_patch_names_the_files_it_changes(self) -> None:
        patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"
        text = tool_input_text(_use("apply_patch", input=patch))
        assert text.startswith("apply_patch (write)\npath: a.py\nchange: updated (+1 -1)")

    def test_an_unknown_tool_falls_back_to_pretty_json(self) -> None:
        text = tool_input_text(_use("mcp__github__add_issue_comment", issue_number=12, body="hi"))
        assert text.splitlines()[0] == "mcp__github__add_issue_comment"
        assert '  "issue_number": 12' in text and '"body": "hi"' in text

    def test_transcript_text_stays_literal(self) -> None:
        assert XSS in tool_input_text(_use("Bash", command=XSS))


def _row(k: int, **kw: object) -> Row:
    return Row(index=k, message_index=k, time=0.0, raw_tokens=1, tokens_before=1, sent_tokens=1, sent_messages=1, **kw)  # type: ignore[arg-type]


class TestEventRequests:
    ROWS = [
        _row(0),
        _row(1, events=[{"stage": "spill", "trigger": "threshold", "success": True}]),
        _row(2),
        _row(3, events=[{"stage": "microcompact", "trigger": "microcompact_time", "success": True},
                        {"stage": "summary", "trigger": "auto", "success": True}], boundary_placed=True),
        _row(4, events=[{"stage": "summary", "trigger": "auto", "success": False}], overflowed=True, failed=True),
    ]

    def test_only_requests_where_something_happened_each_saying_what(self) -> None:
        events = event_requests(self.ROWS)
        assert [e.index for e in events] == [1, 3, 4]
        assert events[0] == RequestEvents(1, "request 1: spill (threshold)", compaction=False)
        assert events[1].label == "request 3: microcompact (time), summary (auto), boundary" and events[1].compaction
        assert events[2].label == "request 4: summary (auto) ✗ failed, overflowed, ✗ request failed"

    def test_opens_at_the_first_compaction_else_the_first_event_else_zero(self) -> None:
        assert default_request(event_requests(self.ROWS)) == 3
        assert default_request(event_requests(self.ROWS[:3])) == 1
        assert default_request([]) == 0

    def test_previous_and_next_skip_quiet_requests(self) -> None:
        events = event_requests(self.ROWS)
        assert step_request(events, 2, 1) == 3 and step_request(events, 2, -1) == 1
        assert step_request(events, 3, 1) == 4 and step_request(events, 4, 1) is None
        assert step_request(events, 1, -1) is None and step_request(events, 0, 1) == 1


class TestPageLayout:
    def test_summary_and_boundary_come_first_and_removed_rows_fold_into_one_block(
        self, summarised: tuple[list[Message], list[Message]]
    ) -> None:
        d = diff_context(*summarised)
        layout = page_layout(d, only_changes=True)
        assert {r.kind for r in layout.top} == {"summary", "boundary"}
        sections = [s for page in layout.pages for s in page]
        removed = [s for s in sections if s.removed]
        assert len(removed) == 1 and removed[0].folded
        assert [r.index for r in removed[0].rows] == [r.index for r in d.rows if r.status == "removed"]
        shown = {r.index for s in sections for r in s.rows} | {r.index for r in layout.top}
        assert shown == {r.index for r in d.rows}, "every row is drawn once, on top, in a section or folded"

    def test_long_diffs_are_split_into_pages_under_the_budget(self) -> None:
        msgs = [system(), user("go")]
        for i in range(40):
            msgs += call_and_result("Read", f"line {i}\n" * 60, file_path=f"f{i}.py")
        layout = page_layout(diff_context(msgs, msgs), only_changes=False)
        assert len(layout.pages) > 1
        for page in layout.pages:
            assert sum(section_lines(s) for s in page) <= PAGE_LINES
        assert sum(len(s.rows) for p in layout.pages for s in p) == len(msgs)

    def test_a_section_taller_than_the_budget_gets_a_page_alone(self) -> None:
        sections = diff_context([user("x\n" * 50), user("y")], []).sections()
        pages = paginate(sections, budget=5)
        assert [len(p) for p in pages] == [1, 1]
        with pytest.raises(ValueError, match="budget must be >= 1"):
            paginate(sections, budget=0)
