"""Provider error bodies as the APIs send them, and a response to hang an SDK error on (no network)."""

from __future__ import annotations

import httpx2

__all__ = ["ANTHROPIC_PTL", "OPENAI_PTL", "OPENAI_TPM", "response"]

ANTHROPIC_PTL = {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}
OPENAI_PTL = {
    "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded",
}
# A throughput limit: it mentions tokens and "exceeded" but is not about the window.
OPENAI_TPM = {
    "message": "Request too large for gpt-4o: Limit 30000, Requested 50000 tokens per min (TPM) exceeded.",
    "type": "tokens",
    "param": None,
    "code": "rate_limit_exceeded",
}


def response(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("POST", "http://127.0.0.1:9/v1/messages"))
