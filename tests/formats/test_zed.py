"""Zed's threads.db: thread choice, both thread shapes, tool calls, usage, damaged rows, read-only, CLI, detection.

The databases are built in ``tmp_path`` with the ``threads`` table of zed-industries/zed
(``crates/agent/src/db.rs``: ``CREATE TABLE threads (id, summary, updated_at, data_type, data)``
and the later ``parent_id``, ``folder_paths``, ``folder_paths_order``, ``created_at``). Rows are
written as Zed writes them: the thread serialised to JSON with its ``version``, zstd-compressed at
level 3 for ``data_type = 'zstd'`` (what current Zed writes), as text for ``'json'`` (older rows).
The thread dicts follow ``DbThread`` (agent2, ``"0.3.0"``, serde's externally tagged enums) and
``legacy_thread.rs``'s ``SerializedThread`` (``"0.2.0"``, ``"0.1.0"`` and the unversioned one).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard

from lab.cli.main import main
from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats import FORMATS, detect, load, sessions
from lab.formats.databases import zed
from lab.formats.detect import scores
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id
from tests.formats.test_wrong_format import _forced_results
from tests.formats.readonly import assert_reads_leave_untouched

T0 = "2026-01-01T10:00:00+00:00"
T1 = "2026-01-01T11:00:00+00:00"
T2 = "2026-01-01T12:00:00+00:00"
T3 = "2026-01-01T13:00:00+00:00"

_CREATE = """
CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    summary TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    data_type TEXT NOT NULL,
    data BLOB NOT NULL,
    parent_id TEXT,
    folder_paths TEXT,
    folder_paths_order TEXT,
    created_at TEXT
)"""
# Before parent_id, folder_paths and created_at were added.
_CREATE_FIRST = "CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT NOT NULL, updated_at TEXT NOT NULL, data_type TEXT NOT NULL, data BLOB NOT NULL)"


class ZedDb:
    """A threads.db as Zed writes it."""

    def __init__(self, path: Path, *, wal: bool = False, create: str = _CREATE) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path)
        try:
            if wal:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(create)
            conn.commit()
        finally:
            conn.close()

    def thread(
        self,
        tid: str,
        doc: dict[str, Any] | None,
        *,
        updated: str = T0,
        summary: str = "",
        data_type: str = "zstd",
        raw: bytes | str | None = None,
        **columns: Any,
    ) -> ZedDb:
        """A row; ``raw`` is stored as the data as it is (damaged data stays damaged)."""
        if raw is None:
            text = json.dumps(doc).encode("utf-8")
            raw = zstandard.ZstdCompressor(level=3).compress(text) if data_type == "zstd" else text.decode("utf-8")
        row = {"id": tid, "summary": summary, "updated_at": updated, "data_type": data_type, "data": raw, "created_at": updated, **columns}
        conn = sqlite3.connect(self.path)
        try:
            names = {r[1] for r in conn.execute("PRAGMA table_info(threads)")}
            row = {k: v for k, v in row.items() if k in names}
            conn.execute(f"INSERT INTO threads ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
            conn.commit()
        finally:
            conn.close()
        return self


# --- agent2 threads (DbThread, "0.3.0") ----------------------------------------------------------------


def _usage(inp: int, out: int, read: int = 0, write: int = 0) -> dict[str, int]:
    return {"input_tokens": inp, "output_tokens": out, "cache_creation_input_tokens": write, "cache_read_input_tokens": read}


def _agent2(title: str, messages: list[Any], usage: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "title": title,
        "messages": messages,
        "updated_at": T0,
        "detailed_summary": None,
        "initial_project_snapshot": None,
        "cumulative_token_usage": _usage(0, 0),
        "request_token_usage": usage or {},
        "model": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
        "profile": "write",
        "imported": False,
        "subagent_context": None,
        "speed": None,
        "thinking_enabled": False,
        "thinking_effort": None,
        "draft_prompt": None,
        "ui_scroll_position": None,
        "sandboxed_terminal_temp_dir": None,
        "version": "0.3.0",
        **extra,
    }


def _user(uid: str, *content: Any) -> dict[str, Any]:
    return {"User": {"id": uid, "content": [c if isinstance(c, dict) else {"Text": c} for c in content]}}


def _agent(*content: Any, results: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "Agent": {
            "content": [c if isinstance(c, dict) else {"Text": c} for c in content],
            "tool_results": {r["tool_use_id"]: r for r in results},
            "reasoning_details": None,
        }
    }


def _use(tid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ToolUse": {"id": tid, "name": name, "raw_input": json.dumps(args), "input": args, "is_input_complete": True}}


def _result(tid: str, name: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    # Current Zed keeps a list of contents; before, one ({"Text": ...} as serde writes it).
    return {"tool_use_id": tid, "tool_name": name, "is_error": is_error, "content": content, "output": None}


def _chat(title: str, words: str) -> dict[str, Any]:
    return _agent2(title, [_user(f"{title}-u", f"{words}?"), _agent(f"{words}.")])


def _tool_thread() -> dict[str, Any]:
    return _agent2(
        "Fix the parser",
        [
            _user(
                "u1",
                "Why does ",
                {"Mention": {"uri": {"File": {"abs_path": "/src/parse.rs"}}, "content": "fn parse() {}"}},
                " fail?",
                {"Image": {"source": "aGVsbG8gd29ybGQh", "size": {"width": 10, "height": 10}}},
            ),
            _agent(
                {"Thinking": {"text": "Read it first.", "signature": "sig-1"}},
                "Reading the file.",
                _use("toolu_1", "read_file", {"path": "/src/parse.rs"}),
                _use("toolu_2", "grep", {"regex": "parse"}),
                results=[
                    _result("toolu_1", "read_file", [{"Text": "fn parse() {}"}]),
                    _result("toolu_2", "grep", {"Text": "no matches"}, is_error=True),
                ],
            ),
            _agent(
                {"RedactedThinking": "opaque"},
                _use("toolu_3", "screenshot", {}),
                results=[_result("toolu_3", "screenshot", [{"Image": {"source": "AAAA", "size": {"width": 1, "height": 1}}}, {"Text": ""}])],
            ),
            _agent("The parser returns early."),
            _user("u2", "Thanks"),
            _agent("You're welcome."),
        ],
        usage={"u1": _usage(1200, 80, read=4000, write=300), "u2": _usage(50, 5)},
    )


# --- agent-1 threads (SerializedThread) -----------------------------------------------------------------


def _msg(mid: int, role: str, *segments: dict[str, Any], uses: list[Any] = (), results: list[Any] = (), context: str = "") -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "id": mid,
        "role": role,
        "segments": list(segments),
        "tool_uses": list(uses),
        "tool_results": list(results),
        "context": context,
        "creases": [],
        "is_hidden": False,
    }


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _legacy(version: str | None, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "summary": "Legacy thread",
        "updated_at": T0,
        "messages": messages,
        "initial_project_snapshot": None,
        "cumulative_token_usage": _usage(0, 0),
        "request_token_usage": [],
        "detailed_summary_state": "NotGenerated",
        "model": {"provider": "zed.dev", "model": "claude-3-7-sonnet-latest"},
        "completion_mode": "normal",
        "tool_use_limit_reached": False,
        "profile": "write",
        **extra,
    }
    if version is not None:
        doc["version"] = version
    return doc


def _legacy_v2() -> dict[str, Any]:
    result = {"tool_use_id": "toolu_a", "is_error": False, "content": "3 files", "output": None}
    return _legacy(
        "0.2.0",
        [
            _msg(0, "system", _text("You are a helpful assistant.")),
            _msg(1, "user", _text("List the files"), context="<files>\n```md README.md\n# Demo\n```\n</files>"),
            _msg(
                2,
                "assistant",
                {"type": "thinking", "text": "Use the tool.", "signature": "sig-a"},
                {"type": "RedactedThinking", "data": "xyz"},
                _text("Listing."),
                uses=[{"id": "toolu_a", "name": "list_directory", "input": {"path": "."}}],
                results=[result],
            ),
            _msg(3, "assistant", _text("There are 3 files.")),
        ],
        request_token_usage=[_usage(0, 0), _usage(0, 0), _usage(900, 40, read=100), _usage(950, 12)],
        cumulative_token_usage=_usage(1850, 52, read=100),
        detailed_summary_state={"Generated": {"text": "The user listed files.", "message_id": 3}},
    )


def _two(tmp_path: Path) -> ZedDb:
    db = ZedDb(tmp_path / "threads" / "threads.db")
    db.thread("t-old", _legacy_v2(), updated=T0, summary="Legacy thread", data_type="json")
    db.thread("t-new", _chat("Newer chat", "new question"), updated=T1, summary="Newer chat", folder_paths="/home/me/project")
    db.thread("t-empty", _agent2("Draft", []), updated=T2, summary="Draft")
    return db


# --- sessions ---------------------------------------------------------------------------------------


def test_the_newest_thread_with_messages_is_read_with_a_warning(tmp_path: Path) -> None:
    t = load(_two(tmp_path).path)
    assert (t.meta.source_format, t.meta.session_id, t.meta.title, t.meta.cwd) == ("zed", "t-new", "Newer chat", "/home/me/project")
    assert [(m.role, m.content) for m in t.messages] == [("user", (TextBlock(text="new question?"),)), ("assistant", (TextBlock(text="new question."),))]
    warning = next(w for w in t.notes.warnings if "threads;" in w)
    # The empty draft is newer still, but holds nothing to read.
    assert "holds 3 threads" in warning and "'t-old'" in warning and "--session ID" in warning and "read_db(path, session_id=...)" in warning


def test_a_session_id_picks_another(tmp_path: Path) -> None:
    db = _two(tmp_path)
    for t in (load(db.path, session="t-old"), zed.read_db(db.path, session_id="t-old")):
        assert t.meta.session_id == "t-old" and t.meta.title == "Legacy thread"
        assert not any("threads;" in w for w in t.notes.warnings)


def test_an_unknown_or_empty_thread_is_a_clear_error(tmp_path: Path) -> None:
    db = _two(tmp_path)
    with pytest.raises(TranscriptError, match=r"no session 'nope' in this Zed threads database.*'t-empty', 't-new', 't-old'"):
        load(db.path, session="nope")
    with pytest.raises(TranscriptError, match="'t-empty' has no messages"):
        zed.read_db(db.path, session_id="t-empty")


def test_a_database_without_threads_is_a_clear_error(tmp_path: Path) -> None:
    db = ZedDb(tmp_path / "threads.db")
    with pytest.raises(TranscriptError, match=r"holds 0 thread\(s\)"):
        zed.read_db(db.path)
    db.thread("t", _agent2("Draft", []))
    with pytest.raises(TranscriptError, match=r"holds 1 thread\(s\), none with readable messages"):
        zed.read_db(db.path)


def test_threads_are_listed_newest_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _two(tmp_path)
    db.thread("t-broken", None, updated=T3, summary="Broken", raw=b"\x28\xb5\x2f\xfd garbage")
    listed = sessions(db.path)
    assert [(s.id, s.messages, s.title, s.format, s.kind) for s in listed] == [
        ("t-broken", 0, "Broken", "zed", "damaged"),
        ("t-empty", 0, "Draft", "zed", None),
        ("t-new", 2, "Newer chat", "zed", None),
        ("t-old", 4, "Legacy thread", "zed", None),
    ]
    assert listed[2].updated == T1
    assert [s.id for s in zed.list_sessions(db.path)] == ["t-broken", "t-empty", "t-new", "t-old"]
    assert main(["sessions", str(db.path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in out["sessions"]] == ["t-broken", "t-empty", "t-new", "t-old"]
    assert main(["sessions", str(db.path)]) == 0
    assert "Newer chat" in capsys.readouterr().out


def test_a_subagent_thread_is_listed_but_not_the_default(tmp_path: Path) -> None:
    db = ZedDb(tmp_path / "threads.db")
    db.thread("parent", _chat("Parent", "parent work"), updated=T0, summary="Parent")
    db.thread("child", _chat("Child", "child work"), updated=T1, summary="Child", parent_id="parent")
    assert load(db.path).meta.session_id == "parent"
    assert [(s.id, s.kind) for s in sessions(db.path)] == [("child", "subagent"), ("parent", None)]
    assert load(db.path, session="child").meta.session_id == "child"


def test_the_first_schema_without_later_columns_reads(tmp_path: Path) -> None:
    db = ZedDb(tmp_path / "threads.db", create=_CREATE_FIRST).thread("t", _chat("Only", "hello"), summary="Only")
    t = load(db.path)
    assert t.meta.session_id == "t" and t.meta.cwd is None and len(t.messages) == 2


def test_a_threads_table_missing_zed_columns_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "threads.db"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE threads (id TEXT, summary TEXT, updated_at TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(TranscriptError, match="no column data_type, data"):
        zed.read_db(p)
    assert zed.sniff(read_file_head(p)) == 0


# --- agent2 mapping ----------------------------------------------------------------------------------


def _tool_db(tmp_path: Path, doc: dict[str, Any] | None = None) -> ZedDb:
    return ZedDb(tmp_path / "threads.db").thread("t1", doc or _tool_thread(), summary="Fix the parser")


def test_an_agent2_thread_maps_as_zed_sends_it(tmp_path: Path) -> None:
    t = load(_tool_db(tmp_path).path)
    assert (t.meta.title, t.meta.model) == ("Fix the parser", "claude-sonnet-4-5")
    m = t.messages
    assert [x.role for x in m] == ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert m[0].content == (
        TextBlock(text="Why does "),
        TextBlock(text="@/src/parse.rs"),
        TextBlock(text=" fail?"),
        ImageBlock(media_type="image/png", size_bytes=12, source="base64"),
        TextBlock(text="/src/parse.rs\n\nfn parse() {}\n"),
    )
    assert m[1].content == (
        ThinkingBlock(thinking="Read it first.", signature="sig-1"),
        TextBlock(text="Reading the file."),
        ToolUseBlock(id="toolu_1", name="read_file", input={"path": "/src/parse.rs"}),
        ToolUseBlock(id="toolu_2", name="grep", input={"regex": "parse"}),
    )
    assert m[2].content == (
        ToolResultBlock(tool_use_id="toolu_1", content="fn parse() {}"),
        ToolResultBlock(tool_use_id="toolu_2", content="no matches", is_error=True),
    )
    assert m[3].content == (ToolUseBlock(id="toolu_3", name="screenshot", input={}),)
    assert m[4].content == (ToolResultBlock(tool_use_id="toolu_3", content="[image: image/png, 3 bytes]"),)
    assert m[5].content == (TextBlock(text="The parser returns early."),)
    assert m[6].content == (TextBlock(text="Thanks"),)
    assert t.notes.skipped == {"content:RedactedThinking (redacted thinking)": 1}
    assert not t.notes.unanswered_tool_uses and not t.notes.orphan_tool_results
    assert set(tool_pairs(t.messages)) == {"toolu_1", "toolu_2", "toolu_3"}


def test_a_turn_s_usage_goes_on_its_last_assistant_message(tmp_path: Path) -> None:
    t = load(_tool_db(tmp_path).path)
    usages = [(n, x.usage) for n, x in enumerate(t.messages) if x.usage is not None]
    assert usages == [
        (5, Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=4000, cache_write_tokens=300)),
        (7, Usage(input_tokens=50, output_tokens=5)),
    ]


def test_an_empty_tool_result_is_sent_as_zed_sends_it(tmp_path: Path) -> None:
    doc = _agent2("t", [_user("u", "go"), _agent(_use("c1", "terminal", {"command": "true"}), results=[_result("c1", "terminal", "")]), _agent("done")])
    t = load(_tool_db(tmp_path, doc).path)
    assert t.messages[2].content == (ToolResultBlock(tool_use_id="c1", content="<Tool returned an empty string>"),)


def test_a_call_without_a_result_is_left_out_mid_thread_and_unanswered_at_the_end(tmp_path: Path) -> None:
    doc = _agent2(
        "t",
        [
            _user("u1", "go"),
            _agent("Trying.", _use("c-lost", "terminal", {"command": "make"})),
            _user("u2", "again"),
            _agent(_use("c-only", "terminal", {"command": "make"})),
            _user("u3", "once more"),
            _agent("Running.", _use("c-end", "terminal", {"command": "make test"})),
        ],
    )
    t = load(_tool_db(tmp_path, doc).path)
    # The assistant message that held only the lost call is not sent at all: two user messages follow each other, as Zed sends them.
    assert [(x.role, x.content) for x in t.messages] == [
        ("user", (TextBlock(text="go"),)),
        ("assistant", (TextBlock(text="Trying."),)),
        ("user", (TextBlock(text="again"),)),
        ("user", (TextBlock(text="once more"),)),
        ("assistant", (TextBlock(text="Running."), ToolUseBlock(id="c-end", name="terminal", input={"command": "make test"}))),
    ]
    assert t.notes.skipped["tool_use:no result"] == 2
    assert any("'c-lost'" in w and "left out" in w for w in t.notes.warnings)
    assert t.notes.unanswered_tool_uses == ["c-end"]
    assert any("'c-end'" in w and "unanswered" in w for w in t.notes.warnings)


def test_a_resume_is_sent_as_zed_words(tmp_path: Path) -> None:
    doc = _agent2("t", [_user("u", "go"), _agent("partial"), "Resume", _agent("rest")])
    t = load(_tool_db(tmp_path, doc).path)
    assert [(x.role, x.content) for x in t.messages][2] == ("user", (TextBlock(text="Continue where you left off"),))


def test_unknown_kinds_are_counted_not_dropped_silently(tmp_path: Path) -> None:
    doc = _agent2(
        "t",
        [
            _user("u", "go", {"Audio": {"data": "x"}}),
            _agent("ok", {"Citation": {"url": "x"}}),
            {"System": {"text": "x"}},
            "Pause",
            _user("u2"),
            _agent("fine"),
        ],
    )
    t = load(_tool_db(tmp_path, doc).path)
    assert t.notes.skipped == {
        "content:Audio (unknown type)": 1,
        "content:Citation (unknown type)": 1,
        "message:System (unknown type)": 1,
        "message:Pause (unknown type)": 1,
        "message:empty": 1,
    }
    # The empty user message is not sent, so the two replies follow each other (as Zed sends them).
    assert [(x.role, x.content) for x in t.messages] == [
        ("user", (TextBlock(text="go"),)),
        ("assistant", (TextBlock(text="ok"),)),
        ("assistant", (TextBlock(text="fine"),)),
    ]


def test_a_detailed_summary_and_whole_thread_usage_are_warnings_not_messages(tmp_path: Path) -> None:
    doc = _chat("t", "hi")
    doc["detailed_summary"] = "The user said hi."
    doc["cumulative_token_usage"] = _usage(10, 2)
    t = load(_tool_db(tmp_path, doc).path)
    assert len(t.messages) == 2 and all(x.boundary is None for x in t.messages)
    assert any("detailed summary" in w for w in t.notes.warnings)
    assert any("whole thread: 10 input, 2 output" in w for w in t.notes.warnings)


def test_an_unknown_version_is_read_by_its_shape_with_a_warning(tmp_path: Path) -> None:
    doc = _chat("t", "hi")
    doc["version"] = "0.9.0"
    t = load(_tool_db(tmp_path, doc).path)
    assert len(t.messages) == 2 and any("'0.9.0'" in w and "agent2" in w for w in t.notes.warnings)


# --- agent-1 mapping ---------------------------------------------------------------------------------


def test_a_v0_2_thread_maps_with_usage_by_message_index(tmp_path: Path) -> None:
    db = ZedDb(tmp_path / "threads.db").thread("old", _legacy_v2(), summary="row summary", data_type="json")
    t = load(db.path)
    assert (t.meta.title, t.meta.model) == ("Legacy thread", "claude-3-7-sonnet-latest")
    m = t.messages
    assert [x.role for x in m] == ["user", "assistant", "user", "assistant"]
    assert m[0].content == (TextBlock(text="<files>\n```md README.md\n# Demo\n```\n</files>"), TextBlock(text="List the files"))
    assert m[1].content == (
        ThinkingBlock(thinking="Use the tool.", signature="sig-a"),
        TextBlock(text="Listing."),
        ToolUseBlock(id="toolu_a", name="list_directory", input={"path": "."}),
    )
    assert m[2].content == (ToolResultBlock(tool_use_id="toolu_a", content="3 files"),)
    assert (m[1].usage, m[3].usage) == (Usage(input_tokens=900, output_tokens=40, cache_read_tokens=100), Usage(input_tokens=950, output_tokens=12))
    assert t.notes.skipped == {"message:system (not sent)": 1, "segment:RedactedThinking (redacted thinking)": 1}
    assert any("detailed summary" in w for w in t.notes.warnings)


def test_a_v0_1_thread_keeps_results_on_the_next_user_message(tmp_path: Path) -> None:
    result = {"tool_use_id": "abc", "is_error": True, "content": {"Text": "boom"}, "output": None}
    doc = _legacy(
        "0.1.0",
        [
            _msg(1, "user", _text("Use tool_1")),
            _msg(2, "assistant", _text("I want to use a tool"), uses=[{"id": "abc", "name": "tool_1", "input": None}]),
            _msg(3, "user", results=[result]),
            _msg(4, "assistant", _text("It failed.")),
        ],
    )
    t = load(ZedDb(tmp_path / "threads.db").thread("v1", doc).path)
    assert [x.role for x in t.messages] == ["user", "assistant", "user", "assistant"]
    assert t.messages[1].content[-1] == ToolUseBlock(id="abc", name="tool_1", input={})
    assert t.messages[2].content == (ToolResultBlock(tool_use_id="abc", content="boom", is_error=True),)
    assert not t.notes.skipped.get("message:empty")


def test_an_unversioned_thread_has_one_text_per_message(tmp_path: Path) -> None:
    doc = {"summary": "Oldest", "updated_at": T0, "messages": [{"id": 0, "role": "user", "text": "hi"}, {"id": 1, "role": "assistant", "text": "hello"}]}
    t = load(ZedDb(tmp_path / "threads.db").thread("v0", doc, data_type="json").path)
    assert (t.meta.title, [(x.role, x.content) for x in t.messages]) == ("Oldest", [("user", (TextBlock(text="hi"),)), ("assistant", (TextBlock(text="hello"),))])


def test_unknown_segments_and_roles_are_counted(tmp_path: Path) -> None:
    doc = _legacy(
        "0.2.0",
        [_msg(0, "user", _text("q"), {"type": "image", "data": "x"}), _msg(1, "tool", _text("?")), _msg(2, "assistant", _text("a"))],
    )
    t = load(ZedDb(tmp_path / "threads.db").thread("v2", doc).path)
    assert t.notes.skipped == {"segment:image (unknown type)": 1, "role:tool (unknown role)": 1}
    assert len(t.messages) == 2


# --- damaged rows ----------------------------------------------------------------------------------------


def test_damaged_rows_are_passed_over_and_counted(tmp_path: Path) -> None:
    db = ZedDb(tmp_path / "threads.db")
    db.thread("good", _chat("Good", "fine"), updated=T0, summary="Good")
    db.thread("bad-zstd", None, updated=T1, raw=b"\x28\xb5\x2f\xfd\x00garbage")
    db.thread("bad-json", None, updated=T2, data_type="json", raw='{"messages": [')
    db.thread("bad-kind", None, updated=T3, data_type="brotli", raw=b"x")
    db.thread("not-a-thread", [1, 2], updated="2026-01-01T14:00:00+00:00", data_type="json")  # type: ignore[arg-type]
    t = load(db.path)
    assert t.meta.session_id == "good"
    assert t.notes.skipped == {
        "thread:data (no thread object with messages)": 1,
        "thread:data_type 'brotli' (unknown)": 1,
        "thread:data (not JSON)": 1,
        "thread:data (damaged zstd)": 1,
    }
    with pytest.raises(TranscriptError, match=r"Zed thread 'bad-zstd' cannot be read: data \(damaged zstd\)"):
        zed.read_db(db.path, session_id="bad-zstd")


def test_a_truncated_zstd_blob_is_damaged(tmp_path: Path) -> None:
    blob = zstandard.ZstdCompressor(level=3).compress(json.dumps(_chat("x", "y")).encode())
    db = ZedDb(tmp_path / "threads.db").thread("cut", None, raw=blob[: len(blob) // 2])
    with pytest.raises(TranscriptError, match="'cut' cannot be read: data"):
        zed.read_db(db.path, session_id="cut")


def test_a_zip_bomb_row_is_refused_past_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zed, "MAX_DECOMPRESSED", 1 << 20)
    bomb = zstandard.ZstdCompressor(level=3).compress(b" " * (4 << 20))
    assert len(bomb) < 1000
    db = ZedDb(tmp_path / "threads.db").thread("bomb", None, updated=T1, raw=bomb).thread("ok", _chat("Ok", "fine"), updated=T0)
    t = load(db.path)
    assert t.meta.session_id == "ok" and t.notes.skipped == {f"thread:data (more than {1 << 20} bytes once decompressed)": 1}
    with pytest.raises(TranscriptError, match="'bomb' cannot be read: data \\(more than"):
        zed.read_db(db.path, session_id="bomb")


def test_damaged_shapes_inside_a_thread_never_crash(tmp_path: Path) -> None:
    doc = _agent2(
        "t",
        [
            _user("u", "go", {"Mention": None}, {"Image": "x"}, {"Text": 3}),
            {"Agent": {"content": [{"ToolUse": {"id": "c", "input": "not json"}}, {"Thinking": None}], "tool_results": {"c": {"content": 5}}}},
            {"Agent": {"content": None, "tool_results": [{"tool_use_id": "c", "content": [None, {"image": {}}]}]}},
            _agent("end"),
        ],
        request_token_usage={"u": "many"},
    )
    t = load(_tool_db(tmp_path, doc).path)
    assert t.messages and t.messages[-1].content == (TextBlock(text="end"),)
    assert any("_raw" in w for w in t.notes.warnings) and any("without a name" in w for w in t.notes.warnings)


# --- read-only -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_reading_leaves_the_file_and_its_folder_untouched(tmp_path: Path, wal: bool) -> None:
    db = ZedDb(tmp_path / "threads.db", wal=wal).thread("t", _tool_thread())
    assert_reads_leave_untouched(db.path, load, zed.list_sessions, sessions, detect)


def test_a_database_zed_is_writing_reads_what_it_committed(tmp_path: Path) -> None:
    db = ZedDb(tmp_path / "threads.db", wal=True).thread("t", _chat("Committed", "first"), updated=T0)
    writer = sqlite3.connect(db.path)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('late', '', ?, 'json', ?)", (T3, json.dumps(_chat("Late", "x"))))
        assert (tmp_path / "threads.db-wal").exists()
        assert load(db.path).meta.session_id == "t"
    finally:
        writer.rollback()
        writer.close()


# --- detection -------------------------------------------------------------------------------------------


def test_a_zed_database_is_detected_and_not_stolen(tmp_path: Path) -> None:
    db = _tool_db(tmp_path)
    assert detect(db.path) == "zed"
    claimed = {n: s for n, s in scores(read_file_head(db.path)).items() if s > 0}
    # goose_db answers any SQLite file with 40 so that reading it says what is missing.
    assert claimed == {"zed": 100, "goose_db": 40}


def test_other_sqlite_files_are_not_claimed(tmp_path: Path) -> None:
    for name, create in (
        ("sessions.db", ["CREATE TABLE sessions (id TEXT)", "CREATE TABLE messages (session_id TEXT, role TEXT, content_json TEXT, created_timestamp INTEGER)"]),
        ("opencode.db", ["CREATE TABLE session (id TEXT)", "CREATE TABLE message (id TEXT)", "CREATE TABLE part (id TEXT)"]),
        ("state.vscdb", ["CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"]),
        ("other.db", ["CREATE TABLE threads (id INTEGER, title TEXT, body TEXT)"]),
    ):
        p = tmp_path / name
        conn = sqlite3.connect(p)
        for sql in create:
            conn.execute(sql)
        conn.commit()
        conn.close()
        assert zed.sniff(read_file_head(p)) == 0, name
    (tmp_path / "threads.json").write_text(json.dumps(_chat("x", "y")), encoding="utf-8")
    assert zed.sniff(read_file_head(tmp_path / "threads.json")) == 0


def test_every_other_format_forced_on_a_zed_database_fails_clearly(tmp_path: Path) -> None:
    assert _forced_results(_tool_db(tmp_path).path) == []


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert zed.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert zed.sniff(read_file_head(path)) == 0


def test_the_format_is_registered() -> None:
    assert FORMATS["zed"] is zed.FORMAT


# --- export round trip and fuzz seeds ------------------------------------------------------------------


def test_cli_import_and_export_to_anthropic(tmp_path: Path) -> None:
    db = _tool_db(tmp_path)
    assert main(["import", str(db.path), "--out", str(tmp_path / "t.lab.json")]) == 0
    out = tmp_path / "request.json"
    assert main(["export", str(db.path), "--to", "anthropic", "--out", str(out)]) == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    uses = {b["id"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"}
    assert uses == results == {"toolu_1", "toolu_2", "toolu_3"}


def read_thread_json(path: Path) -> Transcript:
    """``{"threads": [{id, summary, updated_at, data_type, data}]}`` written beside ``path`` as a threads.db, then read.

    ``data`` that is a string is stored as it is (damaged JSON stays damaged); anything else as JSON,
    zstd-compressed for a ``zstd`` row.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    db = ZedDb(path.with_name(path.name + ".db"))
    rows = doc.get("threads") if isinstance(doc, dict) else None
    for n, row in enumerate(rows if isinstance(rows, list) else []):
        r = row if isinstance(row, dict) else {}
        data_type = r.get("data_type") if isinstance(r.get("data_type"), str) else "zstd"
        data = r.get("data")
        raw: bytes | str | None = data if isinstance(data, str) else None
        if raw is None:
            text = json.dumps(data).encode("utf-8")
            raw = zstandard.ZstdCompressor(level=3).compress(text) if data_type == "zstd" else text.decode("utf-8")
        db.thread(f"{r.get('id')}-{n}", None, updated=str(r.get("updated_at", T0)), summary=str(r.get("summary", "")), data_type=data_type, raw=raw)
    return zed.read_db(db.path)


def thread_seeds() -> list[tuple[str, dict[str, Any]]]:
    """Real shapes for the fuzzer: an agent2 thread with tools, and the agent-1 versions."""
    v1 = _legacy("0.1.0", [_msg(1, "user", _text("u")), _msg(2, "assistant", uses=[{"id": "a", "name": "t", "input": {}}]), _msg(3, "user", results=[{"tool_use_id": "a", "is_error": False, "content": "r", "output": None}])])
    return [
        ("agent2", {"threads": [{"id": "t1", "summary": "s", "updated_at": T1, "data_type": "zstd", "data": _tool_thread()}]}),
        ("legacy", {"threads": [{"id": "t2", "summary": "s", "updated_at": T0, "data_type": "json", "data": _legacy_v2()}, {"id": "t3", "updated_at": T1, "data_type": "zstd", "data": v1}]}),
    ]


def test_the_fuzz_seeds_read(tmp_path: Path) -> None:
    for name, doc in thread_seeds():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc), encoding="utf-8")
        t = read_thread_json(p)
        assert t.messages and t.meta.source_format == "zed", name
