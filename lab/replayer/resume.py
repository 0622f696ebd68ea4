"""Resuming a replay from an earlier one: a watermark slider's move replays only from where the two configs part.

Why: the Timeline's threshold knob is the one a user moves most, and on a long
session every move replayed every request, although two configs that differ
only in the watermark's threshold make the very same requests until the first
one at which either config's gate says anything but "below".

The argument, for configs ``A`` and ``B`` equal except in the gate's fields
(``WatermarkConfig.GATE_FIELDS``, declared beside the model they belong to): those
fields are read by one function, ``watermark.threshold``, and its result by the
watermark gate alone (and by the replay's ``over_watermark`` row field, which a
resumed replay recomputes). A gate that answers "below" writes no event and
changes no state. So while ``A``'s gate answered "below" at every request, with
an estimate ``B``'s threshold would also call below, ``B``'s replay took the
same steps from the same state and wrote the same rows. ``divergence`` finds
the first request where that stops holding, from what ``A``'s replay recorded
(``Trace.gates``: each request's decision, its estimate and threshold). When
both thresholds are equal (a ratio moved in reserve mode) nothing ever parts.

A replay records a ``Trace``: its rows and contexts, each request's gate, and
every ``interval`` requests a ``Checkpoint`` of its state before that request
(the Compactor's decisions, the spill store, the prompt caches, the clock, the
loop's own variables). Memo-like state (the Compactor's incremental tracks,
the running sums, the validator, recall's multisets) is not kept: rebuilt from
the context on the first resumed request, it gives the same values, which is
what those structures' ``incremental=False`` references already guarantee.

``find`` returns, for a new replay, the checkpoint of a compatible trace that
lets it skip the most requests; ``replay`` then starts at that checkpoint with
the trace's rows before it (``over_watermark`` recomputed). Only replays whose
every other input is the same are compatible: the transcript's own message
objects, the config outside the gate's fields (``CompactionConfig.gate_free_fingerprint``), the settings, the counter object,
the lab's own spill store and rule-based summarizer (a caller's store or
summarizer could hold state the trace never saw), and the replay's flags.
A resumed report equals the full replay's field for field (tested on random
thresholds); ``clear_caches`` forgets the traces with the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

from ..core.config import CompactionConfig
from ..core.events import StateSnapshot
from ..core.lru import SharedLRU
from ..core.messages import Message, Usage
from ..core.stages.watermark import WatermarkConfig, WatermarkDecision, exceeds, threshold
from ..core.store import MemoryStore
from .cache import PromptCache
from .report import Contexts, Rows
from .inputs import ReplayClock

__all__ = ["MAX_TRACES", "CHECKPOINTS", "Checkpoint", "Trace", "divergence", "find", "interval_for", "keep_trace", "resume_key", "clear_traces"]

# Traces kept per transcript (the last knob positions), and checkpoints per trace (their spacing follows). A trace
# holds its replay's contexts, which outlive the report: few are kept, for the transcripts replayed last.
MAX_TRACES = 2
CHECKPOINTS = 32
_MIN_INTERVAL = 8
# Keyed by the transcript given to replay(): an entry holds it, so its id is not reused while kept.
_TRACES: SharedLRU[list[Trace]] = SharedLRU(2)


@dataclass
class Checkpoint:
    """A replay's state just before request ``k``; every part is its own copy, forked again on each resume."""

    k: int
    context: list[Message]
    consumed: int
    raw_tokens: int
    usage: Usage | None
    compactions: dict[str, int]
    hidden_written: dict[str, bool]
    # Packed: the snapshots of a ledger that only grew share its entries (``CompactorState.snapshot``).
    state: StateSnapshot
    store: MemoryStore
    # Summary results and summarizer calls so far (a call that raised left no result).
    summaries: int
    summary_calls: int
    cache: PromptCache
    raw_cache: PromptCache
    clock: ReplayClock


@dataclass
class Trace:
    """What one replay recorded for the next one to resume from."""

    key: tuple[Any, ...]
    messages: Sequence[Message]
    watermark: WatermarkConfig
    window: int
    interval: int
    gates: list[WatermarkDecision | None] = field(default_factory=list)
    rows: Rows = field(default_factory=Rows)
    contexts: Contexts = field(default_factory=Contexts)
    # The usage of each summary call so far (a resume prices the ones before its checkpoint).
    summaries: list[Any] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)


def interval_for(requests: int) -> int:
    """Requests between checkpoints: about ``CHECKPOINTS`` per replay, so a resume redoes at most 1/CHECKPOINTS of it."""
    return max(_MIN_INTERVAL, -(-requests // CHECKPOINTS))


def resume_key(cfg: CompactionConfig, settings_key: str, counter: object, flags: tuple[Any, ...]) -> tuple[Any, ...]:
    """Everything a compatible earlier replay must share: the config outside the gate's fields, the settings, the counter and the flags."""
    # The counter object itself: compared by identity (or by value, for a counter that defines it), and kept alive.
    return (cfg.gate_free_fingerprint, settings_key, counter, flags)


def divergence(trace: Trace, watermark: WatermarkConfig, window: int) -> int:
    """The first request at which a replay under ``watermark`` may part from ``trace`` (its length when none does)."""
    if window != trace.window:
        return 0
    mine = threshold(watermark, window, "auto")
    if mine == threshold(trace.watermark, window, "auto"):
        # The same threshold: the gate's decisions and event texts are the trace's own, everywhere.
        return len(trace.gates)
    for k, gate in enumerate(trace.gates):
        if gate is None:
            return k
        if gate.reason == "disabled":
            continue
        if gate.reason != "below" or mine is None or exceeds(gate.estimate, mine, watermark.mode):
            return k
    return len(trace.gates)


def find(given: object, key: tuple[Any, ...], messages: Sequence[Message], watermark: WatermarkConfig, window: int) -> tuple[Trace, Checkpoint] | None:
    """The compatible trace and checkpoint that skip the most requests, or None."""
    traces = _TRACES.get(id(given), list, holds=given)
    best: tuple[Trace, Checkpoint] | None = None
    for trace in traces:
        if trace.key != key or len(trace.messages) != len(messages):
            continue
        if any(a is not b for a, b in zip(trace.messages, messages, strict=True)):
            continue
        upto = divergence(trace, watermark, window)
        usable = [c for c in trace.checkpoints if c.k <= upto]
        if usable and (best is None or usable[-1].k > best[1].k):
            best = (trace, usable[-1])
    return best


def keep_trace(given: object, trace: Trace) -> None:
    """Keep the trace of a finished replay of ``given`` for later ones (the last ``MAX_TRACES`` per transcript)."""
    traces = _TRACES.get(id(given), list, holds=given)
    traces.append(trace)
    del traces[:-MAX_TRACES]


def clear_traces() -> None:
    _TRACES.clear()
