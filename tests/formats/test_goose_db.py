"""Goose session database: same transcript as the JSONL, session choice, damaged rows, schemas, read-only, CLI, detection.

The databases are built in ``tmp_path`` with the CREATE TABLE statements of block/goose
(``crates/goose/src/session/session_manager.rs`` ``create_schema``, schema v9 with
``message_id``, ``provider_name``, ``model_config_json``; ``migrations.rs`` up to v13 adds
``accumulated_cost``) and, for the oldest schema, those statements without what
migrations 2-5 added (no ``schema_version``, ``name``, ``session_type``, ``metadata_json``).
Rows are written as Goose's ``add_message`` writes them: ``content_json`` and
``metadata_json`` are the message's ``content`` and ``metadata`` serialised.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.cli.main import main
from lab.core.messages import ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats import FORMATS, detect, load
from lab.formats.databases import goose_db
from lab.formats.jsonio import read_file_head
from lab.formats.detect import scores
from tests.formats.test_wrong_format import _forced_results
from tests.formats.readonly import assert_reads_leave_untouched, file_digest

FIXTURES = Path(__file__).parent / "fixtures" / "goose"
JSONL = FIXTURES / "20260101_100000.jsonl"

_SESSIONS_CURRENT = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE,
    session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER,
    input_tokens INTEGER,
    output_tokens INTEGER,
    accumulated_total_tokens INTEGER,
    accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER,
    schedule_id TEXT,
    recipe_json TEXT,
    user_recipe_values_json TEXT,
    provider_name TEXT,
    model_config_json TEXT,
    accumulated_cost REAL
)"""
_MESSAGES_CURRENT = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content_json TEXT NOT NULL,
    created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tokens INTEGER,
    metadata_json TEXT
)"""
# Before migrations 2-5 (user_recipe_values_json, metadata_json, name/user_set_name, session_type).
_SESSIONS_V0 = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER,
    input_tokens INTEGER,
    output_tokens INTEGER,
    accumulated_total_tokens INTEGER,
    accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER,
    schedule_id TEXT,
    recipe_json TEXT
)"""
_MESSAGES_V0 = """
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content_json TEXT NOT NULL,
    created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tokens INTEGER
)"""
_INDEXES = (
    "CREATE INDEX idx_messages_session ON messages(session_id)",
    "CREATE INDEX idx_messages_timestamp ON messages(timestamp)",
    "CREATE INDEX idx_sessions_updated ON sessions(updated_at DESC)",
)
SCHEMAS = {"current": (_SESSIONS_CURRENT, _MESSAGES_CURRENT, 13), "v0": (_SESSIONS_V0, _MESSAGES_V0, None)}


class GooseDb:
    """A Goose sessions.db in a tmp folder, written as Goose writes it."""

    def __init__(self, path: Path, schema: str = "current", *, wal: bool = True) -> None:
        self.path = path
        self.schema = schema
        sessions, messages, version = SCHEMAS[schema]
        with sqlite3.connect(path) as conn:
            if wal:
                conn.execute("PRAGMA journal_mode=WAL")  # what Goose's pool sets
            if version is not None:
                conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)")
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
            conn.execute(sessions)
            conn.execute(messages)
            for sql in _INDEXES:
                conn.execute(sql)
        conn.close()

    def _columns(self, conn: sqlite3.Connection, table: str) -> set[str]:
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}

    def session(self, sid: str, updated_at: str = "2026-01-01 10:00:00", **fields: Any) -> GooseDb:
        row = {"id": sid, "working_dir": "/home/dev", "updated_at": updated_at, "created_at": updated_at, **fields}
        with sqlite3.connect(self.path) as conn:
            row = {k: v for k, v in row.items() if k in self._columns(conn, "sessions")}
            conn.execute(f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        conn.close()
        return self

    def message(self, sid: str, msg: dict[str, Any], *, content_json: Any = None, **raw: Any) -> GooseDb:
        row = {
            "session_id": sid,
            "message_id": msg.get("id"),
            "role": msg["role"],
            "content_json": json.dumps(msg["content"]) if content_json is None else content_json,
            "created_timestamp": msg["created"],
            "metadata_json": json.dumps(msg.get("metadata", {"userVisible": True, "agentVisible": True})),
            **raw,
        }
        with sqlite3.connect(self.path) as conn:
            row = {k: v for k, v in row.items() if k in self._columns(conn, "messages")}
            conn.execute(f"INSERT INTO messages ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        conn.close()
        return self


def _fixture() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(x) for x in JSONL.read_text(encoding="utf-8").splitlines() if x.strip()]
    return lines[0], lines[1:]


def _from_fixture(tmp_path: Path, schema: str = "current", sid: str = "20260101_1", **session: Any) -> tuple[GooseDb, Path]:
    """The fixture session as a database, and the same session as a JSONL (ids as the database gives them)."""
    meta, msgs = _fixture()
    db = GooseDb(tmp_path / "sessions.db", schema)
    # Goose's ids: message_id (schema v7), before it the message's place in the session.
    with_ids = [{**m, "id": f"msg_{sid}_{i}"} for i, m in enumerate(msgs)]
    # Goose writes the title to name (schema v4); before it, description held it.
    title = {"name": meta["description"], "description": ""} if schema == "current" else {"description": meta["description"]}
    db.session(sid, **title, **{k: v for k, v in meta.items() if k != "description"}, **session)
    for m in with_ids:
        db.message(sid, m)
    twin = tmp_path / f"{sid}.jsonl"
    twin.write_text("".join(json.dumps(r) + "\n" for r in [meta, *with_ids]), encoding="utf-8")
    return db, twin


def _m(role: str, text: str, created: int = 1767261600) -> dict[str, Any]:
    return {"role": role, "created": created, "content": [{"type": "text", "text": text}]}


def _conversation(db: GooseDb, sid: str, words: str) -> None:
    db.message(sid, _m("user", f"{words}?")).message(sid, _m("assistant", f"{words}."))


# --- the same transcript as the session JSONL -------------------------------------------------------


@pytest.mark.parametrize("schema", list(SCHEMAS))
def test_a_session_reads_as_its_jsonl_reads(tmp_path: Path, schema: str) -> None:
    db, twin = _from_fixture(tmp_path, schema)
    t, j = load(db.path), load(twin)
    assert t.meta.source_format == "goose_db" and detect(db.path) == "goose_db"
    assert t.messages == j.messages
    # The JSONL's metadata line is one record more.
    assert t.notes.skipped == j.notes.skipped and t.notes.records_read == j.notes.records_read - 1
    assert t.notes.warnings == j.notes.warnings
    assert (t.meta.session_id, t.meta.title, t.meta.cwd) == ("20260101_1", "Fix add in calc", "/home/dev/calc")
    # Goose records tokens per session: the last request's usage is on the last reply.
    assert [m.usage for m in t.messages if m.role == "assistant"][-1] == Usage(input_tokens=2200, output_tokens=110)


def test_a_goose_database_named_like_opencode_s_is_read_as_goose_s(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path)
    named = db.path.rename(tmp_path / "opencode.db")
    t = load(named)
    assert t.meta.source_format == "goose_db" and t.messages == goose_db.read_db(named).messages


def test_tool_pairs_stay_intact(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path)
    t = goose_db.read_db(db.path)
    pairs = tool_pairs(t.messages)
    assert set(pairs) == {"toolu_01", "toolu_02", "toolu_03"}
    assert all(u is not None and r == u + 1 for u, r in pairs.values())
    assert t.notes.orphan_tool_results == [] and t.notes.unanswered_tool_uses == []
    uses = [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
    results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert len(uses) == len(results) == 3


def test_rows_are_read_in_goose_s_order_not_by_created(tmp_path: Path) -> None:
    # Goose replays by insert time; a message's own ``created`` may run backwards (clock changes).
    db = GooseDb(tmp_path / "sessions.db").session("s")
    db.message("s", _m("user", "first", created=1767261700), timestamp="2026-01-01 10:00:00")
    db.message("s", _m("assistant", "second", created=1767261600), timestamp="2026-01-01 10:00:00")
    db.message("s", _m("user", "third", created=1767261500), timestamp="2026-01-01 10:00:01")
    db.message("s", _m("assistant", "fourth", created=1767261400), timestamp="2026-01-01 10:00:01")
    t = goose_db.read_db(db.path)
    assert [m.content[0].text for m in t.messages] == ["first", "second", "third", "fourth"]  # type: ignore[union-attr]


def test_the_model_and_the_session_cost(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path, provider_name="anthropic", model_config_json=json.dumps({"model_name": "claude-sonnet-4"}), accumulated_cost=0.0421)
    t = goose_db.read_db(db.path)
    assert t.meta.model == "anthropic/claude-sonnet-4"
    assert any("$0.0421" in w and "accumulated_cost" in w for w in t.notes.warnings)


# --- which session --------------------------------------------------------------------------------


def _three(tmp_path: Path) -> GooseDb:
    db = GooseDb(tmp_path / "sessions.db")
    db.session("20260101_1", "2026-01-01 09:00:00", name="old one")
    db.session("20260102_1", "2026-01-02 09:00:00", name="newest user session")
    # Newer still, but Goose's own list hides sub-agent sessions: not the default.
    db.session("20260102_2", "2026-01-02 10:00:00", name="subagent", session_type="sub_agent")
    db.session("20260103_1", "2026-01-03 09:00:00", name="empty")
    _conversation(db, "20260101_1", "old")
    _conversation(db, "20260102_1", "new")
    _conversation(db, "20260102_2", "sub")
    return db


def test_several_sessions_read_the_newest_with_a_warning(tmp_path: Path) -> None:
    t = goose_db.read_db(_three(tmp_path).path)
    assert t.meta.session_id == "20260102_1" and t.meta.title == "newest user session"
    warning = next(w for w in t.notes.warnings if "sessions with messages" in w)
    assert "holds 3 sessions" in warning and "read_db(path, session_id=...)" in warning and "list_sessions(path)" in warning


def test_session_id_picks_another(tmp_path: Path) -> None:
    db = _three(tmp_path)
    t = goose_db.read_db(db.path, session_id="20260101_1")
    assert t.meta.session_id == "20260101_1" and "old?" in t.messages[0].content[0].text  # type: ignore[union-attr]
    assert not any("sessions with messages" in w for w in t.notes.warnings)
    assert goose_db.read_db(db.path, session_id="20260102_2").meta.title == "subagent"


def test_an_unknown_or_empty_session_is_a_clear_error(tmp_path: Path) -> None:
    db = _three(tmp_path)
    with pytest.raises(TranscriptError, match=r"no session 'nope'.*20260103_1.*list_sessions"):
        goose_db.read_db(db.path, session_id="nope")
    with pytest.raises(TranscriptError, match="'20260103_1' has no messages"):
        goose_db.read_db(db.path, session_id="20260103_1")


def test_list_sessions_newest_first(tmp_path: Path) -> None:
    listed = goose_db.list_sessions(_three(tmp_path).path)
    # One SessionInfo for every store (lab.formats.databases.sqlite_store): a user session has no kind.
    assert [(s.id, s.title, s.messages, s.kind, s.format) for s in listed] == [
        ("20260103_1", "empty", 0, None, "goose_db"),
        ("20260102_2", "subagent", 2, "sub_agent", "goose_db"),
        ("20260102_1", "newest user session", 2, None, "goose_db"),
        ("20260101_1", "old one", 2, None, "goose_db"),
    ]
    assert listed[0].updated == "2026-01-03T09:00:00+00:00"


def test_update_times_in_both_of_goose_s_formats_compare_as_times(tmp_path: Path) -> None:
    # datetime('now') text, and the RFC 3339 a legacy session imported with sqlx carries.
    db = GooseDb(tmp_path / "sessions.db")
    db.session("a", "2026-01-02T08:00:00+00:00").session("b", "2026-01-02 07:00:00")
    _conversation(db, "a", "rfc")
    _conversation(db, "b", "sqlite")
    assert goose_db.read_db(db.path).meta.session_id == "a"


def test_a_database_without_a_conversation_is_a_clear_error(tmp_path: Path) -> None:
    db = GooseDb(tmp_path / "sessions.db").session("only")
    with pytest.raises(TranscriptError, match="none with messages"):
        load(db.path)


# --- damaged rows ---------------------------------------------------------------------------------


def test_corrupt_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    db = GooseDb(tmp_path / "sessions.db").session("s")
    db.message("s", _m("user", "hello"))
    db.message("s", _m("assistant", "x"), content_json="[{not json")
    db.message("s", _m("assistant", "x"), content_json='{"type": "text", "text": "an object, not a list"}')
    db.message("s", _m("system", "a role Goose skips too"))
    db.message("s", _m("assistant", "x"), created_timestamp="yesterday")
    db.message("s", {"role": "assistant", "created": 1767261601, "content": [{"type": "hologram"}, {"type": "text", "text": "hi"}]})
    db.message("s", _m("user", "bad metadata"), metadata_json="{oops")
    t = goose_db.read_db(db.path)
    s = t.notes.skipped
    assert s["row:content_json (not JSON)"] == 1 and s["row:content_json (not a list of content items)"] == 1
    assert s["row:role 'system'"] == 1 and s["row:created_timestamp (not an integer)"] == 1
    assert s["content:hologram (unknown type)"] == 1
    assert [m.role for m in t.messages] == ["user", "assistant", "user"]
    assert any("metadata_json that is not JSON" in w for w in t.notes.warnings)


def test_a_session_of_only_corrupt_rows_is_a_clear_error(tmp_path: Path) -> None:
    db = GooseDb(tmp_path / "sessions.db").session("s")
    db.message("s", _m("user", "x"), content_json="nope")
    with pytest.raises(TranscriptError, match=r"none of its 1 message rows could be read \(row:content_json \(not JSON\) 1\)"):
        goose_db.read_db(db.path)


_CONTENT = st.one_of(
    st.text(max_size=20),
    st.just("[]"),
    st.just('[{"type": "text", "text": "ok"}]'),
    st.just('[{"type": "toolRequest", "id": "t1", "toolCall": {"status": "success", "value": {"name": "shell", "arguments": {}}}}]'),
    st.just('[{"type": "toolResponse", "id": "t1", "toolResult": {"status": "success", "value": []}}]'),
    st.just('[{"type": "toolRequest", "id": "t2", "toolCall": {"status": "weird"}}]'),
    st.just("null"),
    st.just('[1, "two", null]'),
)
_ROWS = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "tool", ""]), _CONTENT, st.one_of(st.integers(0, 2**40), st.text(max_size=4), st.none())),
    max_size=8,
)


@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_ROWS)
def test_any_rows_give_a_transcript_or_a_clear_error(tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str, Any]]) -> None:
    db = GooseDb(tmp_path_factory.mktemp("fuzz") / "sessions.db", wal=False).session("s")
    with sqlite3.connect(db.path) as conn:
        conn.executemany(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp) VALUES ('s', ?, ?, ?)",
            [(role, content, created if created is not None else 0) for role, content, created in rows],
        )
    conn.close()
    try:
        t = goose_db.read_db(db.path)
    except TranscriptError as exc:
        assert exc.reason and "could not import" not in str(exc)
        return
    assert isinstance(t, Transcript) and t.notes.records_read >= len(t.messages) - 1


# --- schemas and other files ----------------------------------------------------------------------


def test_a_missing_table_or_column_is_a_clear_error(tmp_path: Path) -> None:
    no_messages = tmp_path / "a.db"
    with sqlite3.connect(no_messages) as conn:
        conn.execute(_SESSIONS_CURRENT)
    conn.close()
    with pytest.raises(TranscriptError, match="not Goose's session database: no table messages"):
        goose_db.read_db(no_messages)
    # load() of it says the same: a SQLite file is still claimed, weakly, so its error is the answer.
    with pytest.raises(TranscriptError, match="no table messages"):
        load(no_messages)
    odd = tmp_path / "b.db"
    with sqlite3.connect(odd) as conn:
        conn.execute(_SESSIONS_CURRENT)
        conn.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, body TEXT, created_timestamp INTEGER)")
    conn.close()
    with pytest.raises(TranscriptError, match=r"unknown schema: no column messages\.content_json"):
        load(odd)


def test_a_newer_schema_is_read_with_a_warning(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path)
    with sqlite3.connect(db.path) as conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (14)")
        conn.execute("ALTER TABLE messages ADD COLUMN something_new TEXT")
    conn.close()
    t = goose_db.read_db(db.path)
    assert len(t.messages) == 6 and any("schema v14 is newer" in w for w in t.notes.warnings)


@pytest.mark.parametrize(
    "content",
    [b"SQLite format 3\x00" + os.urandom(200), os.urandom(512), b"\x00\xff" * 100],
    ids=["sqlite-header-then-garbage", "random-bytes", "binary"],
)
def test_binary_files_are_refused_clearly(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "blob.db"
    p.write_bytes(content)
    with pytest.raises(TranscriptError) as err:
        load(p)
    assert err.value.reason and "could not import" not in str(err.value)
    with pytest.raises(TranscriptError):
        goose_db.read_db(p)


def test_only_goose_db_claims_the_database(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path)
    claimed = {n: s for n, s in scores(read_file_head(db.path)).items() if s}
    assert claimed == {"goose_db": 100}


def test_every_other_format_forced_on_the_database_fails_clearly(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path)
    assert _forced_results(db.path) == []


def test_goose_db_forced_on_a_jsonl_fails_clearly() -> None:
    with pytest.raises(TranscriptError, match="not a SQLite database"):
        load(JSONL, format="goose_db")
    assert "goose_db" in FORMATS


# --- read-only ------------------------------------------------------------------------------------


def test_reading_leaves_the_file_and_its_folder_untouched(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path)
    assert_reads_leave_untouched(db.path, load, goose_db.list_sessions, detect)


def test_a_database_goose_is_writing_reads_what_it_committed(tmp_path: Path) -> None:
    db, _ = _from_fixture(tmp_path)
    writer = sqlite3.connect(db.path)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")  # the new rows stay in the -wal file, as while Goose runs
        writer.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) VALUES (?, ?, ?, ?, ?)",
            ("20260101_1", "user", json.dumps([{"type": "text", "text": "one more thing"}]), 1767261700, "{}"),
        )
        writer.commit()
        assert (tmp_path / "sessions.db-wal").exists()
        before = file_digest(db.path)
        t = goose_db.read_db(db.path)
        assert t.messages[-1].content[-1].text == "one more thing"  # type: ignore[union-attr]
        assert file_digest(db.path) == before
        # The read holds no lock: Goose can go on writing.
        writer.execute("UPDATE sessions SET updated_at = datetime('now')")
        writer.commit()
    finally:
        writer.close()


# --- the command line -----------------------------------------------------------------------------


def test_cli_import_and_export_to_anthropic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, _ = _from_fixture(tmp_path)
    assert main(["import", str(db.path), "--out", str(tmp_path / "s.lab.json")]) == 0
    assert "as goose_db" in capsys.readouterr().out
    out = tmp_path / "request.json"
    assert main(["export", str(db.path), "--to", "anthropic", "--out", str(out)]) == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    kinds = [b["type"] for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
    assert kinds.count("tool_use") == kinds.count("tool_result") == 3


def test_cli_error_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "other.db"
    with sqlite3.connect(p) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
    conn.close()
    assert main(["import", str(p), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "no table sessions or messages" in err[0]
