"""Content recall on sessions where the answer is known: by hand, on generated sessions with planted items, and on the corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab.core.config import CompactionConfig
from lab.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from lab.core.names_index import INDEX_HEADER
from lab.core.presets import preset
from lab.core.store import MemoryStore
from lab.core.tokens.base import get_counter
from lab.generator import generate_planted
from lab.evaluation import compare
from lab.replayer import replay
from lab.replayer.content import THIN, ContentHistory, ContentRecall, anchor_lines, normalise, patch_lines, thin_note
from lab.replayer.content import totals as content_totals
from lab.evaluation.objectives import OBJECTIVES, direction
from lab.core.config import with_value, with_values
from tests.builders import assistant, call_and_result, system, tool_call, tool_result, user

CODE = (
    "def compute_total(items):\n"
    "    subtotal = sum(item.price for item in items)\n"
    "    return round(subtotal * TAX_RATE, 2)\n"
    "x = 1\n"
)
LOG = "2025-03-03T09:00:01Z ERROR [billing] invoice 4411 rejected: currency EUR not enabled for tenant acme\nok\n"


def _needed(raw: list[Message], point: int) -> list[str]:
    h = ContentHistory(raw)
    return [h.items[x] for x in h.needed(point, point + 1)]


def _read_then(*later: Message) -> list[Message]:
    """System, task, a read of CODE (indices 2, 3), then ``later`` from index 4."""
    return [system(), user("Fix the tax rounding."), *call_and_result("Read", CODE, tool_id="t1", file_path="app/billing.py"), *later]


def _edit(old: str, new: str = "pass", tool_id: str = "e1", name: str = "Edit") -> Message:
    return tool_call(name, tool_id, file_path="app/billing.py", old_string=old, new_string=new)


class TestEditAnchors:
    def test_an_edit_needs_the_lines_it_replaces_once_they_were_read(self) -> None:
        raw = _read_then(_edit("    subtotal = sum(item.price for item in items)\n    return round(subtotal * TAX_RATE, 2)"))
        assert _needed(raw, 4) == ["subtotal = sum(item.price for item in items)", "return round(subtotal * TAX_RATE, 2)"]

    def test_lines_under_eight_characters_are_left_out_and_whitespace_is_normalised(self) -> None:
        assert anchor_lines("x = 1\n\t  return   round(a)  \n") == ["return round(a)"]
        raw = _read_then(_edit("x = 1"))
        assert _needed(raw, 4) == []

    def test_an_edit_of_text_never_seen_needs_nothing(self) -> None:
        raw = _read_then(_edit("    this line was never shown to the agent"))
        assert _needed(raw, 4) == []

    def test_a_users_text_is_no_source(self) -> None:
        # The user pasted the line; no tool showed it and the agent never wrote it.
        raw = [system(), user("The line is: value = compute_total(basket)"), _edit("value = compute_total(basket)")]
        assert _needed(raw, 2) == []

    def test_content_the_agent_wrote_itself_is_a_source(self) -> None:
        body = "def helper(value):\n    return value * 2 + OFFSET_BASE\n"
        raw = [system(), user("Add a helper."), tool_call("Write", "w1", file_path="app/h.py", content=body), tool_result("w1", "File created"),
               _edit("    return value * 2 + OFFSET_BASE", tool_id="e2")]
        assert _needed(raw, 4) == ["return value * 2 + OFFSET_BASE"]

    def test_a_todo_lists_content_is_not_a_written_file(self) -> None:
        todos = [{"content": "rewrite compute_total rounding", "status": "pending"}]
        raw = [system(), user("Plan it."), *call_and_result("TodoWrite", "ok", tool_id="d1", todos=todos), _edit("rewrite compute_total rounding")]
        assert _needed(raw, 4) == []

    def test_multiedit_and_the_editor_tools_name_their_anchors(self) -> None:
        multi = tool_call("MultiEdit", "m1", file_path="app/billing.py", edits=[
            {"old_string": "def compute_total(items):", "new_string": "def compute_total(items, rate):"},
            {"old_string": "    return round(subtotal * TAX_RATE, 2)", "new_string": "    return round(subtotal * rate, 2)"}])
        assert _needed(_read_then(multi), 4) == ["def compute_total(items):", "return round(subtotal * TAX_RATE, 2)"]
        for name in ("str_replace_editor", "str_replace_based_edit_tool"):
            call = tool_call(name, "s1", command="str_replace", path="app/billing.py", old_str="def compute_total(items):", new_str="def total():")
            assert _needed(_read_then(call), 4) == ["def compute_total(items):"]

    def test_an_aider_search_block_is_an_edit_call(self) -> None:
        # The aider importer turns a SEARCH/REPLACE block into an ``edit`` call with these keys.
        call = tool_call("edit", "a1", file_path="app/billing.py", old_string="def compute_total(items):", new_string="def compute_total(xs):")
        assert _needed(_read_then(call), 4) == ["def compute_total(items):"]

    def test_apply_patch_needs_its_context_and_removed_lines(self) -> None:
        patch = ("*** Begin Patch\n*** Update File: app/billing.py\n@@ def compute_total(items):\n"
                 "     subtotal = sum(item.price for item in items)\n-    return round(subtotal * TAX_RATE, 2)\n"
                 "+    return round(subtotal * TAX_RATE, 4)\n*** End Patch\n")
        needs, adds = patch_lines(patch)
        assert [normalise(x) for x in needs] == ["def compute_total(items):", "subtotal = sum(item.price for item in items)",
                                                 "return round(subtotal * TAX_RATE, 2)"]
        assert adds == ["    return round(subtotal * TAX_RATE, 4)"]
        want = ["def compute_total(items):", "return round(subtotal * TAX_RATE, 2)", "subtotal = sum(item.price for item in items)"]
        # As Codex's own tool, and inside a shell heredoc.
        assert sorted(_needed(_read_then(tool_call("apply_patch", "p1", input=patch)), 4)) == want
        heredoc = tool_call("shell", "p2", command=["bash", "-lc", f"apply_patch <<'EOF'\n{patch}EOF"])
        assert sorted(_needed(_read_then(heredoc), 4)) == want

    def test_an_added_files_lines_need_nothing(self) -> None:
        patch = "*** Begin Patch\n*** Add File: app/new.py\n+def compute_total(items):\n*** End Patch\n"
        assert _needed(_read_then(tool_call("apply_patch", "p3", input=patch)), 4) == []


class TestCopiedSpans:
    def test_a_response_that_copies_forty_characters_of_earlier_output_needs_them(self) -> None:
        raw = [system(), user("Why did it fail?"), *call_and_result("Bash", LOG, tool_id="b1", command="tail app.log"),
               assistant("It failed with `invoice 4411 rejected: currency EUR not enabled for tenant acme`, so enable EUR.")]
        assert _needed(raw, 4) == ["invoice 4411 rejected: currency EUR not enabled for tenant acme"]

    def test_a_span_in_a_tool_input_counts_too(self) -> None:
        raw = [system(), user("Why?"), *call_and_result("Bash", LOG, tool_id="b1", command="tail app.log"),
               tool_call("Bash", "b2", command="grep -n 'currency EUR not enabled for tenant acme' logs/*.log")]
        assert _needed(raw, 4) == ["currency EUR not enabled for tenant acme"]

    def test_a_copy_glued_to_a_quote_or_a_slash_is_found_whole(self) -> None:
        sed = "sed -i 's/subtotal = sum(item.price for item in items)/subtotal = total_of(items)/' app/billing.py"
        raw = _read_then(tool_call("Bash", "b3", command=sed))
        assert _needed(raw, 4) == ["subtotal = sum(item.price for item in items)"]

    def test_the_copy_is_grown_from_the_line_it_came_from(self) -> None:
        # A grep output repeats a path on every line: the quoted line is the third, not the first holding the path.
        path = "/srv/app/services/billing/invoices/ledger_store.py"
        grep = f"{path}:12:    ledger = open_ledger(tenant)\n{path}:40:    total = ledger.sum()\n{path}:77:    raise LedgerClosed(tenant_id, period)\n"
        raw = [system(), user("Find it."), *call_and_result("Grep", grep, tool_id="g1", pattern="ledger"),
               assistant(f"The error comes from `{path}:77: raise LedgerClosed(tenant_id, period)` there.")]
        assert _needed(raw, 4) == [f"{path}:77: raise LedgerClosed(tenant_id, period)"]

    def test_short_copies_lone_tokens_and_paths_are_not_spans(self) -> None:
        path = "/srv/app/very/long/directory/name/for/the/billing_module.py"
        raw = [system(), user("Why?"), *call_and_result("Bash", f"{LOG}{path}\n", tool_id="b1", command="tail app.log"),
               assistant("Yes: currency EUR not enabled."), tool_call("Read", "r2", file_path=path)]
        # 29 characters copied; the path is a name (the names score's), as an input and as a lone token.
        assert _needed(raw, 4) == []
        assert _needed(raw, 5) == []

    def test_an_edits_new_text_repeating_its_old_lines_is_left_to_the_anchors(self) -> None:
        old = "    subtotal = sum(item.price for item in items)\n    return round(subtotal * TAX_RATE, 2)"
        raw = _read_then(_edit(old, new=old + "\n    # rounded to cents"))
        assert len(_needed(raw, 4)) == 2


def _spilled_context(raw: list[Message], store: MemoryStore) -> list[Message]:
    """``raw[:4]`` with the read's result replaced by a stub pointing to a spill file holding it."""
    path = store.write("s", "t1", CODE, {})
    stub = ToolResultBlock(tool_use_id="t1", content=f"[spilled to {path}]", compacted="spill", spill_path=path)
    return [*raw[:3], Message(role="user", content=(stub,), id="stub")]


class TestKeptRecoverableLost:
    OLD = "    subtotal = sum(item.price for item in items)\n    return round(subtotal * TAX_RATE, 2)"

    def test_kept_when_the_context_holds_the_lines(self) -> None:
        raw = _read_then(_edit(self.OLD))
        step = ContentRecall(raw, None, {}).step(4, 5, raw[:4])
        assert (step.needed, step.kept, step.recall, step.reread_tokens) == (2, 2, 1.0, 0)

    def test_recoverable_from_a_spill_file_costs_its_tokens_once(self) -> None:
        raw = _read_then(_edit(self.OLD))
        store = MemoryStore()
        counter = get_counter("chars/3.5")
        step = ContentRecall(raw, store, {}, counter).step(4, 5, _spilled_context(raw, store))
        assert (step.needed, step.kept, step.recoverable, step.lost, step.recall) == (2, 0, 2, 0, 0.0)
        # Two lines recovered from one file: the file is read back once.
        assert step.reread_tokens == counter.count_text(CODE) > 0

    def test_lost_when_the_stub_points_nowhere(self) -> None:
        raw = _read_then(_edit(self.OLD))
        step = ContentRecall(raw, MemoryStore(), {}).step(4, 5, _spilled_context(raw, MemoryStore())[:3] + [user("[cleared]")])
        assert (step.needed, step.kept, step.recoverable, step.lost, step.reread_tokens) == (2, 0, 0, 2, 0)

    def test_the_names_index_of_a_stub_keeps_nothing(self) -> None:
        # A line that is a lone name: the index lists that name, but a list of names never holds a line.
        code = "values = [\n    compute_total_amount\n]\n"
        raw = [system(), user("Fix it."), *call_and_result("Read", code, tool_id="t1", file_path="a.py"), _edit("    compute_total_amount")]
        store = MemoryStore()
        path = store.write("s", "t1", code, {})
        stub = ToolResultBlock(tool_use_id="t1", content=f"[spilled to {path}]\n{INDEX_HEADER} compute_total_amount", compacted="spill",
                               spill_path=path)
        context = [*raw[:3], Message(role="user", content=(stub,), id="stub")]
        step = ContentRecall(raw, store, {}).step(4, 5, context)
        assert (step.needed, step.kept, step.recoverable) == (1, 0, 1)

    def test_nothing_needed_is_none(self) -> None:
        raw = [system(), user("Hi."), assistant("Hello, what should I do?")]
        step = ContentRecall(raw, None, {}).step(2, 3, raw[:2])
        assert step.needed == 0 and step.recall is None

    def test_a_summary_quoting_the_lines_keeps_them(self) -> None:
        raw = _read_then(_edit(self.OLD))
        summary = Message(role="user", content=(TextBlock(text="Summary: billing.py has\n" + CODE),), id="sum", tag="summary")
        step = ContentRecall(raw, None, {}).step(4, 5, [*raw[:2], summary])
        assert step.kept == 2


class TestTotals:
    def test_a_session_under_the_thin_mark_is_flagged_with_a_note(self) -> None:
        raw = _read_then(_edit(TestKeptRecoverableLost.OLD))
        report = replay(raw, preset("lab"))
        assert (report.content_needed, report.content_kept, report.content_recall) == (2, 2, 1.0)
        assert report.content_thin is True
        assert any("too thin to rank" in n for n in report.notes)
        assert thin_note(THIN) is None and thin_note(THIN - 1) is not None

    def test_totals_sum_the_rows(self) -> None:
        t, planted = generate_planted(seed=5, requests=120, content_dependencies=50, edit_weight=0, error_rate=0)
        report = replay(t, preset("lab"), window=24_000)
        totals = content_totals(report.rows)
        assert totals["content_needed"] == sum(r.content_needed for r in report.rows) == report.content_needed
        assert report.content_needed == report.content_kept + report.content_recoverable + report.content_lost
        assert report.content_thin == (report.content_needed < THIN)

    def test_report_df_compare_table_and_objectives_carry_the_columns(self, tmp_path: Path) -> None:
        t, _ = generate_planted(seed=2, requests=60, content_dependencies=20)
        report = replay(t, preset("lab"), window=24_000)
        df = report.df
        for column in ("content_recall", "content_needed", "content_kept", "content_recoverable", "content_lost", "reread_tokens", "needed_later_recall"):
            assert column in df.columns
        assert df["content_needed"].sum() == report.content_needed
        path = tmp_path / "gen.json"
        from lab.formats import dump

        dump(t, "lab", path)
        table = compare(path, ["lab", "minicode"], window=24_000)
        row = table.rows[0]
        assert row["content_recall"] == table.reports[row["config"]].content_recall
        assert row["reread_tokens"] == table.reports[row["config"]].reread_tokens
        assert "content_needed" in row and "content_thin" in row
        assert OBJECTIVES["content_recall"].direction == "maximize"
        assert direction("reread_tokens") == "minimize"


def _no_compaction() -> CompactionConfig:
    cfg = CompactionConfig(window=2_000_000)
    return with_values(cfg, {f"{stage}.enabled": False for stage in ("spill", "dedup", "microcompact", "watermark", "summary")})


class TestGenerated:
    @pytest.mark.parametrize("seed", [0, 7])
    def test_the_scorer_finds_exactly_the_planted_items(self, seed: int) -> None:
        t, planted = generate_planted(seed=seed, requests=120, content_dependencies=45, edit_weight=0, error_rate=0)
        assert {p.kind for p in planted} == {"edit_read", "quote", "edit_own"}
        h = ContentHistory(t.messages)
        found = {(p, h.items[x]) for p in {q.message for q in planted} for x in h.needed(p, p + 1)}
        assert found == {(p.message, p.text) for p in planted}
        report = replay(t, _no_compaction())
        assert report.content_needed == len(planted) and report.content_recall == 1.0
        assert report.content_thin is False

    def test_a_tiny_window_with_spill_loses_or_spills_some(self) -> None:
        t, planted = generate_planted(seed=3, requests=150, content_dependencies=50, edit_weight=0, error_rate=0)
        # lab-lean spills over 5,000 characters (the lab preset only over 50,000, which these outputs seldom reach).
        report = replay(t, preset("lab-lean"), window=16_000)
        assert report.content_needed == len(planted)
        assert report.content_recall is not None and report.content_recall < 1.0
        assert report.content_recoverable > 0 and report.reread_tokens > 0
        assert report.content_lost > 0

    def test_planted_items_are_found_with_ordinary_edits_and_errors_on(self) -> None:
        t, planted = generate_planted(seed=11, requests=100, content_dependencies=30)
        h = ContentHistory(t.messages)
        for p in planted:
            assert p.text in {h.items[x] for x in h.needed(p.message, p.message + 1)}

    def test_incremental_rows_match_the_reference(self) -> None:
        t, _ = generate_planted(seed=4, requests=80, content_dependencies=30)
        fields = ("content_needed", "content_kept", "content_recoverable", "content_lost", "reread_tokens")
        fast = replay(t, preset("lab"), window=20_000)
        slow = replay(t, preset("lab"), window=20_000, incremental=False)
        assert [[getattr(r, f) for f in fields] for r in fast.rows] == [[getattr(r, f) for f in fields] for r in slow.rows]

    def test_content_false_leaves_the_fields_empty(self) -> None:
        t, planted = generate_planted(seed=1, requests=40, content_dependencies=10)
        report = replay(t, preset("lab"), content=False)
        assert planted and report.content_needed == 0 and report.content_recall is None


def _index_pair(transcript: object, window: int) -> tuple[object, object]:
    # lab-lean: the lab's stub and names index, spilling over 5,000 characters, so the index has outputs to list.
    cfg = preset("lab-lean")
    assert cfg.spill.index_chars > 0
    off = with_value(cfg, "spill.index_chars", 0)
    return replay(transcript, cfg, window=window), replay(transcript, off, window=window)  # type: ignore[arg-type]


def _events(report: object) -> list[list[tuple[str, str | None]]]:
    return [[(e["stage"], e.get("strategy")) for e in row.events] for row in report.rows]  # type: ignore[attr-defined]


class TestNamesIndexDoesNotMoveContentRecall:
    # A window where both replays compact alike (the index's tokens move no decision), so only the stubs' text differs.
    WINDOW = 200_000

    def test_generated_sessions(self) -> None:
        moved_names = False
        for seed in (3, 8):
            t, _ = generate_planted(seed=seed, requests=150, content_dependencies=50)
            on, off = _index_pair(t, self.WINDOW)
            assert _events(on) == _events(off)
            assert on.content_needed > 0  # type: ignore[attr-defined]
            assert on.content_recall == off.content_recall  # type: ignore[attr-defined]
            moved_names |= on.needed_later_recall != off.needed_later_recall  # type: ignore[attr-defined]
        # The index did something: it moves the names score.
        assert moved_names

    def test_corpus(self) -> None:
        corpus = os.environ.get("LAB_CORPUS")
        if not corpus or not Path(corpus).is_dir():
            pytest.skip("LAB_CORPUS is not set to the corpus folder")
        from lab.formats import load

        files = sorted(p for p in Path(corpus).rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".traj"))
        assert files
        needed = 0
        moved_names = False
        for path in files:
            on, off = _index_pair(load(path), self.WINDOW)
            assert _events(on) == _events(off), path.name
            assert on.content_recall == off.content_recall, path.name  # type: ignore[attr-defined]
            needed += on.content_needed  # type: ignore[attr-defined]
            moved_names |= on.needed_later_recall != off.needed_later_recall  # type: ignore[attr-defined]
        assert needed >= THIN and moved_names


def test_a_context_message_holding_an_edit_call_keeps_its_lines() -> None:
    # The agent's own earlier edit call holds the line in its new text: a context holding that call keeps it.
    first = ToolUseBlock(id="e1", name="Edit", input={"file_path": "a.py", "old_string": "nothing here", "new_string": "total = compute_total(basket) + fee"})
    raw = [system(), user("Go."), Message(role="assistant", content=(first,), id="a1"), tool_result("e1", "ok"),
           _edit("total = compute_total(basket) + fee", tool_id="e2")]
    step = ContentRecall(raw, None, {}).step(4, 5, raw[:4])
    assert (step.needed, step.kept) == (1, 1)


def test_the_timeline_metric_says_what_it_rests_on() -> None:
    from lab import figures

    t, planted = generate_planted(seed=6, requests=120, content_dependencies=45, edit_weight=0, error_rate=0)
    report = replay(t, preset("lab"), window=16_000)
    value, help_text = figures.content_metric(report)
    assert value == f"{report.content_recall:.0%}"
    assert f"of {len(planted)} needed lines and spans" in help_text and "too thin" not in help_text
    small = replay(_read_then(_edit(TestKeptRecoverableLost.OLD)), preset("lab"))
    assert "too thin to rank" in figures.content_metric(small)[1]
    assert figures.compare_label("content_recall") == "Content recall" and "content_recall" in figures.HIGHER_IS_BETTER
