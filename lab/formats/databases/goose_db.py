"""Goose's session database (block/goose): ``~/.local/share/goose/sessions/sessions.db``.

Current Goose keeps every session in one SQLite file
(``crates/goose/src/session/session_manager.rs``; migrations in
``session/migrations.rs``). The two tables this reader needs:

* ``sessions``: ``id`` (``YYYYMMDD_N``), ``name`` (schema v4; before it
  ``description`` held the title), ``working_dir``, ``created_at`` /
  ``updated_at`` (SQLite ``datetime('now')`` text), ``session_type``
  (v5: ``user``, ``scheduled``, ``sub_agent``, ``hidden``, ...), the token
  columns ``total_tokens``, ``input_tokens``, ``output_tokens`` and their
  ``accumulated_*`` totals, ``schedule_id``, ``recipe_json``,
  ``provider_name`` and ``model_config_json`` (v6), ``accumulated_cost``
  (v13);
* ``messages``: ``id`` (autoincrement), ``message_id`` (v7), ``session_id``,
  ``role``, ``content_json`` (the message's content items, as the JSONL
  holds them), ``created_timestamp`` (epoch seconds), ``timestamp`` (insert
  time) and ``metadata_json`` (v3: ``{userVisible, agentVisible}``).

Goose replays a session as ``ORDER BY timestamp`` over its rows (ties in
insert order); this reader does the same (``timestamp, rowid``). Each row
becomes the message dict of the session JSONL and goes through
``goose.from_records``: one mapping of Goose content for every Goose file.

* Schemas: versions 0 (no ``schema_version`` table) to 13 are read by
  column name; optional columns may be missing. A newer version is read the
  same way, with a warning. No ``sessions`` / ``messages`` table, or one
  without the columns above, is a ``TranscriptError`` naming what is
  missing.
* Rows: content that is not JSON, not a list of content items, a role other
  than user/assistant (Goose skips those too) or a non-integer
  ``created_timestamp`` skips the row, counted in ``notes.skipped`` as
  ``row:<why>``. Corrupt ``metadata_json`` is taken as visible, as Goose
  does, with a warning.
* Sessions: ``read_db(path, session_id=None)`` reads one session; without
  an id, the most recently updated session with messages among those
  Goose's own list shows (``user``, ``scheduled``; any, when none is), with
  a warning naming how many the file holds and how to pick another.
  ``list_sessions(path)`` lists them all, newest first. The same through
  ``lab.formats``: ``sessions(path)`` and ``load(path, session=ID)``
  (``session_choice``), and ``--session ID`` / ``python -m lab sessions``.
* Usage: the session's token columns, as ``goose`` reads the JSONL
  metadata line; ``accumulated_cost`` is reported in a warning.

Safety: the file is opened through a ``file:...?mode=ro`` URI, so SQLite
itself refuses any write, and only SELECTs are ever run. With no ``-wal`` or
``-journal`` file beside it (nobody is writing) it is also opened
``immutable``: no locks are taken and no ``-wal``/``-shm`` files are left
behind, which a read-only open of a WAL database otherwise creates and
cannot remove. While Goose writes (a ``-wal`` file exists) the read goes
through SQLite's locks and sees the committed rows.

Detection: 100 for a file starting with the SQLite header whose
``sessions`` and ``messages`` tables have the columns read above; 40 for
any other SQLite file, so that reading it says what is missing instead of
"unknown format". Crush's (and the Go OpenCode's) database has tables of
the same names, but its ``messages`` holds ``parts`` and no
``content_json``: 40, so ``crush`` reads it.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.messages import ImportNotes, Transcript
from ...errors import TranscriptError
from . import goose
from .. import session_pick
from ..history_builder import Loc
from ..jsonio import check_file, gc_paused
from ..registry import REQUEST_BODIES, FileHead, Format, SessionInfo
from .sqlite_store import SQLITE_HEADER, SqliteStore, has_columns, is_sqlite, require_tables, score_database, select, session_rows

__all__ = ["FORMAT", "NAME", "SQLITE_HEADER", "KNOWN_SCHEMA_VERSION", "STORE", "is_sqlite", "list_sessions", "read_db", "sniff"]

NAME = "goose_db"
# The newest schema version found in block/goose (session/migrations.rs).
KNOWN_SCHEMA_VERSION = 13

_REQUIRED: dict[str, tuple[str, ...]] = {
    "sessions": ("id",),
    "messages": ("session_id", "role", "content_json", "created_timestamp"),
}
# Read when present: older schemas lack some of them.
_SESSION_COLUMNS = (
    "name", "description", "working_dir", "created_at", "updated_at", "session_type", "schedule_id",
    "total_tokens", "input_tokens", "output_tokens",
    "accumulated_total_tokens", "accumulated_input_tokens", "accumulated_output_tokens",
    "provider_name", "model_config_json", "accumulated_cost",
)  # fmt: skip
_MESSAGE_COLUMNS = ("message_id", "metadata_json", "timestamp")
# The session types Goose's own session list shows (list_sessions); the rest are its internals.
_LISTED = ("user", "scheduled")
_EXPECTED = "Goose's sessions.db (tables sessions and messages)"




@dataclass(frozen=True)
class _Schema:
    session_columns: tuple[str, ...]
    message_columns: tuple[str, ...]
    version: int | None


def _schema(conn: sqlite3.Connection, file: str) -> _Schema:
    tables, columns = require_tables(conn, _REQUIRED, file=file, expected=_EXPECTED, not_ours="Goose's session database",
                                     unknown="a Goose session database")
    version = None
    if "schema_version" in tables:
        row = select(conn, "SELECT MAX(version) FROM schema_version").fetchone()
        version = row[0] if row and isinstance(row[0], int) else None
    return _Schema(
        session_columns=tuple(c for c in _SESSION_COLUMNS if c in columns["sessions"]),
        message_columns=tuple(c for c in _MESSAGE_COLUMNS if c in columns["messages"]),
        version=version,
    )


def _name(rec: dict[str, Any]) -> str | None:
    """A session's title: its name, else its description."""
    return _text(rec, "name") or _text(rec, "description")


def _text(rec: dict[str, Any], key: str) -> str | None:
    value = rec.get(key)
    return str(value) if value not in (None, "") else None


def _sessions(conn: sqlite3.Connection, path: Path) -> list[SessionInfo]:
    # Goose's sessions, every one (an empty one too: reading it then says it has no messages), newest first.
    out = []
    for r in session_rows(conn, _schema(conn, str(path)).session_columns):
        kind = _text(r, "session_type")
        out.append(SessionInfo(
            id=r["id"], title=_name(r), messages=int(r["_count"]), updated=session_pick.iso_time(_text(r, "updated_at")), format=NAME,
            kind=kind if kind not in (None, "user") else None,
        ))  # fmt: skip
    return out


def list_sessions(path: str | Path) -> list[SessionInfo]:
    """The sessions of a Goose database, most recently updated first (those without messages too)."""
    return STORE.list_sessions(path)


def _choose(sessions: list[dict[str, Any]], session_id: str | None, file: str, notes: ImportNotes) -> dict[str, Any]:
    candidates = [
        session_pick.Candidate(r["id"], int(r["_count"]), _name(r) or "unnamed", listed=r.get("session_type", "user") in _LISTED) for r in sessions
    ]
    return sessions[session_pick.pick_session(candidates, session_id, file=file, store="Goose database", noun="Goose session", module=NAME, notes=notes)]


def _header(rec: dict[str, Any], notes: ImportNotes) -> dict[str, Any]:
    """The session row as the JSONL metadata line / export document ``goose`` reads."""
    header = {k: v for k, v in rec.items() if not k.startswith("_") and k not in ("model_config_json", "accumulated_cost")}
    raw = rec.get("model_config_json")
    if isinstance(raw, str) and raw:
        try:
            header["model_config"] = json.loads(raw)
        except (ValueError, RecursionError):
            notes.warnings.append("sessions.model_config_json is not JSON; the model is unknown")
    cost = rec.get("accumulated_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0:
        notes.warnings.append(f"Goose recorded a cost of ${cost:.4f} for the whole session (accumulated_cost), not per request")
    return header


def _records(conn: sqlite3.Connection, schema: _Schema, session_id: str, file: str, notes: ImportNotes) -> list[tuple[Any, Loc]]:
    cols = "".join(f', "{c}"' for c in schema.message_columns)
    order = '"timestamp", rowid' if "timestamp" in schema.message_columns else "rowid"
    sql = f'SELECT rowid, role, content_json, created_timestamp{cols} FROM messages WHERE session_id = ? ORDER BY {order}'
    out: list[tuple[Any, Loc]] = []
    bad_metadata = 0
    for n, row in enumerate(select(conn, sql, (session_id,))):
        rec = dict(zip(("rowid", "role", "content_json", "created_timestamp", *schema.message_columns), row, strict=True))
        notes.records_read += 1
        loc = Loc(file, f"messages[rowid={rec['rowid']}]")
        if rec["role"] not in ("user", "assistant"):
            notes.skip(f"row:role {str(rec['role'])[:40]!r}")
            continue
        try:
            content = json.loads(rec["content_json"]) if isinstance(rec["content_json"], (str, bytes)) else None
        except (ValueError, RecursionError):
            notes.skip("row:content_json (not JSON)")
            continue
        if not isinstance(content, list):
            notes.skip("row:content_json (not a list of content items)")
            continue
        metadata: Any = None
        raw_meta = rec.get("metadata_json")
        if isinstance(raw_meta, (str, bytes)) and raw_meta:
            try:
                metadata = json.loads(raw_meta)
            except (ValueError, RecursionError):
                bad_metadata += 1
        msg: dict[str, Any] = {"role": rec["role"], "created": rec["created_timestamp"], "content": content}
        # Before message_id (schema v7) Goose named a message by its place in the session, as here.
        msg["id"] = rec["message_id"] if isinstance(rec.get("message_id"), str) and rec["message_id"] else f"msg_{session_id}_{n}"
        if isinstance(metadata, dict):
            msg["metadata"] = metadata
        if not goose.is_message(msg):
            notes.skip("row:created_timestamp (not an integer)")
            continue
        out.append((msg, loc))
    if bad_metadata:
        notes.warnings.append(f"{bad_metadata} message row(s) with metadata_json that is not JSON: taken as visible, as Goose does")
    return out


def read_db(path: str | Path, session_id: str | None = None) -> Transcript:
    """One session of a Goose database as a transcript: ``session_id``, else the most recently updated."""
    p = check_file(path)
    file = str(p)
    notes = ImportNotes()
    with gc_paused(), STORE.connect(p) as conn:
        schema = _schema(conn, file)
        if schema.version is not None and schema.version > KNOWN_SCHEMA_VERSION:
            notes.warnings.append(
                f"Goose database schema v{schema.version} is newer than this reader knows (v{KNOWN_SCHEMA_VERSION}); read by column names"
            )
        chosen = _choose(session_rows(conn, schema.session_columns), session_id, file, notes)
        records = _records(conn, schema, chosen["id"], file, notes)
    header = _header(chosen, notes)
    if not records:
        raise TranscriptError(
            f"Goose session {chosen['id']!r}: none of its {notes.records_read} message rows could be read "
            f"({', '.join(f'{k} {v}' for k, v in notes.skipped.items())})",
            file=file,
            expected="rows whose content_json is a list of Goose content items",
        )
    t = goose.from_records(records, notes, file=file, session=header)
    t.meta.source_format = NAME
    return t


def sniff(probe: FileHead) -> int:
    # By columns, not table names: Crush's (and the Go OpenCode's) tables have the same names. Any other
    # SQLite file gets 40, so reading it says what is missing.
    return score_database(probe, lambda conn: 100 if has_columns(conn, _REQUIRED) else 40, unreadable=40)


STORE = SqliteStore(format=NAME, what="Goose's sessions.db", expected=_EXPECTED, rows=_sessions, read=read_db)


FORMAT = Format(
    name=NAME,
    description="Goose session database (sessions.db: the most recently updated session, or one by id)",
    sniff=sniff,
    read=read_db,
    sessions=STORE.source(),
    kinds=frozenset({"sqlite"}),
    # More specific: a SQLite file is no request body, whatever text its head happens to show.
    more_specific_than=REQUEST_BODIES,
)
