"""``replay``: play a recorded session again, request by request, under a compaction config.

Request points are the transcript indices where an assistant message follows
a non-assistant one: request ``k`` is the call that produced that message (a
run of consecutive assistant messages is one response). At each point:

1. The context is everything sent so far, as compacted so far, plus the
   messages that arrived since. Newly arrived tool results first go through
   ``Compactor.dispatch`` (the tool dispatcher's hook, where read dedup
   belongs), then ``process_request`` runs with the replay's clock and, when
   the config anchors its estimate on usage, the usage of the previous
   response.
2. The replay plays the provider. When the sent tokens exceed the window it
   answers with a real ``PromptTooLongError`` (Anthropic's body shape) and
   ``recover`` runs, again while the result is still too long, until it fits
   or recovery gives up. A request that cannot be recovered keeps its row
   with ``failed=True``; it is not billed (a provider does not bill a 400),
   the cache is untouched, and the replay goes on from the context as it was
   before recovery, so the timeline still shows what the session would have
   run into.
3. The row records tokens, events, validity for both providers, the prompt
   cache and cost (see ``cache.py``), the same request without compaction,
   and the context's composition. Then the response is appended to the
   context.

``over_watermark`` compares the sent tokens with the config's auto threshold
(ratio or reserve; computed even when auto-compaction is off, and the window
itself when the reserve threshold is skipped for a small window), so configs
can be compared on how often they leave the context above it.

The clock is message timestamps when ``settings.use_timestamps`` and the
transcript has any (the newest timestamp at or before the request, never
going back), else ``k x seconds_per_request`` after a fixed epoch, so replays
are reproducible. The usage anchor is, by default, the usage the replay's own
provider model reports for the previous request ("replayed"): the usage
recorded in a transcript describes the original agent's prompt, not the one
this config built. ``anchor="recorded"`` uses the recorded usage where there is
one.

Counts come from the counter's caches (per block text, and per message object
here and in the Compactor); a row sums cached counts, it never recounts text.
Those per-message values (counts, composition, dedup's
decoded calls, the retention targets) are pure functions of a frozen message
and the counter or config, so they outlive a replay: a replay given no counter
uses one shared instance per counter name, and the next replay of the same
message objects (a slider's move, a compare's next config) finds them again
(the counts and compositions of the messages in recent use: those caches
follow the context, not the whole session).
A request's context is mostly the previous one's, so the row's sums (tokens,
composition, the first request), its validity and its cache prefix are kept
as running state over the prefix the two share (``SentSums``, ``Validator``,
``PromptCache``): a row costs time for the messages that changed, and a
session of N requests costs time linear in N. ``incremental=False``
recomputes all of it from scratch for every request, the reference every row
field must match byte for byte.

A replay with the lab's own store and summarizer also leaves a trace (each
request's watermark decision, and a checkpoint of its state every few
requests), and a later replay of the same transcript under a config that
differs only in the watermark's threshold resumes from the last checkpoint
before the two configs part (``resume.py``): a threshold knob's move replays
only the requests after that point, and gives the same report a full replay
does. ``resume=False`` plays every request and records no trace.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Literal, NamedTuple
from collections.abc import Callable, Sequence

from ..core.compactor import CompactionOutcome, Compactor, shared_counts
from ..core.config import CompactionConfig
from ..core.events import Event
from ..core.gcpause import gc_paused
from ..core.messages import Message, Transcript, Usage, has_tool_result
from ..core.repair import clear_cache as clear_repairs
from ..core.repair import repair as repair_history
from ..core.stages.watermark import threshold
from ..core.store import MemoryStore, SpillStore
from ..core.summarizers.base import Summarizer
from ..core.summarizers.rules import user_texts
from ..core.tokens.base import TokenCounter
from ..core.validate import Validator, anthropic_problems, openai_problems
from ..errors import ConfigError, StageError
from .cache import CacheStep, PromptCache, request_cost
from .overhead import describe_fit, fit_usage
from .prices import session_pricing, usage_cost
from .recorded import RecordedMode, apply_recorded
from .mentions import release_command_memos
from .recall import Recall
from .recall import totals as recall_totals
from .content import ContentRecall, thin_note
from .content import totals as content_totals
from .report import Contexts, Report, Row, Rows, cost_check, recorded_totals
from .resume import Checkpoint, Trace, clear_traces, find, interval_for, keep_trace, resume_key
from .settings import PricingConfig, ReplaySettings, SettingsLike, resolve_settings
from .retention import retention, shared_targets
from .identity_caches import MessageCounts, MessageParts, SentSums, shared_counter
from .inputs import (
    EPOCH,
    ConfigLike,
    RecordingSummarizer,
    ReplayClock,
    as_transcript,
    default_summarizer,
    first_request_in,
    prompt_too_long_error,
    request_points,
    resolve_config,
    sendable,
    with_session_cwd,
    summary_numbers,
)
from .content import clear_cache as clear_content
from .recall import clear_cache as clear_recall
from .retention import clear_shared_targets
from .identity_caches import clear_shared

__all__ = ["replay", "request_points", "resolve_config", "as_transcript", "prompt_too_long_error", "EPOCH", "MAX_PROBLEMS"]

# Problems listed per row; the count of invalid requests is exact regardless.
MAX_PROBLEMS = 10
# recover() calls per request, on top of recovery's own bound.
_MAX_RECOVER_CALLS = 12
# Stages whose events are decisions or bookkeeping, not compactions.
_NOT_COMPACTIONS = ("watermark", "active")

Progress = Callable[[int, int], Any]


class _Resumed(NamedTuple):
    """The request loop's variables where it starts (``_Run._resume``)."""

    rows: Rows
    contexts: Contexts
    context: list[Message]
    consumed: int
    raw_tokens: int
    usage: Usage | None
    first: int


@dataclass
class _Step:
    """What the Compactor did for one request, merged over its calls."""

    events: list[Event] = field(default_factory=list)
    freed: dict[str, int] = field(default_factory=dict)
    boundary: bool = False

    def take(self, outcome: CompactionOutcome) -> None:
        self.events.extend(outcome.events)
        for stage, n in outcome.freed_by_stage.items():
            self.freed[stage] = self.freed.get(stage, 0) + n
        self.boundary = self.boundary or outcome.boundary is not None


def replay(
    transcript: Transcript | str | os.PathLike[str] | Sequence[Message],
    config: ConfigLike = None,
    *,
    settings: SettingsLike = None,
    window: int | None = None,
    counter: TokenCounter | None = None,
    store: SpillStore | None = None,
    summarizer: Summarizer | None = None,
    retention_each: bool = False,
    progress: Progress | None = None,
    anchor: Literal["replayed", "recorded"] = "replayed",
    incremental: bool = True,
    recorded_compactions: RecordedMode | None = None,
    recall: bool = True,
    resume: bool = True,
    repair: bool = True,
    content: bool = True,
) -> Report:
    """Replay ``transcript`` under ``config`` and report every request; see the module docstring.

    ``transcript``: a Transcript, a file path (format detected) or a list of messages.
    ``config``: a CompactionConfig (copied, never changed), a preset name, a mapping, or None for the defaults.
    ``settings``: how requests are billed and timed (``ReplaySettings`` or a mapping; None: the defaults).
    ``window``: overrides ``config.window``. ``counter`` / ``store`` / ``summarizer``: default to the
    config's counter, a MemoryStore and the rule-based summarizer (an LLM summarizer must be passed in:
    a replay never reaches a provider on its own). ``retention_each``: also score every request's
    context (the final context is always scored). ``progress(done, total)`` is called after each request.
    ``anchor``: the usage handed to the Compactor's anchor, "replayed" (this replay's own provider
    model) or "recorded" (the transcript's usage where it has some). ``incremental=False``: recompute
    each row's sums, validity and cache prefix from scratch (the reference; same report, slower).
    ``recorded_compactions``: overrides ``settings.recorded_compactions`` ("undo" replays the raw
    history as if the original agent had never compacted, "keep" honours its compactions; see ``recorded.py``).
    ``recall=False``: skip needed-later recall (``recall.py``) and content recall (``content.py``; their fields stay
    empty), for the bench's ratio; ``content=False`` skips content recall alone (the bench's content cost).
    ``resume=False``: replay every request even when an earlier replay of the same transcript, under a config
    differing only in the watermark's threshold, could be resumed (``resume.py``; the report is the same), and
    record nothing for a later replay to resume from (no trace, no checkpoints).
    ``repair=False``: replay the history as the source wrote it, without ``lab.core.repair``'s mends (aborted
    calls answered, one-block records merged, ...), to see the requests the source itself makes invalid.
    """
    if anchor not in ("replayed", "recorded"):
        raise ConfigError(f"anchor must be 'replayed' or 'recorded', got {anchor!r}")
    notes: list[str] = []
    cfg = resolve_config(config, window)
    rs = resolve_settings(settings, recorded_compactions)
    given = as_transcript(transcript)
    # The one pricing rule (prices.session_pricing): the session's own model unless the settings chose prices.
    rs, priced_by = session_pricing(rs, given.meta.model)
    t, found, recorded_notes = apply_recorded(given, rs.recorded_compactions)
    notes.extend(recorded_notes)
    # What the source got wrong (an aborted turn's call, one block per record, an assistant opening) is
    # repaired as the agents do, so no config is charged with requests the source made invalid.
    fixed = repair_history(t.messages) if repair else None
    if fixed is not None and fixed.changed:
        t = t.model_copy(update={"messages": fixed.messages})
        notes.extend(f"repaired: {line}" for line in fixed.notes)
    cfg = with_session_cwd(cfg, t, notes)
    # No counter given: the one instance per name every such replay shares (its caches are found again).
    counter = counter if counter is not None else shared_counter(cfg.counter)
    # Against the file as the agent sent it (its own compactions kept); its counts are the replay's too
    # (the Compactor's shared per-message counts, share_counts below).
    fit = fit_usage(given.messages, shared_counts(counter))
    hidden = max(0, fit.hidden_tokens) if rs.hidden_from_usage and fit is not None else rs.hidden_tokens
    # Only the lab's own store and summarizer can be resumed: a caller's may hold state no checkpoint saw. A replay
    # told not to resume records no trace either: its checkpoints (a copy of the Compactor's state and the store
    # every few requests) were a third of the file's size kept for a resume that the callers passing
    # resume=False (the benches) never make; the app and the CLI resume, and so keep their traces.
    traced = resume and incremental and store is None and summarizer is None
    key = resume_key(cfg, rs.fingerprint, counter, (anchor, recall, content, retention_each, hidden)) if traced else None
    start = find(given, key, t.messages, cfg.watermark, cfg.window) if key is not None else None
    if start is not None:
        store, state = start[1].store.fork(), start[1].state.fork()
    else:
        store, state = (store if store is not None else MemoryStore()), None
    recorder = RecordingSummarizer(default_summarizer(cfg, summarizer, notes))
    # share_counts: the counter's per-message counts outlive this replay, for the next one of the same messages.
    compactor = Compactor(cfg, counter, store, recorder, session_id=t.meta.session_id or "replay", tools=t.tools, share_counts=True, state=state)
    trace = Trace(key, t.messages, cfg.watermark, cfg.window, 0) if key is not None else None
    # The cyclic collector kept traversing a heap that only grows while a replay runs: a quarter of a
    # 2,000-request replay. A replay makes no cycles of its own, so it runs paused (see gcpause.py).
    with gc_paused():
        run = _Run(t, cfg, rs, compactor, recorder, store, retention_each, progress, anchor, incremental, recall, hidden=hidden, content=recall and content)
        report = run.go(notes, trace, start)
    if trace is not None:
        keep_trace(given, trace)
    report.pricing_source = priced_by
    report.recorded_compactions_mode = rs.recorded_compactions
    report.recorded_compactions = len(found)
    report.recorded = found
    report.hidden_tokens = hidden
    if fit is not None:
        report.usage_fit = fit.to_dict()
    # The fit and cost lines read the recorded-compaction fields set just above.
    for line in (describe_fit(fit, cfg.window, applied=hidden), _unseen_by_watermark(cfg, hidden), cost_check(report)):
        if line is not None:
            report.notes.append(line)
    return report


def _unseen_by_watermark(cfg: CompactionConfig, hidden: int) -> str | None:
    """A note when the config's watermark cannot see the hidden tokens: it counts the messages only."""
    wm = cfg.watermark
    if not hidden or not wm.enabled or wm.use_usage_anchor:
        return None
    return (f"this config's watermark counts the messages only: the {hidden:,} tokens every request carries beyond them are "
            "invisible to it until the provider refuses a request (watermark.use_usage_anchor sees them in the reported usage)")


def clear_caches() -> None:
    """Forget everything replays share between them, so the next replay of any transcript starts cold: the
    per-message counts, compositions and decoded calls (``identity_caches.clear_shared``), the
    retention targets, recall's histories and mention memos, the traces replays resume from, and the repaired
    histories (``lab.core.repair``). Results never change; only the time does."""
    clear_shared()
    clear_shared_targets()
    clear_recall()
    clear_content()
    clear_traces()
    clear_repairs()


class _Run:
    """The state of one replay; ``go`` walks the request points once."""

    def __init__(self, t: Transcript, cfg: CompactionConfig, settings: ReplaySettings, compactor: Compactor, recorder: RecordingSummarizer,
                 store: SpillStore, retention_each: bool, progress: Progress | None, anchor: str, incremental: bool = True,
                 recall: bool = True, *, hidden: int = 0, content: bool = True) -> None:
        self.t, self.cfg, self.compactor, self.recorder, self.store = t, cfg, compactor, recorder, store
        self.settings = settings
        # Tokens every request carries beyond the file (ReplaySettings.hidden_tokens): the provider's window and
        # bill count them, and so does the usage it reports, the one way a Compactor sees them (a usage
        # anchor, MewCode's); its own counts never do. Billed as a cached prefix once written.
        self.hidden = hidden
        self._hidden_written = {"sent": False, "raw": False}
        self.retention_each, self.progress, self.anchor = retention_each, progress, anchor
        # The Compactor's cached counter: a message the stages counted is not counted again here.
        counter = compactor.counts
        self.counts = MessageCounts(counter)
        # Shared by identity with the next replay of the same messages and counter (pure per message).
        self.parts = MessageParts(counter, shared=True)
        self.cache = PromptCache(settings.cache, counter, incremental=incremental)
        self.raw_cache = PromptCache(settings.cache, counter)
        self.clock = ReplayClock.for_transcript(t, settings)
        self.goals = shared_targets(t.messages, t.meta.planted_facts)
        texts = user_texts(t.messages)
        self.first = texts[0].text if texts else None
        self.first_at = next((i for i, m in enumerate(t.messages) if texts and m.id == texts[0].id), None)
        # Running state over the context, request to request (or, when not incremental, none).
        self.sums = SentSums(self.counts, self.parts, self.first, incremental=incremental)
        self.validator = Validator() if incremental else None
        limit = threshold(cfg.watermark, cfg.window, "auto")
        self.watermark = limit if limit is not None else cfg.window
        self.compactions: dict[str, int] = {}
        self.recall = Recall(t.messages, store, compactor.state.spill_paths, incremental=incremental) if recall else None
        self.content = ContentRecall(t.messages, store, compactor.state.spill_paths, counter, incremental=incremental) if content else None
        # The transcript's targets and recall index are built: what its commands name is read no more.
        release_command_memos()

    def _hidden(self, which: str, expired: bool, pricing: PricingConfig) -> tuple[float, bool]:
        """The hidden prefix's dollars for one request and whether it was read from the cache: written when
        the cache has not got it (never, or expired), read after. Asked once per request and path: it marks the prefix written."""
        if not self.hidden:
            return 0.0, False
        cached = self._hidden_written[which] and not expired
        self._hidden_written[which] = True
        rate = pricing.cache_read_per_mtok if cached else pricing.cache_write_per_mtok
        return self.hidden * rate / 1_000_000, cached

    def _replayed_usage(self, cache_step: CacheStep, output: int, hidden_cached: bool) -> Usage:
        """The usage the provider would report for this request: the hidden prefix included, as a real
        provider counts the system prompt and tool schemas in its usage (MewCode's usage anchor sees them)."""
        read, written = cache_step.cached, cache_step.written
        if self.hidden:
            if hidden_cached:
                read += self.hidden
            else:
                written += self.hidden
        return Usage(input_tokens=cache_step.uncached, output_tokens=output, cache_read_tokens=read, cache_write_tokens=written)

    def _recover(self, working: list[Message], sent_tokens: int, now: float, step: _Step) -> tuple[list[Message], bool, int, list[Event]]:
        """Play the provider's prompt-too-long until the context fits; returns (context, recovered, calls, failed events)."""
        # The room the messages have: what the provider allows, less what every request carries beyond them.
        window = self.cfg.window - self.hidden
        attempt, tokens = working, sent_tokens
        calls = 0
        tried: list[CompactionOutcome] = []
        while calls < _MAX_RECOVER_CALLS:
            calls += 1
            try:
                outcome = self.compactor.recover(attempt, prompt_too_long_error(tokens + self.hidden, self.cfg.window), now=now)
            except StageError as e:
                failure = Event(stage="recovery", trigger="provider", tokens_before=tokens, tokens_after=tokens, success=False, detail=f"recovery failed: {e}")
                return working, False, calls, [ev for o in tried for ev in o.events] + [failure]
            tried.append(outcome)
            attempt = outcome.messages
            tokens = self.counts.sum(sendable(attempt))
            if tokens <= window:
                for o in tried:
                    step.take(o)
                return attempt, True, calls, []
        failure = Event(stage="recovery", trigger="provider", tokens_before=tokens, tokens_after=tokens, success=False,
                        detail=f"recovery still over the window after {calls} calls")
        return working, False, calls, [ev for o in tried for ev in o.events] + [failure]

    def _recall_fields(self, p: int, q: int, working: list[Message]) -> dict[str, object]:
        """The Row fields of names recall and content recall at the request answered by ``raw[p:q]``."""
        fields = self.recall.step(p, q, working, same=self.sums.kept("recall")).fields() if self.recall is not None else {}
        if self.content is not None:
            fields.update(self.content.step(p, q, working, same=self.sums.kept("content")).fields())
        return fields

    def _summary_numbers(self, since: int, pricing: PricingConfig, *, traced: bool) -> tuple[int, int, float]:
        """Tokens in and out and dollars of this request's summary calls (the recorder's usages from ``since`` on)."""
        numbers = summary_numbers(self.recorder.usages[since:], pricing)
        if not traced:
            # Only a trace reads a result again (a resume takes the ones before its checkpoint): without one, a
            # result is its request's numbers, and kept it held every summary the session ever wrote.
            self.recorder.usages.clear()
        return numbers

    def _count_compactions(self, events: Sequence[Event]) -> None:
        for e in events:
            if e.effective and e.strategy and e.stage not in _NOT_COMPACTIONS and e.strategy != "reapply":
                self.compactions[e.strategy] = self.compactions.get(e.strategy, 0) + 1

    def _checkpoint(self, k: int, context: list[Message], consumed: int, raw_tokens: int, usage: Usage | None) -> Checkpoint:
        assert isinstance(self.store, MemoryStore)  # a traced replay's store is its own MemoryStore
        return Checkpoint(k, list(context), consumed, raw_tokens, usage, dict(self.compactions), dict(self._hidden_written),
                          self.compactor.state.snapshot(), self.store.fork(), len(self.recorder.usages), self.recorder.calls,
                          self.cache.fork(), self.raw_cache.fork(), replace(self.clock))

    def _resume(self, trace: Trace | None, start: tuple[Trace, Checkpoint] | None, points: int) -> _Resumed:
        """Where the request loop starts: at request 0, or at ``start``'s checkpoint with the state it holds
        (the Compactor's and the store's were forked into place already) and the base's rows before it."""
        if trace is not None:
            trace.interval = interval_for(points)
        if start is None:
            return _Resumed(Rows(), Contexts(), [], 0, 0, None, 0)
        base, at = start
        self.compactions = dict(at.compactions)
        self._hidden_written = dict(at.hidden_written)
        self.recorder.usages = list(base.summaries[: at.summaries])
        self.recorder.calls = at.summary_calls
        self.cache, self.raw_cache, self.clock = at.cache.fork(), at.raw_cache.fork(), replace(at.clock)
        if trace is not None:
            # The base's decisions before the checkpoint are this replay's too ("below" or "disabled" there, at the
            # same estimates), and so are its earlier checkpoints: the state before each is the same.
            trace.gates = base.gates[: at.k]
            trace.checkpoints = [c for c in base.checkpoints if c.k <= at.k]
        if self.progress is not None and at.k:
            self.progress(at.k, points)
        # The rows before the checkpoint are the base's, but for the one field the threshold decides.
        rows = base.rows.head(at.k, over_watermark=[sent > self.watermark for sent in islice(base.rows.column("sent_tokens"), at.k)])
        return _Resumed(rows, base.contexts.head(at.k), list(at.context), at.consumed, at.raw_tokens, at.usage, at.k)

    def go(self, notes: list[str], trace: Trace | None = None, start: tuple[Trace, Checkpoint] | None = None) -> Report:
        t, cfg, compactor = self.t, self.cfg, self.compactor
        raw = t.messages
        pricing = self.settings.pricing
        # Machine ints: a list held an int object per request for the whole replay.
        points = array("q", request_points(raw))
        rows, contexts, context, consumed, raw_tokens, usage, first = self._resume(trace, start, len(points))
        for k in range(first, len(points)):
            p = points[k]
            if trace is not None and k % trace.interval == 0 and not (trace.checkpoints and trace.checkpoints[-1].k >= k):
                trace.checkpoints.append(self._checkpoint(k, context, consumed, raw_tokens, usage))
            new = raw[consumed:p]
            raw_tokens += self.counts.sum(sendable(new))
            now = self.clock.at(k, raw, consumed, p)
            working = context + list(new)
            # The previous request's context, then its response: that many leading messages are the ones
            # the running sums saw last, so they are not compared again (``SentSums``).
            self.sums.update(working, known=len(context))
            tokens_before = self.sums.tokens
            step = _Step()
            calls_before = len(self.recorder.usages)
            summary_calls_before = self.recorder.calls
            # Leading messages of ``working`` that are still the ones the running sums saw last.
            unchanged = len(working)
            try:
                if has_tool_result(new):
                    outcome = compactor.dispatch(working, now=now)
                    step.take(outcome)
                    working = outcome.messages
                    unchanged = outcome.unchanged
                outcome = compactor.process_request(working, now=now, usage=usage if cfg.watermark.use_usage_anchor else None)
            except StageError as e:
                raise StageError(f"request {k} (message {p}): {e}") from e
            if trace is not None:
                trace.gates.append(outcome.gate)
            step.take(outcome)
            working = outcome.messages
            self.sums.update(working, known=min(unchanged, outcome.unchanged))
            sent_tokens = self.sums.tokens
            overflowed = sent_tokens + self.hidden > cfg.window
            recovered = failed = False
            recover_calls = 0
            failed_events: list[Event] = []
            if overflowed:
                working, recovered, recover_calls, failed_events = self._recover(working, sent_tokens, now, step)
                failed = not recovered
                self.sums.update(working)
                sent_tokens = self.sums.tokens
            sent = self.sums.sent
            self._count_compactions(step.events)

            q = p + 1
            while q < len(raw) and raw[q].role == "assistant":
                q += 1
            response = raw[p:q]
            bills = [m.usage for m in response if m.usage is not None and m.usage.cost_usd is not None]
            recall_fields = self._recall_fields(p, q, working)
            output = self.counts.sum(response)
            hidden_cached = False
            if failed:
                cache_step = CacheStep(sent=sent_tokens, cached=0, written=0, uncached=0, expired=False, shared=0)
                cost = 0.0
            else:
                cache_step = self.cache.step(sent, now, sent=sent_tokens, same=self.sums.kept_sent("cache"))
                hidden_usd, hidden_cached = self._hidden("sent", cache_step.expired, pricing)
                cost = request_cost(cache_step, output, pricing) + hidden_usd
            raw_step = self.raw_cache.step_append(raw_tokens, now)
            s_in, s_out, s_cost = self._summary_numbers(calls_before, pricing, traced=trace is not None)
            if self.validator is not None:
                a_problems, o_problems = self.validator.check(working)
            else:
                a_problems, o_problems = anthropic_problems(working), openai_problems(working)
            # Only the first MAX_PROBLEMS are kept: a history that breaks a rule everywhere costs no more.
            problems = [f"anthropic: {x}" for x in a_problems[:MAX_PROBLEMS]] + [f"openai: {x}" for x in o_problems[:MAX_PROBLEMS]]
            row = Row(
                index=k,
                message_index=p,
                time=now,
                raw_tokens=raw_tokens,
                tokens_before=tokens_before,
                sent_tokens=sent_tokens,
                sent_messages=len(sent),
                freed_by_stage=step.freed,
                events=[e.to_dict() for e in step.events + failed_events],
                boundary_placed=step.boundary,
                valid_anthropic=not a_problems,
                valid_openai=not o_problems,
                problems=problems[:MAX_PROBLEMS],
                cached_tokens=cache_step.cached,
                cache_write_tokens=cache_step.written,
                uncached_tokens=cache_step.uncached,
                cache_expired=cache_step.expired,
                output_tokens=output,
                cost=cost + s_cost,
                raw_cached_tokens=raw_step.cached,
                cost_uncompacted=request_cost(raw_step, output, pricing) + self._hidden("raw", raw_step.expired, pricing)[0],
                recorded_cost=sum(u.cost_usd or 0.0 for u in bills) if bills else None,
                recorded_usage_cost=sum(usage_cost(u, pricing) for u in bills) if bills else None,
                cache_hit_ratio=cache_step.cached / sent_tokens if sent_tokens and not failed else 0.0,
                over_watermark=sent_tokens > self.watermark,
                breaker_open=any(e.stage == "watermark" and e.strategy == "breaker_open" for e in step.events),
                overflowed=overflowed,
                recovered=recovered,
                failed=failed,
                recover_calls=recover_calls,
                summary_calls=self.recorder.calls - summary_calls_before,
                summary_input_tokens=s_in,
                summary_output_tokens=s_out,
                summary_cost=s_cost,
                composition=self.sums.composition,
                first_request_kept=self.sums.first_kept if self.first_at is not None and self.first_at < p else None,
                **recall_fields,  # type: ignore[arg-type]
            )
            if self.retention_each:
                row.retention = retention(sent, self.goals, upto=p, store=self.store, spill_paths=compactor.state.spill_paths, weights=self.settings.retention)
            rows.append(row)
            contexts.append(working, same=self.sums.kept("contexts"))

            context = working + list(response)
            consumed = q
            raw_tokens += self.counts.sum(sendable(response))
            last = response[-1]
            if failed:
                usage = None
            elif self.anchor == "recorded" and last.usage is not None:
                usage = last.usage
            else:
                usage = self._replayed_usage(cache_step, output, hidden_cached)
            if self.progress is not None:
                self.progress(k + 1, len(points))
        final = tuple(context + list(raw[consumed:]))
        if trace is not None:
            trace.rows, trace.contexts, trace.summaries = rows, contexts, self.recorder.usages
        return self._report(rows, contexts, final, raw_tokens, notes)

    def _report(self, rows: Rows, contexts: Contexts, final: tuple[Message, ...], raw_tokens: int, notes: list[str]) -> Report:
        cfg, t = self.cfg, self.t
        final_sent = sendable(final)
        kept = retention(final_sent, self.goals, upto=len(t.messages), store=self.store,
                         spill_paths=self.compactor.state.spill_paths, weights=self.settings.retention)
        # Column by column: a Row built per row and pass was most of this function's time and, held in a list, its memory.
        col = rows.column
        failed, sent, over = col("failed"), col("sent_tokens"), col("over_watermark")
        billed = [not f for f in failed]
        sent_total = sum(n for n, b in zip(sent, billed, strict=True) if b)
        raw_total = sum(col("raw_tokens"))
        flags = [f for f in col("first_request_kept") if f is not None]
        final_first = first_request_in(final_sent, self.first)
        if final_first is not None:
            flags.append(final_first)
        report = Report(
            label=cfg.label,
            window=cfg.window,
            counter=self.compactor.counter.name,
            clock=self.clock.mode,
            rows=rows,
            peak_sent=max(sent, default=0),
            peak_raw=raw_tokens,
            requests=len(rows),
            requests_over_watermark=sum(over),
            breaker_open_over_watermark=sum(1 for b, o in zip(col("breaker_open"), over, strict=True) if b and o),
            watermark_tokens=self.watermark,
            compactions_by_strategy=dict(sorted(self.compactions.items())),
            summary_calls=self.recorder.calls,
            summary_cost=sum(col("summary_cost")),
            invalid_requests=sum(1 for a, o in zip(col("valid_anthropic"), col("valid_openai"), strict=True) if not (a and o)),
            overflows=sum(col("overflowed")),
            recoveries=sum(col("recovered")),
            failures=sum(failed),
            total_cost=sum(col("cost")),
            total_cost_uncompacted=sum(col("cost_uncompacted")),
            **recorded_totals(rows),
            cache_hit_ratio=sum(n for n, b in zip(col("cached_tokens"), billed, strict=True) if b) / sent_total if sent_total else 0.0,
            cache_hit_ratio_uncompacted=sum(col("raw_cached_tokens")) / raw_total if raw_total else 0.0,
            first_request_kept=all(flags) if flags else None,
            retention=kept,
            retention_score=kept.score,
            **recall_totals(rows),  # type: ignore[arg-type]
            # The five fields it sums, not a Row per row and pass.
            **content_totals(rows.fields("content_needed", "content_kept", "content_recoverable", "content_lost", "reread_tokens")),  # type: ignore[arg-type]
            config=cfg.json_data(),
            settings=self.settings.json_data(),
            meta={**t.meta.model_dump(mode="json"), "messages": len(t.messages)},
            notes=notes,
        )
        if self.content is not None and (line := thin_note(report.content_needed)) is not None:
            report.notes.append(line)
        report._attach(contexts, t.messages, final)
        report.keep_config(cfg)
        return report
