"""Banners for a replay's loud failures (``lab.replayer.alerts``) on the Timeline and Pipeline pages.

The texts are the lab's own words and numbers, never transcript text, so
they may go through ``st.error`` / ``st.warning``, which render markdown.
"""

from __future__ import annotations

import streamlit as st

from ..replayer.alerts import Alert, report_alerts
from ..replayer.report import Report

__all__ = ["show_alerts"]


def show_alerts(report: Report) -> list[Alert]:
    """One banner per alert, errors first; returns what was shown (for tests and callers that count)."""
    alerts = report_alerts(report)
    for alert in alerts:
        (st.error if alert.level == "error" else st.warning)(alert.text, icon="🚨" if alert.level == "error" else "⚠️")
    return alerts
