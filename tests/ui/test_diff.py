"""lab.ui.diff: lining up a context before and after the pipeline, without Streamlit."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core import Compactor, preset
from lab.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from lab.ui.diff import (
    BlockChange,
    ContextDiff,
    block_view,
    clip,
    diff_context,
    render_block,
    text_diff,
)
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
    cfg = preset("minicode")
    cfg.summary = cfg.summary.model_copy(update=dict(tail_min_tokens=0, tail_max_tokens=1000, tail_min_messages=3, session_memory=False))
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
        use = ToolUseBlock(id="t", name="Read", input={"file_path": "a.py"})
        assert render_block(use).startswith("Read(") and '"file_path": "a.py"' in render_block(use)
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

    code = "import sys, lab.ui.diff, lab.ui.summary, lab.ui.export; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", "diff, summary and export data must stay usable without Streamlit"
