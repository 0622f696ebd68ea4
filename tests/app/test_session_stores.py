"""The Session page reads the stores agents keep: Goose's sessions.db, OpenCode's opencode.db, and archives of session folders."""

from __future__ import annotations

import copy
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from lab.formats.containers import archive
from lab.views import files
from lab.views.markdown import literal_markdown
from tests.app.conftest import load_sample, metrics, no_exception, switch_to
from tests.formats.test_goose_db import _conversation, _from_fixture
from tests.formats.test_opencode_storage import DOC, _database, _other, _storage
from tests.formats.test_openhands_v1 import TestConversationFolder

CLINE_TASK = Path(__file__).parents[1] / "formats" / "fixtures" / "cline" / "task"


def _upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key="session.upload").set_value((name, data, "application/octet-stream")).run()
    no_exception(at)
    return at


def _format(at: AppTest) -> str:
    (line,) = [t.value for t in at.text if "detected format: " in t.value]
    return line.rsplit("detected format: ", 1)[1]


def _infos(at: AppTest) -> list[str]:
    """The info boxes as the user reads them (the page escapes markdown in transcript text)."""
    return [re.sub(r"\\(.)", r"\1", i.value) for i in at.info]


def _several(at: AppTest) -> str:
    """The reader's warning naming the other sessions: in the import notes, while the picker lists them instead of an info box."""
    (several,) = files.several_sessions(at.session_state["lab.transcript"].notes)
    assert not [i for i in _infos(at) if i == several]
    return several


def _picker_ids(at: AppTest) -> list[str]:
    return [o.split(" · ")[1] for o in at.selectbox(key="session.pick").options]


def _replays(at: AppTest) -> None:
    """The loaded session replays: the Timeline draws its charts, with no error."""
    switch_to(at, "timeline")
    assert len(list(at.get("plotly_chart"))) == 3
    assert not at.error


def _zip_folder(folder: Path, out: Path) -> bytes:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.rglob("*")):
            zf.write(f, str(Path(folder.name) / f.relative_to(folder)))
    return out.read_bytes()


def _zip(out: Path, members: dict[str, bytes]) -> bytes:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.read_bytes()


def _no_temp_paths(at: AppTest, app_tmp: Path) -> None:
    # The upload and unpack folders are the lab's: the user is told about the files as uploaded.
    shown = [e.value for e in at.info] + [e.value for e in at.error] + [str(df.value.to_dict()) for df in at.dataframe]
    assert not any(str(app_tmp) in s for s in shown)


def _session_folder(app_tmp: Path) -> Path:
    (folder,) = [p for p in app_tmp.iterdir() if p.name.startswith("s-")]
    return folder


# --- session stores -------------------------------------------------------------------------------


class TestStores:
    def test_a_goose_sessions_db_loads_the_newest_names_the_others_and_replays(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path) -> None:
        db, _ = _from_fixture(tmp_path)
        db.session("20250101_1", "2025-01-01 09:00:00", name="an older one")
        _conversation(db, "20250101_1", "old")
        _upload(bare_app, "sessions.db", db.path.read_bytes())
        assert _format(bare_app) == "goose_db" and not bare_app.error
        several = _several(bare_app)
        assert _picker_ids(bare_app) == ["20260101_1", "20250101_1"]
        assert "holds 2 sessions" in several and "'20260101_1' (Fix add in calc)" in several and "others: 20250101_1" in several
        assert int(metrics(bare_app)["Tool calls"]) == 3
        _no_temp_paths(bare_app, _app_tmp)
        _replays(bare_app)

    @pytest.mark.parametrize("name", ["opencode.db", "opencode (1).db", "backup.sqlite"], ids=["as-named", "a-download-copy", "renamed"])
    def test_an_opencode_db_loads_whatever_the_browser_calls_it(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path, name: str) -> None:
        db = _database(tmp_path / "opencode.db", [DOC, _other("ses_older", DOC["info"]["time"]["updated"] - 5000)])
        _upload(bare_app, name, db.read_bytes())
        assert not bare_app.error, [e.value for e in bare_app.error]
        assert _format(bare_app) == "opencode"
        several = _several(bare_app)
        assert several.startswith("2 sessions in opencode.db") and "ses_older" in several
        assert _picker_ids(bare_app) == [DOC["info"]["id"], "ses_older"]
        assert int(metrics(bare_app)["Tool calls"]) == 7
        # Saved under the sanitised name, or as opencode.db: never outside the session's folder.
        saved = sorted(p.name for p in (_session_folder(_app_tmp) / "uploads").iterdir())
        assert saved == ["opencode.db"]
        _no_temp_paths(bare_app, _app_tmp)

    def test_an_opencode_db_replays(self, bare_app: AppTest, tmp_path: Path) -> None:
        _upload(bare_app, "opencode.db", _database(tmp_path / "opencode.db", [DOC]).read_bytes())
        assert _format(bare_app) == "opencode"
        _replays(bare_app)

    def test_the_titles_are_shown_as_text_not_markdown(self, bare_app: AppTest, tmp_path: Path) -> None:
        hostile: dict[str, Any] = copy.deepcopy(DOC)
        hostile["info"]["title"] = "[click me](javascript:alert(1)) <script>x</script> $x$"
        db = _database(tmp_path / "opencode.db", [hostile, _other("ses_older", DOC["info"]["time"]["updated"] - 5000)])
        _upload(bare_app, "opencode.db", db.read_bytes())
        raw = _several(bare_app)
        assert "[click me](javascript:alert(1)) <script>" in raw
        # The picker's options and the notes table are plain text; nothing renders the title as markdown.
        assert bare_app.selectbox(key="session.pick").options[0].startswith(hostile["info"]["title"] + " · ")
        assert any(raw in str(df.value.to_dict()) for df in bare_app.dataframe)
        rendered = [e.value for kind in (bare_app.markdown, bare_app.caption, bare_app.info, bare_app.warning) for e in kind]
        assert not any("<script>" in r or "](javascript:" in r for r in rendered)
        assert literal_markdown(raw) != raw


# --- archives of session folders ---------------------------------------------------------------------


class TestArchives:
    def test_a_zipped_cline_task_folder_loads_and_replays(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path) -> None:
        _upload(bare_app, "task.zip", _zip_folder(CLINE_TASK, tmp_path / "task.zip"))
        assert _format(bare_app) == "cline" and not bare_app.error
        assert any("task.zip" in t.value for t in bare_app.sidebar.text)
        # Unpacked in the session's folder and removed once read: the transcript is in memory.
        assert not (_session_folder(_app_tmp) / "unpacked").exists()
        _replays(bare_app)

    def test_a_tar_gz_of_an_openhands_v1_conversation_loads(self, bare_app: AppTest, tmp_path: Path) -> None:
        conv = TestConversationFolder()._folder(tmp_path / "src")
        out = tmp_path / "conv.tar.gz"
        with tarfile.open(out, "w:gz") as tf:
            tf.add(conv, arcname=conv.name)
        _upload(bare_app, "conv.tar.gz", out.read_bytes())
        assert _format(bare_app) == "openhands_v1" and not bare_app.error

    def test_a_zstd_codex_rollout_loads_as_the_file_it_holds(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path) -> None:
        import zstandard

        rollout = Path(__file__).parents[2] / "sample_sessions" / "codex-rollout-forecast.jsonl"
        _upload(bare_app, "rollout-2026-01-01.jsonl.zst", zstandard.ZstdCompressor().compress(rollout.read_bytes()))
        assert _format(bare_app) == "openai_responses" and not bare_app.error
        assert not (_session_folder(_app_tmp) / "unpacked").exists()
        _replays(bare_app)

    def test_a_damaged_gzip_is_one_error_and_the_app_goes_on(self, bare_app: AppTest) -> None:
        _upload(bare_app, "session.jsonl.gz", b"\x1f\x8b\x08\x00" + b"\x00" * 40)
        assert _one_error(bare_app).startswith("session.jsonl.gz: ")
        _still_works(bare_app)

    def test_a_zipped_opencode_storage_folder_names_the_others_inside_the_archive(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path) -> None:
        root = _storage(tmp_path / "data")
        _storage(tmp_path / "data", _other("ses_older", DOC["info"]["time"]["updated"] - 5000))
        _upload(bare_app, "storage.zip", _zip_folder(root, tmp_path / "storage.zip"))
        assert _format(bare_app) == "opencode"
        several = _several(bare_app)
        assert several.startswith("2 sessions in storage.zip/storage") and "ses_older" in several
        assert _picker_ids(bare_app) == [DOC["info"]["id"], "ses_older"]
        _no_temp_paths(bare_app, _app_tmp)


# --- bad input: one clear error, and the page still works ---------------------------------------------


def _one_error(at: AppTest) -> str:
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    assert "\n" not in errors[0] and "Traceback" not in errors[0]
    return errors[0]


def _still_works(at: AppTest) -> None:
    load_sample(at)
    assert metrics(at)["Messages"] == "81"


class TestBadInput:
    def test_a_corrupt_db(self, bare_app: AppTest) -> None:
        _upload(bare_app, "sessions.db", b"SQLite format 3\x00" + b"\xde\xad\xbe\xef" * 200)
        assert _one_error(bare_app).startswith("sessions.db: ")
        _still_works(bare_app)

    def test_a_zip_of_nothing_the_lab_reads(self, bare_app: AppTest, tmp_path: Path) -> None:
        _upload(bare_app, "photos.zip", _zip(tmp_path / "p.zip", {"photos/a.txt": b"hello", "photos/b.txt": b"world"}))
        error = _one_error(bare_app)
        assert error.startswith("photos.zip: holds nothing the lab reads")
        _still_works(bare_app)

    def test_a_hostile_zip_writes_nothing_outside_its_folder(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path) -> None:
        _upload(bare_app, "evil.zip", _zip(tmp_path / "e.zip", {"task/../../../evil.json": b"[]"}))
        assert "refused to unpack: a member path with '..'" in _one_error(bare_app)
        assert not list(_app_tmp.rglob("evil.json")) and not (_app_tmp.parent / "evil.json").exists()
        _still_works(bare_app)

    def test_a_zip_bomb_is_an_error_not_a_full_disk(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        # The limit lowered for the test: the same check stops a real bomb at MAX_UNPACKED_BYTES.
        monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 1 << 20)
        _upload(bare_app, "bomb.zip", _zip(tmp_path / "b.zip", {"task/ui_messages.json": b" " * (4 << 20)}))
        assert "unpacks to more than 1 MiB" in _one_error(bare_app)
        # What was unpacked before the limit is gone.
        assert sum(p.stat().st_size for p in _session_folder(_app_tmp).rglob("*") if p.is_file()) < 1 << 20
        _still_works(bare_app)


def test_the_uploader_says_what_it_accepts(bare_app: AppTest) -> None:
    helptext = bare_app.file_uploader(key="session.upload").help or ""
    for accepted in ("sessions.db", "opencode.db", ".zip", ".tar.gz", "Cline", "OpenHands V1", "storage/", "512 MiB", ".jsonl.zst", "Agents SDK"):
        assert accepted in helptext

