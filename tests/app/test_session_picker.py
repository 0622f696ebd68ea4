"""The Session page's picker: an upload holding several sessions lists them, and another one can be loaded in its place."""

from __future__ import annotations

import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from lab.views import files
from tests.app.conftest import metrics, no_exception, switch_to
from tests.app.test_session_stores import _session_folder, _upload, _zip_folder
from tests.formats.test_goose_db import GooseDb, _conversation, _from_fixture, _m
from tests.formats.test_opencode_storage import DOC, _storage, _other

PICK = "session.pick"
HOSTILE = "[click me](javascript:alert(1)) <script>x</script> $x$ **bold**"


def _goose(tmp_path: Path, older_title: str = "an older one") -> GooseDb:
    """The fixture's session (6 messages, 3 tool calls) and an older one of 2 messages."""
    db, _ = _from_fixture(tmp_path)
    db.session("20250101_1", "2025-01-01 09:00:00", name=older_title)
    _conversation(db, "20250101_1", "old")
    return db


def _pick(at: AppTest, session: str) -> AppTest:
    at.selectbox(key=PICK).set_value(session).run()
    no_exception(at)
    return at


def _tkey(at: AppTest) -> str:
    return str(at.session_state["lab.transcript_key"])


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def _peak_sent(at: AppTest) -> str:
    """The Timeline's peak, from a replay of whatever is loaded; back on the Session page after."""
    switch_to(at, "timeline")
    assert not at.error, [e.value for e in at.error]
    assert len(list(at.get("plotly_chart"))) == 3
    peak = metrics(at)["Peak sent"]
    switch_to(at, "session")
    return peak


class TestGooseStore:
    def test_lists_both_newest_first_and_loads_the_older_one(self, bare_app: AppTest, tmp_path: Path) -> None:
        db = _goose(tmp_path)
        _upload(bare_app, "sessions.db", db.path.read_bytes())
        picker = bare_app.selectbox(key=PICK)
        assert picker.value == "20260101_1"  # the session the upload read
        newest, older = picker.options
        assert newest.startswith("Fix add in calc · 20260101_1 · 6 messages · updated 2026-01-01 10:00:00")
        assert older.startswith("an older one · 20250101_1 · 2 messages · updated 2025-01-01 09:00:00")
        # The picker names the others, so the warning that named them is not shown as well; it stays in the notes.
        assert not [i.value for i in bare_app.info if "sessions with messages" in i.value]
        assert files.several_sessions(bare_app.session_state["lab.transcript"].notes)
        assert any(t.startswith("sessions.db holds 2 sessions, newest first; showing session 1 of 2: Fix add") for t in _texts(bare_app))
        assert metrics(bare_app)["Tool calls"] == "3"
        first_key, first_peak = _tkey(bare_app), _peak_sent(bare_app)

        _pick(bare_app, "20250101_1")
        assert not bare_app.error, [e.value for e in bare_app.error]
        t = bare_app.session_state["lab.transcript"]
        assert [m.role for m in t.messages] == ["user", "assistant"] and t.meta.session_id == "20250101_1"
        assert metrics(bare_app)["Messages"] == "2" and metrics(bare_app)["Tool calls"] == "0"
        assert bare_app.selectbox(key=PICK).value == "20250101_1"
        assert any("showing session 2 of 2: an older one · 20250101_1" in s for s in _texts(bare_app))
        assert any("sessions.db · session 20250101_1" in s for s in (t.value for t in bare_app.sidebar.text))
        # A new transcript key, so the Timeline replays this session rather than serving the other's replay.
        assert _tkey(bare_app) != first_key
        assert int(_peak_sent(bare_app).replace(",", "")) < int(first_peak.replace(",", ""))
        # Back to the newest: its own key again differs from the older one's, and the picker follows.
        _pick(bare_app, "20260101_1")
        assert metrics(bare_app)["Tool calls"] == "3" and _tkey(bare_app) not in (first_key, "")
        assert bare_app.selectbox(key=PICK).value == "20260101_1"

    def test_the_config_is_kept(self, bare_app: AppTest, tmp_path: Path) -> None:
        _upload(bare_app, "sessions.db", _goose(tmp_path).path.read_bytes())
        switch_to(bare_app, "pipeline")
        bare_app.selectbox(key="pipeline.preset").set_value("mewcode").run()
        no_exception(bare_app)
        switch_to(bare_app, "session")
        # Streamlit forgets a widget of a page not shown: the picker still says what is loaded.
        assert bare_app.selectbox(key=PICK).value == "20260101_1"
        stages = bare_app.session_state["lab.config"].model_dump(exclude={"window"})
        _pick(bare_app, "20250101_1")
        assert bare_app.session_state["lab.preset"] == "mewcode"
        assert bare_app.session_state["lab.config"].model_dump(exclude={"window"}) == stages

    def test_a_hostile_title_is_plain_text(self, bare_app: AppTest, tmp_path: Path) -> None:
        db = _goose(tmp_path, older_title=HOSTILE + "\nsecond line")
        _upload(bare_app, "sessions.db", db.path.read_bytes())
        # A select box shows its options as written, never as markdown: the title as it is, on one line.
        (older,) = [o for o in bare_app.selectbox(key=PICK).options if "20250101_1" in o]
        assert older.startswith(HOSTILE + " second line · 20250101_1")
        _pick(bare_app, "20250101_1")
        assert any(HOSTILE in s for s in _texts(bare_app))  # st.text: plain text
        # Nothing on the page renders the title through markdown unescaped.
        rendered = [e.value for kind in (bare_app.markdown, bare_app.caption, bare_app.info, bare_app.warning, bare_app.error) for e in kind]
        assert not any("<script>" in r or "](javascript:" in r for r in rendered)

    def test_a_one_session_file_has_no_picker(self, bare_app: AppTest, tmp_path: Path) -> None:
        db, _ = _from_fixture(tmp_path)
        _upload(bare_app, "sessions.db", db.path.read_bytes())
        assert metrics(bare_app)["Tool calls"] == "3"
        assert not [s for s in bare_app.selectbox if s.key == PICK]
        assert "lab.sessions" not in bare_app.session_state

    def test_another_upload_drops_the_picker(self, bare_app: AppTest, tmp_path: Path) -> None:
        _upload(bare_app, "sessions.db", _goose(tmp_path).path.read_bytes())
        assert bare_app.selectbox(key=PICK)
        bare_app.button(key="session.load_sample").click().run()
        no_exception(bare_app)
        assert metrics(bare_app)["Messages"] == "81"
        assert not [s for s in bare_app.selectbox if s.key == PICK]


class TestArchive:
    def test_a_zipped_opencode_storage_with_two_sessions(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path) -> None:
        root = _storage(tmp_path / "data")
        _storage(tmp_path / "data", _other("ses_older", DOC["info"]["time"]["updated"] - 5000, title="Older work"))
        _upload(bare_app, "storage.zip", _zip_folder(root, tmp_path / "storage.zip"))
        picker = bare_app.selectbox(key=PICK)
        assert picker.value == DOC["info"]["id"]
        assert [o.split(" · ")[1] for o in picker.options] == [DOC["info"]["id"], "ses_older"]
        assert "Older work · ses_older · 2 messages" in picker.options[1]
        first_key = _tkey(bare_app)

        _pick(bare_app, "ses_older")
        assert not bare_app.error, [e.value for e in bare_app.error]
        t = bare_app.session_state["lab.transcript"]
        assert metrics(bare_app)["Messages"] == "2" and "hello from ses_older" in t.messages[0].content[0].text
        assert _tkey(bare_app) != first_key
        # Unpacked again for the pick and removed once read, as on upload; paths said as inside the archive.
        assert not (_session_folder(_app_tmp) / "unpacked").exists()
        assert t.meta.source_path.startswith("storage.zip") and str(_app_tmp) not in t.meta.source_path
        _peak_sent(bare_app)


class TestAgentsSdkDatabase:
    def test_an_agents_sdk_database_gets_the_picker(self, bare_app: AppTest, tmp_path: Path) -> None:
        from tests.formats.test_agents_sdk_db import _db

        _upload(bare_app, "conversations.db", _db(tmp_path).read_bytes())
        assert not bare_app.error, [e.value for e in bare_app.error]
        picker = bare_app.selectbox(key=PICK)
        assert picker.value == "user_42" and [o.split(" · ")[1] for o in picker.options] == ["empty", "user_42", "older"]
        assert metrics(bare_app)["Tool calls"] == "1"
        _pick(bare_app, "older")
        assert not bare_app.error and bare_app.session_state["lab.transcript"].meta.session_id == "older"
        assert metrics(bare_app)["Messages"] == "2"


class TestSessionFolder:
    def test_a_zipped_folder_of_session_files(self, bare_app: AppTest, tmp_path: Path) -> None:
        # A user zips ~/.claude/projects/<project>: each file is a session, one is read, the others are picked.
        root = tmp_path / "project"
        root.mkdir()
        samples = Path(__file__).parents[2] / "sample_sessions"
        for name, sample, mtime in (("a.jsonl", "claude-code-compacted.jsonl", 1_700_000_000), ("b.jsonl", "generated-claude-code.jsonl", 1_800_000_000)):
            (root / name).write_bytes((samples / sample).read_bytes())
            os.utime(root / name, (mtime, mtime))
        _upload(bare_app, "project.zip", _zip_folder(root, tmp_path / "project.zip"))
        assert not bare_app.error, [e.value for e in bare_app.error]
        picker = bare_app.selectbox(key=PICK)
        # Newest first by the times the zip kept, the newest loaded.
        assert [o.split(" · ")[1] for o in picker.options] == ["b.jsonl", "a.jsonl"] and picker.value == "b.jsonl"
        first = metrics(bare_app)["Messages"]
        _pick(bare_app, "a.jsonl")
        assert not bare_app.error, [e.value for e in bare_app.error]
        assert bare_app.selectbox(key=PICK).value == "a.jsonl" and metrics(bare_app)["Messages"] != first


class TestErrors:
    def test_an_unreadable_session_is_an_error_and_the_loaded_one_stays(self, bare_app: AppTest, tmp_path: Path, _app_tmp: Path) -> None:
        _upload(bare_app, "sessions.db", _goose(tmp_path).path.read_bytes())
        before = _tkey(bare_app)
        # The saved upload replaced under the picker (as a later upload of the same name would).
        (saved,) = (_session_folder(_app_tmp) / "uploads").iterdir()
        saved.write_bytes(b"SQLite format 3\x00" + b"\xde\xad" * 200)
        _pick(bare_app, "20250101_1")
        (error,) = [e.value for e in bare_app.error]
        assert error.startswith("sessions.db: the uploaded file is no longer there") and str(_app_tmp) not in error
        assert _tkey(bare_app) == before and metrics(bare_app)["Tool calls"] == "3"
        assert bare_app.selectbox(key=PICK).value == "20260101_1"  # the picker says what is still loaded
        _peak_sent(bare_app)

    def test_a_session_its_reader_refuses_is_an_error(self, bare_app: AppTest, tmp_path: Path) -> None:
        db, _ = _from_fixture(tmp_path)
        db.session("20250101_1", "2025-01-01 09:00:00", name="broken")
        # Listed (two message rows), but no row reads: the reader refuses the session.
        db.message("20250101_1", _m("user", "x"), content_json="{not json").message("20250101_1", _m("assistant", "y"), content_json="{not json")
        _upload(bare_app, "sessions.db", db.path.read_bytes())
        before = _tkey(bare_app)
        _pick(bare_app, "20250101_1")
        (error,) = [e.value for e in bare_app.error]
        assert error.startswith("sessions.db: Goose session '20250101_1': none of its 2 message rows could be read")
        assert _tkey(bare_app) == before and metrics(bare_app)["Tool calls"] == "3"
        assert bare_app.selectbox(key=PICK).value == "20260101_1"
        # The page keeps working: a second try says so again, once; another load clears it.
        _pick(bare_app, "20250101_1")
        assert len(bare_app.error) == 1
        bare_app.button(key="session.load_sample").click().run()
        assert metrics(bare_app)["Messages"] == "81" and not bare_app.error
