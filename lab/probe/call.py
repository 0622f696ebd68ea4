"""One text completion through the real SDK of either provider, for the probes' questions and the judge's grades.

The request body is built by the caller in the provider's own shape (the
lab's exporters give ``system``/``messages``/``tools``); this module adds the
model and the output budget, sends it with ``lab.core.providers.make_client``
(keys from the settings or the environment, the SDKs' retries, the wall-clock
budget) and reads back the text and the usage. Every SDK exception becomes a
key-free ``ProviderError`` (``raise_sdk_error``); a 200 answer the lab cannot
read becomes one too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.messages import Usage
from ..core.providers import ProviderSettings, anthropic_response_usage, make_client, openai_response_usage, raise_sdk_error
from ..errors import ProviderError

__all__ = ["Completion", "complete"]


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    model: str
    truncated: bool = False


def _anthropic(client: Any, settings: ProviderSettings, body: dict[str, Any], max_tokens: int) -> Completion:
    response = client.messages.create(model=settings.resolved_model, max_tokens=max_tokens, **body)
    text = "".join(getattr(b, "text", "") for b in response.content if getattr(b, "type", None) == "text")
    return Completion(text, anthropic_response_usage(response.usage), response.model or settings.resolved_model, str(response.stop_reason or "") == "max_tokens")


def _openai(client: Any, settings: ProviderSettings, body: dict[str, Any], max_tokens: int) -> Completion:
    kwargs = {"model": settings.resolved_model, settings.max_tokens_param: max_tokens, **body}
    response = client.chat.completions.create(**kwargs)
    if not response.choices:
        raise ProviderError(f"{settings.describe()} answered with no choices")
    choice = response.choices[0]
    return Completion(choice.message.content or "", openai_response_usage(response.usage), response.model or settings.resolved_model, choice.finish_reason == "length")


def complete(settings: ProviderSettings, body: dict[str, Any], max_tokens: int) -> Completion:
    """Send ``body`` (already in ``settings.provider``'s shape) and return what came back."""
    import anthropic
    import openai

    send = _anthropic if settings.provider == "anthropic" else _openai
    try:
        with make_client(settings) as client:
            return send(client, settings, body, max_tokens)
    except (anthropic.AnthropicError, openai.OpenAIError) as e:
        raise_sdk_error(e, settings)
    except (AttributeError, TypeError, ValueError) as e:
        raise ProviderError(f"{settings.describe()} answered with an unreadable response ({type(e).__name__})") from None
