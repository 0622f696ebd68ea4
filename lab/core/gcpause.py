"""``gc_paused``: run a bulk job (a replay, an import) with the cyclic garbage collector paused.

Why: a replay allocates containers by the hundred thousand (rows, events,
compacted messages, the identity caches) and keeps nearly all of them until it
returns, so the collector, which runs every few hundred new containers, keeps
traversing a heap that only grows and never holds a cycle to find: about a
quarter of a 2,000-request replay (``python -m lab bench``). Pausing it is safe
for work that makes no reference cycles of its own: what it drops is freed by
reference counting, the rest is the result (``tests/core/test_gcpause.py``
checks a replay leaves nothing for the collector).

Re-enabling alone would only defer the cost: the objects made while paused are
all in the youngest generation, and the first allocation afterwards would
traverse them all. So at the end they are moved to the oldest generation
(``gc.freeze`` then ``gc.unfreeze``, two list splices), where only full
collections traverse them, as any long-lived object; nothing stays frozen. That
is skipped when someone else holds frozen objects (a bench run), as unfreezing
would release theirs.

The pause is process-wide, so it is kept to the job itself (a ``finally`` ends
it, also on errors), and concurrent or nested jobs share it: the collector comes
back, as it was before the first, when the last ends. The importers run a whole
import in the same pause (``lab.formats.jsonio`` re-exports it): an import, too,
keeps every container it makes (the transcript), and on a 100 MB file the
collector cost about as much as the parsing.

This module lives in the core, which imports nothing of the lab's readers, so
the replayer can use it without importing them.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_LOCK = threading.Lock()
_depth = 0
_restore = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the ``with`` body; see the module docstring."""
    global _depth, _restore
    with _LOCK:
        if _depth == 0:
            _restore = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _restore:
                if gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
