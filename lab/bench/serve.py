"""Bench section "serve": what ``lab serve`` adds to a request, what a conversation costs it, and its throughput.

Everything runs on loopback in this process: the fake upstream (``lab.serve.fake_upstream``), and the proxy in
front of it, each served by uvicorn in its own thread. Measured side by side in one run:

- added latency: each streamed request is sent once straight to the fake upstream and once through the proxy,
  alternating, and the difference of each pair is taken (so a slow moment of the machine hits both); p50 and p99
  of those differences, with compaction off (audit mode: the proxy relays and records nothing) and on (compact
  mode: the conversation's Compactor runs on every request). Targets with compaction off: p50 <= 2 ms, p99 <= 10 ms.
- memory per conversation: ``tracemalloc`` over conversations of ``REQUESTS`` requests run through the proxy's
  per-conversation state (``lab.serve.conversations``), divided by their number.
- throughput: ``CONVERSATIONS`` concurrent conversations of ``REQUESTS`` streamed requests each, through the
  proxy and straight to the fake, in requests per second, with the errors counted (must be 0).

The numbers are this machine's, this run's; only the ratios and the targets are meant to be read across machines.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any, Literal

from . import register_section
from ..core.config import CompactionConfig
from ..serve.conversations import Conversations

__all__ = ["bench_serve", "PAIRS", "CONVERSATIONS", "REQUESTS", "P50_TARGET_MS", "P99_TARGET_MS"]

PAIRS, QUICK_PAIRS = 400, 60
CONVERSATIONS, REQUESTS = 50, 20
QUICK_CONVERSATIONS, QUICK_REQUESTS = 10, 5
MEMORY_CONVERSATIONS = 50
P50_TARGET_MS, P99_TARGET_MS = 2.0, 10.0


def _history(k: int, task: str) -> list[dict[str, Any]]:
    """Request ``k`` of a coding conversation: the task and ``k`` tool rounds with outputs long enough to spill."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for i in range(k):
        output = "\n".join(f"{task[:12]} line {n} of file {i}: x = {n * i}" for n in range(80))
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Read", "input": {"path": f"src/f{i}.py"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:04d}", "content": output}]})
    return messages


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _added_latency(proxy_url: str, direct_url: str, pairs: int) -> dict[str, float]:
    import httpx2

    added: list[float] = []
    direct: list[float] = []
    with httpx2.Client(timeout=30) as http:
        for i in range(pairs + 5):
            body = {"model": "bench", "max_tokens": 8, "stream": True, "messages": _history(i % 8, f"latency task {i // 8}")}
            times = []
            for url in (direct_url, proxy_url):
                t0 = time.perf_counter()
                with http.stream("POST", f"{url}/v1/messages", json=body, headers={"x-api-key": "bench"}) as r:
                    for _ in r.iter_raw():
                        pass
                times.append(time.perf_counter() - t0)
            if i >= 5:  # the first pairs open connections and warm caches
                direct.append(times[0] * 1000)
                added.append((times[1] - times[0]) * 1000)
    return {"direct_p50_ms": round(statistics.median(direct), 3), "added_p50_ms": round(statistics.median(added), 3),
            "added_p99_ms": round(_pct(added, 0.99), 3)}


def _throughput(url: str, conversations: int, requests: int) -> dict[str, float]:
    import anthropic

    async def one(client: anthropic.AsyncAnthropic, c: int) -> int:
        errors = 0
        for k in range(requests):
            try:
                async with client.messages.stream(model="bench", max_tokens=8, messages=_history(k, f"throughput task {c}")) as stream:  # type: ignore[arg-type]
                    await stream.get_final_message()
            except anthropic.APIError:
                errors += 1
        return errors

    async def run() -> int:
        async with anthropic.AsyncAnthropic(base_url=url, api_key="bench", max_retries=0, timeout=60) as client:
            return sum(await asyncio.gather(*(one(client, c) for c in range(conversations))))

    t0 = time.perf_counter()
    errors = asyncio.run(run())
    seconds = time.perf_counter() - t0
    return {"requests_per_second": round(conversations * requests / seconds, 1), "errors": errors, "seconds": round(seconds, 2)}


def _memory_per_conversation(requests: int) -> float:
    with tempfile.TemporaryDirectory() as spill:
        convs = Conversations(CompactionConfig(), spill_dir=Path(spill))
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for c in range(MEMORY_CONVERSATIONS):
            conv = convs.get(f"{c:024x}", "anthropic")
            for k in range(requests):
                conv.step({"model": "bench", "messages": _history(k, f"memory task {c}")}, now=0.0)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    return (after - before) / MEMORY_CONVERSATIONS


def bench_serve(quick: bool = False) -> tuple[list[str], dict]:
    # The proxy and the fake upstream run on starlette and uvicorn (the optional serve extra): loaded when this section runs.
    from ..serve import ServeOptions, build_app
    from ..serve.fake_upstream import FakeUpstream, ServerThread

    pairs = QUICK_PAIRS if quick else PAIRS
    conversations, requests = (QUICK_CONVERSATIONS, QUICK_REQUESTS) if quick else (CONVERSATIONS, REQUESTS)
    data: dict[str, Any] = {}
    fake = FakeUpstream()
    with ServerThread(fake.app()) as upstream:
        modes: tuple[Literal["audit", "compact"], ...] = ("audit", "compact")
        for mode in modes:
            app = build_app(ServeOptions(config=CompactionConfig(), mode=mode, upstream_anthropic=upstream.url))
            with ServerThread(app) as proxy:
                fake.reset()
                data[mode] = _added_latency(proxy.url, upstream.url, pairs)
                fake.reset()
                data[mode]["throughput"] = _throughput(proxy.url, conversations, requests)
        fake.reset()
        data["direct_throughput"] = _throughput(upstream.url, conversations, requests)
    data["memory_per_conversation_kb"] = round(_memory_per_conversation(requests) / 1024, 1)
    data["load"] = {"conversations": conversations, "requests": requests, "pairs": pairs}
    off = data["audit"]
    lines = [
        f"added latency, compaction off: p50 {off['added_p50_ms']:.2f} ms (target <= {P50_TARGET_MS:g}), "
        f"p99 {off['added_p99_ms']:.2f} ms (target <= {P99_TARGET_MS:g}); a direct streamed call takes {off['direct_p50_ms']:.2f} ms p50",
        f"added latency, compaction on:  p50 {data['compact']['added_p50_ms']:.2f} ms, p99 {data['compact']['added_p99_ms']:.2f} ms",
        f"memory per conversation of {requests} requests: {data['memory_per_conversation_kb']:.0f} KB",
        f"throughput, {conversations} conversations x {requests} streamed requests: direct {data['direct_throughput']['requests_per_second']:.0f} req/s, "
        f"proxy off {off['throughput']['requests_per_second']:.0f} req/s, on {data['compact']['throughput']['requests_per_second']:.0f} req/s; "
        f"errors {off['throughput']['errors'] + data['compact']['throughput']['errors']}",
    ]
    return lines, data


register_section("serve", bench_serve)
