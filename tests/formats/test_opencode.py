"""OpenCode importer: export documents and message lists, steps and usage, tool states, compaction, errors, detection.

The fixtures (``fixtures/opencode/``: one hand-written session as an ``opencode
export`` document and as the messages API's bare list) follow the shapes in
sst/opencode's ``packages/opencode/src/session/message-v2.ts`` (``{info,
parts}``; text, reasoning, file, tool with pending/running/completed/error
states, step-start/step-finish with tokens and cost, patch, compaction parts;
the assistant's ``summary``, ``error``, ``providerID``/``modelID``) and
``src/cli/cmd/export.ts`` (``{info, messages, todos}``).
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
from lab.formats.databases import opencode
from lab.formats.export import to_anthropic
from lab.formats.jsonio import read_file_head
from lab.replayer.recorded import apply_recorded
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id
from tests.formats.test_wrong_format import _forced_results

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
EXPORT = FIXTURES / "session.export.json"
LIST = FIXTURES / "session.messages.json"
DOC: dict[str, Any] = json.loads(EXPORT.read_text(encoding="utf-8"))
SHAPE = [
    ("user", None, ["text", "text"]),
    ("assistant", None, ["thinking", "text", "tool_use", "tool_use"]),
    ("user", None, ["tool_result", "tool_result"]),
    ("assistant", None, ["tool_use"]),
    ("user", None, ["tool_result"]),
    ("assistant", None, ["text"]),
    ("user", None, ["text"]),
    ("assistant", None, ["tool_use", "tool_use"]),
    ("user", None, ["tool_result", "tool_result"]),
    ("system", "boundary", ["text"]),
    ("user", "summary", ["text"]),
    ("assistant", "summary", ["text"]),
    ("user", "summary", ["text"]),
    ("assistant", None, ["tool_use"]),
    ("user", None, ["tool_result"]),
    ("assistant", None, ["tool_use"]),
]


def _shape(t: Transcript) -> list[tuple[str, str | None, list[str]]]:
    return [(m.role, m.tag, [b.type for b in m.content]) for m in t.messages]


def _write(tmp_path: Path, doc: Any, name: str = "session.json", indent: int | None = None) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
    return p


def _msg(mid: str, role: str, parts: list[dict[str, Any]], **info: Any) -> dict[str, Any]:
    return {"info": {"id": mid, "sessionID": "ses_x", "role": role, "time": {"created": 1767261600000}, **info}, "parts": parts}


def _text(text: str, **kw: Any) -> dict[str, Any]:
    return {"id": "prt", "type": "text", "text": text, **kw}


# --- sources ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [EXPORT, LIST], ids=["export", "list"])
def test_export_and_message_list_give_the_same_history(path: Path) -> None:
    t = load(path)
    assert detect(path) == "opencode" and t.meta.source_format == "opencode"
    assert _shape(t) == SHAPE
    assert t.meta.model == "anthropic/claude-sonnet-4-5" and t.meta.cwd == "/home/dev/calc"
    assert t.meta.session_id == "ses_7f3a1c2e9ffe1Qk2mZ"


def test_session_info_gives_the_title() -> None:
    assert load(EXPORT).meta.title == "Fix add() in calc.py"
    assert load(LIST).meta.title == "OpenCode session"


# --- mapping ----------------------------------------------------------------------------------------


def test_tool_parts_become_pairs_with_their_state() -> None:
    t = load(EXPORT)
    pairs = tool_pairs(t.messages)
    assert set(pairs) == {f"toolu_0{i}" for i in range(1, 8)}
    # Every call but the last one (pending when the session stopped) is answered right after its turn.
    assert all(r == u + 1 for k, (u, r) in pairs.items() if k != "toolu_07" and u is not None and r is not None)
    assert pairs["toolu_07"][1] is None and t.notes.unanswered_tool_uses == ["toolu_07"]
    results = {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
    assert results["toolu_01"].content == "F.\n1 failed, 1 passed" and not results["toolu_01"].is_error
    assert results["toolu_02"].is_error and "File not found" in results["toolu_02"].content
    # A call still running when the conversation moved on is answered as OpenCode answers it.
    assert results["toolu_05"].is_error and results["toolu_05"].content == "[Tool execution was interrupted]"
    uses = {b.id: b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}
    assert uses["toolu_03"].name == "edit" and uses["toolu_03"].input["newString"] == "return a + b"
    assert any("toolu_05" in w and "never finished" in w for w in t.notes.warnings)
    assert any("pruned by OpenCode" in w for w in t.notes.warnings)


def test_each_step_is_one_request_with_its_usage() -> None:
    t = load(EXPORT)
    usages = [m.usage for m in t.messages if m.role == "assistant"]
    assert usages[:4] == [
        Usage(input_tokens=1800, output_tokens=110, cache_write_tokens=1500, cost_usd=0.01),  # reasoning billed as output
        Usage(input_tokens=250, output_tokens=40, cache_read_tokens=1800, cost_usd=0.002),
        Usage(input_tokens=120, output_tokens=30, cache_read_tokens=2050, cost_usd=0.001),
        Usage(input_tokens=300, output_tokens=80, cache_read_tokens=2200, cost_usd=0.003),
    ]
    # The last step never finished: it has no usage of its own, not a copy of the step before.
    assert usages[-1] is None


def test_reasoning_keeps_its_signature_and_synthetic_text_is_sent() -> None:
    t = load(EXPORT)
    thinking = t.messages[1].content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.signature == "sig-abc"
    first = [b.text for b in t.messages[0].content if isinstance(b, TextBlock)]
    assert first[0].startswith("The tests for add() fail") and "def add(a, b)" in first[1]


def test_unknown_and_bookkeeping_parts_are_counted_never_content() -> None:
    t = load(EXPORT)
    s = t.notes.skipped
    assert s["part:hologram (unknown type)"] == 1 and s["part:patch"] == 1 and s["part:file (sent as text)"] == 1
    assert t.notes.records_read == sum(len(m["parts"]) for m in DOC["messages"])
    texts = [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]
    assert not any("hologram" in x or "9f1e2d" in x for x in texts)


def test_a_failed_request_is_skipped_and_warned_about() -> None:
    t = load(EXPORT)
    assert t.notes.skipped["message:assistant (APIError)"] == 1
    assert any("msg_05" in w and "APIError" in w for w in t.notes.warnings)
    assert all(not m.id.startswith("msg_05") for m in t.messages)


def test_the_compaction_is_a_boundary_a_replay_undoes() -> None:
    t = load(EXPORT)
    marker = t.messages[9]
    assert marker.boundary is not None and marker.boundary.trigger == "auto" and marker.boundary.strategy == opencode.STRATEGY
    assert t.messages[10].content == (TextBlock(text="What did we do so far?"),)
    assert "sub() itself is still missing" in t.messages[11].content[0].text  # type: ignore[union-attr]
    undone, found, _ = apply_recorded(t, "undo")
    assert len(found) == 1 and found[0].written == 3 and found[0].action == "undone"
    assert [m.tag for m in undone.messages].count("summary") == 0 and len(undone.messages) == len(t.messages) - 4


def test_a_summary_without_a_compaction_prompt_gets_its_marker(tmp_path: Path) -> None:
    msgs = [
        _msg("m1", "user", [_text("hi")]),
        _msg("m2", "assistant", [_text("hello")], modelID="gpt-5", providerID="openai"),
        _msg("m3", "assistant", [_text("Summary: greeted.")], summary=True, modelID="gpt-5", providerID="openai"),
        _msg("m4", "user", [_text("go on")]),
        _msg("m5", "assistant", [_text("ok")], modelID="gpt-5", providerID="openai"),
    ]
    t = load(_write(tmp_path, msgs))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"]), ("system", "boundary", ["text"]),
                         ("assistant", "summary", ["text"]), ("user", None, ["text"]), ("assistant", None, ["text"])]
    assert t.messages[2].boundary is not None and t.messages[2].boundary.trigger == "manual"


def test_user_files_and_ignored_text(tmp_path: Path) -> None:
    parts = [
        _text("look at this"),
        _text("draft I deleted", ignored=True),
        {"id": "p2", "type": "file", "mime": "image/png", "filename": "shot.png", "url": "data:image/png;base64,iVBORw0KGgo="},
        {"id": "p3", "type": "file", "mime": "application/pdf", "filename": "spec.pdf", "url": "file:///tmp/spec.pdf"},
    ]
    t = load(_write(tmp_path, [_msg("m1", "user", parts), _msg("m2", "assistant", [_text("seen")], modelID="m")]))
    assert [b.type for b in t.messages[0].content] == ["text", "image", "text"]
    assert t.messages[0].content[2] == TextBlock(text="[Attached application/pdf: spec.pdf]")
    assert t.notes.skipped["part:text (ignored)"] == 1


# --- errors and detection -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        pytest.param('{"info": {"id": "ses_x"}, "messages": []}', id="no-messages"),
        pytest.param('{"info": {"id": "ses_x"}, "messages": [{"info": {"role": "user"}, "parts": []}]}', id="nothing-sent"),
        pytest.param('{"info": {"id": "ses_x"}, "messages": [{"role": "user", "content": "hi"}]}', id="chat-messages"),
        pytest.param('{"info": {"id": "ses_x"}, "messages": [{"info": {"role": "assistant"}, "parts": [{"type": "text", "text": "hi"}]}]}', id="assistant-only"),
        pytest.param('{"messages": 3}', id="not-a-list"),
        pytest.param("[1, 2, 3]", id="numbers"),
    ],
)
def test_degenerate_files_are_refused_clearly(tmp_path: Path, content: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        load(p, format="opencode")
    assert err.value.reason and "could not import as" not in str(err.value)


def test_a_large_export_is_detected_from_its_head(tmp_path: Path) -> None:
    filler = [_msg(f"m{i}", "user", [{"id": f"p{i}", "sessionID": "ses_x", "messageID": f"m{i}", "type": "text", "text": "x" * 3000}]) for i in range(400)]
    # Pretty-printed, as ``opencode export`` writes it: too large to parse whole for detection.
    p = _write(tmp_path, {"info": {"id": "ses_x"}, "messages": [*DOC["messages"], *filler]}, indent=2)
    assert p.stat().st_size > 1024 * 1024
    assert opencode.sniff(read_file_head(p)) == 85 and detect(p) == "opencode"


# Forced on the bare list, the Gemini reader meets {info, parts} items without a role: not Gemini Content.
@pytest.mark.parametrize("path", [EXPORT, LIST], ids=["export", "list"])
def test_every_other_format_forced_on_the_fixture_fails_clearly(path: Path) -> None:
    assert _forced_results(path) == []


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert opencode.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert opencode.sniff(read_file_head(path)) == 0


# --- round trip -------------------------------------------------------------------------------------


def test_replays_and_exports_with_every_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = load(EXPORT)
    result = lab.replay(t, "minicode", window=32000)
    assert result.invalid_requests == 0 and result.rows
    out = tmp_path / "request.json"
    assert main(["export", str(EXPORT), "--to", "anthropic", "--out", str(out), "--close-pending"]) == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    uses = {b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"}
    results = {b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"}
    assert uses == results == set(tool_pairs(t.messages))
    assert "toolu_07" in capsys.readouterr().out  # the note naming the call --close-pending answered
    assert to_anthropic(t)["messages"]


# --- invariant --------------------------------------------------------------------------------------

_STATUS = st.sampled_from(["completed", "error", "pending", "running"])


@settings(max_examples=40, deadline=None)
@given(turns=st.lists(st.lists(st.lists(_STATUS, max_size=3), min_size=1, max_size=3), min_size=1, max_size=4))
def test_every_call_is_answered_right_after_its_turn_but_the_last(tmp_path_factory: pytest.TempPathFactory, turns: list[list[list[str]]]) -> None:
    msgs: list[dict[str, Any]] = []
    n = 0
    for t, steps in enumerate(turns):
        msgs.append(_msg(f"u{t}", "user", [_text(f"task {t}")]))
        parts: list[dict[str, Any]] = []
        for statuses in steps:
            parts += [{"id": "s", "type": "step-start"}, _text("working")]
            for status in statuses:
                n += 1
                state = {"status": status, "input": {"i": n}, "output": "ok", "error": "boom", "time": {"start": 1, "end": 2}}
                parts.append({"id": f"p{n}", "type": "tool", "callID": f"c{n}", "tool": "bash", "state": state})
        msgs.append(_msg(f"a{t}", "assistant", parts, modelID="m"))
    t = load(_write(tmp_path_factory.mktemp("oc"), msgs))
    last = max(i for i, m in enumerate(t.messages) if m.role == "assistant")
    for use, result in tool_pairs(t.messages).values():
        assert use is not None
        # Only the session's last step may hold a call without a result (export --close-pending answers it).
        assert result == use + 1 or (result is None and use == last)
    assert t.notes.orphan_tool_results == []
    assert [m.role for m in t.messages if m.role != "system"][0] == "user"
