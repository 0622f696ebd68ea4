"""Goose importer: the session JSONL and export JSON, tool requests and responses, visibility and compaction, usage, errors, detection.

The fixtures (``fixtures/goose/``: a session JSONL of Goose before SQLite, with
its metadata line and legacy ``Vec<Content>`` tool results, and a ``goose
session export --format json`` document with ``CallToolResult`` values and a
compaction) follow block/goose: ``crates/goose/src/conversation/message.rs``
(message and content types, ``metadata.userVisible/agentVisible``),
``conversation/tool_result_serde.rs`` (``{status, value}`` / ``{status,
error}``), ``session/storage.rs`` and ``legacy.rs`` (the JSONL),
``context_mgmt/mod.rs`` (what a compaction writes) and
``goose-cli/src/commands/session.rs`` (the export).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lab
from lab.cli.main import main
from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats import detect, load
from lab.formats.databases import goose
from lab.formats.jsonio import read_file_head
from lab.replayer.recorded import apply_recorded
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id
from tests.formats.test_wrong_format import _forced_results

FIXTURES = Path(__file__).parent / "fixtures" / "goose"
JSONL = FIXTURES / "20260101_100000.jsonl"
EXPORT = FIXTURES / "session.export.json"
DOC: dict[str, Any] = json.loads(EXPORT.read_text(encoding="utf-8"))


def _shape(t: Transcript) -> list[tuple[str, str | None, list[str]]]:
    return [(m.role, m.tag, [b.type for b in m.content]) for m in t.messages]


def _jsonl(tmp_path: Path, records: list[Any]) -> Path:
    p = tmp_path / "session.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return p


def _m(role: str, content: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"role": role, "created": 1767261600, "content": content, **kw}


def _t(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


# --- the session JSONL ------------------------------------------------------------------------------


def test_the_session_jsonl_with_its_metadata_line() -> None:
    t = load(JSONL)
    assert detect(JSONL) == "goose" and t.meta.source_format == "goose"
    assert _shape(t) == [
        ("user", None, ["text"]),
        ("assistant", None, ["thinking", "text", "tool_use", "tool_use"]),
        ("user", None, ["tool_result", "tool_result"]),
        ("assistant", None, ["tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["text"]),
    ]
    assert t.meta.title == "Fix add in calc" and t.meta.cwd == "/home/dev/calc" and t.meta.session_id == "20260101_100000"
    thinking = t.messages[1].content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.signature == "sig-1"


def test_tool_requests_and_responses_pair_up() -> None:
    t = load(JSONL)
    pairs = tool_pairs(t.messages)
    assert set(pairs) == {"toolu_01", "toolu_02", "toolu_03"}
    assert all(u is not None and r == u + 1 for u, r in pairs.values())
    uses = {b.id: b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}
    assert uses["toolu_01"].name == "developer__shell" and uses["toolu_01"].input == {"command": "pytest -q"}
    # A call Goose could not parse stays a call, answered by its error.
    assert uses["toolu_02"].name == "invalid_tool_call" and "Could not interpret" in uses["toolu_02"].input["error"]
    results = {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
    # Output meant for the user only (audience ["user"]) is not what the model saw.
    assert results["toolu_01"].content == "F.\n1 failed, 1 passed" and not results["toolu_01"].is_error
    assert results["toolu_02"].is_error
    assert t.notes.orphan_tool_results == [] and t.notes.unanswered_tool_uses == []


def test_unknown_and_ui_content_is_counted_never_content() -> None:
    t = load(JSONL)
    s = t.notes.skipped
    assert s["content:hologram (unknown type)"] == 1 and s["content:toolConfirmationRequest"] == 1
    assert s["tool output for the user only"] == 1
    texts = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
    assert not any("hologram" in x for x in texts)


def test_session_usage_is_the_last_reply_s() -> None:
    t = load(JSONL)
    assert [m.usage for m in t.messages if m.role == "assistant"] == [None, None, Usage(input_tokens=2200, output_tokens=110)]
    assert any("accumulated" in w and "5000" in w for w in t.notes.warnings)


def test_a_session_jsonl_without_metadata_line(tmp_path: Path) -> None:
    t = load(_jsonl(tmp_path, [_m("user", [_t("hi")]), _m("assistant", [_t("hello")])]), format="goose")
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"])]


def test_a_last_line_cut_off_mid_write_is_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "live.jsonl"
    p.write_text(JSONL.read_text(encoding="utf-8") + '{"role": "user", "created": 17672', encoding="utf-8")
    t = load(p)
    assert len(t.messages) == 6 and any("cut off" in w for w in t.notes.warnings)


# --- the export -------------------------------------------------------------------------------------


def test_the_export_with_a_compaction() -> None:
    t = load(EXPORT)
    assert detect(EXPORT) == "goose"
    assert _shape(t) == [
        ("user", None, ["text"]),
        ("assistant", None, ["text", "tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["tool_use"]),
        ("user", None, ["tool_result"]),
        ("system", "boundary", ["text"]),
        ("user", "summary", ["text"]),
        ("assistant", "placeholder", ["text"]),
        ("user", None, ["text"]),
        ("assistant", None, ["tool_use", "tool_use"]),
        ("user", None, ["tool_result", "tool_result"]),
        ("assistant", None, ["text"]),
    ]
    assert t.meta.model == "anthropic/claude-sonnet-4-5" and t.meta.title == "Add sub to calc" and t.meta.session_id == "20260101_110000"
    marker = t.messages[5].boundary
    assert marker is not None and marker.strategy == goose.STRATEGY and marker.messages_removed == 5
    # The archived copy of the last prompt (visible to no one) is not history.
    assert t.notes.skipped["message:invisible"] == 1
    results = {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
    assert results["call_2"].is_error and "ImportError" in results["call_2"].content  # CallToolResult.isError
    assert results["call_4"].content == "shown"  # a frontend tool's call and its result
    assert t.messages[-1].usage == Usage(input_tokens=3100, output_tokens=200)


def test_a_replay_undoes_the_compaction() -> None:
    t = load(EXPORT)
    undone, found, _ = apply_recorded(t, "undo")
    assert len(found) == 1 and found[0].written == 2 and found[0].action == "undone"
    roles = [m.role for m in undone.messages]
    assert "system" not in roles and len(undone.messages) == len(t.messages) - 3


@pytest.mark.parametrize("key", ["conversation", "messages"])
def test_a_document_or_a_bare_list_of_messages(tmp_path: Path, key: str) -> None:
    doc = {key: DOC["conversation"]}
    for i, content in enumerate((doc, DOC["conversation"])):
        p = tmp_path / f"{key}{i}.json"
        p.write_text(json.dumps(content), encoding="utf-8")
        assert detect(p) == "goose"
        assert [m.role for m in load(p).messages] == [m.role for m in load(EXPORT).messages]


# --- errors and detection -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        pytest.param('{"working_dir": "/x", "description": "d", "message_count": 0}\n', id="metadata-only"),
        pytest.param('{"conversation": []}', id="empty-conversation"),
        pytest.param('{"conversation": [{"role": "user", "created": 1, "content": [{"type": "systemNotification"}]}]}', id="nothing-sent"),
        pytest.param('[{"role": "user", "content": "hi"}]', id="chat-messages"),
        pytest.param('{"conversation": 3}', id="not-a-list"),
        pytest.param("not json\n", id="not-json"),
    ],
)
def test_degenerate_files_are_refused_clearly(tmp_path: Path, content: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        load(p, format="goose")
    assert err.value.reason and "could not import as" not in str(err.value)


def test_a_tool_request_without_a_name_is_kept_as_an_invalid_call_with_a_warning(tmp_path: Path) -> None:
    bad = {"type": "toolRequest", "id": "t1", "toolCall": {"status": "success", "value": {"arguments": {"x": 1}}}}
    answer = {"type": "toolResponse", "id": "t1", "toolResult": {"status": "error", "error": "no such tool"}}
    p = _jsonl(tmp_path, [_m("user", [_t("go")]), _m("assistant", [bad]), _m("user", [answer]), _m("assistant", [_t("sorry")])])
    t = load(p, format="goose")
    use = next(b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock))
    assert use.name == "invalid_tool_call" and use.id == "t1"
    pairs = tool_pairs(t.messages)
    assert list(pairs) == ["t1"] and None not in pairs["t1"]
    assert any("line 2" in w and "without a tool name" in w for w in t.notes.warnings)
    assert t.messages[-1].role == "assistant"


# Forced on the session JSONL, the message-per-line readers meet Goose's tool requests as blocks of a kind they
# do not know: sanity refuses a result that dropped them all ("tool calls dropped").
@pytest.mark.parametrize("path", [JSONL, EXPORT], ids=["jsonl", "export"])
def test_every_other_format_forced_on_the_fixture_fails_clearly(path: Path) -> None:
    assert _forced_results(path) == []


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert goose.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert goose.sniff(read_file_head(path)) == 0


# --- round trip -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [JSONL, EXPORT], ids=["jsonl", "export"])
def test_replays_and_exports_with_every_pair(tmp_path: Path, path: Path) -> None:
    t = load(path)
    result = lab.replay(t, "minicode", window=32000)
    assert result.invalid_requests == 0 and result.rows
    out = tmp_path / "request.json"
    assert main(["export", str(path), "--to", "openai", "--out", str(out)]) == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
    assert calls == answered == set(tool_pairs(t.messages))


# --- invariant --------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(plan=st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.booleans()), min_size=1, max_size=5))
def test_calls_and_responses_always_pair_or_are_counted(tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[int, bool, bool]]) -> None:
    """However many calls a turn makes, and whichever responses are lost or invented, pairs stay intact."""
    records: list[dict[str, Any]] = []
    n = 0
    for k, (calls, lose_one, orphan) in enumerate(plan):
        records.append(_m("user", [_t(f"task {k}")]))
        ids = [f"c{n + i}" for i in range(calls)]
        n += calls
        records.append(_m("assistant", [_t("on it"), *({"type": "toolRequest", "id": i, "toolCall": {"status": "success", "value": {"name": "shell", "arguments": {}}}} for i in ids)]))
        answered = ids[:-1] if lose_one and ids else ids
        extra = [{"type": "toolResponse", "id": "ghost", "toolResult": {"status": "success", "value": [_t("?")]}}] if orphan else []
        responses = [{"type": "toolResponse", "id": i, "toolResult": {"status": "success", "value": [_t("ok")]}} for i in answered] + extra
        if responses:
            records.append(_m("user", responses))
        records.append(_m("assistant", [_t("done")]))
    t = load(_jsonl(tmp_path_factory.mktemp("goose"), records), format="goose")
    for use, result in tool_pairs(t.messages).values():
        assert use is not None and (result is None or result == use + 1)
    lost = sum(1 for calls, lose, _ in plan if lose and calls)
    assert len(t.notes.unanswered_tool_uses) == lost
    assert t.notes.skipped.get("content:toolResponse (unknown call)", 0) == sum(1 for *_, o in plan if o)


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


def test_an_export_written_on_one_line_is_read_as_the_export(tmp_path: Path) -> None:
    # jq -c or an API response puts the export on one line: its metadata keys made it look like a
    # session JSONL's metadata line, and the conversation in it was never read.
    p = tmp_path / "20260101_100000.jsonl"
    p.write_text(json.dumps(DOC) + "\n", encoding="utf-8")
    assert _shape(goose.read(p)) == _shape(goose.read(EXPORT))


def test_content_whose_type_is_not_text_is_not_claimed(tmp_path: Path) -> None:
    # The sniffer looked a list-valued content type up in a set: TypeError, which detection logs as a "no".
    records = [_m("user", [{"type": ["text"], "text": "hi"}]), _m("assistant", [{"type": {"t": 1}, "text": "ok"}])]
    assert goose.sniff(read_file_head(_jsonl(tmp_path, records))) == 0
