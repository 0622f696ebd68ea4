"""One request as HTML: what it shows, in which order, and that transcript text stays text."""

from __future__ import annotations

import re

import pytest

import lab
from lab.generator import generate
from lab.notebook.request_view import MAX_ROWS, events_html, request_html
from lab.replayer.report import Report, Row
from lab.views.diff import diff_context

HOSTILE = "<b onmouseover=alert(1)>bold</b>"


@pytest.fixture(scope="module")
def compacted() -> Report:
    # mewcode at 64k summarises this session seven times, so some requests have a summary and removed messages.
    return lab.replay(generate(seed=3, requests=150), "mewcode", window=64_000)


def _row(**events: object) -> Row:
    return Row(index=0, message_index=1, time=0.0, raw_tokens=10, tokens_before=10, sent_tokens=5, sent_messages=1,
               events=[{"stage": "summary", "trigger": "threshold", "tokens_before": 10, "tokens_after": 5, **events}])


def test_events_escape_details_and_summaries() -> None:
    html = events_html(_row(detail=HOSTILE, summary_text=HOSTILE, success=False, strategy="full"))
    assert "<b onmouseover" not in html
    assert html.count("&lt;b onmouseover=alert(1)&gt;") == 2
    assert "10 → 5" in html and "✗ failed" in html


def test_a_request_without_events_says_so() -> None:
    assert "No events" in events_html(Row(index=0, message_index=1, time=0.0, raw_tokens=1, tokens_before=1,
                                          sent_tokens=1, sent_messages=1))


def test_a_summary_request_leads_with_what_was_inserted_and_folds_the_removed(compacted: Report) -> None:
    k = next(r.index for r in compacted.rows if r.boundary_placed)
    html = request_html(compacted, k)
    assert "inserted · summary" in html or "inserted · boundary" in html
    inserted = html.index("inserted ·", html.index("Against the"))
    folded = html.index("removed message(s)")
    assert inserted < folded
    assert html.index("<details><summary>") <= folded
    # Long lists are cut: the page never lists more than MAX_ROWS messages of one kind, and says how many it left out.
    removed = diff_context(compacted.raw_at(k), compacted.context_at(k, include_boundaries=True)).counts["removed"]
    assert removed > MAX_ROWS
    assert f"{removed} removed message(s)" in html
    assert len(re.findall(r"<b>#\d+ removed · ", html)) == MAX_ROWS
    assert f"… and {removed - MAX_ROWS} more" in html


def test_the_numbers_follow_the_chosen_left_side(compacted: Report) -> None:
    row = compacted.rows[-1]
    assert f"raw history: {row.raw_tokens:,} tokens" in request_html(compacted, row.index)
    assert f"pipeline input: {row.tokens_before:,} tokens" in request_html(compacted, row.index, "pipeline input")
