"""OpenAI Agents SDK session databases (``lab.formats.openai.agents_sdk_db``), built with the tables ``SQLiteSession`` creates."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import ToolResultBlock, ToolUseBlock, message_text
from lab.errors import TranscriptError
from lab.formats.openai import agents_sdk_db
from lab.formats import detect, load, sessions

# As agents/memory/sqlite_session.py creates them.
_SCHEMA = """
CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message_data TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE);
"""
_ITEMS: list[Any] = [
    {"role": "user", "content": "What's the weather in Tokyo?"},
    {"id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}", "type": "function_call", "status": "completed"},
    {"call_id": "call_1", "output": "Rainy, 18C", "type": "function_call_output"},
    {"id": "msg_1", "role": "assistant", "status": "completed", "type": "message",
     "content": [{"annotations": [], "text": "It is rainy and 18C in Tokyo.", "type": "output_text"}]},
]


def _db(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(_SCHEMA)
        conn.execute("INSERT INTO agent_sessions VALUES ('older', '2026-01-01 09:00:00', '2026-01-01 09:05:00')")
        conn.execute("INSERT INTO agent_sessions VALUES ('user_42', '2026-01-02 09:00:00', '2026-01-02 09:10:00')")
        conn.execute("INSERT INTO agent_sessions VALUES ('empty', '2026-01-03 09:00:00', '2026-01-03 09:00:00')")
        for item in _ITEMS:
            conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('user_42', ?)", (json.dumps(item),))
        conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('user_42', 'not json')")
        for item in ({"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}):
            conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('older', ?)", (json.dumps(item),))
    conn.close()
    return path


def test_detected_and_listed_newest_first(tmp_path: Path) -> None:
    db = _db(tmp_path)
    assert detect(db) == "agents_sdk_db"
    assert [(s.id, s.messages) for s in sessions(db)] == [("empty", 0), ("user_42", 5), ("older", 2)]


def test_the_newest_session_with_messages_is_read_as_responses_items(tmp_path: Path) -> None:
    t = load(_db(tmp_path))
    assert t.meta.session_id == "user_42" and [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    use, result = t.messages[1].content[0], t.messages[2].content[0]
    assert isinstance(use, ToolUseBlock) and use.input == {"city": "Tokyo"}
    assert isinstance(result, ToolResultBlock) and result.content == "Rainy, 18C"
    assert t.notes.skipped == {"row:not a JSON object": 1}
    assert any("holds 2 sessions with messages" in w and "older (2 messages)" in w for w in t.notes.warnings)


def test_by_id_and_unknown_ids(tmp_path: Path) -> None:
    db = _db(tmp_path)
    assert message_text(load(db, session="older").messages[0]) == "hello"
    with pytest.raises(TranscriptError, match="no session 'nope'"):
        load(db, session="nope")
    with pytest.raises(TranscriptError, match="has no messages"):
        load(db, session="empty")


def test_the_file_is_never_written(tmp_path: Path) -> None:
    db = _db(tmp_path)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    load(db)
    sessions(db)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before and sorted(p.name for p in tmp_path.iterdir()) == ["conversations.db"]


def test_another_sqlite_file_is_not_claimed(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE agent_messages (id INTEGER, body TEXT)")
    conn.close()
    from lab.formats.jsonio import read_file_head

    assert agents_sdk_db.sniff(read_file_head(path)) == 0
