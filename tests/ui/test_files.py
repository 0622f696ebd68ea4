"""lab.views.files as plain functions: where uploads go and under what names, the folders they live in, and the warnings that name a store's other sessions."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

import pytest

from lab.errors import TranscriptError
from lab.formats import sessions
from lab.formats.session_choice import SessionInfo
from lab.views import files
from lab.views.files import digest
from tests.app.test_session_picker import _goose
from tests.formats.test_cursor import _two as _cursor_two
from tests.formats.test_goose_db import _from_fixture
from tests.app.test_session import _bad_jsonl
from tests.formats.test_opencode_storage import DOC, _database, _other
from tests.formats.test_sessions import CHAT, _output, _record


class TestSavedNames:
    def test_an_opencode_db_under_any_name_is_saved_as_opencode_db(self, tmp_path: Path) -> None:
        data = _database(tmp_path / "src" / "opencode.db", [DOC]).read_bytes()
        assert files.save_upload(tmp_path / "up", "../../my backup.db", data) == tmp_path / "up" / "opencode.db"
        assert sorted(p.name for p in (tmp_path / "up").iterdir()) == ["opencode.db"]
        assert files.save_upload(tmp_path / "up2", "opencode-beta.db", data).name == "opencode-beta.db"

    def test_other_sqlite_files_keep_their_sanitised_name(self, tmp_path: Path) -> None:
        db, _ = _from_fixture(tmp_path)
        assert files.save_upload(tmp_path / "up", "sessions (2).db", db.path.read_bytes()).name == "sessions_2_.db"
        corrupt = b"SQLite format 3\x00" + b"\xde\xad" * 100
        assert files.save_upload(tmp_path / "up", "opencode (3).db", corrupt).name == "opencode_3_.db"

    def test_several_sessions_picks_the_warnings_that_name_the_others(self, tmp_path: Path) -> None:
        t, fmt = files.import_file(_database(tmp_path / "opencode.db", [DOC, _other("ses_older", 1)]), shown_as="mine.db")
        assert fmt == "opencode"
        (several,) = files.several_sessions(t.notes)
        assert "ses_older" in several and str(tmp_path) not in several
        assert len(t.notes.warnings) > 1  # the session's own warnings are not taken for it


class TestFiles:
    def test_a_cursor_database_lists_its_composers_and_reads_another(self, tmp_path: Path) -> None:
        db = _cursor_two(tmp_path)
        t, fmt, listed = files.import_upload(db.path, shown_as="state.vscdb")
        assert fmt == "cursor" and t.meta.session_id == "c-new" and [s.id for s in listed] == ["c-empty", "c-new", "c-old"]
        store = files.store_sessions(db.path, "state.vscdb", digest(db.path.read_bytes()), t, listed)
        other, fmt = files.read_stored_session(store, "c-old")
        assert fmt == "cursor" and other.meta.session_id == "c-old" and other.messages != t.messages

    @pytest.mark.parametrize(
        ("name", "safe"),
        [("../../etc/passwd", "passwd"), ("a\\..\\b.json", "b.json"), ("..", "upload"), ("my file (1).jsonl", "my_file_1_.jsonl"), ("\x00evil\n.json", "evil_.json")],
        ids=["dotdot", "backslash", "only-dots", "spaces", "control"],
    )
    def test_sanitize_name(self, name: str, safe: str) -> None:
        assert files.sanitize_name(name) == safe

    def test_upload_is_confined_to_its_folder(self, tmp_path: Path) -> None:
        path = files.save_upload(tmp_path / "up", "../../escape.json", b"{}")
        assert path.parent == tmp_path / "up" and path.read_bytes() == b"{}"

    def test_import_error_names_the_file_as_uploaded(self, tmp_path: Path) -> None:
        path = files.save_upload(tmp_path, "x.jsonl", _bad_jsonl())
        with pytest.raises(Exception) as err:
            files.import_file(path, shown_as="x (copy).jsonl")
        assert str(err.value).startswith("x (copy).jsonl: line 3")
        assert str(tmp_path) not in str(err.value)

    def test_session_dir_removed_with_its_owner(self, tmp_path: Path) -> None:
        holder = files.SessionDir(tmp_path)
        path = holder.path
        assert path.is_dir() and path.parent == tmp_path
        del holder
        gc.collect()
        assert not path.exists()

    def test_sweep_removes_only_old_session_dirs(self, tmp_path: Path) -> None:
        old, new, other = tmp_path / "s-old", tmp_path / "s-new", tmp_path / "keep"
        for d in (old, new, other):
            d.mkdir()
        two_days_ago = time.time() - 2 * 86400
        os.utime(old, (two_days_ago, two_days_ago))
        os.utime(other, (two_days_ago, two_days_ago))
        assert files.sweep_old_dirs(tmp_path) == [old]
        assert not old.exists() and new.exists() and other.exists()


class TestStoreSessions:
    def test_lists_then_reads_another_session_of_a_db(self, tmp_path: Path) -> None:
        db = _goose(tmp_path)
        t, fmt, listed = files.import_upload(db.path, shown_as="mine.db")
        assert fmt == "goose_db" and [s.id for s in listed] == [s.id for s in sessions(db.path)] == ["20260101_1", "20250101_1"]
        store = files.store_sessions(db.path, "mine.db", digest(db.path.read_bytes()), t, listed)
        assert store.shown == "20260101_1" and store.transcript_label() == "mine.db · session 20260101_1"
        other, fmt = files.read_stored_session(store, "20250101_1")
        assert fmt == "goose_db" and len(other.messages) == 2
        assert store.transcript_key("20250101_1") != store.transcript_key("20260101_1")

    @pytest.mark.parametrize(
        "records", [["a", "b", "c"], ["a", "a", None]], ids=["by-instance-id", "by-index"]
    )
    def test_the_default_read_is_marked_where_the_reader_names_no_id(self, tmp_path: Path, records: list[str | None]) -> None:
        # An OpenHands output.jsonl reads its first record by default, listed last; aider its last session, listed first.
        for path in (_output(tmp_path, [_record(iid, f"task {n}") for n, iid in enumerate(records)]), CHAT):
            t, _, listed = files.import_upload(path)
            store = files.store_sessions(path, path.name, "d", t, listed)
            assert len(store.ids) >= 2
            assert files.import_file(path, session=store.shown)[0].messages == t.messages
            assert all(files.import_file(path, session=other)[0].messages != t.messages for other in store.ids if other != store.shown)

    def test_a_one_session_file_lists_nothing(self, tmp_path: Path) -> None:
        db, twin = _from_fixture(tmp_path)
        assert files.import_upload(db.path)[2] == []
        assert files.import_upload(twin)[2] == []  # a session JSONL: a format of one session per file

    def test_an_id_not_listed_or_a_replaced_file_is_an_error_naming_the_upload(self, tmp_path: Path) -> None:
        db = _goose(tmp_path)
        t, _, listed = files.import_upload(db.path, shown_as="mine.db")
        store = files.store_sessions(db.path, "mine.db", digest(db.path.read_bytes()), t, listed)
        with pytest.raises(TranscriptError, match="no session 'nope' in the upload") as e:
            files.read_stored_session(store, "nope")
        assert e.value.file == "mine.db"
        db.path.write_bytes(b"other bytes")
        with pytest.raises(TranscriptError, match="no longer there"):
            files.read_stored_session(store, "20250101_1")

    def test_labels_are_one_line_and_say_what_is_unknown(self, tmp_path: Path) -> None:
        odd = SessionInfo(id="a\nb", title="  ", messages=1234, updated=None, format="goose_db", kind="sub_agent")
        plain = SessionInfo(id="s1", title="t" * 200, messages=1, updated="2026-01-01T10:00:00+00:00", format="goose_db")
        store = files.StoreSessions(path=str(tmp_path / "x"), name="x.db", digest="d", sessions=(plain, odd), shown="a\nb")
        assert store.label("a\nb") == "(untitled) [sub_agent] · a b · 1,234 messages · no time recorded"
        assert store.label("s1") == "t" * 79 + "… · s1 · 1 messages · updated 2026-01-01 10:00:00"
        assert store.describe() == "x.db holds 2 sessions, newest first; showing session 2 of 2: " + store.label("a\nb")
