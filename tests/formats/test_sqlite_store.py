"""lab.formats.databases.sqlite_store: one base for the database readers (one SessionInfo, one read-only connect, one listing)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.errors import TranscriptError
from lab.formats import FORMATS, SessionInfo, sessions
from lab.formats.databases import crush, cursor, goose_db, zed
from lab.formats.databases.sqlite_store import SqliteStore
from lab.formats.openai import agents_sdk_db
from tests.formats import test_agents_sdk_db, test_crush, test_cursor, test_goose_db, test_zed

# Each database reader and a builder of a small store of several sessions in its schema.
STORES: dict[str, tuple[object, Callable[[Path], Path]]] = {
    "goose_db": (goose_db, lambda tmp: test_goose_db._three(tmp).path),
    "crush": (crush, lambda tmp: test_crush._three(tmp).path),
    "cursor": (cursor, lambda tmp: test_cursor._two(tmp).path),
    "zed": (zed, lambda tmp: test_zed._two(tmp).path),
    "agents_sdk_db": (agents_sdk_db, test_agents_sdk_db._db),
}


@pytest.mark.parametrize("name", list(STORES))
def test_every_database_reader_lists_through_its_store(name: str, tmp_path: Path) -> None:
    module, build = STORES[name]
    store = module.STORE  # type: ignore[attr-defined]
    assert isinstance(store, SqliteStore) and store.format == name
    # The registry's session source is the store's.
    source = FORMATS[name].sessions
    assert source is not None and source.what == store.what
    path = build(tmp_path)
    listed = module.list_sessions(path)  # type: ignore[attr-defined]
    assert listed and all(type(s) is SessionInfo and s.format == name for s in listed)
    assert listed == store.list_sessions(path) == source.list(path)
    # ``sessions`` shows the same ids (newest first), and reads any of them back through the store.
    assert sorted(s.id for s in sessions(path)) == sorted(s.id for s in listed)


@pytest.mark.parametrize("name", list(STORES))
def test_the_store_connection_is_read_only(name: str, tmp_path: Path) -> None:
    module, build = STORES[name]
    path = build(tmp_path)
    before = path.read_bytes()
    with module.STORE.connect(path) as conn, pytest.raises(sqlite3.OperationalError):  # type: ignore[attr-defined]
        conn.execute("CREATE TABLE intruder (x)")
    assert path.read_bytes() == before


def test_a_file_that_is_no_database_says_so_in_the_store_s_words(tmp_path: Path) -> None:
    path = tmp_path / "not.db"
    path.write_text("hello", encoding="utf-8")
    with pytest.raises(TranscriptError, match="not a SQLite database") as err:
        goose_db.STORE.list_sessions(path)
    assert err.value.expected is not None and "Goose's sessions.db" in err.value.expected
