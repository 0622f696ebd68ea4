"""One report as one flat row: what a compare table, a grid cell and a sweep trial hold per transcript x config.

The row says where the first invalid and failed requests are (``lab.replayer.explain``), and adds a
``compactions_<strategy>`` column per strategy the replay used; scorers (``lab.evaluation.scorers``)
add theirs beside it.
"""

from __future__ import annotations

from typing import Any

from ..replayer.explain import first_failure, first_invalid
from ..replayer.report import Report

__all__ = ["summary_row", "BASE_COLUMNS"]

BASE_COLUMNS = [
    "transcript",
    "config",
    "window",
    "requests",
    "peak_sent",
    "peak_raw",
    "requests_over_watermark",
    "breaker_open_over_watermark",
    "compactions",
    "summary_calls",
    "invalid_requests",
    "overflows",
    "failures",
    "first_invalid",
    "first_invalid_source",
    "first_failure",
    "first_request_kept",
    "recorded_compactions",
    "recorded_compactions_mode",
    "retention_score",
    "needed_later_recall",
    "recoverable_share",
    "content_recall",
    "content_needed",
    "content_thin",
    "reread_tokens",
    "cost",
    "cost_uncompacted",
    "cache_hit_ratio",
    "cache_hit_ratio_uncompacted",
    "replay_seconds",
    "error",
]



def summary_row(report: Report, transcript: str, config: str, seconds: float = 0.0) -> dict[str, Any]:
    """The flat comparison line of one report, with where its first invalid and failed requests are."""
    invalid_at, invalid_in_source = first_invalid(report)
    row: dict[str, Any] = {
        "transcript": transcript,
        "config": config,
        "window": report.window,
        "requests": report.requests,
        "peak_sent": report.peak_sent,
        "peak_raw": report.peak_raw,
        "requests_over_watermark": report.requests_over_watermark,
        "breaker_open_over_watermark": report.breaker_open_over_watermark,
        "compactions": sum(report.compactions_by_strategy.values()),
        "summary_calls": report.summary_calls,
        "invalid_requests": report.invalid_requests,
        "overflows": report.overflows,
        "failures": report.failures,
        "first_invalid": invalid_at,
        "first_invalid_source": invalid_in_source,
        "first_failure": first_failure(report),
        "first_request_kept": report.first_request_kept,
        "recorded_compactions": report.recorded_compactions,
        "recorded_compactions_mode": report.recorded_compactions_mode,
        "retention_score": report.retention_score,
        "needed_later_recall": report.needed_later_recall,
        "recoverable_share": report.recoverable_share,
        # Content recall beside the names score: what it rests on, and whether that is too thin to rank by.
        "content_recall": report.content_recall,
        "content_needed": report.content_needed,
        "content_thin": report.content_thin,
        "reread_tokens": report.reread_tokens,
        "cost": report.total_cost,
        "cost_uncompacted": report.total_cost_uncompacted,
        "cache_hit_ratio": report.cache_hit_ratio,
        "cache_hit_ratio_uncompacted": report.cache_hit_ratio_uncompacted,
        "replay_seconds": round(seconds, 4),
        "error": None,
    }
    for strategy, n in report.compactions_by_strategy.items():
        row[f"compactions_{strategy}"] = n
    return row
