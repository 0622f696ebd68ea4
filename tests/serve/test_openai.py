"""The official OpenAI SDK, sync and async, streamed and not: Chat Completions and Responses compacted (summaries and recovery included)."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from lab.core.validate import openai_problems
from lab.formats.openai.openai_chat import from_messages
from tests.serve.conversation import BIG, openai_history

pytestmark = pytest.mark.timeout(60)


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test-SECRET-openai-0000", max_retries=0, timeout=20)


def test_chat_sync_compacted_valid_prefix_stable(fake, proxy):
    upstream, _ = fake
    url, server = proxy()
    with _client(url) as client:
        for k in range(5):
            reply = client.chat.completions.create(model="gpt-test", messages=openai_history(k))  # type: ignore[arg-type]
            assert reply.choices[0].message.content.startswith("reply")
    sent = [r.body for r in upstream.model_requests("/v1/chat/completions")]
    for k, raw in enumerate(sent):
        body = json.loads(raw)
        assert all(BIG(i) not in raw.decode() for i in range(k))
        assert not openai_problems(from_messages(body["messages"]).messages)
    for a, b in zip(sent, sent[1:], strict=False):
        assert b.startswith(a[: a.rindex(b"]")])
    (conv,) = server.stats.snapshot()["conversations"].values()
    assert conv["cache_read_tokens"] > 0 and conv["tokens_upstream"] < conv["tokens_agent"]


def test_chat_stream_sync_and_async(fake, proxy):
    upstream, _ = fake
    url, _ = proxy()
    with _client(url) as client:
        chunks = list(client.chat.completions.create(model="gpt-test", messages=openai_history(2), stream=True))  # type: ignore[call-overload]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).startswith("reply")

    async def run() -> str:
        async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=20) as client:
            one = await client.chat.completions.create(model="gpt-test", messages=openai_history(3))  # type: ignore[arg-type]
            stream = await client.chat.completions.create(model="gpt-test", messages=openai_history(3), stream=True,  # type: ignore[call-overload]
                                                          stream_options={"include_usage": True})
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            return one.choices[0].message.content + "|" + text

    out = asyncio.run(run())
    assert out.count("reply") == 2
    assert BIG(2) not in upstream.model_requests("/v1/chat/completions")[-1].body.decode()


def test_responses_relayed_sync_async_stream(fake, proxy):
    upstream, _ = fake
    url, _ = proxy()
    with _client(url) as client:
        r = client.responses.create(model="gpt-test", input="hello")
        events = [e.type for e in client.responses.create(model="gpt-test", input="hello", stream=True)]
    assert r.output_text.startswith("reply")
    assert events[0] == "response.created" and events[-1] == "response.completed"

    async def run() -> str:
        async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=20) as client:
            return (await client.responses.create(model="gpt-test", input="again")).output_text

    assert asyncio.run(run()).startswith("reply")
    assert upstream.model_requests("/v1/responses")[0].json["input"] == "hello"


def test_other_paths_pass_through(fake, proxy):
    upstream, _ = fake
    url, _ = proxy()
    with _client(url) as client:
        models = client.models.list()
    assert [m.id for m in models.data] == ["fake-model"]
    assert upstream.received[-1].path == "/v1/models"


def test_responses_compacted_in_place_prefix_stable(fake, proxy):
    from tests.serve.conversation import responses_items

    upstream, _ = fake
    url, server = proxy()
    with _client(url) as client:
        for k in range(4):
            client.responses.create(model="gpt-test", instructions="You are Codex.", input=responses_items(k))  # type: ignore[arg-type]
    sent = [r.body for r in upstream.model_requests("/v1/responses")]
    for k, raw in enumerate(sent):
        items = json.loads(raw)["input"]
        original = responses_items(k)
        assert len(items) == len(original)
        for got, want in zip(items, original, strict=True):
            if want["type"] == "function_call_output":
                assert got["call_id"] == want["call_id"] and BIG(int(want["call_id"][-4:])) not in got["output"]
                assert "persisted" in got["output"]  # the spill stub
            else:
                assert got == want  # reasoning (encrypted), calls and messages keep every field
    for a, b in zip(sent, sent[1:], strict=False):
        assert b.startswith(a[: a.rindex(b"]")])
    (conv,) = server.stats.snapshot()["conversations"].values()
    assert conv["api"] == "responses" and conv["cache_read_tokens"] > 0 and conv["compactions"]["spill"] >= 3


# Forces a summary within a few tool rounds: a 3,000-token window with summaries from half of it, and nothing else firing.
SUMMARY_CONFIG = {"window": 3000, "spill": {"enabled": False}, "microcompact": {"enabled": False}, "dedup": {"enabled": False},
                  "watermark": {"ratio": 0.5, "min_window": 0}}


def _responses_problems(items: list[dict]) -> list[str]:
    """What the Responses API would refuse in ``input``: a call without its output, an output without its call, no user opening."""
    problems: list[str] = []
    calls = [i["call_id"] for i in items if i.get("type") in ("function_call", "custom_tool_call")]
    outputs = [i["call_id"] for i in items if i.get("type") in ("function_call_output", "custom_tool_call_output")]
    seen: set[str] = set()
    for item in items:
        if item.get("type") in ("function_call", "custom_tool_call"):
            seen.add(item["call_id"])
        elif item.get("type") in ("function_call_output", "custom_tool_call_output") and item["call_id"] not in seen:
            problems.append(f"output before or without its call: {item['call_id']}")
    problems += [f"call without output: {c}" for c in calls if c not in outputs]
    first = next((i for i in items if i.get("role") not in ("system", "developer")), None)
    if first is None or first.get("role") != "user":
        problems.append("the input does not open with a user message")
    return problems


def test_responses_summary_compacts_validly_instead_of_failing_open(fake, proxy):
    from tests.serve.conversation import responses_items

    upstream, _ = fake
    url, server = proxy(SUMMARY_CONFIG)
    items = responses_items(6)
    with _client(url) as client:
        assert client.responses.create(model="gpt-test", instructions="You are Codex.", input=items).output_text.startswith("reply")  # type: ignore[arg-type]
    sent = upstream.model_requests("/v1/responses")[-1]
    body = sent.json
    assert body["instructions"] == "You are Codex." and body["model"] == "gpt-test"
    assert len(sent.body) < len(json.dumps(items)) and len(body["input"]) < len(items)
    assert not _responses_problems(body["input"])
    assert "Conversation Summary" in json.dumps(body["input"][0])
    # The kept tail goes as the agent sent it: encrypted reasoning and item ids included.
    kept = body["input"][1:]
    assert kept and all(item in items for item in kept)
    assert any(item["type"] == "reasoning" and item["encrypted_content"].startswith("gAAAA") for item in kept)
    totals = server.stats.snapshot()["totals"]
    assert totals["fail_open"] == 0
    (conv,) = server.stats.snapshot()["conversations"].values()
    assert conv["compactions"].get("summary", 0) >= 1 and conv["tokens_upstream"] < conv["tokens_agent"]


def test_responses_summary_stream_sync_and_async_prefix_stable(fake, proxy):
    from tests.serve.conversation import responses_items

    upstream, _ = fake
    url, server = proxy(SUMMARY_CONFIG)
    with _client(url) as client:
        for k in (6, 7):
            events = list(client.responses.create(model="gpt-test", input=responses_items(k), stream=True))  # type: ignore[call-overload]
            assert events[-1].type == "response.completed" and events[-1].response.output_text.startswith("reply")

    async def run() -> str:
        async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0, timeout=20) as client:
            stream = await client.responses.create(model="gpt-test", input=responses_items(8), stream=True)  # type: ignore[call-overload]
            text = "".join([e.delta async for e in stream if e.type == "response.output_text.delta"])
            one = await client.responses.create(model="gpt-test", input=responses_items(9))  # type: ignore[arg-type]
            return text + "|" + one.output_text

    assert asyncio.run(run()).count("reply") == 2
    sent = upstream.model_requests("/v1/responses")
    for k, got in zip((6, 7, 8, 9), sent, strict=True):
        assert len(got.json["input"]) < len(responses_items(k)) and not _responses_problems(got.json["input"])
    # A request that adds items without a new summary (the window still holds them) extends the last one's bytes.
    grew = [(a.body, b.body) for a, b in zip(sent, sent[1:], strict=False) if len(b.json["input"]) > len(a.json["input"])]
    assert grew
    for a, b in grew:
        assert b.startswith(a[: a.rindex(b"]")])
    assert server.stats.snapshot()["totals"]["fail_open"] == 0


def test_responses_prompt_too_long_recovers_and_retries(fake, proxy):
    from tests.serve.conversation import responses_items

    upstream, _ = fake
    url, server = proxy({"spill": {"enabled": False}, "microcompact": {"enabled": False}, "dedup": {"enabled": False}})
    ptl = {"error": {"message": "Your input exceeds the context window of this model.", "type": "invalid_request_error",
                     "param": "input", "code": "context_length_exceeded"}}
    upstream.script.append({"status": 400, "body": ptl})
    items = responses_items(8)
    with _client(url) as client:
        assert client.responses.create(model="gpt-test", input=items).output_text.startswith("reply")  # type: ignore[arg-type]
    first, retry = upstream.model_requests("/v1/responses")
    assert first.json["input"] == items  # nothing fired before the refusal
    assert len(retry.body) < len(first.body) and not _responses_problems(retry.json["input"])
    totals = server.stats.snapshot()["totals"]
    assert totals["recoveries"] == 1 and totals["fail_open"] == 0


def test_responses_items_the_lab_does_not_model_survive_in_the_kept_tail(fake, proxy):
    from tests.serve.conversation import responses_items

    upstream, _ = fake
    url, _ = proxy(SUMMARY_CONFIG)
    items = responses_items(6)
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "parser bug"}}
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]}
    patch = {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}
    patched = {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Done!"}
    tail = [search, answer, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now patch it."}]}, patch, patched]
    with _client(url) as client:
        client.responses.create(model="gpt-test", input=items + tail)  # type: ignore[arg-type]
    got = upstream.model_requests("/v1/responses")[-1].json["input"]
    assert len(got) < len(items + tail) and not _responses_problems(got)
    assert got[-len(tail):] == tail  # byte for byte: the search, the answer it belongs to, the custom call and its output


def test_responses_export_keeps_call_kinds_the_exporter_cannot_spell():
    from lab.core.messages import TextBlock, ToolResultBlock
    from lab.serve.conversations import _export_responses, _import_responses

    patch = {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}
    raw = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Patch it."}]},
           patch, {"type": "custom_tool_call_output", "call_id": "call_patch", "output": BIG(1)}]
    canon, source = _import_responses(raw)
    assert _export_responses(canon, source) == raw  # nothing changed: the agent's items, as they came
    user, call, result = canon
    # A compaction that changed both messages beyond a tool output: both are exported, yet keep the custom kind.
    edited = [user, call.model_copy(update={"content": (TextBlock(text="Patching."), *call.content)}),
              result.model_copy(update={"content": (ToolResultBlock(tool_use_id="call_patch", content="[cleared]"), TextBlock(text="note"))})]
    items = _export_responses(edited, source)
    assert patch in items
    (out,) = [i for i in items if i.get("call_id") == "call_patch" and i is not patch]
    assert out == {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "[cleared]"}
    assert not _responses_problems(items)


def test_responses_llm_summary_goes_through_the_upstream_with_the_callers_key(fake, proxy, monkeypatch):
    from tests.serve.conversation import responses_items

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    upstream, _ = fake
    url, server = proxy({**SUMMARY_CONFIG, "summary": {"summarizer": "openai", "llm_model": "gpt-summarizer"}})
    items = responses_items(6)
    with _client(url) as client:
        assert client.responses.create(model="gpt-agent", input=items).output_text.startswith("reply")  # type: ignore[arg-type]
    (summary_call,) = upstream.model_requests("/v1/chat/completions")
    assert summary_call.json["model"] == "gpt-summarizer" and "sk-test-SECRET-openai-0000" in summary_call.headers["authorization"]
    (sent,) = upstream.model_requests("/v1/responses")
    assert len(sent.json["input"]) < len(items) and not _responses_problems(sent.json["input"])
    assert "reply 1" in json.dumps(sent.json["input"][0])  # the fake's answer to the summary call is the summary
    assert server.stats.snapshot()["totals"]["fail_open"] == 0
