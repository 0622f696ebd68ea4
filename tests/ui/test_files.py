"""lab.ui.files as plain functions: the names uploads are saved under, and the warnings that name a store's other sessions."""

from __future__ import annotations

from pathlib import Path

from lab.ui import files
from tests.formats.test_goose_db import _from_fixture
from tests.formats.test_opencode_storage import DOC, _database, _other


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
