"""lab.core.gcpause: the collector is paused for the job only, and a replay leaves it nothing to find."""

from __future__ import annotations

import gc

import pytest

from lab.core.gcpause import gc_paused
from lab.core.presets import preset
from lab.generator import generate
from lab.replayer import replay
from lab.core.config import with_value


def test_paused_inside_restored_after_also_on_errors_and_nested() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_collector_switched_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_replay_runs_paused_and_makes_no_garbage_cycles() -> None:
    # Why pausing is safe: nothing the replay drops waits for the collector.
    seen: list[bool] = []
    cfg = with_value(preset("minicode"), "window", 20_000)
    t = generate(requests=60, seed=3)
    gc.collect()
    report = replay(t, cfg, progress=lambda done, total: seen.append(gc.isenabled()))
    assert report.requests == 60 and seen and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        replay(t, cfg)
        assert gc.collect() == 0
    finally:
        gc.enable()
