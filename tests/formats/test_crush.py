"""Crush session database: session choice, parts, tool pairing, summaries, damage, detection, read-only, CLI.

The databases are built in ``tmp_path`` with the CREATE TABLE statements of
charmbracelet/crush ``internal/db/migrations`` (the initial schema, then
``summary_message_id``, ``provider`` and ``is_summary_message``), and for the Go
OpenCode (opencode-ai/opencode) its initial schema plus ``summary_message_id``.
Rows are written as Crush writes them: ``parts`` is the JSON list of
``{type, data}`` of ``internal/message``, times are epoch seconds.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lab.cli.main import main
from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, tool_pairs
from lab.errors import TranscriptError
from lab.formats import FORMATS, detect, load, sessions
from lab.formats.databases import crush, goose_db
from lab.formats.detect import scores
from lab.formats.jsonio import read_file_head
from lab.replayer.recorded import apply_recorded
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id
from tests.formats.test_goose_db import GooseDb, _conversation
from tests.formats.test_opencode_storage import _database as opencode_database
from tests.formats.test_opencode_storage import _other as opencode_session
from tests.formats.readonly import assert_reads_leave_untouched

_SESSIONS = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    parent_session_id TEXT,
    title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    prompt_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens>= 0),
    cost REAL NOT NULL DEFAULT 0.0 CHECK (cost >= 0.0),
    updated_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL
)"""
_MESSAGES = """
CREATE TABLE messages (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL,
    parts BLOB NOT NULL default '[]',
    model TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished_at INTEGER,
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE
)"""
_CRUSH_LATER = (
    "ALTER TABLE sessions ADD COLUMN summary_message_id TEXT",
    "ALTER TABLE messages ADD COLUMN provider TEXT",
    "ALTER TABLE messages ADD COLUMN is_summary_message INTEGER DEFAULT 0 NOT NULL",
)
SCHEMAS = {
    "crush": _CRUSH_LATER,
    "opencode_go": _CRUSH_LATER[:1],
    "initial": (),
}
T0 = 1767261600


class CrushDb:
    """A crush.db in a tmp folder, written as Crush writes it."""

    def __init__(self, path: Path, schema: str = "crush", *, wal: bool = True) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._n = 0
        with sqlite3.connect(path) as conn:
            if wal:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SESSIONS)
            conn.execute(_MESSAGES)
            for sql in SCHEMAS[schema]:
                conn.execute(sql)
        conn.close()

    def _insert(self, table: str, row: dict[str, Any]) -> None:
        with sqlite3.connect(self.path) as conn:
            columns = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            row = {k: v for k, v in row.items() if k in columns}
            conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        conn.close()

    def session(self, sid: str, updated: int = T0, *, title: str = "A session", **fields: Any) -> CrushDb:
        self._insert("sessions", {"id": sid, "title": title, "updated_at": updated, "created_at": updated - 100, **fields})
        return self

    def message(self, sid: str, role: str, parts: Any, *, mid: str | None = None, created: int | None = None, **fields: Any) -> CrushDb:
        self._n += 1
        stamp = T0 + self._n if created is None else created
        raw = parts if isinstance(parts, (str, bytes)) else json.dumps(parts)
        self._insert("messages", {"id": mid or f"m{self._n}", "session_id": sid, "role": role, "parts": raw, "created_at": stamp, "updated_at": stamp, **fields})
        return self

    def summarize(self, sid: str, mid: str) -> CrushDb:
        with sqlite3.connect(self.path) as conn:
            conn.execute("UPDATE sessions SET summary_message_id = ? WHERE id = ?", (mid, sid))
        conn.close()
        return self


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "data": {"text": t, **extra}}


def finish(reason: str = "end_turn") -> dict[str, Any]:
    return {"type": "finish", "data": {"reason": reason, "time": T0}}


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "data": {"id": cid, "name": name, "input": json.dumps(args), "type": "", "finished": True}}


def result(cid: str, content: str, *, is_error: bool = False, name: str = "bash") -> dict[str, Any]:
    return {"type": "tool_result", "data": {"tool_call_id": cid, "name": name, "content": content, "metadata": "", "is_error": is_error}}


def reasoning(t: str, signature: str = "") -> dict[str, Any]:
    return {"type": "reasoning", "data": {"thinking": t, "signature": signature}}


def _chat(db: CrushDb, sid: str, words: str) -> CrushDb:
    return db.message(sid, "user", [text(f"{words}?")]).message(sid, "assistant", [text(f"{words}."), finish()], model="claude-sonnet-4")


def _agent_session(db: CrushDb, sid: str = "s1") -> CrushDb:
    """A prompt, a reply with thinking and two tool calls (one fails), their results, the final answer."""
    db.session(sid, title="Fix the tests", prompt_tokens=5400, completion_tokens=800, cost=0.0421)
    db.message(sid, "user", [text("Run the tests and fix what fails.")])
    db.message(sid, "assistant", [reasoning("Start with the suite.", "sig-1"), text("Running them."), call("toolu_1", "bash", {"command": "pytest -q"}),
                                  call("toolu_2", "view", {"file_path": "a.py"}), finish("tool_use")], model="claude-sonnet-4", provider="anthropic")
    db.message(sid, "tool", [result("toolu_1", "1 failed"), result("toolu_2", "no such file", is_error=True)])
    db.message(sid, "assistant", [text("One test fails; a.py is missing."), finish()], model="claude-sonnet-4", provider="anthropic")
    return db


def _db(tmp_path: Path, schema: str = "crush") -> CrushDb:
    return CrushDb(tmp_path / ".crush" / "crush.db", schema)


# --- mapping -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", list(SCHEMAS))
def test_parts_map_to_blocks_with_tools_paired(tmp_path: Path, schema: str) -> None:
    db = _agent_session(_db(tmp_path, schema))
    t = load(db.path)
    assert t.meta.source_format == "crush" and t.meta.session_id == "s1" and t.meta.title == "Fix the tests"
    assert t.meta.model == "claude-sonnet-4"
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    reply = t.messages[1].content
    assert reply[0] == ThinkingBlock(thinking="Start with the suite.", signature="sig-1")
    assert reply[1] == TextBlock(text="Running them.")
    assert reply[2] == ToolUseBlock(id="toolu_1", name="bash", input={"command": "pytest -q"})
    results = t.messages[2].content
    assert [(r.tool_use_id, r.content, r.is_error) for r in results if isinstance(r, ToolResultBlock)] == [
        ("toolu_1", "1 failed", False),
        ("toolu_2", "no such file", True),
    ]
    assert tool_pairs(t.messages) == {"toolu_1": (1, 2), "toolu_2": (1, 2)}
    assert not t.notes.unanswered_tool_uses and not t.notes.orphan_tool_results and not t.notes.skipped
    assert t.messages[0].timestamp is not None and t.messages[0].timestamp.year == 2026


def test_session_usage_and_cost_are_a_warning(tmp_path: Path) -> None:
    t = load(_agent_session(_db(tmp_path)).path)
    assert any("prompt_tokens 5400" in w and "completion_tokens 800" in w and "$0.0421" in w for w in t.notes.warnings)
    assert all(m.usage is None for m in t.messages)


def test_a_call_without_a_result_is_answered_when_the_conversation_goes_on(tmp_path: Path) -> None:
    db = _db(tmp_path).session("s1")
    db.message("s1", "user", [text("Do it.")])
    db.message("s1", "assistant", [call("toolu_1", "bash", {"command": "sleep 100"}), finish("canceled")])
    db.message("s1", "user", [text("Never mind; do something else.")])
    db.message("s1", "assistant", [text("Sure."), call("toolu_2", "bash", {"command": "ls"})])
    t = load(db.path)
    answered = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(b.tool_use_id, b.is_error) for b in answered] == [("toolu_1", True)]
    # The one still open when the session ends stays unanswered.
    assert t.notes.unanswered_tool_uses == ["toolu_2"]
    assert any("toolu_1" in w for w in t.notes.warnings) and any("canceled 1" in w for w in t.notes.warnings)
    # The filled result and the next prompt are one user turn.
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]


def test_a_result_without_its_call_is_counted_not_kept(tmp_path: Path) -> None:
    db = _agent_session(_db(tmp_path))
    db.message("s1", "tool", [result("toolu_x", "stray"), result("toolu_1", "again")])
    t = load(db.path)
    assert t.notes.skipped == {"part:tool_result (unknown call)": 1, "part:tool_result (answered twice)": 1}
    assert t.notes.orphan_tool_results == ["toolu_x", "toolu_1"]
    kept = [b.content for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert kept == ["1 failed", "no such file"]


def test_images_and_attachments(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG" + b"0" * 296).decode()
    note = base64.b64encode(b"notes: keep it short").decode()
    db = _db(tmp_path).session("s1")
    db.message("s1", "user", [text("What is in these?"), {"type": "image_url", "data": {"url": "https://example.com/a.png", "detail": ""}},
                              {"type": "binary", "data": {"Path": "shot.png", "MIMEType": "image/png", "Data": png}},
                              {"type": "binary", "data": {"Path": "notes.txt", "MIMEType": "text/plain", "Data": note}}])
    db.message("s1", "assistant", [text("A screenshot and your notes."), finish()])
    blocks = load(db.path).messages[0].content
    assert isinstance(blocks[1], ImageBlock) and blocks[1].source == "url" and blocks[1].url == "https://example.com/a.png"
    assert isinstance(blocks[2], ImageBlock) and blocks[2].media_type == "image/png" and blocks[2].size_bytes == 300
    assert blocks[3] == TextBlock(text="notes: keep it short")


def test_arguments_that_are_not_json_are_kept_raw(tmp_path: Path) -> None:
    db = _db(tmp_path).session("s1")
    db.message("s1", "user", [text("go")])
    db.message("s1", "assistant", [{"type": "tool_call", "data": {"id": "c1", "name": "bash", "input": '{"command": "ls', "finished": False}}])
    db.message("s1", "tool", [result("c1", "a.py")])
    t = load(db.path)
    use = t.messages[1].content[0]
    assert isinstance(use, ToolUseBlock) and use.input == {"_raw": '{"command": "ls'}
    assert any("not valid JSON" in w for w in t.notes.warnings)


# --- summaries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", ["crush", "opencode_go"])
def test_the_summary_is_a_boundary_a_replay_undoes(tmp_path: Path, schema: str) -> None:
    db = _chat(_chat(_db(tmp_path, schema).session("s1"), "s1", "one"), "s1", "two")
    flag = {"is_summary_message": 1} if schema == "crush" else {}
    db.message("s1", "assistant", [text("Summary: we said one and two."), finish()], mid="sum1", **flag)
    _chat(db, "s1", "three").summarize("s1", "sum1")
    t = load(db.path)
    marker = next(i for i, m in enumerate(t.messages) if m.boundary is not None)
    assert marker == 4
    assert t.messages[marker].boundary is not None and t.messages[marker].boundary.strategy == "crush_summary"
    assert t.messages[marker].boundary.trigger == "import" and t.messages[marker].boundary.messages_removed == 4
    summary = t.messages[marker + 1]
    # Crush sends the summary as a user turn.
    assert summary.role == "user" and summary.tag == "summary" and summary.content == (TextBlock(text="Summary: we said one and two."),)
    undone, found, report = apply_recorded(t, "undo")
    assert [c.strategy for c in found] == ["crush_summary"] and found[0].action == "undone"
    assert "crush_summary" in report[0] and "undone" in report[0]
    assert [m.role for m in undone.messages] == ["user", "assistant"] * 3
    assert all(m.tag is None for m in undone.messages)


def test_a_summary_pointer_to_no_message_is_a_warning(tmp_path: Path) -> None:
    db = _chat(_db(tmp_path).session("s1"), "s1", "one").summarize("s1", "gone")
    t = load(db.path)
    assert not any(m.boundary for m in t.messages) and any("'gone'" in w for w in t.notes.warnings)


# --- sessions ----------------------------------------------------------------------------------------


def _three(tmp_path: Path) -> CrushDb:
    db = _db(tmp_path)
    _chat(db.session("old", T0 - 5000, title="Old work"), "old", "old")
    _chat(db.session("new", T0, title="New work"), "new", "new")
    # A sub-agent's session, updated last: listed, but not the default.
    _chat(db.session("toolu_9", T0 + 50, title="New task", parent_session_id="new"), "toolu_9", "task")
    db.session("empty", T0 + 90, title="Nothing yet")
    return db


def test_the_newest_top_level_session_is_read_with_a_warning(tmp_path: Path) -> None:
    t = load(_three(tmp_path).path)
    assert t.meta.session_id == "new"
    warning = next(w for w in t.notes.warnings if "holds 3 sessions" in w)
    assert "1 of them sub-agents'" in warning and "--session ID" in warning and "old" in warning


def test_a_session_is_picked_by_id(tmp_path: Path) -> None:
    db = _three(tmp_path)
    assert load(db.path, session="old").meta.session_id == "old"
    assert crush.read_db(db.path, session_id="toolu_9").messages[0].content == (TextBlock(text="task?"),)


def test_an_unknown_or_empty_session_is_a_clear_error(tmp_path: Path) -> None:
    db = _three(tmp_path)
    with pytest.raises(TranscriptError, match="no session 'nope'") as err:
        load(db.path, session="nope")
    assert "'new'" in str(err.value)
    with pytest.raises(TranscriptError, match="no messages"):
        load(db.path, session="empty")


def test_sessions_are_listed_newest_first(tmp_path: Path) -> None:
    listed = sessions(_three(tmp_path).path)
    assert [s.id for s in listed] == ["empty", "toolu_9", "new", "old"]
    sub = listed[1]
    assert (sub.title, sub.messages, sub.kind, sub.format) == ("New task", 2, "subagent", "crush")
    assert listed[2].kind is None and listed[2].updated == "2026-01-01T10:00:00+00:00"


def test_only_sub_agent_sessions_read_the_newest_of_them(tmp_path: Path) -> None:
    db = _db(tmp_path)
    _chat(db.session("toolu_1", title="Task", parent_session_id="gone"), "toolu_1", "x")
    assert load(db.path).meta.session_id == "toolu_1"


def test_cli_lists_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _three(tmp_path)
    assert main(["sessions", str(db.path)]) == 0
    out = capsys.readouterr().out
    assert out.index("empty") < out.index("toolu_9") < out.index("old") and "subagent" in out and "4 session(s) (crush)" in out


# --- damage -------------------------------------------------------------------------------------------


def test_damaged_rows_and_unknown_parts_are_skipped_and_counted(tmp_path: Path) -> None:
    db = _db(tmp_path).session("s1")
    db.message("s1", "user", [text("hi"), {"type": "hologram", "data": {"x": 1}}, {"type": "text"}, "loose"])
    db.message("s1", "assistant", "{not json")
    db.message("s1", "assistant", json.dumps({"type": "text"}))
    db.message("s1", "narrator", [text("hmm")])
    db.message("s1", "user", [result("c1", "x")])
    db.message("s1", "assistant", [text("hello"), call("c1", "bash", {})])
    db.message("s1", "tool", [result("c1", "done")])
    t = load(db.path)
    assert t.notes.skipped == {
        "part:hologram": 1,
        "part:damaged (not {type, data})": 2,
        "row:parts (not JSON)": 1,
        "row:parts (not a list of parts)": 1,
        "row:role 'narrator'": 1,
        "part:tool_result (in a user message)": 1,
        "message:user (empty)": 1,
    }
    assert [m.role for m in t.messages] == ["user", "assistant", "user"] and t.notes.records_read == 7


def test_a_session_of_only_damaged_rows_is_a_clear_error(tmp_path: Path) -> None:
    db = _db(tmp_path).session("s1").message("s1", "user", "[").message("s1", "assistant", b"\xff\xfe")
    with pytest.raises(TranscriptError, match="none of its 2 message rows"):
        crush.read_db(db.path)


def test_a_database_without_crush_s_columns_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "x.db"
    with sqlite3.connect(p) as conn:
        conn.execute("CREATE TABLE sessions (id TEXT)")
        conn.execute("CREATE TABLE messages (id TEXT, session_id TEXT, role TEXT)")
    conn.close()
    with pytest.raises(TranscriptError, match="no column messages.parts"):
        crush.read_db(p)


def test_a_database_without_crush_s_tables_says_so(tmp_path: Path) -> None:
    p = tmp_path / "x.db"
    with sqlite3.connect(p) as conn:
        conn.execute("CREATE TABLE sessions (id TEXT)")
    conn.close()
    with pytest.raises(TranscriptError, match="a SQLite database, but not Crush's: no table messages"):
        crush.read_db(p)


# --- detection ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", list(SCHEMAS))
def test_crush_s_database_is_crush_s_not_goose_s(tmp_path: Path, schema: str) -> None:
    db = _agent_session(_db(tmp_path, schema))
    assert crush.sniff(read_file_head(db.path)) == 100
    assert goose_db.sniff(read_file_head(db.path)) < 100
    assert detect(db.path) == "crush"


def test_the_go_opencode_database_is_read_as_crush(tmp_path: Path) -> None:
    db = _agent_session(CrushDb(tmp_path / ".opencode" / "opencode.db", "opencode_go"))
    assert load(db.path).meta.source_format == "crush"
    assert [s.id for s in sessions(db.path)] == ["s1"]


def test_a_goose_database_stays_goose_s(tmp_path: Path) -> None:
    db = GooseDb(tmp_path / "sessions.db")
    db.session("20260101_1", name="goose")
    _conversation(db, "20260101_1", "hi")
    assert crush.sniff(read_file_head(db.path)) == 0
    assert detect(db.path) == "goose_db" and load(db.path).meta.source_format == "goose_db"


def test_an_opencode_database_stays_opencode_s(tmp_path: Path) -> None:
    p = opencode_database(tmp_path / "opencode.db", [opencode_session("ses_1", 1767261600000)])
    assert crush.sniff(read_file_head(p)) == 0
    assert load(p).meta.source_format == "opencode"


def test_other_sqlite_files_are_not_claimed(tmp_path: Path) -> None:
    p = tmp_path / "other.db"
    sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.close()
    assert crush.sniff(read_file_head(p)) == 0
    not_sqlite = tmp_path / "crush.db"
    not_sqlite.write_text("SQLite? no", encoding="utf-8")
    assert crush.sniff(read_file_head(not_sqlite)) == 0


def test_only_crush_claims_the_database_with_full_confidence(tmp_path: Path) -> None:
    ranked = scores(read_file_head(_agent_session(_db(tmp_path)).path))
    assert [n for n, s in ranked.items() if s == 100] == ["crush"] and "crush" in FORMATS


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert crush.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert crush.sniff(read_file_head(path)) == 0


# --- safety ---------------------------------------------------------------------------------------------


def test_reading_leaves_the_file_and_its_folder_untouched(tmp_path: Path) -> None:
    db = _agent_session(_db(tmp_path))
    assert_reads_leave_untouched(db.path, load, sessions, detect)


# --- fuzz seeds -----------------------------------------------------------------------------------------


def read_tables_json(path: Path) -> Transcript:
    """``{"sessions": [row], "messages": [row]}`` written beside ``path`` as a crush.db, then read.

    Strings are stored as they are (damaged JSON stays damaged), other values as JSON text; a column
    the schema does not have is left out.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    db = CrushDb(path.with_name(path.name + ".db"), wal=False)
    tables = doc if isinstance(doc, dict) else {}
    for table in ("sessions", "messages"):
        rows = tables.get(table)
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, dict):
                continue
            cells = {str(k): v if isinstance(v, (str, float)) or v is None or (isinstance(v, int) and abs(v) < 2**63) else json.dumps(v) for k, v in row.items()}
            try:
                db._insert(table, cells)
            except sqlite3.Error:
                # A row Crush's constraints refuse (no id, a negative count) cannot be in its file either.
                continue
    return crush.read_db(db.path)


def table_seeds() -> list[tuple[str, dict[str, Any]]]:
    """Real shapes for the fuzzer: a session with tools, thinking, a summary and a sub-agent."""
    parts = [
        ("user", [text("Run the tests.")]),
        ("assistant", [reasoning("Run them.", "sig"), text("Running."), call("c1", "bash", {"command": "pytest"}), finish("tool_use")]),
        ("tool", [result("c1", "1 failed", is_error=True)]),
        ("assistant", [text("Summary: one test fails."), finish()]),
        ("user", [text("Fix it."), {"type": "image_url", "data": {"url": "data:image/png;base64,AAAA"}}]),
        ("assistant", [text("Fixed."), finish()]),
    ]
    messages = [
        {"id": f"m{i}", "session_id": "s1", "role": role, "parts": json.dumps(p), "created_at": T0 + i, "updated_at": T0 + i,
         "is_summary_message": int(i == 3)}
        for i, (role, p) in enumerate(parts)
    ]
    messages.append({"id": "t1", "session_id": "c1", "role": "user", "parts": json.dumps([text("sub")]), "created_at": T0, "updated_at": T0})
    doc = {
        "sessions": [
            {"id": "s1", "title": "Tests", "updated_at": T0 + 10, "created_at": T0, "prompt_tokens": 10, "completion_tokens": 2, "cost": 0.01, "summary_message_id": "m3"},
            {"id": "c1", "parent_session_id": "s1", "title": "task", "updated_at": T0 + 20, "created_at": T0},
        ],
        "messages": messages,
    }
    return [("crush.tables", doc)]


def test_table_seeds_read(tmp_path: Path) -> None:
    for name, doc in table_seeds():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc), encoding="utf-8")
        t = read_tables_json(p)
        assert t.meta.session_id == "s1" and any(m.boundary for m in t.messages), name
