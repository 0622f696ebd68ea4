"""Continue importer: chat, tool calls (tool messages or tool call states), context items, thinking, compaction, errors, detection.

The fixtures (``fixtures/continue/``) follow continuedev/continue: ``core/index.d.ts``
(``Session``, ``ChatHistoryItem``, ``ChatMessage``, ``ToolCallState``, ``Usage``),
``core/util/history.ts`` (the session file and ``sessions.json``) and
``gui/src/redux/util/constructMessages.ts`` (what a request holds). One is a late-2025
agent session (``toolCallStates`` with outputs, parallel calls, a thinking message,
``reasoning``, usage), one an early-2025 session (one ``toolCallState``, the output in
a ``tool`` message), and ``sessions.json`` the index beside them. Older and ``cn``
shapes are built in the tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lab
from lab.cli.main import main
from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats.editors import continue_dev
from lab.formats import detect, load
from lab.formats.jsonio import read_file_head
from lab.replayer.recorded import apply_recorded
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id
from tests.formats.test_wrong_format import _forced_results

FIXTURES = Path(__file__).parent / "fixtures" / "continue"
AGENT = FIXTURES / "3f1c2e9a-7b5d-4e21-9c1a-0d8e6f4b2a17.json"
LEGACY = FIXTURES / "b7a0c6d2-1e4f-4a8b-9d3c-5f2e7a1b0c94.json"
INDEX = FIXTURES / "sessions.json"


def _shape(t: Transcript) -> list[tuple[str, str | None, list[str]]]:
    return [(m.role, m.tag, [b.type for b in m.content]) for m in t.messages]


def _item(role: str, content: Any = "", **kw: Any) -> dict[str, Any]:
    message = {"role": role, "content": content, **kw.pop("message", {})}
    return {"message": message, "contextItems": kw.pop("contextItems", []), **kw}


def _call(cid: str, name: str = "read_file", arguments: str = '{"filepath": "a.py"}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


def _session(tmp_path: Path, history: list[Any], name: str = "s1.json", **extra: Any) -> Path:
    p = tmp_path / name
    # Continue writes JSON.stringify(session): one line.
    p.write_text(json.dumps({"sessionId": "s1", "title": "t", "workspaceDirectory": "/w", "history": history, **extra}), encoding="utf-8")
    return p


def _results(t: Transcript) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}


def _uses(t: Transcript) -> dict[str, ToolUseBlock]:
    return {b.id: b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}


# --- a plain chat -------------------------------------------------------------------------------


def test_a_plain_chat_of_continue_0_8(tmp_path: Path) -> None:
    # 2024: string or part contents, prompt logs as [prompt, completion] pairs, no tools.
    history = [
        _item("user", "What does this regex match?"),
        _item("assistant", "Runs of digits.", promptLogs=[["<user>What does this regex match?", "Runs of digits."]]),
        _item("user", [{"type": "text", "text": "And with a plus?"}, {"type": "imageUrl", "imageUrl": {"url": "data:image/png;base64,AAAA"}}]),
        _item("assistant", [{"type": "text", "text": "One or more."}]),
    ]
    p = _session(tmp_path, history, title="Regex help")
    assert detect(p) == "continue"
    t = load(p)
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"]), ("user", None, ["text", "image"]), ("assistant", None, ["text"])]
    assert isinstance(t.messages[2].content[1], ImageBlock) and t.messages[2].content[1].media_type == "image/png"
    assert t.meta.source_format == "continue" and t.meta.session_id == "s1" and t.meta.title == "Regex help" and t.meta.cwd == "/w"
    assert t.meta.model is None and t.notes.skipped == {} and t.notes.warnings == []


def test_a_system_item_is_a_system_message_and_the_file_name_the_id(tmp_path: Path) -> None:
    p = tmp_path / "9e1d.json"
    p.write_text(json.dumps({"history": [_item("system", "Be terse."), _item("user", "hi"), _item("assistant", "hello")]}), encoding="utf-8")
    t = load(p)
    assert _shape(t) == [("system", None, ["text"]), ("user", None, ["text"]), ("assistant", None, ["text"])]
    assert t.meta.session_id == "9e1d" and t.meta.title == "Continue session"


# --- tool calls ------------------------------------------------------------------------------------


def test_tool_calls_answered_by_tool_messages() -> None:
    # Early 2025: the output is in the tool message Continue added after the call.
    t = load(LEGACY)
    assert detect(LEGACY) == "continue"
    assert _shape(t) == [("user", None, ["text", "text"]), ("assistant", None, ["tool_use"]), ("user", None, ["tool_result"]), ("assistant", None, ["text"])]
    use = _uses(t)["call_1"]
    assert use.name == "builtin_read_file" and use.input == {"filepath": "calc.py"}
    assert _results(t)["call_1"].content == "def add(a, b):\n    return a + b\n" and not _results(t)["call_1"].is_error
    # The tool item's own context items are its output again, not something a user attached.
    assert sum("def add" in b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)) == 1
    assert t.meta.model == "gpt-4o" and t.meta.cwd == "/home/dev/calc"
    assert t.notes.orphan_tool_results == [] and t.notes.unanswered_tool_uses == []


def test_tool_output_only_in_tool_call_states() -> None:
    # Late 2025: no tool messages; Continue renders each state's output into the tool message it sends.
    t = load(AGENT)
    assert _shape(t) == [
        ("user", None, ["text", "text"]),
        ("assistant", None, ["thinking", "text", "tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["tool_use", "tool_use"]),
        ("user", None, ["tool_result", "tool_result"]),
        ("assistant", None, ["thinking", "text", "tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["text"]),
        ("user", None, ["text"]),
        ("assistant", None, ["tool_use"]),
    ]
    results = _results(t)
    # A terminal command's output items carry their status, as renderContextItemsWithStatus writes it.
    assert results["toolu_01"].content == "F\n1 failed in 0.02s\n[Status: Command completed]"
    assert results["toolu_02"].content.startswith("def test_slugify") and not results["toolu_02"].is_error
    assert results["toolu_03"].content == "The user cancelled this tool call." and results["toolu_03"].is_error
    assert results["toolu_04"].content == "EACCES: src/slugify.py is read-only" and results["toolu_04"].is_error
    assert _uses(t)["toolu_01"].input == {"command": "pytest -q", "waitForCompletion": True}
    pairs = tool_pairs(t.messages)
    assert all(u is not None and (r is None or r == u + 1) for u, r in pairs.values())


def test_a_call_the_session_ends_on_stays_unanswered_with_a_warning() -> None:
    t = load(AGENT)
    assert t.notes.unanswered_tool_uses == ["toolu_05"] and "toolu_05" not in _results(t)
    assert any("toolu_05" in w and "unanswered" in w and "generated" in w for w in t.notes.warnings)


def test_a_call_that_never_ran_mid_session_is_answered_as_continue_sends_it(tmp_path: Path) -> None:
    state = {"toolCallId": "c1", "toolCall": _call("c1"), "status": "calling"}
    history = [
        _item("user", "go"),
        _item("assistant", "", message={"toolCalls": [_call("c1"), _call("c2")]}, toolCallStates=[state]),
        _item("user", "never mind"),
        _item("assistant", "ok"),
    ]
    t = load(_session(tmp_path, history))
    results = _results(t)
    assert results["c1"].content == results["c2"].content == "No tool output"
    assert _shape(t)[2] == ("user", None, ["tool_result", "tool_result", "text"])
    assert sum("answered 'No tool output'" in w for w in t.notes.warnings) == 2 and t.notes.unanswered_tool_uses == []


def test_a_state_whose_message_lost_its_tool_calls_still_gives_the_call(tmp_path: Path) -> None:
    # constructMessages sends a tool message for every state, so the call is one too.
    state = {"toolCallId": "c9", "toolCall": _call("c9", "ls", "{}"), "status": "done", "output": [{"name": "ls", "description": "", "content": "a.py"}]}
    t = load(_session(tmp_path, [_item("user", "list"), _item("assistant", "Listing.", toolCallStates=[state]), _item("assistant", "One file.")]))
    assert _uses(t)["c9"].name == "ls" and _results(t)["c9"].content == "a.py"


def test_a_bad_arguments_string_is_kept_raw_with_a_warning(tmp_path: Path) -> None:
    call = _call("c1", "edit_existing_file", '{"filepath": "a.py", "changes": "x = ')
    state = {"toolCallId": "c1", "toolCall": call, "status": "errored"}
    t = load(_session(tmp_path, [_item("user", "edit"), _item("assistant", "", message={"toolCalls": [call]}, toolCallStates=[state]), _item("assistant", "Failed.")]))
    use = _uses(t)["c1"]
    assert use.name == "edit_existing_file" and use.input == {"_raw": '{"filepath": "a.py", "changes": "x = '}
    assert any("$.history[1].message.toolCalls[0].function.arguments" in w and "not valid JSON" in w for w in t.notes.warnings)
    assert _results(t)["c1"].content == "There was an error calling the tool." and _results(t)["c1"].is_error


def test_a_tool_message_of_no_known_call_is_counted_not_kept(tmp_path: Path) -> None:
    history = [_item("user", "hi"), _item("tool", "stray", message={"toolCallId": "ghost"}), _item("assistant", "hello")]
    t = load(_session(tmp_path, history))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"])]
    assert t.notes.skipped == {"message:tool (unknown call)": 1} and t.notes.orphan_tool_results == ["ghost"]


# --- context items -------------------------------------------------------------------------------


def test_context_items_are_the_text_sent_before_the_user_s_words() -> None:
    first = load(AGENT).messages[0]
    texts = [b.text for b in first.content if isinstance(b, TextBlock)]
    # constructMessages: one "<content>\n" text part per item, ahead of what the user typed.
    assert texts == ["```python src/slugify.py\ndef slugify(s):\n    return s.lower()\n```\n", "Why does test_slugify fail? Fix it."]


def test_blank_context_items_are_not_sent(tmp_path: Path) -> None:
    items = [{"name": "empty", "description": "", "content": "  \n"}, {"name": "f", "description": "f.py", "content": "x = 1"}]
    t = load(_session(tmp_path, [_item("user", "look", contextItems=items), _item("assistant", "ok")]))
    assert [b.text for b in t.messages[0].content if isinstance(b, TextBlock)] == ["x = 1\n", "look"]


def test_a_cn_session_sends_context_as_cn_does(tmp_path: Path) -> None:
    # cn copies a user message's content into editorState, and wraps each context item (messageConversion.ts).
    items = [{"name": "notes.md", "description": "notes.md", "content": "remember X"}]
    state = {"toolCallId": "c1", "toolCall": _call("c1"), "status": "done", "output": [{"name": "a", "description": "", "content": "one"}, {"name": "b", "description": "", "content": "two"}]}
    history = [
        {"message": {"role": "user", "content": "summarize"}, "contextItems": items, "editorState": "summarize"},
        _item("assistant", "", message={"toolCalls": [_call("c1"), _call("c2")]}, toolCallStates=[state]),
        _item("assistant", "Done."),
    ]
    t = load(_session(tmp_path, history))
    assert [b.text for b in t.messages[0].content if isinstance(b, TextBlock)] == ['<context name="notes.md">\nremember X\n</context>\n\n', "summarize"]
    assert _results(t)["c1"].content == "one\ntwo" and _results(t)["c2"].content == "Tool cancelled"


# --- thinking and reasoning -------------------------------------------------------------------------


def test_a_thinking_message_and_reasoning_are_thinking_blocks_of_their_turn() -> None:
    t = load(AGENT)
    first, second = t.messages[1], t.messages[5]
    thinking = first.content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.thinking.startswith("The test probably") and thinking.signature == "sig-1"
    reasoning = second.content[0]
    assert isinstance(reasoning, ThinkingBlock) and reasoning.thinking == "Replace runs of whitespace with a hyphen." and reasoning.signature is None
    assert second.timestamp is not None and second.timestamp.year == 2026


def test_redacted_and_empty_thinking_send_nothing_and_are_counted(tmp_path: Path) -> None:
    history = [_item("user", "q"), _item("thinking", "", message={"redactedThinking": "EqQB..."}), _item("thinking", ""), _item("assistant", "a")]
    t = load(_session(tmp_path, history))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"])]
    assert t.notes.skipped == {"thinking:redacted": 1, "message:thinking (empty)": 1}


# --- unknown content --------------------------------------------------------------------------------


def test_an_unknown_role_is_skipped_and_counted(tmp_path: Path) -> None:
    history = [_item("user", "hi"), _item("critic", "looks wrong"), _item("assistant", "hello"), "not an item"]
    t = load(_session(tmp_path, history))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"])]
    assert t.notes.skipped == {"role:critic (unknown role)": 1, "item:non_object": 1}
    assert not any("looks wrong" in b.text for m in t.messages for b in m.content if isinstance(b, TextBlock))


def test_an_unknown_part_is_skipped_and_counted() -> None:
    t = load(AGENT)
    assert t.notes.skipped == {"part:hologram (unknown type)": 1}
    assert t.notes.records_read == 9  # eight items, one more part


# --- usage and meta ----------------------------------------------------------------------------


def test_usage_keeps_cache_reads_apart_as_continue_s_adapters_count_them(tmp_path: Path) -> None:
    # The fixture's usage is the Anthropic adapter's: promptTokens without the cache, cacheWriteTokens beside it.
    assert [m.usage for m in load(AGENT).messages if m.usage] == [
        Usage(input_tokens=2400, output_tokens=90, cache_read_tokens=2000, cache_write_tokens=300),
        Usage(input_tokens=40, output_tokens=60, cache_read_tokens=2300, cache_write_tokens=200),
    ]
    # OpenAI's prompt count holds its cached tokens.
    usage = {"promptTokens": 1000, "completionTokens": 20, "promptTokensDetails": {"cachedTokens": 800}}
    t = load(_session(tmp_path, [_item("user", "q"), _item("assistant", "a", message={"usage": usage})]))
    assert t.messages[1].usage == Usage(input_tokens=200, output_tokens=20, cache_read_tokens=800)


def test_session_usage_is_a_warning_and_the_model_its_chat_model() -> None:
    t = load(AGENT)
    assert any("whole session" in w and "promptTokens 5040" in w and "$0.0123" in w for w in t.notes.warnings)
    assert t.meta.model == "Claude Sonnet 4.5" and t.meta.session_id == "3f1c2e9a-7b5d-4e21-9c1a-0d8e6f4b2a17"


@pytest.mark.parametrize(
    ("workspace", "cwd"),
    [
        pytest.param("file:///home/dev/slug%20tools", "/home/dev/slug tools", id="file-uri"),
        pytest.param("file:///c%3A/Users/dev/app", "c:/Users/dev/app", id="windows-uri"),
        pytest.param("/home/dev/app", "/home/dev/app", id="path"),
        pytest.param("vscode-remote://ssh-remote%2Bbox/home/dev", None, id="remote"),
        pytest.param("", None, id="empty"),
    ],
)
def test_the_workspace_is_the_cwd_when_it_is_a_local_path(tmp_path: Path, workspace: str, cwd: str | None) -> None:
    t = load(_session(tmp_path, [_item("user", "q"), _item("assistant", "a")], workspaceDirectory=workspace))
    assert t.meta.cwd == cwd


# --- compaction ---------------------------------------------------------------------------------


def test_a_conversation_summary_is_a_boundary_and_a_summary_a_replay_undoes(tmp_path: Path) -> None:
    history = [
        _item("user", "step one"),
        _item("assistant", "did one", conversationSummary="We did step one."),
        _item("user", "step two"),
        _item("assistant", "did two"),
    ]
    t = load(_session(tmp_path, history))
    assert _shape(t) == [
        ("user", None, ["text"]),
        ("assistant", None, ["text"]),
        ("system", "boundary", ["text"]),
        ("user", "summary", ["text"]),
        ("user", None, ["text"]),
        ("assistant", None, ["text"]),
    ]
    marker = t.messages[2].boundary
    assert marker is not None and marker.strategy == continue_dev.STRATEGY and marker.messages_removed == 2
    summary = t.messages[3].content[0]
    assert isinstance(summary, TextBlock) and summary.text == "Previous conversation summary:\n\n We did step one."
    undone, found, _ = apply_recorded(t, "undo")
    assert len(found) == 1 and found[0].action == "undone" and len(undone.messages) == 4


def test_cn_s_compacted_history_message_is_tagged_after_a_marker(tmp_path: Path) -> None:
    history = [_item("assistant", "[COMPACTED HISTORY]\nWe fixed the parser."), _item("user", "next?"), _item("assistant", "tests")]
    t = load(_session(tmp_path, history))
    assert _shape(t)[:2] == [("system", "boundary", ["text"]), ("assistant", "summary", ["text"])]
    assert t.messages[0].boundary is not None and t.messages[0].boundary.strategy == continue_dev.CLI_STRATEGY


# --- other documents and errors ---------------------------------------------------------------


def test_the_sessions_index_is_a_clear_error() -> None:
    assert detect(INDEX) == "continue"
    with pytest.raises(TranscriptError) as err:
        load(INDEX)
    assert "session index" in err.value.reason and "3f1c2e9a-7b5d-4e21-9c1a-0d8e6f4b2a17.json" in str(err.value)


def test_a_cn_serve_state_snapshot_holds_a_session(tmp_path: Path) -> None:
    p = tmp_path / "state.json"
    session = json.loads(LEGACY.read_text(encoding="utf-8"))
    p.write_text(json.dumps({"session": session, "isProcessing": False, "messageQueueLength": 0, "pendingPermission": None}), encoding="utf-8")
    assert detect(p) == "continue" and _shape(load(p)) == _shape(load(LEGACY))


def test_a_new_empty_session_is_detected_and_refused_clearly(tmp_path: Path) -> None:
    p = _session(tmp_path, [], title="New Session")
    assert detect(p) == "continue"
    with pytest.raises(TranscriptError, match="no Continue history items"):
        load(p)


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        pytest.param({"sessionId": "s", "title": "New Session", "workspaceDirectory": "/w", "history": []}, "no Continue history items", id="empty-history"),
        pytest.param({"sessionId": "s", "history": [_item("user", "")]}, "none that was sent", id="nothing-sent"),
        pytest.param({"history": {"timeline": [], "current_index": 0}, "session_info": {"session_id": "x"}}, "before 0.8", id="python-server"),
        pytest.param({"history": [{"role": "user", "content": "hi"}]}, "no Continue history items", id="chat-messages"),
    ],
)
def test_degenerate_documents_are_refused_clearly(tmp_path: Path, doc: Any, words: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        load(p, format="continue")
    assert words in err.value.reason and "could not import as" not in str(err.value)


# --- detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [AGENT, LEGACY], ids=["agent", "legacy"])
def test_detection_picks_continue_and_other_formats_refuse_it(path: Path) -> None:
    assert detect(path) == "continue" and continue_dev.sniff(read_file_head(path)) == 96
    assert _forced_results(path) == []


def test_a_session_too_large_to_probe_is_known_by_its_head(tmp_path: Path) -> None:
    big = [_item("user", "x" * 2000), _item("assistant", "y" * 2000)] * 2500
    p = _session(tmp_path, big)
    probe = read_file_head(p)
    assert probe.document is None and continue_dev.sniff(probe) == 85 and detect(p) == "continue"


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert continue_dev.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert continue_dev.sniff(read_file_head(path)) == 0


def test_a_swe_agent_history_is_not_claimed(tmp_path: Path) -> None:
    # SWE-agent trajectories hold a "history" too, of bare chat messages.
    p = tmp_path / "run.traj"
    p.write_text(json.dumps({"history": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "info": {}}), encoding="utf-8")
    assert continue_dev.sniff(read_file_head(p)) == 0


# --- replay and export -------------------------------------------------------------------------


@pytest.mark.parametrize("path", [AGENT, LEGACY], ids=["agent", "legacy"])
def test_an_imported_session_replays(path: Path) -> None:
    result = lab.replay(load(path), "lab", window=32000)
    assert result.rows and result.invalid_requests == 0


def test_exports_with_every_pair(tmp_path: Path) -> None:
    out = tmp_path / "request.json"
    assert main(["export", str(LEGACY), "--to", "openai", "--out", str(out)]) == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
    assert calls == answered and len(calls) == 1
