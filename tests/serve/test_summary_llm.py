"""A config that asks for an LLM summary gets it from the same upstream, with the caller's own key; audit mode counts."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from tests.serve.conversation import BIG, anthropic_history

pytestmark = pytest.mark.timeout(60)

KEY = "sk-ant-caller-own-key-77"
LLM_SUMMARY = {"window": 3000, "spill": {"enabled": False}, "microcompact": {"enabled": False}, "dedup": {"enabled": False},
               "watermark": {"ratio": 0.5, "min_window": 0}, "summary": {"summarizer": "anthropic", "llm_model": "claude-summarizer"}}


def test_llm_summary_goes_through_the_upstream_with_the_callers_key(fake, proxy, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    upstream, _ = fake
    url, server = proxy(LLM_SUMMARY)
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0, timeout=30) as client:
        client.messages.create(model="claude-agent", max_tokens=5, messages=anthropic_history(6))
    models = [r.json["model"] for r in upstream.model_requests()]
    assert models == ["claude-summarizer", "claude-agent"]  # the summary call, then the compacted request
    summary_call, sent = upstream.model_requests()
    assert KEY in (summary_call.headers.get("authorization") or summary_call.headers.get("x-api-key") or "")
    assert BIG(0) not in sent.body.decode() and len(sent.body) < len(summary_call.body)
    (conv,) = server.stats.snapshot()["conversations"].values()
    assert conv["compactions"].get("summary") == 1 and conv["tokens_upstream"] < conv["tokens_agent"]


def test_audit_mode_counts_the_agents_tokens_after_the_answer(fake, proxy):
    import time

    url, server = proxy(mode="audit")
    with httpx2.Client(timeout=20) as http:
        for k in (1, 3):
            assert http.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "messages": anthropic_history(k)}).status_code == 200
    deadline = time.monotonic() + 10
    while server.stats.snapshot()["totals"]["tokens_agent"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    totals = server.stats.snapshot()["totals"]
    assert totals["requests"] == 2 and totals["tokens_agent"] == totals["tokens_upstream"] > 0
    assert totals["saved"] == 0
