"""Process-wide memos of the last few keys: what replays of one transcript share.

A slider's moves, a compare's configs and a sweep's trials replay the same
message objects again and again, and much of a replay's work is a pure
function of those objects: token counts, dedup's decoded calls, retention's
targets, recall's index. Each such memo is a ``SharedLRU``: bounded (the last
``size`` keys), safe to use from the threads Streamlit runs pages in, and
emptied by its owner's ``clear`` function (``lab.replayer.clear_caches``
empties them all, so a bench's "first replay" pays for everything again).

Keys made of object identities (``id(counter)``, ``tuple(map(id, raw))``)
are only safe while those objects live, so ``get`` takes what the entry must
hold alive (``holds``): an id in a live entry can never be reused by another
object. A value is built outside the lock, since building can take a while;
two threads that miss the same key at once both build, and the first stored
wins, which is harmless for pure values.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["SharedLRU"]

V = TypeVar("V")


class SharedLRU(Generic[V]):
    """The values of the last ``size`` keys asked for, each built once by ``get``'s ``build``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, tuple[object, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], V], *, holds: object = None) -> V:
        """The value kept for ``key``, else ``build()``'s, kept with ``holds`` (what an identity key names)."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[1]
        value = build()
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                return hit[1]
            self._entries[key] = (holds, value)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
