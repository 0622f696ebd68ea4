"""OpenCode's on-disk storage: every entry point, several sessions, damaged files, paths kept inside the root.

The trees are built in ``tmp_path`` from the export fixture (``fixtures/opencode/session.export.json``)
by the builders below, in the shapes OpenCode writes (anomalyco/opencode ``src/storage/storage.ts``:
``storage/session/<projectID>/<sessionID>.json``, ``storage/message/<sessionID>/<messageID>.json``,
``storage/part/<messageID>/<partID>.json``, each record whole; ``src/session/session.sql.ts`` and
``src/storage/json-migration.ts``: ``opencode.db`` with session/message/part tables whose ``data``
is the record without its ids). So every entry point must give the export's own transcript.
"""

from __future__ import annotations

import copy
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lab.cli.main import main
from lab.core.messages import Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats import load
from lab.formats.databases import opencode, opencode_storage
from lab.replayer.recorded import apply_recorded

EXPORT = Path(__file__).parent / "fixtures" / "opencode" / "session.export.json"
DOC: dict[str, Any] = json.loads(EXPORT.read_text(encoding="utf-8"))
SID = DOC["info"]["id"]
PROJECT = DOC["info"]["projectID"]


def _dump(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def _storage(data: Path, doc: dict[str, Any] = DOC, project: str = PROJECT) -> Path:
    """Write an export document as OpenCode's JSON storage under the data dir ``data``; the storage root."""
    root = data / "storage"
    sid = doc["info"]["id"]
    _dump(root / "session" / project / f"{sid}.json", doc["info"])
    for m in doc["messages"]:
        mid = m["info"]["id"]
        _dump(root / "message" / sid / f"{mid}.json", m["info"])
        for p in m["parts"]:
            _dump(root / "part" / mid / f"{p['id']}.json", {**p, "sessionID": sid, "messageID": mid})
    return root


_SCHEMA = """
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
  directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER, time_updated INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
  time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL);
"""


def _database(path: Path, docs: list[dict[str, Any]]) -> Path:
    """Write export documents into an ``opencode.db`` as OpenCode's migration does (ids in columns, not in data)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(_SCHEMA)
    for doc in docs:
        i = doc["info"]
        con.execute("INSERT INTO session VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (i["id"], PROJECT, i.get("parentID"), "s", i.get("directory", ""), i.get("title", ""), "1", i["time"]["created"], i["time"]["updated"]))
        for m in doc["messages"]:
            info = {k: v for k, v in m["info"].items() if k not in ("id", "sessionID")}
            t = m["info"]["time"]["created"]
            con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (m["info"]["id"], i["id"], t, t, json.dumps(info)))
            for p in m["parts"]:
                data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
                con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", (p["id"], m["info"]["id"], i["id"], t, t, json.dumps(data)))
    con.commit()
    con.close()
    return path


def _other(sid: str, updated: int, parent: str | None = None, title: str = "Another session") -> dict[str, Any]:
    """A second, small session: one prompt and one reply."""
    mid = f"msg_{sid}"
    info = {"id": sid, "title": title, "directory": "/home/dev/other", "time": {"created": updated - 1000, "updated": updated}}
    if parent:
        info["parentID"] = parent
    return {
        "info": info,
        "messages": [
            {"info": {"id": f"{mid}1", "sessionID": sid, "role": "user", "time": {"created": updated - 1000}},
             "parts": [{"id": f"prt_{sid}1", "type": "text", "text": f"hello from {sid}"}]},
            {"info": {"id": f"{mid}2", "sessionID": sid, "role": "assistant", "time": {"created": updated - 900}, "modelID": "m", "providerID": "p"},
             "parts": [{"id": f"prt_{sid}2", "type": "text", "text": "hi"}]},
        ],
    }


def _same(t: Transcript, ref: Transcript) -> None:
    """``t`` is the export's transcript: messages, counts and meta (the file it came from aside)."""
    assert t.messages == ref.messages
    assert t.notes.skipped == ref.notes.skipped and t.notes.records_read == ref.notes.records_read
    assert t.notes.unanswered_tool_uses == ref.notes.unanswered_tool_uses
    assert t.meta.model_copy(update={"source_path": None}) == ref.meta.model_copy(update={"source_path": None})
    # Same warnings; only where a message sits reads differently (message/<id>[i] for $.messages[i]).
    assert len(t.notes.warnings) == len(ref.notes.warnings)


@pytest.fixture(scope="module")
def ref() -> Transcript:
    return load(EXPORT)


# --- entry points ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(lambda data: data / "storage" / "message" / SID, id="message-folder"),
        pytest.param(lambda data: data / "storage", id="storage-root"),
        pytest.param(lambda data: data, id="data-dir"),
        pytest.param(lambda data: data / "storage" / "session" / PROJECT / f"{SID}.json", id="session-info-file"),
    ],
)
def test_every_storage_entry_point_gives_the_export(tmp_path: Path, ref: Transcript, entry: Any) -> None:
    _storage(tmp_path)
    path = entry(tmp_path)
    t = load(path)
    _same(t, ref)
    assert t.meta.source_format == opencode.NAME and t.meta.source_path == str(path)
    assert load(path, format="opencode").messages == ref.messages


@pytest.mark.parametrize("entry", ["file", "data-dir"])
def test_the_database_gives_the_export(tmp_path: Path, ref: Transcript, entry: str) -> None:
    db = _database(tmp_path / "opencode.db", [DOC])
    t = load(db if entry == "file" else tmp_path)
    _same(t, ref)


def test_reading_a_wal_database_leaves_it_and_its_folder_as_they_were(tmp_path: Path, ref: Transcript) -> None:
    # OpenCode runs its database in WAL mode; a plain read-only open of one leaves -wal/-shm files behind.
    db = _database(tmp_path / "opencode.db", [DOC])
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    before = (sorted(p.name for p in tmp_path.iterdir()), db.read_bytes())
    _same(load(db), ref)
    assert (sorted(p.name for p in tmp_path.iterdir()), db.read_bytes()) == before


def test_a_database_beside_old_folders_is_read_and_the_folders_named(tmp_path: Path, ref: Transcript) -> None:
    _storage(tmp_path, _other("ses_old", 1767000000000))
    _database(tmp_path / "opencode.db", [DOC])
    t = load(tmp_path)
    assert t.messages == ref.messages
    assert any("before its move to SQLite" in w and str(tmp_path / "storage") in w for w in t.notes.warnings)
    # The folders stay readable when named.
    assert load(tmp_path / "storage").meta.session_id == "ses_old"


def test_mapping_survives_the_storage(tmp_path: Path, ref: Transcript) -> None:
    t = load(_storage(tmp_path) / "message" / SID)
    pairs = tool_pairs(t.messages)
    assert set(pairs) == {f"toolu_0{i}" for i in range(1, 8)} and t.notes.unanswered_tool_uses == ["toolu_07"]
    usages = [m.usage for m in t.messages if m.role == "assistant"]
    # step-finish tokens and cost: reasoning billed as output.
    assert usages[0] == Usage(input_tokens=1800, output_tokens=110, cache_write_tokens=1500, cost_usd=0.01)
    marker = t.messages[9]
    assert marker.boundary is not None and marker.boundary.strategy == opencode.STRATEGY and marker.boundary.trigger == "auto"
    undone, found, _ = apply_recorded(t, "undo")
    assert len(found) == 1 and len(undone.messages) == len(t.messages) - 4


def test_parts_and_messages_go_by_id_not_by_file_time(tmp_path: Path, ref: Transcript) -> None:
    root = _storage(tmp_path)
    # Files written in reverse order (newest mtime on the first part): the ids decide, as in OpenCode.
    files = sorted((root / "part").rglob("*.json"), reverse=True)
    for n, f in enumerate(files):
        os.utime(f, (1_000_000 + n, 1_000_000 + n))
    assert load(root / "message" / SID).messages == ref.messages


# --- several sessions -----------------------------------------------------------------------------


def test_several_sessions_read_the_newest_and_say_how_to_pick_another(tmp_path: Path, ref: Transcript) -> None:
    _storage(tmp_path)
    _storage(tmp_path, _other("ses_older", DOC["info"]["time"]["updated"] - 5000))
    # A subagent session updated later is not the one a user means.
    _storage(tmp_path, _other("ses_child", DOC["info"]["time"]["updated"] + 5000, parent=SID))
    t = load(tmp_path / "storage")
    assert t.messages == ref.messages
    (warning,) = [w for w in t.notes.warnings if "sessions in" in w]
    assert "3 sessions" in warning and SID in warning and "ses_older" in warning
    assert str(tmp_path / "storage" / "message" / "<sessionID>") in warning
    assert load(tmp_path / "storage" / "message" / "ses_older").meta.session_id == "ses_older"


def test_several_sessions_in_the_database(tmp_path: Path, ref: Transcript) -> None:
    db = _database(tmp_path / "opencode.db", [_other("ses_older", 1767000000000), DOC])
    t = load(db)
    assert t.messages == ref.messages
    assert any("2 sessions in opencode.db" in w and "opencode export" in w and "ses_older" in w for w in t.notes.warnings)


# --- damage ---------------------------------------------------------------------------------------


def test_corrupt_files_and_missing_part_folders_are_skipped_and_counted(tmp_path: Path, ref: Transcript) -> None:
    root = _storage(tmp_path)
    (root / "part" / "msg_03" / "prt_0301.json").write_text('{"id": "prt_0301", "type": "te', encoding="utf-8")
    (root / "message" / SID / "msg_00.json").write_text("[1, 2]", encoding="utf-8")
    for f in (root / "part" / "msg_08").iterdir():
        f.unlink()
    (root / "part" / "msg_08").rmdir()
    t = load(root)
    s = t.notes.skipped
    assert s["file:part (unreadable)"] == 1 and s["file:message (unreadable)"] == 1 and s["file:parts folder missing"] == 1
    assert any(w.startswith("file:part (unreadable): 1 skipped") and "prt_0301.json" in w for w in t.notes.warnings)
    assert len(t.messages) < len(ref.messages)  # msg_08's prompt is gone, the rest imports
    assert set(tool_pairs(t.messages)) == set(tool_pairs(ref.messages))


def test_an_unreadable_session_info_is_counted_and_the_session_still_read(tmp_path: Path, ref: Transcript) -> None:
    root = _storage(tmp_path)
    (root / "session" / PROJECT / f"{SID}.json").write_text("{oops", encoding="utf-8")
    t = load(root / "message" / SID)
    assert t.messages == ref.messages and t.notes.skipped["file:session (unreadable)"] == 1
    assert t.meta.title == "OpenCode session"  # no info: the reader's default title


@pytest.mark.parametrize("case", ["empty-message-folder", "no-sessions", "empty-database"])
def test_no_messages_is_refused_clearly(tmp_path: Path, case: str) -> None:
    root = tmp_path / "storage"
    (root / "part").mkdir(parents=True)
    (root / "message" / "ses_empty").mkdir(parents=True)
    path = {"empty-message-folder": root / "message" / "ses_empty", "no-sessions": root, "empty-database": _database(tmp_path / "db" / "opencode.db", [])}[case]
    with pytest.raises(TranscriptError) as err:
        load(path)
    assert "no" in str(err.value) and ("message" in str(err.value) or "session" in str(err.value))


@pytest.mark.parametrize("content", [b"SQLite format 3\x00" + b"\x00" * 200, None], ids=["broken-sqlite", "foreign-sqlite"])
def test_a_database_that_cannot_be_read_is_refused_naming_it(tmp_path: Path, content: bytes | None) -> None:
    db = tmp_path / "opencode.db"
    if content is None:
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE notes (x TEXT)")
        con.commit()
        con.close()
    else:
        db.write_bytes(content)
    with pytest.raises(TranscriptError) as err:
        load(db)
    assert err.value.file == str(db)


# --- paths stay inside the root -------------------------------------------------------------------


def test_ids_in_file_contents_never_become_paths(tmp_path: Path, ref: Transcript) -> None:
    root = _storage(tmp_path / "data")
    # msg_01.json's contents name another message and session: the file and folder names decide.
    info = copy.deepcopy(DOC["messages"][0]["info"])
    info.update(id="../../../outside/msg_x", sessionID="../../outside")
    _dump(root / "message" / SID / "msg_01.json", info)
    _dump(tmp_path / "outside" / "msg_x" / "prt_secret.json", {"id": "prt_secret", "type": "text", "text": "SECRET outside the root"})
    _dump(tmp_path / "outside" / "prt_secret.json", {"id": "prt_secret", "type": "text", "text": "SECRET outside the root"})
    t = load(root / "message" / SID)
    assert "SECRET" not in json.dumps([m.model_dump(mode="json") for m in t.messages])
    # The message is msg_01 (its file's name) with msg_01's parts, as in the export.
    assert t.messages == ref.messages


def test_links_out_of_the_root_are_not_followed(tmp_path: Path, ref: Transcript) -> None:
    root = _storage(tmp_path / "data")
    outside = tmp_path / "outside"
    _dump(outside / "prt_secret.json", {"id": "prt_secret", "type": "text", "text": "SECRET outside the root"})
    # A part folder and a part file that are links out of the storage root.
    (root / "part" / "msg_zz").symlink_to(outside, target_is_directory=True)
    _dump(root / "message" / SID / "msg_zz.json", {"id": "msg_zz", "sessionID": SID, "role": "user", "time": {"created": 1767261628000}})
    (root / "part" / "msg_01" / "prt_0199.json").symlink_to(outside / "prt_secret.json")
    t = load(root)
    assert "SECRET" not in json.dumps([m.model_dump(mode="json") for m in t.messages])
    assert t.notes.skipped["file:outside the storage root"] == 2


def test_names_that_are_not_ids_are_not_read(tmp_path: Path, ref: Transcript) -> None:
    root = _storage(tmp_path)
    _dump(root / "message" / SID / "msg 99.json", {"id": "x", "role": "user"})
    t = load(root)
    assert t.messages == ref.messages and t.notes.skipped["file:not an id"] == 1


# --- detection --------------------------------------------------------------------------------------


def test_only_opencode_storage_is_claimed(tmp_path: Path) -> None:
    plain = tmp_path / "message" / "ses_x"
    plain.mkdir(parents=True)
    # A folder named message/ with no part/ or session/ beside it is someone else's.
    assert opencode_storage.locate(plain) is None and opencode_storage.locate(tmp_path) is None
    assert not opencode_storage.is_storage(EXPORT)
    assert not opencode_storage.is_storage(Path(__file__).parent / "fixtures" / "cline" / "task")
    # A database is OpenCode's by its name, or (a renamed copy) by its tables; any other SQLite file is not.
    renamed = tmp_path / "backup.sqlite"
    _database(renamed, [])
    assert opencode_storage.database(renamed) == renamed
    other_db = tmp_path / "sessions.db"
    con = sqlite3.connect(other_db)
    con.execute("CREATE TABLE sessions (id TEXT)")
    con.execute("CREATE TABLE messages (id TEXT)")
    con.close()
    assert opencode_storage.database(other_db) is None
    root = _storage(tmp_path / "data")
    # Named like OpenCode's but holding Goose's tables, it is Goose's (read by the file detection), alone or in a data dir.
    goose_named = tmp_path / "goose" / "opencode.db"
    goose_named.parent.mkdir()
    other_db.rename(goose_named)
    assert opencode_storage.database(goose_named) is None and opencode_storage.locate(goose_named.parent) is None
    # Named like OpenCode's and holding neither, it is claimed, so reading it says what it lacks.
    unknown = tmp_path / "opencode-dev.db"
    sqlite3.connect(unknown).execute("CREATE TABLE t (x)").connection.close()
    assert opencode_storage.database(unknown) == unknown
    assert opencode_storage.locate(root / "message" / SID) == opencode_storage.Source("storage", root, SID)
    assert opencode_storage.locate(tmp_path / "data") == opencode_storage.Source("storage", root)


# --- command line ---------------------------------------------------------------------------------


def test_the_cli_imports_and_exports_a_storage_folder(tmp_path: Path, ref: Transcript, capsys: pytest.CaptureFixture[str]) -> None:
    root = _storage(tmp_path / "data")
    out = tmp_path / "session.lab.json"
    assert main(["import", str(root), "--out", str(out)]) == 0
    assert "as opencode" in capsys.readouterr().out and out.is_file()
    request = tmp_path / "request.json"
    assert main(["export", str(root / "message" / SID), "--to", "anthropic", "--out", str(request), "--close-pending"]) == 0
    body = json.loads(request.read_text(encoding="utf-8"))
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    assert uses == results == set(tool_pairs(ref.messages))
    # Every verb prints the import's warnings (a call left running, a failed request) once on stderr.
    assert "never finished" in capsys.readouterr().err
    empty = tmp_path / "empty" / "storage"
    (empty / "message").mkdir(parents=True)
    (empty / "part").mkdir()
    assert main(["import", str(empty), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
