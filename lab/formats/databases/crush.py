"""Crush's session database (charmbracelet/crush): ``.crush/crush.db`` in the project.

Crush began as the Go OpenCode (opencode-ai/opencode, ``.opencode/opencode.db``),
and both keep the same two tables this reader needs (``internal/db/migrations``):

* ``sessions``: ``id``, ``parent_session_id`` (set for a sub-agent's session,
  whose id is the calling tool call's, and for title sessions), ``title``,
  ``message_count``, ``prompt_tokens``, ``completion_tokens``, ``cost``,
  ``summary_message_id`` (added after the first release), ``updated_at`` and
  ``created_at`` (epoch seconds);
* ``messages``: ``id``, ``session_id``, ``role`` (``user``, ``assistant``,
  ``tool``, ``system``), ``parts`` (a JSON list of ``{type, data}``), ``model``,
  ``provider`` and ``is_summary_message`` (later Crush), ``created_at``,
  ``updated_at``, ``finished_at``.

Crush lists a session's messages ``ORDER BY created_at``; this reader does the
same (ties in insert order). The parts (``internal/message/content.go``):

    text         {text, hidden}             a text block
    reasoning    {thinking, signature, ...} a thinking block, its signature kept
    image_url    {url, detail}              an image placeholder
    binary       {Path, MIMEType, Data}     an image placeholder (Data is base64);
                                            a text/* attachment is its text, as Crush sends it
    tool_call    {id, name, input, ...}     a tool_use block (``input`` is JSON text)
    tool_result  {tool_call_id, name, content, metadata, is_error, data, mime_type}
                                            a tool_result, paired with its call by id
    finish       {reason, time, ...}        no content: replies that ended in error, canceled,
                                            content_filter or max_tokens are counted in a warning

* Summaries: Crush's summarize writes one message (``is_summary_message`` in
  later versions) and points ``sessions.summary_message_id`` at it; from then on
  it sends only that message (as a user turn) and what follows. Each summary
  becomes a boundary marker (strategy ``crush_summary``, trigger ``import``)
  followed by the summary as a user turn tagged ``summary``, so a replay can
  undo it (``lab.replayer.recorded``).
* Tool calls: a call that no result answers before the conversation moves on
  gets an error result saying so (the APIs reject an unanswered call); one
  still open at the end stays unanswered (``notes.unanswered_tool_uses``). A
  result whose call is not in the session is counted and dropped, as it would
  make every later request invalid.
* Damage: a row whose ``parts`` is not JSON, not a list, or whose role is
  unknown is skipped and counted (``row:<why>``); a part of an unknown type,
  or one that is not ``{type, data}``, is counted (``part:<type>``). Never a crash.
* Sessions: ``read_db(path, session_id=None)`` reads one; without an id, the
  most recently updated top-level session with messages (sub-agent sessions
  are listed but are not the default), with a warning naming how many the file
  holds and how to pick another. ``list_sessions(path)`` lists them all,
  newest first; through ``lab.formats`` too (``session_choice``).
* Usage: Crush keeps none per message; the session's token columns and cost
  are reported in a warning. A fork's per-message token columns
  (``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
  ``cache_write_tokens``) are read when present.

Safety: opened read-only through ``sqlite_store`` (``mode=ro``, ``immutable``
when no ``-wal``/``-journal`` exists), SELECTs only.

Detection: 100 for a SQLite file whose ``sessions`` and ``messages`` tables
have Crush's columns (``messages.parts``; Goose's has ``content_json``), else 0.
"""

from __future__ import annotations

import base64
import binascii
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.messages import Block, Boundary, ImageBlock, ImportNotes, TextBlock, ThinkingBlock, Transcript, TranscriptMeta, Usage
from ...errors import TranscriptError
from .. import session_pick
from ..history_builder import UNNAMED_TOOL, HistoryBuilder, Loc, image_from_url, opt_str, parse_arguments, parse_timestamp, positive_int
from ..jsonio import check_file, gc_paused
from ..registry import Format, SessionInfo
from .sqlite_store import SqliteStore, require_tables, schema_sniff, select, session_rows

__all__ = ["FORMAT", "NAME", "STRATEGY", "STORE", "list_sessions", "read_db", "sniff"]

NAME = "crush"
STRATEGY = "crush_summary"

_REQUIRED: dict[str, tuple[str, ...]] = {
    "sessions": ("id",),
    "messages": ("session_id", "role", "parts"),
}
# Read when present: the first schema lacks summary_message_id, provider and is_summary_message.
_SESSION_COLUMNS = (
    "parent_session_id", "title", "message_count", "prompt_tokens", "completion_tokens", "cost",
    "summary_message_id", "updated_at", "created_at",
)  # fmt: skip
_MESSAGE_COLUMNS = (
    "id", "model", "created_at", "is_summary_message",
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
)  # fmt: skip
_ROLES = ("user", "assistant", "tool", "system")
_EXPECTED = "Crush's crush.db (or the Go OpenCode's opencode.db): tables sessions and messages with a parts column"
# What a call gets when the conversation moved on without its result.
_NO_RESULT = "[no result recorded: the tool call was interrupted]"




@dataclass(frozen=True)
class _Schema:
    session_columns: tuple[str, ...]
    message_columns: tuple[str, ...]


def _schema(conn: sqlite3.Connection, file: str) -> _Schema:
    _, columns = require_tables(conn, _REQUIRED, file=file, expected=_EXPECTED, not_ours="Crush's", unknown="a sessions/messages database")
    return _Schema(
        session_columns=tuple(c for c in _SESSION_COLUMNS if c in columns["sessions"]),
        message_columns=tuple(c for c in _MESSAGE_COLUMNS if c in columns["messages"]),
    )


def _text(rec: dict[str, Any], key: str) -> str | None:
    value = rec.get(key)
    return str(value) if value not in (None, "") else None


def _sessions(conn: sqlite3.Connection, path: Path) -> list[SessionInfo]:
    # Every session, newest first; a sub-agent's (it has a parent) is listed as one.
    return [
        SessionInfo(
            id=r["id"], title=_text(r, "title"), messages=int(r["_count"]), updated=session_pick.iso_time(r.get("updated_at")), format=NAME,
            kind="subagent" if _text(r, "parent_session_id") else None,
        )
        for r in session_rows(conn, _schema(conn, str(path)).session_columns)
    ]


def list_sessions(path: str | Path) -> list[SessionInfo]:
    """The sessions of a Crush database, most recently updated first (those without messages too)."""
    return STORE.list_sessions(path)


def _choose(sessions: list[dict[str, Any]], session_id: str | None, file: str, notes: ImportNotes) -> dict[str, Any]:
    # A sub-agent's session ran inside its parent's (its tool call's id is its id): never the default.
    candidates = [
        session_pick.Candidate(r["id"], int(r["_count"]), _text(r, "title"), listed=_text(r, "parent_session_id") is None) for r in sessions
    ]
    return sessions[session_pick.pick_session(candidates, session_id, file=file, store="Crush database", noun="Crush session", module=NAME, notes=notes)]


def _rows(conn: sqlite3.Connection, schema: _Schema, session_id: str, file: str, notes: ImportNotes) -> list[tuple[dict[str, Any], Loc]]:
    cols = "".join(f', "{c}"' for c in schema.message_columns)
    order = '"created_at", rowid' if "created_at" in schema.message_columns else "rowid"
    sql = f"SELECT rowid, role, parts{cols} FROM messages WHERE session_id = ? ORDER BY {order}"
    out: list[tuple[dict[str, Any], Loc]] = []
    for row in select(conn, sql, (session_id,)):
        rec = dict(zip(("rowid", "role", "parts", *schema.message_columns), row, strict=True))
        notes.records_read += 1
        loc = Loc(file, f"messages[rowid={rec['rowid']}]")
        if rec["role"] not in _ROLES:
            notes.skip(f"row:role {str(rec['role'])[:40]!r}")
            continue
        raw = rec["parts"]
        try:
            # Go writes the parts as text; the column is declared BLOB, so a copy may hold bytes.
            parts = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw) if isinstance(raw, (str, bytes)) else None
        except (ValueError, RecursionError):
            notes.skip("row:parts (not JSON)")
            continue
        if not isinstance(parts, list):
            notes.skip("row:parts (not a list of parts)")
            continue
        rec["parts"] = parts
        out.append((rec, loc))
    return out


def _usage(rec: dict[str, Any]) -> Usage | None:
    usage = Usage(
        input_tokens=positive_int(rec.get("input_tokens")),
        output_tokens=positive_int(rec.get("output_tokens")),
        cache_read_tokens=positive_int(rec.get("cache_read_tokens")),
        cache_write_tokens=positive_int(rec.get("cache_write_tokens")),
    )
    return usage if usage.total else None


def _binary(data: dict[str, Any]) -> Block:
    mime = opt_str(data.get("MIMEType")) or opt_str(data.get("mime_type")) or "application/octet-stream"
    payload = data.get("Data")
    encoded = payload if isinstance(payload, str) else ""
    if mime.startswith("text/"):
        # Crush sends a text attachment as text in the prompt, not as a file part.
        try:
            return TextBlock(text=base64.b64decode(encoded, validate=False).decode("utf-8", errors="replace"))
        except (binascii.Error, ValueError):
            pass
    return ImageBlock(media_type=mime, size_bytes=len(encoded) * 3 // 4, source="base64" if encoded else "unknown")


class _Session:
    """One session's rows, in Crush's order, as canonical messages."""

    def __init__(self, notes: ImportNotes, summaries: set[str]) -> None:
        self.notes = notes
        self.b = HistoryBuilder(notes)
        self.summaries = summaries
        # source call id -> canonical id, while unanswered
        self.open: dict[str, str] = {}
        self.known: set[str] = set()
        self.models: list[str] = []
        self.finishes: dict[str, int] = {}

    def _parts(self, rec: dict[str, Any], allowed: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any], int]]:
        for n, part in enumerate(rec["parts"]):
            kind = part.get("type") if isinstance(part, dict) else None
            data = part.get("data") if isinstance(part, dict) else None
            if not isinstance(kind, str) or not isinstance(data, dict):
                self.notes.skip("part:damaged (not {type, data})")
            elif kind == "finish":
                reason = opt_str(data.get("reason"))
                if reason in ("error", "canceled", "content_filter", "max_tokens"):
                    self.finishes[reason] = self.finishes.get(reason, 0) + 1
            elif kind in allowed:
                yield kind, data, n
            elif kind in ("text", "reasoning", "image_url", "binary", "tool_call", "tool_result"):
                self.notes.skip(f"part:{kind} (in a {rec['role']} message)")
            else:
                self.notes.skip(f"part:{kind[:40]}")

    def _answer_open(self) -> None:
        """Give calls the conversation moved on from an error result, as the APIs require one."""
        for source, canonical in self.open.items():
            self.notes.warnings.append(f"tool call {source!r} has no result before the conversation goes on; answered {_NO_RESULT!r}")
            self.b.result(canonical, _NO_RESULT, key=f"{canonical}.missing", is_error=True, canonical=True)
        self.open.clear()

    def row(self, rec: dict[str, Any], loc: Loc) -> None:
        key = opt_str(rec.get("id")) or f"row{rec['rowid']}"
        stamp = parse_timestamp(rec.get("created_at"))
        role = rec["role"]
        if key in self.summaries:
            self.summary(rec, key, stamp)
        elif role == "tool":
            self.tool(rec, key, stamp)
        elif role == "assistant":
            self.assistant(rec, key, stamp, loc)
        else:
            self._answer_open()
            blocks = self._content(rec)
            if not blocks:
                self.notes.skip(f"message:{role} (empty)")
            elif role == "system":
                self.b.add("system", blocks, key=key, timestamp=stamp)
            else:
                self.b.user_turn(blocks, key=key, timestamp=stamp)

    def _content(self, rec: dict[str, Any]) -> list[Block]:
        blocks: list[Block] = []
        for kind, data, _ in self._parts(rec, ("text", "image_url", "binary")):
            if kind == "text":
                text = data.get("text")
                if isinstance(text, str) and text:
                    blocks.append(TextBlock(text=text))
            elif kind == "image_url":
                blocks.append(image_from_url(data.get("url")))
            else:
                blocks.append(_binary(data))
        return blocks

    def summary(self, rec: dict[str, Any], key: str, stamp: datetime | None) -> None:
        self._answer_open()
        # Crush sends the summary as a user turn, its text only.
        blocks = [TextBlock(text=d["text"]) for k, d, _ in self._parts(rec, ("text", "reasoning")) if k == "text" and isinstance(d.get("text"), str) and d["text"]]
        if not blocks:
            self.notes.skip("message:summary (empty)")
            return
        boundary = Boundary(trigger="import", strategy=STRATEGY, timestamp=stamp, messages_removed=self.b.unmarked())
        self.b.boundary(boundary, "[Conversation summarized by Crush]", key=key, timestamp=stamp)
        self.b.add("user", blocks, key=key, timestamp=stamp, tag="summary")

    def assistant(self, rec: dict[str, Any], key: str, stamp: datetime | None, loc: Loc) -> None:
        self._answer_open()
        thinking: list[Block] = []
        content: list[Block] = []
        calls: list[Block] = []
        for kind, data, n in self._parts(rec, ("text", "reasoning", "tool_call", "image_url", "binary")):
            if kind == "reasoning":
                text = data.get("thinking")
                if isinstance(text, str) and text:
                    thinking.append(ThinkingBlock(thinking=text, signature=opt_str(data.get("signature"))))
            elif kind == "text":
                text = data.get("text")
                if isinstance(text, str) and text:
                    content.append(TextBlock(text=text))
            elif kind == "tool_call":
                source = opt_str(data.get("id"))
                name = opt_str(data.get("name"))
                if name is None:
                    self.notes.warnings.append(f"{loc.at('parts').at(n).where}: a tool call without a name; kept as {UNNAMED_TOOL!r}")
                args = parse_arguments(data.get("input"), self.notes, loc.at("parts").at(n).at("data").at("input"))
                use = self.b.use(source, name or UNNAMED_TOOL, args, key=f"{key}.{n}")
                calls.append(use)
                self.known.add(source or use.id)
                self.open[source or use.id] = use.id
            elif kind == "image_url":
                content.append(image_from_url(data.get("url")))
            else:
                content.append(_binary(data))
        model = opt_str(rec.get("model"))
        if model is not None and model not in self.models:
            self.models.append(model)
        blocks = thinking + content + calls
        if not blocks:
            self.notes.skip("message:assistant (empty)")
            return
        self.b.add("assistant", blocks, key=key, timestamp=stamp, usage=_usage(rec))

    def tool(self, rec: dict[str, Any], key: str, stamp: datetime | None) -> None:
        for _, data, n in self._parts(rec, ("tool_result",)):
            source = opt_str(data.get("tool_call_id"))
            canonical = self.open.pop(source, None) if source is not None else None
            if canonical is None:
                # A result without its open call would make every later request invalid: counted, not kept.
                self.notes.skip("part:tool_result (unknown call)" if source not in self.known else "part:tool_result (answered twice)")
                self.notes.orphan_tool_results.append(source or "?")
                continue
            content = data.get("content")
            text = content if isinstance(content, str) else ""
            mime = opt_str(data.get("mime_type"))
            if not text and mime is not None:
                text = f"[{mime} data]"
            self.b.result(canonical, text, key=f"{key}.{n}", is_error=data.get("is_error") is True, timestamp=stamp, canonical=True)


def _session_warnings(chosen: dict[str, Any], notes: ImportNotes) -> None:
    prompt, completion = positive_int(chosen.get("prompt_tokens")), positive_int(chosen.get("completion_tokens"))
    cost = chosen.get("cost")
    spent = f", cost ${cost:.4f}" if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0 else ""
    if prompt or completion or spent:
        notes.warnings.append(
            f"Crush recorded usage for the whole session only: prompt_tokens {prompt}, completion_tokens {completion}{spent} (sessions table); none per message"
        )


def read_db(path: str | Path, session_id: str | None = None) -> Transcript:
    """One session of a Crush database as a transcript: ``session_id``, else the newest top-level one."""
    p = check_file(path)
    file = str(p)
    notes = ImportNotes()
    with gc_paused(), STORE.connect(p) as conn:
        schema = _schema(conn, file)
        chosen = _choose(session_rows(conn, schema.session_columns), session_id, file, notes)
        rows = _rows(conn, schema, chosen["id"], file, notes)
    if not rows:
        raise TranscriptError(
            f"Crush session {chosen['id']!r}: none of its {notes.records_read} message rows could be read "
            f"({', '.join(f'{k} {v}' for k, v in notes.skipped.items())})",
            file=file,
            expected="rows whose parts is a JSON list of {type, data}",
        )
    summaries = {str(r["id"]) for r, _ in rows if r.get("id") is not None and r.get("is_summary_message") in (1, True)}
    pointed = _text(chosen, "summary_message_id")
    if pointed is not None:
        if any(str(r.get("id")) == pointed for r, _ in rows):
            summaries.add(pointed)
        else:
            notes.warnings.append(f"sessions.summary_message_id {pointed!r} names no message of this session; read without a summary")
    s = _Session(notes, summaries)
    for rec, loc in rows:
        s.row(rec, loc)
    messages = s.b.finish()
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(f"Crush session {chosen['id']!r}: {len(rows)} message rows but none that was sent to the model", file=file, expected="text or tool parts")
    if s.finishes:
        notes.warnings.append("replies that did not end normally: " + ", ".join(f"{k} {v}" for k, v in sorted(s.finishes.items())))
    if len(s.models) > 1:
        notes.warnings.append(f"models used: {', '.join(s.models)}")
    _session_warnings(chosen, notes)
    meta = TranscriptMeta(
        source_format=NAME,
        source_path=file,
        session_id=chosen["id"],
        title=_text(chosen, "title") or "Crush session",
        model=s.models[-1] if s.models else None,
    )
    return Transcript(meta=meta, messages=messages, notes=notes)


# Its sessions and messages tables share Goose's names; messages.parts says they are Crush's.
sniff = schema_sniff(_REQUIRED)


STORE = SqliteStore(format=NAME, what="Crush's crush.db", expected=_EXPECTED, rows=_sessions, read=read_db)


FORMAT = Format(
    name=NAME,
    description="Crush / Go OpenCode session database (crush.db, opencode.db: the newest top-level session, or one by id)",
    sniff=sniff,
    read=read_db,
    sessions=STORE.source(),
    kinds=frozenset({"sqlite"}),
    # More specific: goose_db claims any SQLite file with a sessions table, as a guess.
    more_specific_than=("goose_db",),
)
