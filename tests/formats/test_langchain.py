"""LangChain / LangGraph importer: every shape, pairing, errors, usage, detection, the CLI.

Where each fixture shape comes from (langchain-ai/langchain, libs/core/langchain_core):

* ``{"type": ..., "data": {...}}``: messages/base.py ``message_to_dict`` /
  ``messages_to_dict`` (type is ``message.type``; data is ``model_dump()``), read
  back by messages/utils.py ``_message_from_dict`` (types human, ai, system,
  chat, function, tool and the ``*MessageChunk`` class names).
* ``{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",
  "AIMessage"], "kwargs": {...}}``: load/dump.py ``dumpd`` / ``dumps`` over
  load/serializable.py ``Serializable.to_json`` (only fields set are written).
* AIMessage fields ``tool_calls`` [{name, args, id, type: "tool_call"}],
  ``invalid_tool_calls`` [{name, args (text), id, error}], ``usage_metadata``
  {input_tokens, output_tokens, total_tokens, input_token_details: {cache_read,
  cache_creation}} (input_tokens includes the cached ones), ``response_metadata``
  {model_name}: messages/ai.py and messages/tool.py (ToolCall, InvalidToolCall).
  The OpenAI-shaped ``additional_kwargs.tool_calls`` is what older OpenAI
  integrations left there; ``additional_kwargs.reasoning_content`` is DeepSeek's.
* ToolMessage {content, tool_call_id, status: "success"|"error", name,
  artifact}: messages/tool.py.
* Content blocks: Anthropic-shaped ``thinking`` / ``tool_use`` passed through by
  langchain-anthropic, OpenAI ``image_url``, and the standard ``reasoning``
  {reasoning} / ``image`` {base64, mime_type} blocks of messages/content.py.
* LangGraph state ``{"messages": [...]}``: langgraph's MessagesState; the thread
  state ``{"values": {...}}`` the LangGraph server returns.

The fixtures below were checked against what langchain-core 1.x's serialisers write.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.messages import ImageBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, Usage, tool_pairs
from lab.errors import TranscriptError
from lab.formats import detect, load
from lab.formats.shell_agents import langchain
from tests.conftest import ROOT


def _ai(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"content": "", "additional_kwargs": {}, "response_metadata": {}, "type": "ai", "name": None, "id": None, "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None}
    return {**base, **fields}


def _plain(kind: str, content: Any, **fields: Any) -> dict[str, Any]:
    return {"content": content, "additional_kwargs": {}, "response_metadata": {}, "type": kind, "name": None, "id": None, **fields}


def _tool(content: Any, call_id: str, status: str = "success") -> dict[str, Any]:
    return _plain("tool", content, tool_call_id=call_id, artifact=None, status=status, name="ls")


# One conversation as plain model_dump() fields: system, human, ai calling a tool, an error result, the answer.
PLAIN = [
    _plain("system", "You are terse."),
    _plain("human", [{"type": "text", "text": "list it"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]),
    _ai(
        content=[{"type": "thinking", "thinking": "use ls", "signature": "sig"}, {"type": "text", "text": "Listing."}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {"p": "."}}],
        tool_calls=[{"name": "ls", "args": {"p": "."}, "id": "t1", "type": "tool_call"}],
        usage_metadata={"input_tokens": 100, "output_tokens": 5, "total_tokens": 105, "input_token_details": {"cache_read": 40, "cache_creation": 10}},
        response_metadata={"model_name": "claude-x"},
        id="run-1",
    ),
    _tool("permission denied", "t1", status="error"),
    _ai(content="Cannot list.", id="run-2"),
]

_CLASS = {"system": "SystemMessage", "human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}


def as_dict(m: dict[str, Any]) -> dict[str, Any]:
    return {"type": m["type"], "data": m}


def as_dumpd(m: dict[str, Any]) -> dict[str, Any]:
    # dumpd writes only the fields that were set.
    kwargs = {k: v for k, v in m.items() if v not in (None, {}, [])}
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", _CLASS[m["type"]]], "kwargs": kwargs}


def _write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _jsonl(path: Path, records: list[Any], tail: str = "") -> Path:
    return _write(path, "".join(json.dumps(r) + "\n" for r in records) + tail)


def _check_conversation(t: Transcript) -> None:
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    system, user, ai, result, answer = t.messages
    assert system.content == (TextBlock(text="You are terse."),)
    assert user.content[0] == TextBlock(text="list it") and isinstance(user.content[1], ImageBlock)
    assert ai.content == (
        ThinkingBlock(thinking="use ls", signature="sig"),
        TextBlock(text="Listing."),
        ToolUseBlock(id="t1", name="ls", input={"p": "."}),
    )
    assert ai.usage == Usage(input_tokens=50, output_tokens=5, cache_read_tokens=40, cache_write_tokens=10)
    assert result.content == (ToolResultBlock(tool_use_id="t1", content="permission denied", is_error=True),)
    assert answer.content == (TextBlock(text="Cannot list."),)
    assert tool_pairs(t.messages) == {"t1": (2, 3)}
    assert not t.notes.orphan_tool_results and not t.notes.unanswered_tool_uses
    assert t.meta.source_format == "langchain" and t.meta.model == "claude-x"


# --- each shape --------------------------------------------------------------------------------


SHAPES = {
    "messages_to_dict": [as_dict(m) for m in PLAIN],
    "dumpd": [as_dumpd(m) for m in PLAIN],
    "model_dump": PLAIN,
    "langgraph_state": {"messages": [as_dumpd(m) for m in PLAIN]},
    "thread_state": {"values": {"messages": PLAIN}, "next": []},
    "mixed": [as_dict(PLAIN[0]), as_dumpd(PLAIN[1]), PLAIN[2], as_dict(PLAIN[3]), as_dumpd(PLAIN[4])],
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_document_shape_imports_the_same_conversation(tmp_path: Path, shape: str) -> None:
    p = _write(tmp_path / f"{shape}.json", SHAPES[shape])
    assert detect(p) == "langchain"
    _check_conversation(load(p))


@pytest.mark.parametrize("wrap", [as_dict, as_dumpd], ids=["messages_to_dict", "dumpd"])
def test_jsonl_one_message_a_line(tmp_path: Path, wrap: Any) -> None:
    p = _jsonl(tmp_path / "h.jsonl", [wrap(m) for m in PLAIN])
    assert detect(p) == "langchain"
    t = load(p)
    _check_conversation(t)
    assert t.notes.records_read == 5


def test_jsonl_skips_other_lines_and_forgives_a_cut_last_line(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "h.jsonl", [*(as_dict(m) for m in PLAIN), {"type": "checkpoint", "step": 3}], tail='{"type": "human", "da')
    t = langchain.read(p)
    _check_conversation(t)
    assert t.notes.skipped == {"record:checkpoint": 1}
    assert any("cut off" in w for w in t.notes.warnings)


def test_a_single_message_document(tmp_path: Path) -> None:
    t = load(_write(tmp_path / "one.json", as_dumpd(PLAIN[1])))
    assert [m.role for m in t.messages] == ["user"]


def test_message_ids_come_from_the_source_and_stay_unique() -> None:
    t = langchain.from_messages([as_dict(PLAIN[1]), as_dict(PLAIN[4]), as_dict(PLAIN[4])])
    assert [m.id for m in t.messages] == ["m0", "run-2", "run-2#2"]
    assert langchain.from_messages([as_dict(PLAIN[4])]).messages == langchain.from_messages([as_dict(PLAIN[4])]).messages


# --- tool calls --------------------------------------------------------------------------------


def test_openai_shaped_tool_calls_in_additional_kwargs() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"q": "x"}'}}
    t = langchain.from_messages([as_dict(_ai(additional_kwargs={"tool_calls": [call]})), as_dict(_tool("hit", "c1"))])
    assert t.messages[0].content == (ToolUseBlock(id="c1", name="grep", input={"q": "x"}),)
    assert t.messages[1].content == (ToolResultBlock(tool_use_id="c1", content="hit"),)


def test_tool_calls_win_over_repeated_content_blocks_and_fill_in_when_absent() -> None:
    # Content holds the provider's tool_use; with tool_calls too it must not be counted twice.
    t = langchain.from_messages([as_dict(PLAIN[2])])
    assert sum(isinstance(b, ToolUseBlock) for b in t.messages[0].content) == 1
    only_content = _ai(content=[{"type": "tool_call", "id": "k", "name": "cat", "args": {"f": "a"}}])
    assert langchain.from_messages([as_dict(only_content)]).messages[0].content == (ToolUseBlock(id="k", name="cat", input={"f": "a"}),)


def test_parallel_results_share_one_user_message_and_orphans_are_recorded() -> None:
    calls = [{"name": "a", "args": {}, "id": "x"}, {"name": "b", "args": {}, "id": "y"}]
    t = langchain.from_messages([as_dict(_ai(tool_calls=calls)), as_dict(_tool("1", "x")), as_dict(_tool("2", "y")), as_dict(_tool("3", "zz"))])
    assert [m.role for m in t.messages] == ["assistant", "user"]
    assert [b.tool_use_id for b in t.messages[1].content if isinstance(b, ToolResultBlock)] == ["x", "y", "zz"]
    assert t.notes.orphan_tool_results == ["zz"]


def test_unanswered_and_invalid_tool_calls() -> None:
    bad = {"name": "run", "args": "{not json", "id": "bad1", "error": "parse", "type": "invalid_tool_call"}
    t = langchain.from_messages([as_dict(_ai(tool_calls=[{"name": "ls", "args": {}, "id": "u1"}], invalid_tool_calls=[bad]))])
    uses = [b for b in t.messages[0].content if isinstance(b, ToolUseBlock)]
    assert [u.id for u in uses] == ["u1", "bad1"] and uses[1].input == {"_raw": "{not json"}
    assert t.notes.unanswered_tool_uses == ["u1", "bad1"]
    assert any("invalid tool call" in w for w in t.notes.warnings)


def test_tool_result_content_lists_and_success_status() -> None:
    content = [{"type": "text", "text": "a"}, {"type": "image", "base64": "AAAA", "mime_type": "image/png"}]
    t = langchain.from_messages([as_dict(_ai(tool_calls=[{"name": "shot", "args": {}, "id": "s"}])), as_dict(_tool(content, "s"))])
    assert t.messages[1].content == (ToolResultBlock(tool_use_id="s", content="a\n[image]", is_error=False),)


def test_function_message_answers_the_pending_call_of_its_name() -> None:
    fn = {"type": "function", "data": {"content": "42", "name": "calc", "type": "function"}}
    t = langchain.from_messages([as_dict(_ai(tool_calls=[{"name": "calc", "args": {}, "id": "f1"}])), fn])
    assert t.messages[1].content == (ToolResultBlock(tool_use_id="f1", content="42"),)


# --- reasoning, usage, other types ----------------------------------------------------------------


def test_reasoning_blocks_and_reasoning_content() -> None:
    standard = _ai(content=[{"type": "reasoning", "reasoning": "think"}, {"type": "text", "text": "ok"}])
    summary = _ai(content=[{"type": "reasoning", "summary": [{"type": "summary_text", "text": "s1"}, {"type": "summary_text", "text": "s2"}]}])
    deepseek = _ai(content="ok", additional_kwargs={"reasoning_content": "deep"})
    t = langchain.from_messages([as_dict(standard), as_dict(summary), as_dict(deepseek)])
    assert t.messages[0].content == (ThinkingBlock(thinking="think"), TextBlock(text="ok"))
    assert t.messages[1].content == (ThinkingBlock(thinking="s1\ns2"),)
    assert t.messages[2].content == (ThinkingBlock(thinking="deep"), TextBlock(text="ok"))


def test_usage_falls_back_to_openai_token_usage() -> None:
    ai = _ai(content="x", response_metadata={"token_usage": {"prompt_tokens": 30, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 10}}, "model_name": "gpt-x"})
    t = langchain.from_messages([as_dict(ai)])
    assert t.messages[0].usage == Usage(input_tokens=20, output_tokens=4, cache_read_tokens=10)
    assert t.meta.model == "gpt-x"
    assert langchain.from_messages([as_dict(_ai(content="x"))]).messages[0].usage is None


def test_chunks_and_chat_messages_map_to_their_roles() -> None:
    chunk = {"type": "AIMessageChunk", "data": {**_ai(content="part"), "type": "AIMessageChunk", "tool_call_chunks": []}}
    chat = {"type": "chat", "data": {"content": "as user", "role": "user", "type": "chat"}}
    t = langchain.from_messages([chunk, chat, as_dumpd(PLAIN[0]) | {"id": ["langchain_core", "messages", "SystemMessageChunk"]}])
    assert [m.role for m in t.messages] == ["assistant", "user", "system"]


def test_unknown_types_are_skipped_and_counted() -> None:
    entries = [
        as_dict(PLAIN[1]),
        {"type": "remove", "data": {"content": "", "id": "m0"}},
        {"lc": 1, "type": "constructor", "id": ["my_agent", "NoteMessage"], "kwargs": {"content": "x"}},
        {"type": "chat", "data": {"content": "?", "role": "critic"}},
        as_dict(_plain("human", [{"type": "audio", "data": "..."}, {"type": "text", "text": "hi"}])),
    ]
    t = langchain.from_messages(entries)
    assert [m.role for m in t.messages] == ["user", "user"]
    assert t.notes.skipped == {"type:remove": 1, "type:NoteMessage": 1, "type:chat": 1, "content block:audio": 1}


# --- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ([as_dict(PLAIN[1]), "hello"], "$[1]"),
        ({"messages": [as_dict(PLAIN[1]), {"role": "user", "content": "x"}]}, "$.messages[1]"),
        ([as_dict(_ai(tool_calls={"name": "x"}))], "$[0].data.tool_calls"),
        ([as_dumpd(_ai(tool_calls=[{"args": {}, "id": "n"}]))], "$[0].kwargs.tool_calls[0]"),
        ([as_dict(_plain("human", 42))], "$[0].data.content"),
        ([as_dict(_plain("human", ["ok", 7]))], "$[0].data.content[1]"),
        ([as_dict(_tool("x", ""))], "$[0].data"),
        ({"state": 1}, "$"),
    ],
    ids=["not-an-object", "not-langchain", "tool-calls-not-list", "call-without-name", "bad-content", "bad-part", "tool-without-id", "no-messages"],
)
def test_bad_input_names_file_and_json_path(tmp_path: Path, doc: Any, where: str) -> None:
    p = _write(tmp_path / "bad.json", doc)
    with pytest.raises(TranscriptError) as err:
        langchain.read(p)
    assert err.value.file == str(p)
    assert err.value.where == where


def test_bad_jsonl_line_names_its_line(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "bad.jsonl", [as_dict(PLAIN[1]), as_dict(_plain("human", 42))])
    with pytest.raises(TranscriptError) as err:
        langchain.read(p)
    assert err.value.where == "line 2, $.data.content"
    with pytest.raises(TranscriptError, match="no LangChain messages"):
        langchain.read(_jsonl(tmp_path / "none.jsonl", [{"type": "x"}, {"type": "y"}]))


_scalar = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8)
_keys = st.sampled_from(["type", "data", "lc", "id", "kwargs", "content", "tool_calls", "tool_call_id", "status", "name", "args", "additional_kwargs", "usage_metadata", "messages", "role", "text", "function", "arguments", "input_token_details"])
_json = st.recursive(_scalar | st.sampled_from(["ai", "human", "tool", "constructor", "text", "tool_use", "reasoning"]), lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5), max_leaves=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=_json, jsonl=st.booleans())
def test_arbitrary_json_raises_only_transcript_errors(tmp_path: Path, doc: Any, jsonl: bool) -> None:
    p = tmp_path / ("f.jsonl" if jsonl else "f.json")
    if jsonl and isinstance(doc, list):
        _write(p, "".join(json.dumps(d) + "\n" for d in doc) or "\n")
    else:
        _write(p, doc)
    try:
        result = langchain.read(p)
    except TranscriptError:
        return
    assert isinstance(result, Transcript)


# --- detection and the CLI ---------------------------------------------------------------------------


def test_detection_needs_langchain_markers(tmp_path: Path) -> None:
    probe_scores = {}
    from lab.formats.detect import scores
    from lab.formats.jsonio import read_file_head

    for name, doc in {
        "chat": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "bare-type-content": [{"type": "human", "content": "hi"}],
        "type-data-no-content": [{"type": "system", "data": {"subtype": "init"}}],
        "other-constructor": [{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "document", "Document"], "kwargs": {"page_content": "x"}}],
    }.items():
        probe_scores[name] = scores(read_file_head(_write(tmp_path / f"{name}.json", doc)))["langchain"]
    assert probe_scores == dict.fromkeys(probe_scores, 0)


def test_detection_of_large_documents_reads_the_head(tmp_path: Path) -> None:
    big = [as_dumpd(m) for m in PLAIN] + [as_dumpd(_plain("human", "x" * 1000)) for _ in range(3000)]
    p = _write(tmp_path / "big.json", big)
    assert detect(p) == "langchain"
    assert len(load(p).messages) == 5 + 3000


def test_python_m_lab_import_exits_0(tmp_path: Path) -> None:
    src = _write(tmp_path / "state.json", SHAPES["langgraph_state"])
    out = tmp_path / "x.json"
    proc = subprocess.run([sys.executable, "-m", "lab", "import", str(src), "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "as langchain" in proc.stdout
    assert len(json.loads(out.read_text())["messages"]) == 5
