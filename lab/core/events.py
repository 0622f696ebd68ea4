"""What the Compactor reports and keeps: events, a stage run's result, the per-session state, one request's context.

Stages return events inside their decisions (``lab.core.stages.contract``);
``StageResult`` is a stage's decision once the Compactor has applied it.
Decisions that must persist across requests (the spill ledger, the dedup
ledger, the breaker count) are each stage's own typed state, kept in
``CompactorState.stages``; the usage anchor and the clock are the Compactor's.
``StageContext`` is what the Compactor knows while it serves one request: the
stages never see it, they get a ``View``.
"""

from __future__ import annotations

import copy
import dataclasses
import weakref
from dataclasses import dataclass, field
from collections.abc import Callable, Mapping, Sequence
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, Literal

from .messages import Boundary, Message, ToolSpec, Usage

if TYPE_CHECKING:  # pragma: no cover
    from .config import CompactionConfig
    from .store import SpillStore
    from .summarizers.base import Summarizer
    from .tokens.base import TokenCounter

__all__ = ["Trigger", "Event", "StageResult", "CompactorState", "StateSnapshot", "StageContext"]

Trigger = Literal["auto", "manual", "emergency", "reactive", "dispatch"]


@dataclass(frozen=True)
class Event:
    """One thing a stage did (or tried and failed to do), for reports and charts."""

    stage: str
    trigger: str
    tokens_before: int
    tokens_after: int
    ids: tuple[str, ...] = ()
    strategy: str | None = None
    success: bool = True
    detail: str = ""
    summary_text: str | None = None
    attachment: str | None = None

    @property
    def tokens_freed(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def effective(self) -> bool:
        return self.success and self.tokens_freed > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "trigger": self.trigger,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_freed": self.tokens_freed,
            "ids": list(self.ids),
            "strategy": self.strategy,
            "success": self.success,
            "detail": self.detail,
            "summary_text": self.summary_text,
            "attachment": self.attachment,
        }


@dataclass(frozen=True)
class StageResult:
    messages: list[Message]
    events: tuple[Event, ...] = ()
    boundary: Boundary | None = None
    # How many leading messages are the input's own objects, untouched; None when the stage does not say.
    unchanged: int | None = None


@dataclass
class CompactorState:
    """Cross-request memory of one session's compaction: the Compactor's own, and each stage's typed state.

    ``stages`` maps a stage's name to its state (``SpillState``, ``DedupState``,
    ``MicrocompactState``, ``BreakerState``, ``RecoveryState``): the stage
    reads it and returns its next value in its ``Decision``; only the
    Compactor writes it. Everything else here is the Compactor's.
    """

    session_id: str = "session"
    # name -> that stage's state, created from the stage's ``State`` on first use.
    stages: dict[str, Any] = field(default_factory=dict)
    # tool_use_id -> the stage that froze a stub for it (spill or dedup), so the other leaves it alone.
    claims: dict[str, str] = field(default_factory=dict)
    last_request_time: float | None = None
    # Provider-reported usage and the number of messages it covered.
    anchor: Usage | None = None
    anchor_messages: int = 0
    # The first user request, verbatim, so recovery can re-insert it after truncation.
    first_request: str | None = None
    # The Compactor's incremental bookkeeping: a Track per trigger path (its last output, token
    # prefix sums, the stages' memos). Pure speed-up: dropping it only costs one run from scratch.
    tracks: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # The packs of the last ``snapshot`` (container's place -> a weak reference to its pack): the next snapshot
    # of a container that has only grown since shares their chunks. Pure saving, like ``tracks``.
    packs: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False, compare=False)

    def stage(self, name: str, make: Callable[[], Any] | None = None) -> Any:
        """The state of stage ``name``, made by ``make`` on first use (None for a stage that keeps none)."""
        state = self.stages.get(name)
        if state is None and make is not None:
            state = self.stages[name] = make()
        return state

    @property
    def spill_paths(self) -> Mapping[str, str]:
        """tool_use_id -> where the spill stage stored that result (read by the replay's recall).

        The spill state's own dict: a Compactor creates every stage's state up front, so a reader that
        holds this mapping sees it grow.
        """
        spill = self.stages.get("spill")
        return spill.paths if spill is not None else {}

    def fork(self) -> CompactorState:
        """An independent copy of the decisions, to go on from (a replay resumed at a checkpoint).

        Every stage's state and every container is copied, so neither copy's later
        requests reach the other's; the incremental bookkeeping is left out
        (``tracks``), which only costs the copy's first request a run from scratch,
        with the same result.
        """
        return CompactorState(
            session_id=self.session_id,
            stages={name: _own_state(value) for name, value in self.stages.items()},
            claims=dict(self.claims),
            last_request_time=self.last_request_time,
            anchor=self.anchor,
            anchor_messages=self.anchor_messages,
            first_request=self.first_request,
        )

    def snapshot(self) -> StateSnapshot:
        """The decisions so far, packed to go on from later (``StateSnapshot.fork``), as a resume checkpoint keeps them.

        ``fork`` made now, in much less memory. A replay keeps a checkpoint every few requests, each with the
        whole ledgers: a dict is packed as tuples of its keys and of its values, a set or a list as tuples of
        its items, and a container that has only grown since the last snapshot shares that snapshot's tuples
        and adds one of what is new (``_Pack``), so N checkpoints of a growing ledger hold it about once.
        """
        packs: dict[tuple[str, str], Any] = {}
        stages = tuple((name, _packed_state(name, value, self.packs, packs)) for name, value in self.stages.items())
        claims = _Pack.of(self.claims, _alive(self.packs.get(("", "claims"))))
        packs[("", "claims")] = weakref.ref(claims)
        self.packs = packs
        return StateSnapshot(
            session_id=self.session_id,
            stages=stages,
            claims=claims,
            last_request_time=self.last_request_time,
            anchor=self.anchor,
            anchor_messages=self.anchor_messages,
            first_request=self.first_request,
        )


def _alive(ref: Any) -> Any:
    return ref() if ref is not None else None


class _Pack:
    """A dict, set or list of immutable values, packed as chunks (tuples) of its keys, and of its values for a dict.

    ``of(container, earlier)`` shares the chunks of ``earlier`` (a pack of the same container) when the
    container still holds what they hold, in the same order for a dict or a list (checked, value by value, in
    C), and adds one chunk of what is new; otherwise it packs the container whole. ``unpack`` gives a
    container of the same type equal to the one packed.
    """

    __slots__ = ("kind", "keys", "values", "size", "__weakref__")

    def __init__(self, kind: type, keys: tuple[tuple[Any, ...], ...], values: tuple[tuple[Any, ...], ...], size: int) -> None:
        self.kind, self.keys, self.values, self.size = kind, keys, values, size

    @staticmethod
    def of(container: dict | set | list, earlier: _Pack | None = None) -> _Pack:
        kind = type(container)
        if earlier is not None and earlier.kind is kind and earlier.size and len(container) >= earlier.size:
            grown = earlier._grown(container)
            if grown is not None:
                return grown
        if kind is dict:
            assert isinstance(container, dict)
            return _Pack(dict, _chunk(tuple(container)), _chunk(tuple(container.values())), len(container))
        return _Pack(kind, _chunk(tuple(container)), (), len(container))

    def _grown(self, container: dict | set | list) -> _Pack | None:
        """This pack plus a chunk of what ``container`` gained since, or None when it changed otherwise."""
        n = self.size
        if self.kind is set:
            assert isinstance(container, set)
            if not all(container.issuperset(chunk) for chunk in self.keys):
                return None
            new = tuple(container.difference(*self.keys))
            if len(new) != len(container) - n:
                return None
            return _Pack(set, self.keys + _chunk(new), (), len(container))
        keys = iter(container)
        if any(tuple(islice(keys, len(chunk))) != chunk for chunk in self.keys):
            return None
        if self.kind is dict:
            assert isinstance(container, dict)
            values = iter(container.values())
            if any(tuple(islice(values, len(chunk))) != chunk for chunk in self.values):
                return None
            return _Pack(dict, self.keys + _chunk(tuple(keys)), self.values + _chunk(tuple(values)), len(container))
        return _Pack(self.kind, self.keys + _chunk(tuple(keys)), (), len(container))

    def unpack(self) -> Any:
        if self.kind is dict:
            return dict(zip(chain.from_iterable(self.keys), chain.from_iterable(self.values), strict=True))
        return self.kind(chain.from_iterable(self.keys))


def _chunk(items: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    return (items,) if items else ()


def _packed_state(name: str, state: Any, earlier: dict[tuple[str, str], Any], packs: dict[tuple[str, str], Any]) -> Any:
    """A stage's state with its containers packed (``_Pack``, sharing ``earlier``'s; the new ones go in ``packs``).

    A state that is not a dataclass is deep-copied, as ``fork`` does.
    """
    if not dataclasses.is_dataclass(state) or isinstance(state, type):
        return copy.deepcopy(state)
    packed = copy.copy(state)
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if type(value) in (dict, set, list):
            pack = _Pack.of(value, _alive(earlier.get((name, f.name))))
            packs[(name, f.name)] = weakref.ref(pack)
            object.__setattr__(packed, f.name, pack)
    return packed


def _own_state(state: Any) -> Any:
    """A stage's state with containers of its own: a state holds flat dicts, sets and lists of immutable values
    (or packs of them, in a snapshot), so a copy of each container is a full copy, and much cheaper than
    ``copy.deepcopy`` for a long session's ledger. Anything that is not a dataclass is deep-copied."""
    if not dataclasses.is_dataclass(state) or isinstance(state, type):
        return copy.deepcopy(state)
    own = copy.copy(state)
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if isinstance(value, _Pack):
            object.__setattr__(own, f.name, value.unpack())
        elif isinstance(value, (dict, set, list)):
            object.__setattr__(own, f.name, value.copy())
    return own


@dataclass(frozen=True)
class StateSnapshot:
    """A ``CompactorState``'s decisions, packed (``CompactorState.snapshot``); ``fork`` gives a state to go on from.

    Never changed once made, so one snapshot serves any number of resumes; like ``CompactorState.fork``
    it leaves the incremental bookkeeping (``tracks``) out.
    """

    session_id: str
    stages: tuple[tuple[str, Any], ...]
    claims: _Pack
    last_request_time: float | None
    anchor: Usage | None
    anchor_messages: int
    first_request: str | None

    def fork(self) -> CompactorState:
        """A state of its own, equal to the one this snapshot was taken of at the time."""
        return CompactorState(
            session_id=self.session_id,
            stages={name: _own_state(value) for name, value in self.stages},
            claims=self.claims.unpack(),
            last_request_time=self.last_request_time,
            anchor=self.anchor,
            anchor_messages=self.anchor_messages,
            first_request=self.first_request,
        )


@dataclass
class StageContext:
    config: CompactionConfig
    counter: TokenCounter
    store: SpillStore
    summarizer: Summarizer
    state: CompactorState
    # Seconds since the epoch, from message timestamps or a simulated clock.
    now: float = 0.0
    trigger: Trigger = "auto"
    instructions: str | None = None
    force: bool = False
    # The session's tool list (Transcript.tools), for the summary's recovery attachment.
    tools: tuple[ToolSpec, ...] = ()
    # Incremental runs (set by the Compactor; see lab.core.incremental): messages[:settled] are
    # the very objects the stages processed last time and left alone, so the driver
    # (lab.core.incremental.remember) notes only the rest; totals[i] is counter.count_messages(messages[:i]) for i <= settled.
    # Both reach a stage through its View.
    settled: int = 0
    totals: Sequence[int] = ()
    # The stages' memos for this trigger path (stage name -> Memo); None: keep nothing.
    memos: dict[str, Any] | None = None

