"""Faults on both sides: upstream errors pass through, the proxy's own errors come in the API's shape, a request is never dropped."""

from __future__ import annotations

import time

import socket

import anthropic
import httpx2
import openai
import pytest

from lab.serve import conversations
from tests.serve.conversation import BIG, anthropic_history

pytestmark = pytest.mark.timeout(60)


def _client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-SECRET-fault-key", max_retries=0, timeout=20)


@pytest.mark.parametrize("status", [429, 529, 500])
def test_upstream_errors_reach_the_client_unchanged(fake, proxy, status):
    upstream, _ = fake
    url, server = proxy()
    body = {"type": "error", "error": {"type": "rate_limit_error" if status == 429 else "overloaded_error", "message": f"status {status}"}}
    upstream.script.append({"status": status, "headers": {"retry-after": "7", "anthropic-ratelimit-requests-remaining": "0"}, "body": body})
    with httpx2.Client(timeout=20) as http:
        r = http.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "messages": anthropic_history(1)}, headers={"x-api-key": "k"})
    assert r.status_code == status and r.json() == body
    assert r.headers["retry-after"] == "7" and r.headers["anthropic-ratelimit-requests-remaining"] == "0"
    (conv,) = server.stats.snapshot()["conversations"].values()
    assert conv["failures"] == 1


def test_unreachable_upstream_is_502_in_each_api_shape(proxy):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, never listening: connection refused
        url, _ = _dead_proxy(proxy, dead)
        with _client(url) as client, pytest.raises(anthropic.APIStatusError) as err:
            client.messages.create(model="m", max_tokens=5, messages=anthropic_history(0))
        assert err.value.status_code == 502 and err.value.body["type"] == "error"  # type: ignore[index]
        with openai.OpenAI(base_url=f"{url}/v1", api_key="sk-x", max_retries=0, timeout=20) as oa, pytest.raises(openai.APIStatusError) as oerr:
            oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert oerr.value.status_code == 502 and "unreachable" in str(oerr.value)
        assert "sk-x" not in str(oerr.value)


def _dead_proxy(proxy, dead):
    from lab.core.config import CompactionConfig
    from lab.serve import ServeOptions, build_app
    from lab.serve.fake_upstream import ServerThread

    server = ServerThread(build_app(ServeOptions(config=CompactionConfig(), upstream_anthropic=dead, upstream_openai=dead, connect_timeout=2)))
    server.__enter__()
    proxy.__dict__.setdefault("extra", []).append(server)
    return server.url, None


@pytest.fixture(autouse=True)
def _stop_extra(proxy):
    yield
    for server in proxy.__dict__.get("extra", []):
        server.__exit__()


def test_malformed_json_is_400_and_oversize_is_413(fake, proxy):
    upstream, _ = fake
    url, _ = proxy(max_body=4096)
    with httpx2.Client(timeout=20) as http:
        bad = http.post(f"{url}/v1/messages", content=b"{not json", headers={"content-type": "application/json"})
        big = http.post(f"{url}/v1/chat/completions", content=b"x" * 10_000, headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["type"] == "error" and "malformed JSON" in bad.json()["error"]["message"]
    assert big.status_code == 413 and big.json()["error"]["type"] == "invalid_request_error"
    assert upstream.received == []


def test_compaction_raising_fails_open(fake, proxy, monkeypatch, caplog):
    upstream, _ = fake
    url, server = proxy()

    def boom(self, body, **kw):
        raise RuntimeError("stage exploded")

    monkeypatch.setattr(conversations.Conversation, "step", boom)
    history = anthropic_history(2)
    with _client(url) as client:
        reply = client.messages.create(model="m", max_tokens=5, messages=history)
    assert reply.content[0].text.startswith("reply")
    assert upstream.model_requests()[0].json["messages"] == history  # the original request, as sent
    (conv,) = server.stats.snapshot()["conversations"].values()
    assert conv["fail_open"] == 1
    assert any("forwarding the request as sent" in r.message for r in caplog.records)
    assert not any("SECRET" in r.getMessage() for r in caplog.records)


def test_prompt_too_long_recovers_and_retries_once(fake, proxy):
    upstream, _ = fake
    url, server = proxy({"spill": {"enabled": False}, "microcompact": {"enabled": False}, "dedup": {"enabled": False}})
    ptl = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}}
    upstream.script.append({"status": 400, "body": ptl})
    with _client(url) as client:
        reply = client.messages.create(model="m", max_tokens=5, messages=anthropic_history(8))
    assert reply.content[0].text.startswith("reply")
    first, retry = upstream.model_requests()
    assert len(retry.body) < len(first.body)
    assert server.stats.snapshot()["totals"]["recoveries"] == 1


def test_prompt_too_long_twice_passes_the_error_through(fake, proxy):
    upstream, _ = fake
    url, _ = proxy()
    ptl = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}}
    upstream.script.extend([{"status": 400, "body": ptl}, {"status": 400, "body": ptl}])
    with _client(url) as client, pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(model="m", max_tokens=5, messages=anthropic_history(8))
    assert err.value.body == ptl
    assert len(upstream.model_requests()) == 2  # one retry, no more


def test_upstream_closing_mid_stream_ends_the_clients_stream(fake, proxy):
    upstream, _ = fake
    url, server = proxy()
    upstream.script.append({"cut_after": 3})
    with _client(url) as client, pytest.raises(anthropic.APIError, match="broke off"), \
            client.messages.stream(model="m", max_tokens=5, messages=anthropic_history(1)) as stream:
        for _ in stream.text_stream:
            pass
        stream.get_final_message()
    # The proxy counts the failure as its relay ends, which can be just after the client has read the error event.
    deadline = time.monotonic() + 10
    while server.stats.snapshot()["totals"]["failures"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.stats.snapshot()["totals"]["failures"] == 1


def test_slow_upstream_is_504(fake, proxy):
    upstream, _ = fake
    url, _ = proxy(read_timeout=0.5)
    upstream.script.append({"delay": 3})
    with httpx2.Client(timeout=20) as http:
        r = http.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "messages": anthropic_history(0)})
    assert r.status_code == 504 and r.json()["error"]["type"] == "timeout_error"


def test_client_disconnect_cancels_the_upstream_stream(fake, proxy):
    import time

    upstream, _ = fake
    upstream.chunk_delay = 0.3
    url, _ = proxy()
    body = {"model": "m", "max_tokens": 5, "stream": True, "messages": anthropic_history(1)}
    with httpx2.Client(timeout=20) as http, http.stream("POST", f"{url}/v1/messages", json=body) as r:
        first = next(r.iter_raw())
        assert first.startswith(b"event: message_start")
    deadline = time.monotonic() + 10
    while upstream.cancelled_streams == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.cancelled_streams == 1
    assert len(upstream.streamed[-1]) < 1000 and BIG(0) not in upstream.received[-1].body.decode()


def test_a_compacted_request_the_upstream_refuses_goes_again_as_sent(fake, proxy):
    upstream, _ = fake
    url, server = proxy()
    refusal = {"type": "error", "error": {"type": "invalid_request_error", "message": "messages.2: something the lab got wrong"}}
    upstream.script.append({"status": 400, "body": refusal})
    history = anthropic_history(3)
    with _client(url) as client:
        reply = client.messages.create(model="m", max_tokens=5, messages=history)
    assert reply.content[0].text.startswith("reply")
    compacted, original = upstream.model_requests()
    assert BIG(0) not in compacted.body.decode() and original.json["messages"] == history
    assert server.stats.snapshot()["totals"]["fail_open"] == 1


def test_a_refusal_of_the_original_too_reaches_the_client(fake, proxy):
    upstream, _ = fake
    url, _ = proxy()
    refusal = {"type": "error", "error": {"type": "invalid_request_error", "message": "model: unknown model"}}
    upstream.script.extend([{"status": 400, "body": refusal}, {"status": 400, "body": refusal}, {"status": 400, "body": refusal}])
    with _client(url) as client, pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(model="m", max_tokens=5, messages=anthropic_history(3))
    assert err.value.body == refusal and len(upstream.model_requests()) == 2
