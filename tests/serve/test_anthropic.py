"""The official Anthropic SDK, sync and async, streamed and not, through the proxy to the fake upstream."""

from __future__ import annotations

import asyncio
import json

import anthropic
import pytest

from lab.core.validate import anthropic_problems
from lab.formats.claude.anthropic import request_to_transcript
from tests.serve.conversation import BIG, anthropic_history

pytestmark = pytest.mark.timeout(60)

MODEL = "claude-test"
SYSTEM = "You are a careful coding agent."


def _client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test-SECRET-key-123456", max_retries=0, timeout=20)


def test_sync_conversation_is_compacted_prefix_stable_and_cached(fake, proxy):
    upstream, _ = fake
    url, server = proxy()
    with _client(url) as client:
        for k in range(6):
            reply = client.messages.create(model=MODEL, max_tokens=64, system=SYSTEM, messages=anthropic_history(k))
            assert reply.content[0].type == "text"
    sent = [r.body for r in upstream.model_requests()]
    assert len(sent) == 6
    bodies = [json.loads(b) for b in sent]
    # Compacted: no full tool output reached the upstream, each became a stub that names its spill file.
    for k, body in enumerate(bodies):
        text = json.dumps(body)
        for i in range(k):
            assert BIG(i) not in text
        assert body["system"] == SYSTEM and body["model"] == MODEL
        assert not anthropic_problems(request_to_transcript(body).messages), "every request sent upstream is valid for the API"
    last_results = [b for m in bodies[-1]["messages"] for b in (m["content"] if isinstance(m["content"], list) else []) if b.get("type") == "tool_result"]
    assert len(last_results) == 5
    # Prefix-stable: request k+1 starts with request k's bytes up to the messages list's closing bracket.
    for a, b in zip(sent, sent[1:], strict=False):
        head = a[: a.rindex(b"]")]
        assert b.startswith(head), "the compacted prefix changed between two requests"
    stats = server.stats.snapshot()
    (conv,) = stats["conversations"].values()
    assert conv["requests"] == 6 and conv["tokens_upstream"] < conv["tokens_agent"]
    assert conv["compactions"].get("spill", 0) >= 5
    assert conv["cache_read_tokens"] > 0 and conv["cache_hit_ratio"] > 0.5
    # The key went upstream, and nowhere else.
    assert all("sk-ant-test-SECRET-key-123456" in (r.headers.get("x-api-key") or r.headers.get("authorization") or "") for r in upstream.model_requests())
    assert "SECRET" not in json.dumps(stats)


def test_spill_files_are_named_by_hashes_and_hold_the_output(fake, proxy, tmp_path):
    upstream, _ = fake
    # MewCode's stub gives the full path (MiniCode's names the file only), so the agent's read tool finds it.
    url, _ = proxy({"spill": {"threshold": 300, "preview_format": "mewcode"}, "microcompact": {"enabled": False}})
    with _client(url) as client:
        client.messages.create(model=MODEL, max_tokens=64, messages=anthropic_history(2))
    files = sorted((tmp_path / "spill").rglob("*.txt"))
    assert len(files) == 2
    for f in files:
        assert "toolu" not in str(f.relative_to(tmp_path))
    body = upstream.model_requests()[-1].json
    stubs = json.dumps(body)
    assert all(str(f) in stubs for f in files), "each stub names its spill file"
    assert any(BIG(0) in f.read_text() for f in files)


def test_sync_stream_relays_bytes_unchanged(fake, proxy):
    url, _ = proxy()
    with _client(url) as client, client.messages.stream(model=MODEL, max_tokens=64, system=SYSTEM, messages=anthropic_history(1)) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "reply 1" and final.usage.input_tokens > 0


def test_raw_stream_is_byte_identical(fake, proxy):
    import httpx2

    upstream, _ = fake
    url, _ = proxy()
    body = {"model": MODEL, "max_tokens": 8, "stream": True, "messages": anthropic_history(2)}
    with httpx2.Client(timeout=20) as http:
        via = http.post(f"{url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert via.status_code == 200 and via.headers["content-type"].startswith("text/event-stream")
    assert via.content == upstream.streamed[-1] and via.content.count(b"event: ") == 7


def test_async_create_and_stream(fake, proxy):
    upstream, _ = fake
    url, _ = proxy()

    async def run() -> tuple[str, str]:
        async with anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0, timeout=20) as client:
            one = await client.messages.create(model=MODEL, max_tokens=64, messages=anthropic_history(1))
            async with client.messages.stream(model=MODEL, max_tokens=64, messages=anthropic_history(2)) as stream:
                text = "".join([t async for t in stream.text_stream])
            return one.content[0].text, text

    first, second = asyncio.run(run())
    assert first.startswith("reply") and second.startswith("reply")
    assert BIG(1) not in upstream.model_requests()[-1].body.decode()


def test_count_tokens_is_for_the_compacted_request(fake, proxy):
    upstream, direct = fake
    url, _ = proxy()
    history = anthropic_history(4)
    with _client(url) as via, _client(direct) as straight:
        compacted = via.messages.count_tokens(model=MODEL, messages=history).input_tokens
        raw = straight.messages.count_tokens(model=MODEL, messages=history).input_tokens
    assert compacted < raw / 2
    assert BIG(3) not in upstream.received[0].body.decode()
