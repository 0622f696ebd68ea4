"""Stage 2, tool-result spill: thresholds, previews, the frozen ledger, failures, budgets."""

from __future__ import annotations

import copy
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.pipeline import run_stage
from lab.core.messages import Message, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.core.stages.spill import SpillConfig, SpillStage, cleanup_spills, stub_text, result_size, safe_cut, utf8_prefix, SpillState
from lab.core.store import FailingStore, FolderStore, MemoryStore, SpillStore
from lab.core.tokens.base import MiniCodeCounter
from lab.errors import LabError
from lab.formats import load
from tests.builders import assistant, call_and_result, system, tool_call, user
from tests.conftest import CORPUS_FILES, corpus_id


def make_ctx(store: SpillStore | None = None, state: CompactorState | None = None, now: float = 1000.0) -> StageContext:
    store = store if store is not None else MemoryStore()
    return StageContext(CompactionConfig(), MiniCodeCounter(), store, None, state or CompactorState(), now=now)  # type: ignore[arg-type]


def results(messages: list[Message]) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in messages for b in m.content if isinstance(b, ToolResultBlock)}


def big(n_lines: int = 100, width: int = 60) -> str:
    return "".join(f"{i:04d} " + "x" * width + "\n" for i in range(n_lines))


def history(*sizes: int, error_at: int | None = None) -> list[Message]:
    msgs = [system(), user("please look")]
    for i, size in enumerate(sizes):
        msgs += call_and_result("Read", ("y" * 79 + "\n") * (size // 80) + "y" * (size % 80), tool_id=f"toolu_{i}", file_path=f"f{i}.py", is_error=i == error_at)
    return msgs + [assistant("done")]


def budget_message(*sizes: int) -> list[Message]:
    """One assistant turn calling several tools, answered by one user message (MewCode's aggregate)."""
    uses = tuple(ToolUseBlock(id=f"p{i}", name="Read", input={"file_path": f"f{i}"}) for i in range(len(sizes)))
    res = tuple(ToolResultBlock(tool_use_id=f"p{i}", content="z" * s) for i, s in enumerate(sizes))
    return [system(), user("read them all"), Message(role="assistant", content=uses, id="multi"), Message(role="user", content=res, id="multi-r")]


class TestDefaults:
    def test_minicode_numbers(self) -> None:
        cfg = SpillConfig()
        assert (cfg.unit, cfg.threshold, cfg.head_lines, cfg.tail_lines, cfg.preview_chars) == ("chars", 4000, 8, 3, 500)
        assert (cfg.message_budget, cfg.mewcode_preview_lines, cfg.mewcode_preview_bytes, cfg.retention_days) == (200_000, 20, 2048, 30)
        assert SpillStage().name == "spill"

    def test_small_results_are_kept_and_recorded(self) -> None:
        msgs, ctx = history(500, 3999), make_ctx()
        result = run_stage(SpillStage(), msgs, ctx)
        assert all(a is b for a, b in zip(result.messages, msgs, strict=True)) and result.events == ()
        assert ctx.state.stage("spill", SpillState).ledger == {"toolu_0": None, "toolu_1": None}


class TestValidation:
    @pytest.mark.parametrize("field,value", [("threshold", 10), ("preview_chars", 5), ("unit", "words"), ("retention_days", -1)])
    def test_out_of_range(self, field: str, value: object) -> None:
        with pytest.raises(ValidationError):
            SpillConfig(**{field: value})

    def test_unknown_field(self) -> None:
        with pytest.raises(ValidationError):
            SpillConfig(treshold=5000)  # type: ignore[call-arg]


class TestThreshold:
    def test_boundary(self) -> None:
        msgs, ctx = history(4000, 4001), make_ctx()
        out = results(run_stage(SpillStage(), msgs, ctx).messages)
        assert out["toolu_0"].compacted is None and out["toolu_1"].compacted == "spill"

    def test_spilled_block_keeps_structure(self) -> None:
        msgs, store = history(9000, error_at=0), MemoryStore()
        ctx = make_ctx(store)
        result = run_stage(SpillStage(), msgs, ctx)
        block = results(result.messages)["toolu_0"]
        original = results(msgs)["toolu_0"]
        assert block.tool_use_id == "toolu_0" and block.is_error is True
        assert block.original_chars == len(original.content) == 9000
        assert block.spill_path and store.read(block.spill_path) == original.content
        assert ctx.state.stage("spill", SpillState).ledger["toolu_0"] == block.content
        assert ctx.state.spill_paths["toolu_0"] == block.spill_path
        assert tool_pairs(result.messages) == tool_pairs(msgs)
        (event,) = result.events
        assert event.trigger == "threshold" and event.strategy == "tool_budget" and event.ids == ("toolu_0",)
        assert event.tokens_after == MiniCodeCounter().count_messages(result.messages) < event.tokens_before

    def test_bytes_unit_counts_utf8(self) -> None:
        cjk = [system(), *call_and_result("Read", "中" * 2000, tool_id="c1", file_path="zh.md")]
        assert result_size("中" * 2000, "bytes") == 6000
        kept = results(run_stage(SpillStage(), cjk, make_ctx()).messages)["c1"]
        spilled = results(run_stage(SpillStage(SpillConfig(unit="bytes")), cjk, make_ctx()).messages)["c1"]
        assert kept.compacted is None and spilled.compacted == "spill"

    def test_already_compacted_results_are_skipped(self) -> None:
        block = ToolResultBlock(tool_use_id="d1", content="q" * 9000, compacted="dedup")
        msgs = [tool_call("Read", "d1", file_path="a"), Message(role="user", content=(block,), id="r")]
        ctx = make_ctx()
        result = run_stage(SpillStage(), msgs, ctx)
        assert result.messages[1] is msgs[1] and "d1" not in ctx.state.stage("spill", SpillState).ledger

    def test_results_read_dedup_decided_are_left_to_it(self) -> None:
        state = CompactorState(claims={"toolu_0": "dedup"})
        msgs = history(9000)
        result = run_stage(SpillStage(), msgs, make_ctx(state=state))
        assert result.messages == msgs and "toolu_0" not in state.stage("spill", SpillState).ledger

    def test_folder_store_crafted_id_stays_inside(self, tmp_path: Path) -> None:
        msgs = [system(), *call_and_result("Read", "w" * 5000, tool_id="../../../etc/evil", file_path="a")]
        block = results(run_stage(SpillStage(), msgs, make_ctx(FolderStore(tmp_path / "spills"))).messages)["../../../etc/evil"]
        assert (tmp_path / "spills").resolve() in Path(block.spill_path or "").resolve().parents


class TestPreviews:
    def test_minicode_head_tail_and_header(self) -> None:
        content = big(100)
        msgs = [system(), *call_and_result("Grep", content, tool_id="g1", pattern="x")]
        block = results(run_stage(SpillStage(SpillConfig(preview_chars=5000)), msgs, make_ctx()).messages)["g1"]
        lines = block.content.split("\n")
        assert lines[0] == f"[Tool result persisted: {len(content)} chars, tool Grep, file {block.spill_path.rsplit('/', 1)[-1]}]"  # type: ignore[union-attr]
        assert lines[1:9] == content.split("\n")[:8]
        assert lines[9] == "... (89 lines omitted) ..."
        assert lines[10:] == content.split("\n")[97:100]

    def test_no_tail_when_short(self) -> None:
        content = "\n".join("k" * 400 for _ in range(12))
        block = results(run_stage(SpillStage(SpillConfig(preview_chars=20_000)), [*call_and_result("Read", content, tool_id="s1")], make_ctx()).messages)["s1"]
        assert "omitted" not in block.content and block.content.endswith("k" * 400)

    def test_preview_capped_at_a_line_boundary(self) -> None:
        content = big(100, width=100)
        block = results(run_stage(SpillStage(), [*call_and_result("Read", content, tool_id="c1")], make_ctx()).messages)["c1"]
        body = block.content.split("\n", 1)[1]
        kept, marker = body.rsplit("\n", 1)
        assert marker == "... (preview cut at 500 chars)" and len(kept) <= 500
        assert all(line in content.split("\n") for line in kept.split("\n"))

    def test_preview_longer_than_the_result_keeps_it(self) -> None:
        state = CompactorState()
        cfg = SpillConfig(threshold=100, preview_chars=20_000, head_lines=200)
        msgs = [*call_and_result("Read", "short line\n" * 12, tool_id="k1")]
        result = run_stage(SpillStage(cfg), msgs, make_ctx(state=state))
        assert result.messages == msgs and result.events == () and state.stage("spill", SpillState).ledger == {"k1": None}

    def test_unknown_tool_name(self) -> None:
        orphan = Message(role="user", content=(ToolResultBlock(tool_use_id="o1", content="v" * 5000),), id="r")
        block = results(run_stage(SpillStage(), [orphan], make_ctx()).messages)["o1"]
        assert "tool unknown" in block.content

    def test_mewcode_stub(self) -> None:
        content = big(100)
        msgs = [*call_and_result("Read", content, tool_id="m1")]
        cfg = SpillConfig(preview_format="mewcode", unit="bytes")
        block = results(run_stage(SpillStage(cfg), msgs, make_ctx()).messages)["m1"]
        head = f"[content offloaded] original size: {len(content.encode())} bytes\n[saved to] {block.spill_path}\n[head preview]\n"
        assert block.content.startswith(head)
        preview = block.content[len(head) :].split("\n\n")[0]
        assert preview == "\n".join(content.split("\n")[:20])
        assert f"full content is saved at {block.spill_path}" in block.content and "do not guess" in block.content

    def test_mewcode_preview_cut_on_utf8_boundary(self) -> None:
        content = "中" * 30_000
        cfg = SpillConfig(preview_format="mewcode", unit="bytes", threshold=50_000)
        block = results(run_stage(SpillStage(cfg), [*call_and_result("Read", content, tool_id="m2")], make_ctx()).messages)["m2"]
        preview = block.content.split("[head preview]\n", 1)[1].split("\n", 1)[0]
        assert preview == "中" * 682  # 2046 bytes: the next character would pass 2048

    def test_safe_cut_keeps_graphemes(self) -> None:
        assert safe_cut("ab" + "e\u0301" * 5, 5) == "abe\u0301"
        assert safe_cut("🇫🇷🇩🇪", 3) == "🇫🇷"
        assert safe_cut("a👨\u200d👩", 3) == "a"  # a ZWJ sequence is one grapheme
        assert safe_cut("a\r\nb", 2) == "a"

    @settings(max_examples=80, deadline=None)
    @given(text=st.text(min_size=1), limit=st.integers(0, 40))
    def test_safe_cut_is_a_short_prefix(self, text: str, limit: int) -> None:
        cut = safe_cut(text, limit)
        assert text.startswith(cut) and len(cut) <= max(limit, 0)
        if len(cut) < len(text) and cut:
            assert unicodedata.category(text[len(cut)]) not in ("Mn", "Me")

    @settings(max_examples=80, deadline=None)
    @given(text=st.text(), limit=st.integers(1, 64))
    def test_utf8_prefix_fits(self, text: str, limit: int) -> None:
        cut = utf8_prefix(text, limit)
        size = lambda t: len(t.encode("utf-8", "surrogatepass"))  # noqa: E731
        assert text.startswith(cut) and size(cut) <= limit
        if cut != text:  # the longest such prefix: one more character would not fit
            assert size(text[: len(cut) + 1]) > limit


class TestMessageBudget:
    def test_largest_first_until_it_fits(self) -> None:
        # MewCode's example: 90 + 60 + 50 + 20 KB > 200 KB -> only the 90 KB result is spilled.
        cfg = SpillConfig(unit="bytes", threshold=100_000, message_budget_enabled=True, message_budget=200_000)
        msgs, ctx = budget_message(90_000, 60_000, 50_000, 20_000), make_ctx()
        result = run_stage(SpillStage(cfg), msgs, ctx)
        out = results(result.messages)
        assert [t for t, b in out.items() if b.compacted] == ["p0"]
        assert ctx.state.stage("spill", SpillState).ledger["p1"] is None and ctx.state.stage("spill", SpillState).ledger["p3"] is None
        assert [e.trigger for e in result.events] == ["message_budget"]

    def test_budget_off_by_default(self) -> None:
        out = results(run_stage(SpillStage(SpillConfig(threshold=100_000)), budget_message(90_000, 60_000, 60_000), make_ctx()).messages)
        assert not any(b.compacted for b in out.values())

    def test_errors_are_not_spilled_for_the_budget(self) -> None:
        msgs = budget_message(90_000, 80_000, 50_000)
        res = msgs[-1].content
        msgs[-1] = msgs[-1].model_copy(update={"content": (res[0].model_copy(update={"is_error": True}), *res[1:])})
        cfg = SpillConfig(unit="bytes", threshold=100_000, message_budget_enabled=True, message_budget=200_000)
        out = results(run_stage(SpillStage(cfg), msgs, make_ctx()).messages)
        assert out["p0"].compacted is None and out["p1"].compacted == "spill"


class TestLedger:
    def test_later_request_gets_byte_identical_stubs(self) -> None:
        state, store = CompactorState(), MemoryStore()
        first = run_stage(SpillStage(), history(9000, 100), make_ctx(store, state))
        stub = results(first.messages)["toolu_0"].content
        later = history(9000, 100) + [user("more"), *call_and_result("Read", "n" * 7000, tool_id="toolu_new")]
        # Even a config change does not touch a decision already taken.
        second = run_stage(SpillStage(SpillConfig(preview_chars=100, threshold=100)), later, make_ctx(store, state))
        out = results(second.messages)
        assert out["toolu_0"].content == stub and out["toolu_0"].spill_path == results(first.messages)["toolu_0"].spill_path
        assert out["toolu_1"].compacted is None  # kept stays kept
        assert out["toolu_new"].compacted == "spill"
        assert {e.trigger for e in second.events} == {"ledger", "threshold"}

    def test_idempotent(self) -> None:
        state = CompactorState()
        once = run_stage(SpillStage(), history(9000, 300, 12_000), make_ctx(state=state)).messages
        ledger = dict(state.stage("spill", SpillState).ledger)
        again = run_stage(SpillStage(), once, make_ctx(state=state))
        assert again.messages == once and all(a is b for a, b in zip(again.messages, once, strict=True)) and again.events == ()
        assert state.stage("spill", SpillState).ledger == ledger

    def test_no_mutation(self) -> None:
        msgs = history(9000, 300)
        snapshot = copy.deepcopy(msgs)
        run_stage(SpillStage(), msgs, make_ctx())
        assert msgs == snapshot


class TestFailures:
    @pytest.mark.parametrize("error", [LabError, OSError], ids=["StoreError", "OSError"])
    def test_failed_write_records_nothing_and_is_retried(self, error: type[Exception]) -> None:
        from lab.errors import StoreError

        state = CompactorState()
        store = FailingStore(fail_first=1, error=StoreError if error is LabError else OSError)
        msgs = history(9000)
        first = run_stage(SpillStage(), msgs, make_ctx(store, state))
        assert results(first.messages)["toolu_0"] == results(msgs)["toolu_0"]
        assert "toolu_0" not in state.stage("spill", SpillState).ledger and "toolu_0" not in state.spill_paths
        (event,) = first.events
        assert not event.success and event.ids == ("toolu_0",) and "retried" in event.detail
        second = run_stage(SpillStage(), msgs, make_ctx(store, state))
        assert results(second.messages)["toolu_0"].compacted == "spill" and state.stage("spill", SpillState).ledger["toolu_0"]
        assert store.attempts == 2

    def test_failure_in_budget_pass_moves_to_the_next(self) -> None:
        cfg = SpillConfig(unit="bytes", threshold=100_000, message_budget_enabled=True, message_budget=200_000)
        state = CompactorState()
        out = results(run_stage(SpillStage(cfg), budget_message(90_000, 80_000, 50_000), make_ctx(FailingStore(1), state)).messages)
        assert out["p0"].compacted is None and "p0" not in state.stage("spill", SpillState).ledger
        assert out["p1"].compacted == "spill"


class TestRetention:
    def test_cleanup_spills(self) -> None:
        clock = [0.0]
        store = MemoryStore(clock=lambda: clock[0])
        key = store.write("s", "t", "x", {})
        clock[0] = 31 * 86_400
        assert cleanup_spills(store, SpillConfig(retention_days=0)) == 0 and store.exists(key)
        assert cleanup_spills(store, SpillConfig(), now=clock[0]) == 1 and not store.exists(key)

    def test_disabled_stage(self) -> None:
        msgs = history(9000)
        result = run_stage(SpillStage(SpillConfig(enabled=False)), msgs, make_ctx())
        assert result.messages == msgs and result.events == ()


@pytest.mark.parametrize("fmt", ["minicode", "mewcode"])
@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_pairs_and_tokens(path: Path, fmt: str, tmp_path: Path) -> None:
    msgs = load(path).messages
    counter, store = MiniCodeCounter(), FolderStore(tmp_path)
    cfg = SpillConfig(preview_format=fmt, unit="bytes" if fmt == "mewcode" else "chars", message_budget_enabled=fmt == "mewcode", message_budget=20_000)
    result = run_stage(SpillStage(cfg), msgs, make_ctx(store))
    assert tool_pairs(result.messages) == tool_pairs(msgs)
    assert counter.count_messages(result.messages) <= counter.count_messages(msgs)
    for block in results(result.messages).values():
        if block.compacted == "spill":
            assert block.spill_path and store.read(block.spill_path) == results(msgs)[block.tool_use_id].content


class TestNamesIndex:
    """``index_chars``: the stub lists the names the output holds beyond its preview (off in both seeds)."""

    def listing(self, n: int) -> str:
        return "".join(f"src/module_{i}.py:{i}: def handler_{i}(request):\n" for i in range(n))

    def test_off_by_default_so_seed_stubs_are_unchanged(self) -> None:
        content = self.listing(400)
        for fmt in ("minicode", "mewcode"):
            stub = stub_text(content, "Grep", "/s/x.txt", SpillConfig(preview_format=fmt))
            assert "[names in the full output]" not in stub

    def test_stub_lists_names_beyond_the_preview(self) -> None:
        content = self.listing(400)
        cfg = SpillConfig(preview_format="mewcode", mewcode_preview_lines=5, mewcode_preview_bytes=256, index_chars=300)
        stub = stub_text(content, "Grep", "/s/x.txt", cfg)
        head, index = stub.split("\n[names in the full output] ")
        assert "src/module_0.py" in head and "src/module_0.py" not in index
        names = index.split(", ")
        assert names[0] == "src/module_5.py" and "handler_5" in names and len(index) <= 300

    def test_minicode_stub_indexes_what_head_and_tail_leave_out(self) -> None:
        content = self.listing(400)
        stub = stub_text(content, "Grep", "/s/x.txt", SpillConfig(index_chars=200))
        index = stub.rsplit("[names in the full output] ", 1)[1]
        assert "src/module_399.py" not in index and index.startswith("src/module_8.py")

    def test_stage_spills_with_the_index_and_freezes_it(self) -> None:
        msgs = [system(), user("find it"), *call_and_result("Grep", self.listing(300), tool_id="g1", pattern="handler")]
        cfg = CompactionConfig(spill=SpillConfig(preview_format="mewcode", index_chars=500))
        ctx = StageContext(cfg, MiniCodeCounter(), MemoryStore(), None, CompactorState(), now=1000.0)  # type: ignore[arg-type]
        stage = SpillStage(cfg.spill)
        first = results(run_stage(stage, msgs, ctx).messages)["g1"]
        assert first.compacted == "spill" and "[names in the full output] src/module_20.py" in first.content
        again = results(run_stage(stage, copy.deepcopy(msgs), ctx).messages)["g1"]
        assert again.content == first.content


class TestSeedPreview:
    """``preview_shape="seed"``: MiniCode's ``_generate_preview`` as its design writes it."""

    @staticmethod
    def crlf(n_lines: int, width: int) -> str:
        return "".join(f"row {i:02d} " + "." * width + "\r\n" for i in range(n_lines))

    def stub(self, content: str, **cfg: object) -> ToolResultBlock:
        config = SpillConfig(threshold=100, preview_shape="seed", **cfg)  # type: ignore[arg-type]
        return results(run_stage(SpillStage(config), [*call_and_result("Grep", content, tool_id="g1", pattern="x")], make_ctx()).messages)["g1"]

    def test_exact_shape_of_a_20_line_crlf_output(self) -> None:
        content = self.crlf(20, 20)
        block = self.stub(content)
        rows = [f"row {i:02d} " + "." * 20 for i in range(20)]
        name = (block.spill_path or "").rsplit("/", 1)[-1]
        expected = "\n".join(
            [f"[Tool result persisted to disk - {len(content)} chars]", "Tool: Grep", f"Path: {name}", "--- Preview (first/last lines) ---",
             *rows[:8], "... (9 lines omitted) ...", *rows[17:]]
        )
        assert block.compacted == "spill" and block.content == expected
        assert "\r" not in block.content and len(block.content) < 500

    def test_the_whole_stub_is_cut_at_500_chars(self) -> None:
        content = self.crlf(20, 100)
        block = self.stub(content)
        lines = content.splitlines()
        name = (block.spill_path or "").rsplit("/", 1)[-1]
        whole = "\n".join(
            [f"[Tool result persisted to disk - {len(content)} chars]", "Tool: Grep", f"Path: {name}", "--- Preview (first/last lines) ---",
             *lines[:8], "... (9 lines omitted) ...", *lines[17:]]
        )
        # The header counts toward the 500, as in the design's [:500]; the lab shape cuts 500 after it.
        assert block.content == whole[:500] and len(block.content) == 500

    def test_no_tail_up_to_twelve_lines(self) -> None:
        block = self.stub(self.crlf(12, 40))
        body = block.content.split("--- Preview (first/last lines) ---\n", 1)[1]
        assert body.split("\n") == [f"row {i:02d} " + "." * 40 for i in range(8)]

    def test_cut_never_splits_a_grapheme(self) -> None:
        block = self.stub("e\u0301" * 600 + "\n")
        # The design's [:500] may end on a bare "e" whose accent is cut off; the lab's cut keeps the pair.
        assert len(block.content) <= 500 and block.content.endswith("e\u0301")

    def test_the_lab_shape_keeps_its_own_cut(self) -> None:
        content = big(100, width=100)
        seed = results(run_stage(SpillStage(SpillConfig(preview_shape="seed")), [*call_and_result("Read", content, tool_id="c1")], make_ctx()).messages)["c1"]
        lab_shape = results(run_stage(SpillStage(SpillConfig()), [*call_and_result("Read", content, tool_id="c1")], make_ctx()).messages)["c1"]
        assert len(seed.content) <= 500 < len(lab_shape.content)
        assert lab_shape.content.endswith("... (preview cut at 500 chars)")


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/home/u/.cache/compaction-lab/spill/s1/t1_ab12.txt", "/home/u/.cache/compaction-lab/spill/s1/t1_ab12.txt"),
        ("C:\\Users\\u\\spill\\t1_ab12.txt", "C:\\Users\\u\\spill\\t1_ab12.txt"),
        ("mem://s1/t1_ab12.txt", "t1_ab12.txt"),
    ],
    ids=["posix-file", "windows-file", "memory-key"],
)
def test_lab_stub_names_a_file_on_disk_in_full_so_the_agent_can_read_it_back(path: str, named: str) -> None:
    from lab.core.stages.spill import minicode_stub

    stub = minicode_stub("line\n" * 400, "Bash", path, SpillConfig())
    assert stub.splitlines()[0].endswith(f"file {named}]")
