"""One request of a replay as HTML: its numbers, its events and its context diff.

Pure string building over a ``Report`` (no widget library), so it is tested
on its own. Every piece of transcript text (message content, tool names and
ids, summaries, event details) goes through ``html.escape``: a session can
hold any text, and none of it may become markup in the notebook.

The diff lines the chosen left side (the raw history, or the context the
request's pipeline started from) up with what was sent, as the Diff page
does (``lab.views.diff``). What the pipeline inserted (a summary, a boundary)
comes first, then changed messages, then the removed ones folded into one
block with their count.
"""

from __future__ import annotations

from html import escape
from typing import Any, Literal
from collections.abc import Sequence

from ..replayer.report import Report, Row
from ..views.diff import BlockChange, DiffRow, clip, diff_context, recall_note

__all__ = ["request_html", "events_html", "Before", "BEFORE", "MAX_ROWS", "CLIP"]

Before = Literal["raw history", "pipeline input"]
BEFORE: tuple[Before, ...] = ("raw history", "pipeline input")
# A notebook output stays readable: at most this many messages per list, and this many characters per block.
MAX_ROWS = 30
CLIP = 800

_STATUS_COLORS = {"inserted": "#e6f4ea", "changed": "#fff4e5", "removed": "#fdecea", "kept": "#f5f5f5"}
_PRE = "white-space: pre-wrap; margin: 2px 0 6px 0; padding: 4px; background: #fafafa; border: 1px solid #eee; font-size: 12px"


def _pre(text: str) -> str:
    return f'<pre style="{_PRE}">{escape(clip(text, CLIP))}</pre>'


def _flags(row: Row) -> list[str]:
    flags = [("overflowed", row.overflowed), ("recovered", row.recovered), ("failed", row.failed),
             ("circuit breaker open", row.breaker_open), ("over the watermark", row.over_watermark),
             ("boundary placed", row.boundary_placed), ("invalid for a provider", not row.valid)]
    return [name for name, on in flags if on]


def events_html(row: Row) -> str:
    """The request's events as a table; summaries written by the pipeline follow it, as escaped text."""
    if not row.events:
        return "<p><i>No events at this request.</i></p>"
    head = "".join(f"<th style='text-align:left; padding: 0 8px'>{h}</th>"
                   for h in ("stage", "trigger", "strategy", "tokens before → after", "ok", "detail"))
    lines = []
    summaries = []
    for ev in row.events:
        ok = "✓" if ev.get("success", True) else "✗ failed"
        cells = (ev.get("stage"), ev.get("trigger"), ev.get("strategy") or "-",
                 f"{_int(ev.get('tokens_before'))} → {_int(ev.get('tokens_after'))}", ok, ev.get("detail") or "")
        lines.append("<tr>" + "".join(f"<td style='padding: 0 8px'>{escape(str(c))}</td>" for c in cells) + "</tr>")
        if ev.get("summary_text"):
            summaries.append(f"<details open><summary>summary written by {escape(str(ev.get('stage')))}</summary>"
                             f"{_pre(str(ev['summary_text']))}</details>")
    return f"<table><tr>{head}</tr>{''.join(lines)}</table>" + "".join(summaries)


def _int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else escape(str(value))


def _block(change: BlockChange) -> str:
    label = escape(change.label)
    if change.status == "same" or change.before is None or change.after is None:
        view = change.after or change.before
        assert view is not None
        return f"<div><b>{label}</b>{_pre(view.text)}</div>"
    return (f"<div><b>{label}</b> ({escape(change.status)})<br>before:{_pre(change.before.text)}"
            f"after:{_pre(change.after.text)}</div>")


def _message(row: DiffRow, *, changes_only: bool) -> str:
    m = row.message
    blocks = row.changes if changes_only and row.status == "changed" else row.blocks
    body = "".join(_block(b) for b in blocks) or "<i>(no content)</i>"
    color = _STATUS_COLORS.get(row.status, "#fff")
    return (f'<div style="background: {color}; padding: 4px 8px; margin: 4px 0; border-radius: 4px">'
            f"<b>#{row.index} {escape(row.status)} · {escape(row.kind)} · {escape(m.role)}</b> "
            f"<code>{escape(m.id)}</code>{body}</div>")


def _listing(rows: Sequence[DiffRow], *, changes_only: bool) -> str:
    shown = "".join(_message(r, changes_only=changes_only) for r in rows[:MAX_ROWS])
    more = f"<p><i>… and {len(rows) - MAX_ROWS} more</i></p>" if len(rows) > MAX_ROWS else ""
    return shown + more


def request_html(report: Report, k: int, before: Before = "raw history") -> str:
    """Request ``k`` of ``report`` (a replay with its contexts): numbers, events, recall and the context diff."""
    row = report.rows[k]
    left = report.raw_at(k) if before == "raw history" else report.input_at(k)
    diff = diff_context(left, report.context_at(k, include_boundaries=True))
    by_status: dict[str, list[DiffRow]] = {}
    for r in diff.rows:
        by_status.setdefault(r.status, []).append(r)
    c = diff.counts
    tokens_left = row.raw_tokens if before == "raw history" else row.tokens_before
    parts = [
        f"<h4>Request {row.index} of {len(report.rows)}</h4>",
        f"<p>{escape(before)}: {tokens_left:,} tokens · sent: {row.sent_tokens:,} tokens in {row.sent_messages} messages"
        f" · cost ${row.cost:.4f}</p>",
    ]
    flags = _flags(row)
    if flags:
        parts.append(f"<p><b>{escape(', '.join(flags))}</b></p>")
    parts.append(events_html(row))
    head, lost = recall_note(row)
    if head is not None:
        parts.append(f"<p>{escape(head)}</p>")
    if lost:
        parts.append(_pre("\n".join(lost)))
    parts.append(f"<p>Against the {escape(before)}: {c['removed']} removed · {c['stubs']} stubs · "
                 f"{c['inserted']} inserted · {c['changed']} changed · {c['kept']} kept</p>")
    parts.append(_listing(by_status.get("inserted", []), changes_only=False))
    parts.append(_listing(by_status.get("changed", []), changes_only=True))
    removed = by_status.get("removed", [])
    if removed:
        chars = sum(len(b.before.text) for r in removed for b in r.blocks if b.before is not None)
        parts.append(f"<details><summary>{len(removed)} removed message(s), {chars:,} characters</summary>"
                     f"{_listing(removed, changes_only=False)}</details>")
    return "\n".join(parts)
