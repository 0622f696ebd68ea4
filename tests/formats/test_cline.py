"""Cline and Roo Code: ui_messages.json alone, task folders, usage per request, detection."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import lab
from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, message_text, tool_pairs
from lab.errors import TranscriptError
from lab.formats.editors import cline
from lab.formats import detect, load
from lab.formats.detect import scores
from lab.formats.export import to_anthropic
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id

FIXTURES = Path(__file__).parent / "fixtures" / "cline"
UI = FIXTURES / "ui_messages.json"
TASK = FIXTURES / "task"
ROO = FIXTURES / "roo-task"


def _uses(t: Transcript) -> list[ToolUseBlock]:
    return [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]


def _results(t: Transcript) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}


def _usage(t: Transcript) -> list[tuple[int, int, int, int]]:
    return [
        (m.usage.input_tokens, m.usage.output_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens)
        for m in t.messages
        if m.role == "assistant" and m.usage is not None
    ]


REQUESTS = [(2400, 85, 0, 2300), (310, 140, 2300, 420), (180, 60, 2720, 200), (150, 45, 2920, 120)]


# --- ui_messages.json alone -----------------------------------------------------------------


def test_ui_messages_alone_rebuild_the_conversation() -> None:
    t = load(UI)
    assert detect(UI) == "cline" and t.meta.source_format == "cline"
    assert t.messages[0].role == "user" and message_text(t.messages[0]) == "Fix the off-by-one in src/page.ts"
    first = t.messages[1]
    assert isinstance(first.content[0], ThinkingBlock) and isinstance(first.content[1], TextBlock)
    assert message_text(t.messages[-1]) == "Pages now round up; the tests pass."


def test_tools_and_commands_become_pairs() -> None:
    t = load(UI)
    uses = _uses(t)
    assert [u.name for u in uses] == ["read_file", "replace_in_file", "execute_command"]
    assert uses[0].input["path"] == "src/page.ts" and "Math.ceil" in uses[1].input["diff"]
    assert uses[2].input == {"command": "npm test"}
    results = _results(t)
    # A tool with no output records is answered with what the next request sent the model.
    assert "return Math.floor(n / size);" in results[uses[0].id].content and "Loading..." not in results[uses[0].id].content
    assert results[uses[2].id].content == "> pager@1.0.0 test\n> jest\nPASS src/page.test.ts\nTests: 3 passed"
    assert all(use is not None and result is not None for use, result in tool_pairs(t.messages).values())


def test_feedback_on_a_tool_joins_its_result() -> None:
    t = load(UI)
    turn = next(m for m in t.messages if any(isinstance(b, TextBlock) and b.text == "use ceil, yes" for b in m.content))
    assert isinstance(turn.content[0], ToolResultBlock) and turn.role == "user"


def test_api_req_started_gives_the_usage_of_the_reply_that_follows() -> None:
    assert _usage(load(UI)) == REQUESTS


def test_the_requests_cost_is_kept_as_the_recorded_cost() -> None:
    costs = [m.usage.cost_usd for m in load(UI).messages if m.usage is not None]
    assert len(costs) == len(REQUESTS) and all(c is not None and c > 0 for c in costs)


def test_unknown_and_bookkeeping_kinds_are_skipped_and_counted() -> None:
    t = load(UI)
    assert t.notes.skipped == {"say:checkpoint_created": 1, "say:shiny_new_kind": 1, "ask:completion_result:empty": 1}
    assert t.notes.records_read == 17


# --- task folders ---------------------------------------------------------------------------


def test_a_task_folder_takes_messages_from_the_history_and_usage_from_the_ui() -> None:
    t = load(TASK)
    history = json.loads((TASK / "api_conversation_history.json").read_text(encoding="utf-8"))
    assert len(t.messages) == len(history)
    # The XML tool call the history's text holds, and its answer, are a tool call and its result.
    [call] = [b for b in t.messages[1].content if isinstance(b, ToolUseBlock)]
    assert (call.name, call.input) == ("read_file", {"path": "src/page.ts"})
    assert "<read_file>" not in message_text(t.messages[1]) and call.id in tool_pairs(t.messages)
    assert _usage(t) == REQUESTS
    assert t.meta.model == "claude-3-7-sonnet-20250219"
    assert t.meta.source_format == "cline"


def test_ui_messages_beside_a_history_reads_the_folder() -> None:
    assert load(TASK / "ui_messages.json").messages == load(TASK).messages


def test_a_folder_with_only_the_history(tmp_path: Path) -> None:
    shutil.copy(TASK / "api_conversation_history.json", tmp_path)
    t = load(tmp_path)
    assert len(t.messages) == 8 and _usage(t) == []


def test_mismatched_counts_are_matched_in_order_with_a_warning(tmp_path: Path) -> None:
    shutil.copy(TASK / "api_conversation_history.json", tmp_path)
    records = json.loads(UI.read_text(encoding="utf-8"))
    (tmp_path / "ui_messages.json").write_text(json.dumps([r for r in records if r["ts"] != 1714550400130]), encoding="utf-8")
    t = load(tmp_path)
    assert _usage(t) == REQUESTS[:3]
    assert any("3 requests" in w for w in t.notes.warnings)


def test_roo_code_task_folder() -> None:
    t = load(ROO)
    assert len(t.messages) == 6 and t.messages[0].timestamp is not None
    assert _usage(t) == [(1900, 70, 0, 1800), (60, 90, 1800, 100), (40, 30, 1900, 80)]


def test_roo_code_ui_alone(tmp_path: Path) -> None:
    shutil.copy(ROO / "ui_messages.json", tmp_path)
    t = load(tmp_path / "ui_messages.json")
    assert message_text(t.messages[1]) == "Rename in tests too?\n- Yes, everywhere\n- Only src/"
    (use,) = _uses(t)
    assert use.name == "apply_diff" and use.input["path"] == "src/user.ts"
    assert t.notes.skipped == {"say:checkpoint_saved": 1}


def test_an_empty_folder_is_not_a_task_folder(tmp_path: Path) -> None:
    assert not cline.task_files(tmp_path)
    with pytest.raises(TranscriptError, match="directory"):
        load(tmp_path)


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, match",
    [
        ("[{\"ts\": 1, \"type\": \"say\", \"say\": \"text\"", "not JSON"),
        ('{"ts": 1}', "not a list"),
        ('[{"ts": 1, "type": "say", "say": "checkpoint_created", "text": ""}]', "no conversation"),
        ("[1, 2, 3]", "no say/ask records"),
    ],
    ids=["cut-off", "object", "nothing-to-import", "numbers"],
)
def test_garbage_raises_a_transcript_error(tmp_path: Path, content: str, match: str) -> None:
    p = tmp_path / "ui_messages.json"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(TranscriptError, match=match):
        load(p, format="cline")


def test_a_bad_history_in_a_folder_raises(tmp_path: Path) -> None:
    (tmp_path / "api_conversation_history.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(TranscriptError, match="not JSON"):
        load(tmp_path)


# --- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc",
    [[{"role": "user", "content": "hi"}], [{"ts": 1, "type": "message"}], [{"type": "say", "say": "text"}], []],
    ids=["messages", "other-type", "no-ts", "empty"],
)
def test_other_json_lists_are_not_claimed(tmp_path: Path, doc: list[object]) -> None:
    p = tmp_path / "x.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    assert scores(read_file_head(p))["cline"] == 0


def test_the_api_history_file_stays_anthropic() -> None:
    assert scores(read_file_head(TASK / "api_conversation_history.json"))["cline"] == 0


SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md" and not p.name.startswith("cline"))


@pytest.mark.parametrize("path", SAMPLE_FILES + CORPUS_FILES, ids=[p.name for p in SAMPLE_FILES] + [corpus_id(p) for p in CORPUS_FILES])
def test_other_files_are_not_claimed(path: Path) -> None:
    assert scores(read_file_head(path))["cline"] == 0


# --- replay and export ----------------------------------------------------------------------


@pytest.mark.parametrize("path", [UI, TASK, ROO, SAMPLES / "cline-sample.ui_messages.json"], ids=["ui", "task", "roo", "sample"])
def test_replays_with_no_invalid_request(path: Path) -> None:
    t = load(path)
    report = lab.replay(t, "minicode", window=32000)
    assert report.requests > 0 and report.invalid_requests == 0
    body = to_anthropic(t.messages, t.tools)
    kept = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    assert {u.id for u in _uses(t)} <= kept


# --- texts written as numbers --------------------------------------------------------------------


def _numbered(value: object) -> object:
    """Every string ``text`` field holding only words made a number, as a mutated export has them."""
    if isinstance(value, list):
        return [_numbered(v) for v in value]
    if isinstance(value, dict):
        out = {k: _numbered(v) for k, v in value.items()}
        if isinstance(out.get("text"), str) and not out["text"].lstrip().startswith("{"):
            out["text"] = len(out["text"])
        return out
    return value


@pytest.mark.parametrize("name", [cline.UI_MESSAGES, cline.API_HISTORY])
def test_texts_written_as_numbers_are_read_as_text_and_counted(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "task"
    shutil.copytree(TASK, folder)
    if name == cline.UI_MESSAGES:
        (folder / cline.API_HISTORY).unlink()
    clean = load(folder)
    path = folder / name
    path.write_text(json.dumps(_numbered(json.loads(path.read_text(encoding="utf-8")))), encoding="utf-8")
    t = load(folder)
    assert len(t.messages) == len(clean.messages)
    assert [m.role for m in t.messages] == [m.role for m in clean.messages]
    counted = [w for w in t.notes.warnings if w.endswith("text field(s) held a number, read as its text")]
    assert len(counted) == 1 and int(counted[0].split()[0]) > 0


def test_texts_of_another_type_are_counted_in_a_warning(tmp_path: Path) -> None:
    records = json.loads(UI.read_text(encoding="utf-8"))
    for rec in records:
        if rec.get("say") == "text":
            rec["text"] = ["not", "a", "string"]
    p = tmp_path / cline.UI_MESSAGES
    p.write_text(json.dumps(records), encoding="utf-8")
    t = cline.read(p)
    assert any("have a text that is no string nor number" in w for w in t.notes.warnings)
