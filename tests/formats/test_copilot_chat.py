"""GitHub Copilot Chat (VS Code) importer: the flat JSON and the mutation log, rounds and results, fallbacks, errors, detection.

The fixtures (``fixtures/copilot_chat/``) follow microsoft/vscode's
``chat/common/chatModel.ts`` (``ISerializableChatData``, version 3),
``model/objectMutationLog.ts`` and ``model/chatSessionOperationLog.ts`` (the ``.jsonl``
log: entry kinds and the schema it writes), and microsoft/vscode-copilot-chat's
``prompt/common/intents.ts`` / ``toolCallRound.ts`` (``toolCallRounds``,
``toolCallResults``, thinking, usage). One is an ask-mode chat as VS Code wrote it
before 1.109 (a request without rounds, one with them and its rendered user message),
one an agent-mode session as a mutation log (rounds with parallel calls, a prompt-tsx
result, edits, thinking, a cancelled request whose call has no result, a failed request).
Other shapes are built in the tests.
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
from lab.formats.editors import copilot_chat
from lab.formats import detect, load
from lab.formats.jsonio import read_file_head
from lab.replayer.recorded import apply_recorded
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id
from tests.formats.test_wrong_format import _forced_results

FIXTURES = Path(__file__).parent / "fixtures" / "copilot_chat"
CHAT = FIXTURES / "4e8a1c2b-9d3f-4b6e-a7c5-2f1e0d9c8b7a.json"
AGENT = FIXTURES / "9f2d7c1e-3b4a-4c5d-8e6f-1a2b3c4d5e6f.jsonl"


def _shape(t: Transcript) -> list[tuple[str, str | None, list[str]]]:
    return [(m.role, m.tag, [b.type for b in m.content]) for m in t.messages]


def _results(t: Transcript) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}


def _uses(t: Transcript) -> dict[str, ToolUseBlock]:
    return {b.id: b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}


def _texts(t: Transcript) -> list[str]:
    return [b.text for m in t.messages for b in m.content if isinstance(b, TextBlock)]


def _req(rid: str, text: str = "hi", *, response: Any = None, rounds: list[Any] | None = None, results: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    meta: dict[str, Any] = kw.pop("metadata", {})
    if rounds is not None:
        meta = {**meta, "toolCallRounds": rounds, "toolCallResults": results or {}}
    return {"requestId": rid, "message": {"text": text, "parts": []}, "variableData": {"variables": []},
            "response": response if response is not None else [], "result": {"metadata": meta}, **kw}  # fmt: skip


def _round(rid: str, response: str = "", calls: list[Any] | None = None, **kw: Any) -> dict[str, Any]:
    return {"id": rid, "response": response, "toolCalls": calls or [], "toolInputRetry": 0, **kw}


def _call(cid: str, name: str = "read_file", arguments: str = '{"filePath": "/w/a.py"}') -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments": arguments}


def _text_result(text: str) -> dict[str, Any]:
    return {"$mid": 20, "content": [{"$mid": 21, "value": text}]}


def _session(tmp_path: Path, requests: list[Any], name: str = "s1.json", **extra: Any) -> Path:
    p = tmp_path / name
    doc = {"version": 3, "requesterUsername": "me", "responderUsername": "GitHub Copilot", "sessionId": "s1", "initialLocation": "panel", "requests": requests, **extra}
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def _log(tmp_path: Path, entries: list[Any], name: str = "s1.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return p


_INITIAL = {"kind": 0, "v": {"version": 3, "creationDate": 1, "responderUsername": "GitHub Copilot", "sessionId": "s1", "requests": []}}


# --- a plain chat -------------------------------------------------------------------------------


def test_a_plain_chat_as_vs_code_wrote_it_before_the_log() -> None:
    t = load(CHAT)
    assert detect(CHAT) == "copilot_chat" and t.meta.source_format == "copilot_chat"
    assert _shape(t) == [("user", None, ["text", "text"]), ("assistant", None, ["text"]), ("user", None, ["text"]), ("assistant", None, ["text"])]
    assert t.meta.session_id == "4e8a1c2b-9d3f-4b6e-a7c5-2f1e0d9c8b7a" and t.meta.title == "Price regex"
    assert t.meta.model == "copilot/gpt-4.1" and t.meta.cwd is None
    assert t.messages[0].timestamp is not None and t.messages[0].timestamp.isoformat() == "2026-01-01T10:00:00+00:00"


def test_attached_content_goes_before_the_words_and_a_bare_file_reference_adds_nothing() -> None:
    first = load(CHAT).messages[0]
    texts = [b.text for b in first.content if isinstance(b, TextBlock)]
    # The pasted snippet has its text in the file; the viewport variable only names prices.py.
    assert texts == ['PRICE_RE = re.compile(r"^\\$(\\d+)\\.(\\d{2})$")', "What does this regex match?"]
    assert not any("attached" in x or "prices.py" in x for x in texts)


def test_a_response_without_rounds_is_its_rendered_markdown() -> None:
    reply = load(CHAT).messages[1].content[0]
    assert isinstance(reply, TextBlock)
    assert reply.text.startswith("It matches a dollar price") and "defined in `prices.py`." in reply.text and reply.text.endswith("two cents at the end")


def test_the_rendered_user_message_is_what_was_sent() -> None:
    second = load(CHAT).messages[2].content
    assert len(second) == 1 and isinstance(second[0], TextBlock)
    assert second[0].text.startswith("<context>") and "<userRequest>\nAnd how do I allow a missing cents part?" in second[0].text


def test_an_old_session_with_string_message_and_response(tmp_path: Path) -> None:
    p = _session(tmp_path, [{"requestId": "r1", "message": "explain this", "response": "It adds two numbers.", "variableData": {"variables": []}}], version=1)
    t = load(p)
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"])] and _texts(t) == ["explain this", "It adds two numbers."]
    # No sessionId in the file: the file name is the id.
    assert load(_session(tmp_path, [_req("r1", response=["ok"])], name="abc.json", sessionId=None)).meta.session_id == "abc"


# --- an agent-mode session (the mutation log) ---------------------------------------------------------


def test_the_mutation_log_is_replayed_into_the_session() -> None:
    t = load(AGENT)
    assert detect(AGENT) == "copilot_chat"
    assert _shape(t) == [
        ("user", None, ["text"]),
        ("assistant", None, ["thinking", "text", "tool_use", "tool_use"]),
        ("user", None, ["tool_result", "tool_result"]),
        ("assistant", None, ["text", "tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["text"]),
        ("user", None, ["text"]),
        ("assistant", None, ["text", "tool_use"]),
        ("user", None, ["text"]),
    ]
    # The title came in a later set entry, the first model from the first request.
    assert t.meta.title == "Fix cart total quantity" and t.meta.model == "copilot/claude-sonnet-4.5"
    assert t.meta.session_id == "9f2d7c1e-3b4a-4c5d-8e6f-1a2b3c4d5e6f"
    assert any("models used" in w and "copilot/gpt-5" in w for w in t.notes.warnings)


def test_rounds_give_the_calls_the_model_made_and_results_from_metadata() -> None:
    t = load(AGENT)
    uses = _uses(t)
    assert list(uses) == [
        "toolu_vrtx_01ReadCart",
        "toolu_vrtx_01GrepTotal",
        "toolu_vrtx_01EditCart",
        "toolu_vrtx_01RunTests",
    ]
    read = uses["toolu_vrtx_01ReadCart"]
    assert read.name == "read_file" and read.input == {"filePath": "/home/dev/shop/cart.py", "startLine": 1, "endLine": 2}
    results = _results(t)
    assert results["toolu_vrtx_01ReadCart"].content.startswith("File: `/home/dev/shop/cart.py`")
    # A prompt-tsx result is the text of its leaves, in order.
    edit = results["toolu_vrtx_01EditCart"].content
    assert edit == "The following files were successfully edited:\n/home/dev/shop/cart.py\n"
    assert results["toolu_vrtx_01GrepTotal"].content.startswith("2 matches\n<match path=")
    pairs = tool_pairs(t.messages)
    assert all(u is not None and r == u + 1 for cid, (u, r) in pairs.items() if cid != "toolu_vrtx_01RunTests")


def test_a_call_without_a_stored_result_stays_unanswered_with_a_warning() -> None:
    t = load(AGENT)
    assert t.notes.unanswered_tool_uses == ["toolu_vrtx_01RunTests"]
    assert any("RunTests" in w and "no stored result" in w for w in t.notes.warnings)
    assert "toolu_vrtx_01RunTests" not in _results(t)


def test_call_ids_are_the_ones_the_model_saw(tmp_path: Path) -> None:
    # Copilot suffixes "__vscode-<n>" to every id, as some models reuse ids, and strips it before sending.
    rounds = [_round("a", "", [_call("call_1__vscode-7"), _call("call_1__vscode-8")]), _round("b", "done")]
    t = load(_session(tmp_path, [_req("r1", rounds=rounds, results={"call_1__vscode-7": _text_result("one"), "call_1__vscode-8": _text_result("two")})]))
    assert list(_uses(t)) == ["call_1", "call_1__vscode-8"]
    assert {k: v.content for k, v in _results(t).items()} == {"call_1": "one", "call_1__vscode-8": "two"} and not t.notes.warnings


def test_a_missing_result_mid_request_is_warned_and_the_next_round_goes_on(tmp_path: Path) -> None:
    rounds = [_round("a", "reading", [_call("c1"), _call("c2")]), _round("b", "done")]
    t = load(_session(tmp_path, [_req("r1", rounds=rounds, results={"c1": _text_result("x = 1")})]), format="copilot_chat")
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text", "tool_use", "tool_use"]), ("user", None, ["tool_result"]), ("assistant", None, ["text"])]
    assert t.notes.unanswered_tool_uses == ["c2"] and any("'c2'" in w for w in t.notes.warnings)


def test_thinking_of_a_round_is_a_thinking_block() -> None:
    thinking = load(AGENT).messages[1].content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.thinking == "The user wants quantity taken into account."


def test_rendered_thinking_of_rounds_without_it_is_counted(tmp_path: Path) -> None:
    req = _req("r1", rounds=[_round("a", "ok")], response=[{"kind": "thinking", "value": "hmm"}, {"value": "ok"}])
    t = load(_session(tmp_path, [req]))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"])] and t.notes.skipped == {"part:thinking (no round holds it)": 1}
    # With the rounds' own thinking, the rendered copy is not counted again.
    assert load(AGENT).notes.skipped.get("part:thinking (no round holds it)") is None


def test_encrypted_thinking_is_counted_not_kept(tmp_path: Path) -> None:
    rounds = [_round("a", "ok", thinking={"id": "t", "text": "", "encrypted": "gAAAA..."})]
    t = load(_session(tmp_path, [_req("r1", rounds=rounds)]))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["text"])] and t.notes.skipped["thinking:encrypted"] == 1


def test_round_usage_keeps_cache_reads_apart_and_the_request_s_completion_time() -> None:
    t = load(AGENT)
    usages = [m.usage for m in t.messages if m.role == "assistant"][:3]
    assert usages == [
        Usage(input_tokens=1100, output_tokens=120, cache_read_tokens=8000),
        Usage(input_tokens=800, output_tokens=140, cache_read_tokens=9000),
        Usage(input_tokens=400, output_tokens=30, cache_read_tokens=9700),
    ]
    final = t.messages[5]
    assert final.timestamp is not None and final.timestamp.isoformat() == "2026-01-01T10:07:08.400000+00:00"


def test_request_usage_goes_on_the_last_reply_when_rounds_have_none(tmp_path: Path) -> None:
    req = _req("r1", rounds=[_round("a", "x", [_call("c1")]), _round("b", "y")], results={"c1": _text_result("ok")})
    req["result"]["usage"] = {"promptTokens": 5000, "completionTokens": 70}
    t = load(_session(tmp_path, [req]))
    assert [m.usage for m in t.messages if m.role == "assistant"] == [None, Usage(input_tokens=5000, output_tokens=70)]


def test_parts_the_user_saw_only_and_unknown_kinds_are_counted() -> None:
    s = load(AGENT).notes.skipped
    assert s["part:textEditGroup (shown only)"] == 1 and s["part:codeblockUri (shown only)"] == 1 and s["part:undoStop (shown only)"] == 1
    assert s["part:prepareToolInvocation (shown only)"] == 1 and s["part:subagentTrace (unknown kind)"] == 1


def test_an_unknown_part_without_rounds_is_counted_and_the_text_around_it_kept(tmp_path: Path) -> None:
    t = load(_session(tmp_path, [_req("r1", response=[{"value": "before "}, {"kind": "hologram", "x": 1}, {"value": "after"}])]))
    assert _texts(t)[-1] == "before after" and t.notes.skipped == {"part:hologram (unknown kind)": 1}


def test_a_failed_and_a_cancelled_request_are_warnings() -> None:
    w = load(AGENT).notes.warnings
    assert any("request_4f6b8c0d" in x and "failed" in x and "rate limit" in x for x in w)
    assert any("request_3e5a7b9c" in x and "cancelled" in x for x in w)


def test_a_filtered_response_says_so(tmp_path: Path) -> None:
    req = _req("r1", response=[])
    req["result"]["errorDetails"] = {"message": "Sorry, the response matched public code.", "responseIsFiltered": True}
    t = load(_session(tmp_path, [req, _req("r2", response=["fine"])]))
    assert any("'r1' filtered" in w and "public code" in w for w in t.notes.warnings)


def test_bad_arguments_are_kept_raw_with_a_warning(tmp_path: Path) -> None:
    rounds = [_round("a", "", [_call("c1", arguments='{"filePath": "/w/a.py"')]), _round("b", "done")]
    t = load(_session(tmp_path, [_req("r1", rounds=rounds, results={"c1": _text_result("ok")})]))
    assert _uses(t)["c1"].input == {"_raw": '{"filePath": "/w/a.py"'}
    assert any("toolCallRounds[0].toolCalls[0].arguments" in w for w in t.notes.warnings)


def test_a_request_undone_by_a_checkpoint_restore_is_skipped(tmp_path: Path) -> None:
    reqs = [_req("r1", "first", response=["one"]), _req("r2", "undone", response=["two"], shouldBeRemovedOnSend={"requestId": "r2"}), _req("r3", "third", response=["three"])]
    t = load(_session(tmp_path, reqs))
    assert _texts(t) == ["first", "one", "third", "three"] and t.notes.skipped["request:removed by a checkpoint restore"] == 1


def test_rendered_images_are_placeholders_and_cache_breakpoints_nothing(tmp_path: Path) -> None:
    rendered = [{"type": 1, "text": "what is this?"}, {"type": 2, "imageUrl": {"url": "data:image/png;base64,AAAA"}}, {"type": 3, "cacheType": "ephemeral"}, {"type": 9}]
    t = load(_session(tmp_path, [_req("r1", rounds=[_round("a", "a cat")], metadata={"renderedUserMessage": rendered})]))
    blocks = t.messages[0].content
    assert [b.type for b in blocks] == ["text", "image"] and isinstance(blocks[1], ImageBlock) and blocks[1].media_type == "image/png"
    assert t.notes.skipped == {"rendered_part:9 (unknown type)": 1}


# --- rendered tool invocations (no rounds stored) ----------------------------------------------------


def test_rendered_tool_invocations_are_calls_answered_by_their_output(tmp_path: Path) -> None:
    response = [
        {"value": "Let me check."},
        {"kind": "toolInvocationSerialized", "toolId": "mcp_db_query", "toolCallId": "v1", "isComplete": True,
         "resultDetails": {"input": '{"sql": "select 1"}', "output": [{"type": "embed", "isText": True, "value": "1 row"}]}},
        {"value": "\n"},
        {"kind": "toolInvocationSerialized", "toolId": "copilot_readFile", "toolCallId": "v2", "pastTenseMessage": {"value": "Read a.py"}},
        {"value": "It returns one row."},
    ]  # fmt: skip
    t = load(_session(tmp_path, [_req("r1", response=response), _req("r2", "thanks", response=["welcome"])]))
    assert _shape(t)[:4] == [("user", None, ["text"]), ("assistant", None, ["text", "tool_use", "tool_use"]), ("user", None, ["tool_result"]), ("assistant", None, ["text"])]
    uses = _uses(t)
    assert uses["v1"].name == "mcp_db_query" and uses["v1"].input == {"sql": "select 1"} and uses["v2"].input == {}
    assert _results(t)["v1"].content == "1 row"
    # VS Code kept only "Read a.py" for the second call: that is no output, so nothing answers it.
    assert t.notes.unanswered_tool_uses == ["v2"] and any("'v2'" in w and "left unanswered" in w for w in t.notes.warnings)


def test_rendered_thinking_is_a_thinking_block(tmp_path: Path) -> None:
    t = load(_session(tmp_path, [_req("r1", response=[{"kind": "thinking", "value": ["Weigh ", "it."]}, {"value": "Answer."}])]))
    assert _shape(t) == [("user", None, ["text"]), ("assistant", None, ["thinking", "text"])]
    assert isinstance(t.messages[1].content[0], ThinkingBlock) and t.messages[1].content[0].thinking == "Weigh it."


# --- compaction -----------------------------------------------------------------------------------


def test_a_summary_of_a_round_is_a_boundary_then_the_summary(tmp_path: Path) -> None:
    rounds = [_round("a", "", [_call("c1")]), _round("b", "", [_call("c2")]), _round("c", "done")]
    req = _req("r1", rounds=rounds, results={"c1": _text_result("one"), "c2": _text_result("two")}, metadata={"summary": {"toolCallRoundId": "a", "text": "Read a.py: x = 1."}})
    t = load(_session(tmp_path, [_req("r0", "earlier", response=["sure"]), req]))
    assert _shape(t) == [
        ("user", None, ["text"]),
        ("assistant", None, ["text"]),
        ("user", None, ["text"]),
        ("assistant", None, ["tool_use"]),
        ("user", None, ["tool_result"]),
        ("system", "boundary", ["text"]),
        ("user", "summary", ["text"]),
        ("assistant", None, ["tool_use"]),
        ("user", None, ["tool_result"]),
        ("assistant", None, ["text"]),
    ]
    marker = t.messages[5]
    assert marker.boundary is not None and marker.boundary.strategy == copilot_chat.STRATEGY == "copilot_summary" and marker.boundary.messages_removed == 5
    assert _texts(t)[-2] == "Read a.py: x = 1."
    # A replay can undo it: the marker and the summary go, the history before them is sent again.
    undone, found, _ = apply_recorded(t, "undo")
    assert len(found) == 1 and found[0].action == "undone" and found[0].agent == "GitHub Copilot" and len(undone.messages) == 8
    assert not any(m.tag in ("boundary", "summary") for m in undone.messages)


def test_a_summary_of_an_earlier_request_s_round_goes_before_this_request(tmp_path: Path) -> None:
    first = _req("r1", rounds=[_round("a", "first answer")])
    second = _req("r2", "next", rounds=[_round("b", "second answer")], metadata={"summaries": [{"toolCallRoundId": "a", "text": "We talked."}]})
    t = load(_session(tmp_path, [first, second]))
    assert [m.tag for m in t.messages] == [None, None, "boundary", "summary", None, None]
    ghost = _req("r3", "more", rounds=[_round("c", "third")], metadata={"summary": {"toolCallRoundId": "nowhere", "text": "?"}})
    t2 = load(_session(tmp_path, [first, ghost]))
    assert any("'nowhere'" in w for w in t2.notes.warnings) and [m.tag for m in t2.messages][2:4] == ["boundary", "summary"]


# --- the mutation log's entries --------------------------------------------------------------------


def test_log_entries_set_push_cut_and_delete(tmp_path: Path) -> None:
    entries = [
        _INITIAL,
        {"kind": 2, "k": ["requests"], "v": [_req("r1", "draft", response=[])]},
        {"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "wrong "}, {"value": "start"}]},
        # A push with i cuts the array first: the response was rewritten from its first part.
        {"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "right"}], "i": 0},
        {"kind": 1, "k": ["requests", 0, "message"], "v": {"text": "final question", "parts": []}},
        {"kind": 1, "k": ["customTitle"], "v": "Later title"},
        {"kind": 3, "k": ["customTitle"]},
        {"kind": 1, "k": ["customTitle"], "v": "Kept title"},
    ]
    t = load(_log(tmp_path, entries))
    assert _texts(t) == ["final question", "right"] and t.meta.title == "Kept title" and t.notes.records_read >= len(entries)


def test_a_log_line_cut_off_mid_write_is_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "live.jsonl"
    p.write_text(AGENT.read_text(encoding="utf-8") + '{"kind":1,"k":["requests",2,"res', encoding="utf-8")
    t = load(p)
    assert len(t.messages) == 9 and any("cut off" in w for w in t.notes.warnings)


def test_a_log_of_only_its_initial_state_is_a_session(tmp_path: Path) -> None:
    state = json.loads(AGENT.read_text(encoding="utf-8").splitlines()[0])
    state["v"]["requests"] = [_req("r1", "hello", response=["hi"])]
    p = _log(tmp_path, [state])
    assert detect(p) == "copilot_chat" and _texts(load(p)) == ["hello", "hi"]


# --- damaged input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "where", "words"),
    [
        ([{"kind": 1, "k": ["customTitle"], "v": "x"}, _INITIAL], "line 1", "before the initial state"),
        ([_INITIAL, {"kind": 1, "k": ["requests", 4, "message"], "v": "x"}], "line 2", "leads nowhere"),
        ([_INITIAL, {"kind": 2, "k": ["sessionId"], "v": [1]}], "line 2", "push onto a str"),
        ([_INITIAL, {"kind": 1, "v": "x"}], "line 2", "no path"),
        ([_INITIAL, ["not", "an", "entry"]], "line 2", "not a mutation log entry"),
    ],
    ids=["change-first", "bad-path", "push-onto-text", "no-path", "not-an-entry"],
)
def test_a_damaged_log_names_the_line_and_what_was_expected(tmp_path: Path, entries: list[Any], where: str, words: str) -> None:
    with pytest.raises(TranscriptError) as err:
        load(_log(tmp_path, entries), format="copilot_chat")
    assert words in err.value.reason and err.value.where is not None and where in err.value.where and err.value.expected


def test_a_log_line_that_is_no_json_is_a_transcript_error(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(_INITIAL) + "\n{kind: 1}\n" + json.dumps({"kind": 1, "k": ["customTitle"], "v": "t"}) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        load(p, format="copilot_chat")
    assert err.value.where == "line 2"


def test_a_new_empty_session_is_detected_and_refused_clearly(tmp_path: Path) -> None:
    p = _session(tmp_path, [])
    assert copilot_chat.sniff(read_file_head(p)) == 90 and detect(p) == "copilot_chat"
    with pytest.raises(TranscriptError) as err:
        load(p)
    assert "no request yet" in err.value.reason and err.value.where == "$.requests"


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"version": 3, "requests": "none"}, "not a VS Code chat session"),
        ({"kind": 1, "k": ["requests"], "v": []}, "before the initial state"),
        ({"version": 3, "responderUsername": "GitHub Copilot", "requests": [1, 2, 3]}, "not a VS Code chat session"),
        ({"version": 3, "responderUsername": "GitHub Copilot", "requests": [{"requestId": "r1", "message": {"text": " "}, "response": []}]}, "none that was sent"),
    ],
    ids=["requests-not-a-list", "log-without-initial-state", "requests-not-requests", "nothing-sent"],
)
def test_degenerate_documents_are_refused_clearly(tmp_path: Path, doc: Any, words: str) -> None:
    p = tmp_path / "s.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        load(p, format="copilot_chat")
    assert words in err.value.reason and err.value.expected and "could not import as" not in str(err.value)


def test_entries_that_are_no_request_are_counted(tmp_path: Path) -> None:
    t = load(_session(tmp_path, [_req("r1", response=["a"]), "junk", {"requestId": 5}, _req("r2", response=["b"]), _req("r3", response=["c"])]))
    assert t.notes.skipped == {"request:non_object": 1, "request:unknown": 1} and _texts(t) == ["hi", "a", "hi", "b", "hi", "c"]


# --- detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [CHAT, AGENT], ids=["chat-json", "agent-jsonl"])
def test_detection_picks_copilot_chat_and_other_formats_refuse_it(path: Path) -> None:
    assert detect(path) == "copilot_chat" and copilot_chat.sniff(read_file_head(path)) == 96
    assert _forced_results(path) == []


def test_a_session_too_large_to_probe_is_known_by_its_head(tmp_path: Path) -> None:
    big = [_req(f"r{i}", "x" * 2000, response=["y" * 2000]) for i in range(600)]
    p = tmp_path / "big.json"
    p.write_text(json.dumps({"version": 3, "requesterUsername": "me", "responderUsername": "GitHub Copilot", "requests": big, "sessionId": "s"}, indent=2), encoding="utf-8")
    probe = read_file_head(p)
    assert probe.document is None and copilot_chat.sniff(probe) == 85 and detect(p) == "copilot_chat"

    # A log whose first line (the state it was compacted to) is longer than the probe's line cap:
    # still JSONL, its first record read whole, as another line follows it (jsonio._long_first_line).
    huge = big * 4
    log = _log(tmp_path, [{"kind": 0, "v": {"version": 3, "responderUsername": "GitHub Copilot", "sessionId": "s", "requests": huge}}, {"kind": 1, "k": ["customTitle"], "v": "t"}])
    probe = read_file_head(log)
    assert probe.shape == "jsonl" and probe.first_value() is not None and copilot_chat.sniff(probe) > 0 and detect(log) == "copilot_chat"
    assert len(load(log).messages) == 2 * len(huge)


_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda p: p.name)
def test_samples_are_not_claimed(path: Path) -> None:
    assert copilot_chat.sniff(read_file_head(path)) == 0


@pytest.mark.parametrize("path", CORPUS_FILES, ids=corpus_id)
def test_corpus_files_are_not_claimed(path: Path) -> None:
    assert copilot_chat.sniff(read_file_head(path)) == 0


def test_a_har_like_document_with_requests_is_not_claimed(tmp_path: Path) -> None:
    # Other logs hold "requests" too, of HTTP requests with no requestId and message.
    p = tmp_path / "log.json"
    p.write_text(json.dumps({"version": "1.2", "requests": [{"url": "https://api", "method": "POST", "body": "{}"}]}), encoding="utf-8")
    assert copilot_chat.sniff(read_file_head(p)) == 0


# --- replay and export -------------------------------------------------------------------------


def test_an_imported_chat_replays() -> None:
    result = lab.replay(load(CHAT), "lab", window=32000)
    assert result.rows and result.invalid_requests == 0


def test_exports_with_every_answered_pair(tmp_path: Path) -> None:
    out = tmp_path / "request.json"
    assert main(["export", str(AGENT), "--to", "openai", "--out", str(out)]) == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
    # The call the session left running is answered as interrupted: an exported request is one the API takes.
    assert len(calls) == 4 and calls == answered
    (last,) = [m for m in body["messages"] if m.get("tool_call_id") == "toolu_vrtx_01RunTests"]
    assert "interrupted" in json.dumps(last["content"])
