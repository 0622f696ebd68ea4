"""report_alerts: every loud failure of a replay is named once, with the setting to change."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.presets import preset
from lab.replayer import Report, Row, replay
from lab.replayer.alerts import report_alerts
from tests.conftest import SAMPLES

SMALL = SAMPLES / "generated-small.lab.json"


def _row(k: int, *events: dict[str, Any], **flags: Any) -> Row:
    return Row(index=k, message_index=2 * k + 1, time=0.0, raw_tokens=0, tokens_before=0, sent_tokens=0, sent_messages=0,
               events=list(events), **flags)


def _summary(success: bool, detail: str, strategy: str = "full", freed: int = 0) -> dict[str, Any]:
    return {"stage": "summary", "trigger": "auto", "strategy": strategy, "success": success, "detail": detail, "tokens_freed": freed}


def _report(rows: list[Row], name: str = "minicode", window: int = 32_000, **totals: Any) -> Report:
    cfg = preset(name).model_copy(update={"window": window})
    return Report(label=name, window=window, rows=rows, requests=len(rows), config=cfg.model_dump(mode="json"),
                  watermark_tokens=int(0.85 * window), **totals)


def kinds(report: Report) -> list[str]:
    return [a.kind for a in report_alerts(report)]


class TestOnReplays:
    def test_breaker_that_opens(self) -> None:
        r = replay(SMALL, "claude-code", window=16_000)
        alerts = {a.kind: a for a in report_alerts(r)}
        breaker = alerts["breaker_open"]
        first = next(row.index for row in r.rows if row.breaker_open)
        assert breaker.level == "error" and breaker.request == first
        assert f"from request {first} on" in breaker.message and f"{r.breaker_open_over_watermark} of them" in breaker.message
        # The failures said "nothing to summarise" under a mewcode-policy tail: the advice names tail_min_tokens.
        assert "summary.tail_min_tokens (10,000)" in breaker.advice and "raise the window" in breaker.advice
        assert "no_summary" in alerts

    @pytest.mark.parametrize(("name", "window"), [("minicode", 16_000), ("minicode", 200_000), ("codex", 32_000)])
    def test_configs_that_cope_are_quiet(self, name: str, window: int) -> None:
        assert report_alerts(replay(SMALL, name, window=window)) == []

    def test_overflow_when_auto_compaction_is_skipped(self) -> None:
        r = replay(SMALL, "mewcode", window=12_000)
        (alert,) = [a for a in report_alerts(r) if a.kind == "overflow"]
        assert alert.level == "error" and f"{r.failures} could not be sent" in alert.message
        assert "watermark.min_window 33,000" in alert.advice

    def test_alerts_read_back_from_json(self) -> None:
        r = replay(SMALL, "claude-code", window=16_000)
        assert report_alerts(Report.from_dict(r.to_dict())) == report_alerts(r)


class TestAdvice:
    @pytest.mark.parametrize(
        ("detail", "setting"),
        [
            ("nothing to summarise: the tail keeps 9 of 9 messages", "summary.tail_max_tokens (40,000) below the watermark (27,200)"),
            ("too few messages to compact: 4 turn(s)", "summary.tail_min_messages (5)"),
            ("full summary saves too little: 100 -> 99 tokens", "summary.min_saving (5%)"),
            ("summary failed: the model is down", "summary.summarizer to 'rules'"),
        ],
        ids=["tail", "turns", "saving", "summarizer"],
    )
    def test_the_last_failure_reason_picks_the_setting(self, detail: str, setting: str) -> None:
        rows = [_row(0, _summary(False, detail))]
        (alert,) = report_alerts(_report(rows))
        assert alert.kind == "no_summary" and setting in alert.advice

    def test_session_memory_reasons_yield_to_the_full_summary(self) -> None:
        rows = [_row(0, _summary(False, "session memory: nothing to summarise", "session_memory"), _summary(False, "full summary saves too little"))]
        (alert,) = report_alerts(_report(rows))
        assert "summary.min_saving" in alert.advice

    def test_a_success_silences_no_summary(self) -> None:
        rows = [_row(0, _summary(False, "summary failed: x")), _row(1, _summary(True, "full summary replaced 9 messages", freed=500))]
        assert report_alerts(_report(rows)) == []

    def test_truncation_is_a_warning(self) -> None:
        cut = {"stage": "recovery", "trigger": "reactive", "strategy": "reactive", "success": True, "detail": "attempt 1: aggressive truncation"}
        rows = [_row(0), _row(1, cut, overflowed=True, recovered=True)]
        alerts = {a.kind: a for a in report_alerts(_report(rows, overflows=1, recoveries=1))}
        assert alerts["recovery_truncated"].level == "warning" and alerts["recovery_truncated"].request == 1
        assert alerts["overflow"].level == "warning"  # recovered: it coped
        assert "watermark.ratio (0.85)" in alerts["recovery_truncated"].advice

    def test_errors_come_first(self) -> None:
        cut = {"stage": "recovery", "strategy": "reactive", "success": True}
        rows = [_row(0, cut, overflowed=True, recovered=True), _row(1, _summary(False, "summary failed: x"), breaker_open=True, over_watermark=True)]
        levels = [a.level for a in report_alerts(_report(rows, breaker_open_over_watermark=1))]
        assert levels == sorted(levels, key=lambda lv: lv != "error") and levels[0] == "error"


flags = st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(flags)
def test_an_alert_exactly_when_its_evidence_is_there(rows_flags: list[tuple[bool, bool, bool]]) -> None:
    rows = [_row(k, breaker_open=b, over_watermark=b, overflowed=o, failed=o and f, recovered=o and not f)
            for k, (b, o, f) in enumerate(rows_flags)]
    found = set(kinds(_report(rows)))
    assert ("breaker_open" in found) == any(r.breaker_open for r in rows)
    assert ("overflow" in found) == any(r.overflowed for r in rows)
    assert "no_summary" not in found and "recovery_truncated" not in found
    overflow = [a for a in report_alerts(_report(rows)) if a.kind == "overflow"]
    if overflow:
        assert overflow[0].level == ("error" if any(r.failed for r in rows) else "warning")
