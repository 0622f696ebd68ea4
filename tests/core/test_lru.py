import gc
import threading
import weakref

from lab.core.lru import SharedLRU


class _Owner:
    pass


def test_a_value_is_built_once_per_key_and_kept_for_the_last_keys() -> None:
    built: list[str] = []
    memo: SharedLRU[str] = SharedLRU(2)

    def make(key: str) -> str:
        built.append(key)
        return key.upper()

    assert memo.get("a", lambda: make("a")) == "A"
    assert memo.get("a", lambda: make("a")) == "A"
    memo.get("b", lambda: make("b"))
    memo.get("a", lambda: make("a"))  # a is now the newest: b goes first
    memo.get("c", lambda: make("c"))
    assert len(memo) == 2
    memo.get("a", lambda: make("a"))
    memo.get("b", lambda: make("b"))
    assert built == ["a", "b", "c", "b"]


def test_an_identity_key_stays_valid_while_its_entry_holds_the_object() -> None:
    memo: SharedLRU[int] = SharedLRU(1)
    owner = _Owner()
    gone = weakref.ref(owner)
    key = id(owner)
    memo.get(key, lambda: 1, holds=owner)
    del owner
    gc.collect()
    assert gone() is not None  # held by the entry, so no other object can take its id
    memo.get("other", lambda: 2)
    gc.collect()
    assert gone() is None  # evicted with its entry


def test_clear_forgets_everything() -> None:
    memo: SharedLRU[int] = SharedLRU(4)
    memo.get("a", lambda: 1)
    memo.clear()
    assert len(memo) == 0
    assert memo.get("a", lambda: 2) == 2


def test_threads_missing_the_same_key_get_one_value() -> None:
    memo: SharedLRU[object] = SharedLRU(4)
    start = threading.Barrier(4)
    seen: list[object] = []

    def ask() -> None:
        start.wait()
        seen.append(memo.get("k", object))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(x) for x in seen}) == 1
