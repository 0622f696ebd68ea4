"""Settings that have no effect under the rest of the config, each with the reason why.

A knob that changes nothing misleads: the app marks it changed and the replay
stays the same. ``inactive_fields`` names every such setting as a dotted path
(``"watermark.ratio"``) with a sentence saying what makes it idle and what
would bring it back, so the app can disable the widget with that sentence as
its help.

Each rule restates a branch of the stage that reads the field (the module
named beside it), so a rule is only as right as that branch; the tests check
each one by replaying a session with the idle value moved. This is a function
of the config alone, like ``diagnostics.config_warnings``; the replay
settings have their own rules beside them
(``lab.replayer.settings.settings_relevance``), and the front ends ask both.

When two rules cover one field, the wider one wins: a stage that is off is the
reason, not the mode it would run in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .config import CompactionConfig

__all__ = ["inactive_fields"]

# Stages whose fields all go idle when the stage is off, and what "off" means for each.
_STAGE_OFF = {
    "spill": "Spill is off: no tool result is spilled, so this does nothing. Switch spill on to use it.",
    "dedup": "Read dedup is off: no read is replaced by a stub, so this does nothing. Switch dedup on to use it.",
    "microcompact": "Microcompact is off: no old tool result is cleared, so this does nothing. Switch microcompact on to use it.",
    "summary": "The summary stage is off: nothing is ever summarised (auto, manual or in recovery), so this does nothing. "
               "Switch summary on to use it.",
    "recovery": "Recovery is off: a prompt-too-long request simply fails, so this does nothing. Switch recovery on to use it.",
}


class _Found:
    """The reasons collected so far; the first reason given for a path stays."""

    def __init__(self, config: CompactionConfig) -> None:
        self.config = config
        self.out: dict[str, str] = {}

    def add(self, group: str, names: Iterable[str], reason: str) -> None:
        fields = type(getattr(self.config, group)).model_fields
        for name in names:
            # A field renamed or removed in its stage must not leave a stale path behind.
            if name in fields:
                self.out.setdefault(f"{group}.{name}", reason)

    def stage_off(self, group: str) -> bool:
        sub = getattr(self.config, group)
        if getattr(sub, "enabled", True):
            return False
        self.add(group, [n for n in type(sub).model_fields if n != "enabled"], _STAGE_OFF[group])
        return True


def _watermark(f: _Found) -> None:
    wm = f.config.watermark
    # compactor.compact runs the summary directly: no threshold is consulted on the manual path.
    f.add("watermark", ["manual_margin"], "No effect in this lab: a manual /compact always summarises, so no threshold "
          "(and no margin under the window) is consulted.")
    if not wm.enabled:
        # pipeline.fold asks the gate, which answers "disabled" before any estimate, breaker or cooldown.
        f.add("watermark", ["breaker_failures", "breaker_cooldown_seconds", "breaker_reset_on_forced", "use_usage_anchor"],
              "The watermark is off: auto-compaction never runs, so there is no estimate to anchor and no breaker to open. "
              "Switch the watermark on to use it.")
    if wm.mode == "ratio":
        f.add("watermark", ["summary_reserve", "safety_margin", "min_window"],
              "Only used in 'reserve' mode; watermark.mode is 'ratio', where the threshold is ratio x window.")
    else:
        f.add("watermark", ["ratio"],
              "Only used in 'ratio' mode; watermark.mode is 'reserve', where the threshold is window - summary_reserve - safety_margin.")


def _spill(f: _Found) -> None:
    if f.stage_off("spill"):
        return
    sp = f.config.spill
    if not sp.message_budget_enabled:
        f.add("spill", ["message_budget"], "Only used when spill.message_budget_enabled is on (MewCode's per-message budget).")
    if sp.preview_format == "minicode":
        f.add("spill", ["mewcode_preview_lines", "mewcode_preview_bytes"],
              "Only used with spill.preview_format 'mewcode'; the stub is MiniCode's head/tail preview.")
    else:
        f.add("spill", ["head_lines", "tail_lines", "preview_chars", "preview_shape"],
              "Only used with spill.preview_format 'minicode'; the stub is MewCode's offload notice.")


def _microcompact(f: _Found) -> None:
    if f.stage_off("microcompact"):
        return
    mc = f.config.microcompact
    mode = f"microcompact.mode is '{mc.mode}'"
    if mc.mode != "interval":
        f.add("microcompact", ["clock_start"], f"Only used in 'interval' mode; {mode}.")
    if mc.mode in ("always", "token_trigger"):
        f.add("microcompact", ["interval_seconds"], f"Only used in 'interval' and 'idle' modes; {mode}.")
    if mc.mode == "always":
        f.add("microcompact", ["clear_text"], f"Not used in 'always' mode, which writes masked_text instead; {mode}.")
    else:
        f.add("microcompact", ["masked_text"], f"Only used in 'always' mode; {mode}, which writes clear_text.")
    if mc.mode != "token_trigger":
        f.add("microcompact", ["trigger_tokens", "trigger_window_share", "clear_at_least", "clear_tool_inputs"],
              f"Only used in 'token_trigger' mode; {mode}.")
    elif getattr(mc, "trigger_window_share", 0) > 0:
        f.add("microcompact", ["trigger_tokens"],
              "microcompact.trigger_window_share is above 0, so the trigger is that share of the window; set it to 0 to use this.")


def _summary(f: _Found) -> None:
    if f.stage_off("summary"):
        return
    s = f.config.summary
    if not s.session_memory:
        f.add("summary", ["memory_max_tokens", "memory_text"], "Only used by session memory, and summary.session_memory is off.")
    if s.summarizer == "rules":
        f.add("summary", ["llm_model", "llm_base_url"], "Only used by an LLM summarizer; summary.summarizer is 'rules'.")
    else:
        f.add("summary", ["rules_format"], f"Only used by the rule-based summary; summary.summarizer is '{s.summarizer}'.")
    if s.full_tail_policy != "third":
        f.add("summary", ["full_tail_unit"], "Only used with summary.full_tail_policy 'third', which counts the tail; it is 'same'.")
    if s.summarizer == "rules":
        if not s.attachment_for_rules:
            f.add("summary", ["attachment_files", "attachment_file_tokens", "attachment_max_window_share"],
                  "Rule-based summaries get no recovery attachment while summary.attachment_for_rules is off.")
    else:
        f.add("summary", ["attachment_for_rules"], f"LLM summaries always get the recovery attachment; summary.summarizer is '{s.summarizer}'.")
    # summary._split: only session memory, and a full summary with full_tail_policy 'same', choose the tail by these.
    if not s.session_memory and s.full_tail_policy == "third":
        f.add("summary", ["tail_policy", "tail_min_tokens", "tail_max_tokens", "tail_window_share"],
              "No summary uses this tail: session memory is off and summary.full_tail_policy 'third' keeps the newest "
              "min(n/3, tail_min_messages) turns. Switch session memory on or set full_tail_policy to 'same'.")
    elif s.tail_policy == "mewcode":
        f.add("summary", ["tail_max_tokens"], "MewCode's tail policy has no maximum; summary.tail_policy is 'mewcode'.")


def _recovery(f: _Found) -> None:
    if f.stage_off("recovery"):
        return
    rc = f.config.recovery
    if rc.strategy == "minicode":
        f.add("recovery", ["giveup_margin"], "Only used by MewCode's emergency path; recovery.strategy is 'minicode'.")
        if rc.max_attempts == 1:
            f.add("recovery", ["compact_every_attempt"], "With recovery.max_attempts 1 there is only the first attempt, which always compacts.")
    else:
        f.add("recovery", ["max_attempts", "blocking_ratio", "accept_ratio", "truncate_start", "truncate_step",
                           "compact_every_attempt", "truncate_floor", "truncate_min_messages", "truncate_unit"],
              "Only used by MiniCode's ladder; recovery.strategy is 'mewcode' (force spill and summary, retry once).")


def inactive_fields(config: CompactionConfig) -> dict[str, str]:
    """Dotted path -> why that setting has no effect under the rest of ``config``; {} when every setting counts.

    Pure: reads the config only.
    """
    found = _Found(config)
    # Stages that are off first: theirs is the wider reason.
    found.stage_off("dedup")
    for rule in (_spill, _microcompact, _summary, _recovery, _watermark):
        rule(found)
    return found.out
