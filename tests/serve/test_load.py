"""A bounded load test on loopback: concurrent streamed conversations, zero errors, every conversation compacted.

The default size fits a 2-core machine in a few seconds; ``LAB_SERVE_LOAD=full`` runs the issue's 50 x 20
(``python -m lab bench --section serve`` measures it too).
"""

from __future__ import annotations

import asyncio
import os

import anthropic
import pytest

from tests.serve.conversation import BIG, anthropic_history

pytestmark = pytest.mark.timeout(300)

FULL = os.environ.get("LAB_SERVE_LOAD") == "full"
CONVERSATIONS, REQUESTS = (50, 20) if FULL else (20, 6)


def test_concurrent_streamed_conversations(fake, proxy):
    upstream, _ = fake
    url, server = proxy()

    async def conversation(client: anthropic.AsyncAnthropic, c: int) -> int:
        errors = 0
        for k in range(REQUESTS):
            try:
                async with client.messages.stream(model="m", max_tokens=5, messages=anthropic_history(k, task=f"task {c}")) as stream:
                    message = await stream.get_final_message()
                errors += not message.content[0].text.startswith("reply")
            except anthropic.APIError:
                errors += 1
        return errors

    async def run() -> list[int]:
        async with anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0, timeout=60) as client:
            return await asyncio.gather(*(conversation(client, c) for c in range(CONVERSATIONS)))

    assert sum(asyncio.run(run())) == 0
    stats = server.stats.snapshot()
    assert len(stats["conversations"]) == CONVERSATIONS
    assert stats["totals"]["requests"] == CONVERSATIONS * REQUESTS and stats["totals"]["failures"] == 0 and stats["totals"]["fail_open"] == 0
    assert all(c["resets"] == 0 for c in stats["conversations"].values())
    assert len(upstream.model_requests()) == CONVERSATIONS * REQUESTS
    assert all(BIG(0) not in r.body.decode() for r in upstream.model_requests())
