"""The words the pages put beside a replay's counts: compactions by kind, invalid requests with their reasons, the priced cost.

The CLI's summary (``lab replay``) prints the same sentences, built by the same functions of
``lab.replayer.report`` and ``lab.replayer.prices``, so a number reads the same on every page and in
the terminal. Nothing here shows a raw mapping: a count is always said in words.

    compactions_text(report)     "0 summaries, 4 spills, 1 clearing"
    compactions_help(report)     one line per kind that happened, saying what it did
    invalid_help(report)         the invalid count with its reasons, for a metric's help
    show_invalid(report)         a warning listing why requests were invalid (nothing when none were)
    overflow_text(report)        the overflows and failures in one sentence (None when there were none)
    prices_caption(report)       the row and prices a table of costs is in
    cost_caption(report)         the cost, the row and prices it was billed at, and why that row
    cost_metric(col, report)     the cost as a metric, its saving as the delta, the prices and the bill check as its help
    show_inactive(config)        what a config skips at its window by design, beside the numbers it explains
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

import streamlit as st

from ..core.config import CompactionConfig
from ..core.diagnostics import inactive_by_design
from ..replayer.prices import cost_text, describe_settings, price_tag, pricing_rule
from ..replayer.report import COMPACTION_KINDS, Report, cost_check, describe_compactions, describe_invalid
from ..replayer.settings import PricingConfig
from ..views.markdown import literal_markdown

__all__ = ["compactions_text", "compactions_help", "invalid_help", "show_invalid", "overflow_text", "cost_caption", "prices_caption",
           "escape_dollars", "cost_metric", "show_inactive"]


def escape_dollars(text: str) -> str:
    """Markdown (help, captions) reads a pair of dollar signs as math."""
    return text.replace("$", "\\$")


def compactions_text(report: Report) -> str:
    return describe_compactions(report.compactions_by_kind)


def compactions_help(report: Report) -> str:
    """Each kind of compaction that happened, with what it does; summaries are said even when none were written."""
    by_kind = report.compactions_by_kind
    lines = [f"{n} {COMPACTION_KINDS[k][0] if n == 1 else COMPACTION_KINDS[k][1]}: {COMPACTION_KINDS[k][2]}"
             for k, n in by_kind.items() if n or k == "summary"]
    return ". ".join(lines) + "."


def invalid_help(report: Report) -> str:
    """The invalid count and, when there are any, why: for a metric's tooltip."""
    if not report.invalid_requests:
        return "invalid requests: 0 (every request is one both providers accept)"
    return literal_markdown(f"invalid requests: {report.invalid_requests}, requests a provider would refuse: " + "; ".join(describe_invalid(report)))


def show_invalid(report: Report, where: Any = None, *, label: str | None = None) -> None:
    """A warning naming why requests were invalid and where, or nothing when every request was valid.

    ``where``: a Streamlit container (default: the page). ``label``: the config's name, when a page shows
    several (Compare). The Pipeline and Compare pages call it beside their counts.
    """
    lines = describe_invalid(report)
    if not lines:
        return
    target = where if where is not None else st
    # A reason names message and tool ids from the transcript, a label is the user's: shown exactly as written.
    said = "\n".join(f"- {literal_markdown(line)}" for line in lines)
    head = f"{literal_markdown(label)}: " if label else ""
    target.warning(f"{head}{report.invalid_requests} invalid request(s): a provider would refuse them.\n{said}")


def overflow_text(report: Report) -> str | None:
    """The overflows and failures of a replay in one sentence, or None when there were none."""
    if not (report.overflows or report.failures or report.breaker_open_over_watermark):
        return None
    return (f"{report.overflows} overflow(s): requests over the window, {report.recoveries} recovered by the recovery stage, "
            f"{report.failures} not sent; {report.breaker_open_over_watermark} sent over the watermark with the circuit breaker open")


def prices_caption(report: Report) -> str:
    """Which row and prices a replay's costs are in, and why that row, as markdown (no figure: for a table of costs)."""
    rule = pricing_rule(report.pricing_source, report.meta.get("model"))
    return escape_dollars(f"Costs in dollars at {price_tag(_pricing(report))}, priced at {rule}.")


def _pricing(report: Report) -> PricingConfig:
    return PricingConfig.model_validate(report.settings.get("pricing", {}))


def cost_caption(report: Report) -> str:
    """The cost with the model and prices beside it, and which rule chose them, as markdown."""
    rule = pricing_rule(report.pricing_source, report.meta.get("model"))
    return escape_dollars(f"Cost {cost_text(report.total_cost, report.settings)}, priced at {rule}; "
                          f"without compaction ${report.total_cost_uncompacted:,.4f}.")


def cost_metric(col: Any, report: Report) -> None:
    """The Timeline's cost metric in ``col``: the saving against no compaction as its delta, the prices and the bill check as its help."""
    saved = report.total_cost_uncompacted - report.total_cost
    cost_help = f"{price_tag(_pricing(report))}; without compaction ${report.total_cost_uncompacted:.4f}. {describe_settings(report.settings)}"
    bill = cost_check(report)
    if bill is not None:
        cost_help += f" Check: {bill}."
    cost_help = escape_dollars(cost_help)
    if abs(saved) < 1e-9:
        # Nothing compacted the bill: a green "-$0.0000" would claim a saving that is not there.
        col.metric("Cost", f"${report.total_cost:.4f}", delta="no change", delta_color="off", delta_arrow="off", help=cost_help)
    else:
        # Streamlit reads the direction from a leading "-"; inverse colours make a saving green.
        col.metric("Cost", f"${report.total_cost:.4f}", delta=f"{'-' if saved > 0 else '+'}${abs(saved):.4f} vs none",
                   delta_color="inverse", help=cost_help)


def show_inactive(config: CompactionConfig | Mapping[str, Any], where: Any = None, *, label: str | None = None) -> None:
    """A caption per stage ``config`` switches off at its window on purpose (``lab.core.diagnostics.inactive_by_design``).

    Issue 31: a smaller window giving a bigger peak reads as a bug unless the page says, next to the number, that the
    preset skips auto-compaction there. ``config``: the config itself or a report's dump of it (``Report.config``).
    ``where``: a Streamlit container (default: the page); ``label``: the config's name where a page shows several.
    """
    cfg = config if isinstance(config, CompactionConfig) else CompactionConfig.model_validate(config)
    target = where if where is not None else st
    # The notes are the lab's own words; a label may be the user's (a saved config's name), shown as written.
    head = f"{literal_markdown(label)}: " if label else ""
    for note in inactive_by_design(cfg):
        target.caption(f"{head}Inactive by design: {note}.")
