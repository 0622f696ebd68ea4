"""The replay's process-wide identity caches (``shared_counter``, ``shared_by_identity``): pure per message, so sharing changes no result."""

from __future__ import annotations

from lab.core.compactor import shared_counts
from lab.core.presets import preset
from lab.generator import GeneratorConfig, generate
from lab.replayer import replay
from lab.replayer.retention import clear_shared_targets
from lab.replayer.identity_caches import ByIdentity, clear_shared, shared_by_identity, shared_counter
from lab.core.config import with_value
from tests.builders import user


def test_one_counter_per_name_until_cleared() -> None:
    first = shared_counter("minicode")
    assert shared_counter("minicode") is first
    assert shared_counter("chars/3.5") is not first
    clear_shared()
    assert shared_counter("minicode") is not first


def test_a_counter_that_asks_a_provider_is_never_shared(monkeypatch) -> None:
    from lab.core.tokens import base

    made: list[object] = []
    monkeypatch.setitem(base._REGISTRY, "anthropic", lambda: made.append(object()) or made[-1])
    assert shared_counter("anthropic") is not shared_counter("anthropic")
    assert len(made) == 2


def test_one_cache_per_owner_and_kind() -> None:
    owner, other = object(), object()
    cache = shared_by_identity(owner, "parts")
    assert isinstance(cache, ByIdentity)
    assert shared_by_identity(owner, "parts") is cache
    assert shared_by_identity(owner, "counts") is not cache
    assert shared_by_identity(other, "parts") is not cache
    m = user("hello")
    cache.put(m, 3)
    assert shared_by_identity(owner, "parts").get(m) == 3


def test_a_replay_with_the_last_replays_caches_equals_one_from_cold() -> None:
    t = generate(GeneratorConfig(seed=11, requests=150))
    cfg = with_value(preset("minicode"), "window", 24_000)
    other = with_value(cfg, "watermark.ratio", 0.7)
    clear_shared()
    clear_shared_targets()
    cold = replay(t, cfg)
    # The caches now hold this transcript's messages; a replay under another config reuses them.
    held = shared_by_identity(shared_counts(shared_counter(cfg.counter)), "parts")
    assert len(held) >= len(t.messages) // 2
    warm_other = replay(t, other)
    warm = replay(t, cfg)
    assert warm == cold and warm.to_json() == cold.to_json()
    assert [tuple(warm.context_at(k)) for k in range(len(warm.rows))] == [tuple(cold.context_at(k)) for k in range(len(cold.rows))]
    clear_shared()
    assert replay(t, other) == warm_other
