"""HTTP logs of model requests: claude-trace JSONL and proxy dumps, streamed and not, for three APIs.

The fixtures follow the shapes found in public sources: claude-trace
(badlogic/lemmy, apps/claude-trace/src/types.ts ``RawPair``, interceptor.ts:
``{request: {timestamp, method, url, headers, body}, response: {timestamp,
status_code, headers, body | body_raw | events}, logged_at}``, ``response``
null for an orphaned request); the Anthropic Messages SSE events
(message_start, content_block_start/delta/stop with text_delta,
input_json_delta, thinking_delta and signature_delta, message_delta,
message_stop, ping); Chat Completions ``chat.completion.chunk`` deltas
(tool_calls joined by ``index``, a final usage chunk with empty choices,
``[DONE]``); Responses stream events (response.output_item.done,
response.completed carrying ``output`` and ``usage``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lab
from lab.core.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, tool_pairs
from lab.errors import TranscriptError
from lab.formats import detect, dump, load
from lab.formats.http import http_log
from lab.formats.detect import scores
from lab.formats.jsonio import read_file_head
from tests.conftest import CORPUS_FILES, SAMPLES, corpus_id

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages?beta=true"
CHAT_URL = "http://localhost:4000/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"
SECRETS = ("sk-ant-SECRET-0123456789", "sk-SECRET-abcdef", "session=COOKIESECRET", "QUERYSECRET")
T0 = 1_750_000_000.0


def _pair(url: str, request_body: Any, /, *, t: float, status: int = 200, **response: Any) -> dict[str, Any]:
    """One claude-trace record; every one carries keys in its headers and URL that must never leak."""
    headers = {"x-api-key": SECRETS[0], "authorization": f"Bearer {SECRETS[1]}", "content-type": "application/json"}
    return {
        "request": {"timestamp": T0 + t, "method": "POST", "url": f"{url}{'&' if '?' in url else '?'}key={SECRETS[3]}", "headers": headers, "body": request_body},
        "response": {"timestamp": T0 + t + 2, "status_code": status, "headers": {"set-cookie": SECRETS[2], "request-id": "req_1"}, **response},
        "logged_at": "2025-06-15T15:06:40.000Z",
    }


def _write(tmp_path: Path, records: list[Any], name: str = "log-2025-06-15-15-06-40.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return p


def _not_read(t: Transcript) -> tuple[int, int]:
    """(earlier requests of the conversation, requests of other conversations) as the notes count them."""
    import re

    (line,) = [d for d in t.notes.dropped if d.startswith("not read as messages")] or ["not read as messages"]
    earlier = re.search(r"(\d+) earlier request", line)
    side = re.search(r"(\d+) request\(s\) of other conversations", line)
    return (int(earlier.group(1)) if earlier else 0, int(side.group(1)) if side else 0)


def _leaks(t: Transcript) -> list[str]:
    outputs = [t.model_dump_json(), json.dumps(dump(t)), json.dumps(dump(t, to="anthropic")), json.dumps(dump(t, to="openai"))]
    return [s for s in SECRETS for out in outputs if s in out]


# -- Anthropic Messages -----------------------------------------------------------------------

SYSTEM = [{"type": "text", "text": "You are Claude Code, a coding agent.", "cache_control": {"type": "ephemeral"}}]
TOOLS = [
    {"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
    {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
    {"name": "Edit", "description": "Edit a file", "input_schema": {"type": "object"}},
]
U0 = {"role": "user", "content": [{"type": "text", "text": "Fix the failing test in calc.py"}]}
A1 = {"role": "assistant", "content": [{"type": "text", "text": "Let me read it."}, {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "calc.py"}}]}
U2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "def add(a, b):\n    return a - b\n"}]}
A3 = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_02", "name": "Bash", "input": {"command": "pytest -q"}}]}
U4 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "1 failed", "is_error": True}]}
EDIT = {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
A5 = [{"type": "text", "text": "add subtracts; fixing it."}, {"type": "tool_use", "id": "toolu_03", "name": "Edit", "input": EDIT}]
USAGE = [
    {"input_tokens": 120, "output_tokens": 30, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 900},
    {"input_tokens": 60, "output_tokens": 20, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 150},
    {"input_tokens": 40, "output_tokens": 57, "cache_read_input_tokens": 1050, "cache_creation_input_tokens": 80},
]


def _cached(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Claude Code marks the newest message for caching, so the same message differs between requests.
    *head, last = messages
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return [*head, {**last, "content": blocks}]


def _body(messages: list[dict[str, Any]], system: Any = SYSTEM, model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return {"model": model, "max_tokens": 32000, "stream": True, "system": system, "tools": TOOLS, "messages": _cached(messages)}


def _answer(content: list[dict[str, Any]], usage: dict[str, int]) -> dict[str, Any]:
    return {"id": "msg_x", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": content, "stop_reason": "tool_use", "usage": usage}


def _anthropic_log(final_response: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        _pair(ANTHROPIC_URL, _body([U0]), t=0, body=_answer(A1["content"], USAGE[0])),
        _pair(ANTHROPIC_URL, _body([U0, A1, U2]), t=10, body=_answer(A3["content"], USAGE[1])),
        _pair(ANTHROPIC_URL, _body([U0, A1, U2, A3, U4]), t=20, **final_response),
    ]


def _stream_events() -> list[dict[str, Any]]:
    start_usage = {"input_tokens": 40, "cache_read_input_tokens": 1050, "cache_creation_input_tokens": 80, "output_tokens": 1}
    return [
        {"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "usage": start_usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The test expects 3; "}},
        {"type": "ping"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "add must add."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkA"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "add subtracts; "}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "fixing it."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_03", "name": "Edit", "input": {}}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"file_path": "ca'}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": 'lc.py", "old_string": "a - b", '}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '"new_string": "a + b"}'}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 57}},
        {"type": "message_stop"},
    ]


def _sse(events: list[dict[str, Any]]) -> list[str]:
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]


STREAM_SPELLINGS = {
    "events as claude-trace dicts": lambda ev: {"events": [{"event": e["type"], "data": e, "timestamp": "2025-06-15T15:07:00Z"} for e in ev]},
    "events as bare payloads": lambda ev: {"events": ev},
    "events as raw SSE strings": lambda ev: {"events": _sse(ev)},
    "body_raw SSE text": lambda ev: {"body_raw": "".join(_sse(ev))},
    "body as SSE text": lambda ev: {"body": ": keep-alive\n\n" + "".join(_sse(ev))},
}


def _assert_anthropic_conversation(t: Transcript) -> None:
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert t.meta.source_format == "http_log" and t.meta.model == "claude-sonnet-4-5"
    assert [s.name for s in t.tools] == ["Read", "Bash", "Edit"]
    last = t.messages[-1]
    uses = [b for b in last.content if isinstance(b, ToolUseBlock)]
    assert [(u.id, u.name, u.input) for u in uses] == [("toolu_03", "Edit", EDIT)]
    assert any(isinstance(b, TextBlock) and b.text == "add subtracts; fixing it." for b in last.content)
    # Every assistant turn has the usage its own response reported.
    got = [(m.usage.input_tokens, m.usage.output_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens) for m in t.messages if m.role == "assistant" and m.usage]
    assert got == [(u["input_tokens"], u["output_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"]) for u in USAGE]
    assert _not_read(t)[0] == 2 and "earlier_request" not in t.notes.skipped


def test_anthropic_unstreamed_log(tmp_path: Path) -> None:
    t = load(_write(tmp_path, _anthropic_log({"body": _answer(A5, USAGE[2])})))
    _assert_anthropic_conversation(t)
    results = [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(r.tool_use_id, r.is_error) for r in results] == [("toolu_01", False), ("toolu_02", True)]
    # Times come from the log: a user turn when first sent, an answer when its response arrived.
    stamps = [m.timestamp.timestamp() if m.timestamp else None for m in t.messages[1:]]
    assert stamps == [T0, T0 + 2, T0 + 10, T0 + 12, T0 + 20, T0 + 22]


@pytest.mark.parametrize("spell", list(STREAM_SPELLINGS.values()), ids=list(STREAM_SPELLINGS))
def test_anthropic_streamed_response_is_assembled(tmp_path: Path, spell: Any) -> None:
    t = load(_write(tmp_path, _anthropic_log(spell(_stream_events()))))
    _assert_anthropic_conversation(t)
    thinking = [b for b in t.messages[-1].content if isinstance(b, ThinkingBlock)]
    assert [(b.thinking, b.signature) for b in thinking] == [("The test expects 3; add must add.", "EqQBCkYIBxgCKkA")]
    assert not t.notes.warnings


def test_tool_pairs_kept_except_the_last_turn(tmp_path: Path) -> None:
    t = load(_write(tmp_path, _anthropic_log({"body": _answer(A5, USAGE[2])})))
    pairs = tool_pairs(t.messages)
    assert {k: (u is not None, r is not None) for k, (u, r) in pairs.items()} == {
        "toolu_01": (True, True), "toolu_02": (True, True), "toolu_03": (True, False),
    }
    assert t.notes.unanswered_tool_uses == []  # anthropic bodies do not track pending calls; the pair map above does


def test_side_requests_and_other_endpoints_are_counted_not_imported(tmp_path: Path) -> None:
    title = {"model": "claude-3-5-haiku", "max_tokens": 512, "system": [{"type": "text", "text": "Write a 5-word title."}], "messages": [{"role": "user", "content": "Fix the failing test in calc.py"}]}
    quota = {"model": "claude-3-5-haiku", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    log[1:1] = [
        _pair(ANTHROPIC_URL, quota, t=1, body=_answer([{"type": "text", "text": "QUOTA-REPLY"}], {"input_tokens": 8, "output_tokens": 1})),
        _pair(ANTHROPIC_URL, title, t=2, body=_answer([{"type": "text", "text": "TITLE-REPLY"}], {"input_tokens": 50, "output_tokens": 6})),
        _pair("https://api.anthropic.com/v1/messages/count_tokens?beta=true", {"messages": [U0]}, t=3, body={"input_tokens": 99}),
        _pair("https://statsig.anthropic.com/v1/rgstr", {"events": []}, t=4, body={"success": True}),
    ]
    t = load(_write(tmp_path, log))
    _assert_anthropic_conversation(t)
    text = t.model_dump_json()
    assert "QUOTA-REPLY" not in text and "TITLE-REPLY" not in text and "5-word" not in text
    assert _not_read(t) == (2, 2) and t.notes.skipped["non_model_request"] == 2
    assert "2 side requests" in (t.meta.title or "")


def test_headers_and_url_keys_never_leak(tmp_path: Path) -> None:
    for final in ({"body": _answer(A5, USAGE[2])}, {"body_raw": "".join(_sse(_stream_events()))}):
        log = _anthropic_log(final) + [_pair(ANTHROPIC_URL, _body([U0, A1, U2, A3, U4, {"role": "assistant", "content": A5}, {"role": "user", "content": "go on"}]), t=30, status=401, body={"type": "error", "error": {"type": "authentication_error", "message": f"Incorrect API key provided: {SECRETS[1]}"}})]
        t = load(_write(tmp_path, log))
        assert t.notes.skipped["error_response"] == 1
        assert _leaks(t) == []
        assert not any(s in w for s in SECRETS for w in t.notes.warnings)
        assert any("HTTP 401" in w and w.endswith("authentication refused") for w in t.notes.warnings)


def test_key_like_words_are_cut_from_error_messages(tmp_path: Path) -> None:
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    echo = {"error": {"message": f"upstream rejected Bearer {SECRETS[1]} for sk-live_0123456789abc"}}
    log.append(_pair(ANTHROPIC_URL, _body([U0, A1, U2, A3, U4, {"role": "assistant", "content": A5}, {"role": "user", "content": "go"}]), t=30, status=502, body=echo))
    t = load(_write(tmp_path, log))
    (warning,) = [w for w in t.notes.warnings if "HTTP 502" in w]
    assert "upstream rejected [key] for [key]" in warning and _leaks(t) == []


def test_error_responses_are_counted_with_a_warning(tmp_path: Path) -> None:
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    longer = _body([U0, A1, U2, A3, U4, {"role": "assistant", "content": A5}, {"role": "user", "content": "continue"}])
    too_long = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210351 tokens > 200000 maximum"}}
    log.append(_pair(ANTHROPIC_URL, longer, t=30, status=400, body=too_long))
    log.append(_pair(ANTHROPIC_URL, longer, t=31, status=529, body=json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})))
    t = load(_write(tmp_path, log))
    assert t.notes.skipped["error_response"] == 2
    ptl = [w for w in t.notes.warnings if "HTTP 400" in w]
    assert len(ptl) == 1 and "prompt is too long" in ptl[0] and "too long)" in ptl[0] and "/v1/messages" in ptl[0] and "line 4" in ptl[0]
    assert any("HTTP 529" in w and "Overloaded" in w for w in t.notes.warnings)
    # The refused request is the longest: its history is the conversation, with no answer appended.
    assert t.messages[-1].role == "user" and t.messages[-2].usage is not None and t.messages[-2].usage.output_tokens == 57


def test_unknown_lines_skipped_and_a_cut_last_line_warned(tmp_path: Path) -> None:
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    p = tmp_path / "log.jsonl"
    lines = [json.dumps(r) for r in log]
    lines.insert(1, json.dumps({"type": "session_note", "text": "hello"}))
    lines.insert(2, json.dumps({"request": {"url": ANTHROPIC_URL, "body": "{not json"}, "response": None}))
    p.write_text("\n".join(lines) + '\n{"request": {"url": "' + ANTHROPIC_URL, encoding="utf-8")
    t = load(p)
    _assert_anthropic_conversation(t)
    assert t.notes.skipped["unknown_record"] == 1 and t.notes.skipped["unreadable_body"] == 1
    assert any("cut off" in w for w in t.notes.warnings)


def test_orphaned_request_without_response(tmp_path: Path) -> None:
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    log[-1] = {**log[-1], "response": None, "note": "ORPHANED_REQUEST - No matching response received"}
    t = load(_write(tmp_path, log))
    assert t.messages[-1].role == "user"
    assert "1 model requests have no recorded response" in t.notes.warnings


@pytest.mark.parametrize("container", ["array", "rawPairs", "string bodies", "one record"])
def test_other_containers(tmp_path: Path, container: str) -> None:
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    p = tmp_path / "dump.json"
    if container == "array":
        p.write_text(json.dumps(log, indent=2), encoding="utf-8")
    elif container == "rawPairs":
        p.write_text(json.dumps({"rawPairs": log, "timestamp": "x"}), encoding="utf-8")
    elif container == "string bodies":
        for rec in log:
            rec["request"]["body"] = json.dumps(rec["request"]["body"])
            rec["response"]["body"] = json.dumps(rec["response"]["body"])
        p = _write(tmp_path, log)
    else:
        p.write_text(json.dumps({"request": log[-1]["request"], "response": log[-1]["response"]}, indent=2), encoding="utf-8")
    assert detect(p) == "http_log"
    t = load(p)
    assert t.messages[-1].content[-1] == ToolUseBlock(id="toolu_03", name="Edit", input=EDIT)
    if container != "one record":
        _assert_anthropic_conversation(t)


def test_bedrock_event_stream(tmp_path: Path) -> None:
    import base64

    chunks = "".join(f'\x00\x00\x01event{{"bytes":"{base64.b64encode(json.dumps(e).encode()).decode()}","p":"ab"}}' for e in _stream_events())
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-v1:0/invoke-with-response-stream"
    log = [_pair(url, {k: v for k, v in rec["request"]["body"].items() if k != "model"}, t=i, **({"body_raw": chunks} if i == 2 else {"body": rec["response"]["body"]})) for i, rec in enumerate(_anthropic_log({"body": {}}))]
    t = load(_write(tmp_path, log))
    _assert_anthropic_conversation(t)


# -- OpenAI Chat Completions ------------------------------------------------------------------

CHAT_TOOLS = [{"type": "function", "function": {"name": "run", "description": "Run a shell command", "parameters": {"type": "object"}}}]
CHAT = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Where am I and what is here?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "run", "arguments": '{"cmd": "hostname"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "devbox"},
]
CHAT_USAGE = [{"prompt_tokens": 300, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 0}}, {"prompt_tokens": 340, "completion_tokens": 25, "prompt_tokens_details": {"cached_tokens": 256}}]


def _chat_log(final_response: dict[str, Any]) -> list[dict[str, Any]]:
    first = {"object": "chat.completion", "model": "gpt-4.1", "choices": [{"index": 0, "message": CHAT[2], "finish_reason": "tool_calls"}], "usage": CHAT_USAGE[0]}
    return [
        _pair(CHAT_URL, {"model": "gpt-4.1", "messages": CHAT[:2], "tools": CHAT_TOOLS}, t=0, body=first),
        _pair(CHAT_URL, {"model": "gpt-4.1", "messages": CHAT, "tools": CHAT_TOOLS, "stream": True}, t=5, **final_response),
    ]


def _chat_chunks() -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4.1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def call(index: int, args: str, **first: str) -> dict[str, Any]:
        fn = {"arguments": args, **({"name": first["name"]} if "name" in first else {})}
        return {"index": index, **({"id": first["id"], "type": "function"} if "id" in first else {}), "function": fn}

    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Running both."}),
        chunk({"tool_calls": [call(0, '{"cmd":', id="call_2", name="run")]}),
        chunk({"tool_calls": [call(1, '{"cmd": "ls"}', id="call_3", name="run")]}),
        chunk({"tool_calls": [call(0, ' "pwd"}')]}),
        chunk({}, "tool_calls"),
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4.1", "choices": [], "usage": CHAT_USAGE[1]},
    ]


def _assert_chat(t: Transcript) -> None:
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert [s.name for s in t.tools] == ["run"]
    first, last = t.messages[2], t.messages[-1]
    assert first.usage is not None and (first.usage.input_tokens, first.usage.output_tokens) == (300, 12)
    assert last.usage is not None and (last.usage.input_tokens, last.usage.cache_read_tokens, last.usage.output_tokens) == (84, 256, 25)
    assert _not_read(t) == (1, 0)


def test_chat_completions_unstreamed(tmp_path: Path) -> None:
    final = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "You are on devbox."}}], "usage": CHAT_USAGE[1]}
    t = load(_write(tmp_path, _chat_log({"body": final})))
    _assert_chat(t)
    assert t.messages[-1].content == (TextBlock(text="You are on devbox."),)
    assert tool_pairs(t.messages)["call_1"] == (2, 3)


def test_chat_completions_streamed_tool_call_deltas(tmp_path: Path) -> None:
    raw = "".join(f"data: {json.dumps(c)}\n\n" for c in _chat_chunks()) + "data: [DONE]\n\n"
    t = load(_write(tmp_path, _chat_log({"body_raw": raw})))
    _assert_chat(t)
    uses = [b for b in t.messages[-1].content if isinstance(b, ToolUseBlock)]
    assert [(u.id, u.name, u.input) for u in uses] == [("call_2", "run", {"cmd": "pwd"}), ("call_3", "run", {"cmd": "ls"})]
    assert t.messages[-1].content[0] == TextBlock(text="Running both.")
    assert sorted(t.notes.unanswered_tool_uses) == ["call_2", "call_3"]
    assert _leaks(t) == []


# -- OpenAI Responses -------------------------------------------------------------------------

R_USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files"}]}
R_REASON = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Use ls."}]}
R_CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "shell", "arguments": '{"cmd": "ls"}'}
R_OUT = {"type": "function_call_output", "call_id": "call_a", "output": "a.py\nb.py"}
R_MSG = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Two files: a.py and b.py."}]}
R_USAGE = [{"input_tokens": 500, "output_tokens": 40, "input_tokens_details": {"cached_tokens": 0}}, {"input_tokens": 560, "output_tokens": 15, "input_tokens_details": {"cached_tokens": 512}}]


def _responses_log(final_response: dict[str, Any]) -> list[dict[str, Any]]:
    body = {"model": "gpt-5-codex", "instructions": "You are Codex.", "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]}
    first = {"id": "resp_1", "object": "response", "status": "completed", "output": [R_REASON, R_CALL], "usage": R_USAGE[0]}
    return [
        _pair(RESPONSES_URL, {**body, "input": [R_USER]}, t=0, body=first),
        _pair(RESPONSES_URL, {**body, "input": [R_USER, R_REASON, R_CALL, R_OUT], "stream": True}, t=5, **final_response),
    ]


def _assert_responses(t: Transcript) -> None:
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert t.messages[0].content == (TextBlock(text="You are Codex."),)
    assert t.messages[-1].content == (TextBlock(text="Two files: a.py and b.py."),)
    first, last = t.messages[2], t.messages[-1]
    assert isinstance(first.content[0], ThinkingBlock) and isinstance(first.content[1], ToolUseBlock)
    assert first.usage is not None and (first.usage.input_tokens, first.usage.output_tokens) == (500, 40)
    assert last.usage is not None and (last.usage.input_tokens, last.usage.cache_read_tokens) == (48, 512)
    assert tool_pairs(t.messages)["call_a"] == (2, 3)
    assert t.meta.model == "gpt-5-codex" and [s.name for s in t.tools] == ["shell"]


def test_responses_unstreamed(tmp_path: Path) -> None:
    final = {"id": "resp_2", "object": "response", "status": "completed", "output": [R_MSG], "usage": R_USAGE[1]}
    t = load(_write(tmp_path, _responses_log({"body": final})))
    _assert_responses(t)


def _responses_events(completed: bool) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_2", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {**R_MSG, "content": [], "status": "in_progress"}},
        {"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Two files"},
        {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": R_MSG},
    ]
    if completed:
        events.append({"type": "response.completed", "sequence_number": 4, "response": {"id": "resp_2", "status": "completed", "output": [R_MSG], "usage": R_USAGE[1]}})
    return events


def test_responses_streamed(tmp_path: Path) -> None:
    events = _responses_events(completed=True)
    t = load(_write(tmp_path, _responses_log({"events": [{"event": e["type"], "data": json.dumps(e)} for e in events]})))
    _assert_responses(t)
    assert not t.notes.warnings


def test_responses_stream_cut_before_completed_keeps_finished_items(tmp_path: Path) -> None:
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in _responses_events(completed=False))
    t = load(_write(tmp_path, _responses_log({"body_raw": raw})))
    assert t.messages[-1].content == (TextBlock(text="Two files: a.py and b.py."),) and t.messages[-1].usage is None
    assert any("before response.completed" in w for w in t.notes.warnings)


# -- errors, detection, replay ----------------------------------------------------------------


@pytest.mark.parametrize(
    "content, match",
    [
        ("this is not json\n", "not JSON|unknown"),
        (json.dumps(_pair("https://statsig.anthropic.com/v1/rgstr", {}, t=0, body={})) + "\n" + json.dumps({"a": 1}) + "\n", "no model request"),
        ('{"request": {"url": "' + ANTHROPIC_URL + '", "body": {"messages": []}}}\n{"oops": \n', "not JSON"),
    ],
    ids=["text", "no model request", "broken line"],
)
def test_garbage_raises_transcript_error(tmp_path: Path, content: str, match: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(TranscriptError, match=match) as err:
        load(p, format="http_log")
    assert err.value.file == str(p)


def test_a_malformed_message_names_its_line(tmp_path: Path) -> None:
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    log[-1]["request"]["body"]["messages"][1] = "not a message"
    with pytest.raises(TranscriptError) as err:
        load(_write(tmp_path, log))
    assert err.value.where is not None and "line 3" in err.value.where and "messages[1]" in err.value.where


def test_forcing_the_format_on_another_file_fails_clearly(tmp_path: Path) -> None:
    p = tmp_path / "req.json"
    p.write_text(json.dumps({"model": "claude", "system": "s", "messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8")
    with pytest.raises(TranscriptError, match="no model request"):
        load(p, format="http_log")


def test_detection_picks_http_log_for_every_fixture(tmp_path: Path) -> None:
    logs = {
        "anthropic": _anthropic_log({"body_raw": "".join(_sse(_stream_events()))}),
        "chat": _chat_log({"events": _chat_chunks()}),
        "responses": _responses_log({"events": _responses_events(True)}),
        "telemetry first": [_pair("https://statsig.anthropic.com/v1/rgstr", {}, t=0, body={})] + _chat_log({"events": _chat_chunks()}),
    }
    for name, log in logs.items():
        p = _write(tmp_path, log, f"{name}.jsonl")
        ranked = scores(read_file_head(p))
        assert detect(p) == "http_log", (name, ranked)
        assert sorted(ranked.values())[-2] < ranked["http_log"], name
    big = tmp_path / "big.json"
    pad = "x" * 1_100_000  # past the probe's whole-document limit: detection reads only the head
    big.write_text(json.dumps(_anthropic_log({"body": _answer([{"type": "text", "text": pad}], USAGE[2])})), encoding="utf-8")
    assert detect(big) == "http_log"


@pytest.mark.parametrize("path", CORPUS_FILES + sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md" and "claude-trace" not in p.name), ids=lambda p: corpus_id(p) if p in CORPUS_FILES else p.name)
def test_does_not_claim_other_files(path: Path) -> None:
    assert http_log.sniff(read_file_head(path)) == 0


def test_sample_session_imports_and_replays() -> None:
    t = load(SAMPLES / "claude-trace-sample.jsonl")
    assert detect(SAMPLES / "claude-trace-sample.jsonl") == "http_log"
    assert _not_read(t)[1] >= 1 and t.notes.skipped.get("non_model_request", 0) >= 1
    assistants = [m for m in t.messages if m.role == "assistant"]
    assert len(assistants) >= 4 and all(m.usage is not None for m in assistants)
    pairs = tool_pairs(t.messages)
    assert len(pairs) >= 4 and all(u is not None and r is not None for u, r in pairs.values())
    report = lab.replay(t, "minicode", window=32000)
    assert len(report.df) == len(assistants) and report.invalid_requests == 0


def test_replay_of_an_imported_log_is_valid(tmp_path: Path) -> None:
    t = load(_write(tmp_path, _anthropic_log(STREAM_SPELLINGS["body_raw SSE text"](_stream_events()))))
    report = lab.replay(t, "minicode", window=32000)
    assert len(report.df) == 3 and report.invalid_requests == 0


# -- a client that compacted (Claude Code) ----------------------------------------------------

ASK = {"role": "user", "content": [{"type": "text", "text": "Your task is to create a detailed summary of the conversation so far, paying close attention to..."}]}
SUMMARY_TEXT = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below: SUMMARY-OF-CALC"
CONT = {"role": "user", "content": [{"type": "text", "text": SUMMARY_TEXT}]}
B1 = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_09", "name": "Bash", "input": {"command": "pytest -q"}}]}
B2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_09", "content": "1 passed"}]}
U6 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_03", "content": "calc.py edited"}]}


def _compacted_log(long_tail: bool) -> list[dict[str, Any]]:
    """Three requests of the first thread, the compaction request, then the continued thread (long or short)."""
    log = _anthropic_log({"body": _answer(A5, USAGE[2])})
    # Claude Code compacts before it sends the edit's result on: that result is the history's last message.
    before = [U0, A1, U2, A3, U4, {"role": "assistant", "content": A5}, U6]
    log.append(_pair(ANTHROPIC_URL, _body([*before, ASK]), t=30, body=_answer([{"type": "text", "text": "SUMMARY-OF-CALC"}], USAGE[0])))
    steps = [m for i in range(6) for m in ({"role": "assistant", "content": [{"type": "text", "text": f"step {i}"}]}, {"role": "user", "content": f"go on {i}"})]
    tail = [CONT, B1, B2, *(steps if long_tail else [])]
    log.append(_pair(ANTHROPIC_URL, _body([CONT]), t=40, body=_answer(B1["content"], USAGE[1])))
    log.append(_pair(ANTHROPIC_URL, _body(list(tail)), t=50, body=_answer([{"type": "text", "text": "All green."}], USAGE[2])))
    return log


@pytest.mark.parametrize("long_tail", [False, True], ids=["compaction-request-longest", "continued-thread-longest"])
def test_a_compacted_session_keeps_both_threads_around_a_boundary(tmp_path: Path, long_tail: bool) -> None:
    from lab.replayer.recorded import apply_recorded, find_recorded

    t = load(_write(tmp_path, _compacted_log(long_tail)))
    texts = [" ".join(b.text for b in m.content if isinstance(b, TextBlock)) for m in t.messages]
    marker = next(i for i, m in enumerate(t.messages) if m.tag == "boundary")
    assert t.messages[marker].boundary is not None and t.messages[marker].boundary.strategy == "claude_code_compact"
    # Before the marker: the first thread, without the compaction's instruction or the summary it got back.
    assert "Fix the failing test in calc.py" in texts[1] and "add subtracts; fixing it." in " ".join(texts[:marker])
    assert not any("create a detailed summary" in x for x in texts)
    assert t.messages[marker + 1].tag == "summary" and texts[marker + 1] == SUMMARY_TEXT
    assert texts[-1] == "All green." and sum(m.role == "system" and m.tag is None for m in t.messages) == 1
    assert "1 compaction," in (t.meta.title or "")
    found = find_recorded(t)
    assert [(c.index, c.agent, c.action) for c in found] == [(marker, "Claude Code", "undone")]
    raw, _, _ = apply_recorded(t, "undo")
    assert not any(m.tag in ("boundary", "summary") for m in raw.messages) and len(raw.messages) == len(t.messages) - 2
    assert "calc.py edited" in " ".join(str(b) for m in raw.messages for b in m.content)
    assert lab.replay(t, "minicode", window=32000).invalid_requests == 0


def test_responses_that_continue_a_stored_response_are_read_whole(tmp_path: Path) -> None:
    # The client sends only the new items and names the response they follow; both requests are in the log.
    log = _responses_log({"body": {"id": "resp_2", "object": "response", "status": "completed", "output": [R_MSG], "usage": R_USAGE[1]}})
    log[1]["request"]["body"] = {**log[1]["request"]["body"], "input": [R_OUT], "previous_response_id": "resp_1"}
    t = load(_write(tmp_path, log))
    _assert_responses(t)
    assert not any("previous_response_id" in w for w in t.notes.warnings)
    assert _not_read(t) == (1, 0)


def test_a_stored_response_missing_from_the_log_is_warned(tmp_path: Path) -> None:
    log = _responses_log({"body": {"id": "resp_2", "object": "response", "status": "completed", "output": [R_MSG], "usage": R_USAGE[1]}})
    log[1]["request"]["body"] = {**log[1]["request"]["body"], "input": [R_OUT], "previous_response_id": "resp_0"}
    t = load(_write(tmp_path, log[1:]))
    assert any("previous_response_id" in w and "not in this log" in w for w in t.notes.warnings)


# --- found by fuzzing (test_fuzz_importers.py) ------------------------------------------------------


def test_a_stream_event_whose_type_is_not_text_is_skipped_and_counted(tmp_path: Path) -> None:
    # Anthropic and Responses streams looked a list-valued event type up in a set: TypeError.
    anthropic_events = [*_stream_events()[:-1], {"type": ["ping"]}, _stream_events()[-1]]
    t = http_log.read(_write(tmp_path, _anthropic_log({"events": [{"event": "x", "data": json.dumps(e)} for e in anthropic_events]})))
    _assert_anthropic_conversation(t)
    assert t.notes.skipped.get("sse:invalid") == 1
    responses_events = [{"type": ["response.completed"], "response": {}}, *_responses_events(completed=True)]
    t = http_log.read(_write(tmp_path, _responses_log({"events": [{"event": "x", "data": json.dumps(e)} for e in responses_events]})))
    _assert_responses(t)
    assert t.notes.skipped.get("sse:invalid") == 1


# -- a log of several conversations (two clients, side requests) --------------------------------------

MIXED = Path(__file__).parent / "fixtures" / "http_log" / "claude-trace-mixed.jsonl"


def _mixed() -> list[dict[str, Any]]:
    return [json.loads(line) for line in MIXED.read_text(encoding="utf-8").splitlines()]


def test_the_longest_conversation_is_read_not_the_newest_side_request() -> None:
    records = _mixed()
    newest = records[-1]["request"]["body"]["messages"]
    main = max((r["request"]["body"] for r in records if r["request"]["body"].get("tools")), key=lambda b: len(b["messages"]))
    # The shape that lost the main conversation: the newest request (a title) is as long as the main one.
    assert len(newest) == len(main["messages"])
    t = load(MIXED)
    uses = [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert len(uses) == 6 and all(u is not None and r is not None for u, r in tool_pairs(t.messages).values())
    assert t.messages[1].role == "user" and "tests in calc/ fail" in str(t.messages[1].content)
    assert "title generator" not in t.model_dump_json(include={"messages"})
    assert _not_read(t) == (1, len(records) - 2) and not t.notes.skipped
    (note,) = [w for w in t.notes.warnings if "conversations" in w]
    assert "holds 7 conversations" in note and "read the longest, '2'" in note and "--session ID" in note
    assert lab.replay(t, "minicode", window=32000).invalid_requests == 0


def test_every_conversation_is_listed_and_pickable() -> None:
    from lab.formats import sessions

    listed = {s.id: s for s in sessions(MIXED)}
    assert sorted(listed) == [str(k) for k in range(7)]
    # Claude Code's main conversation and opencode's are sessions; one-shot requests without tools are side requests.
    assert {k for k, s in listed.items() if s.kind is None} == {"2", "3"}
    assert {s.kind for k, s in listed.items() if k not in ("2", "3")} == {"side request"}
    assert listed["2"].messages == 4 and listed["2"].title == "Find why the tests in calc/ fail and fix them."
    assert listed["6"].title == "Generate a title for this conversation:" and listed["6"].messages == 4
    assert listed["6"].updated is not None and listed["6"].updated > listed["2"].updated  # type: ignore[operator]
    title = load(MIXED, session="6")
    assert [m.role for m in title.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert "Docstring for calc.add" in str(title.messages[-1].content)
    opencode = load(MIXED, session="3")
    assert "opencode" in str(opencode.messages[0].content) and any("read as asked, '3'" in w for w in opencode.notes.warnings)
    with pytest.raises(TranscriptError, match=r"no session '9' in this HTTP log.*7 session ids"):
        load(MIXED, session="9")


def test_a_batch_reads_each_conversation_and_leaves_side_requests_out() -> None:
    from lab.formats.session_choice import read_each, several

    found = several(MIXED)
    assert found is not None and [s.id for s in found.sessions] == ["2", "3"] and found.side == 5
    assert "left out: 5 side request(s)" in found.describe(MIXED.name)
    read = {info.id: t for info, t in read_each(MIXED, found.reader, found.sessions)}
    assert all(isinstance(t, Transcript) for t in read.values())


def test_a_log_of_one_conversation_lists_one_session(tmp_path: Path) -> None:
    from lab.formats import sessions

    p = _write(tmp_path, _anthropic_log({"body": _answer(A5, USAGE[2])}))
    (only,) = sessions(p)
    assert (only.id, only.kind, only.messages) == ("0", None, 6)
    assert load(p, session="0").messages == load(p).messages
    assert not any("conversations" in w for w in load(p).notes.warnings)


def test_a_long_log_is_no_misread(tmp_path: Path) -> None:
    # Every request of a long conversation but the last is an earlier request: none is a skipped record.
    history: list[dict[str, Any]] = [U0]
    log = []
    for i in range(30):
        log.append(_pair(ANTHROPIC_URL, _body(list(history)), t=10 * i, body=_answer([{"type": "text", "text": f"step {i}"}], USAGE[0])))
        log.append(_pair(ANTHROPIC_URL, {"model": "claude-3-5-haiku", "max_tokens": 1, "messages": [{"role": "user", "content": f"quota {i}"}]}, t=10 * i + 1,
                         body=_answer([{"type": "text", "text": "ok"}], USAGE[0])))
        history += [{"role": "assistant", "content": [{"type": "text", "text": f"step {i}"}]}, {"role": "user", "content": f"go on {i}"}]
    t = load(_write(tmp_path, log))
    assert len(t.messages) == 2 * 30 + 1 and " ".join(b.text for b in t.messages[-1].content if isinstance(b, TextBlock)) == "step 29"
    assert _not_read(t) == (29, 30) and not t.notes.skipped
    from lab.formats.sanity import misread_warnings

    assert misread_warnings(t.notes) == []
