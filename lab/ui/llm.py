"""The LLM summarizer panel: pick a summarizer, give a key for this browser session, run a summary.

The key is typed into a password field and kept in ``st.session_state``
only, inside ``ProviderSettings`` as a ``SecretStr`` (never in a dump or a
repr); it is not written to disk, not exported, not logged, and caches see
only its hash (``summarizer_fingerprint``). Without a key the SDK
reads ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``; a base URL alone is
enough for a local OpenAI-compatible server.

Its widgets keep their values for the whole browser session
(``persist_state="session"``), so the key survives a visit to another page.

The panel is for the side-by-side summary on the Summary page. Which
summarizer the replay's own compactions use is ``summary.summarizer`` in the
config (Pipeline page); those calls use the settings given here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from collections.abc import Mapping

import streamlit as st

from ..core.config import CompactionConfig
from ..core.messages import Transcript
from ..core.providers import DEFAULT_MODELS, KEY_ENV_VARS, ProviderSettings, settings_from_dict
from ..core.summarizers.base import Summarizer
from ..errors import LabError
from . import keys
from .settings import get_config, set_llm_settings
from ..views.summary import SummaryComparison, summarise_request
from ..core.summarizers.factory import llm_summarizer

if TYPE_CHECKING:  # pragma: no cover
    from ..replayer import Report

__all__ = ["SUMMARIZERS", "missing_reason", "key_source", "build_settings", "make_summarizer", "llm_panel", "llm_summary_section"]

SUMMARIZERS = ("rules", "anthropic", "openai")
# The panel's widget keys; the summary it ran is session state, named in ``keys``.
_K = "lab.llm."
_PROVIDER, _KEY, _URL, _MODEL = (_K + n for n in ("provider", "key", "base_url", "model"))
_RESULT, _ERROR = keys.LLM_RESULT, keys.LLM_ERROR


def key_source(provider: str, entered: str, base_url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Where the key will come from: "entered", "environment", "none needed" (local server), or None."""
    if entered.strip():
        return "entered"
    if environ.get(KEY_ENV_VARS.get(provider, ""), "").strip():
        return "environment"
    if base_url.strip():
        return "none needed"
    return None


def missing_reason(provider: str, entered: str, base_url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why an LLM summary cannot run yet, in words for the page; None when it can."""
    if provider == "rules":
        return None
    if provider not in KEY_ENV_VARS:
        return f"unknown summarizer {provider!r}; choose one of {', '.join(SUMMARIZERS)}"
    if key_source(provider, entered, base_url, environ) is None:
        return (
            f"No API key for {provider}: enter one above (kept in this browser session only), "
            f"set {KEY_ENV_VARS[provider]} before starting the app, or give the base URL of a local "
            "OpenAI-compatible server that needs no key."
        )
    return None


def build_settings(provider: str, key: str = "", base_url: str = "", model: str = "") -> ProviderSettings:
    """Validated settings (``ConfigError`` naming the field); the key travels only as a SecretStr."""
    data: dict[str, object] = {"provider": provider, "model": model.strip(), "base_url": base_url.strip() or None}
    if key.strip():
        data["api_key"] = key.strip()
    return settings_from_dict(data)


def make_summarizer(settings: ProviderSettings, config: CompactionConfig) -> Summarizer:
    """The provider's summarizer, wrapped in MewCode's prompt-too-long retry."""
    return llm_summarizer(settings, config)


def llm_panel() -> ProviderSettings | None:
    """Draw the panel; return the settings when an LLM is picked and can run, else None."""
    provider = st.radio("Summarizer", SUMMARIZERS, key=_PROVIDER, horizontal=True, persist_state="session", help="rules: offline and deterministic; anthropic / openai: an LLM writes the summary.")
    cfg = get_config()
    st.caption(f"The replay's compactions use summary.summarizer = {cfg.summary.summarizer} (Pipeline page).")
    if provider == "rules":
        set_llm_settings(None)
        st.info("Rule-based summaries need no provider. Pick anthropic or openai to compare an LLM summary with them.")
        return None
    env = KEY_ENV_VARS[provider]
    key = st.text_input("API key", key=_KEY, type="password", persist_state="session", help=f"Kept in this browser session's memory only; never saved, exported or logged. Empty: {env} is used.")
    url = st.text_input("Base URL", key=_URL, persist_state="session", placeholder="https://api.example.com or http://localhost:8000/v1", help="Empty: the provider's own endpoint. A local OpenAI-compatible server needs no key.")
    model = st.text_input("Model", key=_MODEL, persist_state="session", placeholder=DEFAULT_MODELS[provider], help="Empty: the provider's default model.")
    missing = missing_reason(provider, key, url)
    if missing:
        set_llm_settings(None)
        st.info(missing)
        return None
    try:
        settings = build_settings(provider, key, url, model)
    except LabError as e:
        set_llm_settings(None)
        st.error(str(e))
        return None
    set_llm_settings(settings)
    source = key_source(provider, key, url)
    st.caption(f"Ready: {settings.describe()}; key: {source}.")
    return settings


def _show(comparison: SummaryComparison) -> None:
    st.caption(f"{len(comparison.removed)} messages summarised, {comparison.kept} kept verbatim; both summarizers got the same request.")
    left, right = st.columns(2)
    with left:
        st.markdown("**Rule-based**")
        st.code(comparison.rules.text, language=None, wrap_lines=True)
    with right:
        llm = comparison.llm
        st.markdown("**LLM**")
        if llm is None:
            st.info("No LLM result.")
            return
        st.code(llm.text, language=None, wrap_lines=True)
        if llm.usage is not None:
            st.caption(f"model {llm.model or '?'}: {llm.usage.input_tokens:,} input / {llm.usage.output_tokens:,} output tokens")
        if llm.attachment:
            with st.expander("Recovery attachment"):
                st.code(llm.attachment, language=None, wrap_lines=True)


def llm_summary_section(report: Report, k: int, transcript: Transcript, settings: ProviderSettings | None) -> None:
    """The run button for request ``k`` and, once run, the two summaries side by side."""
    if not report.rows:
        st.info("This transcript has no requests to summarise.")
        return
    if st.button(f"Run the LLM summary at request {k}", key=_K + "run", disabled=settings is None, type="primary"):
        st.session_state.pop(_RESULT, None)
        st.session_state.pop(_ERROR, None)
        try:
            with st.spinner("Asking the provider for a summary..."):
                assert settings is not None
                comparison = summarise_request(
                    report.input_at(k),
                    get_config(),
                    make_summarizer(settings, get_config()),
                    tools=transcript.tools,
                    now=report.rows[k].time,
                )
        except LabError as e:
            st.session_state[_ERROR] = (k, str(e))
        else:
            st.session_state[_RESULT] = (k, comparison)
    error = st.session_state.get(_ERROR)
    if error is not None and error[0] == k:
        st.error(error[1])
    result = st.session_state.get(_RESULT)
    if result is not None and result[0] == k:
        _show(result[1])
