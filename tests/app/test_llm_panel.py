"""The LLM panel: summarizer picker, key for the browser session only, base URL and model."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from streamlit.testing.v1 import AppTest

from lab.core import CompactionConfig
from lab.core.providers import LOCAL_DUMMY_KEY, ProviderSettings
from lab.core.summarizers.ptl import PTLRetrySummarizer
from lab.errors import ConfigError
from lab.ui import llm
from lab.ui.replays import summarizer_fingerprint
from lab.core.config import with_value
from tests.conftest import ROOT

TIMEOUT = 60
KEY = "sk-test-PANEL-7f3c1d9e-never-shown"


def _panel() -> None:
    import streamlit as st

    from lab.ui import llm

    settings = llm.llm_panel()
    st.text(f"ready={settings is not None}")


def panel() -> AppTest:
    return AppTest.from_function(_panel, default_timeout=TIMEOUT).run()


def _shown(at: AppTest) -> list[str]:
    values: list[str] = []
    for kind in ("markdown", "caption", "text", "code", "info", "warning", "error", "success"):
        values += [str(e.value) for e in at.get(kind)]
    return values


class TestHelpers:
    def test_key_source_order(self) -> None:
        env = {"ANTHROPIC_API_KEY": "from-env"}
        assert llm.key_source("anthropic", "typed", "", env) == "entered"
        assert llm.key_source("anthropic", "", "", env) == "environment"
        assert llm.key_source("openai", "", "", env) is None
        assert llm.key_source("openai", "", "http://localhost:8000/v1", {}) == "none needed"

    def test_missing_reason_explains_every_way_out(self) -> None:
        text = llm.missing_reason("openai", "", "", {})
        assert text is not None and "OPENAI_API_KEY" in text and "base URL" in text and "enter one" in text
        assert llm.missing_reason("rules", "", "", {}) is None
        assert llm.missing_reason("anthropic", " ", "", {"ANTHROPIC_API_KEY": "x"}) is None
        assert "unknown summarizer" in (llm.missing_reason("gemini", "", "", {}) or "")

    def test_build_settings_keeps_the_key_secret(self) -> None:
        s = llm.build_settings("anthropic", f"  {KEY} ", "", "claude-x")
        assert isinstance(s.api_key, SecretStr) and s.secret() == KEY
        assert KEY not in repr(s) and KEY not in s.model_dump_json() and KEY not in s.describe()
        assert s.model == "claude-x" and s.base_url is None

    def test_bad_base_url_is_a_config_error_naming_the_field(self) -> None:
        with pytest.raises(ConfigError, match="base_url"):
            llm.build_settings("openai", "", "ftp://example.com", "")

    def test_summarizer_is_wrapped_in_the_ptl_retry(self) -> None:
        s = llm.make_summarizer(ProviderSettings(provider="openai", base_url="http://127.0.0.1:9/v1"), CompactionConfig())
        assert isinstance(s, PTLRetrySummarizer) and s.name == "openai"
        assert s.inner.settings.secret() == LOCAL_DUMMY_KEY  # type: ignore[attr-defined]

    def test_cache_key_never_holds_the_key(self) -> None:
        cfg = with_value(CompactionConfig(), "summary.summarizer", "anthropic")
        a = summarizer_fingerprint(cfg, llm.build_settings("anthropic", KEY))
        b = summarizer_fingerprint(cfg, llm.build_settings("anthropic", KEY + "2"))
        assert KEY not in a and a != b


class TestPanel:
    def test_rules_by_default_needs_nothing(self) -> None:
        at = panel()
        assert not at.exception
        assert at.radio(key="lab.llm.provider").value == "rules"
        assert any("need no provider" in i.value for i in at.info)
        assert at.text[-1].value == "ready=False"
        assert not at.text_input, "no key field until an LLM is picked"

    @pytest.mark.parametrize("provider, env", [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")])
    def test_without_a_key_it_explains_what_is_missing(self, provider: str, env: str) -> None:
        at = panel()
        at.radio(key="lab.llm.provider").set_value(provider).run()
        assert not at.exception and not at.error
        assert any(f"No API key for {provider}" in i.value and env in i.value for i in at.info)
        assert at.text[-1].value == "ready=False"
        assert "lab.llm" not in at.session_state

    def test_key_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        at = panel()
        at.radio(key="lab.llm.provider").set_value("anthropic").run()
        assert at.text[-1].value == "ready=True"
        assert any("key: environment" in c.value for c in at.caption)
        assert all(KEY not in v for v in _shown(at))

    def test_entered_key_stays_in_memory_and_out_of_sight(self) -> None:
        at = panel()
        at.radio(key="lab.llm.provider").set_value("anthropic").run()
        field = at.text_input(key="lab.llm.key")
        assert field.proto.type == field.proto.PASSWORD
        field.input(KEY).run()
        assert at.text[-1].value == "ready=True"
        settings = at.session_state["lab.llm"]
        assert isinstance(settings, ProviderSettings) and settings.secret() == KEY
        assert KEY not in repr(settings) and KEY not in settings.model_dump_json()
        assert all(KEY not in v for v in _shown(at)), "the key is never echoed on the page"

    def test_a_base_url_alone_is_enough(self) -> None:
        at = panel()
        at.radio(key="lab.llm.provider").set_value("openai").run()
        at.text_input(key="lab.llm.base_url").input("http://localhost:8000/v1").run()
        assert at.text[-1].value == "ready=True"
        assert any("key: none needed" in c.value for c in at.caption)

    def test_bad_base_url_shows_an_error_and_keeps_running(self) -> None:
        at = panel()
        at.radio(key="lab.llm.provider").set_value("openai").run()
        at.text_input(key="lab.llm.key").input(KEY).run()
        at.text_input(key="lab.llm.base_url").input("ftp://nowhere").run()
        assert not at.exception
        assert at.error and "base_url" in at.error[0].value and KEY not in at.error[0].value
        assert at.text[-1].value == "ready=False"

    def test_back_to_rules_forgets_the_settings(self) -> None:
        at = panel()
        at.radio(key="lab.llm.provider").set_value("anthropic").run()
        at.text_input(key="lab.llm.key").input(KEY).run()
        assert "lab.llm" in at.session_state
        at.radio(key="lab.llm.provider").set_value("rules").run()
        assert "lab.llm" not in at.session_state


def test_the_key_survives_a_visit_to_another_page() -> None:
    at = AppTest.from_file(str(ROOT / "lab" / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("../pages/summary.py").run()
    # The panel (and the SDKs it imports) waits behind a toggle, so the page's first visit stays fast.
    at.toggle(key="lab.summary.llm").set_value(True).run()
    at.radio(key="lab.llm.provider").set_value("anthropic").run()
    at.text_input(key="lab.llm.key").input(KEY).run()
    at.switch_page("../pages/export.py").run()
    at.switch_page("../pages/summary.py").run()
    assert not at.exception
    assert at.radio(key="lab.llm.provider").value == "anthropic"
    assert at.text_input(key="lab.llm.key").value == KEY
