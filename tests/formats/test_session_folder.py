"""A folder of one-session files as a session list: ``sessions(folder)``, ``load(folder, session=...)`` and ``load(folder)``.

The folder is built in ``tmp_path`` from the sample sessions and format fixtures, with modification
times set so that "newest first" is known, plus the litter real session folders hold.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.errors import TranscriptError
from lab.formats import FORMATS, load, session_choice, sessions
from lab.formats.containers import session_folder

ROOT = Path(__file__).parents[2]
SAMPLES = ROOT / "sample_sessions"
FIXTURES = Path(__file__).parent / "fixtures"


def _put(src: Path, dest: Path, mtime: float) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dest)
    else:
        shutil.copyfile(src, dest)
    os.utime(dest, (mtime, mtime))
    return dest


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three sessions of three agents (one a Cline task folder), a subagent, and litter."""
    root = tmp_path / "sessions"
    _put(SAMPLES / "claude-code-compacted.jsonl", root / "old.jsonl", 1_700_000_000)
    _put(SAMPLES / "codex-rollout-forecast.jsonl", root / "2026" / "03" / "rollout-new.jsonl", 1_800_000_000)
    _put(FIXTURES / "cline" / "task", root / "tasks" / "123", 1_750_000_000)
    _put(SAMPLES / "generated-claude-code.jsonl", root / "old" / "subagents" / "agent-a1.jsonl", 1_900_000_000)
    (root / "notes.txt").write_text("not a transcript\n", encoding="utf-8")
    (root / ".DS_Store").write_bytes(b"\x00\x01")
    (root / ".git").mkdir()
    (root / ".git" / "x.jsonl").write_text("{}\n", encoding="utf-8")
    return root


class TestList:
    def test_every_session_newest_first_by_path(self, folder: Path) -> None:
        listed = sessions(folder)
        assert [(s.id, s.format, s.kind) for s in listed] == [
            ("old/subagents/agent-a1.jsonl", "claude_code", "subagent"),
            ("2026/03/rollout-new.jsonl", "openai_responses", None),
            ("tasks/123", "cline", "folder"),
            ("old.jsonl", "claude_code", None),
        ]
        assert all(s.messages > 0 and s.updated for s in listed)
        # JSONL lines before import: what the file holds, not what an import makes of it.
        assert listed[-1].messages == len((SAMPLES / "claude-code-compacted.jsonl").read_text(encoding="utf-8").splitlines())

    def test_titles_are_the_user_s_first_words_or_the_agent_s_summary(self, folder: Path, tmp_path: Path) -> None:
        titles = {s.id: s.title for s in sessions(folder)}
        # Codex injects environment context as user text first: passed over for the user's own question.
        assert titles["2026/03/rollout-new.jsonl"] == "why does `weatherbot forecast --days 0` crash?"
        assert titles["old.jsonl"] is not None and titles["old.jsonl"].startswith("The stock report in inventory/report.py")
        assert len(titles["old/subagents/agent-a1.jsonl"] or "") <= 80
        lines = [{"type": "summary", "summary": "Fix the\nparser", "leafUuid": "x"}, *map(json.loads, (SAMPLES / "claude-code-compacted.jsonl").read_text(encoding="utf-8").splitlines())]
        (folder / "titled.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        assert {s.id: s.title for s in sessions(folder)}["titled.jsonl"] == "Fix the parser"

    def test_litter_is_skipped_and_counted_hidden_entries_unseen(self, folder: Path) -> None:
        found = session_folder.listing(folder)
        assert found.skipped == 1 and found.links == 0  # notes.txt; .DS_Store and .git are never looked at

    def test_a_forced_format_lists_only_its_sessions(self, folder: Path) -> None:
        assert [s.id for s in sessions(folder, "claude_code")] == ["old/subagents/agent-a1.jsonl", "old.jsonl"]
        with pytest.raises(TranscriptError, match="unknown format 'nope'"):
            sessions(folder, "nope")

    def test_links_are_not_followed(self, folder: Path, tmp_path: Path) -> None:
        outside = _put(SAMPLES / "swe-agent-slugify.traj", tmp_path / "elsewhere" / "secret.traj", 1_950_000_000)
        (folder / "link.traj").symlink_to(outside)
        (folder / "linked-dir").symlink_to(outside.parent, target_is_directory=True)
        found = session_folder.listing(folder)
        assert found.links == 2 and not any("secret" in s.id or "link" in s.id for s in found.sessions)

    def test_a_folder_of_nothing_readable_is_a_clear_error(self, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
        with pytest.raises(TranscriptError, match=r"is a directory with no transcript any format reads \(1 file\(s\) skipped"):
            sessions(tmp_path)

    def test_too_many_entries_is_an_error_not_a_hang(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(session_folder, "MAX_ENTRIES", 3)
        for n in range(5):
            (tmp_path / f"{n}.txt").write_text("x", encoding="utf-8")
        with pytest.raises(TranscriptError, match="holds more than 3 entries"):
            sessions(tmp_path)


class TestRead:
    def test_by_id_reads_as_the_file_reads(self, folder: Path) -> None:
        picked = load(folder, session="2026/03/rollout-new.jsonl")
        assert picked.messages == load(folder / "2026" / "03" / "rollout-new.jsonl").messages
        assert load(folder, session="tasks/123").meta.source_format == "cline"

    def test_without_an_id_the_newest_main_session_with_a_warning(self, folder: Path) -> None:
        t = load(folder)
        # The subagent file is newer, but never the default while a main session exists.
        assert t.messages == load(folder / "2026" / "03" / "rollout-new.jsonl").messages
        warning = next(w for w in t.notes.warnings if "this folder holds" in w)
        assert "4 sessions" in warning and "'2026/03/rollout-new.jsonl'" in warning and "--session ID" in warning

    def test_the_default_read_never_reads_the_other_files_through(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        # A project folder may hold gigabytes of sessions: picking the newest detects each, never counts its lines.
        def counted(*_: object) -> int:
            raise AssertionError("a file was read through to count its records")

        monkeypatch.setattr(session_folder, "_records", counted)
        assert load(folder).meta.source_format == "openai_responses"

    def test_a_damaged_newest_session_says_how_to_read_another(self, folder: Path) -> None:
        newest = folder / "2026" / "03" / "rollout-new.jsonl"
        newest.write_text('{"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x"}}\n{not json\n', encoding="utf-8")
        os.utime(newest, (1_800_000_000, 1_800_000_000))
        with pytest.raises(TranscriptError) as err:
            load(folder)
        assert err.value.file == str(newest) and "--session ID" in (err.value.expected or "")

    @pytest.mark.parametrize("bad", ["../sessions/old.jsonl", "/etc/passwd", ".git/x.jsonl", "C:\\x", "", "old/../../x"])
    def test_ids_that_lead_out_are_refused(self, folder: Path, bad: str) -> None:
        with pytest.raises(TranscriptError, match="not a session id of this folder"):
            load(folder, session=bad)

    def test_an_id_through_a_link_is_refused(self, folder: Path, tmp_path: Path) -> None:
        outside = _put(SAMPLES / "swe-agent-slugify.traj", tmp_path / "elsewhere" / "secret.traj", 1_950_000_000)
        (folder / "linked-dir").symlink_to(outside.parent, target_is_directory=True)
        with pytest.raises(TranscriptError, match="is a link"):
            load(folder, session="linked-dir/secret.traj")

    def test_an_unknown_id_says_how_to_list(self, folder: Path) -> None:
        with pytest.raises(TranscriptError, match="no session 'nope.jsonl' in this folder") as err:
            load(folder, session="nope.jsonl")
        assert "python -m lab sessions" in (err.value.expected or "")


class TestArchive:
    def test_a_zip_of_a_session_folder_lists_and_picks(self, folder: Path, tmp_path: Path) -> None:
        zipped = tmp_path / "project.zip"
        with zipfile.ZipFile(zipped, "w") as zf:
            for f in sorted(folder.rglob("*")):
                if f.is_file() and not any(p.startswith(".") for p in f.relative_to(folder).parts):
                    zf.write(f, "project/" + f.relative_to(folder).as_posix())
        ids = {s.id for s in sessions(zipped)}
        assert ids == {"old/subagents/agent-a1.jsonl", "2026/03/rollout-new.jsonl", "tasks/123", "old.jsonl"}
        assert load(zipped, session="old.jsonl").messages == load(folder / "old.jsonl").messages


def test_the_listing_is_public_api(folder: Path) -> None:
    import lab

    assert "sessions" in lab.__all__ and [s.id for s in lab.sessions(folder)] == [s.id for s in sessions(folder)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["..", ".", "/", "\\", ":", "~", "a", " ", "\x00", "old.jsonl", "tasks", "123", "2026", "03", "rollout-new.jsonl"]), max_size=8).map("".join))
def test_any_id_reads_inside_the_folder_or_is_a_clear_error(folder: Path, session: str) -> None:
    # An id is a user's text that becomes a path: it reads a session under the folder, or raises the lab's error.
    try:
        t = load(folder, session=session)
    except TranscriptError:
        return
    source = Path(t.meta.source_path or "").resolve()
    assert folder.resolve() in source.parents


def test_a_user_s_markdown_heading_titles_the_session_an_injected_instructions_file_does_not(tmp_path: Path) -> None:
    def session(name: str, *texts: str) -> None:
        rows = [{"role": "user", "content": t} for t in texts] + [{"role": "assistant", "content": "ok"}]
        (tmp_path / name).write_text(json.dumps(rows), encoding="utf-8")

    session("heading.json", "## Task\nFix the flaky test in tests/test_io.py")
    session("agents.json", "# AGENTS.md instructions for /repo\n\nUse ruff.", "<environment_context>cwd</environment_context>", "rename the CLI flag")
    titles = {s.id: s.title for s in session_folder.listing(tmp_path).sessions}
    assert titles == {"heading.json": "Task Fix the flaky test in tests/test_io.py", "agents.json": "rename the CLI flag"}


def test_typed_user_records_give_titles_too(tmp_path: Path) -> None:
    # Copilot CLI keeps each session as <id>/events.jsonl beside files that are no transcript.
    session = tmp_path / "session-state" / "5fedbe45"
    session.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "copilot_cli" / "events.jsonl", session / "events.jsonl")
    (session / "workspace.yaml").write_text("id: 5fedbe45\nsummary: Forecast crash\n", encoding="utf-8")
    found = session_folder.listing(tmp_path / "session-state")
    assert [(s.id, s.format, s.title) for s in found.sessions] == [("5fedbe45/events.jsonl", "copilot_cli", "why does `weatherbot forecast --days 0` crash?")]
    assert found.skipped == 1


def test_a_file_of_several_sessions_is_listed_and_read_session_by_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.formats.test_sessions import _output, _record

    import dataclasses


    (tmp_path / "evals").mkdir()
    _output(tmp_path / "evals", [_record("a-1", "fix a"), _record("b-2", "fix b")])
    shutil.copyfile(SAMPLES / "claude-code-compacted.jsonl", tmp_path / "cc.jsonl")
    fmt = FORMATS["openhands"]
    reader = session_choice.READERS["openhands"]
    calls: list[Path] = []
    counted = dataclasses.replace(reader, list=lambda p: calls.append(p) or reader.list(p))
    monkeypatch.setitem(FORMATS, "openhands", dataclasses.replace(fmt, sessions=counted))
    listed = {s.id: s for s in session_folder.listing(tmp_path).sessions}
    # The output is read through once to list its sessions, not once to find it holds several and again to list them.
    assert len(calls) == 1
    assert sorted(listed) == ["cc.jsonl", "evals/output.jsonl#a-1", "evals/output.jsonl#b-2"]
    assert listed["evals/output.jsonl#b-2"].title == "OpenHands: b-2" and listed["evals/output.jsonl#b-2"].format == "openhands"
    t = load(tmp_path, session="evals/output.jsonl#b-2")
    assert t.meta.session_id == "b-2" and t.sidechains == {}
    with pytest.raises(TranscriptError, match="holds one session"):
        load(tmp_path, session="cc.jsonl#x")
    with pytest.raises(TranscriptError, match="no session 'z-9'"):
        load(tmp_path, session="evals/output.jsonl#z-9")
    with pytest.raises(TranscriptError, match="not a session id of this folder"):
        load(tmp_path, session="../evals/output.jsonl#a-1")
    # The default read lists files without reading them through: one entry per file.
    assert sorted(s.id for s in session_folder.listing(tmp_path, detail=False).sessions) == ["cc.jsonl", "evals/output.jsonl"]
