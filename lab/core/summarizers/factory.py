"""Build the summarizer a config names, so an exported config runs the same way everywhere.

API keys never come from a config: they are passed in by the caller (the
app's session) or read from ANTHROPIC_API_KEY / OPENAI_API_KEY.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import SecretStr

from ...errors import ConfigError

from .base import Summarizer
from .rules import RuleSummarizer
from .ptl import PTLRetrySummarizer

if TYPE_CHECKING:  # pragma: no cover
    from ..config import CompactionConfig
    from ..providers import ProviderSettings

__all__ = ["build_summarizer", "llm_summarizer"]


def build_summarizer(
    config: CompactionConfig,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
) -> Summarizer:
    """The full-summary strategy of ``config.summary``: rules offline, or an LLM behind the PTL retry.

    ``base_url`` and ``model`` override the config's ``llm_base_url`` / ``llm_model``.
    """
    kind = config.summary.summarizer
    if kind == "rules":
        return RuleSummarizer()
    # Lazy: lab.core.providers imports the provider SDKs (anthropic, openai), which only an LLM summarizer needs.
    from ..providers import ProviderSettings

    settings = ProviderSettings(
        provider=kind,
        model=model if model is not None else config.summary.llm_model,
        base_url=base_url if base_url is not None else config.summary.llm_base_url,
        api_key=SecretStr(api_key) if api_key else None,
    )
    if settings.secret() is None:
        # Fail when the config is applied, not at the first compaction an hour into a session.
        from ..providers import KEY_ENV_VARS

        raise ConfigError(
            f"summarizer {kind!r} needs an API key: set {KEY_ENV_VARS[kind]}, enter one in the app, "
            "or give summary.llm_base_url for a local server that needs none"
        )
    return llm_summarizer(settings, config)


def llm_summarizer(settings: ProviderSettings, config: CompactionConfig) -> Summarizer:
    """The provider's summarizer with the config's attachment limits, behind MewCode's PTL retry."""
    # Lazy: the LLM summarizer imports the provider SDKs (anthropic, openai).
    from .llm import make_llm_summarizer

    inner = make_llm_summarizer(
        settings,
        attachment_files=config.summary.attachment_files,
        attachment_file_tokens=config.summary.attachment_file_tokens,
        attachment_max_tokens=config.summary.attachment_tokens(config.window),
    )
    return PTLRetrySummarizer(inner)
