"""Configs that cannot work at their window, found before anything is replayed.

Both reference designs were tuned for a 200k window. At the 16k-64k windows
users try in the lab, some of their fixed numbers stop making sense: a
verbatim tail as large as the whole auto-compaction threshold, a watermark
that is skipped, a tool result allowed to stay inline although it is larger
than the window. ``config_warnings`` names each such case in plain English.

Every warning is derived from the config alone, with the stages' own
formulas (``watermark.threshold`` and ``watermark.exceeds``, the summary's
attachment cap, the microcompact trigger, MewCode's give-up limit), so none
of them depends on a transcript. The one estimate is the size in tokens of a
tool result measured in characters or bytes: it is taken as plain ASCII text
(one byte per character) at the counter's own rate, 3.5 characters per token
for ``chars/3.5`` and MiniCode's 4 otherwise, which real tokenizers also
come close to on English and code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .stages.recovery import accept_limit
from .stages.watermark import threshold

if TYPE_CHECKING:  # pragma: no cover
    from .config import CompactionConfig

__all__ = ["config_warnings", "inactive_by_design", "chars_per_token", "first_trigger", "attachment_cap"]


def chars_per_token(counter: str) -> float:
    """Characters of plain ASCII per token for the counter named ``counter``."""
    return 3.5 if counter == "chars/3.5" else 4.0


def first_trigger(config: CompactionConfig) -> int | None:
    """The smallest estimate that triggers auto-compaction, or None when it is off or skipped at this window."""
    wm = config.watermark
    if not (wm.enabled and config.summary.enabled):
        return None
    limit = threshold(wm, config.window, "auto")
    if limit is None:
        return None
    # MiniCode triggers strictly above its watermark, MewCode at it (``watermark.exceeds``).
    return limit + 1 if wm.mode == "ratio" else limit


def attachment_cap(config: CompactionConfig) -> int:
    """Tokens the recovery attachment may take after a summary; 0 when no summary gets one."""
    s = config.summary
    if not s.enabled or (s.summarizer == "rules" and not s.attachment_for_rules):
        return 0
    return s.attachment_tokens(config.window)


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _watermark(config: CompactionConfig) -> list[str]:
    wm, window = config.watermark, config.window
    if not (wm.enabled and config.summary.enabled):
        return []
    if threshold(wm, window, "auto") is None:
        if window <= wm.min_window:
            why = f"the window ({_n(window)}) is at or below watermark.min_window ({_n(wm.min_window)})"
        else:
            value = window - wm.summary_reserve - wm.safety_margin
            why = (f"window - watermark.summary_reserve - watermark.safety_margin = {_n(window)} - {_n(wm.summary_reserve)} - "
                   f"{_n(wm.safety_margin)} = {_n(value)} is not a positive threshold")
        return [f"Auto-compaction never runs: {why}, so it is skipped (MewCode's rule against a negative threshold). "
                "Only the prompt-too-long recovery compacts, after the provider has refused a request."]
    first = first_trigger(config)
    assert first is not None
    out: list[str] = []
    if first > window:
        out.append(f"Auto-compaction triggers only above {_n(first - 1)} tokens, which is not below the window ({_n(window)}): "
                   "the provider refuses the request before auto-compaction ever runs. Lower watermark.ratio.")
    return out


def _summary(config: CompactionConfig) -> list[str]:
    """The summary stage at the moment auto-compaction first triggers: can its tail leave anything to summarise?

    At the trigger the context holds about ``first`` tokens. A tail that keeps
    at least ``first`` tokens (``tail_min_tokens``, both policies) or every
    message up to ``tail_max_tokens`` (MiniCode's scan) keeps the whole
    context, so that summary fails with "nothing to summarise"; failures in a
    row open the circuit breaker. The full compact with
    ``full_tail_policy="third"`` counts messages, not tokens, so only session
    memory is affected then.
    """
    s, wm = config.summary, config.watermark
    first = first_trigger(config)
    if first is None:
        return []
    who = []
    if s.session_memory:
        who.append("session memory")
    if s.full_tail_policy == "same":
        who.append("the full summary")
    if not who:
        return []
    subject = " and ".join(who)
    low, high = s.tail_bounds(config.window)
    keeps, it, has = ("keep", "they", "have") if len(who) > 1 else ("keeps", "it", "has")
    breaker = (f"after {wm.breaker_failures} such failure(s) in a row the circuit breaker turns auto-compaction off"
               if s.full_tail_policy == "same" else "the full summary (tail: the newest min(n/3, tail_min_messages) messages) does the work")
    if low >= first:
        return [f"summary.tail_min_tokens ({_n(low)}) is at or above the {_n(first)} tokens at which auto-compaction first "
                f"triggers: {subject} {keeps} the whole history in the verbatim tail and {has} nothing to summarise, and {breaker}. "
                "Lower summary.tail_min_tokens or raise the window."]
    if s.tail_policy == "minicode" and high >= first:
        mark = _n(threshold(wm, config.window, "auto") or first)
        if high >= config.window:
            when = f"never summarise{'s' if it == 'it' else ''} before the provider refuses the request; {breaker}"
        else:
            when = f"summarise{'s' if it == 'it' else ''} only once the context passes {_n(high)} tokens; until then {breaker}"
        third = ", set summary.full_tail_policy to 'third'," if s.full_tail_policy == "same" else ""
        return [f"summary tail max {_n(high)} ≥ watermark {mark}: {subject} {keeps} every message within "
                f"summary.tail_max_tokens in the verbatim tail, so {it} {when}. Lower summary.tail_max_tokens below {mark}{third} "
                "or raise the window."]
    return []


def _summary_size(config: CompactionConfig) -> list[str]:
    """A summary message that may itself be as large as the threshold it is meant to get under."""
    s = config.summary
    first = first_trigger(config)
    if first is None:
        return []
    out: list[str] = []
    if s.keep_user_messages_tokens >= first:
        out.append(f"summary.keep_user_messages_tokens ({_n(s.keep_user_messages_tokens)}) lets the summary keep user messages verbatim up to "
                   f"the {_n(first)} tokens at which auto-compaction triggers: after a long session the summary alone can be over the threshold, "
                   "so every request compacts again or the summary saves too little. Lower summary.keep_user_messages_tokens.")
    if s.summarizer != "rules" and s.summary_max_tokens >= first:
        out.append(f"summary.summary_max_tokens ({_n(s.summary_max_tokens)}) lets the LLM's summary reach the {_n(first)} tokens at which "
                   "auto-compaction triggers: a long summary is over the threshold by itself. Lower summary.summary_max_tokens.")
    return out


def _attachment(config: CompactionConfig) -> list[str]:
    cap = attachment_cap(config)
    tail = config.summary.tail_bounds(config.window)[0]
    if not cap or cap + tail <= config.window:
        return []
    share = config.summary.attachment_max_window_share
    return [f"The recovery attachment may take up to {_n(cap)} tokens ({share:.0%} of the window) and the verbatim tail at least "
            f"{_n(tail)}: together more than the window ({_n(config.window)}), so a history just compacted can still be too long "
            "to send. Lower summary.attachment_max_window_share or summary.tail_min_tokens."]


def _spill(config: CompactionConfig) -> list[str]:
    sp, window = config.spill, config.window
    if not sp.enabled:
        return []
    rate = chars_per_token(config.counter)
    out: list[str] = []
    tokens = sp.threshold / rate
    if tokens > window:
        out.append(f"spill.threshold keeps a single tool result of up to {_n(sp.threshold)} {sp.unit} inline: as plain text that is about "
                   f"{_n(tokens)} tokens at {rate:g} characters per token, more than the window ({_n(window)}). Lower spill.threshold.")
    if sp.message_budget_enabled and sp.message_budget / rate > window:
        out.append(f"spill.message_budget lets the tool results of one message add up to {_n(sp.message_budget)} {sp.unit} before "
                   f"any is spilled: as plain text about {_n(sp.message_budget / rate)} tokens, more than the window ({_n(window)}). "
                   "Lower spill.message_budget.")
    return out


def _microcompact(config: CompactionConfig) -> list[str]:
    mc = config.microcompact
    if not (mc.enabled and mc.mode == "token_trigger") or mc.trigger_at(config.window) < config.window:
        return []
    # The stage clears only when the context is larger than its trigger.
    return [f"microcompact.trigger_tokens ({_n(mc.trigger_at(config.window))}) is not below the window ({_n(config.window)}): old tool "
            "results are never cleared before the provider refuses the request. Lower microcompact.trigger_tokens."]


def _recovery(config: CompactionConfig) -> list[str]:
    rc, window = config.recovery, config.window
    if not rc.enabled:
        return []
    if rc.strategy == "minicode":
        return _ladder(config)
    giveup = window - rc.giveup_margin
    if giveup <= 0:
        return [f"recovery.giveup_margin ({_n(rc.giveup_margin)}) is not below the window ({_n(window)}): the emergency "
                "recovery always gives up."]
    tail = config.summary.tail_bounds(window)[0]
    if config.summary.enabled and tail >= giveup:
        return [f"summary.tail_min_tokens ({_n(tail)}) is at or above the emergency give-up limit (window - recovery.giveup_margin "
                f"= {_n(giveup)}): whatever the forced summary keeps is over that limit, so the emergency recovery succeeds only when "
                "spilling alone brings the request under it."]
    return []


def _ladder(config: CompactionConfig) -> list[str]:
    """MiniCode's forced full compact: accepted only under accept_ratio x blocking_ratio x window."""
    s, rc = config.summary, config.recovery
    if not s.enabled or s.full_tail_policy != "same":
        return []
    limit = accept_limit(rc, config.window)
    low, high = s.tail_bounds(config.window)
    # The forced compact runs on a context just over the window and keeps at least tail_min_tokens of it.
    if low >= limit:
        why = (f"summary.tail_min_tokens ({_n(low)}) is at or above the {_n(limit)} tokens a recovered request must stay "
               "under (recovery.accept_ratio x recovery.blocking_ratio x window): the recovery ladder's forced full compact is always rejected")
    elif s.tail_policy == "minicode" and high >= config.window:
        why = (f"summary.tail_max_tokens ({_n(high)}) is not below the window ({_n(config.window)}): the recovery ladder's "
               "forced full compact keeps the whole context in its verbatim tail and has nothing to summarise")
    else:
        return []
    return [f"{why}, so recovery truncates history without a summary. Set summary.full_tail_policy to 'third' or lower the tail."]


def inactive_by_design(config: CompactionConfig) -> list[str]:
    """Short notes for what ``config`` does not do at its window on purpose, to be shown beside the numbers they explain.

    A number from such a config reads as a bug without one: MewCode at a 32k window skips auto-compaction
    (watermark.min_window 33,000), so its peak there is larger than at 48k, where it compacts.
    """
    wm, window = config.watermark, config.window
    if not config.summary.enabled:
        return ["no summaries by design: the summary stage is off (summary.enabled), so no request is ever summarized"]
    if not wm.enabled:
        return ["no auto-compaction by design: the watermark is off (watermark.enabled); only the prompt-too-long recovery summarizes"]
    if threshold(wm, window, "auto") is not None:
        return []
    if window <= wm.min_window:
        return [f"auto-compaction skipped by design: the window ({_n(window)}) is at or below watermark.min_window ({_n(wm.min_window)}), "
                "MewCode's rule against a negative threshold; only the prompt-too-long recovery compacts, so the peak can exceed "
                "a larger window's"]
    return [f"auto-compaction skipped by design: at a {_n(window)} window, window - watermark.summary_reserve - watermark.safety_margin "
            "is no positive threshold; only the prompt-too-long recovery compacts"]


def config_warnings(config: CompactionConfig) -> list[str]:
    """Plain-English warnings for settings that cannot work at ``config.window``; [] when none apply.

    Pure: reads the config, never a transcript, the disk or the network.
    """
    return [*_watermark(config), *_summary(config), *_summary_size(config), *_attachment(config), *_spill(config),
            *_microcompact(config), *_recovery(config)]
