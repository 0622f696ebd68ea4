"""Cursor's state.vscdb: session choice, both conversation layouts, tools, thinking, usage, damage, workspace files, detection, read-only.

The databases are built in ``tmp_path`` with Cursor's own table statements
(``CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)``,
the same for ``ItemTable``) and rows shaped as public readers of Cursor's store
document them: ``composerData:<id>`` sessions with ``fullConversationHeadersOnly``
pointing at ``bubbleId:<id>:<bubble>`` rows (or, older, an inline ``conversation``),
bubbles of ``type`` 1 / 2 with ``toolFormerData``, ``thinking`` and ``tokenCount``;
a workspace file's ``composer.composerData`` and legacy ``aichat`` chat tabs.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lab.cli.main import main
from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats.databases import cursor
from lab.formats import detect, load, sessions
from lab.formats.detect import scores
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id
from tests.formats.test_wrong_format import _forced_results
from tests.formats.readonly import assert_reads_leave_untouched

_TABLE = "CREATE TABLE {} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"
T0 = 1767261600000  # 2026-01-01 10:00 UTC, in Cursor's epoch milliseconds


class CursorDb:
    """A Cursor state.vscdb in a tmp folder, written as Cursor writes it."""

    def __init__(self, path: Path, *, wal: bool = False, blob: bool = False) -> None:
        self.path = path
        self.blob = blob
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path) as conn:
            if wal:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_TABLE.format("ItemTable"))
            conn.execute(_TABLE.format("cursorDiskKV"))
        conn.close()

    def kv(self, key: str, value: Any, table: str = "cursorDiskKV") -> CursorDb:
        """One row; a dict or list is stored as JSON (bytes when the db stores BLOBs), a str or bytes as it is."""
        raw = value if isinstance(value, (str, bytes)) or value is None else json.dumps(value)
        if self.blob and isinstance(raw, str):
            raw = raw.encode("utf-8")
        with sqlite3.connect(self.path) as conn:
            conn.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (key, raw))
        conn.close()
        return self

    def composer(self, cid: str, bubbles: list[dict[str, Any]], *, updated: int = T0, inline: bool = False, **fields: Any) -> CursorDb:
        """A composer and its bubbles: one row per bubble and headers (current), or the bubbles inline (older)."""
        data: dict[str, Any] = {"_v": 10, "composerId": cid, "createdAt": updated - 60000, "lastUpdatedAt": updated, "status": "completed", **fields}
        if inline:
            data["conversation"] = bubbles
        else:
            data["fullConversationHeadersOnly"] = [{"bubbleId": b["bubbleId"], "type": b.get("type")} for b in bubbles]
            data["conversationMap"] = {}
            for b in bubbles:
                self.kv(f"bubbleId:{cid}:{b['bubbleId']}", b)
        return self.kv(f"composerData:{cid}", data)


def _user(bid: str, text: str, **kw: Any) -> dict[str, Any]:
    return {"_v": 3, "type": 1, "bubbleId": bid, "text": text, "richText": "", "createdAt": "2026-01-01T10:00:00.000Z", **kw}


def _reply(bid: str, text: str = "", **kw: Any) -> dict[str, Any]:
    return {"_v": 3, "type": 2, "bubbleId": bid, "text": text, "codeBlocks": [], "createdAt": "2026-01-01T10:00:05.000Z", **kw}


def _tool(bid: str, call: str, name: str, args: dict[str, Any], result: Any = None, status: str = "completed", **tool: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"tool": 15, "toolCallId": call, "name": name, "rawArgs": json.dumps(args), "params": json.dumps(args), "status": status, **tool}
    if result is not None:
        data["result"] = result if isinstance(result, str) else json.dumps(result)
    return _reply(bid, capabilityType=15, toolFormerData=data)


def _chat(db: CursorDb, cid: str, words: str, updated: int, **fields: Any) -> None:
    db.composer(cid, [_user(f"{cid}-u", f"{words}?"), _reply(f"{cid}-a", f"{words}.")], updated=updated, **fields)


def _two(tmp_path: Path) -> CursorDb:
    db = CursorDb(tmp_path / "globalStorage" / "state.vscdb")
    _chat(db, "c-old", "old question", T0, name="Older chat")
    _chat(db, "c-new", "new question", T0 + 3600000, name="Newer chat")
    db.composer("c-empty", [], updated=T0 + 7200000, name="Draft")
    return db


# --- sessions ---------------------------------------------------------------------------------------


def test_the_newest_composer_with_messages_is_read_with_a_warning(tmp_path: Path) -> None:
    t = load(_two(tmp_path).path)
    assert (t.meta.source_format, t.meta.session_id, t.meta.title) == ("cursor", "c-new", "Newer chat")
    assert [(m.role, m.content) for m in t.messages] == [("user", (TextBlock(text="new question?"),)), ("assistant", (TextBlock(text="new question."),))]
    warning = next(w for w in t.notes.warnings if "sessions with messages" in w)
    # The empty draft is newer still, but holds nothing to read.
    assert "holds 2 sessions" in warning and "c-old" in warning and "--session ID" in warning and "read_db(path, session_id=...)" in warning


def test_a_session_id_picks_another(tmp_path: Path) -> None:
    db = _two(tmp_path)
    for t in (load(db.path, session="c-old"), cursor.read_db(db.path, session_id="c-old")):
        assert t.meta.session_id == "c-old" and t.messages[0].content == (TextBlock(text="old question?"),)
        assert not any("sessions with messages" in w for w in t.notes.warnings)


def test_an_unknown_or_empty_session_is_a_clear_error(tmp_path: Path) -> None:
    db = _two(tmp_path)
    with pytest.raises(TranscriptError, match=r"no session 'nope' in this Cursor database.*'c-empty', 'c-new', 'c-old'"):
        load(db.path, session="nope")
    with pytest.raises(TranscriptError, match="'c-empty' has no messages"):
        cursor.read_db(db.path, session_id="c-empty")


def test_sessions_are_listed_newest_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _two(tmp_path)
    listed = sessions(db.path)
    assert [(s.id, s.messages, s.title, s.format) for s in listed] == [
        ("c-empty", 0, "Draft", "cursor"), ("c-new", 2, "Newer chat", "cursor"), ("c-old", 2, "Older chat", "cursor"),
    ]  # fmt: skip
    assert listed[1].updated == "2026-01-01T11:00:00+00:00"
    assert [s.id for s in cursor.list_sessions(db.path)] == ["c-empty", "c-new", "c-old"]
    assert main(["sessions", str(db.path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in out["sessions"]] == ["c-empty", "c-new", "c-old"]


def test_a_subagent_s_composer_is_listed_but_not_the_default(tmp_path: Path) -> None:
    db = CursorDb(tmp_path / "state.vscdb")
    _chat(db, "parent", "plan it", T0, name="Parent", subComposerIds=["child"])
    _chat(db, "child", "sub task", T0 + 60000, name="Child")
    _chat(db, "bestof", "variant", T0 + 120000, isBestOfNSubcomposer=True)
    t = load(db.path)
    assert t.meta.session_id == "parent"
    assert any("child (2 messages, sub-agent or hidden)" in w and "sub-agents'" in w for w in t.notes.warnings)
    assert [(s.id, s.kind) for s in sessions(db.path)] == [("bestof", "subagent"), ("child", "subagent"), ("parent", None)]
    assert load(db.path, session="child").meta.title == "Child"


def test_a_header_s_bubble_kept_in_the_conversation_map_is_read(tmp_path: Path) -> None:
    db = CursorDb(tmp_path / "state.vscdb")
    db.composer("c", [_user("u", "q"), _reply("a", "from its row")])
    data = json.loads(_value(db, "composerData:c"))
    data["fullConversationHeadersOnly"].append({"bubbleId": "m", "type": 2})
    data["conversationMap"] = {"m": _reply("m", " and from the map")}
    t = load(db.kv("composerData:c", data).path)
    assert t.messages[1].content == (TextBlock(text="from its row"), TextBlock(text=" and from the map"))
    assert not t.notes.skipped


# --- the two conversation layouts --------------------------------------------------------------------


def _agent_turn() -> list[dict[str, Any]]:
    return [
        _user("u1", "Fix add in calc.py"),
        _reply("a1", thinking={"text": "Read the file first.", "signature": "sig=="}, tokenCount={"inputTokens": 1200, "outputTokens": 30}),
        _tool("a2", "toolu_1", "read_file", {"target_file": "calc.py"}, {"contents": "def add(a, b):\n    return a - b\n"}, modelCallId="m1"),
        _reply("a3", "The sign is wrong; fixing it.", tokenCount={"inputTokens": 1500, "outputTokens": 40}),
        _tool("a4", "toolu_2", "search_replace", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}, {"diff": "ok"}, modelCallId="m2"),
        _reply("a5", "Fixed.", tokenCount={"inputTokens": 1700, "outputTokens": 10}),
    ]


@pytest.mark.parametrize("inline", [False, True], ids=["headers-only", "inline-conversation"])
def test_both_layouts_read_the_same(tmp_path: Path, inline: bool) -> None:
    db = CursorDb(tmp_path / "state.vscdb")
    db.composer("c1", _agent_turn(), inline=inline, name="Fix add", modelConfig={"modelName": "claude-4.5-sonnet"})
    t = load(db.path)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    first = t.messages[1].content
    assert first[0] == ThinkingBlock(thinking="Read the file first.", signature="sig==")
    assert first[1] == ToolUseBlock(id="toolu_1", name="read_file", input={"target_file": "calc.py"})
    result = t.messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.tool_use_id == "toolu_1" and "return a - b" in json.loads(result.content)["contents"]
    assert [type(b).__name__ for b in t.messages[3].content] == ["TextBlock", "ToolUseBlock"]
    assert t.messages[5].content == (TextBlock(text="Fixed."),)
    assert all(a is not None and r is not None for a, r in tool_pairs(t.messages).values())
    assert [m.usage for m in t.messages if m.role == "assistant"] == [
        Usage(input_tokens=1200, output_tokens=30), Usage(input_tokens=1500, output_tokens=40), Usage(input_tokens=1700, output_tokens=10),
    ]  # fmt: skip
    assert t.messages[0].timestamp is not None and t.messages[0].timestamp.isoformat() == "2026-01-01T10:00:00+00:00"
    assert (t.meta.title, t.meta.model) == ("Fix add", "claude-4.5-sonnet")
    assert not t.notes.skipped and not t.notes.unanswered_tool_uses


def test_bubbles_of_one_request_add_their_output_tokens(tmp_path: Path) -> None:
    db = CursorDb(tmp_path / "state.vscdb")
    bubbles = [
        _user("u", "hi"),
        _reply("a", "Hel", tokenCount={"inputTokens": 10, "outputTokens": 2}),
        _reply("b", "lo.", tokenCount={"inputTokens": 8, "outputTokens": 3}),
    ]
    t = load(db.composer("c", bubbles).path)
    # One prompt, written in two bubbles: the output adds up, the input is the prompt's once.
    assert t.messages[1].content == (TextBlock(text="Hel"), TextBlock(text="lo.")) and t.messages[1].usage == Usage(input_tokens=10, output_tokens=5)


# --- tool calls -----------------------------------------------------------------------------------------


def test_errors_rejections_and_parallel_calls(tmp_path: Path) -> None:
    bubbles = [
        _user("u1", "Run the tests"),
        _tool("a1", "t-err", "run_terminal_cmd", {"command": "pytest"}, {"output": "1 failed"}, status="error", modelCallId="m1"),
        _tool("a2", "t-no", "run_terminal_cmd", {"command": "rm -rf build"}, userDecision="rejected", status="cancelled", modelCallId="m2"),
        # Two calls of one model response (one modelCallId): one assistant message, their results one user message.
        _tool("a3", "t-p1", "read_file", {"target_file": "a.py"}, {"contents": "A"}, modelCallId="m3"),
        _tool("a4", "t-p2", "read_file", {"target_file": "b.py"}, {"contents": "B"}, modelCallId="m3"),
        _reply("a5", "Done."),
    ]
    t = load(CursorDb(tmp_path / "state.vscdb").composer("c", bubbles).path)
    results = {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
    assert results["t-err"].is_error and "1 failed" in results["t-err"].content
    assert results["t-no"].is_error and results["t-no"].content == "The user rejected this tool call."
    assert not results["t-p1"].is_error
    parallel = [m for m in t.messages if any(isinstance(b, ToolUseBlock) and b.id == "t-p1" for b in m.content)][0]
    assert [b.id for b in parallel.content if isinstance(b, ToolUseBlock)] == ["t-p1", "t-p2"]
    answer = t.messages[t.messages.index(parallel) + 1]
    assert [b.tool_use_id for b in answer.content if isinstance(b, ToolResultBlock)] == ["t-p1", "t-p2"]
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]


def test_a_call_without_result_is_answered_mid_session_and_left_open_at_the_end(tmp_path: Path) -> None:
    bubbles = [
        _user("u1", "Start the server"),
        _tool("a1", "t-mid", "run_terminal_cmd", {"command": "serve"}, status="loading", modelCallId="m1"),
        _user("u2", "Stop waiting; now lint it"),
        _tool("a2", "t-end", "run_terminal_cmd", {"command": "ruff check"}, status="loading", modelCallId="m2"),
    ]
    t = load(CursorDb(tmp_path / "state.vscdb").composer("c", bubbles).path)
    mid = t.messages[2]
    assert mid.content[0] == ToolResultBlock(tool_use_id="t-mid", content="No tool output")
    # The next user words join the results: one user turn.
    assert mid.content[1] == TextBlock(text="Stop waiting; now lint it")
    assert t.notes.unanswered_tool_uses == ["t-end"]
    assert any("'t-mid'" in w and "answered 'No tool output'" in w for w in t.notes.warnings)
    assert any("'t-end'" in w and "unanswered" in w for w in t.notes.warnings)


def test_arguments_that_are_no_json_object_are_kept_raw(tmp_path: Path) -> None:
    bubble = _tool("a1", "t1", "grep", {}, {"ok": True})
    bubble["toolFormerData"]["rawArgs"] = "{not json"
    t = load(CursorDb(tmp_path / "state.vscdb").composer("c", [_user("u", "find it"), bubble]).path)
    use = t.messages[1].content[0]
    assert isinstance(use, ToolUseBlock) and use.input == {"_raw": "{not json"}
    assert any("not valid JSON" in w for w in t.notes.warnings)


# --- user context, model, cwd --------------------------------------------------------------------------


def test_attached_code_goes_before_the_user_words(tmp_path: Path) -> None:
    user = _user(
        "u1",
        "Why does this fail?",
        attachedCodeChunks=[{"relativeWorkspacePath": "src/calc.py", "startLineNumber": 3, "lines": ["def add(a, b):", "    return a - b"]}],
        context={
            "selections": [{"text": "assert add(1, 2) == 3", "uri": {"fsPath": "/home/dev/calc/test_calc.py"}}],
            "fileSelections": [{"uri": {"fsPath": "/x.py"}}],
        },
        images=[{"path": "/tmp/shot.png"}],
        modelInfo={"modelName": "gpt-5"},
        workspaceUris=["file:///home/dev/calc"],
    )
    t = load(CursorDb(tmp_path / "state.vscdb").composer("c", [user, _reply("a1", "Wrong sign.")]).path)
    content = t.messages[0].content
    assert content[0] == TextBlock(text="src/calc.py (from line 3):\ndef add(a, b):\n    return a - b\n")
    assert content[1] == TextBlock(text="/home/dev/calc/test_calc.py:\nassert add(1, 2) == 3\n")
    assert content[2] == TextBlock(text="Why does this fail?") and isinstance(content[3], ImageBlock)
    assert (t.meta.model, t.meta.cwd) == ("gpt-5", "/home/dev/calc")


def test_lexical_rich_text_is_read_when_text_is_empty(tmp_path: Path) -> None:
    rich = {
        "root": {
            "children": [
                {"type": "paragraph", "children": [{"type": "text", "text": "line one"}]},
                {"type": "paragraph", "children": [{"type": "text", "text": "line two"}]},
            ]
        }
    }
    t = load(CursorDb(tmp_path / "state.vscdb").composer("c", [_user("u", "", richText=json.dumps(rich)), _reply("a", "ok")]).path)
    assert t.messages[0].content == (TextBlock(text="line one\nline two"),)


# --- damage ---------------------------------------------------------------------------------------------


def test_unknown_damaged_and_missing_bubbles_are_skipped_and_counted(tmp_path: Path) -> None:
    db = CursorDb(tmp_path / "state.vscdb")
    bubbles = [_user("u1", "hello"), {"_v": 3, "type": 7, "bubbleId": "odd"}, _reply("a1", "hi"), _reply("a2", "")]
    db.composer("c", bubbles)
    # One header whose row holds no JSON, one whose row is gone, one row no header names.
    data = json.loads(_value(db, "composerData:c"))
    data["fullConversationHeadersOnly"] += [{"bubbleId": "broken", "type": 2}, {"bubbleId": "gone", "type": 2}]
    db.kv("composerData:c", data).kv("bubbleId:c:broken", '{"type": 2, "text": ').kv("bubbleId:c:stray", _reply("stray", "never shown"))
    db.kv("composerData:damaged", "{not json")
    t = load(db.path)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.notes.skipped == {
        "composerData (not a JSON object)": 1,
        "bubble:type 7 (unknown type)": 1,
        "bubble:assistant (empty)": 1,
        "bubble (not JSON)": 1,
        "bubble:missing": 1,
    }
    assert t.notes.records_read == 6
    assert any("1 bubble row(s) of composer 'c' are in none of its headers" in w for w in t.notes.warnings)


def _value(db: CursorDb, key: str) -> str:
    with sqlite3.connect(db.path) as conn:
        value = conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()[0]
    conn.close()
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def test_blob_values_read_as_text_values(tmp_path: Path) -> None:
    text, blob = CursorDb(tmp_path / "a" / "state.vscdb"), CursorDb(tmp_path / "b" / "state.vscdb", blob=True)
    for db in (text, blob):
        db.composer("c", _agent_turn(), name="Fix add")
    assert _value(blob, "composerData:c")  # stored as bytes
    assert load(text.path).messages == load(blob.path).messages


def test_a_session_of_only_unreadable_bubbles_is_a_clear_error(tmp_path: Path) -> None:
    db = CursorDb(tmp_path / "state.vscdb").composer("c", [{"type": 9, "bubbleId": "x"}, _reply("a", "")])
    with pytest.raises(TranscriptError, match=r"none of its 2 readable bubble\(s\) holds a message"):
        cursor.read_db(db.path)


# --- workspace files -----------------------------------------------------------------------------------


def _workspace(tmp_path: Path) -> CursorDb:
    folder = tmp_path / "User" / "workspaceStorage" / "0a1b2c"
    db = CursorDb(folder / "state.vscdb")
    (folder / "workspace.json").write_text(json.dumps({"folder": "file:///home/dev/web%20app"}), encoding="utf-8")
    tabs = [
        {"tabId": "tab-1", "chatTitle": "CSS question", "lastSendTime": T0, "bubbles": [
            {"type": "user", "id": "b1", "text": "Center a div?", "selections": [{"text": ".box { display: block }"}]},
            {"type": "ai", "id": "b2", "rawText": "Use flexbox.", "modelType": "gpt-4"},
        ]},
        {"tabId": "tab-2", "chatTitle": "Older", "lastSendTime": T0 - 3600000, "bubbles": [{"type": "user", "text": "hi"}, {"type": "ai", "text": "hello"}]},
    ]  # fmt: skip
    return db.kv(cursor.CHATDATA_KEY, {"tabs": tabs}, table="ItemTable")


def test_a_workspace_chat_panel_is_read(tmp_path: Path) -> None:
    db = _workspace(tmp_path)
    assert detect(db.path) == "cursor"
    t = load(db.path)
    assert (t.meta.session_id, t.meta.title, t.meta.model, t.meta.cwd) == ("tab-1", "CSS question", "gpt-4", "/home/dev/web app")
    assert t.messages[0].content == (TextBlock(text=".box { display: block }\n"), TextBlock(text="Center a div?"))
    assert t.messages[1].content == (TextBlock(text="Use flexbox."),)
    assert [(s.id, s.kind) for s in sessions(db.path)] == [("tab-1", "chat"), ("tab-2", "chat")]
    assert load(db.path, session="tab-2").messages[1].content == (TextBlock(text="hello"),)


def test_workspace_composers_inline_are_read_and_heads_point_at_the_global_file(tmp_path: Path) -> None:
    db = _workspace(tmp_path)
    listed = {
        "allComposers": [
            {"composerId": "w1", "name": "Inline", "lastUpdatedAt": T0 + 1000, "conversation": _agent_turn()},
            {"composerId": "w2", "type": "head"},
        ]
    }
    db.kv(cursor.WORKSPACE_COMPOSERS_KEY, listed, table="ItemTable")
    t = load(db.path)
    assert t.meta.session_id == "w1" and t.meta.cwd == "/home/dev/web app" and len(t.messages) == 6
    only_heads = CursorDb(tmp_path / "User" / "workspaceStorage" / "ffff" / "state.vscdb")
    only_heads.kv(cursor.WORKSPACE_COMPOSERS_KEY, {"allComposers": [{"composerId": "w2", "type": "head"}]}, table="ItemTable")
    CursorDb(tmp_path / "User" / "globalStorage" / "state.vscdb")
    with pytest.raises(TranscriptError, match=r"lists 1 composer\(s\) \(w2\) whose messages Cursor keeps in its global database.*globalStorage/state.vscdb"):
        load(only_heads.path)
    with pytest.raises(TranscriptError, match="global database"):
        load(only_heads.path, session="w2")


# --- detection and other files ---------------------------------------------------------------------------


def test_only_cursor_claims_its_files(tmp_path: Path) -> None:
    for db in (_two(tmp_path), _workspace(tmp_path)):
        ranked = {n: s for n, s in scores(read_file_head(db.path)).items() if s}
        assert ranked == {"cursor": 100, "goose_db": 40}


def test_an_unrelated_sqlite_file_is_not_claimed(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
        # VS Code's own state.vscdb: the same table, no Cursor key.
        conn.execute(_TABLE.format("ItemTable"))
        conn.execute("INSERT INTO ItemTable VALUES ('workbench.sideBar.position', '0')")
    conn.close()
    assert cursor.sniff(read_file_head(other)) == 0
    with pytest.raises(TranscriptError, match="not Cursor's"):
        cursor.read_db(other)
    text = tmp_path / "state.vscdb"
    text.write_text("not a database", encoding="utf-8")
    assert cursor.sniff(read_file_head(text)) == 0
    with pytest.raises(TranscriptError, match="not a SQLite database"):
        cursor.read_db(text)


def test_a_cursor_file_without_chats_is_claimed_and_says_so(tmp_path: Path) -> None:
    db = CursorDb(tmp_path / "state.vscdb")
    assert cursor.sniff(read_file_head(db.path)) == 60
    with pytest.raises(TranscriptError, match="without any chat or composer session"):
        load(db.path)


def test_every_other_format_forced_on_the_database_fails_clearly(tmp_path: Path) -> None:
    assert _forced_results(_two(tmp_path).path) == []


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert cursor.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert cursor.sniff(read_file_head(path)) == 0


# --- read-only ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_reading_leaves_the_file_and_its_folder_untouched(tmp_path: Path, wal: bool) -> None:
    db = CursorDb(tmp_path / "state.vscdb", wal=wal).composer("c", _agent_turn())
    assert_reads_leave_untouched(db.path, load, cursor.list_sessions, sessions, detect)


def test_a_database_cursor_is_writing_reads_what_it_committed(tmp_path: Path) -> None:
    db = CursorDb(tmp_path / "state.vscdb", wal=True)
    _chat(db, "c1", "first", T0)
    writer = sqlite3.connect(db.path)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("INSERT INTO cursorDiskKV VALUES ('bubbleId:c1:late', ?)", (json.dumps(_reply("late", "uncommitted")),))
        assert (tmp_path / "state.vscdb-wal").exists()
        t = load(db.path)
        assert [m.role for m in t.messages] == ["user", "assistant"] and not t.notes.skipped
    finally:
        writer.rollback()
        writer.close()


def test_cli_import_and_export_to_anthropic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = CursorDb(tmp_path / "state.vscdb").composer("c", _agent_turn())
    assert main(["import", str(db.path), "--out", str(tmp_path / "s.lab.json")]) == 0
    assert "as cursor" in capsys.readouterr().out
    out = tmp_path / "request.json"
    assert main(["export", str(db.path), "--to", "anthropic", "--out", str(out)]) == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    kinds = [b["type"] for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
    assert kinds.count("tool_use") == kinds.count("tool_result") == 2


# --- a fuzz target: a JSON picture of the key-value rows, written as a database ----------------------


def read_kv_json(path: Path) -> Transcript:
    """``{"cursorDiskKV": {key: value}, "ItemTable": {key: value}}`` written beside ``path`` as a state.vscdb, then read.

    Values that are strings are stored as they are (damaged JSON stays damaged), others as JSON.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    db = CursorDb(path.with_name(path.name + ".vscdb"))
    for table in ("cursorDiskKV", "ItemTable"):
        rows = doc.get(table) if isinstance(doc, dict) else None
        for key, value in rows.items() if isinstance(rows, dict) else []:
            db.kv(str(key), value if isinstance(value, str) or value is None else json.dumps(value), table=table)
    return cursor.read_db(db.path)


def kv_seeds() -> list[tuple[str, dict[str, Any]]]:
    """Real shapes for the fuzzer: a global file (headers and rows, inline) and a workspace file."""
    bubbles = _agent_turn() + [_tool("a6", "t9", "run_terminal_cmd", {"command": "x"}, status="loading")]
    rows: dict[str, Any] = {f"bubbleId:c1:{b['bubbleId']}": b for b in bubbles}
    rows["composerData:c1"] = {
        "composerId": "c1",
        "name": "n",
        "lastUpdatedAt": T0,
        "fullConversationHeadersOnly": [{"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles],
    }
    rows["composerData:c2"] = {"composerId": "c2", "lastUpdatedAt": T0 - 1, "conversation": _agent_turn()}
    tabs = {
        "tabs": [{"tabId": "t", "chatTitle": "x", "bubbles": [{"type": "user", "text": "q", "selections": [{"text": "s"}]}, {"type": "ai", "rawText": "a"}]}]
    }
    heads = {"allComposers": [{"composerId": "w1", "lastUpdatedAt": T0, "conversation": _agent_turn()}]}
    return [("global", {"cursorDiskKV": rows}), ("workspace", {"ItemTable": {cursor.CHATDATA_KEY: tabs, cursor.WORKSPACE_COMPOSERS_KEY: heads}})]


def test_the_fuzz_seeds_read(tmp_path: Path) -> None:
    for name, doc in kv_seeds():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc), encoding="utf-8")
        assert read_kv_json(p).messages, name
