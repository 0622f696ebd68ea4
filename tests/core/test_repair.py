"""``lab.core.repair``: each broken shape of issue 27, built, repaired and replayed into valid requests.

Every shape is a history a real log gave (an aborted Codex turn, a Claude Code export with one
content block per record, a Managed Agents stream whose task is not a message, an OpenHands text of
spaces...). Each is checked broken as it is, by the lab's validator or by the independent reader of
``tests.wire_rules`` (an assistant opening only Bedrock refuses), then replayed under every preset
at several windows, tiny ones included so that summaries run: every request must be valid by both
readers, on the context and on its exported bodies.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab
from lab.core.messages import Boundary, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, is_sent
from lab.core.presets import preset_names
from lab.core.identity import identity_key
from lab.core.repair import _MEMO, NO_TASK, SYNTHETIC, repair
from lab.core.validate import anthropic_problems, openai_problems
from lab.formats.export import to_anthropic, to_openai, to_responses
from lab.replayer.retention import shared_targets
from tests.builders import assistant, call_and_result, system, tool_call, tool_result, user
from tests.wire_rules import anthropic_wire_problems, literal_anthropic, literal_openai, openai_wire_problems, responses_wire_problems

WINDOWS = [3_000, 8_000, 32_000, 64_000, 128_000]


def _work(prefix: str, n: int = 3, size: int = 4_000) -> list[Message]:
    """Answered reads with bulky output, so small windows must compact."""
    out: list[Message] = []
    for i in range(n):
        out += call_and_result("Read", f"{prefix}{i}: def f():\n    return {i}\n" * (size // 30), tool_id=f"{prefix}{i}", file_path=f"src/{prefix}{i}.py")
    return out


def _msg(role: str, *blocks: Any, mid: str) -> Message:
    return Message(role=role, content=tuple(blocks), id=mid)  # type: ignore[arg-type]


def _boundary(mid: str) -> Message:
    return Message(role="system", id=mid, tag="boundary", boundary=Boundary(trigger="auto", strategy="codex_compact"))


def _aborted() -> list[Message]:
    """Codex with turn_aborted records and a compaction: calls with no output, one mid-history after the boundary."""
    parallel = _msg("assistant", TextBlock(text="Running both."), ToolUseBlock(id="lost2", name="Bash"), ToolUseBlock(id="lost3", name="Grep"), mid="par")
    summary = Message(role="user", id="sum", tag="summary", content=(TextBlock(text="Summary: the parser was being fixed."),))
    return [
        system(), user("Fix the failing parser test"), *_work("a"),
        tool_call("Bash", "lost1", command="pytest -x"), user("<turn_aborted>\n<reason>interrupted</reason>\n</turn_aborted>"),
        user("try the other module"), *_work("b"), parallel, user("stop, both hang"),
        _boundary("b1"), summary, *_work("c"),
        tool_call("Bash", "lost4", command="make"), user("<turn_aborted>\n<reason>interrupted</reason>\n</turn_aborted>"),
        *_work("d"), assistant("The tests pass now."), user("one more: run the linter"), tool_call("Bash", "lost5", command="ruff check"),
    ]


def _block_records() -> list[Message]:
    """A sanitised Claude Code export: one content block per record, parallel calls, results one per record."""
    msgs = [user("Rename the config loader")]
    for i in range(4):
        big = f"loader line {i}\n" * 400
        msgs += [
            _msg("assistant", ThinkingBlock(thinking=f"step {i}: look at both files"), mid=f"th{i}"),
            _msg("assistant", TextBlock(text=f"Reading two files (step {i})."), mid=f"tx{i}"),
            _msg("assistant", ToolUseBlock(id=f"x{i}", name="Read", input={"file_path": f"a{i}.py"}), mid=f"ux{i}"),
            _msg("assistant", ToolUseBlock(id=f"y{i}", name="Read", input={"file_path": f"b{i}.py"}), mid=f"uy{i}"),
            _msg("user", ToolResultBlock(tool_use_id=f"x{i}", content=big), mid=f"rx{i}"),
            _msg("user", ToolResultBlock(tool_use_id=f"y{i}", content=big), mid=f"ry{i}"),
        ]
    return [*msgs, _msg("assistant", TextBlock(text="Renamed."), mid="end")]


def _assistant_first_no_task() -> list[Message]:
    """A Managed Agents stream whose user.define_outcome was dropped: the assistant opens, no user text anywhere."""
    return [system(), assistant("I will start by reading the repository."), *_work("m", n=4), assistant("Outcome reached.")]


def _assistant_first_task_later() -> list[Message]:
    return [system(), assistant("Ready."), user("Add a --verbose flag to the CLI"), *_work("t", n=4), assistant("Added.")]


def _whitespace() -> list[Message]:
    """OpenHands V1: an assistant text of spaces alone, and beside a call; a blank user line."""
    call = _msg("assistant", TextBlock(text="   "), ToolUseBlock(id="ws1", name="Bash", input={"command": "ls"}), mid="wsc")
    return [system(), user("List and fix"), _msg("assistant", TextBlock(text="    "), mid="blank"), *_work("w"), call, tool_result("ws1", "a.py\nb.py"),
            user(" \n"), *_work("v"), assistant("Fixed.")]


def _empty_messages() -> list[Message]:
    return [system(), user("Go"), _msg("user", mid="e1"), *_work("e"), _msg("assistant", mid="e2"), _msg("system", mid="e3"), *_work("f"), assistant("Done.")]


def _ends_unanswered() -> list[Message]:
    return [system(), user("Deploy it"), *_work("u", n=4), assistant("Deploying."), tool_call("Bash", "deploy", command="make deploy")]


def _orphans_and_repeats() -> list[Message]:
    """A log cut at its start (a result whose call is not in the file), a repeated result, a result logged late."""
    late_call = tool_call("Read", "late", file_path="z.py")
    return [system(), user("Continue"), tool_result("gone", "old output"), *_work("o"), late_call, user("also check y.py"),
            assistant("Checking."), tool_result("late", "z contents"), tool_result("o0", "again"), *_work("p"), assistant("Done.")]


def _duplicate_ids() -> list[Message]:
    return [system(), user("Read it twice"), *call_and_result("Read", "v1\n" * 500, tool_id="dup"), *call_and_result("Read", "v2\n" * 500, tool_id="dup"),
            *_work("q"), assistant("Same file.")]


SHAPES: dict[str, Callable[[], list[Message]]] = {
    "aborted turns": _aborted,
    "one block per record": _block_records,
    "assistant first, no task": _assistant_first_no_task,
    "assistant first, task later": _assistant_first_task_later,
    "whitespace text": _whitespace,
    "empty messages": _empty_messages,
    "ends on an unanswered call": _ends_unanswered,
    "orphan, repeated and late results": _orphans_and_repeats,
    "duplicate ids": _duplicate_ids,
}


def _lab_problems(msgs: list[Message]) -> list[str]:
    return anthropic_problems(msgs) + openai_problems(msgs)


def _wire_problems(msgs: list[Message]) -> list[str]:
    """Every refusal the independent reader finds: in the literal bodies and in the exported ones, Bedrock's opening rule included."""
    return (
        anthropic_wire_problems(literal_anthropic(msgs), strict=True)
        + openai_wire_problems(literal_openai(msgs), strict=True)
        + anthropic_wire_problems(to_anthropic(msgs), strict=True, shape=True)
        + openai_wire_problems(to_openai(msgs), strict=True, shape=True)
        + responses_wire_problems(to_responses(msgs), strict=True, shape=True)
    )


@pytest.mark.parametrize("name", SHAPES)
def test_each_shape_is_broken_as_it_is_and_valid_repaired(name: str) -> None:
    msgs = SHAPES[name]()
    before = copy.deepcopy(msgs)
    literal = anthropic_wire_problems(literal_anthropic(msgs), strict=True) + openai_wire_problems(literal_openai(msgs), strict=True)
    assert _lab_problems(msgs) or literal, f"{name}: the shape is not broken"
    fixed = repair(msgs)
    assert msgs == before, "repair changed its input"
    assert fixed.changed and fixed.notes
    assert _lab_problems(fixed.messages) == []
    assert _wire_problems(fixed.messages) == []
    # Boundary markers stay, in order; repairing again changes nothing.
    assert [m for m in fixed.messages if not is_sent(m)] == [m for m in msgs if not is_sent(m)]
    again = repair(fixed.messages)
    assert not again.changed and again.messages is fixed.messages


def _calls(msgs: list[Message]) -> list[str]:
    return [b.id for m in msgs for b in m.content if isinstance(b, ToolUseBlock)]


def _results(msgs: list[Message]) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in msgs for b in m.content if isinstance(b, ToolResultBlock)}


def test_aborted_calls_get_a_synthetic_error_result_right_after_them() -> None:
    msgs = _aborted()
    fixed = repair(msgs)
    lost = ["lost1", "lost2", "lost3", "lost4", "lost5"]
    results = _results(fixed.messages)
    assert [(results[i].content, results[i].is_error) for i in lost] == [(SYNTHETIC, True)] * 5
    assert "4 tool call(s) had no result (aborted turns): answered with a synthetic 'aborted' result (lost1, lost2, lost3, lost4)" in fixed.notes
    assert fixed.counts["synthetic_end"] == 1  # lost5: the log stops while it runs
    # Each answer is in the message right after its call; the aborted turn's own user text follows the result there.
    out = fixed.messages
    at = next(i for i, m in enumerate(out) if "lost1" in _calls([m]))
    assert [type(b).__name__ for b in out[at + 1].content] == ["ToolResultBlock", "TextBlock"]
    assert out[-1].role == "user" and _results([out[-1]]).keys() == {"lost5"}
    # Every call kept, the real results untouched.
    assert _calls(out) == _calls(msgs)
    assert all(results[k] == v for k, v in _results(msgs).items())


def test_one_block_records_merge_into_one_reply_and_one_answer() -> None:
    fixed = repair(_block_records())
    roles = [m.role for m in fixed.messages]
    assert roles == ["user"] + ["assistant", "user"] * 4 + ["assistant"]
    reply = fixed.messages[1]
    assert [type(b).__name__ for b in reply.content] == ["ThinkingBlock", "TextBlock", "ToolUseBlock", "ToolUseBlock"]
    assert reply.id == "th0"  # a merged run keeps its first record's id
    assert set(_results([fixed.messages[2]])) == {"x0", "y0"}
    assert fixed.counts["merged"] == 8


def test_an_assistant_opening_gets_the_task_or_a_placeholder() -> None:
    with_task = repair(_assistant_first_task_later()).messages
    assert with_task[1].role == "user" and with_task[1].content == (TextBlock(text="Add a --verbose flag to the CLI"),)
    no_task = repair(_assistant_first_no_task()).messages
    assert no_task[0].role == "system" and no_task[1].content == (TextBlock(text=NO_TASK),)


def test_whitespace_and_empty_messages_are_dropped_and_counted() -> None:
    fixed = repair(_whitespace())
    assert fixed.counts == {"blank_text": 3, "empty_message": 2}
    assert not any(isinstance(b, TextBlock) and not b.text.strip() for m in fixed.messages for b in m.content)
    empty = repair(_empty_messages())
    assert empty.counts == {"empty_message": 3}
    assert all(m.content for m in empty.messages)


def test_orphans_repeats_and_late_results() -> None:
    fixed = repair(_orphans_and_repeats())
    # The orphan's and the repeat's user records joined the user records before them (results must be in one message).
    assert fixed.counts == {"orphan": 1, "repeat": 1, "moved": 1, "merged": 2}
    texts = [b.text for m in fixed.messages for b in m.content if isinstance(b, TextBlock)]
    assert any(t.startswith("[tool result for gone, whose call is not in this transcript]") for t in texts)
    assert any(t.startswith("[another tool result for o0, whose call was already answered]") for t in texts)
    at = next(i for i, m in enumerate(fixed.messages) if "late" in _calls([m]))
    assert _results([fixed.messages[at + 1]])["late"].content == "z contents"


def test_duplicate_ids_get_a_suffix_and_their_results_follow() -> None:
    fixed = repair(_duplicate_ids())
    assert _calls(fixed.messages)[:2] == ["dup", "dup_2"]
    assert _results(fixed.messages)["dup_2"].content.startswith("v2")


def test_a_valid_history_comes_back_as_the_same_list() -> None:
    msgs = [system(), user("go"), *_work("s"), assistant("done")]
    fixed = repair(msgs)
    assert fixed.messages is msgs and not fixed.changed and fixed.notes == []


def test_the_repaired_objects_are_the_same_on_every_call() -> None:
    # Replays of one transcript find their per-message caches and resumable traces by identity.
    msgs = _block_records()
    first, second = repair(msgs), repair(msgs)
    assert first.messages is not second.messages
    assert all(a is b for a, b in zip(first.messages, second.messages, strict=True))


def test_the_memo_holds_a_valid_history_once() -> None:
    # A history that needed nothing: the memo keeps no list of its messages beside the one tuple every
    # identity-keyed memo of the transcript shares (retention's targets hold the same one).
    msgs = [system(), user("go"), *_work("m"), assistant("done")]
    repair(msgs)
    key, held = identity_key(msgs)
    entry = _MEMO._entries[key]
    assert entry[0] is held and entry[1].messages == []
    shared_targets(msgs)
    assert identity_key(list(msgs))[1] is held
    assert repair(msgs).messages is msgs


# --- replays of every shape, under every preset and window -----------------------------------------------------


def _check_report(report: lab.Report, where: str) -> None:
    assert report.requests > 0
    assert report.invalid_requests == 0, f"{where}: {[r.problems for r in report.rows if not r.valid][:2]}"
    assert all(r.valid_anthropic and r.valid_openai for r in report.rows)
    for k in range(len(report.rows)):
        context = report.context_at(k)
        assert _wire_problems(context) == [], f"{where}, request {k}"


@pytest.mark.parametrize("name", SHAPES)
def test_each_shape_replays_with_no_invalid_request(name: str) -> None:
    compacted = 0
    for preset in preset_names():
        for window in WINDOWS:
            report = lab.replay(SHAPES[name](), preset, window=window)
            _check_report(report, f"{name}, {preset} at {window:,}")
            assert any(n.startswith("repaired: ") for n in report.notes)
            compacted += sum(report.compactions_by_strategy.values()) if window <= 8_000 else 0
    assert compacted > 0, "the tiny windows never compacted: the shape is too small to test summaries"


def test_unrepaired_replays_show_what_the_source_breaks() -> None:
    # The same replay without the repair counts the source's own faults: the repair is what removes them.
    report = lab.replay(_aborted(), "minicode", window=128_000, repair=False)
    assert report.invalid_requests > 0
    assert not any(n.startswith("repaired: ") for n in report.notes)


def test_recorded_compactions_kept_still_replay_valid() -> None:
    for preset in preset_names():
        report = lab.replay(_aborted(), preset, window=8_000, recorded_compactions="keep")
        _check_report(report, f"keep, {preset}")


# --- random broken histories ---------------------------------------------------------------------------------

_IDS = ["c1", "c2", "c3", "c4"]
_TEXTS = ["hello", "", "   ", "\n\t", "fix it", "done.  "]
_piece = st.one_of(
    st.tuples(st.just("user"), st.sampled_from(_TEXTS)),
    st.tuples(st.just("assistant"), st.sampled_from(_TEXTS)),
    st.tuples(st.just("call"), st.lists(st.sampled_from(_IDS), min_size=1, max_size=2)),
    st.tuples(st.just("result"), st.lists(st.sampled_from(_IDS), min_size=1, max_size=2)),
    st.tuples(st.just("result_text"), st.sampled_from(_IDS)),
    st.tuples(st.just("thinking"), st.just("")),
    st.tuples(st.just("empty"), st.sampled_from(["user", "assistant"])),
    st.tuples(st.just("system"), st.sampled_from(["mid", ""])),
    st.tuples(st.just("boundary"), st.just("")),
)


def _build(pieces: list[tuple[str, Any]]) -> list[Message]:
    msgs: list[Message] = [system()]
    for k, (kind, arg) in enumerate(pieces):
        mid = f"m{k}"
        if kind in ("user", "assistant"):
            msgs.append(_msg(kind, TextBlock(text=arg), mid=mid))
        elif kind == "call":
            msgs.append(_msg("assistant", *(ToolUseBlock(id=i, name="Bash") for i in arg), mid=mid))
        elif kind == "result":
            msgs.append(_msg("user", *(ToolResultBlock(tool_use_id=i, content="out") for i in arg), mid=mid))
        elif kind == "result_text":
            msgs.append(_msg("user", ToolResultBlock(tool_use_id=arg, content="out"), TextBlock(text="next"), mid=mid))
        elif kind == "thinking":
            msgs.append(_msg("assistant", ThinkingBlock(thinking="hmm"), mid=mid))
        elif kind == "empty":
            msgs.append(_msg(arg, mid=mid))
        elif kind == "system":
            msgs.append(_msg("system", *([TextBlock(text=arg)] if arg else []), mid=mid))
        else:
            msgs.append(_boundary(mid))
    return msgs


def _has_conversation(msgs: list[Message]) -> bool:
    """Whether there is anything to send once blank text and thinking-only turns go: else no repair can make a request."""
    return any(is_sent(m) and m.role != "system" and any(isinstance(b, (ToolUseBlock, ToolResultBlock)) or (isinstance(b, TextBlock) and b.text.strip())
                                                          for b in m.content) for m in msgs)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pieces=st.lists(_piece, min_size=1, max_size=12))
def test_random_broken_histories(pieces: list[tuple[str, Any]]) -> None:
    msgs = _build(pieces)
    before = copy.deepcopy(msgs)
    fixed = repair(msgs)
    assert msgs == before
    out = fixed.messages
    # Valid by the lab's validator and by the independent reader, Bedrock's opening rule included.
    if _has_conversation(msgs):
        assert _lab_problems(out) == [], fixed.notes
        assert _wire_problems(out) == [], fixed.notes
    # Idempotent; boundaries where they were; every call kept (a repeated id renamed, never dropped).
    again = repair(out)
    assert not again.changed and again.messages is out
    assert [m for m in out if not is_sent(m)] == [m for m in msgs if not is_sent(m)]
    assert len(_calls(out)) == len([b for m in msgs if is_sent(m) and m.role == "assistant" for b in m.content if isinstance(b, ToolUseBlock)])
    # Nothing changed silently; a history that needed nothing is the same list.
    assert bool(fixed.notes) == fixed.changed == (out is not msgs)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pieces=st.lists(_piece, min_size=1, max_size=12))
def test_the_lab_validator_agrees_with_the_independent_reader(pieces: list[tuple[str, Any]]) -> None:
    # On the bodies an agent forwarding the log as it is would send (no boundary in them: a marker is the lab's own).
    msgs = [m for m in _build(pieces) if is_sent(m)]
    if not _has_conversation(msgs):
        return
    assert (anthropic_problems(msgs) == []) == (anthropic_wire_problems(literal_anthropic(msgs)) == []), (
        anthropic_problems(msgs), anthropic_wire_problems(literal_anthropic(msgs)))
    assert (openai_problems(msgs) == []) == (openai_wire_problems(literal_openai(msgs)) == []), (
        openai_problems(msgs), openai_wire_problems(literal_openai(msgs)))


def test_the_readers_agree_on_the_issue_shapes() -> None:
    for name, build in SHAPES.items():
        msgs = [m for m in build() if is_sent(m)]
        for lab_says, wire in ((anthropic_problems(msgs), anthropic_wire_problems(literal_anthropic(msgs))),
                               (openai_problems(msgs), openai_wire_problems(literal_openai(msgs)))):
            assert (lab_says == []) == (wire == []), (name, lab_says, wire)
