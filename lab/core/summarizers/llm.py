"""LLM-written summaries through the real SDKs: Anthropic Messages and OpenAI Chat Completions.

Both summarizers send the same request (see ``prompt.py``): a system text
and one user message holding the rendered history, no tools. A provider's
"prompt too long" surfaces as ``PromptTooLongError`` so that the PTL retry
wrapper or the Compactor can shrink the history; every other failure becomes
a ``ProviderError`` (the call failed) or a ``SummaryError`` (the call worked
but gave nothing usable). Neither the key nor the SDK's exception text with
a key in it ever leaves this module.
"""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import openai

from ...errors import ConfigError, SummaryError
from ..messages import Usage
from ..providers import ProviderSettings, anthropic_response_usage, make_client, openai_response_usage, raise_sdk_error
from .attachment import build_attachment
from .base import SummaryRequest, SummaryResult
from .prompt import SummaryPrompt, build_summary_prompt, extract_summary

__all__ = ["LLMSummarizer", "AnthropicSummarizer", "OpenAISummarizer", "make_llm_summarizer"]

log = logging.getLogger(__name__)

_SDK_ERRORS = (anthropic.AnthropicError, openai.OpenAIError)


def _attachment(request: SummaryRequest, max_files: int, file_tokens: int, max_tokens: int | None) -> str:
    return build_attachment(
        list(request.messages), list(request.tools), request.counter, max_files=max_files, file_tokens=file_tokens, max_tokens=max_tokens
    )


class LLMSummarizer:
    """Shared flow: build the prompt, call the provider, extract the summary, add the attachment."""

    name = "llm"
    provider = "anthropic"

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        attachment_files: int = 5,
        attachment_file_tokens: int = 5000,
        attachment_max_tokens: int | None = None,
    ) -> None:
        if settings.provider != self.provider:
            settings = settings.model_copy(update={"provider": self.provider})
        if attachment_files < 0:
            raise ConfigError(f"attachment_files must be >= 0, got {attachment_files}")
        if attachment_file_tokens < 1:
            raise ConfigError(f"attachment_file_tokens must be >= 1, got {attachment_file_tokens}")
        self.settings = settings
        self.attachment_files = attachment_files
        self.attachment_file_tokens = attachment_file_tokens
        # The whole attachment's cap (the summary stage's share of the window); None: files x tokens only.
        self.attachment_max_tokens = attachment_max_tokens

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings.describe()})"

    def _send(self, client: Any, prompt: SummaryPrompt, max_tokens: int) -> Any:
        raise NotImplementedError

    def _read(self, response: Any) -> tuple[str, Usage, str, bool, str]:
        """Return (text, usage, model, truncated, stop reason)."""
        raise NotImplementedError

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        prompt = build_summary_prompt(request.messages, request.instructions)
        log.debug("summary request to %s: %d messages, %d chars", self.settings.describe(), len(request.messages), prompt.chars)
        try:
            with make_client(self.settings) as client:
                response = self._send(client, prompt, request.max_tokens)
        except _SDK_ERRORS as e:
            raise_sdk_error(e, self.settings)
        try:
            text, usage, model, truncated, stop = self._read(response)
        except (AttributeError, TypeError, ValueError) as e:
            # A compatible server answered 200 with a shape the SDK accepted but we cannot read.
            raise SummaryError(f"{self.settings.describe()} answered with an unreadable response ({type(e).__name__})") from None
        try:
            summary = extract_summary(text)
        except SummaryError:
            if truncated:
                raise SummaryError(
                    f"the summary output budget of {request.max_tokens} tokens ran out before the <summary> was written"
                ) from None
            raise
        attachment = _attachment(request, self.attachment_files, self.attachment_file_tokens, self.attachment_max_tokens)
        return SummaryResult(
            text=summary,
            strategy="llm",
            attachment=attachment,
            usage=usage,
            model=model,
            extra={"provider": self.provider, "stop_reason": stop, "truncated": truncated, "prompt_chars": prompt.chars, "trigger": request.trigger},
        )


class AnthropicSummarizer(LLMSummarizer):
    """Summaries through the Anthropic Messages API."""

    name = "anthropic"
    provider = "anthropic"

    def _send(self, client: Any, prompt: SummaryPrompt, max_tokens: int) -> Any:
        return client.messages.create(**prompt.anthropic_kwargs(self.settings.resolved_model, max_tokens))

    def _read(self, response: Any) -> tuple[str, Usage, str, bool, str]:
        text = "".join(getattr(b, "text", "") for b in response.content if getattr(b, "type", None) == "text")
        usage = anthropic_response_usage(response.usage)
        stop = str(response.stop_reason or "")
        return text, usage, response.model or self.settings.resolved_model, stop == "max_tokens", stop


class OpenAISummarizer(LLMSummarizer):
    """Summaries through OpenAI Chat Completions (or any compatible server via ``base_url``)."""

    name = "openai"
    provider = "openai"

    def _send(self, client: Any, prompt: SummaryPrompt, max_tokens: int) -> Any:
        kwargs = prompt.openai_kwargs(self.settings.resolved_model, max_tokens, self.settings.max_tokens_param)
        return client.chat.completions.create(**kwargs)

    def _read(self, response: Any) -> tuple[str, Usage, str, bool, str]:
        if not response.choices:
            return "", Usage(), response.model or self.settings.resolved_model, False, "no_choices"
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = openai_response_usage(response.usage)
        stop = str(choice.finish_reason or "")
        return text, usage, response.model or self.settings.resolved_model, stop == "length", stop


def make_llm_summarizer(settings: ProviderSettings, **kwargs: Any) -> LLMSummarizer:
    """The summarizer for ``settings.provider``."""
    cls = AnthropicSummarizer if settings.provider == "anthropic" else OpenAISummarizer
    return cls(settings, **kwargs)

