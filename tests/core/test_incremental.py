"""The incremental auto path: the same answers as a run from scratch, without re-reading the settled prefix.

A Compactor built with ``incremental=False`` processes every request from
scratch; it is the reference. The incremental one must give the very same
outcomes (messages, events, token counts) and session decisions on every
request of generated sessions, under every preset, with usage anchors,
recoveries and the dispatch path, and must do no per-message work on the
prefix it has already settled.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lab.core.stages.active as active_module
import lab.core.stages.dedup as dedup_module
import lab.core.stages.spill as spill_module
from lab.core.compactor import CompactionOutcome, Compactor
from lab.core.config import CompactionConfig
from lab.core.events import CompactorState, StageContext
import lab.core.incremental as incremental_module
from lab.core.incremental import Journal, Memo, Rescan, common_prefix, remember
from lab.core.messages import Message, ToolResultBlock, Transcript, Usage
from lab.core.pipeline import build_stages, decide, run_stage, view_for
from lab.core.stages.contract import View
from lab.core.presets import PRESETS, preset
from lab.core.stages.microcompact import MicrocompactConfig
from lab.core.store import MemoryStore
from lab.core.summarizers.rules import RuleSummarizer
from lab.core.tokens import MiniCodeCounter
from lab.errors import PromptTooLongError, StageError, StoreError
from lab.core.config import with_values
from tests.builders import assistant, call_and_result, system, user

FILE = "".join(f"def f{i}():\n    return {i}\n" for i in range(60))


# -- driving two Compactors through the same session ----------------------------

@dataclass
class Step:
    outcome: CompactionOutcome | None
    recoveries: list[CompactionOutcome | str] = field(default_factory=list)
    decisions: tuple[Any, ...] = ()


def decisions(state: CompactorState) -> tuple[Any, ...]:
    # Every stage's typed state (dataclasses compare by value), and the Compactor's own.
    return (
        copy.deepcopy(state.stages), dict(state.claims), state.last_request_time, state.anchor, state.anchor_messages, state.first_request,
    )


def request_points(messages: list[Message]) -> list[int]:
    points = [i for i in range(1, len(messages)) if messages[i].role == "assistant" and messages[i - 1].role != "assistant"]
    if messages and messages[-1].role != "assistant":
        points.append(len(messages))
    return points


def drive(compactor: Compactor, messages: list[Message], *, dispatch: bool = False, clock: bool = True, usage: bool = True) -> list[Step]:
    """An agent loop over ``messages``: each request is the last output plus what arrived since."""
    steps: list[Step] = []
    context: list[Message] = []
    consumed = 0
    last_usage: Usage | None = None
    window = compactor.config.window
    for n, point in enumerate(request_points(messages)):
        now = 1_000_000.0 + 45.0 * point if clock else None
        request = context + messages[consumed:point]
        step = Step(None)
        if dispatch:
            step.recoveries.append(compactor.dispatch(request, now=now))
            request = step.recoveries[-1].messages  # type: ignore[union-attr]
        outcome = compactor.process_request(request, now=now, usage=last_usage if usage else None)
        step.outcome = outcome
        sent = outcome.messages
        for _ in range(4):
            if compactor.count_tokens(sent) <= window:
                break
            try:
                rescued = compactor.recover(sent, PromptTooLongError("prompt is too long"), now=now)
            except StageError as e:
                step.recoveries.append(str(e))
                break
            step.recoveries.append(rescued)
            sent = rescued.messages
        step.decisions = decisions(compactor.state)
        steps.append(step)
        context, consumed = list(sent), point
        last_usage = Usage(input_tokens=compactor.count_tokens(sent), output_tokens=7 + n)
    return steps


def assert_same_run(config: CompactionConfig, messages: list[Message], **options: Any) -> list[Step]:
    fast = drive(Compactor(config), messages, **options)
    slow = drive(Compactor(config, incremental=False), messages, **options)
    assert len(fast) == len(slow)
    for n, (a, b) in enumerate(zip(fast, slow, strict=True)):
        assert a.outcome == b.outcome, f"request {n}: outcome differs"
        assert a.recoveries == b.recoveries, f"request {n}: dispatch or recovery differs"
        assert a.decisions == b.decisions, f"request {n}: session decisions differ"
    return fast


def generated(seed: int, requests: int, typical: int, huge: float, repeat: float, pause: float) -> Transcript:
    from lab.generator import GeneratorConfig, generate

    return generate(GeneratorConfig(
        seed=seed, requests=requests, typical_output_chars=typical, max_output_chars=max(typical, 40_000),
        huge_output_rate=huge, repeat_read_rate=repeat, long_pause_rate=pause, user_turns=min(3, requests - 1),
    ))


# -- equivalence with a run from scratch ------------------------------------------

class TestSameAsFromScratch:
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        seed=st.integers(0, 2**16),
        requests=st.integers(3, 45),
        typical=st.sampled_from([300, 2_500, 9_000]),
        huge=st.sampled_from([0.0, 0.1]),
        repeat=st.sampled_from([0.0, 0.6]),
        pause=st.sampled_from([0.0, 0.3]),
        name=st.sampled_from(list(PRESETS)),
        window=st.sampled_from([16_000, 48_000, 200_000]),
        dispatch=st.booleans(),
        clock=st.booleans(),
    )
    def test_generated_sessions(self, seed: int, requests: int, typical: int, huge: float, repeat: float, pause: float,
                                name: str, window: int, dispatch: bool, clock: bool) -> None:
        transcript = generated(seed, requests, typical, huge, repeat, pause)
        config = preset(name).model_copy(update={"window": window})
        assert_same_run(config, transcript.messages, dispatch=dispatch, clock=clock)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        seed=st.integers(0, 2**16),
        requests=st.integers(10, 60),
        mode=st.sampled_from(["interval", "idle", "always", "token_trigger"]),
        keep=st.integers(0, 4),
        window=st.sampled_from([24_000, 200_000]),
        dispatch=st.booleans(),
    )
    def test_dedup_spill_and_clearing_together(self, seed: int, requests: int, mode: str, keep: int, window: int, dispatch: bool) -> None:
        # Many re-reads, and a microcompact that keeps clearing what dedup indexed.
        transcript = generated(seed, requests, 1_500, 0.05, 0.8, 0.3)
        config = preset("minicode").model_copy(update={
            "window": window, "microcompact": MicrocompactConfig(mode=mode, keep_recent=keep, interval_seconds=600, trigger_tokens=5_000)})
        assert_same_run(config, transcript.messages, dispatch=dispatch, clock=False)

    @pytest.mark.parametrize(
        "name,expected",
        [("minicode", {"spill", "dedup", "microcompact"}), ("mewcode", {"watermark", "summary"}), ("openhands-masking", {"microcompact"}), ("claude-code", {"microcompact"})],
    )
    def test_a_long_session_with_clearings_and_rereads(self, name: str, expected: set[str]) -> None:
        transcript = generated(7, 120, 2_500, 0.05, 0.6, 0.1)
        config = preset(name).model_copy(update={"window": 64_000})
        # The session's own timestamps, with their long pauses, drive the time-based clearing.
        steps = assert_same_run(config, transcript.messages, clock=False)
        stages = {e.stage for s in steps if s.outcome for e in s.outcome.events if e.success}
        assert expected <= stages  # the session did exercise what it is meant to

    def test_custom_config_exercising_every_cheap_path(self) -> None:
        config = CompactionConfig(
            window=40_000,
            spill={"threshold": 3000, "message_budget_enabled": True, "message_budget": 5000, "unit": "bytes"},
            microcompact=MicrocompactConfig(mode="token_trigger", trigger_tokens=8_000, keep_recent=2, clear_tool_inputs=True, exclude_tools=["Grep"]),
        )
        transcript = generated(3, 60, 2_500, 0.05, 0.6, 0.0)
        steps = assert_same_run(config, transcript.messages, dispatch=True)
        assert any(e.stage == "microcompact" and e.success for s in steps if s.outcome for e in s.outcome.events)

    def test_a_cleared_source_is_never_a_dedup_source_again(self) -> None:
        # Read A, clear it with a time-based microcompact, then read the same content again: not a dedup.
        msgs = [system(), user("work", at=0)]
        msgs += call_and_result("Read", FILE, tool_id="r1", file_path="a.py", at=10)
        for i in range(6):
            msgs += call_and_result("Bash", f"out {i}\n" * 200, tool_id=f"b{i}", command=f"echo {i}", at=20 + i)
        msgs += call_and_result("Bash", "x" * 300, tool_id="late", command="echo late", at=10_000)
        msgs += call_and_result("Read", FILE, tool_id="r2", file_path="a.py", at=10_010)
        msgs.append(assistant("done", at=10_020))
        steps = assert_same_run(preset("minicode").model_copy(update={"window": 200_000}), msgs, clock=False)
        final = steps[-1].outcome
        assert final is not None
        blocks = {b.tool_use_id: b for m in final.messages for b in m.content if isinstance(b, ToolResultBlock)}
        assert blocks["r1"].compacted == "cleared" and blocks["r2"].compacted is None

    def test_a_failed_spill_in_the_settled_prefix_is_retried(self) -> None:
        class FlakyStore(MemoryStore):
            def __init__(self) -> None:
                super().__init__()
                self.failures = 2

            def write(self, session_id: str, tool_use_id: str, content: str, header: dict) -> str:
                if self.failures:
                    self.failures -= 1
                    raise StoreError("disk full")
                return super().write(session_id, tool_use_id, content, header)

        msgs = [system(), user("work")]
        msgs += call_and_result("Bash", "log\n" * 3000, tool_id="big", command="make")
        for i in range(4):
            msgs += call_and_result("Bash", "ok", tool_id=f"s{i}", command="true")
        runs = []
        for incremental in (True, False):
            runs.append(drive(Compactor(CompactionConfig(), store=FlakyStore(), incremental=incremental), msgs, usage=False))
        assert [s.outcome for s in runs[0]] == [s.outcome for s in runs[1]]
        assert [s.decisions for s in runs[0]] == [s.decisions for s in runs[1]]
        spill_events = [e for s in runs[0] if s.outcome for e in s.outcome.events if e.stage == "spill"]
        assert [e.success for e in spill_events] == [False, False, True]

    def test_a_caller_that_rewrites_old_messages_gets_them_processed(self) -> None:
        config = CompactionConfig()
        msgs = [system(), user("work")]
        for i in range(5):
            msgs += call_and_result("Read", FILE + str(i), tool_id=f"r{i}", file_path=f"f{i}.py")
        fast, slow = Compactor(config), Compactor(config, incremental=False)
        a, b = fast.process_request(msgs), slow.process_request(msgs)
        assert a == b
        # Replace a message in the middle and drop the last: the settled prefix ends before it.
        edited = list(a.messages)
        edited[4] = edited[4].model_copy(update={"id": "edited"})
        edited = edited[:-1] + call_and_result("Read", FILE + "0", tool_id="again", file_path="f0.py")
        assert fast.process_request(edited) == slow.process_request(edited)
        assert decisions(fast.state) == decisions(slow.state)

    def test_tuples_and_a_copied_state_give_the_same_answers(self) -> None:
        transcript = generated(5, 20, 2_500, 0.1, 0.5, 0.0)
        msgs = transcript.messages
        fast = Compactor(preset("minicode"))
        first = fast.process_request(tuple(msgs[:20]))
        snapshot = copy.deepcopy(fast.state)
        assert snapshot.tracks["auto"].out == []  # a copy keeps the decisions, not the speed-up
        branch = Compactor(preset("minicode"), state=snapshot)
        request = first.messages + msgs[20:40]
        assert fast.process_request(request) == branch.process_request(request)


# -- no work on the settled prefix -------------------------------------------------

class SpyList(list):
    """A list that records which positions were read, and whether it was iterated whole."""

    def __init__(self, items: list[Message]) -> None:
        super().__init__(items)
        self.read: set[int] = set()
        self.iterated = False

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            self.read.update(range(*key.indices(len(self))))
        else:
            self.read.add(key % len(self))
        return super().__getitem__(key)

    def __iter__(self) -> Any:
        self.iterated = True
        return super().__iter__()


def _prefix_totals(messages: list[Message], counter: MiniCodeCounter) -> list[int]:
    totals = [0]
    for m in messages:
        totals.append(totals[-1] + counter.count_message(m))
    return totals


def quiet_history(reads: int = 12) -> list[Message]:
    """Reads of different files, none big enough to spill: no cheap stage changes anything."""
    msgs = [system(), user("work")]
    for i in range(reads):
        msgs += call_and_result("Read", f"{FILE}# {i}\n", tool_id=f"q{i}", file_path=f"src/m{i}.py")
        msgs += call_and_result("Bash", f"ran {i}", tool_id=f"b{i}", command=f"pytest -k t{i}")
    return msgs


class TestSettledPrefixIsNotRead:
    @pytest.mark.parametrize("name", ["active", "spill", "dedup", "microcompact", "watermark"])
    def test_a_stage_reads_only_what_follows_the_settled_prefix(self, name: str) -> None:
        config = CompactionConfig(microcompact=MicrocompactConfig(mode="always", keep_recent=1000))
        counter = MiniCodeCounter()
        (stage,) = build_stages(config, [name])
        memos: dict[str, Any] = {}
        state = CompactorState()
        base = dict(config=config, counter=counter, store=MemoryStore(), summarizer=RuleSummarizer(), state=state, now=5.0, memos=memos)
        history = quiet_history()
        if name == "watermark":
            first = history
        else:
            result = run_stage(stage, history, StageContext(**base))  # type: ignore[arg-type]
            assert result.unchanged == len(history) and result.events == ()
            first = result.messages
        new = [*call_and_result("Read", FILE, tool_id="n1", file_path="src/new.py"), user("more")]
        spy = SpyList(first + new)
        ctx = StageContext(**base, settled=len(first), totals=_prefix_totals(first, counter))  # type: ignore[arg-type]
        if name == "watermark":
            gate = decide(stage, view_for(spy, ctx), ctx).gate
            out = first + new
            assert gate.estimate == counter.count_messages(first + new)
        else:
            out = run_stage(stage, spy, ctx).messages
        assert not spy.iterated, f"{name} iterated the whole history"
        assert min(spy.read, default=len(first)) >= len(first), f"{name} read settled messages {sorted(spy.read)[:5]}"
        assert list.__eq__(out, first + new)

    def test_the_compactor_does_no_per_message_work_on_the_settled_prefix(self, monkeypatch: pytest.MonkeyPatch) -> None:
        config = with_values(preset("minicode"), {"window": 200_000, "microcompact.mode": "always", "microcompact.keep_recent": 1000})
        compactor = Compactor(config)
        history = quiet_history(30)
        out = compactor.process_request(history).messages
        out = compactor.process_request(out).messages

        seen: dict[str, int] = {"boundary": 0, "size": 0, "hash": 0}

        def spy(key: str, real: Any) -> Any:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                seen[key] += 1
                return real(*args, **kwargs)
            return wrapper

        # Only public functions are watched: a message's boundary test, a result's size, a read's hash.
        monkeypatch.setattr(active_module, "is_boundary", spy("boundary", active_module.is_boundary))
        monkeypatch.setattr(spill_module, "result_size", spy("size", spill_module.result_size))
        monkeypatch.setattr(dedup_module, "content_hash", spy("hash", dedup_module.content_hash))
        scanned: list[tuple[str, int, int]] = []
        real_passes = incremental_module.run_passes

        def run_passes(memo: Memo, messages: list[Message], passes: Any) -> None:
            scanned.append((getattr(memo.owner, "name", "?"), memo.start, len(messages)))
            real_passes(memo, messages, passes)

        monkeypatch.setattr(incremental_module, "run_passes", run_passes)
        new = [*call_and_result("Read", FILE, tool_id="n1", file_path="src/new.py"), assistant("thinking"), user("next")]
        result = compactor.process_request(out + new)
        assert result.events == ()
        # One look at each new message, one new result and one read: nothing for the 120 settled messages.
        assert seen == {"boundary": 4, "size": 1, "hash": 1}
        # Every stage's memo notes the four new messages only.
        assert scanned == [(name, len(out), len(out) + 4) for name in ("active", "spill", "dedup", "microcompact")]

    def test_unchanged_messages_are_never_recounted_over_a_session(self) -> None:
        class CountingCounter(MiniCodeCounter):
            def __init__(self) -> None:
                super().__init__()
                self.counted: list[Message] = []

            def count_message(self, message: Message) -> int:
                self.counted.append(message)
                return super().count_message(message)

        counter = CountingCounter()
        compactor = Compactor(CompactionConfig(), counter=counter)
        out = compactor.process_request(quiet_history(40)).messages
        out = compactor.process_request(out).messages
        before = len(counter.counted)
        for i in range(5):
            out = compactor.process_request(out + [assistant(f"step {i}"), user(f"go on {i}")]).messages
        assert len(counter.counted) - before == 10
        assert len({id(m) for m in counter.counted}) == len(counter.counted)


# -- the building blocks -------------------------------------------------------------

class TestBuildingBlocks:
    def test_journal_rolls_back_sets_and_deletes_by_position(self) -> None:
        journal, d = Journal(), {"a": 1}
        journal.set(0, d, "b", 2)
        journal.set(3, d, "a", 10)
        journal.delete(5, d, "b")
        journal.set(5, d, "c", 3)
        journal.delete(6, d, "missing")  # nothing to undo
        assert d == {"a": 10, "c": 3} and len(journal) == 4
        journal.rollback(5)
        assert d == {"a": 10, "b": 2}
        journal.rollback(1)
        assert d == {"a": 1, "b": 2}
        journal.rollback(0)
        assert d == {"a": 1} and len(journal) == 0

    def test_memo_rolls_back_only_backwards(self) -> None:
        memo = Memo(None)
        table = memo.table("t")
        for pos in (1, 4, 7):
            memo.pos = pos
            memo.marked("at").append(pos)
            memo.marked("pairs").append((pos, 0))
            memo.set(table, pos, True)
        memo.upto = 9
        memo.rollback(20)
        assert memo.upto == 9 and memo.marked("at") == [1, 4, 7] and set(table) == {1, 4, 7}
        memo.rollback(4)
        assert memo.upto == 4 and memo.marked("at") == [1] and memo.marked("pairs") == [(1, 0)] and set(table) == {1}

    def test_the_driver_notes_only_what_follows_the_settled_prefix_and_rolls_back_the_rest(self) -> None:
        class Counting:
            name = "counting"

            def __init__(self) -> None:
                self.noted: list[int] = []

            def note(self, memo: Memo, i: int, m: Message) -> None:
                self.noted.append(i)
                if m.role == "user":
                    memo.marked("users").append(i)

        stage, msgs = Counting(), quiet_history(3)
        memos: dict[str, Memo] = {}
        memo = remember(memos, stage.name, stage, msgs[:4], 0, [stage.note])
        assert (memo.start, memo.upto, stage.noted) == (0, 4, [0, 1, 2, 3])
        stage.noted.clear()
        memo = remember(memos, stage.name, stage, msgs, 2, [stage.note])
        # Positions 2 and 3 were noted again after the rollback; 0 and 1 never.
        assert memo.start == 2 and stage.noted == list(range(2, len(msgs)))
        assert memo.marked("users") == [i for i, m in enumerate(msgs) if m.role == "user"]
        # Without memos (a stage on its own), everything is noted and nothing is kept.
        stage.noted.clear()
        assert remember(None, stage.name, stage, msgs, 4, [stage.note]).start == 0 and stage.noted == list(range(len(msgs)))
        # A view without the Compactor's hook does the same.
        stage.noted.clear()
        assert View(msgs, MiniCodeCounter(), settled=4).note(stage.note).start == 0 and stage.noted == list(range(len(msgs)))

    def test_a_pass_that_asks_for_a_rescan_is_run_again_from_the_start_in_a_fresh_memo(self) -> None:
        class Picky:
            name = "picky"

            def note(self, memo: Memo, i: int, m: Message) -> None:
                if memo.start and i == memo.start:
                    raise Rescan(i)
                memo.marked("all").append(i)

        stage, msgs = Picky(), quiet_history(2)
        memos: dict[str, Memo] = {}
        first = remember(memos, stage.name, stage, msgs[:3], 0, [stage.note])
        again = remember(memos, stage.name, stage, msgs, 3, [stage.note])
        assert again is not first and again.start == 0 and again.marked("all") == list(range(len(msgs)))
        assert memos["picky"] is again

    def test_common_prefix_counts_identical_leading_items(self) -> None:
        a, b, c = system(), user("x"), user("y")
        assert common_prefix([a, b], [a, b]) == 2
        assert common_prefix([a, b], [a, c]) == 1
        assert common_prefix([a, b, c], [a, b]) == 2
        assert common_prefix([], [a]) == 0

    def test_view_tokens_reuse_the_prefix_totals(self) -> None:
        counter = MiniCodeCounter()
        msgs = quiet_history(3)
        totals = _prefix_totals(msgs[:5], counter)
        view = View(msgs, counter, settled=5, totals=totals)
        assert view.tokens() == counter.count_messages(msgs)
        assert view.tokens(start=2) == counter.count_messages(msgs[2:])
        assert view.tokens(start=7) == counter.count_messages(msgs[7:])
        # The totals are never trusted beyond the settled prefix.
        assert View(msgs, counter, settled=9, totals=totals).tokens() == counter.count_messages(msgs)


class TestFailures:
    def test_a_stage_that_raises_leaves_no_half_updated_memory(self, monkeypatch: pytest.MonkeyPatch) -> None:
        config = CompactionConfig()
        msgs = quiet_history(6)
        fast, slow = Compactor(config), Compactor(config, incremental=False)
        out = fast.process_request(msgs).messages
        assert out == slow.process_request(msgs).messages
        real = dedup_module.DedupStage.decide

        def broken(self: Any, view: Any, config: Any, state: Any) -> Any:
            real(self, view, config, state)  # the memo moves on...
            raise RuntimeError("a bug")  # ...and the run dies

        monkeypatch.setattr(dedup_module.DedupStage, "decide", broken)
        request = out + call_and_result("Read", FILE, tool_id="x1", file_path="src/x.py")
        with pytest.raises(RuntimeError):
            fast.process_request(request)
        assert "auto" not in fast.state.tracks
        monkeypatch.setattr(dedup_module.DedupStage, "decide", real)
        request = request + call_and_result("Read", FILE, tool_id="x2", file_path="src/x.py")
        assert fast.process_request(request) == slow.process_request(request)
