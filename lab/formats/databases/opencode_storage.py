"""OpenCode sessions where OpenCode keeps them: its ``storage/`` folders, or ``opencode.db``.

What OpenCode writes (anomalyco/opencode, formerly sst/opencode: ``packages/opencode/src/storage/storage.ts``,
``src/session/index.ts``, ``src/session/message-v2.ts``), under its data dir ``$XDG_DATA_HOME/opencode``
(``~/.local/share/opencode``)::

    storage/session/<projectID>/<sessionID>.json   session info: id, title, directory, parentID, time.created/updated
    storage/message/<sessionID>/<messageID>.json   one message's info: role, time, tokens, cost, summary, error ...
    storage/part/<messageID>/<partID>.json         its parts: type, text, tool state, step-finish tokens ...

Newer OpenCode keeps the same records in SQLite, ``opencode.db`` (``opencode-<channel>.db`` off the
latest/beta channels; ``src/storage/db.ts``, ``src/session/session.sql.ts``): tables ``session`` (id,
parent_id, title, directory, time_created, time_updated, ...), ``message`` (id, session_id,
time_created, data) and ``part`` (id, message_id, session_id, data), where ``data`` is the record's
JSON without its ids. It migrates the JSON storage once (``src/storage/json-migration.ts``) and
leaves the folders behind, so beside a database the folders are the older copy.

Order, as OpenCode reads them: the JSON storage lists keys sorted and sorts parts by id (ids are
time-sortable, ``msg_...``, ``prt_...``), so messages and parts go by id; the database orders
messages by ``(time_created, id)`` and parts by id.

Accepted (``locate``): a session's message folder ``storage/message/<sessionID>`` (its parts in
the sibling ``storage/part/``); a session info file ``storage/session/<project>/<sessionID>.json``;
the storage root, or the data dir holding ``storage/`` or a database; the database file (by its
tables, or by its name unless it holds Goose's ``sessions``/``messages``, which are Goose's format). From a
root, data dir or database the most recently updated session is read (subagent sessions, which
have a ``parentID``, only when there is no other), with a warning naming how many there were and
what to pass for another. ``list_sessions(path)`` lists the sessions with messages and
``read_session(path, id)`` reads one of them (``lab.formats.load(path, session=ID)``, ``--session``);
only an id the listing holds is read.

The messages ``{info, parts}`` go to ``opencode.from_messages``: one mapping of messages and parts.

Ids come from file and folder names (the database's id columns), never from file contents, as
OpenCode's own migration does; a name that is not an OpenCode id (``[A-Za-z0-9_-]``) is never made
into a path, and a folder or file that resolves outside the storage root (a link out of it) is not
read. Skipped and counted in ``notes.skipped``, with one warning per kind: unreadable or corrupt
files or rows (``file:message (unreadable)``, ``file:part (unreadable)``, ``row:part (unreadable)``,
...), a message without its part folder (``file:parts folder missing``), names that are no id
(``file:not an id``) and links out of the root (``file:outside the storage root``). A session with
no message is a ``TranscriptError``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ...core.messages import ImportNotes, Transcript
from ...errors import TranscriptError
from . import opencode
from .. import session_pick
from ..registry import SessionSource
from ..jsonio import read_json
from .sqlite_store import is_sqlite, read_only, table_names

__all__ = ["FORMAT", "DB_NAME", "Source", "locate", "is_storage", "storage_root", "session_folder", "database", "read_folder", "list_sessions", "read_session"]

# OpenCode ids: a prefix, ``_`` and base62 (``ses_...``, ``msg_...``, ``prt_...``); project ids are hex.
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# The names OpenCode gives its database: opencode.db, or opencode-<channel>.db off the latest/beta channels.
DB_NAME = re.compile(r"opencode(?:-[A-Za-z0-9._-]+)?\.db")
# Sibling folders that make a ``message/`` folder OpenCode's, not any folder of that name.
_SIBLINGS = ("part", "session")
# How many other sessions a "several sessions" warning names.
_NAMED = 3
_EXPECTED = "an OpenCode storage folder (storage/message/<sessionID>, storage/, its data dir) or opencode.db"


@dataclass(frozen=True)
class Source:
    """Where a session is read from: a storage root or a database, and the session a path named (None: the newest)."""

    kind: Literal["storage", "database"]
    path: Path
    session: str | None = None


def _is_root(folder: Path) -> bool:
    return (folder / "message").is_dir() and any((folder / s).is_dir() for s in _SIBLINGS)


def storage_root(path: Path) -> Path | None:
    """The storage root ``path`` is, or that its data dir holds (``<data>/storage``); else None."""
    if not path.is_dir():
        return None
    for folder in (path, path / "storage"):
        if _is_root(folder):
            return folder
    return None


def session_folder(path: Path) -> Path | None:
    """The ``message/<sessionID>`` folder ``path`` names: that folder itself, or the session's info file."""
    if path.is_dir():
        if path.parent.name == "message" and _ID.fullmatch(path.name) and _is_root(path.parent.parent):
            return path
        return None
    # storage/session/<project>/<sessionID>.json
    if path.suffix == ".json" and path.parent.parent.name == "session" and _ID.fullmatch(path.stem) and path.is_file():
        root = path.parent.parent.parent
        folder = root / "message" / path.stem
        return folder if _is_root(root) and folder.is_dir() else None
    return None


def _tables_of(path: Path) -> str | None:
    """Whose tables a SQLite file holds: "opencode", "goose" (its sessions.db is its own format), "other",
    or None when the file cannot be read."""
    try:
        with read_only(path, what="the SQLite file", expected=_EXPECTED) as con:
            tables = table_names(con)
    except TranscriptError:
        return None
    if {"sessions", "messages"} <= tables:
        return "goose"
    return "opencode" if {"session", "message", "part"} <= tables else "other"


def database(path: Path) -> Path | None:
    """OpenCode's SQLite database: ``path`` itself (a renamed copy by its tables; by its name unless it holds
    Goose's tables), or the one in the data dir ``path`` (``opencode.db`` first)."""
    if path.is_file():
        if not is_sqlite(path):
            return None
        holds = _tables_of(path)
        # A damaged or unknown file named like OpenCode's is claimed, so reading it says what it lacks.
        return path if holds == "opencode" or (holds != "goose" and DB_NAME.fullmatch(path.name)) else None
    if path.is_dir():
        found = sorted((p for p in path.glob("opencode*.db") if DB_NAME.fullmatch(p.name)), key=lambda p: (p.name != "opencode.db", p.name))
        for p in found:
            if p.is_file() and is_sqlite(p) and _tables_of(p) != "goose":
                return p
    return None


def locate(path: str | Path) -> Source | None:
    """What OpenCode storage ``path`` names, or None when it is none (see the module docstring)."""
    p = Path(path)
    folder = session_folder(p)
    if folder is not None:
        return Source("storage", folder.parent.parent, folder.name)
    # A data dir with a database: the database is the current copy, the folders the pre-migration one.
    db = database(p)
    if db is not None:
        return Source("database", db)
    root = storage_root(p)
    return Source("storage", root) if root is not None else None


def is_storage(path: str | Path) -> bool:
    """Whether ``load`` should read ``path`` as OpenCode storage."""
    return locate(path) is not None


# -- reading -------------------------------------------------------------------------


class _Skips:
    """Skipped files or rows, counted in the notes and warned about once per kind."""

    def __init__(self, notes: ImportNotes) -> None:
        self.notes = notes
        self.seen: dict[str, tuple[int, str]] = {}

    def add(self, kind: str, what: str) -> None:
        self.notes.skip(kind)
        # A skipped file is a record read: the skipped share stays one of records.
        self.notes.records_read += 1
        n, first = self.seen.get(kind, (0, what))
        self.seen[kind] = (n + 1, first)

    def warn(self) -> None:
        for kind, (n, first) in self.seen.items():
            self.notes.warnings.append(f"{kind}: {n} skipped (first: {first})")


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


def _json_files(folder: Path, root: Path, skips: _Skips) -> list[Path]:
    """The ``*.json`` files of ``folder`` whose names are ids, in id order; the others counted."""
    out = []
    for f in sorted(folder.glob("*.json")):
        rel = f"{folder.name}/{f.name}"
        if not _ID.fullmatch(f.stem):
            skips.add("file:not an id", rel)
        elif not _inside(f, root):
            skips.add("file:outside the storage root", rel)
        elif f.is_file():
            out.append(f)
    return out


def _read_object(f: Path, kind: str, skips: _Skips) -> dict[str, Any] | None:
    try:
        doc = read_json(f)
    except (TranscriptError, OSError) as exc:
        skips.add(f"file:{kind} (unreadable)", f"{f.parent.name}/{f.name}: {str(exc).splitlines()[0]}")
        return None
    if not isinstance(doc, dict):
        skips.add(f"file:{kind} (unreadable)", f"{f.parent.name}/{f.name}: a {type(doc).__name__}, not an object")
        return None
    return doc


def _session_infos(root: Path, resolved: Path, skips: _Skips, only: str | None) -> dict[str, dict[str, Any]]:
    """Session info by session id (the file's name), from ``session/<project>/<id>.json``; ``only`` that session's."""
    infos: dict[str, dict[str, Any]] = {}
    base = root / "session"
    if not base.is_dir():
        return infos
    for project in sorted(base.iterdir()):
        if not (project.is_dir() and _ID.fullmatch(project.name) and _inside(project, resolved)):
            continue
        files = [project / f"{only}.json"] if only is not None else sorted(project.glob("*.json"))
        for f in files:
            if not (_ID.fullmatch(f.stem) and f.is_file() and _inside(f, resolved)):
                continue
            try:
                doc = read_json(f)
            except (TranscriptError, OSError) as exc:
                skips.add("file:session (unreadable)", f"{project.name}/{f.name}: {str(exc).splitlines()[0]}")
                continue
            if isinstance(doc, dict):
                infos[f.stem] = {**doc, "id": f.stem}
    return infos


def _updated(info: dict[str, Any] | None, folder: Path) -> float:
    time = info.get("time") if info else None
    if isinstance(time, dict):
        for key in ("updated", "created"):
            if isinstance(time.get(key), (int, float)) and not isinstance(time[key], bool):
                return float(time[key])
    # No session info: the newest message file says when the session last moved (milliseconds, as OpenCode's times).
    return max((f.stat().st_mtime * 1000 for f in folder.glob("*.json")), default=0.0)


def _pick(candidates: Sequence[tuple[str, dict[str, Any] | None, float]], where: str, other: str, notes: ImportNotes) -> str:
    """The most recently updated session (top-level ones first), with a warning when there were several."""
    ranked = sorted(candidates, key=lambda c: (not (c[1] or {}).get("parentID"), c[2], c[0]), reverse=True)
    sid, info, _ = ranked[0]
    if len(ranked) > 1:
        title = (info or {}).get("title")
        named = ", ".join(c[0] for c in ranked[1 : 1 + _NAMED]) + (", ..." if len(ranked) > 1 + _NAMED else "")
        notes.warnings.append(
            f"{len(ranked)} sessions in {where}; read the most recently updated, {sid}"
            + (f" ({title!r})" if isinstance(title, str) and title else "")
            + f"; {other} for another (others: {named})"
        )
    return sid


def _storage_candidates(root: Path, resolved: Path, infos: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any] | None, float]]:
    """``(session id, info, updated ms)`` of every session folder of the root that holds a message file."""
    folders = [d for d in sorted((root / "message").iterdir()) if d.is_dir() and _ID.fullmatch(d.name) and _inside(d, resolved)]
    return [(d.name, infos.get(d.name), _updated(infos.get(d.name), d)) for d in folders if any(d.glob("*.json"))]


def _read_storage(source: Source, file: str) -> Transcript:
    root = source.path
    resolved = root.resolve()
    notes = ImportNotes()
    skips = _Skips(notes)
    sid = source.session
    infos = _session_infos(root, resolved, skips, sid)
    if sid is None:
        candidates = _storage_candidates(root, resolved, infos)
        if not candidates:
            raise TranscriptError("an OpenCode storage folder that holds no session with messages", file=file, where="message/", expected=_EXPECTED)
        sid = _pick(candidates, str(root), f"pass {root / 'message' / '<sessionID>'} or --session ID", notes)
    folder = root / "message" / sid
    if not _inside(folder, resolved):
        raise TranscriptError("the session's message folder leads outside the storage root", file=file, where=f"message/{sid}", expected=_EXPECTED)
    entries: list[Any] = []
    for f in _json_files(folder, resolved, skips):
        info = _read_object(f, "message", skips)
        if info is None:
            continue
        mid = f.stem
        parts: list[Any] = []
        pdir = root / "part" / mid
        if not pdir.is_dir():
            skips.add("file:parts folder missing", f"part/{mid}")
        elif not _inside(pdir, resolved):
            skips.add("file:outside the storage root", f"part/{mid}")
        else:
            for pf in _json_files(pdir, resolved, skips):
                part = _read_object(pf, "part", skips)
                if part is not None:
                    parts.append({**part, "id": pf.stem, "messageID": mid, "sessionID": sid})
        entries.append({"info": {**info, "id": mid, "sessionID": sid}, "parts": parts})
    skips.warn()
    if not entries:
        raise TranscriptError(f"session {sid} has no readable message", file=file, where=f"message/{sid}", expected="message/<sessionID>/<messageID>.json files")
    return opencode.from_messages(entries, file=file, path=f"message/{sid}", info=infos.get(sid), notes=notes)


def _row_object(text: Any, kind: str, what: str, skips: _Skips) -> dict[str, Any] | None:
    try:
        doc = json.loads(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        skips.add(f"row:{kind} (unreadable)", what)
        return None
    return doc


def _db_sessions(con: sqlite3.Connection, db: Path) -> dict[str, dict[str, Any]]:
    """Session info by id of every session with a message (``messages``: how many), as the JSON storage holds it."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"session", "message", "part"} <= tables:
        raise TranscriptError("an SQLite file without OpenCode's session, message and part tables", file=str(db), expected="OpenCode's opencode.db")
    sessions = con.execute(
        "SELECT s.id, s.parent_id, s.title, s.directory, s.time_created, s.time_updated, COUNT(m.id) FROM session s"
        " JOIN message m ON m.session_id = s.id GROUP BY s.id"
    ).fetchall()
    if not sessions:
        raise TranscriptError("OpenCode's database holds no session with messages", file=str(db), expected="a session with messages")
    return {
        sid: {"id": sid, "parentID": parent, "title": title, "directory": directory, "time": {"created": created, "updated": updated}, "messages": n}
        for sid, parent, title, directory, created, updated, n in sessions
    }


def _db_updated(info: dict[str, Any]) -> float:
    return float(info["time"]["updated"] or info["time"]["created"] or 0)


def _open_db(db: Path) -> AbstractContextManager[sqlite3.Connection]:
    # Read-only, and no side files left: the lab never writes OpenCode's database, even while OpenCode runs.
    return read_only(db, what="OpenCode's database", expected="a readable opencode.db, or an `opencode export <sessionID>` file")


def _read_database(source: Source, file: str) -> Transcript:
    db = source.path
    notes = ImportNotes()
    skips = _Skips(notes)
    with _open_db(db) as con:
        infos = _db_sessions(con, db)
        for session in infos.values():
            # A count for listings, not part of the session info OpenCode writes.
            del session["messages"]
        if source.session is not None:
            sid = source.session
        else:
            candidates = [(key, value, _db_updated(value)) for key, value in infos.items()]
            sid = _pick(candidates, db.name, "--session ID picks one, and `opencode export <sessionID>` writes one as a file this lab reads,", notes)
        parts: dict[str, list[Any]] = {}
        for mid, pid, data in con.execute(
            "SELECT message_id, id, data FROM part WHERE message_id IN (SELECT id FROM message WHERE session_id = ?) ORDER BY message_id, id",
            (sid,),
        ):
            part = _row_object(data, "part", f"part {pid}", skips)
            if part is not None:
                parts.setdefault(mid, []).append({**part, "id": pid, "messageID": mid, "sessionID": sid})
        entries: list[Any] = []
        for mid, data in con.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (sid,)):
            info = _row_object(data, "message", f"message {mid}", skips)
            if info is not None:
                entries.append({"info": {**info, "id": mid, "sessionID": sid}, "parts": parts.get(mid, [])})
    skips.warn()
    if not entries:
        raise TranscriptError(f"session {sid} has no readable message", file=str(db), where=f"message (session {sid})", expected="message rows with JSON data")
    return opencode.from_messages(entries, file=file, path=f"message[{sid}]", info=infos[sid], notes=notes)


def _listed(path: Path) -> list[session_pick.SessionInfo]:
    source = locate(path)
    if source is None:
        raise TranscriptError("not OpenCode storage", file=str(path), expected=_EXPECTED)
    rows: list[tuple[str, dict[str, Any] | None, float, int]]
    if source.kind == "database":
        with _open_db(source.path) as con:
            rows = [(sid, info, _db_updated(info), info["messages"]) for sid, info in _db_sessions(con, source.path).items()]
    else:
        root = source.path
        resolved = root.resolve()
        # Unreadable session info files are counted by a read; a listing just lacks their titles.
        infos = _session_infos(root, resolved, _Skips(ImportNotes()), None)
        rows = [(sid, info, upd, len(list((root / "message" / sid).glob("*.json")))) for sid, info, upd in _storage_candidates(root, resolved, infos)]
    out = []
    for sid, info, updated, count in rows:
        title = (info or {}).get("title")
        parent = (info or {}).get("parentID")
        out.append(session_pick.SessionInfo(
            id=sid, title=title if isinstance(title, str) and title else None, messages=count,
            updated=session_pick.iso_time(updated) if updated else None, format=opencode.NAME,
            kind=f"subagent of {parent}" if isinstance(parent, str) and parent else None,
        ))
    return out


def list_sessions(path: str | Path) -> list[session_pick.SessionInfo]:
    """The sessions with messages of a storage root, data dir or database, newest first."""
    return session_pick.newest_first(_listed(Path(path)))


def read_session(path: str | Path, session: str) -> Transcript:
    """The session ``session`` of a storage root, data dir or database (an id ``list_sessions`` gives)."""
    p = Path(path)
    source = locate(p)
    if source is None or source.session is not None:
        raise TranscriptError("not a storage root, data dir or database of OpenCode sessions", file=str(p), expected=_EXPECTED)
    listed = list_sessions(p)
    # Only a listed id is read: a name typed by a user never becomes a path unchecked.
    if session not in {s.id for s in listed}:
        where = source.path.name if source.kind == "database" else str(source.path)
        raise session_pick.unknown_session(session, [s.id for s in listed], file=str(p), what=f"OpenCode's {where}")
    return _read(Source(source.kind, source.path, session), p)


def _holds(path: Path) -> bool:
    source = locate(path)
    return source is not None and source.session is None


def read_folder(path: str | Path) -> Transcript:
    """One OpenCode session from its storage (any entry point ``locate`` accepts)."""
    source = locate(path)
    if source is None:
        raise TranscriptError("not OpenCode storage", file=str(path), expected=_EXPECTED)
    return _read(source, Path(path))


def _read(source: Source, path: Path) -> Transcript:
    if source.kind == "storage":
        return _read_storage(source, str(path))
    t = _read_database(source, str(path))
    folders = storage_root(path)
    if folders is not None:
        t.notes.warnings.append(f"read {source.path.name}, OpenCode's current store; {folders} beside it is the copy from before its move to SQLite (pass it to read that)")
    return t

# OpenCode is one format: its export files (``opencode``), found by their head, and its storage, found by its path.
FORMAT = replace(
    opencode.FORMAT,
    kinds=frozenset({"file", "folder", "sqlite"}),
    finds=is_storage,
    read_found=read_folder,
    sessions=SessionSource(what="OpenCode's storage/ folder, its data dir or opencode.db", holds=_holds, list=_listed, read=read_session),
)
