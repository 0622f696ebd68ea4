"""Core speed: time per ``process_request`` in a simulated agent loop, and how it grows.

The loop is the agent's: before each model request, the compacted history so
far plus the messages that arrived since go through the Compactor. Linear
growth means 10x the requests cost about 10x the time; the target is <= 12x.

Timing is CPU time (``time.process_time``: other processes on the shared
machine do not count), from five runs of each size taken in turn, each after
``gc.collect()`` and ``gc.freeze()`` (see ``best_of_each``). The runs are
deterministic, so request k does the same work in every run: its fastest time
over the runs is its cost without interference, and a run's time is the sum of
those minima. A slow spell of the shared machine then spoils one request's
sample instead of a whole run's, which matters most to the long run, which
has the most chances to meet one. The ratio compares whole sessions, as the
target is stated; beside it, the ms per request over the last 10% of each
run's requests shows the steady-state cost of one request, which stays flat
when the work per request does not grow with the session. (The short run's
context is still growing and may never reach the window, so its requests are
cheaper on average: the ratio can exceed 10 without any request getting
slower.)
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from functools import partial
from typing import TypeVar
from collections.abc import Callable, Hashable, Mapping, Sequence

from ..core.compactor import Compactor
from ..core.messages import Message
from ..core.presets import preset, preset_names
from . import corpus_files, register_section
from ..formats import load
from ..generator import generate

__all__ = ["agent_loop_seconds", "agent_loop_times", "bench_core", "Timing", "best_of", "best_of_each", "fastest", "GROWTH_TARGET", "REPEAT"]

GROWTH_TARGET = 12.0
# Runs per measurement; the fastest time of each request counts (noise only ever adds time).
REPEAT = 5
# The share of a run's last requests whose mean time is its steady-state cost.
TAIL_SHARE = 0.1

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Timing:
    """One run's CPU time: the whole run, and the mean of its last 10% of requests."""

    seconds: float
    requests: int
    per_request: tuple[float, ...]

    @property
    def tail_ms(self) -> float:
        """Milliseconds per request over the last 10% of requests (at least one)."""
        n = max(1, int(len(self.per_request) * TAIL_SHARE))
        tail = self.per_request[-n:]
        return 1000 * sum(tail) / len(tail) if tail else 0.0


def best_of(run: Callable[[], Timing], repeat: int = REPEAT) -> Timing:
    """``repeat`` runs combined by ``fastest``, each started from a collected heap (see ``best_of_each``)."""
    return best_of_each({0: run}, repeat)[0]


def best_of_each(runs: Mapping[K, Callable[[], Timing]], repeat: int = REPEAT) -> dict[K, Timing]:
    """``repeat`` runs of each, taken in turn (a, b, a, b, ...), combined by ``fastest``.

    Taking turns means a slow spell of the machine (a shared VM drifts by tens
    of percent over a minute) slows both sides of a ratio alike instead of one.
    Before each run the heap is collected and then frozen (``gc.freeze``), so
    a collection during the run traverses what the run allocated, not the
    inputs the bench built beforehand (both sessions of a growth pair) nor the
    interpreter's modules: a full collection costs time in proportion to every
    live object, and charging that to the run would make the measure depend
    on what else the bench holds in memory.
    """
    done: dict[K, list[Timing]] = {key: [] for key in runs}
    for _ in range(repeat):
        for key, run in runs.items():
            # Garbage left by the previous run (or the caller) must not be collected on this run's clock.
            gc.collect()
            gc.freeze()
            try:
                done[key].append(run())
            finally:
                gc.unfreeze()
    return {key: fastest(timings) for key, timings in done.items()}


def fastest(timings: Sequence[Timing]) -> Timing:
    """Several runs of one deterministic session as one: each request at its fastest.

    Time spent outside the requests (a replay's set-up) counts at its own
    fastest. Runs of different lengths cannot be matched request by request;
    then the fastest whole run stands for them all.
    """
    if not timings:
        raise ValueError("no runs to combine")
    if len({t.requests for t in timings}) != 1 or any(len(t.per_request) != t.requests for t in timings):
        return min(timings, key=lambda t: t.seconds)
    # Equal lengths were checked above; strict keeps that a checked fact.
    per = tuple(map(min, zip(*(t.per_request for t in timings), strict=True))) if timings[0].requests else ()
    outside = min(max(0.0, t.seconds - sum(t.per_request)) for t in timings)
    return Timing(seconds=sum(per) + outside, requests=timings[0].requests, per_request=per)


def agent_loop_times(messages: Sequence[Message], preset_name: str, window: int = 200_000) -> Timing:
    """CPU time spent inside the Compactor, per request, over the whole session."""
    compactor = Compactor(preset(preset_name).model_copy(update={"window": window}))
    context: list[Message] = []
    sent = 0
    per: list[float] = []
    clock = time.process_time
    for i, m in enumerate(messages):
        if m.role == "assistant" and i > 0:
            # As an agent does: the list the Compactor returned is the agent's to extend.
            context.extend(messages[sent:i])
            t0 = clock()
            out = compactor.process_request(context, now=float(i * 30))
            per.append(clock() - t0)
            context = out.messages
            context.append(m)
            sent = i + 1
    return Timing(seconds=sum(per), requests=len(per), per_request=tuple(per))


def agent_loop_seconds(messages: Sequence[Message], preset_name: str, window: int = 200_000) -> tuple[float, int]:
    """CPU seconds spent inside the Compactor over the whole session, and the number of requests."""
    t = agent_loop_times(messages, preset_name, window)
    return t.seconds, t.requests


def bench_core(quick: bool = False) -> tuple[list[str], dict]:
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
    lines.append(f"growth from {small_n} to {big_n} generated requests (window 200k; CPU time, each request at its fastest of {REPEAT} runs in turn, gc.collect() + gc.freeze() before each):")
    for name in ("minicode", "mewcode"):
        # partial binds this iteration's preset: a lambda would read `name` whenever it runs.
        best = best_of_each({"small": partial(agent_loop_times, small, name), "big": partial(agent_loop_times, big, name)})
        s, b = best["small"], best["big"]
        ratio = b.seconds / s.seconds if s.seconds else float("inf")
        verdict = "linear" if ratio <= GROWTH_TARGET else "SUPERLINEAR"
        data["growth"][name] = {
            "small_requests": s.requests, "big_requests": b.requests, "small_s": s.seconds, "big_s": b.seconds, "ratio": ratio,
            "small_tail_ms_per_request": s.tail_ms, "big_tail_ms_per_request": b.tail_ms, "repeat": REPEAT,
        }
        lines.append(
            f"  {name:10} {s.requests} req {s.seconds:.3f} s, {b.requests} req {b.seconds:.3f} s "
            f"({1000 * b.seconds / b.requests:.2f} ms/request): {ratio:.1f}x time for {b.requests / s.requests:.0f}x requests, {verdict} (target <= {GROWTH_TARGET:.0f}x); "
            f"last 10% of requests {s.tail_ms:.3f} vs {b.tail_ms:.3f} ms/request"
        )
    return lines, data


register_section("core", bench_core)
