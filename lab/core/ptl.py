"""Recognising a prompt-too-long error from its text, the way both designs do.

Providers and their many compatible endpoints word the error differently, so
both reference designs match substrings. MewCode's lists are used verbatim:
Anthropic "prompt is too long" / "context_length" / "too many tokens";
OpenAI "context_length_exceeded" / "maximum context length" / "too long" /
"token" together with "exceed".
"""

from __future__ import annotations

import json

from ..errors import PromptTooLongError

__all__ = ["ANTHROPIC_PTL", "OPENAI_PTL", "is_prompt_too_long", "error_text", "text_is_ptl"]

ANTHROPIC_PTL = ("prompt is too long", "context_length", "too many tokens")
OPENAI_PTL = ("context_length_exceeded", "maximum context length", "too long")


def error_text(error: BaseException | str | dict | None) -> str:
    """The searchable text of an error: its message plus any provider body it carries."""
    if error is None:
        return ""
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        return json.dumps(error, ensure_ascii=False, default=str)
    parts = [str(error)]
    body = getattr(error, "body", None)
    if body:
        parts.append(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str))
    return "\n".join(parts)


def is_prompt_too_long(error: BaseException | str | dict | None) -> bool:
    """True for a ``PromptTooLongError`` or any error whose text matches either design's substrings."""
    if isinstance(error, PromptTooLongError):
        return True
    return text_is_ptl(error_text(error))


def text_is_ptl(text: str) -> bool:
    """Whether an error text reads as prompt-too-long by either design's substrings."""
    low = text.lower()
    if any(s in low for s in ANTHROPIC_PTL) or any(s in low for s in OPENAI_PTL):
        return True
    return "token" in low and "exceed" in low
