"""Aider chat histories and LLM logs: sessions, user turns, notices, edit blocks as tool pairs, usage."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import lab
from lab.core.messages import TextBlock, ToolResultBlock, ToolUseBlock, Transcript, message_text, tool_pairs
from lab.errors import TranscriptError
from lab.formats.editors import aider
from lab.formats import detect, load
from lab.formats.editors.aider_chat import parse_chat_history
from lab.formats.editors.aider_edits import Edit, split_edits
from lab.formats.detect import scores
from lab.formats.sanity import misread_warnings
from lab.formats.export import to_anthropic, to_openai
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id

FIXTURES = Path(__file__).parent / "fixtures" / "aider"
CHAT = FIXTURES / ".aider.chat.history.md"
LLM = FIXTURES / ".aider.llm.history"
B = "  "  # the markdown line break aider ends its user and notice lines with


def _uses(t: Transcript) -> list[ToolUseBlock]:
    return [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]


def _results(t: Transcript) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}


def _write(tmp_path: Path, text: str, name: str = "chat.md") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# --- sessions and turns ---------------------------------------------------------------------


def test_the_last_session_with_turns_is_imported_and_the_others_counted() -> None:
    t = load(CHAT)
    assert t.meta.source_format == "aider"
    assert t.meta.session_id == "2024-05-02 14:30:00"
    assert "other_session" not in t.notes.skipped and "empty_session" not in t.notes.skipped
    assert any("holds 2 sessions with turns and 1 without a turn; read session 1 (the last)" in w for w in t.notes.warnings)
    assert t.meta.model == "claude-3-5-sonnet-20240620"
    assert "what does slugify do?" not in " ".join(message_text(m) for m in t.messages)


def test_many_short_sessions_are_no_sign_of_a_misread(tmp_path: Path) -> None:
    # A repository's history collects every aider run: thirty short ones must read like one.
    runs = "".join(f"\n# aider chat started at 2024-05-{d:02d} 10:00:00\n\n#### question {d}{B}\n\nanswer {d}\n" for d in range(1, 31))
    t = load(_write(tmp_path, runs, ".aider.chat.history.md"))
    assert [message_text(m) for m in t.messages if m.role != "system"] == ["question 30", "answer 30"]
    assert misread_warnings(t.notes) == [] and not t.notes.skipped
    assert any("holds 30 sessions with turns" in w for w in t.notes.warnings)


def test_an_earlier_session_can_be_picked() -> None:
    t = aider.read(CHAT, session=0)
    assert [m.role for m in t.messages] == ["system", "user", "assistant"]
    # The system prompt is the one logged during that session, not a later one.
    assert message_text(t.messages[0]) == "an older session's prompt"
    assert t.messages[2].usage is not None and t.messages[2].usage.input_tokens == 1200


def test_consecutive_user_lines_are_one_message_and_commands_are_skipped() -> None:
    t = load(CHAT)
    users = [message_text(m) for m in t.messages if m.role == "user" and any(isinstance(b, TextBlock) for b in m.content)]
    assert users[0] == "slugify keeps trailing dashes.\nStrip them, and add a test."
    assert not any(u.startswith("/") for u in users)
    assert "aider_command" not in t.notes.skipped
    (line,) = [d for d in t.notes.dropped if d.startswith("aider's own bookkeeping")]
    assert "2 commands (" in line


def test_chat_commands_keep_their_text(tmp_path: Path) -> None:
    p = _write(tmp_path, f"# aider chat started at 2024-01-01 00:00:00\n\n#### /ask why is it slow?{B}\n\nBecause of the loop.\n")
    t = load(p)
    assert message_text(t.messages[0]) == "why is it slow?"


def test_notices_are_not_assistant_prose() -> None:
    t = load(CHAT)
    prose = " ".join(b.text for m in t.messages if m.role == "assistant" for b in m.content if isinstance(b, TextBlock))
    for notice in ("Tokens:", "Applied edit", "Commit 1a2b3c4", "Add command output", "Cost:", "Git repo"):
        assert notice not in prose
    # Counted as aider's bookkeeping, not as skipped records.
    assert "notice" not in t.notes.skipped
    (line,) = [d for d in t.notes.dropped if d.startswith("aider's own bookkeeping")]
    assert int(line.split(": ", 1)[1].split(" notice line")[0]) >= 5


def test_an_assistant_heading_is_not_a_user_turn() -> None:
    t = load(CHAT)
    reply = next(m for m in t.messages if m.role == "assistant")
    assert message_text(reply).startswith("#### Plan")


def test_a_multi_line_token_report_becomes_the_replys_usage() -> None:
    t = load(CHAT)
    usage = [m.usage for m in t.messages if m.role == "assistant"]
    first = usage[0]
    assert first is not None
    assert (first.output_tokens, first.cache_write_tokens, first.cache_read_tokens) == (120, 1100, 4500)
    assert usage[1] is not None and usage[1].input_tokens == 3000 and usage[1].output_tokens == 60


def test_the_messages_cost_is_the_recorded_cost() -> None:
    assert aider.parse_cost("Tokens: 2.3k sent, 120 received. Cost: $0.0123 message, $0.05 session.") == 0.0123
    assert aider.parse_cost("Tokens: 2.3k sent, 120 received.") is None
    usage = aider.parse_tokens("Tokens: 2.3k sent, 120 received. Cost: $1,234.50 message, $2,000.00 session.")
    assert usage is not None and usage.cost_usd == 1234.5


@pytest.mark.parametrize(
    "report, expected",
    [
        ("Tokens: 2.3k sent, 120 received. Cost: $0.01 message, $0.05 session.", (2300, 120, 0, 0)),
        ("Tokens: 12k sent, 1.5k cache write, 8.0k cache hit, 300 received.", (2500, 300, 8000, 1500)),
        ("Tokens: 1,234 sent, 56 received.", (1234, 56, 0, 0)),
    ],
    ids=["plain", "cache", "commas"],
)
def test_parse_tokens(report: str, expected: tuple[int, int, int, int]) -> None:
    u = aider.parse_tokens(report)
    assert u is not None and (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == expected


# --- edit blocks ----------------------------------------------------------------------------


def test_search_replace_blocks_become_edit_pairs_with_path_old_and_new() -> None:
    t = load(CHAT)
    edits = [u for u in _uses(t) if u.name == "edit"]
    assert edits[0].input == {"file_path": "src/slug.py", "old_string": '    return "-".join(words)', "new_string": '    return "-".join(words).strip("-")'}
    assert edits[1].input["file_path"] == "tests/test_slug.py" and edits[1].input["old_string"] == ""
    results = _results(t)
    assert results[edits[0].id].content == "Applied edit to src/slug.py" and not results[edits[0].id].is_error
    reply = next(m for m in t.messages if m.role == "assistant")
    assert "<<<<<<< SEARCH" not in message_text(reply) and "src/slug.py\n```" not in message_text(reply)


def test_a_confirmed_whole_file_block_becomes_a_write_pair() -> None:
    t = load(CHAT)
    writes = [u for u in _uses(t) if u.name == "write"]
    assert len(writes) == 1 and writes[0].input["file_path"] == "README.md"
    assert writes[0].input["content"].startswith("# slug")
    assert _results(t)[writes[0].id].content == "Applied edit to README.md"


def test_a_failed_edit_gets_an_error_result() -> None:
    t = load(CHAT)
    last = [u for u in _uses(t) if u.name == "edit"][-1]
    result = _results(t)[last.id]
    assert result.is_error and "failed to match" in result.content


def test_every_edit_is_answered_and_survives_export() -> None:
    t = load(CHAT)
    pairs = tool_pairs(t.messages)
    assert len(pairs) == 4 and all(use is not None and result is not None for use, result in pairs.values())
    assert not t.notes.unanswered_tool_uses and not t.notes.orphan_tool_results
    body = to_anthropic(t.messages, t.tools)
    assert sum(1 for m in body["messages"] for b in m["content"] if b["type"] == "tool_result") == 4
    assert sum(len(m.get("tool_calls") or []) for m in to_openai(t.messages, t.tools)["messages"]) == 4


def test_an_edit_without_a_notice_gets_a_synthetic_result_and_a_warning(tmp_path: Path) -> None:
    text = (
        f"# aider chat started at 2024-01-01 00:00:00\n\n#### fix it{B}\n\n"
        "a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n"
    )
    t = load(_write(tmp_path, text))
    (use,) = _uses(t)
    assert _results(t)[use.id].content == "Applied edit to a.py"
    assert any("synthetic" in w for w in t.notes.warnings)


def test_split_edits_reuses_the_previous_path_and_leaves_snippets_alone() -> None:
    reply = (
        "Two changes:\n\nb.py\n```python\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n\nexample.py\n```python\nprint(1)\n```"
    )
    segments, unnamed = split_edits(reply)
    assert segments[0] == "Two changes:"
    assert segments[1] == Edit(path="b.py", old="a", new="b") and segments[2] == Edit(path="b.py", old="c", new="d")
    assert isinstance(segments[3], str) and "print(1)" in segments[3]  # not confirmed: a snippet, not a write
    assert unnamed == 0


def test_a_block_with_no_path_stays_text() -> None:
    segments, unnamed = split_edits("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE")
    assert unnamed == 1 and segments == ["<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE"]


# --- the LLM log ----------------------------------------------------------------------------


def test_llm_history_imports_its_last_request_and_reply() -> None:
    t = load(LLM)
    assert detect(LLM) == "aider"
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "user", "assistant"]
    assert message_text(t.messages[0]) == "Act as an expert software developer.\n\nAlways use best practices when coding."
    assert t.notes.skipped == {"earlier_request": 2, "response": 1}
    (use,) = _uses(t)
    assert use.input["file_path"] == "src/slug.py"
    assert message_text(t.messages[-1]).startswith("README.md")  # an unconfirmed whole file stays text


def test_llm_history_beside_the_chat_history_adds_the_system_prompt(tmp_path: Path) -> None:
    assert load(CHAT).messages[0].role == "system"
    shutil.copy(CHAT, tmp_path / CHAT.name)
    alone = load(tmp_path / CHAT.name)
    assert alone.messages[0].role == "user"


# --- errors, detection, replay --------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [f"# aider chat started at 2024-01-01 00:00:00\n\n> Aider v0.50{B}\n", "TO LLM 2024-01-01T00:00:00\n"],
    ids=["no-turns", "empty-request"],
)
def test_files_with_nothing_to_import_raise(tmp_path: Path, content: str) -> None:
    with pytest.raises(TranscriptError):
        load(_write(tmp_path, content), format="aider")


def test_binary_garbage_raises(tmp_path: Path) -> None:
    p = tmp_path / "x.md"
    p.write_bytes(b"# aider chat started at 2024\n\xff\xfe\x00")
    with pytest.raises(TranscriptError, match="UTF-8"):
        load(p, format="aider")


def test_detection_claims_only_aider_files(tmp_path: Path) -> None:
    assert detect(CHAT) == "aider"
    for name in ("notes.md", "plain.txt"):
        p = _write(tmp_path, "# My notes\n\n#### a heading\n\n> a quote\n", name)
        assert scores(read_file_head(p))["aider"] == 0


SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md" and not p.name.startswith("aider"))


@pytest.mark.parametrize("path", SAMPLE_FILES + CORPUS_FILES, ids=[p.name for p in SAMPLE_FILES] + [corpus_id(p) for p in CORPUS_FILES])
def test_other_files_are_not_claimed(path: Path) -> None:
    assert scores(read_file_head(path))["aider"] == 0


@pytest.mark.parametrize("path", [CHAT, LLM, SAMPLES / "aider-sample.aider.chat.history.md"], ids=["chat", "llm", "sample"])
def test_replays_with_no_invalid_request(path: Path) -> None:
    report = lab.replay(load(path), "minicode", window=32000)
    assert report.requests > 0 and report.invalid_requests == 0


# --- architect mode, notices, line endings, folders ------------------------------------------

ARCHITECT = FIXTURES / "architect.aider.chat.history.md"


def _notice_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("> ") and line.strip() != ">")


def test_an_architect_history_with_more_notices_than_turns_reads() -> None:
    # The shape a real architect-mode history has: more "> " notice lines than items of the session.
    text = ARCHITECT.read_text(encoding="utf-8")
    items = parse_chat_history(text)[-1].items
    assert _notice_lines(text) > len(items) >= 20
    t = load(ARCHITECT)
    assert t.meta.source_format == "aider" and t.meta.model == "o3-mini"
    assert misread_warnings(t.notes) == [] and not t.notes.skipped
    (line,) = [d for d in t.notes.dropped if d.startswith("aider's own bookkeeping")]
    commands = [i.text.split()[0] for i in items if i.kind == "user" and i.text.startswith("/")]
    assert f"{len(commands)} commands (/run {commands.count('/run')}," in line
    assert f"{_notice_lines(text) - sum(1 for x in text.splitlines() if x.startswith(('> Tokens:', '> Applied edit')))} notice lines" in line


def test_architect_mode_keeps_the_plan_and_the_editors_turn() -> None:
    t = load(ARCHITECT)
    roles = [m.role for m in t.messages]
    texts = [message_text(m) for m in t.messages]
    plans = [k for k, m in enumerate(t.messages) if m.role == "assistant" and texts[k].startswith("To add `")]
    assert len(plans) == 6
    for k in plans:
        # The architect's reply, then the same plan handed to the editor as a user turn, then the editor's edits.
        assert roles[k + 1] == "user" and texts[k + 1] == texts[k]
        editor = t.messages[k + 2]
        calls = [b for b in editor.content if isinstance(b, ToolUseBlock)]
        assert editor.role == "assistant" and [c.input["file_path"] for c in calls] == ["src/calc.py", "tests/test_calc.py"]
        results = {b.tool_use_id: b for b in t.messages[k + 3].content if isinstance(b, ToolResultBlock)}
        assert [results[c.id].content for c in calls] == ["Applied edit to src/calc.py", "Applied edit to tests/test_calc.py"]
    assert lab.replay(t, "minicode", window=32000).invalid_requests == 0


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_any_line_ending_reads_the_same(tmp_path: Path, newline: str) -> None:
    text = ARCHITECT.read_text(encoding="utf-8")
    assert "\r" not in text
    p = tmp_path / ".aider.chat.history.md"
    p.write_bytes(text.replace("\n", newline).encode("utf-8"))
    assert detect(p) == "aider"
    got, want = load(p), load(ARCHITECT)
    assert [(m.role, m.content) for m in got.messages] == [(m.role, m.content) for m in want.messages]
    assert got.notes.dropped == want.notes.dropped and misread_warnings(got.notes) == []


def test_a_folder_walk_claims_an_aider_history_and_leaves_notes_out(tmp_path: Path) -> None:
    from lab.formats.containers.session_folder import is_note_file
    from lab.evaluation.batch import folder_files

    shutil.copy(ARCHITECT, tmp_path / "chat.md")
    (tmp_path / "notes.md").write_text("# My notes\n\nnothing here\n", encoding="utf-8")
    (tmp_path / "late.md").write_text("# notes\n\n" + "x\n" * 10 + "\n# aider chat started at 2025-01-01 00:00:00\n", encoding="utf-8")
    (tmp_path / "data.csv").write_text("a,b\n", encoding="utf-8")
    assert not is_note_file(tmp_path / "chat.md") and not is_note_file(tmp_path / "late.md")
    assert is_note_file(tmp_path / "notes.md") and is_note_file(tmp_path / "data.csv")
    assert [f.name for f in folder_files(tmp_path)] == ["chat.md", "late.md"]


def test_sessions_counts_turns_without_commands() -> None:
    from lab.formats import sessions

    items = parse_chat_history(ARCHITECT.read_text(encoding="utf-8"))[-1].items
    turns = [i for i in items if i.kind in ("user", "assistant")]
    commands = [i for i in turns if i.kind == "user" and i.text.startswith("/")]
    (only,) = sessions(ARCHITECT)
    assert commands and only.messages == len(turns) - len(commands)


def test_a_quote_right_below_a_reply_line_is_the_replys(tmp_path: Path) -> None:
    text = (
        f"# aider chat started at 2024-01-01 00:00:00\n\n#### why?{B}\n\n"
        "The docs say:\n> Use slugify for URLs.\n> Never for file names.\nSo that is why.\n\n"
        f"> Tokens: 1.0k sent, 20 received.{B}\n"
    )
    t = load(_write(tmp_path, text))
    assert [m.role for m in t.messages] == ["user", "assistant"]
    reply = message_text(t.messages[1])
    assert "> Use slugify for URLs.\n> Never for file names.\nSo that is why." in reply and "Tokens" not in reply
    assert t.messages[1].usage is not None and t.messages[1].usage.output_tokens == 20
