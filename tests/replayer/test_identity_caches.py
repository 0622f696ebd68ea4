"""The replay's process-wide identity caches (``shared_counter``, ``shared_by_identity``): pure per message, so sharing changes no result."""

from __future__ import annotations

from lab.core.compactor import shared_counts
from lab.core.presets import preset
from lab.generator import GeneratorConfig, generate
from lab.replayer import replay
from lab.replayer.retention import clear_shared_targets
from lab.replayer.identity_caches import ByIdentity, InContext, clear_shared, shared_by_identity, shared_counter
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


def test_an_entry_keeps_its_message_so_no_other_object_takes_its_id() -> None:
    import gc

    cache: ByIdentity[int] = ByIdentity(limit=3)
    cache.put(user("kept alive by the cache"), 7)
    gc.collect()
    # Messages made after the first one died (it did not: the cache holds it) never find its value.
    assert all(cache.get(user(f"other {n}")) is None for n in range(50))
    [kept] = cache._table[1]
    assert cache.get(kept) == 7 and len(cache) == 1
    # Putting the same message again replaces its value and keeps it once.
    cache.put(kept, 8)
    assert cache.get(kept) == 8 and cache._table[1] == [kept]


def test_a_generation_is_let_go_two_generations_later_unless_asked_for_again() -> None:
    cache: ByIdentity[int] = ByIdentity(limit=2)
    first, second = user("first"), user("second")
    cache.put(first, 1)
    cache.put(second, 2)
    # A full young generation becomes the old one: still found, and a value found there moves back to the young one.
    third = user("third")
    cache.put(third, 3)
    assert cache.get(first) == 1 and cache.get(second) is not None
    # Two generations on, what nobody asked for is gone with its message.
    for n in range(4):
        cache.put(user(f"more {n}"), n)
    assert cache.get(third) is None
    assert all(third is not m for generation in (cache._table[1], cache._table[3]) for m in generation)
    # A cache that follows a context grows its generations to twice that context.
    cache.fit(10)
    assert cache.limit == 20
    cache.fit(3)
    assert cache.limit == 20


def test_in_context_entries_live_while_their_message_stays() -> None:
    a, b, c = user("a"), user("b"), user("c")
    entries: InContext[str] = InContext()
    assert entries.put(a, "A") == "A" and entries.put(b, "B") == "B" and entries.put(c, "C") == "C"
    # An equal message that is another object is not the one asked about.
    assert entries.get(user("a")) is None and entries.get(a) == "A"
    # b left; c left and came back further on (still in the context): only b's entry goes.
    entries.forget([b, c], [c])
    assert entries.get(b) is None and entries.get(a) == "A" and entries.get(c) == "C"
