"""Claude Code sessions: the real corpus, and small hand-written entry files."""

from __future__ import annotations

import base64
import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import lab
from lab.core.messages import ImageBlock, Message, ToolResultBlock, ToolUseBlock, Transcript, tool_pairs, message_text
from lab.core.validate import anthropic_problems
from lab.errors import TranscriptError
from lab.formats.claude import claude_code, claude_code_entry, claude_code_import
from lab.formats import dump
from lab.formats.claude.claude_code_entry import Entry, UsageCounts, entry_of
from tests.conftest import corpus_path

GRPC = corpus_path("claude-code/enterprisebench-grpc-metadata-mcp-native.jsonl")
ATTIO = corpus_path("claude-code/attio-mcp-server-session.jsonl")

needs_corpus = pytest.mark.corpus("claude-code/enterprisebench-grpc-metadata-mcp-native.jsonl", "claude-code/attio-mcp-server-session.jsonl")


def _raw_entries(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# --- entry builders ---------------------------------------------------------------

_n = 0


def _entry(kind: str, content: Any = None, *, api_id: str | None = None, parent: str | None = None, **extra: Any) -> dict[str, Any]:
    global _n
    _n += 1
    entry: dict[str, Any] = {
        "type": kind,
        "uuid": f"u{_n}",
        "parentUuid": parent,
        "sessionId": "s1",
        "isSidechain": False,
        "timestamp": f"2025-01-01T00:00:{_n % 60:02d}Z",
    }
    if kind in ("user", "assistant"):
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message.update(id=api_id or f"msg_{_n}", model="claude-test", type="message")
        entry["message"] = message
    entry.update(extra)
    return entry


def _user(text: str, **kw: Any) -> dict[str, Any]:
    return _entry("user", text, **kw)


def _use(tool_id: str, api_id: str, name: str = "Read", **kw: Any) -> dict[str, Any]:
    return _entry("assistant", [{"type": "tool_use", "id": tool_id, "name": name, "input": {"file_path": "a.py"}}], api_id=api_id, **kw)


def _result(tool_id: str, content: Any = "ok", **kw: Any) -> dict[str, Any]:
    return _entry("user", [{"type": "tool_result", "tool_use_id": tool_id, "content": content}], **kw)


def _load(tmp_path: Path, entries: list[dict[str, Any]], *, as_array: bool = False) -> Transcript:
    p = tmp_path / ("s.json" if as_array else "s.jsonl")
    if as_array:
        p.write_text(json.dumps(entries), encoding="utf-8")
    else:
        p.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return claude_code.read(p)


# --- the real corpus ----------------------------------------------------------------


@needs_corpus
def test_grpc_session_merges_assistant_entries_of_one_api_message() -> None:
    t = claude_code.read(GRPC)
    raw = _raw_entries(GRPC)
    assistant_entries = [e for e in raw if e["type"] == "assistant"]
    api_ids = {e["message"]["id"] for e in assistant_entries}
    assistants = [m for m in t.messages if m.role == "assistant"]
    # One message per API message, not one per entry (69 entries in the file).
    assert len(assistant_entries) > len(assistants) == len(api_ids)
    # msg_01W9... was written as thinking, tool_use, (its result), tool_use: both calls are in one message.
    by_uses = {tuple(b.id for b in m.content if isinstance(b, ToolUseBlock)) for m in assistants}
    assert ("toolu_01VvNHdPmG19iyn7Zdgnyfxa", "toolu_01S9ur7ChxCU6YMVSF7MeACD") in by_uses


@needs_corpus
def test_grpc_session_counts_skipped_records_and_reads_meta() -> None:
    t = claude_code.read(GRPC)
    assert t.notes.skipped == {"queue-operation": 2, "last-prompt": 1}
    assert t.notes.records_read == 116
    assert t.meta.session_id == "eb7e85f8-3f76-44f5-9cee-c2ca78be4302"
    assert t.meta.model == "claude-sonnet-4-6"
    assert t.messages[0].role == "user"
    usage = next(m.usage for m in t.messages if m.usage is not None)
    assert usage.cache_read_tokens > 0 and usage.cache_write_tokens > 0


@needs_corpus
def test_grpc_session_keeps_every_tool_pair_and_is_a_valid_request() -> None:
    t = claude_code.read(GRPC)
    raw_ids = {
        b["id"] for e in _raw_entries(GRPC) if e["type"] == "assistant" for b in e["message"]["content"] if b["type"] == "tool_use"
    }
    pairs = tool_pairs(t.messages)
    assert set(pairs) == raw_ids
    assert all(use is not None and result is not None for use, result in pairs.values())
    assert anthropic_problems(t.messages) == []
    # tool_reference blocks inside a result stay readable text.
    first = next(b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock))
    assert "mcp__sourcegraph__read_file" in first.content


@needs_corpus
def test_attio_session_keeps_sidechains_apart() -> None:
    t = claude_code.read(ATTIO)
    raw = _raw_entries(ATTIO)
    side_uuids = {e["uuid"] for e in raw if e["isSidechain"]}
    assert len(t.sidechains) == 3
    assert not side_uuids & {m.id for m in t.messages}
    assert all(m.id.split("#")[0] in side_uuids for msgs in t.sidechains.values() for m in msgs)
    # Each thread is keyed by the Task call in the main thread that started it.
    main_uses = {b.id: b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)}
    for key, msgs in t.sidechains.items():
        assert main_uses[key].name == "Task"
        assert msgs[0].role == "user"
        assert anthropic_problems(msgs) == []


@needs_corpus
def test_attio_session_imports_the_compaction_and_counts_hook_records() -> None:
    t = claude_code.read(ATTIO)
    assert t.notes.skipped == {"system": 228}
    assert t.messages[0].boundary is not None and t.messages[0].tag == "boundary"
    assert t.messages[1].tag == "summary"
    assert "continued from a previous conversation" in t.messages[1].content[0].text  # type: ignore[union-attr]
    assert any("isMeta" in w for w in t.notes.warnings)
    assert anthropic_problems(t.messages) == []


# --- merging and threading ----------------------------------------------------------------


def test_interleaved_entries_of_one_message_are_rebuilt(tmp_path: Path) -> None:
    entries = [_user("go"), _use("t1", "msg_A"), _result("t1"), _use("t2", "msg_A"), _result("t2"), _user("thanks")]
    t = _load(tmp_path, entries)
    shape = [(m.role, [getattr(b, "id", None) or getattr(b, "tool_use_id", None) for b in m.content]) for m in t.messages]
    assert shape == [("user", [None]), ("assistant", ["t1", "t2"]), ("user", ["t1", "t2"]), ("user", [None])]
    assert anthropic_problems(t.messages) == []


def test_same_api_id_after_user_text_is_a_new_message(tmp_path: Path) -> None:
    entries = [_user("go"), _use("t1", "msg_A"), _result("t1"), _user("wait"), _use("t2", "msg_A"), _result("t2")]
    t = _load(tmp_path, entries)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "user", "assistant", "user"]
    assert len({m.id for m in t.messages}) == len(t.messages)


def test_usage_comes_from_the_last_entry_of_a_message(tmp_path: Path) -> None:
    a1 = _entry("assistant", [{"type": "text", "text": "hi"}], api_id="msg_U")
    a1["message"]["usage"] = {"input_tokens": 5, "output_tokens": 1}
    a2 = _entry("assistant", [{"type": "text", "text": "there"}], api_id="msg_U")
    a2["message"]["usage"] = {"input_tokens": 5, "output_tokens": 9, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 3}
    t = _load(tmp_path, [_user("go"), a1, a2])
    assert len(t.messages) == 2
    assert t.messages[1].usage is not None
    assert (t.messages[1].usage.output_tokens, t.messages[1].usage.cache_read_tokens, t.messages[1].usage.cache_write_tokens) == (9, 7, 3)


def test_a_recorded_cost_on_the_entry_becomes_the_usages_cost(tmp_path: Path) -> None:
    priced = _entry("assistant", [{"type": "text", "text": "hi"}], api_id="msg_C", costUSD=0.0123)
    priced["message"]["usage"] = {"input_tokens": 5, "output_tokens": 1}
    odd = _entry("assistant", [{"type": "text", "text": "there"}], api_id="msg_D", costUSD="free")
    odd["message"]["usage"] = {"input_tokens": 5, "output_tokens": 1}
    t = _load(tmp_path, [_user("go"), priced, _user("more"), odd])
    costs = [m.usage.cost_usd for m in t.messages if m.usage is not None]
    # A cost that is not a number is no cost, never a crash.
    assert costs == [0.0123, None]


def test_an_api_id_that_is_not_a_string_joins_nothing(tmp_path: Path) -> None:
    # Found by the fuzz test: a list as message.id crashed the branch check ("unhashable type").
    first = _user("go")
    # A reply on a branch the session left (the retry below hangs off the same prompt).
    odd = _entry("assistant", [{"type": "text", "text": "hi"}], api_id="msg_X", parent=first["uuid"])
    odd["message"]["id"] = []
    retry = _user("again", parent=first["uuid"])
    reply = _entry("assistant", [{"type": "text", "text": "ok"}], api_id="msg_Y", parent=retry["uuid"])
    t = _load(tmp_path, [first, odd, retry, reply])
    assert [m.role for m in t.messages][-1] == "assistant" and "ok" in message_text(t.messages[-1])


def test_sidechain_without_a_task_call_is_keyed_by_its_root(tmp_path: Path) -> None:
    root = _user("sub task", isSidechain=True)
    child = _entry("assistant", [{"type": "text", "text": "done"}], parent=root["uuid"], isSidechain=True)
    t = _load(tmp_path, [_user("main"), root, child, _entry("assistant", [{"type": "text", "text": "ok"}])])
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert list(t.sidechains) == [root["uuid"]]
    assert [m.role for m in t.sidechains[root["uuid"]]] == ["user", "assistant"]


def test_sidechain_linked_to_its_task_call_and_agent_id(tmp_path: Path) -> None:
    task = _entry("assistant", [{"type": "tool_use", "id": "task1", "name": "Task", "input": {"prompt": "look around"}}])
    side = _user("look around", isSidechain=True)
    agent = _user("other work", isSidechain=True, agentId="ag7")
    agent_reply = _entry("assistant", [{"type": "text", "text": "ok"}], isSidechain=True, agentId="ag7")
    t = _load(tmp_path, [_user("go"), task, side, agent, agent_reply, _result("task1", "found")])
    assert set(t.sidechains) == {"task1", "ag7"}
    assert len(t.sidechains["ag7"]) == 2


# --- what is skipped, kept or flagged --------------------------------------------------


def test_unknown_and_unmodelled_record_types_are_counted(tmp_path: Path) -> None:
    entries = [
        {"type": "summary", "summary": "Fixing the parser", "leafUuid": "x"},
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        _entry("attachment"),
        _entry("system", content="hook ran"),
        _entry("brand-new-record"),
        {"no_type": True},
        _user("hello"),
        _entry("user"),  # no content at all
    ]
    entries[-1].pop("message")
    t = _load(tmp_path, entries)
    assert t.notes.skipped == {
        "summary": 1,
        "file-history-snapshot": 1,
        "attachment": 1,
        "system": 1,
        "brand-new-record": 1,
        "unknown": 1,
        "user:no_message": 1,
    }
    assert t.meta.title == "Fixing the parser"
    assert len(t.messages) == 1


def test_duplicate_uuids_are_skipped(tmp_path: Path) -> None:
    u = _user("once")
    t = _load(tmp_path, [u, dict(u)])
    assert len(t.messages) == 1 and t.notes.skipped == {"duplicate": 1}


def test_orphan_results_are_kept_and_flagged_and_unanswered_calls_listed(tmp_path: Path) -> None:
    t = _load(tmp_path, [_user("go"), _result("ghost", "from an earlier session"), _use("t9", "msg_Z")])
    assert any(isinstance(b, ToolResultBlock) and b.tool_use_id == "ghost" for m in t.messages for b in m.content)
    assert t.notes.orphan_tool_results == ["ghost"]
    assert t.notes.unanswered_tool_uses == ["t9"]
    assert any("1 tool result" in w for w in t.notes.warnings)


def test_meta_entries_are_kept(tmp_path: Path) -> None:
    t = _load(tmp_path, [_user("Caveat: local command output below", isMeta=True), _user("hi")])
    assert len(t.messages) == 2
    assert any("1 isMeta" in w for w in t.notes.warnings)


def test_compact_boundary_and_summary_become_one_boundary_and_a_summary(tmp_path: Path) -> None:
    boundary = _entry("system", subtype="compact_boundary", content="Conversation compacted", compactMetadata={"trigger": "auto", "preTokens": 155000})
    summary = _user("This session is being continued... summary here", isCompactSummary=True)
    t = _load(tmp_path, [_user("old"), boundary, summary, _user("next")])
    assert [m.tag for m in t.messages] == [None, "boundary", "summary", None]
    b = t.messages[1].boundary
    assert b is not None and b.trigger == "auto" and b.tokens_before == 155000
    assert t.notes.skipped == {}


# --- content shapes ---------------------------------------------------------------------


def test_tool_result_content_as_string_list_and_image(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    parts = [{"type": "text", "text": "line one"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]
    entries = [_user("go"), _use("t1", "msg_A"), _use("t2", "msg_A"), _result("t1", "plain"), _result("t2", parts)]
    t = _load(tmp_path, entries)
    results = {b.tool_use_id: b.content for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)}
    assert results["t1"] == "plain"
    assert results["t2"] == "line one\n[image: image/png, 100 bytes]"
    assert png not in json.dumps(dump(t))


def test_user_image_becomes_a_placeholder_with_decoded_size(tmp_path: Path) -> None:
    data = base64.b64encode(b"x" * 1234).decode()
    content = [{"type": "text", "text": "see"}, {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": data}}]
    t = _load(tmp_path, [_entry("user", content)])
    image = t.messages[0].content[1]
    assert isinstance(image, ImageBlock)
    assert (image.media_type, image.size_bytes) == ("image/jpeg", 1234)


def test_array_variant_reads_like_jsonl(tmp_path: Path) -> None:
    entries = [_user("go"), _use("t1", "msg_A"), _result("t1"), {"type": "last-prompt"}]
    a = _load(tmp_path, entries)
    b = _load(tmp_path, entries, as_array=True)
    assert a.messages == b.messages
    assert a.notes.skipped == b.notes.skipped == {"last-prompt": 1}


def test_non_object_entries_are_errors(tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text(json.dumps([_user("go"), 42]), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        claude_code.read(p)
    assert err.value.where == "$[1]"


# --- what the fast import must keep -------------------------------------------------------

_ops = st.lists(
    st.one_of(
        st.tuples(st.just("use"), st.sampled_from(["t1", "t2", "t3"]), st.sampled_from(["msg_A", "msg_B"]), st.booleans()),
        st.tuples(st.just("result"), st.sampled_from(["t1", "t2", "t3", "ghost"]), st.just(""), st.booleans()),
        st.tuples(st.just("text"), st.just(""), st.just(""), st.booleans()),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(ops=_ops)
def test_tool_pair_notes_are_what_tool_pairs_says_per_thread(ops: list[tuple[str, str, str, bool]]) -> None:
    entries: list[dict[str, Any]] = []
    for kind, tool_id, api_id, side in ops:
        extra: dict[str, Any] = {"isSidechain": True, "agentId": "ag1"} if side else {}
        if kind == "use":
            entries.append(_use(tool_id, api_id, **extra))
        elif kind == "result":
            entries.append(_result(tool_id, **extra))
        else:
            entries.append(_user("more", **extra))
    t = claude_code.read_entries((f"line {i}", e) for i, e in enumerate(entries, start=1))
    threads = [t.messages, *t.sidechains.values()]
    pairs = [tool_pairs(msgs) for msgs in threads]
    assert t.notes.orphan_tool_results == [i for p in pairs for i, (use, _) in p.items() if use is None]
    assert t.notes.unanswered_tool_uses == [i for p in pairs for i, (use, res) in p.items() if use is not None and res is None]
    # Every block survives the merging, in entry order within each thread.
    assert sum(len(m.content) for msgs in threads for m in msgs) == len(entries)
    ids = [m.id for msgs in threads for m in msgs]
    assert len(ids) == len(set(ids))


def _ts_plus_zero(value: str) -> Any:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@settings(max_examples=150, deadline=None)
@given(
    value=st.one_of(
        st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat().replace("+00:00", "Z")),
        st.datetimes().map(lambda d: d.isoformat(timespec="milliseconds") + "Z"),
        st.text(alphabet="0123456789-T:.Z+zW ", max_size=26),
    )
)
def test_timestamps_parse_as_their_plus_zero_spelling(value: str) -> None:
    parsed = claude_code._ts(value)
    assert parsed == _ts_plus_zero(value)
    assert repr(parsed) == repr(_ts_plus_zero(value))


@pytest.mark.parametrize("value", ["2025-03-03Z", "2025-03-03T09:00:22.588Z", "2025-03-03T09:00:22Z ", "2025-03-03", "bad"])
def test_timestamp_spellings_read_as_with_the_plus_zero_spelling(value: str) -> None:
    # "2025-03-03Z" is refused by fromisoformat as written and read once "Z" is spelled "+00:00".
    assert repr(claude_code._ts(value)) == repr(_ts_plus_zero(value))


# Content no Part takes (a stray string among the blocks): it goes the general way, through block_dicts.
_GENERAL = ["go"]


def test_a_message_that_fails_validation_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The importer checks every value before building a message, so only an importer bug gets here.
    monkeypatch.setattr(claude_code_import, "block_dicts", lambda content, notes, where: [{"type": "text", "text": 5}])
    entries = [_user(_GENERAL, uuid="u-first"), _user(_GENERAL, uuid="u-second")]
    with pytest.raises(TranscriptError) as err:
        _load(tmp_path, entries)
    assert err.value.where == "message u-first"


def test_import_streams_without_holding_the_file(tmp_path: Path) -> None:
    from lab.formats import load
    from lab.generator import generate_jsonl_bytes

    p = tmp_path / "big.jsonl"
    size = generate_jsonl_bytes(p, 1_500_000, seed=3)
    load(p)
    tracemalloc.start()
    try:
        t = load(p)
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(t.messages) > 100
    # Beyond the transcript itself, an import holds a few records, never the file or its parsed lines.
    assert peak - retained < size // 4


def test_equal_values_of_a_session_are_kept_once(tmp_path: Path) -> None:
    # A call's id and its result's, a tool name, a run of equal timestamps and equal usages are one
    # object each: for one-line messages those copies were a sixth of what an import holds.
    stamp = "2025-01-01T00:00:07Z"
    usage = {"input_tokens": 3, "output_tokens": 1}
    entries = [
        _user("go"),
        _use("t1", "msg_a", name="Bash", timestamp=stamp),
        _result("t1", timestamp=stamp),
        _use("t2", "msg_b", name="Bash"),
        _result("t2"),
    ]
    for e in entries[1::2]:
        e["message"]["usage"] = usage
    t = _load(tmp_path, entries)
    call, result, call2 = (m.content[0] for m in t.messages[1:4])
    assert isinstance(call, ToolUseBlock) and isinstance(result, ToolResultBlock) and isinstance(call2, ToolUseBlock)
    assert result.tool_use_id is call.id
    assert call.name is call2.name
    assert t.messages[1].timestamp is t.messages[2].timestamp
    assert t.messages[1].usage is t.messages[3].usage
    # Shared, yet each message is what validation gives for its own values.
    assert t.messages == [Message.model_validate(m.model_dump()) for m in t.messages]


def test_a_zero_cost_is_never_shared(tmp_path: Path) -> None:
    # 0.0 and -0.0 compare equal but dump apart: each usage keeps its own.
    entries = [_user("go"), _entry("assistant", [{"type": "text", "text": "a"}]), _entry("assistant", [{"type": "text", "text": "b"}])]
    entries[1]["message"]["usage"] = {"input_tokens": 1, "costUSD": -0.0}
    entries[2]["message"]["usage"] = {"input_tokens": 1, "costUSD": 0.0}
    t = _load(tmp_path, entries)
    costs = [json.dumps(m.usage.cost_usd) for m in t.messages[1:] if m.usage is not None]
    assert costs == ["-0.0", "0.0"]


def test_the_chain_links_share_the_uuids_they_name(tmp_path: Path) -> None:
    # A parent naming the line before is that line's own uuid object; the links live until the import ends.
    entries = [_user("go"), _entry("assistant", [{"type": "text", "text": "ok"}])]
    entries[1]["parentUuid"] = entries[0]["uuid"]
    first = claude_code_import.EntryImporter("x")
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    from lab.formats.jsonio import iter_jsonl_as

    for line, entry in iter_jsonl_as(p, Entry):
        first.add(entry, line)
    assert first.chain is not None
    links = first.chain.links
    assert links[1 + claude_code_import.LINK] is links[0]


@pytest.mark.parametrize("value", ["2025-03-03Z", "2025-03-03T09:00:22.588Z", "2025-03-03T09:00:22Z ", "2025-03-03", "bad", 17, None])
def test_a_message_timestamp_is_what_parse_ts_gives(tmp_path: Path, value: Any) -> None:
    # The importer inlines parse_ts's first step per message; the result must not differ from it.
    t = _load(tmp_path, [_user("go", timestamp=value), _entry("assistant", [{"type": "text", "text": "ok"}])])
    assert repr(t.messages[0].timestamp) == repr(claude_code._ts(value))


def test_load_checks_the_result_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # sanity.check walks every message (about 0.1 s at 100 MB): detection's verdict is reused by accept.
    import importlib

    from lab.formats import load

    # ``lab.formats.detect`` is also the name of the function the package exports.
    detect = importlib.import_module("lab.formats.detect")
    calls: list[int] = []
    real = detect.check

    def counting(transcript: Transcript) -> Any:
        calls.append(len(transcript.messages))
        return real(transcript)

    monkeypatch.setattr(detect, "check", counting)
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(e) for e in [_user("go"), _entry("assistant", [{"type": "text", "text": "ok"}])]) + "\n", encoding="utf-8")
    assert len(load(p).messages) == 2
    assert calls == [2]
    calls.clear()
    assert len(load(p, format="claude_code").messages) == 2
    assert calls == [2]


def test_the_chain_is_recorded_as_links_in_file_order() -> None:
    # Five values per entry with a uuid, in one flat list; the plan's dicts are built from them only when asked.
    entries = [_user("go"), _entry("assistant", [{"type": "text", "text": "ok"}], api_id="msg_a")]
    entries[1]["parentUuid"] = entries[0]["uuid"]
    first = claude_code_import.EntryImporter("x")
    for i, e in enumerate(entries, start=1):
        first.add(e, f"line {i}")
    assert first.chain is not None
    assert first.chain.links == [
        *(entries[0]["uuid"], None, claude_code_import.USER, None, entries[0].get("timestamp")),
        *(entries[1]["uuid"], entries[0]["uuid"], claude_code_import.ASSISTANT, "msg_a", entries[1].get("timestamp")),
    ]
    assert not first.chain.plan().needed
    assert first.chain.apis == {entries[0]["uuid"]: None, entries[1]["uuid"]: "msg_a"}


# -- trusted model building ----------------------------------------------------------------


def _validated_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every block the general reader builds take the full pydantic validation, as before ``trusted``."""

    def refuse(b: dict[str, Any]) -> Any:
        raise claude_code_import._Unchecked

    monkeypatch.setattr(claude_code_import, "_BLOCKS", {kind: refuse for kind in claude_code_import._BLOCKS})


def _general_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``entry_of`` leave every content list and usage as its dicts: the general reader reads them all."""
    monkeypatch.setattr(claude_code_entry, "_content_of", lambda content: content)
    monkeypatch.setattr(claude_code_entry, "_usage_of", lambda usage: usage)


def _revalidated(t: Transcript) -> Transcript:
    """The transcript with every message validated in full from the values it holds (its set fields)."""

    def again(messages: list[Message]) -> list[Message]:
        return [Message.model_validate(m.model_dump(exclude_unset=True)) for m in messages]

    return t.model_copy(update={"messages": again(t.messages), "sidechains": {k: again(v) for k, v in t.sidechains.items()}})


def _models(t: Transcript) -> list[Any]:
    messages = list(t.messages) + [m for thread in t.sidechains.values() for m in thread]
    return [x for m in messages for x in (m, *m.content, *([m.usage] if m.usage else []))]


def _same_models(trusted: Transcript, validated: Transcript) -> None:
    assert trusted.model_dump() == validated.model_dump()
    a, b = _models(trusted), _models(validated)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert type(x) is type(y)
        assert x == y
        if not isinstance(x, (ToolUseBlock, Message)):  # a tool input (a dict) is unhashable, validated or not
            assert hash(x) == hash(y)
        assert x.model_fields_set == y.model_fields_set
        # Every field in declaration order, nothing else: what validation stores.
        assert list(x.__dict__) == list(type(x).model_fields)
    assert all(type(m.content) is tuple for m in trusted.messages)


def _generated(tmp_path: Path) -> Path:
    from lab.generator import generate_jsonl_bytes

    p = tmp_path / "generated.jsonl"
    generate_jsonl_bytes(p, 300_000, seed=3)
    return p


@pytest.mark.parametrize("source", ["generated", "grpc", "attio"])
def test_trusted_models_equal_a_full_validation(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import corpus_file

    path = _generated(tmp_path) if source == "generated" else corpus_file({"grpc": "claude-code/enterprisebench-grpc-metadata-mcp-native.jsonl", "attio": "claude-code/attio-mcp-server-session.jsonl"}[source])
    trusted = claude_code.read(path)
    assert trusted.messages
    # Every model equals the one validation makes of its values, set fields and all.
    _same_models(trusted, _revalidated(trusted))
    # And so do the general reader's, built from the same lines read as dicts.
    records = [(f"line {n}", json.loads(line)) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if line.strip()]
    _general_everywhere(monkeypatch)
    _validated_everywhere(monkeypatch)
    _same_models(trusted, claude_code.read_entries(records, file=str(path)))


@pytest.mark.parametrize(
    "block",
    [
        pytest.param({"type": "text", "text": "x", "extra": 1}, id="extra-key"),
        pytest.param({"type": "tool_use", "id": "t1", "name": "Read", "input": "x"}, id="input-not-an-object"),
        pytest.param({"type": "tool_result", "tool_use_id": "t1", "content": ["x"], "is_error": False}, id="result-content-not-text"),
        pytest.param({"type": "thinking", "thinking": "x", "signature": 3}, id="signature-not-text"),
        pytest.param({"type": "mystery"}, id="unknown-kind"),
    ],
)
def test_a_block_of_the_wrong_shape_is_never_trusted(block: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What an importer bug could hand over: the full validation refuses it and names the message.
    monkeypatch.setattr(claude_code_import, "block_dicts", lambda content, notes, where: [dict(block)])
    with pytest.raises(TranscriptError) as err:
        _load(tmp_path, [_user(_GENERAL, uuid="u-first")])
    assert err.value.where == "message u-first"
    assert "failed validation" in err.value.reason


# -- the typed line reader (claude_code_entry.Entry) ------------------------------------------------

_SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
_CORPUS_FILES = {"grpc": "claude-code/enterprisebench-grpc-metadata-mcp-native.jsonl", "attio": "claude-code/attio-mcp-server-session.jsonl"}


def _source(source: str, tmp_path: Path) -> Path:
    from tests.conftest import corpus_file

    if source == "generated":
        return _generated(tmp_path)
    if source in _CORPUS_FILES:
        return corpus_file(_CORPUS_FILES[source])
    return _SAMPLES / source


_SOURCES = ["generated", "grpc", "attio", "claude-code-compacted.jsonl", "claude-code-preview-xss.jsonl", "generated-claude-code.jsonl"]


@pytest.mark.parametrize("source", _SOURCES)
def test_lines_decoded_into_entries_import_as_the_same_lines_read_as_dicts(source: str, tmp_path: Path) -> None:
    # The fast path (each line straight into an Entry, unread fields skipped) against the plain one
    # (json.loads of each line, the dict made into an Entry): the same transcript, notes and meta.
    path = _source(source, tmp_path)
    fast = claude_code.read(path)
    with open(path, encoding="utf-8") as fh:
        records = [(f"line {n}", json.loads(line)) for n, line in enumerate(fh, start=1) if line.strip()]
    plain = claude_code.read_entries(records, file=str(path))
    assert fast.messages
    assert fast.model_dump() == plain.model_dump()
    _same_models(fast, plain)


@pytest.mark.parametrize("source", _SOURCES)
def test_every_line_decodes_to_the_entry_its_dict_makes(source: str, tmp_path: Path) -> None:
    path = _source(source, tmp_path)
    decode = msgspec.json.Decoder(Entry).decode
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    assert lines
    for line in lines:
        assert decode(line) == entry_of(json.loads(line))


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["agentId", "id", "x"]), inner, max_size=3),
    max_leaves=8,
)
_entry_keys = st.sampled_from([*Entry.__struct_fields__, "version", "gitBranch", "requestId", "mcpMeta"])


@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(_entry_keys, _json_values, max_size=8))
def test_any_record_decodes_to_its_entry_or_goes_the_dict_way(record: dict[str, Any]) -> None:
    # Whatever a record holds, the Struct decode gives what entry_of makes of its dict, or refuses the
    # line (ValidationError), which sends it down the dict path: nothing it holds is lost either way.
    raw = json.dumps(record).encode()
    try:
        decoded = msgspec.json.decode(raw, type=Entry)
    except msgspec.ValidationError:
        return
    assert decoded == entry_of(json.loads(raw))


def test_a_line_the_entry_cannot_take_still_imports(tmp_path: Path) -> None:
    # A number out of float range in a field the importer reads: msgspec refuses it, json reads it as inf.
    u = _user("go")
    a = _entry("assistant", [{"type": "text", "text": "ok"}], parent=u["uuid"], costUSD=0.5)
    a["message"]["usage"] = {"input_tokens": 3, "output_tokens": 1}
    lines = [json.dumps(u), json.dumps(a).replace('"costUSD": 0.5', '"costUSD": 1e400')]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(lines[1].encode(), type=Entry)
    t = claude_code.read(p)
    assert [message_text(m) for m in t.messages] == ["go", "ok"]
    usage = t.messages[1].usage
    assert usage is not None and usage.input_tokens == 3 and usage.cost_usd is None  # inf is no cost


@pytest.mark.parametrize("source", _SOURCES)
def test_blocks_made_from_parts_are_the_general_readers(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The Parts path (content and usage decoded into Structs, blocks built straight from them) against
    # the general reader (native_content, block_dicts, usage_fields) on every line of the same file.
    path = _source(source, tmp_path)
    fast = claude_code.read(path)
    with open(path, encoding="utf-8") as fh:
        records = [(f"line {n}", json.loads(line)) for n, line in enumerate(fh, start=1) if line.strip()]
    _general_everywhere(monkeypatch)
    general = claude_code.read_entries(records, file=str(path))
    assert fast.messages
    _same_models(fast, general)


_odd = st.one_of(st.none(), st.booleans(), st.integers(-1, 2), st.just(""), st.just(["x"]), st.just({"k": 1}))
_text = st.sampled_from(["", "x", "hi there", "<command-name>/clear</command-name>", "p"])
_parts_in_result = st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": _text}), st.just({"type": "image", "source": {"type": "base64", "data": "AAAA"}}), st.just("s"), st.just({"type": "document", "source": {"type": "text", "data": "d"}})), max_size=2)
# Blocks mostly of the shapes Parts take (so whole lists fit them), each field now and then of another
# type, now and then another kind or a stray key: every way a line can go.
_blocks = st.lists(
    st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.one_of(_text, _odd)}),
        st.fixed_dictionaries({"type": st.just("thinking"), "thinking": st.one_of(_text, _odd)}, optional={"signature": st.one_of(_text, _odd)}),
        st.fixed_dictionaries(
            {"type": st.just("tool_use"), "id": st.one_of(st.sampled_from(["t1", "t2"]), _odd), "name": st.sampled_from(["Read", "Task"]), "input": st.one_of(st.just({"prompt": "p"}), st.just({}), _odd)}
        ),
        st.fixed_dictionaries(
            {"type": st.just("tool_result"), "tool_use_id": st.one_of(st.sampled_from(["t1", "t2", "t9"]), _odd)},
            optional={"content": st.one_of(_text, _parts_in_result, _odd), "is_error": _odd, "text": _text},
        ),
        st.fixed_dictionaries({"type": st.sampled_from(["image", "redacted_thinking", "mystery", "document"])}, optional={"source": st.just({"type": "base64", "data": "AA=="}), "data": st.just("x")}),
    ),
    max_size=3,
)
_counts = st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "costUSD", "service_tier"]),
    st.one_of(st.integers(0, 10**20), st.integers(0, 10**20), st.none(), st.booleans(), st.integers(-1, 0), st.floats(0, 5, allow_nan=False), st.just("3")),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
# A fitting tool_result whose is_error is 1 (only true makes an error); a subagent prompt found by a
# tool_result's stray text key (parts_text reads any part's text).
@example(lines=[("user", [{"type": "tool_result", "tool_use_id": "t1", "is_error": 1}], None, None, False)])
@example(
    lines=[
        ("assistant", [{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "p"}}], None, None, False),
        ("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "r", "text": "p"}], None, None, True),
    ]
)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.one_of(_blocks, st.sampled_from(["", "text"])), st.one_of(st.none(), _counts), st.sampled_from([None, 0.25, True]), st.booleans()),
        min_size=1,
        max_size=6,
    )
)
def test_any_content_and_usage_import_as_the_general_reader_reads_them(lines: list[tuple[str, Any, Any, Any, bool]]) -> None:
    # Whatever blocks and usage an entry holds, the lines decoded into Structs import as the general
    # reader imports their dicts: what fits the Parts is built from them, the rest goes the dict way.
    # Sidechain lines test the prompt a subagent's thread is named by (its first user entry's text).
    import tempfile

    entries = []
    for i, (kind, content, usage, cost, side) in enumerate(lines):
        extra: dict[str, Any] = {"isSidechain": True, "agentId": "ag"} if side else {}
        e = _entry(kind, content, api_id=f"msg_{i // 2}", **extra)
        if usage is not None:
            e["message"]["usage"] = usage
        if cost is not None:
            e["costUSD"] = cost
        entries.append(e)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "s.jsonl"
        p.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
        fast = claude_code.read(p)
    records = [(f"line {n}", e) for n, e in enumerate(entries, start=1)]
    with pytest.MonkeyPatch.context() as mp:
        _general_everywhere(mp)
        general = claude_code.read_entries(records, file=str(p))
    _same_models(fast, general)
    assert fast.notes == general.notes


@pytest.mark.parametrize(
    ("usage", "cost", "expected"),
    [
        pytest.param({"input_tokens": 7, "cache_read_input_tokens": 2, "costUSD": 1}, None, (7, 0, 2, 0, 1.0), id="plain"),
        pytest.param({"input_tokens": 3.0, "output_tokens": None, "cache_read_input_tokens": True, "cache_creation_input_tokens": -1}, None, (0, 0, 0, 0, None), id="not-counts"),
        pytest.param({"input_tokens": 10**30, "costUSD": "0.5"}, None, (10**30, 0, 0, 0, None), id="huge-and-text-cost"),
        pytest.param({"output_tokens": 4, "costUSD": 9}, 0.5, (0, 4, 0, 0, 0.5), id="entry-cost-wins"),
        pytest.param({"output_tokens": 4}, True, (0, 4, 0, 0, None), id="a-bool-is-no-cost"),
    ],
)
def test_usage_counts_read_as_usage_fields_reads_them(tmp_path: Path, usage: dict[str, Any], cost: Any, expected: tuple[Any, ...]) -> None:
    a = _entry("assistant", [{"type": "text", "text": "ok"}])
    a["message"]["usage"] = usage
    if cost is not None:
        a["costUSD"] = cost
    got = _load(tmp_path, [_user("go"), a]).messages[1].usage
    assert got is not None
    assert (got.input_tokens, got.output_tokens, got.cache_read_tokens, got.cache_write_tokens, got.cost_usd) == expected
    # Whether the usage fitted UsageCounts or stayed a dict, the entry made of its dict says which way it went.
    fits = type(entry_of(a).message.usage) is UsageCounts  # type: ignore[union-attr]
    assert fits == (not any(type(v) is not int or v < 0 for k, v in usage.items() if k != "costUSD") and type(usage.get("costUSD", 0)) is int)


def test_a_repeated_uuid_sends_the_optimistic_pass_back(tmp_path: Path) -> None:
    # The optimistic first pass looks no uuid up per line: it says afterwards that one repeated, and
    # refuses to finish; the import then reads the file again with the per-line check.
    u = _user("hi")
    entries = [u, _entry("assistant", [{"type": "text", "text": "ok"}], parent=u["uuid"]), dict(u)]
    optimistic = claude_code_import.EntryImporter("x", optimistic=True)
    for i, e in enumerate(entries, start=1):
        optimistic.add(e, i)
    assert optimistic.repeated_uuids()
    with pytest.raises(RuntimeError):
        optimistic.finish()
    checked = claude_code_import.EntryImporter("x")
    for i, e in enumerate(entries, start=1):
        checked.add(e, i)
    assert not checked.repeated_uuids()
    t = _load(tmp_path, entries)
    assert [message_text(m) for m in t.messages] == ["hi", "ok"] and t.notes.skipped == {"duplicate": 1}
    again = checked.finish()
    assert again.messages == t.messages and again.notes == t.notes


def test_message_ids_are_made_unique_in_build_order(tmp_path: Path) -> None:
    # Only an id that is no entry's uuid (a line's place, a boundary's) can repeat another: each repeat
    # takes the first free #2, #3..., in the order the messages are built.
    def user(text: str, **kw: Any) -> dict[str, Any]:
        return {"type": "user", "message": {"role": "user", "content": text}, "sessionId": "s", **kw}

    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "x", "parentUuid": None, "compactMetadata": {"trigger": "auto"}}
    entries = [user("a", uuid="line2"), user("b"), user("c", uuid="x-boundary"), boundary, user("d", uuid="line2#2")]
    t = _load(tmp_path, entries)
    assert [m.id for m in t.messages] == ["line2", "line2#2", "x-boundary", "x-boundary#2", "line2#2#2"]
    assert [message_text(m) for m in t.messages][:2] == ["a", "b"]


def test_tool_ids_put_out_of_entry_order_are_flagged_in_message_order(tmp_path: Path) -> None:
    # An assistant entry merged back across a tool-result row that itself holds a tool_result: in the
    # messages its result comes before the row's, so the ids are read from the messages, as tool_pairs does.
    entries = [
        _user("go"),
        _use("t1", "msg_A"),
        _result("ghost-b"),
        _entry("assistant", [{"type": "tool_result", "tool_use_id": "ghost-a", "content": "?"}], api_id="msg_A"),
        _result("t1"),
    ]
    t = _load(tmp_path, entries)
    pairs = tool_pairs(t.messages)
    assert t.notes.orphan_tool_results == [i for i, (use, _) in pairs.items() if use is None] == ["ghost-a", "ghost-b"]
    assert t.notes.unanswered_tool_uses == []


def test_an_import_leaves_no_reference_cycle(tmp_path: Path) -> None:
    # The main thread's sink holds the message list, not the importer: once read, nothing of the
    # import waits for the cyclic collector (which would have to walk all of it).
    import gc
    import weakref

    made: list[weakref.ref[Any]] = []
    real = claude_code_import.EntryImporter.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        made.append(weakref.ref(self))

    entries = [_user("go"), _use("t1", "msg_A"), _result("t1")]
    enabled = gc.isenabled()
    gc.disable()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(claude_code_import.EntryImporter, "__init__", init)
            t = _load(tmp_path, entries)
        assert made and all(r() is None for r in made)
    finally:
        if enabled:
            gc.enable()
    assert len(t.messages) == 3


def test_a_trusted_builder_makes_what_validation_makes() -> None:
    from lab.core.messages import TextBlock, ToolResultBlock

    build = ToolResultBlock.trusted_builder("type", "tool_use_id", "content", "is_error")
    fields = {"type": "tool_result", "tool_use_id": "t1", "content": "x", "is_error": False, "compacted": None, "spill_path": None, "original_chars": None}
    a, b = build(dict(fields)), build(dict(fields))
    v = ToolResultBlock.model_validate({"type": "tool_result", "tool_use_id": "t1", "content": "x", "is_error": False})
    assert a == v and hash(a) == hash(v) and a.model_fields_set == v.model_fields_set and list(a.__dict__) == list(v.__dict__)
    # The models of one builder share their set-fields set; a copy gets its own before it changes.
    c = a.model_copy(update={"compacted": "cleared"})
    assert c.model_fields_set == v.model_fields_set | {"compacted"} and b.model_fields_set == v.model_fields_set
    with pytest.raises(ValueError):
        TextBlock.trusted_builder("type", "txt")


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


def test_a_block_whose_type_is_not_text_is_dropped_not_a_crash(tmp_path: Path) -> None:
    # native_content looked a list-valued type up in a set: TypeError before block_dicts could count it.
    u = _user("hi")
    odd = _entry("assistant", [{"type": ["text"], "text": "?"}, {"type": "text", "text": "hello"}], parent=u["uuid"])
    inner = _entry("user", [{"type": "tool_result", "tool_use_id": "t9", "content": [{"type": {"x": 1}, "text": "?"}]}], parent=odd["uuid"])
    t = _load(tmp_path, [u, odd, inner])
    assert [m.role for m in t.messages][:2] == ["user", "assistant"]
    assert message_text(t.messages[1]) == "hello"


# --- sidechains: said in the notes, listed and picked as threads -----------------------------

SIDECHAINS = Path(__file__).parent / "fixtures" / "claude_code" / "sidechains.jsonl"


def test_sidechain_records_are_counted_in_the_notes_by_thread() -> None:
    raw = _raw_entries(SIDECHAINS)
    side = [e for e in raw if e["isSidechain"]]
    agents = {e["agentId"] for e in side}
    t = claude_code.read(SIDECHAINS)
    assert len(t.sidechains) == len(agents) == 2
    (note,) = [w for w in t.notes.warnings if "sidechain records" in w]
    assert note.startswith(f"{len(side)} sidechain records in {len(agents)} subagent threads, not part of the main context")
    # The main thread holds none of them.
    side_ids = {e["uuid"] for e in side}
    assert not any(m.id.split("#")[0] in side_ids for m in t.messages)


def test_a_file_without_sidechains_has_no_such_note(tmp_path: Path) -> None:
    t = _load(tmp_path, [_user("hi"), _entry("assistant", [{"type": "text", "text": "hello"}])])
    assert not any("sidechain" in w for w in t.notes.warnings)


def test_sessions_lists_the_main_thread_and_each_subagent_thread() -> None:
    from lab.formats import load, sessions

    t = load(SIDECHAINS)
    listed = sessions(SIDECHAINS)
    assert listed[0].id == t.meta.session_id and listed[0].kind is None and listed[0].messages == len(t.messages)
    threads = {s.id: s for s in listed[1:]}
    assert set(threads) == set(t.sidechains) == {"toolu_task_1", "toolu_task_2"}
    assert {s.kind for s in threads.values()} == {"subagent"}
    assert threads["toolu_task_1"].title == "Find dead code in src/" and threads["toolu_task_1"].messages == len(t.sidechains["toolu_task_1"])
    # Each is pickable: the thread alone, a valid history of its own.
    one = load(SIDECHAINS, session="toolu_task_2")
    assert one.messages == t.sidechains["toolu_task_2"] and one.meta.session_id == "toolu_task_2" and one.sidechains == {}
    assert load(SIDECHAINS, session=t.meta.session_id or "").messages == t.messages
    assert lab.replay(one, "minicode", window=32000).invalid_requests == 0
    with pytest.raises(TranscriptError, match="with 2 subagent thread"):
        load(SIDECHAINS, session="toolu_nope")
