"""The growth measurement of the bench: best of several runs, the steady-state tail, the GC left as found."""

from __future__ import annotations

import gc

import pytest

from lab.bench.core import Timing, agent_loop_seconds, agent_loop_times, best_of, best_of_each, fastest
from lab.bench.replay import replay_timing
from tests.builders import session


def test_tail_is_the_mean_of_the_last_tenth() -> None:
    t = Timing(seconds=0.0, requests=20, per_request=tuple([0.001] * 18 + [0.003, 0.005]))
    assert t.tail_ms == pytest.approx(4.0)
    # Fewer than ten requests: the last one alone.
    assert Timing(seconds=0.0, requests=3, per_request=(0.001, 0.002, 0.007)).tail_ms == pytest.approx(7.0)
    assert Timing(seconds=0.0, requests=0, per_request=()).tail_ms == 0.0


def test_best_of_keeps_the_fastest_run_and_unfreezes() -> None:
    runs = iter([3.0, 1.0, 2.0])
    frozen: list[int] = []

    def run() -> Timing:
        frozen.append(gc.get_freeze_count())
        s = next(runs)
        return Timing(seconds=s, requests=1, per_request=(s,))

    assert best_of(run, repeat=3).seconds == 1.0
    # Every run saw the heap frozen, and nothing stays frozen afterwards.
    assert len(frozen) == 3 and all(n > 0 for n in frozen)
    assert gc.get_freeze_count() == 0


def test_runs_take_turns_and_each_keeps_its_fastest() -> None:
    order: list[str] = []
    times = {"small": iter([0.3, 0.1, 0.2]), "big": iter([2.0, 3.0, 1.5])}

    def runner(key: str):  # type: ignore[no-untyped-def]
        def run() -> Timing:
            order.append(key)
            s = next(times[key])
            return Timing(seconds=s, requests=1, per_request=(s,))

        return run

    best = best_of_each({"small": runner("small"), "big": runner("big")}, repeat=3)
    # Alternating, so a slow spell of the machine hits both sides of the ratio.
    assert order == ["small", "big"] * 3
    assert best["small"].seconds == 0.1 and best["big"].seconds == 1.5


def test_each_request_counts_at_its_fastest() -> None:
    # Request 0 was slow in the first run, request 1 in the second: neither run is clean, their minima are.
    a = Timing(seconds=0.5, requests=2, per_request=(0.3, 0.1))
    b = Timing(seconds=0.45, requests=2, per_request=(0.1, 0.3))
    both = fastest([a, b])
    assert both.per_request == (0.1, 0.1)
    # Time outside the requests (0.1 and 0.05 here) counts at its own fastest.
    assert both.seconds == pytest.approx(0.25)
    assert both.requests == 2


def test_runs_of_different_lengths_fall_back_to_the_fastest_whole_run() -> None:
    a = Timing(seconds=0.5, requests=2, per_request=(0.3, 0.2))
    b = Timing(seconds=0.4, requests=1, per_request=(0.4,))
    assert fastest([a, b]) is b
    with pytest.raises(ValueError):
        fastest([])


def test_best_of_unfreezes_when_a_run_fails() -> None:
    def run() -> Timing:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        best_of(run)
    assert gc.get_freeze_count() == 0


def test_per_request_times_cover_every_request() -> None:
    msgs = session(n_reads=5, size=500)
    t = agent_loop_times(msgs, "minicode")
    assert t.requests == len(t.per_request) == sum(1 for i, m in enumerate(msgs) if m.role == "assistant" and i > 0)
    assert t.seconds == pytest.approx(sum(t.per_request))
    assert agent_loop_seconds(msgs, "minicode")[1] == t.requests
    r = replay_timing(msgs, "mewcode", 32_000)
    assert r.requests == len(r.per_request) == 6
    assert r.seconds >= sum(r.per_request) - 1e-9
