"""Core speed: time per ``process_request`` in a simulated agent loop, and how it grows.

The loop is the agent's: before each model request, the compacted history so
far plus the messages that arrived since go through the Compactor. Linear
growth means 10x the requests cost about 10x the time; the target is <= 12x.
"""

from __future__ import annotations

import time
from typing import Sequence

from ..core.compactor import Compactor
from ..core.messages import Message
from ..core.presets import preset, preset_names
from . import corpus_files, register_section

__all__ = ["agent_loop_seconds", "bench_core"]

GROWTH_TARGET = 12.0


def agent_loop_seconds(messages: Sequence[Message], preset_name: str, window: int = 200_000) -> tuple[float, int]:
    """Seconds spent inside the Compactor over the whole session, and the number of requests."""
    compactor = Compactor(preset(preset_name).model_copy(update={"window": window}))
    context: list[Message] = []
    sent = 0
    spent = 0.0
    requests = 0
    for i, m in enumerate(messages):
        if m.role == "assistant" and i > 0:
            t0 = time.perf_counter()
            out = compactor.process_request(context + list(messages[sent:i]), now=float(i * 30))
            spent += time.perf_counter() - t0
            context = list(out.messages) + [m]
            sent = i + 1
            requests += 1
    return spent, requests


def bench_core(quick: bool = False) -> tuple[list[str], dict]:
    from ..formats import load
    from ..generate import generate

    lines: list[str] = []
    data: dict = {"largest": {}, "growth": {}}
    largest = max(corpus_files(), key=lambda p: p.stat().st_size)
    t = load(largest)
    lines.append(f"largest corpus transcript: {largest.name} ({len(t.messages)} messages)")
    lines.append(f"{'preset':28} {'requests':>8} {'total ms':>9} {'ms/request':>10}")
    for name in preset_names():
        spent, n = agent_loop_seconds(t.messages, name, window=64_000)
        data["largest"][name] = {"requests": n, "seconds": spent, "ms_per_request": 1000 * spent / max(n, 1)}
        lines.append(f"{name:28} {n:8d} {1000 * spent:9.1f} {1000 * spent / max(n, 1):10.3f}")
    small_n, big_n = (100, 1000) if quick else (500, 5000)
    small = generate(requests=small_n, seed=11).messages
    big = generate(requests=big_n, seed=11).messages
    lines.append(f"growth from {small_n} to {big_n} generated requests (window 200k):")
    for name in ("minicode", "mewcode"):
        s_small, n_small = agent_loop_seconds(small, name)
        s_big, n_big = agent_loop_seconds(big, name)
        ratio = s_big / s_small if s_small else float("inf")
        verdict = "linear" if ratio <= GROWTH_TARGET else "SUPERLINEAR"
        data["growth"][name] = {"small_requests": n_small, "big_requests": n_big, "small_s": s_small, "big_s": s_big, "ratio": ratio}
        lines.append(
            f"  {name:10} {n_small} req {s_small:.3f} s, {n_big} req {s_big:.3f} s "
            f"({1000 * s_big / n_big:.2f} ms/request): {ratio:.1f}x time for {n_big / n_small:.0f}x requests, {verdict} (target <= {GROWTH_TARGET:.0f}x)"
        )
    return lines, data


register_section("core", bench_core)
