"""Loud failures: what went wrong in a replay, each with the one setting to change.

A replay can look calm while the config has given up: the circuit breaker
opens and the context sits over the watermark, or recovery truncates
history because no summary fits. ``report_alerts`` reads a ``Report``
(fresh, or read back from JSON) and returns one ``Alert`` per kind of
failure:

- ``breaker_open``: auto-compaction was switched off by the circuit breaker;
- ``overflow``: requests went over the window (recovered or not);
- ``recovery_truncated``: recovery cut history without a summary;
- ``no_summary``: summaries were attempted and none succeeded.

Each alert says what happened, where it first happened, and one sentence of
advice naming a setting. The advice is derived from the reason the summary
stage gave for its failures, so it names the setting that was in the way.
Pure: no streamlit, no I/O; the app (``lab.ui.alerts``) and the CLI draw them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from ..core.config import CompactionConfig
from ..core.stages.watermark import threshold
from .report import Report, Row

__all__ = ["Alert", "AlertKind", "report_alerts"]

AlertKind = Literal["breaker_open", "overflow", "recovery_truncated", "no_summary"]


@dataclass(frozen=True)
class Alert:
    kind: AlertKind
    # "error": the config failed at its job; "warning": it coped, at a price.
    level: Literal["error", "warning"]
    message: str
    advice: str
    # The first request where it happened.
    request: int | None = None

    @property
    def text(self) -> str:
        return f"{self.message} {self.advice}"


def _config(report: Report) -> CompactionConfig:
    if not report.config:
        return CompactionConfig(window=report.window or 200_000)
    try:
        # The replay's own config, kept on a fresh report; a report read back parses its dump once.
        return report.compaction_config
    except ValidationError:
        # A report from another version of the lab: the advice falls back to the defaults' names.
        return CompactionConfig()


def _events(row: Row, stage: str) -> list[dict[str, Any]]:
    return [e for e in row.events if e.get("stage") == stage]


def _summary_failures(rows: Sequence[Row]) -> list[str]:
    """Why summaries failed, oldest first; session memory's reasons only when nothing else failed (the full summary follows it)."""
    failed = [e for r in rows for e in _events(r, "summary") if not e.get("success", True)]
    full = [e for e in failed if e.get("strategy") != "session_memory"]
    return [str(e.get("detail", "")) for e in (full or failed)]


def _n(x: int) -> str:
    return f"{x:,}"


def _summary_advice(reasons: list[str], cfg: CompactionConfig, watermark: int | None) -> str:
    """One sentence naming the setting behind the summary stage's most recent failure."""
    s = cfg.summary
    mark = _n(watermark) if watermark is not None else "the watermark"
    last = reasons[-1] if reasons else ""
    if "nothing to summarise" in last:
        if s.tail_policy == "minicode":
            fix = f"lower summary.tail_max_tokens ({_n(s.tail_max_tokens)}) below the watermark ({mark})"
        else:
            fix = f"lower summary.tail_min_tokens ({_n(s.tail_min_tokens)}) well below the watermark ({mark})"
        if s.full_tail_policy == "same":
            fix += ", or set summary.full_tail_policy to 'third'"
        return f"The verbatim tail held the whole context: {fix}, or raise the window."
    if "too few messages" in last:
        return f"Too few turns to summarise: lower summary.tail_min_messages ({s.tail_min_messages}), or raise watermark.ratio so the summary runs later."
    if "saves too little" in last:
        return f"Each summary saved too little: lower summary.min_saving ({s.min_saving:.0%}) or the tail (summary.tail_min_tokens, summary.tail_min_messages)."
    if "summary failed" in last or "auto summary failed" in last:
        return f"The summarizer ({s.summarizer}) failed: check its key, base URL and model, or set summary.summarizer to 'rules'."
    return "See the failed summary events on the Timeline; raise the window or loosen the summary tail (summary.tail_min_tokens)."


def _breaker(rows: Sequence[Row], report: Report, cfg: CompactionConfig, reasons: list[str]) -> Alert | None:
    open_rows = [r for r in rows if r.breaker_open]
    if not open_rows:
        return None
    wm = cfg.watermark
    over = report.breaker_open_over_watermark
    message = (f"The circuit breaker opened after {wm.breaker_failures} failed auto summaries: from request {open_rows[0].index} on, "
               f"{len(open_rows)} request(s) wanted a summary and got none, {over} of them sent over the watermark.")
    return Alert("breaker_open", "error", message, _summary_advice(reasons, cfg, report.watermark_tokens), open_rows[0].index)


def _overflow(rows: Sequence[Row], report: Report, cfg: CompactionConfig) -> Alert | None:
    hit = [r for r in rows if r.overflowed]
    if not hit:
        return None
    failed = sum(1 for r in hit if r.failed)
    message = (f"{len(hit)} request(s) went over the {_n(report.window)}-token window (first at request {hit[0].index}): "
               f"{len(hit) - failed} recovered, {failed} could not be sent.")
    return Alert("overflow", "error" if failed else "warning", message, _earlier(cfg), hit[0].index)


def _earlier(cfg: CompactionConfig) -> str:
    """Advice for a context that filled the window before the auto summary ran."""
    wm = cfg.watermark
    if not (wm.enabled and cfg.summary.enabled):
        return "Auto-compaction is off: switch on the watermark and summary stages, or raise the window."
    if threshold(wm, cfg.window, "auto") is None:
        return (f"Auto-compaction is skipped at this window (watermark.min_window {_n(wm.min_window)}, summary reserve and safety margin "
                f"{_n(wm.summary_reserve + wm.safety_margin)}): raise the window above them, or lower watermark.min_window.")
    if wm.mode == "ratio":
        return f"Let the summary run before the window fills: lower watermark.ratio ({wm.ratio:g}), or raise the window."
    return f"Let the summary run before the window fills: raise watermark.safety_margin ({_n(wm.safety_margin)}), or raise the window."


def _truncated(rows: Sequence[Row], cfg: CompactionConfig) -> Alert | None:
    cut = [r for r in rows if any(e.get("strategy") == "reactive" and e.get("success") for e in _events(r, "recovery"))]
    if not cut:
        return None
    message = f"Recovery truncated history without a summary at {len(cut)} request(s) (first at request {cut[0].index}): the messages it cut are gone."
    return Alert("recovery_truncated", "warning", message, _earlier(cfg), cut[0].index)


def _no_summary(rows: Sequence[Row], report: Report, cfg: CompactionConfig, reasons: list[str]) -> Alert | None:
    if not reasons:
        return None
    if any(e.get("success") and int(e.get("tokens_freed", 0)) > 0 for r in rows for e in _events(r, "summary")):
        return None
    tried = [r for r in rows if any(not e.get("success", True) for e in _events(r, "summary"))]
    message = f"No summary ever succeeded: {len(reasons)} attempt(s) failed, the first at request {tried[0].index}."
    return Alert("no_summary", "error", message, _summary_advice(reasons, cfg, report.watermark_tokens), tried[0].index)


def report_alerts(report: Report) -> list[Alert]:
    """The loud failures of ``report``, worst first; [] when the config did its job."""
    cfg = _config(report)
    # Each row built once for the five checks below (a report's rows are columns: a Row is made when read).
    rows = list(report.rows)
    reasons = _summary_failures(rows)
    found = [
        _breaker(rows, report, cfg, reasons),
        _no_summary(rows, report, cfg, reasons),
        _overflow(rows, report, cfg),
        _truncated(rows, cfg),
    ]
    alerts = [a for a in found if a is not None]
    return sorted(alerts, key=lambda a: 0 if a.level == "error" else 1)
