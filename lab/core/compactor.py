"""The ``Compactor``: one session's compaction, through the three trigger paths.

- ``process_request`` (auto): the cheap stages first (active context, spill,
  dedup, microcompact), then a fresh estimate, then the watermark decision,
  then maybe the summary. Auto failures feed the circuit breaker.
- ``compact`` (manual): an unconditional summary with optional custom
  instructions; no breaker, no failure counting.
- ``recover`` (reactive/emergency): after a prompt-too-long error, MiniCode's
  ladder or MewCode's emergency path, per ``config.recovery.strategy``.
- ``dispatch``: dedup and spill of newly arrived tool results, for agent
  loops that call it from their tool dispatcher.

The stages only decide (``lab.core.stages.contract``); the Compactor applies
their decisions (``lab.core.pipeline``), serves what they ask for (store
writes, summaries), and keeps what must persist between requests in
``self.state``: each stage's typed state, the usage anchor, the clock. Message
counts are cached by object identity: messages are frozen, so one that comes
back unchanged on the next request is not counted again while it is in use
(the cache lets go of the counts of messages long gone, ``_MessageCountCache``).

The auto and dispatch paths are incremental (``lab.core.incremental.Track``):
an agent loop sends the last output plus its new messages, so the Compactor
finds the longest prefix made of the very objects it returned last time that
no stage changed, keeps token totals as running prefix sums over it, and lets
the stages skip it. A session of N requests costs time linear in N, and gives
exactly the messages and events a run from scratch would (``incremental=False``
is that reference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import ProviderError, StageError, TranscriptError
from .config import CompactionConfig
from .events import CompactorState, Event, StageContext, Trigger
from .incremental import Track, is_sent
from .lru import SharedLRU
from .messages import Boundary, Message, ToolSpec, Usage
from .pipeline import CHEAP_STAGES, GATED_STAGES, FoldResult, build_stages, fold, run_stage
from .ptl import error_text, is_prompt_too_long
from .stages.contract import Stage
from .stages.recovery import RecoveryState
from .stages.watermark import BreakerState, WatermarkDecision
from .store import MemoryStore, SpillStore
from .summarizers.base import Summarizer
from .summarizers.rules import first_user_request
from .tokens.base import TokenCounter, get_counter
from .summarizers.factory import build_summarizer

__all__ = ["Compactor", "CompactionOutcome", "MAX_SHARED_COUNTS", "shared_counts", "clear_shared_counts", "is_prompt_too_long"]


@dataclass(frozen=True)
class CompactionOutcome:
    """What one call did: the messages to send next, and the report of how they came about."""

    messages: list[Message]
    events: tuple[Event, ...]
    boundary: Boundary | None
    tokens_before: int
    tokens_after: int
    success: bool
    strategy: str | None
    freed_by_stage: dict[str, int] = field(default_factory=dict)
    trigger: str = "auto"
    # The auto path's watermark decision (its estimate, threshold and reason); None on the other
    # paths, and when the summary behind a "compact" decision raised.
    gate: WatermarkDecision | None = None
    # How many leading messages of ``messages`` are the caller's own (the same objects, or equal ones, as
    # the list it passed in): a caller that keeps running state over the list skips comparing them.
    # Set by the auto and dispatch paths; 0 (nothing promised) on the others.
    unchanged: int = 0

    @property
    def tokens_freed(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def effective(self) -> bool:
        return self.success and self.tokens_after < self.tokens_before


class _MessageCountCache:
    """A counter wrapper that remembers the counts of the message objects in use.

    Counts are keyed by ``id()``, in two generations: each keeps the messages
    it counted alive in a list beside it, so no id can be reused by another
    object while its entry lives and a hit needs no identity check. When the
    young generation is full it becomes the old one and the old one is
    dropped; a hit in the old generation moves the count back into the young.
    So what a replay is using (its context, the messages just arrived) stays,
    and the counts of messages long summarised away go, with the messages only
    the cache still held (a 30,000-message replay kept a quarter of the file's
    size in a cache of every message it had ever counted). A count taken again
    is cheap: the counters cache their block texts, or need only a length.
    """

    # The smallest generation; a Compactor grows it to twice the longest context it is asked about (``fit``), so
    # the messages of a context in use outlive a generation's turn.
    min_generation = 1024

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.name = inner.name
        self.generation = self.min_generation
        # (young counts, young held, old counts, old held), swapped whole: a thread that counts meanwhile (Streamlit
        # runs pages in threads, and the cache may be shared) reads and writes one consistent pair of generations.
        self._table: tuple[dict[int, int], list[Message], dict[int, int], list[Message]] = ({}, [], {}, [])

    def fit(self, messages: int) -> None:
        """Make each generation hold at least twice ``messages`` counts (the length of a context in use)."""
        if 2 * messages > self.generation:
            self.generation = 2 * messages

    def count_text(self, text: str) -> int:
        return self.inner.count_text(text)

    def count_message(self, message: Message) -> int:
        table = self._table
        counts, held, old, _ = table
        key = id(message)
        n = counts.get(key)
        if n is not None:
            return n
        n = old.get(key)
        if n is None:
            n = self.inner.count_message(message)
        if len(counts) >= self.generation:
            counts, held = {}, []
            self._table = (counts, held, table[0], table[1])
        held.append(message)
        counts[key] = n
        return n

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)


# Counters whose per-message caches are kept for the next Compactor that shares them (see ``shared_counts``).
MAX_SHARED_COUNTS = 4
_SHARED_COUNTS: SharedLRU[_MessageCountCache] = SharedLRU(MAX_SHARED_COUNTS)


def shared_counts(counter: TokenCounter) -> _MessageCountCache:
    """The per-message count cache of ``counter``, shared by every Compactor built with ``share_counts=True``.

    A count is a pure function of a frozen message and the counter, so Compactors
    that count the same message objects with the same counter (the replays of one
    transcript a slider's moves make) need count each only once. Keyed by the
    counter object (the entry holds it, so its id is not reused while it lives);
    the last ``MAX_SHARED_COUNTS`` counters are kept.
    """
    return _SHARED_COUNTS.get(id(counter), lambda: _MessageCountCache(counter), holds=counter)


def clear_shared_counts() -> None:
    """Forget every shared count cache (a bench's "first replay" counts everything again)."""
    _SHARED_COUNTS.clear()


def _default_summarizer(config: CompactionConfig) -> Summarizer:
    return build_summarizer(config)


class Compactor:
    """Compacts one session's history before each request and recovers after prompt-too-long."""

    def __init__(
        self,
        config: CompactionConfig | None = None,
        counter: TokenCounter | None = None,
        store: SpillStore | None = None,
        summarizer: Summarizer | None = None,
        *,
        session_id: str = "session",
        state: CompactorState | None = None,
        tools: Sequence[ToolSpec] = (),
        incremental: bool = True,
        share_counts: bool = False,
        extra_stages: Sequence[Stage] = (),
    ) -> None:
        self.config = config if config is not None else CompactionConfig()
        self.counter = counter if counter is not None else get_counter(self.config.counter)
        self.store = store if store is not None else MemoryStore()
        self.summarizer = summarizer if summarizer is not None else _default_summarizer(self.config)
        self.state = state if state is not None else CompactorState(session_id=session_id)
        # The session's tool list, for the summary's recovery attachment.
        self.tools = tuple(tools)
        # False: every request is processed from scratch (the reference the incremental path must match).
        self.incremental = incremental
        # share_counts: the counter's cache is shared with other Compactors (see shared_counts).
        self._counts = shared_counts(self.counter) if share_counts else _MessageCountCache(self.counter)
        # extra_stages: stages of the caller's own (a plugin, a test's toy stage), run after the cheap ones.
        self._cheap = [*build_stages(self.config, CHEAP_STAGES), *extra_stages]
        self._gated = build_stages(self.config, GATED_STAGES)
        # The dispatcher's stages are the auto path's own instances: a stage holds only its config and
        # pure per-object memory (dedup's decoded calls), so each tool call is decoded once for both
        # paths. Their memos stay apart: they live in each path's Track, not in the stage.
        cheap = {stage.name: stage for stage in self._cheap}
        self._active = [cheap["active"]]
        self._manual = [cheap["active"], *build_stages(self.config, ("summary",))]
        self._dispatch = [cheap["dedup"], cheap["spill"]]
        self._recovery = build_stages(self.config, ("recovery",))[0]
        # Every stage's state exists from the start, so a reader that holds one (the replay's recall holds the
        # spill paths) sees it grow.
        for stage in (*self._cheap, *self._gated, self._recovery):
            make = getattr(stage, "State", None)
            if make is not None:
                self.state.stage(stage.name, make)

    # -- the four entry points ----------------------------------------------

    def process_request(self, messages: Sequence[Message], *, now: float | None = None, usage: Usage | None = None) -> CompactionOutcome:
        """The auto path, run before every request. ``usage`` is the provider's usage of the last response."""
        track = self._track("auto")
        msgs, settled = track.take(self._sequence(messages))
        tokens_before = track.sendable[-1]
        ctx = self._context(msgs, now, "auto", track=track, settled=settled)
        recovery = self.state.stage("recovery")
        if recovery is not None:
            recovery.attempts = 0
        if usage is not None:
            self._set_anchor(msgs, usage)
        cheap = self._guarded(fold, self._cheap, msgs, ctx, path="auto")
        self._keep_anchor_if_unchanged(msgs, cheap.messages, cheap.unchanged)
        events = list(cheap.events)
        gated_events: tuple[Event, ...]
        gate: WatermarkDecision | None = None
        try:
            # The gate and the summary keep no memos: a failure here leaves the incremental memory sound.
            gated = fold(self._gated, cheap.messages, ctx)
        except (StageError, ProviderError) as e:
            # An auto compaction that fails must never kill the agent: report it, count it, go on.
            tokens = track.tokens(cheap.messages, cheap.unchanged)
            failure = Event(stage="summary", trigger="auto", tokens_before=tokens, tokens_after=tokens, strategy="full", success=False, detail=f"auto summary failed: {e}")
            gated_messages, gated_events, boundary, unchanged = cheap.messages, (failure,), cheap.boundary, cheap.unchanged
            ran_summary = True
        else:
            gated_messages, gated_events, boundary = gated.messages, gated.events, gated.boundary or cheap.boundary
            gate = gated.decision
            unchanged = min(cheap.unchanged, gated.unchanged)
            ran_summary = any(e.stage == "watermark" and e.success for e in gated.events)
        events.extend(gated_events)
        summary_ok = any(e.stage == "summary" and e.effective for e in gated_events)
        if ran_summary:
            breaker = self.breaker
            breaker.failures = 0 if summary_ok else breaker.failures + 1
            breaker.failed_at = None if summary_ok else ctx.now
        if summary_ok:
            self._reset_anchor()
        self.state.last_request_time = ctx.now
        out = track.commit(gated_messages, unchanged)
        return self._outcome(out, events, boundary, "auto", tokens_before, track.sendable[-1], success=not ran_summary or summary_ok, gate=gate,
                             unchanged=unchanged)

    def compact(self, messages: Sequence[Message], instructions: str | None = None, *, now: float | None = None) -> CompactionOutcome:
        """Manual compaction: an unconditional summary, optionally steered by ``instructions``."""
        msgs = self._checked(messages)
        ctx = self._context(msgs, now, "manual", instructions=instructions, force=True)
        if not self.config.summary.enabled:
            tokens = self.count_tokens(msgs)
            event = Event(stage="summary", trigger="manual", tokens_before=tokens, tokens_after=tokens, strategy="full", success=False, detail="the summary stage is disabled in this config")
            return self._outcome(list(msgs), [event], None, "manual", tokens, tokens, success=False)
        result = fold(self._manual, msgs, ctx)
        ok = any(e.stage == "summary" and e.effective for e in result.events)
        if ok:
            self._reset_anchor()
            self._close_breaker()
        return self._outcome(result.messages, list(result.events), result.boundary, "manual", self.count_tokens(msgs), self.count_tokens(result.messages), success=ok)

    def recover(self, messages: Sequence[Message], error: BaseException | str | dict, *, now: float | None = None) -> CompactionOutcome:
        """Recovery after the provider rejected ``messages`` as too long; raises ``StageError`` when it gives up."""
        if not is_prompt_too_long(error):
            raise StageError(f"recover() only handles prompt-too-long errors; got: {error_text(error)[:300]!r}")
        msgs = self._checked(messages)
        trigger: Trigger = "emergency" if self.config.recovery.strategy == "mewcode" else "reactive"
        ctx = self._context(msgs, now, trigger, force=True)
        active = fold(self._active, msgs, ctx)
        result = run_stage(self._recovery, active.messages, ctx)
        self._reset_anchor()
        if any(e.stage == "summary" and e.effective for e in result.events):
            self._close_breaker()
        events = list(active.events) + list(result.events)
        after = list(result.messages)
        return self._outcome(after, events, result.boundary or active.boundary, trigger, self.count_tokens(msgs), self.count_tokens(after), success=True)

    def dispatch(self, messages: Sequence[Message], *, now: float | None = None) -> CompactionOutcome:
        """Dedup, then spill, newly arrived tool results (MiniCode calls dedup from the tool dispatcher)."""
        track = self._track("dispatch")
        msgs, settled = track.take(self._sequence(messages))
        tokens_before = track.sendable[-1]
        ctx = self._context(msgs, now, "dispatch", track=track, settled=settled)
        result = self._guarded(fold, self._dispatch, msgs, ctx, path="dispatch")
        self._keep_anchor_if_unchanged(msgs, result.messages, result.unchanged)
        out = track.commit(result.messages, result.unchanged)
        return self._outcome(out, list(result.events), result.boundary, "dispatch", tokens_before, track.sendable[-1], success=True,
                             unchanged=result.unchanged)

    @property
    def breaker(self) -> BreakerState:
        """The watermark's circuit breaker: the auto path counts its summaries' failures here."""
        state: BreakerState = self.state.stage("watermark", BreakerState)
        return state

    @property
    def recovery_attempts(self) -> int:
        """Recovery attempts made for the current request (a normal request resets them)."""
        state: RecoveryState | None = self.state.stage("recovery")
        return state.attempts if state is not None else 0

    @property
    def counts(self) -> TokenCounter:
        """This session's counter behind the per-message cache the stages share.

        Same counts as ``counter``; a caller that counts the same messages (the
        replay's rows and prompt cache) shares the cache instead of counting
        every message again.
        """
        return self._counts

    def count_tokens(self, messages: Iterable[Message]) -> int:
        """Tokens of ``messages`` by this session's counter, boundary markers excluded (they are never sent).

        Shares the per-message cache of the stages, so counting a history the
        Compactor has just produced costs one dict hit per message.
        """
        return self._counts.count_messages(m for m in messages if is_sent(m))

    # -- helpers ------------------------------------------------------------

    @staticmethod
    def _sequence(messages: Sequence[Message]) -> Sequence[Message]:
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise TranscriptError(f"expected a list of messages, got {type(messages).__name__}", expected="a list of lab.core.messages.Message")
        return messages

    @classmethod
    def _checked(cls, messages: Sequence[Message]) -> list[Message]:
        msgs = list(cls._sequence(messages))
        for i, m in enumerate(msgs):
            if not isinstance(m, Message):
                raise TranscriptError(f"not a Message: {type(m).__name__}", where=f"messages[{i}]", expected="lab.core.messages.Message (import the transcript first)")
        return msgs

    def _track(self, path: str) -> Track:
        """The incremental memory of one trigger path; a fresh one each call when not incremental."""
        track = self.state.tracks.get(path)
        if not self.incremental or not isinstance(track, Track) or track.counter is not self._counts:
            track = Track(self._counts)
            self.state.tracks[path] = track
        return track

    def _guarded(self, run: Callable[..., FoldResult], *args: Any, path: str) -> FoldResult:
        """``run(*args)``; if it raises, the path's incremental memory may be half-updated: drop it."""
        try:
            return run(*args)
        except BaseException:
            self.state.tracks.pop(path, None)
            raise

    def _now(self, messages: Sequence[Message], now: float | None, track: Track | None = None) -> float:
        if now is not None:
            return float(now)
        if track is not None:
            stamp = track.clock(messages)
            if stamp is not None:
                return stamp
        else:
            for m in reversed(messages):
                if m.timestamp is not None:
                    return m.timestamp.timestamp()
        # No clock at all: time stands still, so time-based stages never fire by accident.
        return self.state.last_request_time or 0.0

    def _context(
        self,
        messages: Sequence[Message],
        now: float | None,
        trigger: Trigger,
        *,
        instructions: str | None = None,
        force: bool = False,
        track: Track | None = None,
        settled: int = 0,
    ) -> StageContext:
        if self.state.first_request is None:
            self.state.first_request = first_user_request(messages)
        # The count cache keeps at least what a context in use holds.
        self._counts.fit(len(messages))
        return StageContext(
            config=self.config,
            counter=self._counts,
            store=self.store,
            summarizer=self.summarizer,
            state=self.state,
            now=self._now(messages, now, track),
            trigger=trigger,
            instructions=instructions,
            force=force,
            tools=self.tools,
            settled=settled if track is not None else 0,
            totals=track.totals if track is not None else (),
            memos=track.memos if track is not None else None,
        )

    def _set_anchor(self, messages: Sequence[Message], usage: Usage) -> None:
        # The usage belongs to the newest response: it covers every message up to and including it.
        covered = len(messages)
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].role == "assistant":
                covered = i + 1
                break
        self.state.anchor = usage
        self.state.anchor_messages = covered

    def _keep_anchor_if_unchanged(self, before: Sequence[Message], after: Sequence[Message], unchanged: int = 0) -> None:
        """Drop the anchor when a stage rewrote any message it covers (its usage no longer describes them).

        ``before[:unchanged]`` and ``after[:unchanged]`` are known to be the same objects.
        """
        n = self.state.anchor_messages
        if self.state.anchor is None:
            return
        # Tested before the zip: once n fits both lists, the two slices are equally long.
        covered_gone = n > len(before) or n > len(after)
        if covered_gone or any(a is not b and a != b for a, b in zip(before[unchanged:n], after[unchanged:n], strict=True)):
            self._reset_anchor()

    def _close_breaker(self) -> None:
        """After a successful forced compact: MiniCode's recovery resets its breaker, then ``_on_success`` keeps it closed."""
        if self.config.watermark.breaker_reset_on_forced:
            self.breaker.failures = 0
            self.breaker.failed_at = None

    def _reset_anchor(self) -> None:
        self.state.anchor = None
        self.state.anchor_messages = 0

    @staticmethod
    def _outcome(after: list[Message], events: list[Event], boundary: Boundary | None, trigger: str, tokens_before: int, tokens_after: int, *, success: bool,
                 gate: WatermarkDecision | None = None, unchanged: int = 0) -> CompactionOutcome:
        freed: dict[str, int] = {}
        strategy: str | None = None
        for e in events:
            if e.success and e.tokens_freed:
                freed[e.stage] = freed.get(e.stage, 0) + e.tokens_freed
            if e.effective and e.strategy:
                strategy = e.strategy
        return CompactionOutcome(
            messages=after,
            events=tuple(events),
            boundary=boundary,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            success=success,
            strategy=strategy,
            freed_by_stage=freed,
            trigger=trigger,
            gate=gate,
            unchanged=unchanged,
        )
