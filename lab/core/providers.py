"""LLM provider clients: settings, client construction, and error mapping.

The lab talks to providers only through the real ``anthropic`` and ``openai``
SDKs. This module decides three things for both of them:

* where the key comes from (argument, environment, or a dummy for a local
  OpenAI-compatible server that only needs a ``base_url``), and that it never
  leaks: it is a ``SecretStr`` excluded from every dump and redacted from every
  error text the lab produces;
* how long a call may take: the SDKs retry 429/5xx/timeouts themselves, and a
  transport wrapper enforces a wall-clock budget across all their attempts;
* what an SDK exception means for the lab (``classify_error``), in particular
  whether the provider said "prompt too long" (decided by
  ``lab.core.ptl.is_prompt_too_long``), in which case the compaction code can
  drop history and try again.

SDK exception tree, as mapped here::

    APIStatusError (400/413 + PTL text)     -> PromptTooLongError
    AuthenticationError / PermissionDenied  -> ProviderError "authentication failed ..."
    RateLimitError (after retries)          -> ProviderError "rate limited ..."
    InternalServerError / 5xx               -> ProviderError "server error ..."
    APITimeoutError / wall-clock budget     -> ProviderError "did not answer ..."
    APIConnectionError                      -> ProviderError "cannot reach ..."
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import anthropic
import httpx2
import openai
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from ..errors import ConfigError, LabError, PromptTooLongError, ProviderError
from .ptl import body_texts, is_prompt_too_long
from .messages import Usage

if TYPE_CHECKING:  # pragma: no cover
    from .messages import Usage

__all__ = [
    "ProviderName",
    "ProviderSettings",
    "DEFAULT_MODELS",
    "KEY_ENV_VARS",
    "LOCAL_DUMMY_KEY",
    "make_client",
    "classify_error",
    "raise_sdk_error",
    "anthropic_response_usage",
    "openai_response_usage",
    "redact",
    "settings_from_dict",
]

ProviderName = Literal["anthropic", "openai"]

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1-mini"}
KEY_ENV_VARS: dict[str, str] = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
# vLLM, Ollama and LM Studio ignore the key, but both SDKs refuse to start without one.
LOCAL_DUMMY_KEY = "local-no-key"

# The SDKs' backoff when the server gives no retry-after: 0.5 s doubling, capped at 8 s.
_SDK_INITIAL_BACKOFF = 0.5
_SDK_MAX_BACKOFF = 8.0
_ATTEMPT_SLACK = 0.5
_RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# Marks the synthetic response the deadline transport returns once the budget is spent.
_DEADLINE_HEADER = "x-lab-deadline-exceeded"


class ProviderSettings(BaseModel):
    """Who to call and how patiently. ``api_key`` never appears in a dump or repr."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName = Field("anthropic", description="Which SDK to use: anthropic (Messages API) or openai (Chat Completions, also for local OpenAI-compatible servers).")
    model: str = Field("", max_length=200, description="Model name; empty picks the provider's default.")
    base_url: str | None = Field(None, max_length=2000, description="API base URL; for OpenAI-compatible servers include the /v1 suffix (http://localhost:8000/v1).")
    api_key: SecretStr | None = Field(None, exclude=True, repr=False, description="API key; when empty it is read from ANTHROPIC_API_KEY / OPENAI_API_KEY.")
    timeout: float = Field(300.0, gt=0, le=3600, description="Seconds one HTTP attempt may take.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries the SDK makes on 429, 5xx, timeouts and connection errors.")
    total_timeout: float | None = Field(None, gt=0, le=4 * 3600, description="Wall-clock bound on one call including all retries; empty = timeout x attempts + backoff.")
    max_tokens_param: Literal["max_completion_tokens", "max_tokens"] = Field(
        "max_completion_tokens",
        description="OpenAI only: the request field carrying the output budget (older local servers want max_tokens).",
    )

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        v = v.strip().rstrip("/")
        if not v.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return v

    @property
    def resolved_model(self) -> str:
        return self.model or DEFAULT_MODELS[self.provider]

    @property
    def effective_total_timeout(self) -> float:
        """The wall-clock budget: explicit, or every attempt timing out plus the SDK's backoff."""
        if self.total_timeout is not None:
            return self.total_timeout
        attempts = self.max_retries + 1
        backoff = sum(min(_SDK_INITIAL_BACKOFF * 2**i, _SDK_MAX_BACKOFF) for i in range(self.max_retries))
        # Slack per attempt for connecting and reading: without it the last attempt is cut short.
        return (self.timeout + _ATTEMPT_SLACK) * attempts + backoff

    def secret(self) -> str | None:
        """The key to send: given, else from the environment, else a dummy for a local server."""
        if self.api_key is not None and self.api_key.get_secret_value():
            return self.api_key.get_secret_value()
        env = os.environ.get(KEY_ENV_VARS[self.provider], "").strip()
        if env:
            return env
        if self.base_url:
            return LOCAL_DUMMY_KEY
        return None

    def describe(self) -> str:
        """A one-line, key-free description for logs and reports."""
        where = self.base_url or "default endpoint"
        return f"{self.provider}:{self.resolved_model} at {where}"


def settings_from_dict(data: Mapping[str, Any]) -> ProviderSettings:
    """Validate user-supplied settings, turning pydantic's error into a ``ConfigError``."""
    try:
        return ProviderSettings.model_validate(dict(data))
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "<root>"
        # Pydantic echoes the offending input; for the key field that would be the key.
        raise ConfigError(f"provider setting {loc}: {first['msg']}") from None


def redact(text: str, settings: ProviderSettings | None) -> str:
    """Replace the key, if it occurs, with a fixed marker."""
    if settings is None:
        return text
    key = settings.secret()
    if key and key != LOCAL_DUMMY_KEY and key in text:
        text = text.replace(key, "[redacted]")
    return text


def _redact_obj(value: Any, settings: ProviderSettings | None) -> Any:
    if isinstance(value, str):
        return redact(value, settings)
    if isinstance(value, Mapping):
        return {k: _redact_obj(v, settings) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_obj(v, settings) for v in value]
    return value


class _DeadlineTransport(httpx2.BaseTransport):
    """Bounds the total time of one SDK call across all of its retries.

    The SDKs retry on their own and know nothing of a total budget. This
    transport sees every attempt: it caps each attempt's timeouts at the time
    left, tells the SDK not to retry when the coming wait would outlast the
    budget (``x-should-retry: false``, which both SDKs obey), and once the
    budget is spent answers with a synthetic, non-retryable 408.
    """

    def __init__(self, inner: httpx2.BaseTransport, budget: float) -> None:
        self._inner = inner
        self.budget = budget
        self.deadline = time.monotonic() + budget

    def _expired(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            408,
            headers={"x-should-retry": "false", _DEADLINE_HEADER: "1", "content-type": "application/json"},
            json={"error": {"type": "timeout_error", "message": f"total time budget of {self.budget:g}s exhausted"}},
            request=request,
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return self._expired(request)
        timeouts = dict(request.extensions.get("timeout") or {})
        for k in ("connect", "read", "write", "pool"):
            current = timeouts.get(k)
            timeouts[k] = remaining if current is None else min(current, remaining)
        request.extensions["timeout"] = timeouts
        try:
            response = self._inner.handle_request(request)
        except httpx2.TimeoutException:
            if self.deadline - time.monotonic() <= 0:
                return self._expired(request)
            raise
        retryable = response.status_code in _RETRYABLE_STATUS and "x-should-retry" not in response.headers
        if retryable and self._next_wait(request, response) >= self.deadline - time.monotonic():
            response.headers["x-should-retry"] = "false"
        return response

    @staticmethod
    def _next_wait(request: httpx2.Request, response: httpx2.Response) -> float:
        for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
            raw = response.headers.get(header)
            if raw is None:
                continue
            try:
                wait = float(raw) / scale
            except ValueError:
                continue
            if math.isfinite(wait) and wait > 0:
                return wait
        try:
            taken = int(request.headers.get("x-stainless-retry-count", "0"))
        except ValueError:
            taken = 0
        return min(_SDK_INITIAL_BACKOFF * 2 ** min(taken, 20), _SDK_MAX_BACKOFF)

    def close(self) -> None:
        self._inner.close()


def make_client(settings: ProviderSettings) -> anthropic.Anthropic | openai.OpenAI:
    """Build the SDK client; the total-time clock starts now, so build one per call."""
    key = settings.secret()
    if key is None:
        env = KEY_ENV_VARS[settings.provider]
        raise ConfigError(
            f"no API key for {settings.provider}: set {env}, give api_key in the provider settings, "
            "or give a base_url for a local OpenAI-compatible server (vLLM, Ollama, LM Studio) that needs no key"
        )
    transport = _DeadlineTransport(httpx2.HTTPTransport(), settings.effective_total_timeout)
    timeout = httpx2.Timeout(settings.timeout, connect=min(settings.timeout, 10.0))
    if settings.provider == "anthropic":
        return anthropic.Anthropic(
            api_key=key,
            base_url=settings.base_url,
            timeout=timeout,
            max_retries=settings.max_retries,
            http_client=anthropic.DefaultHttpxClient(transport=transport, timeout=timeout),
        )
    return openai.OpenAI(
        api_key=key,
        base_url=settings.base_url,
        timeout=timeout,
        max_retries=settings.max_retries,
        http_client=openai.DefaultHttpxClient(transport=transport, timeout=timeout),
    )


# --- classification --------------------------------------------------------------


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _provider_of(exc: BaseException, settings: ProviderSettings | None) -> str:
    if settings is not None:
        return settings.provider
    if isinstance(exc, anthropic.AnthropicError):
        return "anthropic"
    if isinstance(exc, openai.OpenAIError):
        return "openai"
    return "provider"


def _detail(exc: BaseException) -> str:
    messages, _ = body_texts(getattr(exc, "body", None))
    text = messages[0] if messages else (getattr(exc, "message", None) or str(exc))
    text = " ".join(str(text).split())
    return text[:300]


def classify_error(exc: BaseException, settings: ProviderSettings | None = None) -> LabError:
    """Map an SDK (or transport) exception to the lab's error, with a key-free message."""
    if isinstance(exc, LabError):
        return exc
    who = _provider_of(exc, settings)
    attempts = f" after {settings.max_retries + 1} attempt(s)" if settings is not None else ""
    detail = redact(_detail(exc), settings)
    status = _status_of(exc)

    if isinstance(exc, (anthropic.AuthenticationError, openai.AuthenticationError)):
        return ProviderError(f"authentication failed for {who} (check the API key): {detail}")
    if isinstance(exc, (anthropic.PermissionDeniedError, openai.PermissionDeniedError)):
        return ProviderError(f"permission denied by {who} (the API key may lack access to this model): {detail}")
    if status is not None and is_prompt_too_long(exc):
        body = getattr(exc, "body", None)
        body_dict = _redact_obj(body, settings) if isinstance(body, Mapping) else {"message": detail}
        return PromptTooLongError(f"{who} says the prompt is too long: {detail}", body=dict(body_dict), provider=who)
    response = getattr(exc, "response", None)
    if status == 408 and response is not None and response.headers.get(_DEADLINE_HEADER):
        budget = f"{settings.effective_total_timeout:g}s" if settings is not None else "the total time budget"
        return ProviderError(f"{who} timed out: no answer within the total time budget of {budget} (all retries included); raise the timeout or shrink the request")
    if isinstance(exc, (anthropic.RateLimitError, openai.RateLimitError)) or status == 429:
        return ProviderError(f"rate limited by {who}{attempts}: {detail}")
    if isinstance(exc, (anthropic.InternalServerError, openai.InternalServerError)) or (status is not None and status >= 500):
        return ProviderError(f"{who} server error (HTTP {status}){attempts}: {detail}")
    if isinstance(exc, (anthropic.APITimeoutError, openai.APITimeoutError)):
        per = f" ({settings.timeout:g}s per attempt, {settings.max_retries + 1} attempt(s))" if settings is not None else ""
        return ProviderError(f"{who} timed out{per}")
    if isinstance(exc, (anthropic.APIConnectionError, openai.APIConnectionError)):
        where = (settings.base_url or "its default endpoint") if settings is not None else "its endpoint"
        return ProviderError(f"cannot reach {who} at {where}{attempts}: {detail}")
    if isinstance(exc, (anthropic.NotFoundError, openai.NotFoundError)):
        model = f" (model {settings.resolved_model!r})" if settings is not None else ""
        return ProviderError(f"{who} answered 404 not found{model}: {detail}")
    if isinstance(exc, (anthropic.BadRequestError, openai.BadRequestError)):
        return ProviderError(f"{who} rejected the request (HTTP 400): {detail}")
    if status is not None:
        return ProviderError(f"{who} returned HTTP {status}: {detail}")
    if isinstance(exc, (anthropic.AnthropicError, openai.OpenAIError)):
        return ProviderError(f"{who} call failed ({type(exc).__name__}): {detail}")
    return ProviderError(f"{who} call failed unexpectedly ({type(exc).__name__}): {detail}")


def raise_sdk_error(exc: BaseException, settings: ProviderSettings) -> NoReturn:
    """Raise the lab's error for an SDK exception, chained to it only when the SDK's text is key-free.

    A server may echo the key back in its error, and a chained exception prints its text.
    """
    err = classify_error(exc, settings)
    key = settings.secret()
    if key and (key in str(exc) or key in repr(getattr(exc, "body", ""))):
        raise err from None
    raise err from exc


def anthropic_response_usage(u: Any) -> Usage:
    """The lab's Usage from an Anthropic SDK ``response.usage``."""
    return Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_read_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
        cache_write_tokens=getattr(u, "cache_creation_input_tokens", None) or 0,
    )


def openai_response_usage(u: Any) -> Usage:
    """The lab's Usage from an OpenAI SDK ``response.usage`` (None gives an empty one).

    OpenAI counts cache hits (and writes, where a server reports them) inside prompt_tokens; the lab keeps
    them apart, as Anthropic does, so that Usage.total does not count them twice.
    """
    if u is None:
        return Usage()
    details = getattr(u, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    written = (getattr(details, "cache_write_tokens", None) or 0) if details is not None else 0
    return Usage(
        input_tokens=max(0, (u.prompt_tokens or 0) - cached - written),
        output_tokens=u.completion_tokens or 0,
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )

