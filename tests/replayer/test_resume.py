"""A replay resumed from an earlier one's checkpoint is the full replay, field for field; and it only resumes when that holds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.config import CompactionConfig
from lab.core.events import CompactorState
from lab.core.messages import Usage
from lab.core.presets import preset, preset_names
from lab.core.stages.dedup import DedupState
from lab.core.stages.spill import SpillState
from lab.core.stages.watermark import BreakerState, WatermarkConfig, WatermarkDecision
from lab.core.store import MemoryStore
from lab.core.tokens import MiniCodeCounter
from lab.formats import load
from lab.generator import generate
from lab.replayer import PromptCache, Report, clear_caches, replay
from lab.replayer import engine, resume
from lab.replayer.settings import CacheConfig
from lab.core.config import with_value, with_values
from tests.builders import session
from tests.conftest import CORPUS_FILES, corpus_id

# Long enough to compact several times at this window under every preset, short enough for many examples.
_SESSION = generate(requests=160, seed=11)
_WINDOW = 24_000


def _config(name: str, **watermark: Any) -> CompactionConfig:
    return with_values(preset(name), {"window": _WINDOW, **{f"watermark.{key}": value for key, value in watermark.items()}})


def _same(a: Report, b: Report) -> None:
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert a._contexts is not None and b._contexts is not None
    assert len(a._contexts) == len(b._contexts)
    for k, (x, y) in enumerate(zip(a._contexts, b._contexts, strict=True)):
        assert x == y, f"context {k} differs"
    assert a.final_context() == b.final_context()


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The request each replay resumed at (None: from the start), in call order."""
    seen: list[int | None] = []
    real = engine.find

    def spy(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        seen.append(found[1].k if found is not None else None)
        return found

    monkeypatch.setattr(engine, "find", spy)
    clear_caches()
    return seen


# -- the guarantee ------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(preset_names()),
    first=st.floats(min_value=0.3, max_value=1.0),
    then=st.floats(min_value=0.3, max_value=1.0),
    reserve=st.integers(min_value=0, max_value=12_000),
)
def test_resumed_replay_equals_full_replay(starts: list[int | None], name: str, first: float, then: float, reserve: int) -> None:
    clear_caches()
    replay(_SESSION, _config(name, ratio=first))
    moved = _config(name, ratio=then, summary_reserve=reserve)
    resumed = replay(_SESSION, moved)
    full = replay(_SESSION, moved, resume=False)
    _same(resumed, full)
    assert starts[0] is None and starts[1] is not None


def test_a_move_skips_the_requests_before_the_configs_part(starts: list[int | None]) -> None:
    replay(_SESSION, _config("minicode", ratio=0.95))
    resumed = replay(_SESSION, _config("minicode", ratio=0.9))
    trace = resume._TRACES.get(id(_SESSION), list)[0]
    first_action = next(k for k, g in enumerate(trace.gates) if g is None or g.reason != "below")
    # Resumed at the last checkpoint at or before the first request either threshold acts on, never after it.
    assert starts[1] is not None and 0 < starts[1] <= first_action
    assert first_action - starts[1] < trace.interval
    _same(resumed, replay(_SESSION, _config("minicode", ratio=0.9), resume=False))


def test_a_checkpoint_serves_many_resumes(starts: list[int | None]) -> None:
    # Each resume forks the checkpoint it starts from: going back to a position gives the same report again.
    replay(_SESSION, _config("lab", ratio=0.9))
    once = replay(_SESSION, _config("lab", ratio=0.6))
    replay(_SESSION, _config("lab", ratio=0.75))
    again = replay(_SESSION, _config("lab", ratio=0.6))
    assert starts[1] is not None and starts[3] is not None
    _same(once, again)


def test_every_row_keeps_its_own_over_watermark(starts: list[int | None]) -> None:
    high = replay(_SESSION, _config("minicode", ratio=1.0))
    low = replay(_SESSION, _config("minicode", ratio=0.3))
    assert starts[1] is not None
    assert low.watermark_tokens < high.watermark_tokens
    assert low.rows[0] is not high.rows[0]
    _same(low, replay(_SESSION, _config("minicode", ratio=0.3), resume=False))


# -- when it must not resume ----------------------------------------------------------------------


def test_another_field_never_resumes(starts: list[int | None]) -> None:
    replay(_SESSION, _config("minicode"))
    cfg = _config("minicode")
    replay(_SESSION, with_value(cfg, "spill.threshold", cfg.spill.threshold // 2))
    other_window = with_value(_config("minicode", ratio=0.7), "window", _WINDOW * 2)
    replay(_SESSION, other_window)
    assert starts == [None, None, None]


@pytest.mark.parametrize("given", ["store", "summarizer", "counter"])
def test_a_callers_store_or_summarizer_is_never_resumed(starts: list[int | None], given: str) -> None:
    from lab.core.summarizers.rules import RuleSummarizer

    replay(_SESSION, _config("minicode"))
    parts: dict[str, Any] = {"store": {"store": MemoryStore()}, "summarizer": {"summarizer": RuleSummarizer()}, "counter": {"counter": MiniCodeCounter()}}[given]
    replay(_SESSION, _config("minicode", ratio=0.7), **parts)
    assert starts[-1] is None


def test_another_transcript_or_flags_never_resume(starts: list[int | None]) -> None:
    replay(_SESSION, _config("minicode"))
    replay(generate(requests=160, seed=11), _config("minicode", ratio=0.7))
    replay(_SESSION, _config("minicode", ratio=0.7), recall=False)
    replay(_SESSION, _config("minicode", ratio=0.7), anchor="recorded")
    assert starts == [None, None, None, None]


def test_a_replay_told_not_to_resume_keeps_nothing_to_resume_from(starts: list[int | None]) -> None:
    # No trace and no checkpoints: a caller that never resumes (the benches) pays no memory for them.
    full = replay(_SESSION, _config("minicode"), resume=False)
    assert resume._TRACES.get(id(_SESSION), list) == []
    again = replay(_SESSION, _config("minicode", ratio=0.7))
    assert starts == [None]
    # The replays that resume still record their trace, and a later move resumes from it.
    _same(replay(_SESSION, _config("minicode")), full)
    assert replay(_SESSION, _config("minicode", ratio=0.7)) is not again and starts[-1] is not None


def test_clear_caches_forgets_the_traces(starts: list[int | None]) -> None:
    replay(_SESSION, _config("minicode"))
    clear_caches()
    replay(_SESSION, _config("minicode", ratio=0.7))
    assert starts == [None, None]


# -- divergence ---------------------------------------------------------------------------------------


def _trace(gates: list[WatermarkDecision | None], **watermark: Any) -> resume.Trace:
    return resume.Trace(key=(), messages=[], watermark=WatermarkConfig(**watermark), window=10_000, interval=8, gates=gates)


def _below(estimate: int) -> WatermarkDecision:
    return WatermarkDecision(False, estimate, 8_500, "below")


def test_divergence_is_the_first_request_either_threshold_acts_on() -> None:
    trace = _trace([_below(1_000), _below(7_000), _below(8_000), WatermarkDecision(True, 9_000, 8_500, "above")], ratio=0.85)
    assert resume.divergence(trace, WatermarkConfig(ratio=0.9), 10_000) == 3
    assert resume.divergence(trace, WatermarkConfig(ratio=0.75), 10_000) == 2  # 8,000 > 7,500
    assert resume.divergence(trace, WatermarkConfig(ratio=0.7), 10_000) == 2  # 7,000 == 7,000 is not above
    assert resume.divergence(trace, WatermarkConfig(ratio=0.69), 10_000) == 1
    assert resume.divergence(trace, WatermarkConfig(ratio=0.85), 10_000) == 4  # the same threshold: never
    assert resume.divergence(trace, WatermarkConfig(ratio=0.85), 20_000) == 0  # another window: at once


def test_divergence_in_reserve_mode_and_when_disabled() -> None:
    reserve = _trace([_below(1_000), WatermarkDecision(True, 9_000, 8_000, "above")], mode="reserve", summary_reserve=1_000, safety_margin=1_000, min_window=0)
    # The ratio is not read in reserve mode: the threshold, and so every decision, stays.
    assert resume.divergence(reserve, WatermarkConfig(mode="reserve", ratio=0.3, summary_reserve=1_000, safety_margin=1_000, min_window=0), 10_000) == 2
    assert resume.divergence(reserve, WatermarkConfig(mode="reserve", summary_reserve=500, safety_margin=1_000, min_window=0), 10_000) == 1
    # A small-window skip has no threshold: every request parts at once.
    assert resume.divergence(reserve, WatermarkConfig(mode="reserve", summary_reserve=1_000, safety_margin=1_000, min_window=20_000), 10_000) == 0
    off = _trace([WatermarkDecision(False, 9_000, None, "disabled")] * 3, enabled=False)
    assert resume.divergence(off, WatermarkConfig(enabled=False, ratio=0.2), 10_000) == 3
    unknown = _trace([_below(10), None])
    assert resume.divergence(unknown, WatermarkConfig(ratio=0.5), 10_000) == 1


# -- the parts a checkpoint forks ------------------------------------------------------------------------


def test_compactor_state_fork_is_independent_and_drops_only_the_tracks() -> None:
    stages = {"spill": SpillState(paths={"a": "p"}), "dedup": DedupState(seen={"x"}), "watermark": BreakerState(2)}
    state = CompactorState(session_id="s", stages=stages, claims={"a": "spill"}, anchor=Usage(input_tokens=3))
    state.tracks["auto"] = object()
    copy = state.fork()
    assert copy == state and copy.tracks == {}
    copy.stages["spill"].paths["b"] = "q"
    copy.stages["dedup"].seen.add("y")
    copy.stages["dedup"].ledger["z"] = "stub"
    copy.claims["z"] = "dedup"
    assert state.spill_paths == {"a": "p"} and state.stages["dedup"] == DedupState(seen={"x"}) and state.claims == {"a": "spill"}


def test_memory_store_fork_is_independent() -> None:
    store = MemoryStore()
    path = store.write("s", "t1", "hello", {})
    copy = store.fork()
    assert copy.read(path) == "hello"
    other = copy.write("s", "t2", "world", {})
    assert copy.exists(other) and not store.exists(other)


def test_prompt_cache_fork_goes_on_as_the_original_would() -> None:
    msgs = session(n_reads=4, size=900)
    a, reference = (PromptCache(CacheConfig(min_cacheable_tokens=10), MiniCodeCounter()) for _ in range(2))
    for cache in (a, reference):
        cache.step(msgs[:4], 0.0)
    b = a.fork()
    assert b.step(msgs[:6], 10.0) == reference.step(msgs[:6], 10.0)
    # The fork's own steps never reach the original, which goes on as if it had never been forked.
    b.step(msgs[:2], 20.0)
    got = a.step(msgs[:6], 10.0)
    assert got.cached > 0
    fresh = PromptCache(CacheConfig(min_cacheable_tokens=10), MiniCodeCounter())
    fresh.step(msgs[:4], 0.0)
    assert got == fresh.step(msgs[:6], 10.0)


# -- real sessions ----------------------------------------------------------------------------------------

_SMALL_CORPUS = [p for p in CORPUS_FILES if p.stat().st_size < 1_500_000]


@pytest.mark.parametrize("path", _SMALL_CORPUS, ids=corpus_id)
@pytest.mark.parametrize("name", ["minicode", "mewcode", "lab"])
def test_corpus_moves_resume_to_the_full_replay(starts: list[int | None], path: Any, name: str) -> None:
    t = load(path)
    cfg = with_value(preset(name), "window", 32_000)
    replay(t, cfg)
    for ratio in (0.6, 0.95):
        moved = with_value(cfg, "watermark.ratio", ratio)
        _same(replay(t, moved), replay(t, moved, resume=False))
