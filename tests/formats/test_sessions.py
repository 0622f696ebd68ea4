"""Picking one session of a file or folder that holds several: ``lab.formats.sessions`` and ``load(path, session=...)``.

Each multi-session reader is built in ``tmp_path`` with the builders its own tests use
(``test_goose_db``, ``test_opencode_storage``, ``test_openhands``; the aider fixture),
then listed, picked from by id, asked for an id it lacks, and refused as a one-session file.
"""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from lab.core.messages import ImportNotes, Transcript, message_text
from lab.errors import TranscriptError
from lab.formats import SessionInfo, load, session_choice, session_pick, sessions
from tests.formats.test_goose_db import GooseDb, _conversation, _three
from tests.formats.test_opencode_storage import DOC, SID, _database, _other, _storage
from tests.conftest import corpus_path
from tests.formats.test_openhands import _act

AIDER = Path(__file__).parent / "fixtures" / "aider"
CHAT = AIDER / ".aider.chat.history.md"
EXPORT = Path(__file__).parent / "fixtures" / "opencode" / "session.export.json"


def _text(t: Transcript) -> str:
    return " ".join(message_text(m) for m in t.messages)


def _ids(path: Path, format: str | None = None) -> list[str]:
    return [s.id for s in sessions(path, format)]


# --- Goose sessions.db ----------------------------------------------------------------------------


class TestGooseDb:
    def test_lists_every_session_newest_first(self, tmp_path: Path) -> None:
        listed = sessions(_three(tmp_path).path)
        assert [(s.id, s.title, s.messages, s.kind) for s in listed] == [
            ("20260103_1", "empty", 0, None),
            ("20260102_2", "subagent", 2, "sub_agent"),
            ("20260102_1", "newest user session", 2, None),
            ("20260101_1", "old one", 2, None),
        ]
        assert listed[0].updated == "2026-01-03T09:00:00+00:00" and {s.format for s in listed} == {"goose_db"}

    def test_picks_by_id(self, tmp_path: Path) -> None:
        db = _three(tmp_path)
        t = load(db.path, session="20260101_1")
        assert t.meta.session_id == "20260101_1" and "old?" in _text(t) and "new?" not in _text(t)
        # A session the default would not read (a sub-agent's) is readable by id.
        assert load(db.path, session="20260102_2").meta.title == "subagent"
        assert not any("sessions with messages" in w for w in t.notes.warnings)

    def test_the_default_warning_says_how_to_pick(self, tmp_path: Path) -> None:
        t = load(_three(tmp_path).path)
        assert any("--session ID" in w and "python -m lab sessions" in w for w in t.notes.warnings)

    def test_unknown_id_lists_up_to_ten(self, tmp_path: Path) -> None:
        db = GooseDb(tmp_path / "sessions.db")
        for n in range(12):
            db.session(f"202601{n + 10:02d}_1", f"2026-01-{n + 10:02d} 09:00:00")
            _conversation(db, f"202601{n + 10:02d}_1", f"s{n}")
        with pytest.raises(TranscriptError) as caught:
            load(db.path, session="20250101_1")
        text = str(caught.value)
        assert "no session '20250101_1'" in text and "one of its 12 session ids" in text and ", ...)" in text
        # The ten newest are named; the two oldest are left to the listing.
        assert len(re.findall(r"'202601\d\d_1'", text)) == 10 and "'20260110_1'" not in text and "'20260121_1'" in text

    def test_an_empty_session_by_id_is_a_clear_error(self, tmp_path: Path) -> None:
        with pytest.raises(TranscriptError, match="'20260103_1' has no messages"):
            load(_three(tmp_path).path, session="20260103_1")


# --- OpenCode storage and opencode.db ---------------------------------------------------------------


def _opencode_tree(data: Path) -> Path:
    _storage(data)
    _storage(data, _other("ses_older", DOC["info"]["time"]["updated"] - 5000, title="Older work"))
    _storage(data, _other("ses_child", DOC["info"]["time"]["updated"] + 5000, parent=SID))
    return data / "storage"


class TestOpenCode:
    @pytest.mark.parametrize("entry", ["storage-root", "data-dir"])
    def test_storage_lists_sessions_newest_first(self, tmp_path: Path, entry: str) -> None:
        root = _opencode_tree(tmp_path)
        listed = sessions(root if entry == "storage-root" else tmp_path)
        assert [s.id for s in listed] == ["ses_child", SID, "ses_older"]
        child, main, older = listed
        assert child.kind == f"subagent of {SID}" and main.kind is None
        assert older.title == "Older work" and older.messages == 2 and main.messages == len(DOC["messages"])
        assert main.title == DOC["info"]["title"] and main.updated is not None and main.updated > older.updated  # type: ignore[operator]

    def test_storage_picks_by_id(self, tmp_path: Path) -> None:
        root = _opencode_tree(tmp_path)
        t = load(root, session="ses_older")
        assert t.meta.session_id == "ses_older" and "hello from ses_older" in _text(t)
        assert not any("sessions in" in w for w in t.notes.warnings)
        # The default is still the newest top-level session; a subagent only by id.
        assert load(root).meta.session_id == SID and load(root, session="ses_child").meta.session_id == "ses_child"

    def test_database_lists_and_picks(self, tmp_path: Path) -> None:
        db = _database(tmp_path / "opencode.db", [_other("ses_older", 1767000000000), DOC])
        listed = sessions(db)
        assert [s.id for s in listed] == [SID, "ses_older"] and listed[1].messages == 2
        assert listed[1].updated == "2025-12-29T09:20:00+00:00"
        t = load(tmp_path, session="ses_older")
        assert t.meta.session_id == "ses_older" and "hello from ses_older" in _text(t)
        assert any("--session ID" in w for w in load(db).notes.warnings)

    @pytest.mark.parametrize("asked", ["ses_nope", "../part", "ses_x/../../etc"])
    def test_unknown_ids_are_refused_naming_the_known_ones(self, tmp_path: Path, asked: str) -> None:
        root = _opencode_tree(tmp_path)
        # An id that is no folder name (or would climb out of the root) is only ever compared, never a path.
        with pytest.raises(TranscriptError, match=rf"no session {re.escape(repr(asked))}.*3 session ids.*'ses_older'"):
            load(root, session=asked)
        db = _database(tmp_path / "db" / "opencode.db", [DOC])
        with pytest.raises(TranscriptError, match=rf"no session .* in OpenCode's opencode.db.*{SID}"):
            load(db, session=asked)

    def test_a_session_folder_holds_one_session(self, tmp_path: Path) -> None:
        root = _opencode_tree(tmp_path)
        with pytest.raises(TranscriptError, match="holds one session"):
            load(root / "message" / SID, session="ses_older")
        # Listed as its one session, which --session then picks.
        (only,) = sessions(root / "message" / SID)
        assert only.id == SID and only.format == "opencode" and only.messages > 0
        assert load(root / "message" / SID, session=SID).messages == load(root / "message" / SID).messages


# --- Aider chat history ---------------------------------------------------------------------------


class TestAider:
    def test_lists_sessions_with_turns_by_index_newest_first(self) -> None:
        listed = sessions(CHAT)
        assert [(s.id, s.title) for s in listed] == [
            ("1", "aider chat started at 2024-05-02 14:30:00"),
            ("0", "aider chat started at 2024-05-01 09:00:00"),
        ]
        assert listed[1].messages == 2 and all(s.updated is None for s in listed)

    def test_picks_by_index(self) -> None:
        old = load(CHAT, session="0")
        assert old.meta.session_id == "2024-05-01 09:00:00" and "what does slugify do?" in _text(old)
        assert load(CHAT, session="1").messages == load(CHAT).messages

    @pytest.mark.parametrize("asked", ["2", "-1", "first", "1.0", "\u0661"])
    def test_an_index_it_lacks_is_refused(self, asked: str) -> None:
        with pytest.raises(TranscriptError, match=r"no session .* in this aider chat history.*2 session ids \('1', '0'\)"):
            load(CHAT, session=asked)

    def test_the_llm_log_holds_one_conversation(self) -> None:
        with pytest.raises(TranscriptError, match="read as aider, this file holds one session"):
            load(AIDER / ".aider.llm.history", session="0")


# --- OpenHands output.jsonl -----------------------------------------------------------------------


def _record(iid: Any, task: str) -> dict[str, Any]:
    history = [_act(1, "message", {"content": task}, source="user"), _act(2, "message", {"content": f"done: {task}"})]
    return {"instance_id": iid, "instruction": task, "history": history}


def _output(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


class TestOpenHands:
    def test_records_are_listed_by_instance_id_last_first(self, tmp_path: Path) -> None:
        path = _output(tmp_path, [_record("a-1", "fix a"), _record("b-2", "fix b"), _record("c-3", "fix c")])
        listed = sessions(path)
        assert [(s.id, s.title, s.messages) for s in listed] == [("c-3", "OpenHands: c-3", 2), ("b-2", "OpenHands: b-2", 2), ("a-1", "OpenHands: a-1", 2)]

    def test_picks_one_record_alone(self, tmp_path: Path) -> None:
        path = _output(tmp_path, [_record("a-1", "fix a"), _record("b-2", "fix b"), _record("c-3", "fix c")])
        t = load(path, session="b-2")
        assert t.meta.session_id == "b-2" and "fix b" in _text(t) and "fix a" not in _text(t)
        # Alone: the other records are not sidechains of a picked one (the default reads them so).
        assert t.sidechains == {} and set(load(path).sidechains) == {"b-2", "c-3"}

    @pytest.mark.parametrize("iids", [["a", None, "c"], ["a", "a", "c"]], ids=["missing-id", "repeated-id"])
    def test_without_distinct_instance_ids_records_go_by_index(self, tmp_path: Path, iids: list[Any]) -> None:
        path = _output(tmp_path, [_record(iid, f"task {n}") for n, iid in enumerate(iids)])
        assert _ids(path) == ["2", "1", "0"]
        assert "task 1" in _text(load(path, session="1"))
        with pytest.raises(TranscriptError, match=r"no session 'a'.*\('2', '1', '0'\)"):
            load(path, session="a")

    @pytest.mark.corpus("openhands/openhands-v0-ponyc-output.jsonl")
    def test_each_corpus_record_reads_as_the_default_reads_it(self) -> None:
        path = corpus_path("openhands/openhands-v0-ponyc-output.jsonl")
        default = load(path)
        listed = sessions(path)
        assert [s.id for s in listed[::-1]] == [default.meta.session_id, *default.sidechains]
        first, last = listed[-1], listed[0]
        assert load(path, session=first.id).messages == default.messages
        # A later record, picked, is the transcript its sidechain holds (ids without the sidechain's prefix).
        picked = load(path, session=last.id)
        assert len(picked.messages) == len(default.sidechains[last.id]) and picked.meta.session_id == last.id

    def test_a_single_history_document_holds_one_session(self, tmp_path: Path) -> None:
        events = tmp_path / "events.json"
        events.write_text(json.dumps(_record("x", "t")["history"]), encoding="utf-8")
        # One history, no id recorded: listed as session "0", and only that id picks it.
        (only,) = sessions(events)
        assert (only.id, only.messages, only.format) == ("0", 2, "openhands")
        assert load(events, session="0").messages == load(events).messages
        with pytest.raises(TranscriptError, match="holds one session.*its one session is '0'"):
            load(events, session="1")
        pretty = tmp_path / "record.json"
        pretty.write_text(json.dumps(_record("x", "t"), indent=2), encoding="utf-8")
        with pytest.raises(TranscriptError, match="one OpenHands history, not an output.jsonl"):
            sessions(pretty)


# --- one-session formats and forcing --------------------------------------------------------------


class TestPacked:
    """A multi-session file inside a zip or a compressed file lists and picks as the file itself does."""

    @pytest.fixture(params=["gz", "zip"])
    def packed(self, request: pytest.FixtureRequest, tmp_path: Path) -> Path:
        if request.param == "gz":
            out = tmp_path / ".aider.chat.history.md.gz"
            out.write_bytes(gzip.compress(CHAT.read_bytes()))
        else:
            out = tmp_path / "chat.zip"
            with zipfile.ZipFile(out, "w") as zf:
                zf.write(CHAT, CHAT.name)
        return out

    def test_lists_and_picks_as_the_file_does(self, packed: Path) -> None:
        # The chat alone: beside the fixture, aider's reader also finds the sibling LLM log.
        alone = packed.parent / "alone" / CHAT.name
        alone.parent.mkdir()
        alone.write_bytes(CHAT.read_bytes())
        assert _ids(packed) == _ids(alone) == ["1", "0"]
        assert load(packed, session="0").messages == load(alone, session="0").messages
        assert "what does slugify do?" in _text(load(packed, session="0"))

    def test_a_one_session_file_lists_as_one_session(self, tmp_path: Path) -> None:
        out = tmp_path / "rollout.jsonl.gz"
        out.write_bytes(gzip.compress(EXPORT.read_bytes()))
        assert sessions(out) == sessions(EXPORT)
        assert [s.id for s in sessions(out)] == [SID]

    def test_an_unreadable_packed_file_is_refused_naming_it(self, tmp_path: Path) -> None:
        out = tmp_path / "rollout.jsonl.gz"
        out.write_bytes(gzip.compress(b"not a transcript at all\n"))
        with pytest.raises(TranscriptError) as info:
            sessions(out)
        assert info.value.file == str(out) and "lab-sessions-" not in str(info.value)


class TestOneSessionFormats:
    def test_a_single_session_format_refuses_a_session(self) -> None:
        with pytest.raises(TranscriptError, match=rf"read as opencode, this file holds one session.*its one session is '{SID}'.*several sessions: .*Goose's sessions.db"):
            load(EXPORT, session="ses_other")

    def test_a_one_session_file_lists_as_that_session_and_its_id_picks_it(self) -> None:
        t = load(EXPORT)
        (only,) = sessions(EXPORT)
        assert (only.id, only.messages, only.format, only.kind) == (t.meta.session_id, len(t.messages), "opencode", None)
        assert only.title and only.updated == max(m.timestamp for m in t.messages if m.timestamp).isoformat()
        assert load(EXPORT, session=only.id).messages == t.messages

    def test_the_cli_lists_a_one_session_file(self, capsys: pytest.CaptureFixture[str]) -> None:
        from lab.cli.main import main

        assert main(["sessions", str(EXPORT)]) == 0
        out, err = capsys.readouterr()
        rows = [line for line in out.splitlines() if line.startswith(SID)]
        assert len(rows) == 1 and not err.strip()
        assert main(["sessions", str(EXPORT), "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["sessions"]
        assert [(s["id"], s["format"]) for s in listed] == [(SID, "opencode")]

    def test_a_single_session_folder_refuses_a_session(self) -> None:
        task = Path(__file__).parent / "fixtures" / "cline" / "task"
        with pytest.raises(TranscriptError, match="read as cline, this folder holds one session"):
            load(task, session="0")

    def test_a_forced_format_that_does_not_fit_says_so(self, tmp_path: Path) -> None:
        db = _three(tmp_path).path
        with pytest.raises(TranscriptError, match="claude_code holds one session per file"):
            load(db, format="claude_code", session="0")
        # A folder is a folder of session files: its ids are paths inside it.
        with pytest.raises(TranscriptError, match="no session '0' in this folder"):
            load(tmp_path, format="openhands", session="0")
        with pytest.raises(TranscriptError, match="line 1: not JSON"):
            load(db, format="openhands", session="0")
        with pytest.raises(TranscriptError, match="unknown format 'nope'"):
            sessions(db, format="nope")
        assert _ids(db, "goose_db")[0] == "20260103_1"

    def test_every_reader_is_registered_and_listed_in_the_refusal(self) -> None:
        assert set(session_choice.READERS) == {"goose_db", "opencode", "aider", "openhands", "cursor", "zed", "crush", "agents_sdk_db", "http_log"}
        with pytest.raises(TranscriptError) as caught:
            load(EXPORT, session="x")
        assert all(r.what in str(caught.value) for r in session_choice.READERS.values())

    def test_session_info_is_plain_data(self) -> None:
        info = SessionInfo(id="a", title=None, messages=0, updated=None, format="aider")
        assert info.kind is None and info == SessionInfo("a", None, 0, None, "aider")


class TestPickSession:
    """The one default-and-warning rule of the session databases (Goose, Crush, Cursor)."""

    @staticmethod
    def _pick(candidates: list[session_pick.Candidate], session_id: str | None = None) -> tuple[int, list[str]]:
        notes = ImportNotes()
        k = session_pick.pick_session(candidates, session_id, file="f.db", store="Test database", noun="Test session", module="goose_db", notes=notes)
        return k, notes.warnings

    def test_the_newest_listed_session_with_messages_and_a_warning(self) -> None:
        c = session_pick.Candidate
        k, warnings = self._pick([c("empty", 0), c("sub", 3, listed=False), c("main", 2, "Main"), c("a", 1), c("b", 1), c("z", 1)])
        assert k == 2 and len(warnings) == 1
        w = warnings[0]
        assert "holds 5 sessions with messages (1 of them sub-agents' or hidden, never the default)" in w and "'main' (Main)" in w
        # Three others named, the rest elided; the sub-agent marked.
        assert "sub (3 messages, sub-agent or hidden), a (1 messages), b (1 messages), ..." in w and "z (" not in w

    def test_only_unlisted_sessions_have_messages_so_one_of_them_is_read(self) -> None:
        k, warnings = self._pick([session_pick.Candidate("sub", 3, listed=False)])
        assert k == 0 and warnings == []

    def test_by_id_and_its_errors(self) -> None:
        c = session_pick.Candidate
        assert self._pick([c("a", 1), c("b", 0), c("sub", 2, listed=False)], "sub") == (2, [])
        with pytest.raises(TranscriptError, match="Test session 'b' has no messages"):
            self._pick([c("a", 1), c("b", 0)], "b")
        with pytest.raises(TranscriptError, match=r"no session 'x' in this Test database.*'a', 'b'"):
            self._pick([c("a", 1), c("b", 0)], "x")
        with pytest.raises(TranscriptError, match="holds 1 session\\(s\\), none with messages"):
            self._pick([c("b", 0)])
