"""Needed-later recall on sessions where the answer is known, by hand and through replays."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Boundary, Message, TextBlock, ThinkingBlock, ToolResultBlock
from lab.core.presets import preset
from lab.core.store import MemoryStore
from lab.evaluation import compare
from lab.replayer import Report, replay
from lab.replayer.recall import Recall, RecallStep, message_mentions, scan
from lab.core.config import with_value, with_values
from tests.builders import assistant, call_and_result, system, tool_call, tool_result, user

CODE = "def compute_total(items):\n    return sum(items)\n"


def _raw(*, system_text: str = "You are an agent.") -> list[Message]:
    # Request 0 at index 2 reads the file; request 1 at index 4 answers with what the read showed.
    return [
        system(system_text),
        user("Please fix the bug."),
        tool_call("Read", "t1", file_path="app/billing.py"),
        tool_result("t1", CODE),
        assistant("The bug is in compute_total."),
    ]


def _cleared(tool_id: str = "t1") -> Message:
    return Message(role="user", content=(ToolResultBlock(tool_use_id=tool_id, content="[cleared]", compacted="cleared"),), id="cleared")


def _boundary() -> Message:
    return Message(role="system", content=(), id="b1", tag="boundary", boundary=Boundary(trigger="auto", strategy="full"))


class TestByHand:
    def test_a_context_that_holds_the_read_keeps_what_the_response_used(self) -> None:
        raw = _raw()
        r = Recall(raw, None, {})
        first = r.step(2, 3, raw[:2])
        assert first.needed == 0 and first.recall is None  # the path is named for the first time
        step = r.step(4, 5, raw[:4])
        assert (step.needed, step.kept, step.recall) == (1, 1, 1.0)

    def test_what_a_response_needed_is_the_transcripts_and_leaves_the_system_prompt_out(self) -> None:
        raw = _raw(system_text="You are an agent. compute_total is yours.")
        history = Recall(raw, None, {}).history
        # Named, and seen before in the result; but the system prompt names it too.
        assert history.needed(4, 5) == ()
        raw = _raw()
        history = Recall(raw, None, {}).history
        assert history.needed(4, 5) == ("compute_total",)
        assert history.needed(2, 3) == ()  # the path is named for the first time
        # Kept for the next replay of the same messages.
        assert Recall(raw, None, {}).history.needed(4, 5) is history.needed(4, 5)

    def test_a_raw_message_with_a_compacted_result_is_read_for_its_spill_path(self) -> None:
        raw = _raw()
        store = MemoryStore()
        path = store.write("s", "t1", CODE, {})
        # A re-imported session can hold a stub the original pipeline wrote: it is no plain raw message.
        stub = Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content="[persisted]", compacted="spill", spill_path=path),), id="st")
        raw = [*raw, stub, assistant("compute_total again.")]
        r = Recall(raw, store, {"t1": path})
        assert not r.history.plain(stub) and r.history.plain(raw[3])
        step = r.step(6, 7, [*raw[:3], stub])
        assert (step.needed, step.kept, step.recoverable) == (1, 0, 1)

    def test_a_context_without_the_read_loses_it_to_the_config(self) -> None:
        raw = _raw()
        r = Recall(raw, None, {})
        step = r.step(4, 5, raw[:3] + [_cleared()])
        assert (step.needed, step.kept, step.recoverable, step.lost_config, step.lost_recorded) == (1, 0, 0, 1, 0)
        assert step.recall == 0.0 and step.lost == (("compute_total", "this config"),)

    def test_a_spilled_read_with_its_stub_in_the_context_is_recoverable(self) -> None:
        raw = _raw()
        store = MemoryStore()
        path = store.write("s", "t1", CODE, {})
        stub = Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content="[persisted]", compacted="spill", spill_path=path),), id="st")
        step = Recall(raw, store, {"t1": path}).step(4, 5, raw[:3] + [stub])
        assert (step.needed, step.kept, step.recoverable, step.recall, step.recoverable_share) == (1, 0, 1, 0.0, 1.0)
        # The file must still be there: a stub whose file is gone recovers nothing.
        assert Recall(raw, MemoryStore(), {"t1": path}).step(4, 5, raw[:3] + [stub]).lost_config == 1

    def test_a_path_named_only_in_the_stub_text_counts_too(self) -> None:
        raw = _raw()
        store = MemoryStore()
        path = store.write("s", "t1", CODE, {})
        named = Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content=f"[saved to] {path}", compacted="cleared"),), id="n")
        assert Recall(raw, store, {"t1": path}).step(4, 5, raw[:3] + [named]).recoverable == 1

    def test_what_the_system_prompt_holds_is_never_needed(self) -> None:
        raw = _raw(system_text="You are an agent. Never rename compute_total.")
        assert Recall(raw, None, {}).step(4, 5, [raw[0]]).needed == 0

    def test_a_summary_that_quotes_it_keeps_it(self) -> None:
        raw = _raw()
        summary = Message(role="user", content=(TextBlock(text="## Session summary\nRead app/billing.py (compute_total)."),), id="sum", tag="summary")
        assert Recall(raw, None, {}).step(4, 5, [raw[0], summary]).kept == 1

    def test_a_loss_behind_a_recorded_boundary_is_the_recorded_compaction(self) -> None:
        raw = _raw()[:4] + [_boundary(), user("Go on."), assistant("Fix compute_total now.")]
        step = Recall(raw, None, {}).step(6, 7, [raw[0], raw[4], raw[5]])
        assert (step.needed, step.lost_recorded, step.lost_config) == (1, 1, 0)
        assert step.lost == (("compute_total", "recorded compaction"),)

    def test_seen_again_after_the_boundary_then_lost_is_the_config(self) -> None:
        raw = _raw()[:4] + [_boundary(), user("Remember compute_total."), assistant("ok"), user("Go on."), assistant("Fix compute_total now.")]
        step = Recall(raw, None, {}).step(8, 9, [raw[0], raw[7]])
        assert (step.lost_recorded, step.lost_config) == (0, 1)

    def test_shell_agent_mentions(self) -> None:
        raw = [system(), user("Fix the failing test."),
               *call_and_result("bash", "<returncode>1</returncode>\n<output>\nAssertionError: totals differ\n</output>", tool_id="c1",
                                command="python -m pytest tests/test_billing.py::test_totals"),
               tool_call("bash", "c2", command="sed -n 1,40p tests/test_billing.py")]
        r = Recall(raw, None, {})
        kept = r.step(4, 5, raw[:4])
        # tests/test_billing.py (and its stem), seen in the earlier command.
        assert kept.needed == 2 and kept.kept == 2
        lost = Recall(raw, None, {}).step(4, 5, raw[:2])
        assert lost.lost == (("test_billing", "this config"), ("tests/test_billing.py", "this config"))

    def test_a_message_without_tool_calls_is_looked_up_as_its_full_scan_would_say(self) -> None:
        # hits() finds only the wanted tokens of such a message; it must agree with the full token set.
        raw = [system(), user("Fix café_total in src/数据.py; see https://x.org/a."),
               *call_and_result("bash", "<returncode>1</returncode>\n<output>\nValueError: bad total\n</output>", tool_id="c1",
                                command="python -m pytest tests/test_total.py::test_sum"),
               Message(role="user", content=(ThinkingBlock(thinking="maybe compute_total"), TextBlock(text="also tests/test_total.py")), id="u2"),
               assistant("ValueError: bad total\nIt comes from café_total in src/数据.py (https://x.org/a), and test_total.")]
        r = Recall(raw, None, {})
        assert {"src/数据.py", "ValueError: bad total", "https://x.org/a", "test_total"} <= r.wanted
        for m in raw:
            assert r.hits(m) == r.wanted & message_mentions(m), m.id
        # A stage's copy of a message (a new object, the same text) holds the same.
        copy = raw[3].model_copy()
        assert copy is not raw[3] and r.hits(copy) == r.hits(raw[3]) != frozenset()

    def test_counts_add_up(self) -> None:
        step = RecallStep(needed=5, kept=2, recoverable=1, lost_recorded=1, lost_config=1)
        assert step.kept + step.recoverable + step.lost_recorded + step.lost_config == step.needed
        assert step.fields()["needed_later_recall"] == pytest.approx(0.4)


def _long_session() -> list[Message]:
    """The agent reads app/billing.py first, then many big files, then its last response names compute_total."""
    msgs = [system(), user("Please fix the bug in the billing totals.")]
    msgs += call_and_result("Read", CODE + "# padding\n" * 50, tool_id="first", file_path="app/billing.py")
    for i in range(20):
        msgs += call_and_result("Read", f"filler line {i}\n" * 400, tool_id=f"r{i}", file_path=f"app/other{i}.py")
    msgs.append(assistant("The bug is in compute_total: it ignores discounts."))
    return msgs


def _no_compaction() -> object:
    return with_values(preset("minicode"), dict.fromkeys(["spill.enabled", "dedup.enabled", "microcompact.enabled", "watermark.enabled"], False))


class TestThroughReplay:
    def test_without_compaction_everything_needed_is_kept(self) -> None:
        report = replay(_long_session(), _no_compaction(), window=200_000)
        assert report.needed_mentions > 0
        assert report.kept_mentions == report.needed_mentions and report.needed_later_recall == 1.0
        assert all(r.needed_later_recall in (None, 1.0) for r in report.rows)

    def test_a_compacted_context_loses_the_early_read(self) -> None:
        cfg = with_value(preset("openhands-masking"), "microcompact.keep_recent", 2)
        report = replay(_long_session(), cfg, window=200_000)
        last = report.rows[-1]
        assert last.needed_mentions >= 1 and last.kept_mentions < last.needed_mentions
        assert any(m.mention == "compute_total" and m.lost_to == "this config" for m in last.lost_mentions)
        assert report.needed_later_recall is not None and report.needed_later_recall < 1.0
        # Totals are micro-averages over the rows.
        assert report.needed_mentions == sum(r.needed_mentions for r in report.rows)
        assert report.needed_later_recall == pytest.approx(report.kept_mentions / report.needed_mentions)

    def test_recall_off_leaves_the_fields_empty(self) -> None:
        report = replay(_long_session(), "minicode", recall=False)
        assert report.needed_later_recall is None and report.needed_mentions == 0
        assert all(r.needed_later_recall is None for r in report.rows)

    def test_the_field_is_in_the_json_the_frame_and_the_compare_table(self, tmp_path) -> None:  # type: ignore[no-untyped-def]
        cfg = with_value(preset("openhands-masking"), "microcompact.keep_recent", 2)
        report = replay(_long_session(), cfg)
        data = report.to_dict()
        assert data["needed_later_recall"] == report.needed_later_recall
        assert Report.from_dict(json.loads(report.to_json())) == report
        assert "needed_later_recall" in report.df.columns and "lost_mentions" not in report.df.columns
        table = compare(_long_session(), ["minicode", ("masking", cfg)])
        assert "needed_later_recall" in table.columns and "recoverable_share" in table.columns
        out = table.write(tmp_path / "t.csv")
        assert "needed_later_recall" in out.read_text().splitlines()[0].split(",")

    def test_a_report_saved_before_recall_existed_still_loads(self) -> None:
        data = replay(_long_session(), "minicode").to_dict()
        new = ("needed_mentions", "kept_mentions", "recoverable_mentions", "lost_recorded", "lost_config", "needed_later_recall",
               "recoverable_share", "lost_mentions")
        for key in new:
            data.pop(key, None)
            for row in data["rows"]:
                row.pop(key, None)
        old = Report.from_dict(data)
        assert old.needed_later_recall is None and old.rows[0].lost_mentions == []


class TestSharedHistory:
    def test_replays_of_one_transcript_share_its_history_and_agree_with_a_fresh_one(self) -> None:
        from lab.replayer.recall import History, clear_cache

        session = _long_session()
        cfg = with_value(preset("openhands-masking"), "microcompact.keep_recent", 2)
        clear_cache()
        first = replay(session, cfg, window=200_000)
        history = History.of(session)
        assert History.of(list(session)) is history  # the same message objects, a new list
        again = replay(session, cfg, window=200_000)
        assert History.of(session) is history
        clear_cache()
        assert History.of(session) is not history
        fresh = replay(session, cfg, window=200_000)
        for report in (again, fresh):
            assert [r.lost_mentions for r in report.rows] == [r.lost_mentions for r in first.rows]
            assert report.needed_later_recall == first.needed_later_recall < 1.0

    def test_a_copy_of_a_message_is_another_history(self) -> None:
        from lab.replayer.recall import History

        session = _long_session()
        copied = [m.model_copy() for m in session]
        assert History.of(copied) is not History.of(session)
        assert History.of(copied).occurs == History.of(session).occurs


# --- one scan per message equals the blocks' own mentions ---------------------------------------

_word = st.sampled_from(["foo_bar", "src/app.py", "Error: bad value", "cat a/b.py", "AutoFieldMeta.x", "the", "http://x.io/a", "\n", " ", "数", "12345",
                         "Makefile", "cat Makefile"])
_blob = st.lists(_word, max_size=12).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["text", "thinking", "call", "shell"]), _blob), max_size=6), st.sampled_from(["assistant", "user"]))
def test_a_messages_scan_is_the_union_of_its_blocks(parts: list[tuple[str, str]], role: str) -> None:
    from lab.core.messages import ToolUseBlock
    from lab.replayer.mentions import classify, tokens, tool_mentions

    blocks: list = []
    named: set[str] = set()
    held: set[str] = set()
    for i, (kind, text) in enumerate(parts):
        if kind == "text":
            blocks.append(TextBlock(text=text))
            held |= tokens(text)
            if role == "assistant":
                named |= classify(tokens(text))
        elif kind == "thinking":
            blocks.append(ThinkingBlock(thinking=text))
            held |= tokens(text)
        else:
            call = ToolUseBlock(id=f"t{i}", name="Bash" if kind == "shell" else "Edit",
                                input={"command": text} if kind == "shell" else {"file_path": "x.py", "new_string": text})
            blocks.append(call)
            named |= tool_mentions(call, held)
    held |= named
    message = Message(id="m", role=role, content=blocks)  # type: ignore[arg-type]
    assert scan(message) == (named, held)


# --- a history built in one pass says what scanning each message says -----------------------------

_block = st.tuples(st.sampled_from(["text", "thinking", "call", "shell", "heredoc", "result"]), _blob)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["assistant", "user"]), st.lists(_block, min_size=1, max_size=4), st.booleans()), max_size=8),
       st.sampled_from([1, 2, 3, 1_024]), st.sampled_from([2, 1_024]))
def test_a_history_agrees_with_a_scan_of_every_message(spec: list[tuple[str, list[tuple[str, str]], bool]], batch: int, kept: int) -> None:
    """Whatever the batches its responses are classified in (``mentions.BATCH``) and however often the memos turn
    over (``mentions.KEPT``), a history says what scanning each message on its own says."""
    from lab.core.messages import ToolUseBlock
    from lab.replayer import mentions
    from lab.replayer.recall import History, _text, clear_cache

    raw: list[Message] = [system("You are an agent. Keep src/app.py tidy.")]
    for i, (role, parts, summary) in enumerate(spec):
        blocks: list = []
        for j, (kind, text) in enumerate(parts):
            if kind == "text":
                blocks.append(TextBlock(text=text))
            elif kind == "thinking":
                blocks.append(ThinkingBlock(thinking=text))
            elif kind == "result":
                blocks.append(ToolResultBlock(tool_use_id=f"t{i}_{j}", content=text))
            else:
                command = f"cat > x.py << 'EOF'\n{text}\nEOF" if kind == "heredoc" else text
                blocks.append(ToolUseBlock(id=f"t{i}_{j}", name="Bash" if kind != "call" else "Edit",
                                           input={"command": command} if kind != "call" else {"file_path": "src/app.py", "new_string": text}))
        raw.append(Message(id=f"m{i}", role=role, content=tuple(blocks), tag="summary" if summary and role == "user" else None))  # type: ignore[arg-type]
    raw.append(raw[-1])  # the same message object twice
    clear_cache()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mentions, "BATCH", batch)
        mp.setattr(mentions, "KEPT", kept)
        history = History(raw)
    named = [frozenset(scan(m)[0]) if m.role == "assistant" else frozenset() for m in raw]
    assert [frozenset(r) for r in history.responses] == named and history.wanted == frozenset().union(*named)

    def expected(m: Message) -> frozenset[str]:
        found = history.wanted & scan(m)[1]
        if m.role != "assistant" and m.tag == "summary":
            found |= {w for w in history.wanted if (" " in w or "://" in w) and w in _text(m)}
        return frozenset(found)

    for i, m in enumerate(raw):
        # A raw message holding no wanted mention is known by its id alone (``_empty``), not by the table.
        assert history.hits(m) == history.raw_hits(m) == expected(m), i
        assert history.plain(m) == (id(m) not in history.special), i
        # A stage's copy is looked up afresh, to the same answer.
        copy = m.model_copy()
        assert history.raw_hits(copy) is None and history.hits(copy) == expected(m), i
        assert not history.plain(copy), i
    # Kept compactly past the build: no set of the wanted strings, positions laid out flat.
    assert history._member is None and history.names == tuple(sorted(history.wanted))
    assert len(history._starts) == len(history.names) + 1 and len(history._at) == history._starts[-1]
    assert {x: history.positions(x) for x in history.occurs} == {x: [i for i, m in enumerate(raw) if x in expected(m)] for x in history.wanted if any(x in expected(m) for m in raw)}
    for x in history.wanted:
        for point in range(len(raw) + 1):
            assert history.seen_before(x, point) == any(x in expected(m) for m in raw[:point])
            if history.seen_before(x, point):
                assert history.last_before(x, point) == max(i for i, m in enumerate(raw[:point]) if x in expected(m))


@settings(max_examples=200, deadline=None)
@given(
    strings=st.lists(st.text(alphabet="ab \n/", min_size=1, max_size=8), max_size=40),
    texts=st.lists(st.text(alphabet="ab \n/", max_size=300), min_size=1, max_size=6),
)
def test_anchored_finds_what_a_scan_of_every_string_finds_across_lines_and_repeated_texts(strings: list[str], texts: list[str]) -> None:
    """Line breaks in texts and strings, strings shorter than a piece, and texts that repeat lines of earlier ones
    (the line memo): the index answers as the plain scan does, text after text."""
    from lab.replayer import recall

    index = recall.Anchored(sorted(set(strings)))
    # The same index scanning its lines in Python (as without the C module) answers alike.
    in_python = recall.Anchored(sorted(set(strings)))
    in_python._tables = None
    for text in texts + [t + "\n" + t for t in texts]:
        assert index.within(text) == {w for w in strings if w in text} == in_python.within(text)


def test_anchored_files_its_pieces_only_for_a_line_scanned_in_python() -> None:
    from lab.replayer import recall

    strings = ["ab cd", "x y", "q", "line\nbreak"]
    index = recall.Anchored(strings)
    assert index.within("ab cd and q\nline\nbreak") == {"ab cd", "q", "line\nbreak"}
    if recall._items_table is not None:
        assert index._filed is None  # the C item tables served every line
    index._tables = None
    assert index.within("x y, not ab  cd") == {"x y"} and index._filed is not None


def test_anchored_line_memo_turns_over_and_still_answers_right(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.replayer import recall

    monkeypatch.setattr(recall, "_LINES_KEPT", 3)
    strings = ["ab cd", "x y", "q", "line\nbreak"]
    index = recall.Anchored(strings)
    texts = ["ab cd\nzz", "x y\nq\nline", "line\nbreak ab cd", "w\nv\nu\nt\nx y", "ab cd\nzz"]
    for text in texts * 2:
        assert index.within(text) == {w for w in strings if w in text}


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["put", "setdefault", "get", "in"]), st.integers(0, 40), st.integers(0, 5)), max_size=300))
def test_the_identity_maps_in_c_and_python_answer_as_a_dict_by_id(ops: list[tuple[str, int, int]]) -> None:
    """``IdMap`` (``_scan.c`` when built) and the Python table answer every call as a dict keyed by ``id()`` does,
    through growth (41 keys) and replaced values; equal keys that are different objects are different keys."""
    from lab.replayer import recall

    keys = [[i] for i in range(41)]  # equal lists would be one dict key; here each is its own object
    values = [(f"v{j}",) for j in range(6)]
    tables = [recall.IdentityMap()] + ([recall._IdMapC()] if recall._IdMapC is not None else [])
    for table in tables:
        ref: dict[int, tuple[str]] = {}
        for op, k, v in ops:
            key, value = keys[k], values[v]
            if op == "put":
                ref[id(key)] = value
                assert table.put(key, value) is None
            elif op == "setdefault":
                assert table.setdefault(key, value) is ref.setdefault(id(key), value)
            elif op == "get":
                assert table.get(key) is ref.get(id(key))
            else:
                assert (key in table) == (id(key) in ref)
            assert len(table) == len(ref)
        assert all(table.get(key) is ref.get(id(key)) for key in keys)
        assert table.get([0]) is None


def test_the_c_identity_map_is_the_one_recall_uses_when_built() -> None:
    from lab.replayer import recall

    if recall._IdMapC is None:
        pytest.skip("lab.replayer._scan was built without IdMap (or not at all): the Python table serves")
    assert recall.IdMap is recall._IdMapC


def test_a_shared_history_is_only_ever_the_one_of_the_same_message_objects() -> None:
    """The cache is keyed by a digest of the messages' ids; a value found under it is checked object by object,
    so even a digest two sequences shared (forced here: every key answers with the same history) builds afresh."""
    from lab.core.lru import SharedLRU
    from lab.replayer.recall import History, shared_by_identity

    raw = _raw()
    other = [m.model_copy() for m in raw]
    cache: SharedLRU[History] = SharedLRU(4)
    first = shared_by_identity(cache, raw, lambda: History(raw))
    assert shared_by_identity(cache, list(raw), lambda: History(raw)) is first
    assert shared_by_identity(cache, raw[:-1], lambda: History(raw[:-1])) is not first

    class Collides(SharedLRU[History]):
        def get(self, key, build, *, holds=None):  # type: ignore[no-untyped-def]
            return first

    again = shared_by_identity(Collides(4), other, lambda: History(other))
    assert again is not first and again.raw == tuple(other) and all(a is b for a, b in zip(again.raw, other, strict=True))
