"""Recognising a prompt-too-long error, the way both designs do, for every shape an error comes in.

Providers and their many compatible endpoints word the error differently, so
both reference designs match substrings. MewCode's lists are used verbatim:
Anthropic "prompt is too long" / "context_length" / "too many tokens";
OpenAI "context_length_exceeded" / "maximum context length" / "too long" /
"token" together with "exceed".

Substrings alone misread throughput limits: OpenAI's 429 "tokens per min
... exceeded" mentions tokens and "exceeded" but is not about the window. So
where an error says more than its text, that is read first: an HTTP status
other than 400/413, a ``rate_limit_exceeded`` code, or a transport error
(timeout, connection) is never prompt-too-long; a ``context_length_exceeded``
code always is.

This module is the one place that decides; ``lab.core.providers`` maps SDK
exceptions with it, and the ``Compactor`` checks what ``recover`` was given.
It never imports an SDK, so the core stays usable without them loaded.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from ..errors import PromptTooLongError, ProviderError

__all__ = ["ANTHROPIC_PTL", "OPENAI_PTL", "PTL_CODES", "is_prompt_too_long", "error_text", "text_is_ptl", "body_texts"]

ANTHROPIC_PTL = ("prompt is too long", "context_length", "too many tokens")
OPENAI_PTL = ("context_length_exceeded", "maximum context length", "too long")
# Error codes that name the window outright (OpenAI and compatible servers).
PTL_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded"})
# A too-long prompt is a client error: 400 (both SDKs) or 413 (proxies, request size).
_PTL_STATUSES = (400, 413)
# (module, base class) of the SDKs' errors: one without a status is a timeout or a connection failure.
_SDK_ERRORS = (("anthropic", "AnthropicError"), ("openai", "OpenAIError"))


def error_text(error: BaseException | str | Mapping[str, Any] | None) -> str:
    """The searchable text of an error: its message plus any provider body it carries."""
    if error is None:
        return ""
    if isinstance(error, str):
        return error
    if isinstance(error, Mapping):
        return json.dumps(error, ensure_ascii=False, default=str)
    parts = [str(error)]
    body = getattr(error, "body", None)
    if body:
        parts.append(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str))
    return "\n".join(parts)


def text_is_ptl(text: str) -> bool:
    """Whether an error text reads as prompt-too-long by either design's substrings."""
    low = text.lower()
    if any(s in low for s in ANTHROPIC_PTL) or any(s in low for s in OPENAI_PTL):
        return True
    return "token" in low and "exceed" in low


def body_texts(body: Any) -> tuple[list[str], list[str]]:
    """The messages and codes in an Anthropic or OpenAI error body (or its inner ``error`` part)."""
    messages: list[str] = []
    codes: list[str] = []
    if isinstance(body, str):
        messages.append(body)
    elif isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str):
            messages.append(message)
        code = body.get("code")
        if isinstance(code, str):
            codes.append(code)
        inner = body.get("error")
        if isinstance(inner, (Mapping, str)):
            m, c = body_texts(inner)
            messages += m
            codes += c
    return messages, codes


def _body_is_ptl(body: Any, *extra_texts: str) -> bool:
    messages, codes = body_texts(body)
    if any(c in PTL_CODES for c in codes):
        return True
    if any(c in _RATE_LIMIT_CODES for c in codes):
        return False
    return any(text_is_ptl(m) for m in (*messages, *extra_texts))


def _is_sdk_error(error: BaseException) -> bool:
    # An SDK that is not imported cannot have raised the error, so looking in sys.modules is exact.
    for module, name in _SDK_ERRORS:
        base = getattr(sys.modules.get(module), name, None)
        if isinstance(base, type) and isinstance(error, base):
            return True
    return False


def is_prompt_too_long(error: BaseException | str | Mapping[str, Any] | None) -> bool:
    """Whether an exception, an error body or an error text means the provider refused the prompt as too long.

    A ``PromptTooLongError`` always does. An exception with an HTTP status
    (an SDK's ``APIStatusError``) does only for 400/413 with a PTL code or
    text in its body or message. The lab's other provider errors and the SDKs'
    status-less errors (timeouts, connection failures) never do. Anything
    else is judged by its text, a body by its codes and then its messages.
    """
    if error is None:
        return False
    if isinstance(error, PromptTooLongError):
        return True
    if isinstance(error, BaseException):
        status = getattr(error, "status_code", None)
        if isinstance(status, int):
            if status not in _PTL_STATUSES:
                return False
            return _body_is_ptl(getattr(error, "body", None), getattr(error, "message", "") or "")
        if isinstance(error, ProviderError) or _is_sdk_error(error):
            return False
        return text_is_ptl(error_text(error))
    if isinstance(error, Mapping):
        return _body_is_ptl(error)
    return text_is_ptl(str(error))
