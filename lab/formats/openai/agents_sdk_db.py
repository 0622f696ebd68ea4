"""OpenAI Agents SDK session databases: what ``SQLiteSession(session_id, "file.db")`` keeps.

The SDK stores each session's conversation as Responses input items, one JSON
text per row of ``agent_messages`` (``session_id``, ``message_data``, in
``id`` order), beside ``agent_sessions`` (``session_id``, ``created_at``,
``updated_at``). Those are the table names the SDK uses unless told others.
The file is opened read-only (``sqlite_store``). Each item is mapped as a
Responses item (``openai_responses.add_item``): messages, reasoning, function
calls and their outputs. A row that is no JSON object is skipped and counted.

One database holds many sessions: without an id the most recently updated
session is read, with a warning naming the others (``session_choice``); its
rows are the ``agent_messages`` of that ``session_id``.

Detection: 100 for a SQLite file holding both tables with those columns.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ...core.messages import ImportNotes, Transcript, TranscriptMeta
from ...errors import TranscriptError
from .. import session_pick
from ..history_builder import HistoryBuilder, Loc
from ..jsonio import check_file
from .openai_chat import add_responses_item as add_item
from ..registry import Format, SessionInfo
from ..databases.sqlite_store import SqliteStore, has_columns, schema_sniff, select

__all__ = ["FORMAT", "NAME", "STORE", "list_sessions", "read_db", "sniff"]

NAME = "agents_sdk_db"
_WHAT = "the Agents SDK session database"
_EXPECTED = "an OpenAI Agents SDK SQLiteSession database (agent_sessions, agent_messages)"
_REQUIRED = {"agent_sessions": ("session_id", "updated_at"), "agent_messages": ("id", "session_id", "message_data")}


def _rows(conn: Any) -> list[dict[str, Any]]:
    """Every session with its message count, newest update first (ties: the later row)."""
    sql = (
        "SELECT s.session_id, s.created_at, s.updated_at, COUNT(m.id) FROM agent_sessions s "
        "LEFT JOIN agent_messages m ON m.session_id = s.session_id GROUP BY s.session_id ORDER BY s.updated_at DESC, s.rowid DESC"
    )
    return [{"id": str(r[0]), "created_at": r[1], "updated_at": r[2], "count": int(r[3])} for r in select(conn, sql) if r[0] is not None]


def _sessions(conn: sqlite3.Connection, path: Path) -> list[SessionInfo]:
    return [SessionInfo(id=r["id"], title=None, messages=r["count"], updated=session_pick.iso_time(r["updated_at"]), format=NAME) for r in _rows(conn)]


def list_sessions(path: str | Path) -> list[SessionInfo]:
    """The sessions of the database, newest first."""
    return STORE.list_sessions(path)


def read_db(path: str | Path, session_id: str | None = None) -> Transcript:
    """One session of the database: ``session_id``, else the most recently updated one with messages."""
    p = check_file(path)
    file = str(p)
    notes = ImportNotes()
    with STORE.connect(p) as conn:
        if not has_columns(conn, _REQUIRED):
            raise TranscriptError("no agent_sessions / agent_messages tables with the SDK's columns", file=file, expected=_EXPECTED)
        sessions = _rows(conn)
        candidates = [session_pick.Candidate(id=s["id"], messages=s["count"]) for s in sessions]
        at = session_pick.pick_session(
            candidates, session_id, file=file, store="Agents SDK session database", noun="Agents SDK session", module=NAME, notes=notes
        )
        chosen = sessions[at]
        rows = list(select(conn, "SELECT id, message_data FROM agent_messages WHERE session_id = ? ORDER BY id", (chosen["id"],)))
    b = HistoryBuilder(notes)
    for n, (row_id, data) in enumerate(rows):
        loc = Loc(file, f"agent_messages[id={row_id}].message_data")
        try:
            item = json.loads(data) if isinstance(data, (str, bytes)) else None
        except ValueError:
            item = None
        if not isinstance(item, dict):
            notes.skip("row:not a JSON object")
            continue
        add_item(b, item, loc, f"r{n}")
    notes.records_read = len(rows)
    messages = b.finish()
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(f"Agents SDK session {chosen['id']!r}: {len(rows)} rows but no message among them", file=file, expected="Responses items")
    meta = TranscriptMeta(source_format=NAME, source_path=file, session_id=chosen["id"], title="OpenAI Agents SDK session")
    return Transcript(meta=meta, messages=messages, notes=notes)


sniff = schema_sniff(_REQUIRED)


STORE = SqliteStore(format=NAME, what="an Agents SDK session database", expected=_EXPECTED, rows=_sessions, read=read_db, label=_WHAT)


FORMAT = Format(
    name=NAME,
    description="OpenAI Agents SDK SQLiteSession database (agent_sessions, agent_messages; the newest session, or one by id)",
    sniff=sniff,
    read=read_db,
    sessions=STORE.source(),
    kinds=frozenset({"sqlite"}),
    # More specific: goose_db claims any SQLite file, as a guess.
    more_specific_than=("goose_db",),
)
