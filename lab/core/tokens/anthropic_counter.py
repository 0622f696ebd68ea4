"""Token counts from Anthropic's ``count_tokens`` endpoint.

The only counter that knows Claude's tokenizer, at the price of a network call
per distinct message; results are cached by a hash of what was sent, so a
replay that re-counts an unchanged history asks nothing.

Each message is counted as a one-message request whose content is the
message's block texts as text blocks. Real tool_use / tool_result blocks are
not sent as such: the API rejects a lone tool_result whose tool_use is not in
the same request, and per-message counting must not depend on neighbours. The
count therefore includes the few tokens of framing every message carries, and
structured blocks are counted by their text, which is what the lab's other
counters do too. Images are not uploaded (the lab never keeps pixels); they
are charged ``IMAGE_TOKENS`` locally.

The API key is handed to the SDK client and nowhere else: it is not an
attribute of the counter, not in its repr and never in an error message.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

from ...errors import ConfigError, ProviderError
from ..messages import ImageBlock, Message, block_text
from .base import IMAGE_TOKENS, MESSAGE_OVERHEAD, BaseCounter

if TYPE_CHECKING:
    # Types only: the SDK itself is imported when a counter is built, so the package stays optional at import.
    from anthropic.types import TextBlockParam

__all__ = ["AnthropicCounter", "DEFAULT_MODEL"]

DEFAULT_MODEL = "claude-sonnet-4-5"
# Sent as the key when only a base_url is configured: a local proxy or test server needs none.
_NO_KEY = "no-key-configured"


class AnthropicCounter(BaseCounter):
    """Counts through ``client.messages.count_tokens``; needs an API key or a base_url."""

    name = "anthropic"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        super().__init__()
        if not model:
            raise ConfigError("anthropic counter: model must be a non-empty model name")
        if timeout <= 0:
            raise ConfigError(f"anthropic counter: timeout must be > 0 seconds, got {timeout}")
        if max_retries < 0:
            raise ConfigError(f"anthropic counter: max_retries must be >= 0, got {max_retries}")
        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if key is None and url is None:
            raise ConfigError(
                "the anthropic counter needs an API key: pass api_key=..., set ANTHROPIC_API_KEY, "
                "or give base_url=... for a compatible server; or pick an offline counter (o200k, calibrated)"
            )
        try:
            import anthropic
        except ImportError:
            raise ConfigError("the anthropic counter needs the 'anthropic' package; run `pip install anthropic`") from None
        self.model = model
        self.base_url = url
        self._errors: tuple[type[BaseException], ...] = (anthropic.AnthropicError,)
        self._client = anthropic.Anthropic(api_key=key or _NO_KEY, base_url=url, timeout=timeout, max_retries=max_retries)
        self._message_cache: dict[str, int] = {}
        # How many requests were sent; tests and the app read it to show the cache works.
        self.requests = 0

    def __repr__(self) -> str:
        return f"AnthropicCounter(model={self.model!r}, base_url={self.base_url!r})"

    def _request(self, content: list[TextBlockParam]) -> int:
        self.requests += 1
        try:
            result = self._client.messages.count_tokens(model=self.model, messages=[{"role": "user", "content": content}])
        except self._errors as exc:
            status = getattr(exc, "status_code", None)
            where = f" (HTTP {status})" if status else ""
            raise ProviderError(f"anthropic count_tokens failed{where}: {type(exc).__name__}: {_safe_message(exc)}") from None
        n = getattr(result, "input_tokens", None)
        if not isinstance(n, int) or n < 0:
            raise ProviderError(f"anthropic count_tokens returned no usable input_tokens: {n!r}")
        return n

    def _count(self, text: str) -> int:
        return self._request([{"type": "text", "text": text}])

    def count_message(self, message: Message) -> int:
        texts = [t for b in message.content if not isinstance(b, ImageBlock) and (t := block_text(b))]
        images = sum(1 for b in message.content if isinstance(b, ImageBlock))
        if not texts:
            return MESSAGE_OVERHEAD + images * IMAGE_TOKENS
        content: list[TextBlockParam] = [{"type": "text", "text": t} for t in texts]
        key = hashlib.sha256(json.dumps(content, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
        n = self._message_cache.get(key)
        if n is None:
            n = self._request(content)
            if len(self._message_cache) >= self.max_cache:
                self._message_cache.clear()
            self._message_cache[key] = n
        return n + images * IMAGE_TOKENS


def _safe_message(exc: BaseException) -> str:
    # SDK messages name the status and the server's error text; keep them short and one line.
    text = " ".join(str(exc).split())
    return text[:300] if text else "no details"
