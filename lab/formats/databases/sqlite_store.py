"""Reading an agent's SQLite store without ever changing it: the one base of the database readers.

Goose's sessions.db, Crush's crush.db, Cursor's state.vscdb, Zed's threads.db and
the OpenAI Agents SDK's session database each declare a ``SqliteStore``: what the
file is called in errors, how to list its sessions from a connection, and how to
read one. The store gives them the rest, the same for all: one read-only
connection (``read_only``), ``list_sessions`` (one ``SessionInfo`` type for every
listing) and the ``SessionSource`` that ``lab.formats.sessions`` and
``load(path, session=ID)`` go through. OpenCode's opencode.db is read through
``read_only`` as well (``opencode_storage``, which also reads its folder storage).

The user's agent may be running and writing that file. So it is opened through
a ``file:...?mode=ro`` URI: SQLite refuses every write. A database in WAL mode
still makes a read-only connection create ``-wal``/``-shm`` files beside it,
and they stay behind. When no ``-wal`` or ``-journal`` file exists (nothing is
being written), the URI also says ``immutable=1``: no locks, no side files.
While one exists, the read goes through SQLite's locks and sees the committed
rows. ``as_uri`` percent-encodes the path, so a ``?`` or ``#`` in a file name
cannot add URI parameters. Every SQLite error becomes a ``TranscriptError``
naming the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import TranscriptError
from ..history_builder import parse_timestamp
from ..jsonio import check_file
from ..registry import SessionInfo, SessionSource

if TYPE_CHECKING:  # pragma: no cover
    from ...core.messages import Transcript
    from ..registry import FileHead

__all__ = ["SqliteStore", "SQLITE_HEADER", "is_sqlite", "read_only", "select", "table_names", "column_names", "has_columns", "require_tables", "session_rows", "score_database", "schema_sniff"]

SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite(path: str | Path) -> bool:
    """Whether the file starts with the 16-byte SQLite header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


@contextmanager
def read_only(path: Path, *, what: str, expected: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the database at ``path`` (``what`` names it in errors, e.g. "Goose's session database")."""
    file = str(path)
    if not is_sqlite(path):
        raise TranscriptError("not a SQLite database", file=file, expected=f"{expected}, a file starting 'SQLite format 3'")
    uri = path.resolve().as_uri() + "?mode=ro"
    if not any(path.with_name(path.name + suffix).exists() for suffix in ("-wal", "-journal")):
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise TranscriptError(f"cannot open {what} read-only: {exc}", file=file, expected=expected) from None
    with closing(conn):
        try:
            yield conn
        except sqlite3.Error as exc:
            raise TranscriptError(f"cannot read {what}: {exc}", file=file, expected=expected) from None


def select(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
    """Run one query; the readers' only way to query, so it stays SELECTs (the connection refuses writes anyway)."""
    if not sql.lstrip().upper().startswith("SELECT"):
        raise ValueError(f"a session reader runs SELECTs only, not {sql.split()[0]!r}")
    return conn.execute(sql, params)


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables."""
    return {r[0] for r in select(conn, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def column_names(conn: sqlite3.Connection, table: str) -> set[str]:
    """The names of a table's columns (none for a table the database lacks)."""
    return {r[0] for r in select(conn, "SELECT name FROM pragma_table_info(?)", (table,))}


def has_columns(conn: sqlite3.Connection, required: Mapping[str, Sequence[str]]) -> bool:
    """Whether every table of ``required`` exists with at least its columns: how a reader knows its own schema."""
    return all(set(cols) <= column_names(conn, table) for table, cols in required.items())


def require_tables(
    conn: sqlite3.Connection, required: Mapping[str, Sequence[str]], *, file: str, expected: str, not_ours: str, unknown: str
) -> tuple[set[str], dict[str, set[str]]]:
    """The database's tables and the columns of each ``required`` one; a ``TranscriptError`` when a table or a
    column of ``required`` is missing: "a SQLite database, but not ``not_ours``: no table ...", or "``unknown``
    of an unknown schema: no column ..." (``not_ours`` "Crush's", ``unknown`` "a Goose session database")."""
    tables = table_names(conn)
    missing = [t for t in required if t not in tables]
    if missing:
        raise TranscriptError(f"a SQLite database, but not {not_ours}: no table {' or '.join(missing)}", file=file, expected=expected)
    columns = {t: column_names(conn, t) for t in required}
    lacking = [f"{t}.{c}" for t, cols in required.items() for c in cols if c not in columns[t]]
    if lacking:
        raise TranscriptError(f"{unknown} of an unknown schema: no column {', '.join(lacking)}", file=file, expected=expected)
    return tables, columns


def session_rows(conn: sqlite3.Connection, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of a ``sessions`` table whose ``messages`` rows point at them by ``session_id`` (the layout
    Goose and Crush share): each as a dict of ``columns`` plus ``id``, ``_rowid`` and ``_count`` (its
    messages), newest ``updated_at`` first (compared as times; ties: the later row first).

    ``columns`` must come from the reader's own fixed list, never from the file: they are put into the SQL.
    """
    cols = "".join(f', s."{c}"' for c in columns)
    sql = f'SELECT s.rowid, s."id"{cols}, COUNT(m.rowid) FROM sessions s LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.rowid'
    out: list[dict[str, Any]] = []
    for row in select(conn, sql):
        rec = dict(zip(("_rowid", "id", *columns, "_count"), row, strict=True))
        if rec["id"] is not None:
            rec["id"] = str(rec["id"])
            out.append(rec)
    floor = datetime.min.replace(tzinfo=UTC)
    # Goose writes datetime('now') text, an imported legacy session RFC 3339, Crush epoch numbers: compared as times.
    out.sort(key=lambda r: (parse_timestamp(r.get("updated_at")) or floor, r["_rowid"]), reverse=True)
    return out


def score_database(probe: FileHead, score: Callable[[sqlite3.Connection], int], *, unreadable: int = 0) -> int:
    """A session-database reader's detection score: 0 for a file without the SQLite header, ``score`` of a
    read-only connection to it, ``unreadable`` when SQLite cannot open or read it."""
    if not probe.head.startswith(SQLITE_HEADER.decode("ascii")):
        return 0
    try:
        with read_only(probe.path, what="the SQLite file", expected="a SQLite database") as conn:
            return score(conn)
    except TranscriptError:
        return unreadable


def schema_sniff(required: Mapping[str, Sequence[str]]) -> Callable[[FileHead], int]:
    """A reader's ``sniff`` that knows its database by its schema: 100 when every table of ``required``
    has at least its columns, else 0 (``score_database``'s rules for a file that is no SQLite or cannot be read)."""
    return lambda probe: score_database(probe, lambda conn: 100 if has_columns(conn, required) else 0)


@dataclass(frozen=True)
class SqliteStore:
    """One agent's SQLite store, as its reader declares it; the connection, the listing and the session source are shared."""

    # The format its sessions are listed as.
    format: str
    # What holds the sessions, in errors and the session source: "Goose's sessions.db".
    what: str
    # What a file that is not it should have been, in errors: "Goose's sessions.db (tables sessions and messages)".
    expected: str
    # Its sessions, from a read-only connection to the checked file (the path, for errors), in the store's own order.
    rows: Callable[[sqlite3.Connection, Path], list[SessionInfo]]
    # Reads one session (None: the reader's default, the newest).
    read: Callable[[Path, str | None], Transcript]
    # How errors of the connection name the file: "the SQLite database", "Zed's threads database".
    label: str = "the SQLite database"

    def connect(self, path: Path) -> AbstractContextManager[sqlite3.Connection]:
        """A read-only connection to the store (``read_only``: never a write, no side files when nothing writes it)."""
        return read_only(path, what=self.label, expected=self.expected)

    def list_sessions(self, path: str | Path) -> list[SessionInfo]:
        """Every session of the store (empty ones too), as ``rows`` lists them."""
        p = check_file(path)
        with self.connect(p) as conn:
            return self.rows(conn, p)

    def read_session(self, path: Path, session: str) -> Transcript:
        return self.read(path, session)

    def source(self) -> SessionSource:
        """The store as the ``Format.sessions`` of its reader: any file of it holds several sessions."""
        return SessionSource(what=self.what, holds=Path.is_file, list=self.list_sessions, read=self.read_session)
