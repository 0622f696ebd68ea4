"""One chat message per JSONL line (OpenAI Chat or Anthropic Messages shape): import, detection, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.cli.main import main
from lab.core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, tool_pairs
from lab.errors import TranscriptError
from lab.formats.claude import anthropic
from lab.formats import detect, load
from lab.formats.openai import openai_chat
from lab.formats.detect import scores
from lab.formats.export import to_anthropic, to_openai
from lab.formats.jsonio import read_file_head
from lab.formats.message_lines import line_scores, message_of
from tests.builders import assistant, call_and_result, session, system, user
from tests.conftest import ROOT

STAMP = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
EPOCH = 1735787045  # STAMP in epoch seconds


def _call(cid: str, name: str = "bash", args: str = '{"command": "ls"}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


OPENAI_LINES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are an agent"},
    {"role": "user", "content": "fix the bug"},
    {"role": "assistant", "content": None, "tool_calls": [_call("c1", "read_file", '{"path": "a.py"}'), _call("c2")]},
    {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
    {"role": "tool", "tool_call_id": "c2", "content": "a.py"},
    {"role": "assistant", "content": "done"},
]

ANTHROPIC_LINES: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "look first", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "no such file", "is_error": True}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "a.py"}]}]},
    {"role": "assistant", "content": "found it"},
]

SHAPES = {"openai_chat": OPENAI_LINES, "anthropic": ANTHROPIC_LINES}


def _write(path: Path, lines: list[Any], *, tail: str = "") -> Path:
    """One line per record (strings written as they are), then ``tail`` with no newline after it."""
    text = "".join((rec if isinstance(rec, str) else json.dumps(rec)) + "\n" for rec in lines)
    path.write_text(text + tail, encoding="utf-8")
    return path


def _outline(messages: list[Message]) -> list[tuple[str, tuple[Any, ...]]]:
    """Roles and block contents, ids of messages left out: what both importers must agree on."""

    def block(b: Any) -> Any:
        if isinstance(b, TextBlock):
            return ("text", b.text)
        if isinstance(b, ToolUseBlock):
            return ("use", b.id, b.name, json.dumps(b.input, sort_keys=True))
        if isinstance(b, ToolResultBlock):
            return ("result", b.tool_use_id, b.content, b.is_error)
        if isinstance(b, ThinkingBlock):
            return ("thinking", b.thinking)
        return (type(b).__name__,)

    return [(m.role, tuple(block(b) for b in m.content)) for m in messages]


def _complete_pairs(t: Transcript) -> set[str]:
    return {tid for tid, (use, result) in tool_pairs(t.messages).items() if use is not None and result is not None}


# --- the two shapes --------------------------------------------------------------------------------


class TestOpenAIShape:
    def test_detected_with_roles_pairs_and_ids(self, tmp_path: Path) -> None:
        p = _write(tmp_path / "chat.jsonl", OPENAI_LINES)
        assert detect(p) == "openai_chat"
        t = load(p)
        assert t.meta.source_format == "openai_chat"
        assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
        assert [m.id for m in t.messages] == ["m0", "m1", "m2", "m3", "m5"]
        # both tool messages answer one assistant turn: one user message holds both results
        assert [b.tool_use_id for b in t.messages[3].content if isinstance(b, ToolResultBlock)] == ["c1", "c2"]
        assert _complete_pairs(t) == {"c1", "c2"}
        assert t.messages[2].content[0] == ToolUseBlock(id="c1", name="read_file", input={"path": "a.py"})
        assert t.notes.records_read == 6 and not t.notes.skipped and not t.notes.warnings

    def test_same_messages_as_the_request_body(self, tmp_path: Path) -> None:
        lines = load(_write(tmp_path / "chat.jsonl", OPENAI_LINES))
        body = openai_chat.from_document({"messages": OPENAI_LINES})
        assert lines.messages == body.messages

    def test_builder_session_exported_as_lines_comes_back(self, tmp_path: Path) -> None:
        original = session(n_reads=3, size=200)
        p = _write(tmp_path / "s.jsonl", to_openai(original)["messages"])
        assert detect(p) == "openai_chat"
        assert _outline(load(p).messages) == _outline(original)


class TestAnthropicShape:
    def test_detected_with_roles_pairs_and_ids(self, tmp_path: Path) -> None:
        p = _write(tmp_path / "anth.jsonl", ANTHROPIC_LINES)
        assert detect(p) == "anthropic"
        t = load(p)
        assert t.meta.source_format == "anthropic"
        assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
        assert [m.id for m in t.messages] == [f"m{i}" for i in range(6)]
        assert _complete_pairs(t) == {"t1", "t2"}
        assert isinstance(t.messages[1].content[0], ThinkingBlock)
        first, second = t.messages[2].content[0], t.messages[4].content[0]
        assert isinstance(first, ToolResultBlock) and first.is_error
        assert isinstance(second, ToolResultBlock) and second.content == "a.py" and not second.is_error

    def test_same_messages_as_the_request_body(self, tmp_path: Path) -> None:
        lines = load(_write(tmp_path / "anth.jsonl", ANTHROPIC_LINES))
        body = anthropic.request_to_transcript({"messages": ANTHROPIC_LINES})
        assert lines.messages == body.messages

    def test_builder_session_exported_as_lines_comes_back(self, tmp_path: Path) -> None:
        original = session(n_reads=3, size=200)
        body = to_anthropic(original)
        p = _write(tmp_path / "s.jsonl", [{"role": "system", "content": body["system"]}, *body["messages"]])
        assert detect(p) == "anthropic"
        assert _outline(load(p).messages) == _outline(original)

    def test_message_ids_from_the_lines_are_kept_and_repeats_renamed(self, tmp_path: Path) -> None:
        lines = [
            {"id": "msg_a", "role": "user", "content": [{"type": "text", "text": "one"}]},
            {"id": "msg_a", "type": "message", "role": "assistant", "model": "claude-x", "content": [{"type": "tool_use", "id": "t", "name": "X", "input": {}}]},
        ]
        t = load(_write(tmp_path / "a.jsonl", lines))
        assert [m.id for m in t.messages] == ["msg_a", "msg_a#1"]
        assert t.meta.model == "claude-x"


def test_plain_text_lines_go_to_openai_chat_and_read_the_same_either_way(tmp_path: Path) -> None:
    lines = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye"}]
    p = _write(tmp_path / "plain.jsonl", lines)
    assert detect(p) == "openai_chat"
    assert _outline(openai_chat.read_lines(p).messages) == _outline(anthropic.read_lines(p).messages)


def test_a_log_with_one_line_so_far(tmp_path: Path) -> None:
    chat = load(_write(tmp_path / "one.jsonl", [{"role": "user", "content": "hi", "timestamp": EPOCH}]))
    assert _outline(chat.messages) == [("user", (("text", "hi"),))] and chat.messages[0].timestamp == STAMP
    anth = load(_write(tmp_path / "two.jsonl", [ANTHROPIC_LINES[1]]))
    assert anth.meta.source_format == "anthropic"
    assert [type(b) for b in anth.messages[0].content] == [ThinkingBlock, ToolUseBlock]


# --- wrapped lines ------------------------------------------------------------------------------------


def _wrap_message(m: dict[str, Any]) -> dict[str, Any]:
    return {"message": m, "timestamp": "2025-01-02T03:04:05Z", "session": "s1"}


def _wrap_typed(m: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", **m, "created_at": EPOCH}


def _wrap_role_typed(m: dict[str, Any]) -> dict[str, Any]:
    # A logger that tags each entry with its role, the way Claude Code does (but without its uuids).
    return {"type": m["role"], "message": m, "created_at": EPOCH * 1000}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("wrap", [_wrap_message, _wrap_typed, _wrap_role_typed], ids=["message-key", "type-message", "type-role"])
def test_wrapped_lines_import_like_bare_ones_with_their_timestamps(tmp_path: Path, shape: str, wrap: Any) -> None:
    bare = load(_write(tmp_path / "bare.jsonl", SHAPES[shape]))
    p = _write(tmp_path / "wrapped.jsonl", [wrap(m) for m in SHAPES[shape]])
    assert detect(p) == shape
    t = load(p)
    assert _outline(t.messages) == _outline(bare.messages)
    assert [m.id for m in t.messages] == [m.id for m in bare.messages]
    assert all(m.timestamp == STAMP for m in t.messages)
    assert all(m.timestamp is None for m in bare.messages)


def test_a_bad_wrapped_message_names_its_line_and_path(tmp_path: Path) -> None:
    lines = [_wrap_message(OPENAI_LINES[1]), _wrap_message({"role": "assistant", "tool_calls": "not a list"})]
    with pytest.raises(TranscriptError) as err:
        load(_write(tmp_path / "w.jsonl", lines), format="openai_chat")
    assert err.value.where == "line 2, $.message.tool_calls"


# --- lines that are not messages ---------------------------------------------------------------------


def test_other_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    noise = [
        {"type": "session", "id": "s1", "model": "gpt-4o"},
        {"type": "usage", "prompt_tokens": 10, "completion_tokens": 2},
        {"event": "tool_start", "name": "bash"},
        {"level": "info", "message": "a log line, not a chat message"},
        [1, 2, 3],
        {"role": "admin", "content": "not a chat role"},
    ]
    lines: list[Any] = [noise[0], *OPENAI_LINES[:3], noise[1], "", noise[2], *OPENAI_LINES[3:], noise[3], noise[4], noise[5]]
    p = _write(tmp_path / "mixed.jsonl", lines)
    assert detect(p) == "openai_chat"
    t = load(p)
    assert t.messages == openai_chat.from_document({"messages": OPENAI_LINES}).messages
    assert t.notes.skipped == {
        "record:session": 1,
        "record:usage": 1,
        "record:tool_start": 1,
        "record:unknown": 2,
        "record:non_object": 1,
    }
    assert t.notes.records_read == len(OPENAI_LINES) + len(noise)  # the blank line is not a record


def test_mostly_other_records_is_only_a_weak_claim(tmp_path: Path) -> None:
    p = _write(tmp_path / "events.jsonl", [{"event": f"e{i}"} for i in range(5)] + [{"role": "user", "content": "hi"}])
    assert scores(read_file_head(p))["openai_chat"] == 20
    assert [m.role for m in load(p).messages] == ["user"]


def test_a_file_without_messages_is_an_error(tmp_path: Path) -> None:
    p = _write(tmp_path / "events.jsonl", [{"event": "a"}, {"event": "b"}])
    for fmt in ("openai_chat", "anthropic"):
        reader = openai_chat.read_lines if fmt == "openai_chat" else anthropic.read_lines
        with pytest.raises(TranscriptError, match="no chat messages"):
            reader(p)
    with pytest.raises(TranscriptError, match="unknown transcript format"):
        load(p)


# --- broken lines ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_last_line_cut_off_mid_write_is_a_warning(tmp_path: Path, shape: str) -> None:
    lines = SHAPES[shape]
    p = _write(tmp_path / "running.jsonl", lines, tail='{"role": "assistant", "content": "half a rec')
    assert detect(p) == shape
    t = load(p)
    assert t.messages == load(_write(tmp_path / "whole.jsonl", lines)).messages
    assert len(t.notes.warnings) == 1
    assert t.notes.warnings[0].startswith(f"line {len(lines) + 1}:") and "cut off" in t.notes.warnings[0]
    assert t.notes.records_read == len(lines)


def test_a_cut_off_line_with_nothing_before_it_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "half.jsonl"
    p.write_text('{"role": "user", "content": "hal', encoding="utf-8")
    with pytest.raises(TranscriptError, match="truncated last line"):
        openai_chat.read_lines(p)
    # Nothing before the cut: a metadata record alone is not a transcript either.
    q = _write(tmp_path / "meta.jsonl", [{"type": "session"}], tail='{"role": "user", "content": "hal')
    with pytest.raises(TranscriptError, match="no chat messages"):
        openai_chat.read_lines(q)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("bad", ['{"role": "user", "content": "cut', "not json at all"], ids=["cut-mid-record", "garbage"])
def test_a_bad_line_in_the_middle_names_its_line(tmp_path: Path, shape: str, bad: str) -> None:
    lines: list[Any] = [*SHAPES[shape][:2], bad, *SHAPES[shape][2:]]
    p = _write(tmp_path / "bad.jsonl", lines)
    readers = [lambda: load(p), lambda: load(p, format=shape)]
    for read in readers:
        with pytest.raises(TranscriptError) as err:
            read()
        assert err.value.file == str(p)
        assert err.value.where == "line 3"
        assert "truncated" not in str(err.value)


# --- detection of the formats that own other JSONL ----------------------------------------------------


def test_claude_code_entries_stay_claude_code(tmp_path: Path) -> None:
    entries = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": ANTHROPIC_LINES[0]},
        {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": "s", "message": ANTHROPIC_LINES[1]},
    ]
    assert detect(_write(tmp_path / "cc.jsonl", entries)) == "claude_code"


def test_anthropic_request_logs_stay_request_logs(tmp_path: Path) -> None:
    request = {"model": "claude", "messages": [{"role": "user", "content": "hi"}]}
    response = {"id": "msg_r", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "yo"}]}
    for name, log in {"bodies": [request, response], "pairs": [{"request": request, "response": response}, {"event": "ping"}]}.items():
        p = _write(tmp_path / f"{name}.jsonl", log)
        assert line_scores(read_file_head(p).records) == {"openai_chat": 0, "anthropic": 0}
        assert detect(p) == "anthropic"
        t = load(p)
        assert [m.id for m in t.messages] == ["m0", "msg_r"], name


def test_responses_items_stay_responses(tmp_path: Path) -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]
    assert detect(_write(tmp_path / "items.jsonl", items)) == "openai_responses"
    # Plain-text messages tagged type: message are valid Responses items too; they stay there,
    # and read as the same conversation.
    plain = _write(tmp_path / "plain.jsonl", [_wrap_typed({"role": "user", "content": "hi"}), _wrap_typed({"role": "assistant", "content": "yo"})])
    assert detect(plain) == "openai_responses"
    assert _outline(load(plain).messages) == _outline(openai_chat.read_lines(plain).messages)


def test_chat_traits_win_over_responses_for_type_message_lines(tmp_path: Path) -> None:
    p = _write(tmp_path / "typed.jsonl", [_wrap_typed(m) for m in OPENAI_LINES])
    ranked = scores(read_file_head(p))
    assert ranked["openai_chat"] > ranked["openai_responses"] > 0


def test_codex_and_openhands_records_are_not_messages(tmp_path: Path) -> None:
    codex = [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}},
        {"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}},
    ]
    assert detect(_write(tmp_path / "codex.jsonl", codex)) == "openai_responses"
    event = {"id": 1, "source": "user", "action": "message", "message": "hi", "args": {"content": "hi"}}
    openhands = [{"instance_id": "i", "history": [event]}, {"instance_id": "j", "history": [event]}]
    p = _write(tmp_path / "output.jsonl", openhands)
    assert line_scores(read_file_head(p).records) == {"openai_chat": 0, "anthropic": 0}
    assert detect(p) == "openhands"


def test_lines_mixing_both_apis_are_claimed_by_neither(tmp_path: Path) -> None:
    p = _write(tmp_path / "mixed.jsonl", [OPENAI_LINES[2], ANTHROPIC_LINES[1]])
    assert line_scores(read_file_head(p).records) == {"openai_chat": 0, "anthropic": 0}


def test_message_of_recognises_only_chat_roles() -> None:
    assert message_of({"role": "user", "content": "x"}) == ("$", {"role": "user", "content": "x"}, None)
    assert message_of({"message": {"role": "tool", "content": "x"}, "created_at": 5}) == ("$.message", {"role": "tool", "content": "x"}, 5)
    assert message_of({"type": "function_call", "role": "assistant"}) is None
    assert message_of({"role": "exit", "content": "x"}) is None
    assert message_of({"message": "text"}) is None
    assert message_of([{"role": "user"}]) is None


# --- invariant: lines read like the body, whatever the wrapping and noise ----------------------------

# Without timestamps, so the messages must come out exactly as from the body.
_WRAPS = [lambda m: m, lambda m: {"message": m, "session": "s"}, lambda m: {"type": "message", **m}]
# No NUL: the JSON readers replace it (jsonio.clean_strings), which the body, built in memory, never meets.
_turn = st.one_of(st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=8).map(lambda s: ("user", s)), st.integers(min_value=0, max_value=3).map(lambda n: ("calls", n)))


@settings(max_examples=30, deadline=None)
@given(turns=st.lists(_turn, min_size=1, max_size=8), wraps=st.lists(st.integers(0, 2), min_size=40, max_size=40), noise=st.lists(st.booleans(), min_size=40, max_size=40))
def test_lines_import_like_the_body(tmp_path_factory: pytest.TempPathFactory, turns: list[tuple[str, Any]], wraps: list[int], noise: list[bool]) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for i, (kind, value) in enumerate(turns):
        if kind == "user":
            messages.append({"role": "user", "content": value})
            continue
        calls = [_call(f"c{i}_{k}") for k in range(value)]
        messages.append({"role": "assistant", "content": "thinking aloud", "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": f"out {c['id']}"} for c in calls]
    lines: list[Any] = []
    for j, m in enumerate(messages):
        if noise[j % 40]:
            lines.append({"type": "usage", "n": j})
        lines.append(_WRAPS[wraps[j % 40]](m))
    p = _write(tmp_path_factory.mktemp("lines") / "chat.jsonl", lines)
    t = openai_chat.read_lines(p)
    assert t.messages == openai_chat.from_messages(messages).messages
    assert t.notes.skipped.get("record:usage", 0) == len(lines) - len(messages)


# --- the CLI ----------------------------------------------------------------------------------------------


def test_cli_imports_both_shapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for shape, lines in SHAPES.items():
        src = _write(tmp_path / f"{shape}.jsonl", [{"type": "session"}, *lines], tail='{"role": "user", "con')
        out = tmp_path / f"{shape}.json"
        code = main(["import", str(src), "--out", str(out), "--counter", "chars/3.5"])
        stdout, stderr = capsys.readouterr()
        assert code == 0
        assert f"as {shape}" in stdout
        assert "skipped records: record:session 1" in stdout
        # An import warning: on stderr, once, naming the file.
        assert f"warning: {src}: line 8: last line cut off" in stderr and "last line cut off" not in stdout
        assert json.loads(out.read_text())["lab_transcript"] == 1


def test_python_m_lab_import_exits_0(tmp_path: Path) -> None:
    src = _write(tmp_path / "chat.jsonl", OPENAI_LINES)
    out = tmp_path / "x.json"
    proc = subprocess.run([sys.executable, "-m", "lab", "import", str(src), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "as openai_chat" in proc.stdout
    assert len(json.loads(out.read_text())["messages"]) == 5


def test_builders_session_lines_keep_tool_pairs(tmp_path: Path) -> None:
    msgs = [system(), user("go"), *call_and_result("Read", "x" * 50, file_path="a.py"), assistant("done")]
    p = _write(tmp_path / "b.jsonl", to_openai(msgs)["messages"])
    t = load(p)
    assert _complete_pairs(t) == {b.id for m in msgs for b in m.content if isinstance(b, ToolUseBlock)}


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


@pytest.mark.parametrize("role", [["user"], {"name": "user"}], ids=["list", "object"])
def test_a_wrapped_message_whose_role_is_not_text_is_skipped(tmp_path: Path, role: Any) -> None:
    # The set lookup of an unhashable role raised TypeError out of the reader.
    lines = [{"type": "message", "message": {"role": role, "content": "x"}}, *({"type": "message", "message": m} for m in OPENAI_LINES)]
    assert message_of(lines[0]) is None
    t = openai_chat.read_lines(_write(tmp_path / "log.jsonl", lines))
    clean = openai_chat.read_lines(_write(tmp_path / "clean.jsonl", lines[1:]))
    assert _outline(t.messages) == _outline(clean.messages) and t.notes.skipped == {"record:message": 1}


def test_a_content_part_whose_type_is_not_text_gives_no_trait(tmp_path: Path) -> None:
    # Deciding the shape looked a list-valued part type up in a set: TypeError while sniffing.
    lines = [{"role": "user", "content": [{"type": ["tool_use"]}, {"type": "text", "text": "hi"}]}, *ANTHROPIC_LINES[1:]]
    assert line_scores(lines) == line_scores([{"role": "user", "content": [{"type": "text", "text": "hi"}]}, *ANTHROPIC_LINES[1:]])
