"""Stage 7, reactive recovery after the provider answers prompt-too-long.

Two strategies, one per design:

``minicode``, the published MiniCode code's ladder
(``ReactiveCompactEngine.try_recover_from_overflow``). Every attempt starts
with a forced full compact (the summary stage without session memory,
trigger "reactive"; with ``compact_every_attempt`` off, only attempt 1),
accepted when the result is under ``accept_ratio x blocking_ratio x window``
(0.9 x 0.97 = 87.3%). When it is rejected, the same attempt truncates
aggressively, keeping ``truncate_start - truncate_step x attempt`` of the
non-system messages, never under ``truncate_floor`` or
``truncate_min_messages``, behind a user note that carries the first user
request verbatim. The code computes ``0.4 - 0.1 x attempt`` with the
attempt counted from 1 before it truncates, so it keeps 30%, 20%, then the
15% floor; the English reference (and the code's own comments) say 40%, 30%,
20%, one step off. The lab follows the code. The share counts the lab's
messages, or with ``truncate_unit="minicode_messages"`` MiniCode's own
(``lab.core.tail.seed_message_count``); either way the cut then moves back so
no tool pair is split, which MiniCode's truncation does not do. One difference: a forced
compact that worked but is still over the limit is kept, and the truncation
cuts that shorter history (MiniCode truncates the attempt's input and drops
the summary). One ``recover`` call climbs
until an attempt is accepted by the estimate; a further call (the provider
still said no) resumes at the next attempt. After ``max_attempts`` it gives
up with a ``StageError``.

``mewcode``, the emergency path: force L1 (spill) and L2 (summary), reset
the usage anchor, re-estimate; still ``>= window - giveup_margin`` means give
up, otherwise the caller retries exactly once (a second call gives up).

Every loop is bounded by ``max_attempts``; attempts are counted in the
stage's state (``RecoveryState``), which a normal request resets. The stage
never runs another stage itself: it asks the Compactor (``yield Force(...)``),
which runs that stage with its own config, so recovery reads no config but its own.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from ...errors import StageError
from ..events import Event
from ..ids import id_key
from ..messages import Boundary, Message, TextBlock, ToolResultBlock
from ..summarizers.rules import first_user_request
from ..tail import adjust_for_pairs, count_units, newest_units_start, repair_roles
from .active import is_boundary, system_prompt_length
from .base import StageConfig
from .contract import Decision, Force, Rewrite, View

__all__ = [
    "RecoveryConfig",
    "RecoveryState",
    "RecoveryStage",
    "accept_limit",
    "truncate_keep_ratio",
    "truncate_keep_count",
    "TRUNCATION_NOTE",
]

# The first request inside a truncation note, in the summaries' own markup, so that
# ``first_user_request`` (which reads that markup) finds it again after the next truncation.
_REQUEST_BLOCK = "\n\nThe user's original request, verbatim:\n<primary-request>\n{request}\n</primary-request>"
TRUNCATION_NOTE = "[Context aggressively truncated for recovery - attempt {attempt}] Earlier conversation was removed to fit context limits."


class RecoveryConfig(StageConfig):
    strategy: Literal["minicode", "mewcode"] = Field("minicode", description="MiniCode's ladder (full compact, then truncation) or MewCode's emergency path (force spill + summary, retry once).")
    max_attempts: int = Field(3, ge=1, le=10, description="Recovery attempts before giving up (MiniCode 3).")
    blocking_ratio: float = Field(0.97, ge=0.5, le=1.0, description="Blocking limit as a share of the window (MiniCode 97%).")
    accept_ratio: float = Field(0.9, ge=0.1, le=1.0, description="A forced compact is accepted under this share of the blocking limit (MiniCode 0.9).")
    truncate_start: float = Field(0.4, ge=0.05, le=1.0, description="Truncation in attempt k keeps truncate_start - truncate_step x k of the non-system messages (MiniCode's code: 0.4 - 0.1 x k, so 30%, 20%, then the floor).")
    truncate_step: float = Field(0.1, ge=0.0, le=0.5, description="How much less each attempt's truncation keeps (MiniCode 0.1).")
    compact_every_attempt: bool = Field(True, description="Try the forced full compact again at the start of every attempt, not only the first (MiniCode's code: every attempt).")
    truncate_floor: float = Field(0.15, ge=0.0, le=1.0, description="Never keep less than this share (MiniCode 0.15)...")
    truncate_min_messages: int = Field(3, ge=1, le=100, description="...or fewer than this many messages (MiniCode 3).")
    truncate_unit: Literal["messages", "minicode_messages"] = Field("messages", description="What the truncation's share counts. 'minicode_messages': "
                                                                    "MiniCode's len(non_system), each tool result one message, harness lines "
                                                                    "included, summaries and notes not (MiniCode writes them as system messages). "
                                                                    "'messages': the lab's messages after the last boundary, its summary included.")
    giveup_margin: int = Field(3000, ge=0, le=100_000, description="MewCode: give up when still >= window - this after the forced compaction.")


def accept_limit(config: RecoveryConfig, window: int) -> int:
    """Tokens a recovered request must stay under (MiniCode: 0.9 x 97% = 87.3% of the window)."""
    return int(config.accept_ratio * config.blocking_ratio * window)


def truncate_keep_ratio(config: RecoveryConfig, attempt: int) -> float:
    """Share of non-system messages kept by the truncation of attempt ``attempt`` (MiniCode: 1 -> 30%, 2 -> 20%, 3 -> 15%)."""
    ratio = config.truncate_start - config.truncate_step * max(attempt, 1)
    return max(ratio, config.truncate_floor)


def truncate_keep_count(config: RecoveryConfig, n_messages: int, attempt: int) -> int:
    return min(n_messages, max(config.truncate_min_messages, int(n_messages * truncate_keep_ratio(config, attempt))))


def _stamp(view: View) -> datetime | None:
    return datetime.fromtimestamp(view.now, tz=UTC) if view.now else None


@dataclass
class RecoveryState:
    """Consecutive recovery attempts for the current request; the Compactor resets it on a normal request."""

    attempts: int = 0


# What a forced stage answers: (messages, events, boundary), or None when that stage is disabled.
_Forced = tuple[list[Message], tuple[Event, ...], Boundary | None] | None


class RecoveryStage:
    """A generator stage: the forced summary (and MewCode's forced spill) are ``Force`` requests the Compactor runs.

    Giving up is a decision too: ``Decision.failure`` carries the ``StageError``,
    which the Compactor raises once it has kept the attempts counted.
    """

    name = "recovery"
    State = RecoveryState

    def __init__(self, config: RecoveryConfig) -> None:
        self.config = config

    def decide(self, view: View, config: RecoveryConfig, state: RecoveryState) -> Generator[Force, _Forced, Decision]:
        if not config.enabled:
            raise StageError("prompt too long and reactive recovery is disabled in this config")
        if config.strategy == "mewcode":
            return (yield from self._emergency(view, config, state))
        return (yield from self._ladder(view, config, state))

    # -- MiniCode -----------------------------------------------------------

    def _ladder(self, view: View, cfg: RecoveryConfig, state: RecoveryState) -> Generator[Force, _Forced, Decision]:
        window = view.window
        counter = view.counter
        limit = accept_limit(cfg, window)
        current = list(view.messages)
        events: list[Event] = []
        boundary: Boundary | None = None
        attempt = state.attempts
        # Bounded: at most max_attempts attempts over the whole life of one failing request.
        while attempt < cfg.max_attempts:
            attempt += 1
            if attempt == 1 or cfg.compact_every_attempt:
                result = yield Force("summary", tuple(current), "reactive", session_memory=False)
                ok = False
                if result is not None:
                    events.extend(result[1])
                    ok = any(e.stage == "summary" and e.effective for e in result[1])
                after = counter.count_messages(result[0]) if ok and result is not None else counter.count_messages(current)
                accepted = ok and after < limit
                if result is None:
                    detail = f"attempt {attempt}: summary stage disabled, no forced compact"
                else:
                    verdict = "accepted" if accepted else "rejected"
                    detail = f"attempt {attempt}: forced full compact {verdict} ({after} tokens, limit {limit} = {cfg.accept_ratio} x {cfg.blocking_ratio} x {window})"
                if result is not None or attempt == 1:
                    events.append(Event(stage=self.name, trigger="reactive", tokens_before=after, tokens_after=after, strategy="full", success=accepted, detail=detail))
                if accepted:
                    assert result is not None
                    return self._done(list(result[0]), events, result[2] or boundary, attempt)
                if ok and result is not None:
                    # Kept although over the limit: the truncation below starts from the shorter history.
                    current, boundary = list(result[0]), result[2] or boundary
            current, event, cut = self._truncate(current, view, cfg, attempt)
            events.append(event)
            boundary = cut
            if counter.count_messages(current) < limit:
                return self._done(current, events, boundary, attempt)
        failure = StageError(
            f"prompt too long: reactive recovery gave up after {cfg.max_attempts} attempt(s); "
            f"the context is still ~{counter.count_messages(current)} tokens for a {window}-token window "
            f"(a recovered request must stay under {limit})"
        )
        return Decision(state=RecoveryState(attempt), failure=failure)

    @staticmethod
    def _done(messages: list[Message], events: list[Event], boundary: Boundary | None, attempt: int, *, forget_anchor: bool = False) -> Decision:
        return Decision((Rewrite(tuple(messages), boundary),), tuple(events), RecoveryState(attempt), forget_anchor=forget_anchor)

    def _truncate(self, messages: Sequence[Message], view: View, cfg: RecoveryConfig, attempt: int) -> tuple[list[Message], Event, Boundary]:
        counter = view.counter
        head_n = system_prompt_length(messages)
        head = list(messages[:head_n])
        # Old boundaries and notes are superseded by this truncation's own.
        body = [m for m in messages[head_n:] if not is_boundary(m) and m.tag != "truncation_note"]
        if cfg.truncate_unit == "minicode_messages":
            size = count_units(body, "minicode_messages")
            keep = truncate_keep_count(cfg, size, attempt)
            start = newest_units_start(body, keep, "minicode_messages")
        else:
            size = len(body)
            keep = truncate_keep_count(cfg, size, attempt)
            start = len(body) - keep
        # The design cuts by count alone; the lab moves the cut back so no tool pair is split (a 400 otherwise).
        tail = body[adjust_for_pairs(body, start) :]
        kept = {id(m) for m in tail}
        removed = [m for m in messages[head_n:] if id(m) not in kept]
        request = view.first_request or first_user_request(messages)
        first_line = TRUNCATION_NOTE.format(attempt=attempt)
        text = first_line
        if request and not any(request in _text(m) for m in tail):
            text += _REQUEST_BLOCK.format(request=request)
        key = id_key(str(attempt), tail[0].id if tail else "<empty>", text)
        note = Message(role="user", content=(TextBlock(text=text),), id=f"truncation-{key}", timestamp=_stamp(view), tag="truncation_note")
        # The note is the first turn, so repair never puts a placeholder in front of it.
        sent = head + repair_roles([note] + tail)
        before = counter.count_messages(messages)
        after = counter.count_messages(sent)
        boundary = Boundary(
            trigger="reactive",
            strategy="reactive",
            timestamp=_stamp(view),
            tokens_before=before,
            tokens_after=after,
            messages_removed=len(removed),
            preserved_first_id=tail[0].id if tail else None,
            preserved_last_id=tail[-1].id if tail else None,
        )
        marker = Message(role="system", content=(TextBlock(text=first_line),), id=f"boundary-{key}", timestamp=_stamp(view), tag="boundary", boundary=boundary)
        out = head + [marker] + sent[head_n:]
        ratio = truncate_keep_ratio(cfg, attempt)
        event = Event(
            stage=self.name,
            trigger="reactive",
            tokens_before=before,
            tokens_after=counter.count_messages(out),
            ids=tuple(m.id for m in removed),
            strategy="reactive",
            success=True,
            detail=f"attempt {attempt}: aggressive truncation kept {len(tail)} of {len(body)} messages (ratio {ratio:.2f} of {size} "
            f"{'MiniCode messages' if cfg.truncate_unit == 'minicode_messages' else 'messages'}, at least {cfg.truncate_min_messages}); "
            f"{len(removed)} removed",
        )
        return out, event, boundary

    # -- MewCode ------------------------------------------------------------

    def _emergency(self, view: View, cfg: RecoveryConfig, state: RecoveryState) -> Generator[Force, _Forced, Decision]:
        window = view.window
        counter = view.counter
        if state.attempts >= 1:
            return Decision(failure=StageError("prompt too long again after the emergency compaction: MewCode retries exactly once, giving up"))
        events: list[Event] = []
        current = list(view.messages)
        boundary: Boundary | None = None
        before = counter.count_messages(current)
        spilled = yield Force("spill", tuple(current), "emergency")
        if spilled is not None:
            current = list(spilled[0])
            events.extend(spilled[1])
        # None: the summary's own session-memory setting.
        result = yield Force("summary", tuple(current), "emergency")
        if result is not None:
            events.extend(result[1])
            if any(e.stage == "summary" and e.success for e in result[1]):
                current, boundary = list(result[0]), result[2]
        after = counter.count_messages(current)
        giveup = window - cfg.giveup_margin
        if after >= giveup:
            failure = StageError(
                f"prompt too long: still ~{after} tokens after the emergency compaction "
                f"(give-up limit {giveup} = window {window} - {cfg.giveup_margin}); giving up"
            )
            # The old anchor described the old history; MewCode re-estimates from zero.
            return Decision(state=RecoveryState(1), failure=failure, forget_anchor=True)
        events.append(Event(stage=self.name, trigger="emergency", tokens_before=after, tokens_after=after, strategy="emergency", success=True,
                            detail=f"emergency compaction: {before} -> {after} tokens, under the give-up limit {giveup}; retry the request once"))
        return self._done(current, events, boundary, 1, forget_anchor=True)


def _text(message: Message) -> str:
    return "\n".join(b.text if isinstance(b, TextBlock) else b.content if isinstance(b, ToolResultBlock) else "" for b in message.content)
