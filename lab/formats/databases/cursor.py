"""Cursor's chat and agent ("composer") sessions: its ``state.vscdb`` SQLite files.

Cursor (a VS Code fork) keeps its state in key-value tables of SQLite files,
``key TEXT UNIQUE, value BLOB`` holding JSON (as TEXT or as BLOB bytes):

* the global ``<Cursor user dir>/User/globalStorage/state.vscdb``, table
  ``cursorDiskKV``: ``composerData:<composerId>`` is one session (``name``,
  ``createdAt`` / ``lastUpdatedAt`` in epoch ms, ``modelConfig.modelName``,
  and its bubbles: ``fullConversationHeadersOnly`` ``[{bubbleId, type}]``
  pointing at ``bubbleId:<composerId>:<bubbleId>`` rows, or, in older
  versions, the bubbles inline in ``conversation``; ``conversationMap`` may
  hold a header's bubble too);
* a workspace's ``workspaceStorage/<hash>/state.vscdb``, table ``ItemTable``:
  ``composer.composerData`` (``{allComposers: [...]}``; older versions keep
  each composer's ``conversation`` inline, newer ones only its head, the
  content being in the global file) and the chat panel of Cursor before
  composers, ``workbench.panel.aichat.view.aichat.chatdata``
  (``{tabs: [{tabId, chatTitle, lastSendTime, bubbles: [{type: "user" | "ai",
  text, rawText, selections, modelType}]}]}``). Its ``cursorDiskKV`` is empty.
  ``workspace.json`` beside it names the folder (``{"folder": "file://..."}``).

Each bubble is one message; ``cursor_bubbles`` maps them (its docstring
has their shape and the mapping). The session gives the meta: the composer
id (a tab's ``tabId``), its ``name`` as title, the model (the bubbles',
else ``modelConfig.modelName``; "default", Cursor's automatic choice, names
none), cwd from the bubbles' workspace folder, else ``workspace.json``
beside a workspace file. Counted in ``notes.skipped``, never content:
bubbles a header names but the file lacks (``bubble:missing``), values that
are not JSON or not an object, and what ``cursor_bubbles`` counts;
bubble rows no header names are no part of the conversation (a warning
says how many). ``notes.records_read`` counts bubbles (headers).

Sessions: ``read_db(path, session_id=None)`` reads one; without an id, the
most recently updated one with messages that is no subagent's (a composer
another names in ``subComposerIds`` / ``subagentComposerIds``, or marked
``isSubagent`` / ``isBestOfNSubcomposer``: it ran inside its parent's
session), with a warning naming how many the file holds and how to pick
another. ``list_sessions(path)`` lists them all
(composers without messages too), newest first; the same through
``lab.formats.sessions(path)`` / ``load(path, session=ID)`` and
``python -m lab sessions PATH``. A workspace file whose composers live in the
global file is a ``TranscriptError`` naming that file.

Safety: opened read-only exactly as ``goose_db`` opens its file
(``sqlite_store``: ``mode=ro``, ``immutable`` when no ``-wal`` / ``-journal``
exists); only SELECTs run.

Detection: 100 for a SQLite file with ``cursorDiskKV`` composer or bubble
rows, or an ``ItemTable`` holding one of the two Cursor chat keys; 60 for one
with an empty ``cursorDiskKV`` (a Cursor file without chats: reading it says
so); 0 otherwise (``goose_db``'s 40 still answers for other SQLite files).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...core.messages import ImportNotes, Transcript, TranscriptMeta
from ...errors import TranscriptError
from .. import session_pick
from ..history_builder import Loc, as_dict, opt_str
from .cursor_bubbles import json_value, map_bubbles, path_of_uri, stamp
from ..jsonio import check_file, gc_paused
from ..registry import FileHead, Format, SessionInfo
from .sqlite_store import SqliteStore, score_database, select, table_names

__all__ = ["FORMAT", "NAME", "CHATDATA_KEY", "WORKSPACE_COMPOSERS_KEY", "STORE", "list_sessions", "read_db", "sniff"]

NAME = "cursor"
CHATDATA_KEY = "workbench.panel.aichat.view.aichat.chatdata"
WORKSPACE_COMPOSERS_KEY = "composer.composerData"
_KV, _ITEMS = "cursorDiskKV", "ItemTable"
_EXPECTED = "Cursor's state.vscdb (table cursorDiskKV with composerData rows, or ItemTable with Cursor chat keys)"
# Where a composer names the composers it started (subagents, best-of-N runs).
_CHILDREN = ("subComposerIds", "subagentComposerIds")



@dataclass
class _Entry:
    id: str
    title: str | None
    count: int
    updated: datetime | None
    kind: str
    data: dict[str, Any]
    where: str
    order: int = 0
    # Whether its bubbles are rows of cursorDiskKV (a global file's composer), not inline.
    keyed: bool = False


# -- the database --------------------------------------------------------------------------------



def _prefixed(conn: sqlite3.Connection, prefix: str, limit: int | None = None) -> list[tuple[Any, Any]]:
    # A key range, not LIKE: it uses the table's unique key index, and ids may hold % or _.
    # ``prefix`` ends in ':'; ';' is the next character, so the range is every key starting with it.
    sql = f"SELECT key, value FROM {_KV} WHERE key >= ? AND key < ? ORDER BY key" + (f" LIMIT {int(limit)}" if limit else "")
    return list(select(conn, sql, (prefix, prefix[:-1] + ";")))


def _items(conn: sqlite3.Connection) -> dict[str, Any]:
    rows = select(conn, f"SELECT key, value FROM {_ITEMS} WHERE key IN (?, ?)", (CHATDATA_KEY, WORKSPACE_COMPOSERS_KEY))
    return {str(k): v for k, v in rows}


def _count_of(composer: dict[str, Any]) -> int:
    headers = composer.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        return len(headers)
    conversation = composer.get("conversation")
    return len(conversation) if isinstance(conversation, list) else 0


def _composer_entry(cid: str, composer: dict[str, Any], kind: str, where: str, *, keyed: bool = False) -> _Entry:
    updated = stamp(composer.get("lastUpdatedAt")) or stamp(composer.get("createdAt"))
    title = opt_str(composer.get("name")) or opt_str(composer.get("subtitle"))
    return _Entry(id=cid, title=title, count=_count_of(composer), updated=updated, kind=kind, data=composer, where=where, keyed=keyed)


@dataclass
class _Found:
    entries: list[_Entry]
    # Composers a workspace file names whose content is in the global file.
    heads: list[str]
    cursor: bool


def _global_composers(conn: sqlite3.Connection, notes: ImportNotes) -> list[_Entry]:
    entries: list[_Entry] = []
    children: set[str] = set()
    for key, raw in _prefixed(conn, "composerData:"):
        ok, composer = json_value(raw)
        if not ok or not isinstance(composer, dict):
            notes.skip("composerData (not a JSON object)")
            continue
        # The key's id, not the value's: it is the one the bubble rows are keyed by.
        cid = str(key).split(":", 1)[1] or opt_str(composer.get("composerId")) or str(key)
        entries.append(_composer_entry(cid, composer, "composer", f"{_KV}[{key}]", keyed=True))
        for name in _CHILDREN:
            ids = composer.get(name)
            if isinstance(ids, list):
                children.update(i for i in ids if isinstance(i, str))
    for e in entries:
        if e.id in children or e.data.get("isSubagent") is True or e.data.get("isBestOfNSubcomposer") is True:
            e.kind = "subagent"
    return entries


def _workspace_composers(raw: Any, known: set[str], notes: ImportNotes) -> tuple[list[_Entry], list[str]]:
    """A workspace file's composers that hold their conversation, and the ids of those that do not (heads)."""
    ok, doc = json_value(raw)
    listed = doc.get("allComposers") if isinstance(doc, dict) else doc
    if not ok or not isinstance(listed, list):
        notes.skip(f"{WORKSPACE_COMPOSERS_KEY} (not a JSON list of composers)")
        return [], []
    entries: list[_Entry] = []
    heads: list[str] = []
    for n, composer in enumerate(listed):
        wid = opt_str(as_dict(composer).get("composerId"))
        if wid is None:
            notes.skip(f"{WORKSPACE_COMPOSERS_KEY} entry (no composerId)")
        elif wid in known:
            continue
        elif isinstance(composer.get("conversation"), list) and composer["conversation"]:
            entries.append(_composer_entry(wid, composer, "workspace_composer", f"{_ITEMS}[{WORKSPACE_COMPOSERS_KEY}].allComposers[{n}]"))
            known.add(wid)
        else:
            heads.append(wid)
    return entries, heads


def _chat_tabs(raw: Any, notes: ImportNotes) -> list[_Entry]:
    ok, doc = json_value(raw)
    tabs = as_dict(doc).get("tabs")
    if not ok or not isinstance(tabs, list):
        notes.skip(f"{CHATDATA_KEY} (not a JSON object with tabs)")
        return []
    entries: list[_Entry] = []
    for n, tab in enumerate(tabs):
        if not isinstance(tab, dict):
            notes.skip("chat tab (not an object)")
            continue
        bubbles = tab.get("bubbles")
        entries.append(
            _Entry(
                id=opt_str(tab.get("tabId")) or f"tab{n}",
                title=opt_str(tab.get("chatTitle")),
                count=len(bubbles) if isinstance(bubbles, list) else 0,
                updated=stamp(tab.get("lastSendTime")) or stamp(tab.get("lastUpdatedAt")),
                kind="chat",
                data=tab,
                where=f"{_ITEMS}[{CHATDATA_KEY}].tabs[{n}]",
            )
        )
    return entries


def _entries(conn: sqlite3.Connection, notes: ImportNotes) -> _Found:
    """Every session the file holds, newest update first (ties: the later found first)."""
    tables = table_names(conn)
    entries = _global_composers(conn, notes) if _KV in tables else []
    heads: list[str] = []
    items = _items(conn) if _ITEMS in tables else {}
    if WORKSPACE_COMPOSERS_KEY in items:
        found, heads = _workspace_composers(items[WORKSPACE_COMPOSERS_KEY], {e.id for e in entries}, notes)
        entries += found
    if CHATDATA_KEY in items:
        entries += _chat_tabs(items[CHATDATA_KEY], notes)
    for n, e in enumerate(entries):
        e.order = n
    floor = datetime.min.replace(tzinfo=UTC)
    entries.sort(key=lambda e: (e.updated or floor, e.order), reverse=True)
    return _Found(entries=entries, heads=heads, cursor=_KV in tables or bool(items))


def _no_sessions(found: _Found, path: Path) -> TranscriptError:
    file = str(path)
    if not found.cursor:
        return TranscriptError("a SQLite database, but not Cursor's: no table cursorDiskKV and no Cursor chat keys in ItemTable", file=file, expected=_EXPECTED)
    if found.heads:
        # workspaceStorage/<hash>/state.vscdb -> the user dir's globalStorage/state.vscdb.
        beside = path.parent.parent.parent / "globalStorage" / "state.vscdb"
        where = str(beside) if beside.is_file() else "<Cursor user dir>/User/globalStorage/state.vscdb"
        shown = ", ".join(found.heads[:3]) + (", ..." if len(found.heads) > 3 else "")
        return TranscriptError(
            f"this Cursor workspace database lists {len(found.heads)} composer(s) ({shown}) whose messages Cursor keeps in its global database",
            file=file,
            expected=f"the global database {where} (with --session ID for one of them)",
        )
    return TranscriptError("a Cursor database without any chat or composer session", file=file, expected="a Cursor state.vscdb with sessions")


# -- sessions -------------------------------------------------------------------------------------


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def _sessions(conn: sqlite3.Connection, path: Path) -> list[SessionInfo]:
    # Most recently updated first; a composer of the global file and a workspace's list no kind, a chat tab and a subagent say so.
    found = _entries(conn, ImportNotes())
    if not found.entries:
        raise _no_sessions(found, path)
    return [
        SessionInfo(id=e.id, title=e.title, messages=e.count, updated=_iso(e.updated), format=NAME, kind=e.kind if e.kind in ("chat", "subagent") else None)
        for e in found.entries
    ]


def list_sessions(path: str | Path) -> list[SessionInfo]:
    """The sessions of a Cursor file, most recently updated first (those without messages too)."""
    return STORE.list_sessions(path)


def _choose(found: _Found, session_id: str | None, path: Path, notes: ImportNotes) -> _Entry:
    entries = found.entries
    if session_id is not None and session_id not in {e.id for e in entries} and session_id in found.heads:
        raise _no_sessions(_Found([], [session_id], True), path)
    if session_id is None and not entries:
        raise _no_sessions(found, path)
    # Subagents' composers run inside their parent's session, which Cursor lists instead: not the default.
    candidates = [session_pick.Candidate(e.id, e.count, e.title, listed=e.kind != "subagent") for e in entries]
    k = session_pick.pick_session(candidates, session_id, file=str(path), store="Cursor database", noun="Cursor session", module=NAME, notes=notes)
    return entries[k]


def _bubbles(conn: sqlite3.Connection, entry: _Entry, file: str, notes: ImportNotes) -> list[tuple[dict[str, Any], Loc]]:
    """The entry's bubbles in conversation order, each with where it is; the unreadable ones counted."""
    data = entry.data
    out: list[tuple[dict[str, Any], Loc]] = []

    def keep(raw: Any, loc: Loc, header_type: Any = None) -> None:
        notes.records_read += 1
        if not isinstance(raw, dict):
            notes.skip("bubble (not a JSON object)")
            return
        if "type" not in raw and header_type is not None:
            raw = {**raw, "type": header_type}
        out.append((raw, loc))

    def listed(key: str) -> list[Any]:
        value = data.get(key)
        return value if isinstance(value, list) else []

    if entry.kind == "chat":
        for n, b in enumerate(listed("bubbles")):
            keep(b, Loc(file, f"{entry.where}.bubbles[{n}]"))
        return out
    headers = listed("fullConversationHeadersOnly")
    if headers:
        prefix = f"bubbleId:{entry.id}:"
        rows = {str(k)[len(prefix) :]: v for k, v in _prefixed(conn, prefix)} if entry.keyed else {}
        # A header's bubble not in its own row may be inline: conversationMap, or the older conversation list.
        inline = {b["bubbleId"]: b for b in listed("conversation") if isinstance(b, dict) and isinstance(b.get("bubbleId"), str)}
        inline.update({k: v for k, v in as_dict(data.get("conversationMap")).items() if isinstance(v, dict)})
        named: set[str] = set()
        for header in headers:
            bid = opt_str(as_dict(header).get("bubbleId"))
            if bid is None:
                notes.records_read += 1
                notes.skip("header (no bubbleId)")
                continue
            named.add(bid)
            if bid in rows:
                ok, bubble = json_value(rows[bid])
                if ok:
                    keep(bubble, Loc(file, f"{_KV}[{prefix}{bid}]"), as_dict(header).get("type"))
                else:
                    notes.records_read += 1
                    notes.skip("bubble (not JSON)")
            elif bid in inline:
                keep(inline[bid], Loc(file, f"{entry.where}[inline bubble {bid}]"), as_dict(header).get("type"))
            else:
                notes.records_read += 1
                notes.skip("bubble:missing")
        unnamed = len(set(rows) - named)
        if unnamed:
            # Rows of the composer its headers do not name are not in the conversation Cursor shows and sends.
            notes.warnings.append(f"{unnamed} bubble row(s) of composer {entry.id!r} are in none of its headers: not part of the conversation, not read")
        return out
    for n, b in enumerate(listed("conversation")):
        keep(b, Loc(file, f"{entry.where}.conversation[{n}]"))
    return out


# -- the transcript ---------------------------------------------------------------------------------


def _workspace_folder(path: Path) -> str | None:
    """The folder ``workspace.json`` beside a workspace database names, if any."""
    try:
        doc = json.loads((path.parent / "workspace.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return path_of_uri(as_dict(doc).get("folder"))


def _transcript(entry: _Entry, bubbles: list[tuple[dict[str, Any], Loc]], notes: ImportNotes, path: Path) -> Transcript:
    mapped = map_bubbles(bubbles, notes)
    messages = mapped.messages
    if not any(m.role in ("user", "assistant") for m in messages):
        raise TranscriptError(
            f"Cursor session {entry.id!r}: none of its {len(bubbles)} readable bubble(s) holds a message"
            + (f" ({', '.join(f'{k} {v}' for k, v in notes.skipped.items())})" if notes.skipped else ""),
            file=str(path),
            where=entry.where,
            expected="user (type 1) and assistant (type 2) bubbles",
        )
    configured = opt_str(as_dict(entry.data.get("modelConfig")).get("modelName"))
    models = mapped.models or [m for m in (configured,) if m and m != "default"]
    if len(mapped.models) > 1:
        notes.warnings.append(f"models used: {', '.join(mapped.models)}")
    cwd = mapped.cwd or (_workspace_folder(path) if not entry.keyed else None)
    meta = TranscriptMeta(source_format=NAME, source_path=str(path), session_id=entry.id, title=entry.title, model=models[0] if models else None, cwd=cwd)
    return Transcript(meta=meta, messages=messages, notes=notes)


def read_db(path: str | Path, session_id: str | None = None) -> Transcript:
    """One session of a Cursor ``state.vscdb`` as a transcript: ``session_id``, else the most recently updated."""
    p = check_file(path)
    notes = ImportNotes()
    with gc_paused(), STORE.connect(p) as conn:
        found = _entries(conn, notes)
        chosen = _choose(found, session_id, p, notes)
        bubbles = _bubbles(conn, chosen, str(p), notes)
    return _transcript(chosen, bubbles, notes, p)


# -- detection --------------------------------------------------------------------------------------


def _score(conn: sqlite3.Connection) -> int:
    tables = table_names(conn)
    if _KV in tables and (_prefixed(conn, "composerData:", 1) or _prefixed(conn, "bubbleId:", 1)):
        return 100
    if _ITEMS in tables and _items(conn):
        return 100
    # Cursor's own table, with no chat in it yet: still Cursor's, and reading it says so.
    return 60 if _KV in tables else 0


def sniff(probe: FileHead) -> int:
    return score_database(probe, _score)


STORE = SqliteStore(format=NAME, what="Cursor's state.vscdb", expected=_EXPECTED, rows=_sessions, read=read_db, label="the Cursor database")


FORMAT = Format(
    name=NAME,
    description="Cursor chat and agent sessions (state.vscdb: the most recently updated composer or chat, or one by id)",
    sniff=sniff,
    read=read_db,
    sessions=STORE.source(),
    kinds=frozenset({"sqlite"}),
    # More specific: goose_db claims any SQLite file, as a guess.
    more_specific_than=("goose_db",),
)
