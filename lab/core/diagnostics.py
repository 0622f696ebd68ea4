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

from .stages.watermark import threshold

if TYPE_CHECKING:  # pragma: no cover
    from .config import CompactionConfig

__all__ = ["config_warnings", "chars_per_token", "first_trigger", "attachment_cap"]


def chars_per_token(counter: str) -> float:
    """Characters of plain ASCII per token for the counter named ``counter``."""
    return 3.5 if counter == "chars/3.5" else 4.0


def first_trigger(config: "CompactionConfig") -> int | None:
    """The smallest estimate that triggers auto-compaction, or None when it is off or skipped at this window."""
    wm = config.watermark
    if not (wm.enabled and config.summary.enabled):
        return None
    limit = threshold(wm, config.window, "auto")
    if limit is None:
        return None
    # MiniCode triggers strictly above its watermark, MewCode at it (``watermark.exceeds``).
    return limit + 1 if wm.mode == "ratio" else limit


def attachment_cap(config: "CompactionConfig") -> int:
    """Tokens the recovery attachment may take after a summary; 0 when no summary gets one."""
    s = config.summary
    if not s.enabled or (s.summarizer == "rules" and not s.attachment_for_rules):
        return 0
    return s.attachment_tokens(config.window)


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _watermark(config: "CompactionConfig") -> list[str]:
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
    tail = config.summary.tail_min_tokens
    if tail >= first:
        out.append(
            f"summary.tail_min_tokens ({_n(tail)}) is at or above the {_n(first)} tokens at which auto-compaction first triggers: "
            "a summary triggered there keeps the whole history in its verbatim tail and has nothing to summarise, and after "
            f"{wm.breaker_failures} such failure(s) in a row the circuit breaker turns auto-compaction off. "
            "Lower summary.tail_min_tokens or raise the window."
        )
    return out


def _attachment(config: "CompactionConfig") -> list[str]:
    cap = attachment_cap(config)
    tail = config.summary.tail_min_tokens
    if not cap or cap + tail <= config.window:
        return []
    share = config.summary.attachment_max_window_share
    return [f"The recovery attachment may take up to {_n(cap)} tokens ({share:.0%} of the window) and the verbatim tail at least "
            f"{_n(tail)}: together more than the window ({_n(config.window)}), so a history just compacted can still be too long "
            "to send. Lower summary.attachment_max_window_share or summary.tail_min_tokens."]


def _spill(config: "CompactionConfig") -> list[str]:
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


def _microcompact(config: "CompactionConfig") -> list[str]:
    mc = config.microcompact
    if not (mc.enabled and mc.mode == "token_trigger") or mc.trigger_tokens < config.window:
        return []
    # The stage clears only when the context is larger than trigger_tokens.
    return [f"microcompact.trigger_tokens ({_n(mc.trigger_tokens)}) is not below the window ({_n(config.window)}): old tool "
            "results are never cleared before the provider refuses the request. Lower microcompact.trigger_tokens."]


def _recovery(config: "CompactionConfig") -> list[str]:
    rc, window = config.recovery, config.window
    if not rc.enabled or rc.strategy != "mewcode":
        return []
    giveup = window - rc.giveup_margin
    if giveup <= 0:
        return [f"recovery.giveup_margin ({_n(rc.giveup_margin)}) is not below the window ({_n(window)}): the emergency "
                "recovery always gives up."]
    tail = config.summary.tail_min_tokens
    if config.summary.enabled and tail >= giveup:
        return [f"summary.tail_min_tokens ({_n(tail)}) is at or above the emergency give-up limit (window - recovery.giveup_margin "
                f"= {_n(giveup)}): whatever the forced summary keeps is over that limit, so the emergency recovery succeeds only when "
                "spilling alone brings the request under it."]
    return []


def config_warnings(config: "CompactionConfig") -> list[str]:
    """Plain-English warnings for settings that cannot work at ``config.window``; [] when none apply.

    Pure: reads the config, never a transcript, the disk or the network.
    """
    return [*_watermark(config), *_attachment(config), *_spill(config), *_microcompact(config), *_recovery(config)]
