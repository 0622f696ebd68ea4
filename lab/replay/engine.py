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

The clock is message timestamps when ``config.replay.use_timestamps`` and the
transcript has any (the newest timestamp at or before the request, never
going back), else ``k x seconds_per_request`` after a fixed epoch, so replays
are reproducible. The usage anchor is, by default, the usage the replay's own
provider model reports for the previous request ("replayed"): the usage
recorded in a transcript describes the original agent's prompt, not the one
this config built. ``anchor="recorded"`` uses the recorded usage where there is
one.

Counts come from the counter's caches (per block text, and per message object
here and in the Compactor); a row sums cached counts, it never recounts text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence

from pydantic import ValidationError

from ..core.compactor import CompactionOutcome, Compactor
from ..core.config import CompactionConfig, parse_config
from ..core.events import Event
from ..core.messages import Message, TextBlock, ToolResultBlock, Transcript, Usage
from ..core.presets import preset
from ..core.stages.watermark import threshold
from ..core.stats import PARTS, composition
from ..core.store import MemoryStore, SpillStore
from ..core.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from ..core.summarizers.rules import user_texts
from ..core.tokens.base import TokenCounter, get_counter
from ..core.validate import anthropic_problems, openai_problems
from ..errors import ConfigError, PromptTooLongError, StageError, TranscriptError
from .cache import CacheStep, PromptCache, request_cost
from .report import Report, Row
from .retention import retention, targets

__all__ = ["replay", "request_points", "resolve_config", "as_transcript", "prompt_too_long_error", "EPOCH", "MAX_PROBLEMS"]

# 2025-01-01T00:00:00Z: the simulated clock's start, fixed so replays are reproducible.
EPOCH = 1_735_689_600.0
# Problems listed per row; the count of invalid requests is exact regardless.
MAX_PROBLEMS = 10
# recover() calls per request, on top of recovery's own bound.
_MAX_RECOVER_CALLS = 12
# Stages whose events are decisions or bookkeeping, not compactions.
_NOT_COMPACTIONS = ("watermark", "active")

Progress = Callable[[int, int], Any]
ConfigLike = CompactionConfig | str | dict | None


def request_points(messages: Sequence[Message]) -> list[int]:
    """Indices of assistant messages that answer a request (an assistant after a non-assistant)."""
    return [i for i in range(1, len(messages)) if messages[i].role == "assistant" and messages[i - 1].role != "assistant"]


def resolve_config(config: ConfigLike, window: int | None = None) -> CompactionConfig:
    """A private copy of ``config`` (a config, a preset name, a mapping, or None for the defaults)."""
    if config is None:
        cfg = CompactionConfig()
    elif isinstance(config, CompactionConfig):
        cfg = config.model_copy(deep=True)
    elif isinstance(config, str):
        cfg = preset(config)
    elif isinstance(config, dict):
        cfg = parse_config(config)
    else:
        raise ConfigError(f"config must be a CompactionConfig, a preset name or a mapping, got {type(config).__name__}")
    if window is not None:
        try:
            cfg.window = window
        except ValidationError as e:
            raise ConfigError(f"window: {e.errors()[0]['msg']}") from None
    return cfg


def as_transcript(source: Transcript | str | os.PathLike[str] | Sequence[Message]) -> Transcript:
    """A transcript from a ``Transcript``, a file path (format detected) or a list of messages."""
    if isinstance(source, Transcript):
        return source
    if isinstance(source, (str, os.PathLike)):
        from ..formats import load

        return load(source)
    if isinstance(source, Sequence) and all(isinstance(m, Message) for m in source):
        return Transcript(messages=list(source))
    raise TranscriptError(f"cannot replay a {type(source).__name__}", expected="a Transcript, a path, or a list of messages")


def prompt_too_long_error(tokens: int, window: int) -> PromptTooLongError:
    """The error Anthropic answers with when a prompt does not fit, body included."""
    message = f"prompt is too long: {tokens} tokens > {window} maximum"
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return PromptTooLongError(message, body=body, provider="anthropic")


class _RecordingSummarizer:
    """Passes calls through and keeps every result, so rows can show summary calls and their usage."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        # The summary stage names the strategy of a failure after the summarizer.
        self.name = getattr(inner, "name", "rules")
        self.calls = 0
        self.results: list[SummaryResult] = []

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        result = self.inner.summarize(request)
        self.results.append(result)
        return result


def _summarizer(cfg: CompactionConfig, given: Summarizer | None, notes: list[str]) -> Summarizer:
    if given is not None:
        return given
    from ..core.summarizers.rules import RuleSummarizer

    if cfg.summary.summarizer != "rules":
        # A replay reaches a provider only when the caller hands it an LLM summarizer on purpose.
        notes.append(f"config asks for the {cfg.summary.summarizer} summarizer but none was given: rule-based summaries used")
    return RuleSummarizer()


def _sendable(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.boundary is None and m.tag != "boundary"]


def _has_result(messages: Sequence[Message]) -> bool:
    return any(isinstance(b, ToolResultBlock) for m in messages for b in m.content)


class _Counts:
    """Message counts by object identity; the entry holds the message so its id cannot be reused."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._cache: dict[int, tuple[Message, int]] = {}

    def __call__(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        n = self.counter.count_message(message)
        self._cache[id(message)] = (message, n)
        return n

    def sum(self, messages: Sequence[Message]) -> int:
        return sum(self(m) for m in messages)


class _Parts:
    """Composition per message object, summed per row: ``composition`` is additive over messages."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._cache: dict[int, tuple[Message, dict[str, int]]] = {}

    def of(self, messages: Sequence[Message]) -> dict[str, int]:
        total = dict.fromkeys(PARTS, 0)
        for m in messages:
            hit = self._cache.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, composition([m], self.counter))
                self._cache[id(m)] = hit
            for part, n in hit[1].items():
                total[part] += n
        return total


@dataclass
class _Clock:
    settings_use: bool
    seconds_per_request: float
    mode: str = "simulated"
    last: float | None = None

    @classmethod
    def for_transcript(cls, transcript: Transcript, cfg: CompactionConfig) -> "_Clock":
        clock = cls(cfg.replay.use_timestamps, cfg.replay.seconds_per_request)
        if clock.settings_use and any(m.timestamp is not None for m in transcript.messages):
            clock.mode = "timestamps"
        return clock

    def at(self, k: int, messages: Sequence[Message], point: int) -> float:
        if self.mode == "simulated":
            return EPOCH + k * self.seconds_per_request
        stamp = next((m.timestamp for m in reversed(messages[:point]) if m.timestamp is not None), None)
        if stamp is None:
            stamp = messages[point].timestamp
        now = stamp.timestamp() if stamp is not None else (self.last if self.last is not None else EPOCH)
        # Clocks in logs can step back (merged threads, skew); the replay's time never does.
        if self.last is not None and now < self.last:
            now = self.last
        self.last = now
        return now


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


def _first_request_in(context: Sequence[Message], first: str | None) -> bool | None:
    if first is None:
        return None
    return any(isinstance(b, TextBlock) and first in b.text for m in context for b in m.content)


def _summary_numbers(results: Sequence[SummaryResult], pricing: Any) -> tuple[int, int, float]:
    inp = out = 0
    cost = 0.0
    for r in results:
        if r.usage is None:
            continue
        u = r.usage
        inp += u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        out += u.output_tokens
        cost += (
            u.input_tokens * pricing.input_per_mtok
            + u.cache_write_tokens * pricing.cache_write_per_mtok
            + u.cache_read_tokens * pricing.cache_read_per_mtok
            + u.output_tokens * pricing.output_per_mtok
        ) / 1_000_000
    return inp, out, cost


def replay(
    transcript: Transcript | str | os.PathLike[str] | Sequence[Message],
    config: ConfigLike = None,
    *,
    window: int | None = None,
    counter: TokenCounter | None = None,
    store: SpillStore | None = None,
    summarizer: Summarizer | None = None,
    retention_each: bool = False,
    progress: Progress | None = None,
    anchor: Literal["replayed", "recorded"] = "replayed",
) -> Report:
    """Replay ``transcript`` under ``config`` and report every request; see the module docstring."""
    if anchor not in ("replayed", "recorded"):
        raise ConfigError(f"anchor must be 'replayed' or 'recorded', got {anchor!r}")
    t = as_transcript(transcript)
    cfg = resolve_config(config, window)
    counter = counter if counter is not None else get_counter(cfg.counter)
    store = store if store is not None else MemoryStore()
    notes: list[str] = []
    recorder = _RecordingSummarizer(_summarizer(cfg, summarizer, notes))
    compactor = Compactor(cfg, counter, store, recorder, session_id=t.meta.session_id or "replay", tools=t.tools)
    run = _Run(t, cfg, compactor, recorder, store, retention_each, progress, anchor)
    return run.go(notes)


class _Run:
    """The state of one replay; ``go`` walks the request points once."""

    def __init__(self, t: Transcript, cfg: CompactionConfig, compactor: Compactor, recorder: _RecordingSummarizer,
                 store: SpillStore, retention_each: bool, progress: Progress | None, anchor: str) -> None:
        self.t, self.cfg, self.compactor, self.recorder, self.store = t, cfg, compactor, recorder, store
        self.retention_each, self.progress, self.anchor = retention_each, progress, anchor
        self.counts = _Counts(compactor.counter)
        self.parts = _Parts(compactor.counter)
        self.cache = PromptCache(cfg.replay.cache, compactor.counter)
        self.raw_cache = PromptCache(cfg.replay.cache, compactor.counter)
        self.clock = _Clock.for_transcript(t, cfg)
        self.goals = targets(t.messages, t.meta.planted_facts)
        texts = user_texts(t.messages)
        self.first = texts[0].text if texts else None
        self.first_at = next((i for i, m in enumerate(t.messages) if texts and m.id == texts[0].id), None)
        limit = threshold(cfg.watermark, cfg.window, "auto")
        self.watermark = limit if limit is not None else cfg.window
        self.compactions: dict[str, int] = {}

    def _recover(self, working: list[Message], sent_tokens: int, now: float, step: _Step) -> tuple[list[Message], bool, int, list[Event]]:
        """Play the provider's prompt-too-long until the context fits; returns (context, recovered, calls, failed events)."""
        window = self.cfg.window
        attempt, tokens = working, sent_tokens
        calls = 0
        tried: list[CompactionOutcome] = []
        while calls < _MAX_RECOVER_CALLS:
            calls += 1
            try:
                outcome = self.compactor.recover(attempt, prompt_too_long_error(tokens, window), now=now)
            except StageError as e:
                failure = Event(stage="recovery", trigger="provider", tokens_before=tokens, tokens_after=tokens, success=False, detail=f"recovery failed: {e}")
                return working, False, calls, [ev for o in tried for ev in o.events] + [failure]
            tried.append(outcome)
            attempt = outcome.messages
            tokens = self.counts.sum(_sendable(attempt))
            if tokens <= window:
                for o in tried:
                    step.take(o)
                return attempt, True, calls, []
        failure = Event(stage="recovery", trigger="provider", tokens_before=tokens, tokens_after=tokens, success=False,
                        detail=f"recovery still over the window after {calls} calls")
        return working, False, calls, [ev for o in tried for ev in o.events] + [failure]

    def _count_compactions(self, events: Sequence[Event]) -> None:
        for e in events:
            if e.effective and e.strategy and e.stage not in _NOT_COMPACTIONS and e.strategy != "reapply":
                self.compactions[e.strategy] = self.compactions.get(e.strategy, 0) + 1

    def go(self, notes: list[str]) -> Report:
        t, cfg, compactor = self.t, self.cfg, self.compactor
        raw = t.messages
        pricing = cfg.replay.pricing
        points = request_points(raw)
        rows: list[Row] = []
        contexts: list[tuple[Message, ...]] = []
        context: list[Message] = []
        consumed = 0
        raw_tokens = 0
        usage: Usage | None = None
        for k, p in enumerate(points):
            new = raw[consumed:p]
            raw_tokens += self.counts.sum(_sendable(new))
            now = self.clock.at(k, raw, p)
            working = context + list(new)
            tokens_before = self.counts.sum(_sendable(working))
            step = _Step()
            calls_before = len(self.recorder.results)
            summary_calls_before = self.recorder.calls
            try:
                if _has_result(new):
                    outcome = compactor.dispatch(working, now=now)
                    step.take(outcome)
                    working = outcome.messages
                outcome = compactor.process_request(working, now=now, usage=usage if cfg.watermark.use_usage_anchor else None)
            except StageError as e:
                raise StageError(f"request {k} (message {p}): {e}") from e
            step.take(outcome)
            working = outcome.messages
            sent = _sendable(working)
            sent_tokens = self.counts.sum(sent)
            overflowed = sent_tokens > cfg.window
            recovered = failed = False
            recover_calls = 0
            failed_events: list[Event] = []
            if overflowed:
                working, recovered, recover_calls, failed_events = self._recover(working, sent_tokens, now, step)
                failed = not recovered
                sent = _sendable(working)
                sent_tokens = self.counts.sum(sent)
            self._count_compactions(step.events)

            q = p + 1
            while q < len(raw) and raw[q].role == "assistant":
                q += 1
            response = raw[p:q]
            output = self.counts.sum(response)
            if failed:
                cache_step = CacheStep(sent=sent_tokens, cached=0, written=0, uncached=0, expired=False, shared=0)
                cost = 0.0
            else:
                cache_step = self.cache.step(sent, now, sent=sent_tokens)
                cost = request_cost(cache_step, output, pricing)
            raw_step = self.raw_cache.step_append(raw_tokens, now)
            s_in, s_out, s_cost = _summary_numbers(self.recorder.results[calls_before:], pricing)
            a_problems = anthropic_problems(working)
            o_problems = openai_problems(working)
            problems = [f"anthropic: {x}" for x in a_problems] + [f"openai: {x}" for x in o_problems]
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
                cost_uncompacted=request_cost(raw_step, output, pricing),
                cache_hit_ratio=cache_step.cached / sent_tokens if sent_tokens and not failed else 0.0,
                over_watermark=sent_tokens > self.watermark,
                overflowed=overflowed,
                recovered=recovered,
                failed=failed,
                recover_calls=recover_calls,
                summary_calls=self.recorder.calls - summary_calls_before,
                summary_input_tokens=s_in,
                summary_output_tokens=s_out,
                summary_cost=s_cost,
                composition=self.parts.of(sent),
                first_request_kept=_first_request_in(sent, self.first) if self.first_at is not None and self.first_at < p else None,
            )
            if self.retention_each:
                row.retention = retention(sent, self.goals, upto=p, store=self.store, spill_paths=compactor.state.spill_paths, weights=cfg.replay.retention)
            rows.append(row)
            contexts.append(tuple(working))

            context = working + list(response)
            consumed = q
            raw_tokens += self.counts.sum(_sendable(response))
            last = response[-1]
            if failed:
                usage = None
            elif self.anchor == "recorded" and last.usage is not None:
                usage = last.usage
            else:
                usage = Usage(input_tokens=cache_step.uncached, output_tokens=output, cache_read_tokens=cache_step.cached, cache_write_tokens=cache_step.written)
            if self.progress is not None:
                self.progress(k + 1, len(points))
        final = tuple(context + list(raw[consumed:]))
        return self._report(rows, contexts, final, raw_tokens, notes)

    def _report(self, rows: list[Row], contexts: list[tuple[Message, ...]], final: tuple[Message, ...], raw_tokens: int, notes: list[str]) -> Report:
        cfg, t = self.cfg, self.t
        final_sent = _sendable(final)
        kept = retention(final_sent, self.goals, upto=len(t.messages), store=self.store,
                         spill_paths=self.compactor.state.spill_paths, weights=cfg.replay.retention)
        billed = [r for r in rows if not r.failed]
        sent_total = sum(r.sent_tokens for r in billed)
        raw_total = sum(r.raw_tokens for r in rows)
        flags = [r.first_request_kept for r in rows if r.first_request_kept is not None]
        final_first = _first_request_in(final_sent, self.first)
        if final_first is not None:
            flags.append(final_first)
        report = Report(
            label=cfg.label,
            window=cfg.window,
            counter=self.compactor.counter.name,
            clock=self.clock.mode,
            rows=rows,
            peak_sent=max((r.sent_tokens for r in rows), default=0),
            peak_raw=raw_tokens,
            requests=len(rows),
            requests_over_watermark=sum(1 for r in rows if r.over_watermark),
            watermark_tokens=self.watermark,
            compactions_by_strategy=dict(sorted(self.compactions.items())),
            summary_calls=self.recorder.calls,
            summary_cost=sum(r.summary_cost for r in rows),
            invalid_requests=sum(1 for r in rows if not r.valid),
            overflows=sum(1 for r in rows if r.overflowed),
            recoveries=sum(1 for r in rows if r.recovered),
            failures=sum(1 for r in rows if r.failed),
            total_cost=sum(r.cost for r in rows),
            total_cost_uncompacted=sum(r.cost_uncompacted for r in rows),
            cache_hit_ratio=sum(r.cached_tokens for r in billed) / sent_total if sent_total else 0.0,
            cache_hit_ratio_uncompacted=sum(r.raw_cached_tokens for r in rows) / raw_total if raw_total else 0.0,
            first_request_kept=all(flags) if flags else None,
            retention=kept,
            retention_score=kept.score,
            config=cfg.model_dump(mode="json"),
            meta={**t.meta.model_dump(mode="json"), "messages": len(t.messages)},
            notes=notes,
        )
        report._attach(contexts, t.messages, final)
        return report
