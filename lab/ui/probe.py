"""The Summary page's "Probe this context" panel, and the state it keeps.

It uses the LLM settings the app already holds in memory
(``llm_settings()``, set by the LLM summary panel): the same key, base
URL and model answer the probes, and a judge model may be named here. The
result lives in ``st.session_state`` under this module's keys, tagged with
the request, the config and a fingerprint of the settings (the key's hash
only), so a result is shown only for what it was run on. Importing this
module loads the provider SDKs: the page imports it only when the panel is on.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import streamlit as st

from ..core.messages import Transcript
from ..core.providers import ProviderSettings
from ..errors import LabError
from ..probe import DIMENSIONS, PROBE_KINDS, ProbeReport, run_probes
from ..probe.run import estimate
from . import keys
from .navigation import request_picker
from .settings import llm_settings
from .transcript import transcript_label

if TYPE_CHECKING:  # pragma: no cover
    from ..replayer import Report

__all__ = ["RESULT", "ERROR", "result_key", "probe_result", "set_probe_result", "probe_error",
           "score_rows", "dimension_rows", "probe_panel"]

# The panel's widget keys; its result is session state, named in ``keys``.
_K = "lab.probe."
RESULT, ERROR = keys.PROBE_RESULT, keys.PROBE_ERROR


def result_key(report: Report, k: int, settings: ProviderSettings, judge_model: str) -> str:
    """What a result was run on: request, config, replay settings, provider, models, URL and the key's hash (never the key)."""
    key = settings.secret() or ""
    parts = [str(k), report.label, str(report.window), repr(sorted(report.config.items())), repr(sorted(report.settings.items())), settings.provider, settings.resolved_model,
             judge_model, settings.base_url or "", hashlib.sha256(key.encode()).hexdigest()]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def probe_result(key: str) -> ProbeReport | None:
    found = st.session_state.get(RESULT)
    return found[1] if found is not None and found[0] == key else None


def set_probe_result(key: str, result: ProbeReport) -> None:
    st.session_state[RESULT] = (key, result)
    st.session_state.pop(ERROR, None)


def probe_error(key: str) -> str | None:
    found = st.session_state.get(ERROR)
    return found[1] if found is not None and found[0] == key else None


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def score_rows(result: ProbeReport) -> list[dict[str, Any]]:
    """One row per probe type: its score, how many were graded, and its six dimensions."""
    return [{"probe": kind, "score": _fmt(t.score), "graded": f"{t.graded}/{t.probes}", **{d: _fmt(t.dimensions.get(d)) for d in DIMENSIONS}}
            for kind, t in result.by_type.items()]


def dimension_rows(result: ProbeReport) -> list[dict[str, Any]]:
    return [{"dimension": d, "score": _fmt(result.by_dimension.get(d))} for d in DIMENSIONS]


def _show(result: ProbeReport) -> None:
    st.metric("probe score (0-5)", _fmt(result.score), help="The mean of every grade the judge gave.")
    st.caption(f"{result.graded} graded, {result.failed} failed, {result.skipped} skipped; {result.calls} calls, ${result.spent:.4f} spent.")
    if result.stopped:
        st.warning(result.stopped)
    st.dataframe(score_rows(result), hide_index=True)
    st.dataframe(dimension_rows(result), hide_index=True)
    for p in result.probes:
        with st.expander(f"{p.kind} at request {p.at}: {p.status}" + (f", {_fmt(p.mean)}" if p.mean is not None else "")):
            # Transcript text and model output: shown as plain text, never as markdown or HTML.
            st.caption("Question")
            st.text(p.question)
            st.caption("Reference (from the recorded session)")
            st.code(p.reference, language=None, wrap_lines=True)
            st.caption("Answer")
            st.code(p.answer or "(none)", language=None, wrap_lines=True)
            if p.error:
                st.error(p.error)
            elif p.rationale:
                st.caption(f"Judge: {p.rationale}")


def probe_panel(report: Report, transcript: Transcript) -> None:
    """Pick a request, see the estimate, run the probes, see the scores per type and dimension."""
    settings = llm_settings()
    if settings is None:
        st.info("Probes need a model: turn on \"Compare with an LLM summary\" above and pick anthropic or openai there "
                "(its key, base URL and model are used here, in memory only).")
        return
    if not report.rows:
        st.info("This transcript has no requests to probe.")
        return
    k = request_picker(len(report.rows), key=_K + "request")
    judge_model = st.text_input("Judge model", key=_K + "judge", placeholder=settings.resolved_model, help="Empty: the answering model grades too.").strip()
    limit = st.number_input("Max cost in dollars (0: no limit)", min_value=0.0, max_value=1000.0, value=1.0, step=0.5, key=_K + "max_cost")
    judge = settings.model_copy(update={"model": judge_model}) if judge_model else settings
    try:
        lines = estimate(report, settings, judge=judge, at=[k], tools=transcript.tools)
    except LabError as e:
        st.error(str(e))
        return
    st.caption(f"{', '.join(PROBE_KINDS)} probes at request {k}, answered by {settings.describe()}.")
    for line in lines:
        st.caption(line)
    key = result_key(report, k, settings, judge.resolved_model)
    if st.button(f"Run the probes at request {k}", key=_K + "run", type="primary"):
        try:
            with st.spinner("Asking the probes and grading the answers..."):
                result = run_probes(report, settings, judge=judge, at=[k], tools=transcript.tools, max_cost=limit or None,
                                    session=transcript_label())
        except LabError as e:
            st.session_state[ERROR] = (key, str(e))
        else:
            set_probe_result(key, result)
    error = probe_error(key)
    if error is not None:
        st.error(error)
    shown = probe_result(key)
    if shown is not None:
        _show(shown)
