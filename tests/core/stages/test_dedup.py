"""Stage 3, read dedup: unchanged re-reads become stubs; writes, slices and errors never dedup wrongly."""

from __future__ import annotations

from typing import Any

import copy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
from lab.core.pipeline import run_stage
from lab.core.messages import Message, ToolResultBlock, ToolUseBlock, tool_pairs
from lab.core.stages.dedup import DedupConfig, DedupStage, content_hash, dedup_stub, may_write, parse_cat, read_target, DedupState
from lab.core.stages.spill import SpillStage
from lab.core.store import MemoryStore
from lab.core.tokens.base import MiniCodeCounter
from lab.formats import load
from tests.builders import assistant, call_and_result, system, user
from tests.conftest import CORPUS_FILES, corpus_file, corpus_id

FILE = "".join(f"def f{i}():\n    return {i}\n" for i in range(40))


def make_ctx(state: CompactorState | None = None, **extra: Any) -> StageContext:
    return StageContext(CompactionConfig(), MiniCodeCounter(), MemoryStore(), None, state or CompactorState(), **extra)  # type: ignore[arg-type]


def results(messages: list[Message]) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in messages for b in m.content if isinstance(b, ToolResultBlock)}


def read(tid: str, content: str = FILE, path: str = "src/app.py", **extra: object) -> list[Message]:
    return call_and_result("Read", content, tool_id=tid, file_path=path, **extra)


def sources(msgs: list[Message], config: DedupConfig | None = None) -> dict[str, tuple[str, str]]:
    """The index of sources the stage's memo holds after reading ``msgs`` (file key -> (hash, message id))."""
    memos: dict[str, Any] = {}
    run_stage(DedupStage(config), msgs, make_ctx(memos=memos))
    return memos["dedup"].table("index")


def run(msgs: list[Message], state: CompactorState | None = None, config: DedupConfig | None = None) -> tuple[dict[str, ToolResultBlock], CompactorState, list[Message]]:
    state = state or CompactorState()
    out = run_stage(DedupStage(config), msgs, make_ctx(state))
    return results(out.messages), state, out.messages


class TestDefaults:
    def test_config(self) -> None:
        cfg = DedupConfig()
        assert "Read" in cfg.read_tools and "str_replace_editor:view" in cfg.read_tools and "Edit" in cfg.write_tools
        assert cfg.path_keys[0] == "file_path" and "offset" in cfg.partial_keys and "Bash" in cfg.shell_tools
        assert DedupStage().name == "dedup"

    def test_unchanged_reread_becomes_the_stub(self) -> None:
        msgs = [system(), user("look"), *read("r1"), assistant("hm"), *read("r2")]
        out, state, new = run(msgs)
        assert out["r1"].compacted is None
        expected = f"[Read deduplicated: src/app.py] File unchanged since last read. Original content at message index 3 (id {msgs[3].id})"
        assert out["r2"].content == expected == dedup_stub("src/app.py", 3, msgs[3].id)
        assert out["r2"].compacted == "dedup" and out["r2"].original_chars == len(FILE) and out["r2"].tool_use_id == "r2"
        assert state.stage("dedup", DedupState).ledger == {"r2": expected}
        assert sources(msgs)["src/app.py"] == (content_hash(FILE), msgs[3].id)
        assert tool_pairs(new) == tool_pairs(msgs)

    def test_event(self) -> None:
        msgs = [system(), *read("r1"), *read("r2")]
        result = run_stage(DedupStage(), msgs, make_ctx())
        (event,) = result.events
        assert event.stage == "dedup" and event.strategy == "read_dedup" and event.ids == ("r2",)
        assert event.tokens_after == MiniCodeCounter().count_messages(result.messages) < event.tokens_before

    def test_md5_not_for_security(self) -> None:
        import hashlib

        assert content_hash("abc") == hashlib.md5(b"abc").hexdigest()


class TestInvalidation:
    def test_changed_content_is_not_deduped(self) -> None:
        out, _, _ = run([*read("r1"), *read("r2", FILE + "# edited\n")])
        assert out["r2"].compacted is None

    @pytest.mark.parametrize("tool,inputs", [("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}), ("Write", {"file_path": "./src/app.py", "text": "x"}), ("str_replace_editor", {"command": "str_replace", "path": "src/app.py"}), ("apply_patch", {"input": "*** patch"})], ids=["Edit", "Write-dotted", "editor", "patch-without-path"])
    def test_write_invalidates(self, tool: str, inputs: dict) -> None:
        msgs = [*read("r1"), *call_and_result(tool, "ok", tool_id="w1", **inputs), *read("r2")]
        out, _, _ = run(msgs)
        assert out["r2"].compacted is None

    def test_write_of_another_file_does_not_invalidate(self) -> None:
        msgs = [*read("r1"), *call_and_result("Edit", "ok", tool_id="w1", file_path="other.py"), *read("r2")]
        assert run(msgs)[0]["r2"].compacted == "dedup"

    def test_shell_command_mentioning_the_path_invalidates(self) -> None:
        msgs = [*read("r1"), *call_and_result("Bash", "", tool_id="b1", command="sed -i s/a/b/ src/app.py"), *read("r2")]
        assert run(msgs)[0]["r2"].compacted is None

    def test_read_only_shell_command_mentioning_the_path_does_not_invalidate(self) -> None:
        msgs = [*read("r1"), *call_and_result("execute_bash", "3: x", tool_id="b1", command='grep -n "f(1);" src/app.py 2>&1 | head'), *read("r2")]
        assert run(msgs)[0]["r2"].compacted == "dedup"

    @pytest.mark.parametrize(
        "command,writes",
        [
            ('grep -n "DECL(x);" a.c', False), ("ls -l | head", False), ("cd /x && grep a b 2>/dev/null", False), ("head a; tail a", False), ("X=1 grep a b", False), ("grep 'a>b' f", False),
            ("sed -i s/a/b/ x", True), ("cat a > b", True), ("cat a | tee b", True), ("find . -delete", True), ("echo $(rm a)", True), ("echo hi\nrm x", True), ("python x.py", True), ("(cd x; rm a)", True), ("git checkout a", True), ("cat 'open", True),
        ],
    )
    def test_may_write(self, command: str, writes: bool) -> None:
        assert may_write(command, DedupConfig().readonly_commands) is writes

    def test_dedup_again_after_the_new_content_is_read(self) -> None:
        msgs = [*read("r1"), *call_and_result("Edit", "ok", tool_id="w1", file_path="src/app.py"), *read("r2"), *read("r3")]
        out, _, _ = run(msgs)
        assert out["r2"].compacted is None and out["r3"].compacted == "dedup" and "index 5" in out["r3"].content


class TestReadKinds:
    def test_shell_cat(self) -> None:
        msgs = [*call_and_result("Bash", FILE, tool_id="c1", command="cat src/app.py"), *call_and_result("bash", FILE, tool_id="c2", command="cat 'src/app.py'")]
        out, _, _ = run(msgs)
        assert out["c2"].compacted == "dedup" and out["c2"].content.startswith("[Read deduplicated: src/app.py]")

    def test_codex_style_command_list(self) -> None:
        msgs = [*call_and_result("shell", FILE, tool_id="c1", command=["bash", "-lc", "cat a.py"]), *call_and_result("shell", FILE, tool_id="c2", command=["cat", "a.py"])]
        assert run(msgs)[0]["c2"].compacted == "dedup"

    @pytest.mark.parametrize("command,expected", [("cat a.py", ("a.py", ())), ("cat -n 'my file.py'", ("my file.py", ("-n",))), ("cat a.py | head", None), ("cat a b", None), ("cat", None), ("cat *.py", None), ("cat a > b", None), ("less a.py", None), ("cat $(x)", None), ("cat 'unclosed", None)])
    def test_parse_cat(self, command: str, expected: object) -> None:
        assert parse_cat(command) == expected

    def test_editor_view(self) -> None:
        msgs = [*call_and_result("str_replace_editor", FILE, tool_id="v1", command="view", path="/repo/a.py"), *call_and_result("str_replace_editor", FILE, tool_id="v2", command="view", path="/repo/a.py")]
        assert run(msgs)[0]["v2"].compacted == "dedup"

    def test_not_a_read_tool(self) -> None:
        msgs = [*call_and_result("Grep", FILE, tool_id="g1", path="src"), *call_and_result("Grep", FILE, tool_id="g2", path="src")]
        assert run(msgs)[0]["g2"].compacted is None

    def test_partial_reads_never_dedup_against_other_slices(self) -> None:
        msgs = [*read("r1"), *read("r2", offset=0, limit=10), *read("r3", offset=10, limit=10), *read("r4", view_range=[1, 5])]
        out, _, _ = run(msgs)
        assert all(out[t].compacted is None for t in ("r2", "r3", "r4"))

    def test_same_slice_twice_dedups(self) -> None:
        out, _, _ = run([*read("r1", offset=5, limit=10), *read("r2", offset=5, limit=10)])
        assert out["r2"].content.startswith("[Read deduplicated: src/app.py (limit=10, offset=5)]")

    def test_read_target_keys(self) -> None:
        cfg = DedupConfig()
        whole = read_target(ToolUseBlock(id="a", name="Read", input={"file_path": "./x/../y.py"}), cfg)
        part = read_target(ToolUseBlock(id="b", name="Read", input={"file_path": "y.py", "offset": 1}), cfg)
        assert whole and part and whole.key == "y.py" and part.key != whole.key and part.key.startswith("y.py\x00")
        assert read_target(ToolUseBlock(id="c", name="Read", input={}), cfg) is None


class TestEdgeCases:
    def test_error_result_is_never_a_source_nor_deduped(self) -> None:
        msgs = [*read("r1", is_error=True), *read("r2"), *read("r3", is_error=True)]
        out, state, _ = run(msgs)
        assert out["r2"].compacted is None and out["r3"].compacted is None
        assert sources(msgs)["src/app.py"][1] == msgs[3].id

    def test_tiny_file_is_not_replaced_by_a_longer_stub(self) -> None:
        out, _, _ = run([*read("r1", "x = 1\n"), *read("r2", "x = 1\n")])
        assert out["r2"].compacted is None

    def test_compacted_source_is_not_used(self) -> None:
        msgs = [*read("r1"), *read("r2")]
        cleared = msgs[1].content[0].model_copy(update={"content": "[cleared]", "compacted": "cleared"})  # type: ignore[union-attr]
        msgs[1] = msgs[1].model_copy(update={"content": (cleared,)})
        assert run(msgs)[0]["r2"].compacted is None

    def test_disabled(self) -> None:
        msgs = [*read("r1"), *read("r2")]
        result = run_stage(DedupStage(DedupConfig(enabled=False)), msgs, make_ctx())
        assert result.messages == msgs and result.events == ()


class TestLedger:
    def test_frozen_stub_survives_when_the_source_is_compacted_away(self) -> None:
        msgs = [system(), *read("r1"), *read("r2")]
        out, state, _ = run(msgs)
        stub = out["r2"].content
        # The source read is gone (a summary replaced it); a new read of the same file arrives.
        later = [msgs[0], user("summary"), *msgs[3:], *read("r3")]
        out2, _, _ = run(later, state)
        assert out2["r2"].content == stub  # frozen, byte for byte, including its old index
        assert out2["r3"].compacted is None  # never deduped against a missing message

    def test_later_request_gets_identical_stubs(self) -> None:
        msgs = [system(), *read("r1"), *read("r2")]
        out, state, _ = run(msgs)
        out2, _, _ = run(msgs + [user("more"), *read("r3")], state)
        assert out2["r2"].content == out["r2"].content and out2["r3"].compacted == "dedup"

    def test_kept_read_is_never_deduped_later(self) -> None:
        msgs = [*read("r1"), *call_and_result("Write", "ok", tool_id="w1", file_path="src/app.py"), *read("r2")]
        out, state, _ = run(msgs)
        assert out["r2"].compacted is None
        # The write disappears from a later history; r2 was decided "kept" and stays kept.
        out2, _, _ = run([*msgs[:2], *msgs[4:]], state)
        assert out2["r2"].compacted is None

    def test_spilled_result_is_neither_source_nor_dedup(self) -> None:
        state = CompactorState(claims={"r1": "spill"})
        out, _, _ = run([*read("r1"), *read("r2")], state)
        assert out["r1"].compacted is None and out["r2"].compacted is None

    def test_decisions_agree_whatever_the_stage_order(self) -> None:
        # The dispatcher runs dedup then spill as results arrive; the request path runs spill then dedup
        # on the raw history. Frozen decisions must give the same messages either way.
        big = FILE * 20  # over the spill threshold
        msgs = [system(), *read("r1", big), *read("r2", big)]
        ctx = make_ctx()
        dispatched = run_stage(SpillStage(), run_stage(DedupStage(), msgs, ctx).messages, ctx).messages
        requested = run_stage(DedupStage(), run_stage(SpillStage(), msgs, ctx).messages, ctx).messages
        assert requested == dispatched
        assert results(dispatched)["r1"].compacted == "spill" and results(dispatched)["r2"].compacted == "dedup"

    def test_idempotent(self) -> None:
        state = CompactorState()
        msgs = [system(), *read("r1"), *read("r2"), *read("r3", "other\n" * 50, path="b.py"), *read("r4", "other\n" * 50, path="b.py")]
        once = run_stage(DedupStage(), msgs, make_ctx(state)).messages
        snapshot = (dict(state.stage("dedup", DedupState).ledger), set(state.stage("dedup", DedupState).seen))
        again = run_stage(DedupStage(), once, make_ctx(state))
        assert again.messages == once and again.events == () and (state.stage("dedup", DedupState).ledger, state.stage("dedup", DedupState).seen) == snapshot

    def test_no_mutation(self) -> None:
        msgs = [system(), *read("r1"), *read("r2")]
        snapshot = copy.deepcopy(msgs)
        run_stage(DedupStage(), msgs, make_ctx())
        assert msgs == snapshot

    @settings(max_examples=30, deadline=None)
    @given(ops=st.lists(st.tuples(st.sampled_from(["read", "write"]), st.sampled_from(["a.py", "b.py"]), st.sampled_from([FILE, FILE + "#2\n"])), max_size=10))
    def test_incremental_equals_batch(self, ops: list[tuple[str, str, str]]) -> None:
        # Calling the stage as each result arrives (the dispatcher) gives the same history as one call.
        msgs: list[Message] = []
        for i, (op, path, content) in enumerate(ops):
            msgs += read(f"t{i}", content, path) if op == "read" else call_and_result("Edit", "ok", tool_id=f"t{i}", file_path=path)
        state = CompactorState()
        for n in range(2, len(msgs) + 1, 2):
            run_stage(DedupStage(), msgs[:n], make_ctx(state))
        incremental = run_stage(DedupStage(), msgs, make_ctx(state)).messages
        assert incremental == run_stage(DedupStage(), msgs, make_ctx()).messages


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_pairs_and_tokens(path: Path) -> None:
    msgs = load(path).messages
    counter = MiniCodeCounter()
    result = run_stage(DedupStage(), msgs, make_ctx())
    assert tool_pairs(result.messages) == tool_pairs(msgs)
    assert counter.count_messages(result.messages) <= counter.count_messages(msgs)
    before, after = results(msgs), results(result.messages)
    for tid, block in after.items():
        if block.compacted == "dedup":  # the stub points at a message holding the very same content
            source = result.messages[int(block.content.split("message index ")[1].split(" ")[0])]
            assert any(isinstance(b, ToolResultBlock) and b.compacted is None and b.content == before[tid].content for b in source.content)


def test_corpus_openhands_repeated_views_are_deduped() -> None:
    path = corpus_file("openhands/openhands-v0-ponyc-output.jsonl")
    msgs = load(path).messages
    # The agent views parser.c whole three times in a row, unchanged (a grep in between only reads).
    (event,) = run_stage(DedupStage(), msgs, make_ctx()).events
    assert len(event.ids) == 2 and event.tokens_freed > 5000


class TestSharedDecodes:
    """Stages of equal configs share the memory of decoded calls; the decode is a pure function of call, config and directory."""

    def test_equal_configs_share_and_other_configs_do_not(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import lab.core.stages.dedup as dedup_module

        decodes: list[str] = []
        real = dedup_module.call_workdir

        def watched(use: ToolUseBlock, cwd: str | None) -> str | None:
            decodes.append(use.id)
            return real(use, cwd)

        monkeypatch.setattr(dedup_module, "call_workdir", watched)
        dedup_module.clear_decoded()
        msgs = [system(), user("look"), *read("r1", path="app/x.py")]
        run_stage(DedupStage(DedupConfig()), msgs, make_ctx())
        assert decodes, "the call was decoded"
        decodes.clear()
        # Another stage of an equal config meets the same call object: decoded already.
        run_stage(DedupStage(DedupConfig()), msgs, make_ctx())
        assert decodes == []
        # Another config decodes again, to its own answer (the directory is part of the decode).
        out = run_stage(DedupStage(DedupConfig(cwd="/repo")), [*msgs, *read("r2", path="/repo/app/x.py")], make_ctx())
        assert decodes and results(out.messages)["r2"].compacted == "dedup"
        decodes.clear()
        dedup_module.clear_decoded()
        run_stage(DedupStage(DedupConfig()), msgs, make_ctx())
        assert decodes, "forgotten after clear_decoded"
