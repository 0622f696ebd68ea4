"""The summarizer a config names is the one the Compactor runs."""

from __future__ import annotations

import pytest

from lab.core.compactor import Compactor
from lab.core.config import CompactionConfig
from lab.core.summarizers.factory import build_summarizer
from lab.core.summarizers.ptl import PTLRetrySummarizer
from lab.core.summarizers.rules import RuleSummarizer
from lab.errors import ConfigError


def _config(kind: str, **summary: object) -> CompactionConfig:
    cfg = CompactionConfig()
    return cfg.model_copy(update={"summary": cfg.summary.model_copy(update={"summarizer": kind, **summary})})


def test_rules_by_default() -> None:
    assert isinstance(build_summarizer(CompactionConfig()), RuleSummarizer)
    assert isinstance(Compactor(CompactionConfig()).summarizer, RuleSummarizer)


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_llm_is_wrapped_in_ptl_retry(kind: str) -> None:
    s = build_summarizer(_config(kind, llm_base_url="http://127.0.0.1:9/v1", llm_model="m"))
    assert isinstance(s, PTLRetrySummarizer)
    assert s.name == kind


def test_llm_without_key_or_url_is_a_clear_config_error() -> None:
    with pytest.raises(ConfigError, match="API_KEY"):
        Compactor(_config("anthropic"))


def test_key_argument_is_used_but_never_in_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _config("openai")
    s = build_summarizer(cfg, api_key="sk-test-secret-123")
    assert s.name == "openai"
    assert "sk-test-secret-123" not in cfg.model_dump_json()


def test_llm_attachment_is_capped_at_the_configured_share_of_the_window() -> None:
    cfg = _config("openai", llm_base_url="http://127.0.0.1:9/v1", llm_model="m", attachment_max_window_share=0.1)
    cfg = cfg.model_copy(update={"window": 64_000})
    s = build_summarizer(cfg)
    assert isinstance(s, PTLRetrySummarizer)
    assert s.inner.attachment_max_tokens == 6_400
