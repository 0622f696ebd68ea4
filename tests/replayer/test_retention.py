"""Retention parts on constructed contexts, the weighted score, and retention through a replay."""

from __future__ import annotations

import pytest

from lab.core.messages import Message, TextBlock, ToolResultBlock
from lab.core.presets import preset
from lab.replayer.settings import RetentionWeights
from lab.core.store import MemoryStore
from lab.replayer import replay, retention, targets
from lab.core.config import with_value
from tests.builders import assistant, call_and_result, system, tool_call, user

FIRST = "Please fix the flaky retry test in app/retry.py"
LATER = "Also keep the public API unchanged."


def _raw() -> list[Message]:
    msgs = [system(), user(FIRST)]
    msgs += call_and_result("Read", "def retry():\n    pass\n", tool_id="t1", file_path="app/retry.py")
    msgs += call_and_result("Bash", "Traceback (most recent call last)\nAssertionError: boom\n", tool_id="t2", is_error=True, command="pytest")
    msgs.append(user(LATER))
    msgs += call_and_result("Read", "SECRET-FACT-42\n" + "data\n" * 50, tool_id="t3", file_path="app/big.py")
    msgs.append(assistant("done"))
    return msgs


def _summary(text: str) -> Message:
    return Message(role="user", content=(TextBlock(text=text),), id="summary-x", tag="summary")


def _stub(tool_id: str, path: str, text: str = "[Tool result persisted: 300 chars]") -> Message:
    block = ToolResultBlock(tool_use_id=tool_id, content=text, compacted="spill", spill_path=path, original_chars=300)
    return Message(role="user", content=(block,), id=f"stub-{tool_id}")


def _where(result, part: str) -> list[str]:
    return [i.where for i in result.parts[part].items]


class TestParts:
    def test_everything_in_the_raw_history_is_kept(self) -> None:
        raw = _raw()
        r = retention(raw, targets(raw, ["SECRET-FACT-42"]), upto=len(raw))
        assert all(p.kept == p.total for p in r.parts.values())
        assert r.parts["recoverable"].total == 0
        assert r.score == pytest.approx(1.0)
        assert _where(r, "file_paths") == ["tail", "tail"]
        # The error line a person would quote: the traceback's exception, not its header.
        assert r.parts["errors"].items[0].item == "AssertionError: boom"

    def test_a_summary_holding_a_user_message_keeps_it(self) -> None:
        raw = _raw()
        context = [raw[0], _summary(f"## Session summary\n<primary-request>\n{FIRST}\n</primary-request>\n{LATER}"), raw[-1]]
        r = retention(context, targets(raw), upto=len(raw))
        assert _where(r, "first_request") == ["summary"]
        assert _where(r, "user_messages") == ["summary", "summary"]
        # The first request names app/retry.py, so the summary names it too; app/big.py is gone.
        assert _where(r, "file_paths") == ["summary", "nowhere"]

    def test_a_paraphrase_does_not_count(self) -> None:
        raw = _raw()
        context = [raw[0], _summary("The user wants the flaky retry test fixed."), raw[-1]]
        r = retention(context, targets(raw), upto=len(raw))
        assert r.parts["first_request"].kept == 0 and _where(r, "first_request") == ["nowhere"]

    def test_a_spilled_result_with_its_path_in_the_context_is_recoverable(self) -> None:
        raw = _raw()
        store = MemoryStore()
        big = raw[8].content[0]
        assert isinstance(big, ToolResultBlock)
        path = store.write("s", "t3", big.content, {})
        context = raw[:8] + [_stub("t3", path)] + raw[9:]
        r = retention(context, targets(raw, ["SECRET-FACT-42"]), upto=len(raw), store=store)
        part = r.parts["recoverable"]
        assert (part.kept, part.total, _where(r, "recoverable")) == (1, 1, ["spill"])
        assert part.kept_chars == part.total_chars == len(big.content)
        # The planted fact is only in the spilled file now, and that file can be read back.
        assert _where(r, "planted_facts") == ["spill"]

    def test_a_path_named_only_in_text_counts_too(self) -> None:
        raw = _raw()
        store = MemoryStore()
        big = raw[8].content[0]
        path = store.write("s", "t3", big.content, {})  # type: ignore[union-attr]
        cleared = Message(role="user", content=(ToolResultBlock(tool_use_id="t3", content=f"[saved to] {path}", compacted="spill"),), id="c")
        r = retention(raw[:8] + [cleared] + raw[9:], targets(raw), upto=len(raw), store=store, spill_paths={"t3": path})
        assert _where(r, "recoverable") == ["spill"]

    def test_a_spill_that_is_gone_or_unnamed_is_not_recoverable(self) -> None:
        raw = _raw()
        missing = retention(raw[:8] + [_stub("t3", "mem://s/t3-gone.txt")] + raw[9:], targets(raw), upto=len(raw), store=MemoryStore())
        assert _where(missing, "recoverable") == ["nowhere"]
        store = MemoryStore()
        path = store.write("s", "t3", "whatever", {})
        cleared = Message(role="user", content=(ToolResultBlock(tool_use_id="t3", content="[cleared]", compacted="cleared"),), id="c")
        unnamed = retention(raw[:8] + [cleared] + raw[9:], targets(raw), upto=len(raw), store=store, spill_paths={"t3": path})
        assert _where(unnamed, "recoverable") == ["nowhere"]

    def test_only_items_before_upto_count(self) -> None:
        raw = _raw()
        r = retention(raw[:2], targets(raw), upto=2)
        assert r.parts["user_messages"].total == 1 and r.parts["file_paths"].total == 0 and r.parts["errors"].total == 0

    def test_file_paths_come_from_tool_inputs(self) -> None:
        raw = [system(), user("go"), tool_call("Edit", "t9", file_path="src/x.py", old_string="a", new_string="b")]
        goals = targets(raw)
        assert [i.text for i in goals.file_paths] == ["src/x.py"]


class TestScore:
    def test_weighted_mean_over_parts_with_items(self) -> None:
        raw = _raw()
        # First request and the later message lost; paths and the error kept (tool calls and results stay).
        context = [raw[0]] + raw[2:6] + raw[7:]
        r = retention(context, targets(raw), upto=len(raw), weights=RetentionWeights())
        shares = r.shares()
        assert shares["first_request"] == 0.0 and shares["user_messages"] == 0.0
        assert shares["file_paths"] == 1.0 and shares["errors"] == 1.0
        assert shares["planted_facts"] is None and shares["recoverable"] is None
        # Weights 3 (first), 2 (users), 1 (paths), 1 (errors): (0 + 0 + 1 + 1) / 7.
        assert r.score == pytest.approx(2 / 7)

    def test_zero_weight_parts_do_not_count(self) -> None:
        raw = _raw()
        context = [raw[0]] + raw[2:6] + raw[7:]
        w = RetentionWeights(first_request=0, user_messages=0)
        assert retention(context, targets(raw), upto=len(raw), weights=w).score == pytest.approx(1.0)

    def test_nothing_to_keep_has_no_score(self) -> None:
        assert retention([], targets([]), upto=0).score is None


class TestThroughReplay:
    def test_retention_each_gives_every_row_a_score(self) -> None:
        raw = _raw()
        report = replay(raw, "minicode", retention_each=True)
        assert all(r.retention is not None and r.retention.score == pytest.approx(1.0) for r in report.rows)
        assert report.retention_score == pytest.approx(1.0)

    def test_cleared_results_are_counted_as_lost_output(self) -> None:
        msgs = [system(), user(FIRST)]
        for i in range(8):
            msgs += call_and_result("Read", f"content {i}\n" * 40, file_path=f"f{i}.py")
        msgs.append(assistant("done"))
        c = with_value(preset("openhands-masking"), "microcompact.keep_recent", 2)
        report = replay(msgs, c)
        part = report.retention.parts["recoverable"]
        # Masking keeps no copy: every masked result is lost, none recoverable.
        assert part.total == 6 and part.kept == 0
        assert report.retention_score < 1.0


    def test_a_request_sent_as_several_text_blocks_is_kept_whole(self) -> None:
        # An IDE sends the open file, then the typed words, as two blocks of one user message (Claude Code's
        # extension, Continue's context items): the request is their join, and an intact message keeps it.
        ide = "<ide_opened_file>The user opened app/retry.py in the IDE.</ide_opened_file>"
        first = Message(role="user", content=(TextBlock(text=ide), TextBlock(text=FIRST)), id="u-ide")
        msgs = [system(), first, *call_and_result("Read", "def retry():\n    pass\n", file_path="app/retry.py"), assistant("done")]
        report = replay(msgs, "lab", retention_each=True)
        assert report.first_request_kept is True and all(r.first_request_kept for r in report.rows)
        assert report.retention.parts["first_request"].kept == 1
        assert all(r.retention.parts["first_request"].items[0].where == "tail" for r in report.rows if r.retention is not None)
        # Only the whole join counts: a context holding one of the two blocks does not keep the request.
        half = [system(), Message(role="user", content=(TextBlock(text=FIRST),), id="u-half")]
        assert retention(half, targets(msgs), upto=len(msgs)).parts["first_request"].kept == 0


class TestShellAgents:
    """mini-swe-agent style: every action is a bash command, answered by <returncode> and <output>."""

    def _raw(self) -> list[Message]:
        msgs = [system(), user("Fix the failing totals test.")]
        msgs += call_and_result("bash", "<returncode>0</returncode>\n<output>\ndef total(): ...\n</output>", tool_id="call_00_a",
                                command="cat app/billing.py")
        msgs += call_and_result("bash", "<returncode>0</returncode>\n<output>\n12:def test_total\n</output>", tool_id="call_00_b",
                                command="grep -rn test_total tests/")
        msgs += call_and_result("bash", "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"t.py\"\n"
                                "ZeroDivisionError: division by zero\n</output>", tool_id="call_00_c", command="python -m pytest tests/test_billing.py")
        msgs += call_and_result("bash", "<returncode>2</returncode>\n<output>\nerror: unknown option '--frobnicate'\n</output>",
                                tool_id="call_00_d", command="sed --frobnicate x")
        msgs.append(assistant("done"))
        return msgs

    def test_paths_inside_commands_are_file_paths(self) -> None:
        goals = targets(self._raw())
        assert [i.text for i in goals.file_paths] == ["app/billing.py", "tests", "tests/test_billing.py"]

    def test_failed_shell_results_are_errors_by_their_error_line(self) -> None:
        goals = targets(self._raw())
        assert [i.text for i in goals.errors] == ["ZeroDivisionError: division by zero", "error: unknown option '--frobnicate'"]

    def test_removed_output_reads_as_the_command_never_as_an_id(self) -> None:
        raw = self._raw()
        context = raw[:2] + [raw[2], Message(role="user", content=(ToolResultBlock(tool_use_id="call_00_a", content="[cleared]", compacted="cleared"),), id="c")] + raw[4:]
        r = retention(context, targets(raw), upto=len(raw))
        items = r.parts["recoverable"].items
        assert [i.item for i in items] == ["bash: cat app/billing.py"]
        assert all("call_00" not in i.item for p in r.parts.values() for i in p.items)

    def test_a_lost_item_says_what_removed_it(self) -> None:
        from lab.core.messages import Boundary

        raw = self._raw()
        marker = Message(role="system", content=(), id="b", tag="boundary", boundary=Boundary(trigger="auto", strategy="full"))
        with_boundary = raw[:4] + [marker] + raw[4:]
        r = retention([raw[0]] + with_boundary[5:], targets(with_boundary), upto=len(with_boundary))
        lost = {i.item: i.lost_to for p in r.parts.values() for i in p.items if i.where == "nowhere"}
        # app/billing.py was named only before the recorded boundary; the user's request too.
        assert lost["app/billing.py"] == "recorded compaction"
        assert lost["Fix the failing totals test."] == "recorded compaction"
        assert all(i.lost_to is None for p in r.parts.values() for i in p.items if i.where != "nowhere")
        # Without the boundary the same loss is the config's.
        plain = retention([raw[0]] + raw[4:], targets(raw), upto=len(raw))
        assert {i.lost_to for p in plain.parts.values() for i in p.items if i.where == "nowhere"} == {"this config"}


def test_shared_targets_are_built_once_per_transcript_and_equal_a_fresh_build() -> None:
    from lab.replayer.retention import clear_shared_targets, shared_targets

    raw = [system(), user("fix the bug in app/main.py"), *call_and_result("Read", "print('hi')", file_path="app/main.py"), assistant("done")]
    first = shared_targets(raw, ["fact one"])
    assert first == targets(raw, ["fact one"])
    assert shared_targets(raw, ["fact one"]) is first
    # Other message objects, or other planted facts, are another transcript.
    assert shared_targets([m.model_copy() for m in raw], ["fact one"]) is not first
    assert shared_targets(raw, ["fact two"]) is not first
    # Cleared, they are built again.
    clear_shared_targets()
    again = shared_targets(raw, ["fact one"])
    assert again is not first and again == first
