"""What the fake provider says: scripted replies, recorded requests, and the two APIs' response bodies.

``fake_provider`` is the HTTP server; this module is the content it serves,
shaped as the Anthropic and OpenAI SDKs expect (bodies, error shapes, usage),
so the server stays about sockets and threads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal
from collections.abc import Callable, Mapping, Sequence

__all__ = ["Api", "Kind", "FakeUsage", "Reply", "Route", "RecordedRequest", "CANNED_SUMMARY", "CANNED_TEXT", "received_key", "error_body", "ok_body",
           "models_body", "grade_text"]

Api = Literal["anthropic", "openai"]
Kind = Literal["ok", "ptl", "429", "500", "slow", "auth", "error"]

CANNED_SUMMARY = "1. Primary request and intent: the canned summary of the fake provider."
CANNED_TEXT = f"<analysis>Walking through the conversation in order.</analysis>\n<summary>\n{CANNED_SUMMARY}\n</summary>"

# One routing rule of an "ok" reply: when the prompt holds every needle, answer with the text.
Route = tuple[tuple[str, ...], str]


@dataclass(frozen=True)
class FakeUsage:
    input_tokens: int = 1200
    output_tokens: int = 345
    cache_read_tokens: int = 100
    cache_write_tokens: int = 50


@dataclass(frozen=True)
class Reply:
    """One scripted behaviour. Build with the class methods; strings like ``"ptl"`` also work."""

    kind: Kind = "ok"
    text: str | None = None
    # "ok" only: answer whether the request's prompt contains this string.
    marker: str | None = None
    usage: FakeUsage = field(default_factory=FakeUsage)
    stop: Literal["end", "length"] = "end"
    seconds: float = 0.0
    retry_after: str | None = "0"
    retry_after_ms: str | None = "10"
    status: int = 500
    body: dict[str, Any] | None = None
    # Worst case for redaction tests: put the received key into the error message.
    echo_key: bool = False
    tokens: int = 210_000
    maximum: int = 200_000
    # "ok" only: answer by the first route whose needles are all in the prompt (see ``routed``).
    routes: tuple[Route, ...] = ()

    @classmethod
    def ok(cls, text: str | None = None, *, marker: str | None = None, usage: FakeUsage | None = None, stop: Literal["end", "length"] = "end") -> Reply:
        return cls("ok", text=text, marker=marker, usage=usage or FakeUsage(), stop=stop)

    @classmethod
    def routed(cls, routes: Sequence[tuple[str | Sequence[str], str]], text: str | None = None, *, usage: FakeUsage | None = None) -> Reply:
        """Answer by what the prompt asks: the first route whose needles all occur in it, else ``text``.

        Made to be a fake's ``default``: probe answers and judge grades scripted by question, so the
        scores are known whatever order the requests come in. A needle may be one string or several.
        """
        rules = tuple(((n,) if isinstance(n, str) else tuple(n), t) for n, t in routes)
        return cls("ok", text=text, usage=usage or FakeUsage(), routes=rules)

    @classmethod
    def ptl(cls, tokens: int = 210_000, maximum: int = 200_000) -> Reply:
        return cls("ptl", tokens=tokens, maximum=maximum)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "0", retry_after_ms: str | None = "10") -> Reply:
        return cls("429", retry_after=retry_after, retry_after_ms=retry_after_ms)

    @classmethod
    def server_error(cls, status: int = 500, retry_after_ms: str | None = "10") -> Reply:
        return cls("500", status=status, retry_after=None, retry_after_ms=retry_after_ms)

    @classmethod
    def slow(cls, seconds: float, text: str | None = None) -> Reply:
        return cls("slow", seconds=seconds, text=text)

    @classmethod
    def auth(cls, echo_key: bool = False) -> Reply:
        return cls("auth", echo_key=echo_key)

    @classmethod
    def error(cls, status: int, body: dict[str, Any]) -> Reply:
        """Any status with a body sent as is (both APIs get the same body)."""
        return cls("error", status=status, body=body, retry_after=None, retry_after_ms=None)

    @classmethod
    def of(cls, value: Reply | str) -> Reply:
        if isinstance(value, Reply):
            return value
        shortcuts: dict[str, Callable[[], Reply]] = {"ok": cls.ok, "ptl": cls.ptl, "429": cls.rate_limited, "500": cls.server_error, "auth": cls.auth}
        if value in shortcuts:
            return shortcuts[value]()
        if value == "slow":
            return cls.slow(5.0)
        if value.startswith("slow:"):
            return cls.slow(float(value[5:]))
        raise ValueError(f"unknown fake-provider behaviour {value!r}; use ok, ptl, 429, 500, slow[:seconds], auth or a Reply")


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    # Lower-cased header names.
    headers: dict[str, str]
    body: Any
    raw: bytes

    @property
    def api(self) -> Api | None:
        if self.path.startswith("/v1/messages"):
            return "anthropic"
        if self.path.startswith("/v1/chat/completions"):
            return "openai"
        return None

    @property
    def is_generation(self) -> bool:
        return self.method == "POST" and self.path in ("/v1/messages", "/v1/chat/completions")

    def prompt_text(self) -> str:
        """Every text the request asks the model to read (system and messages)."""
        if not isinstance(self.body, dict):
            return ""
        parts: list[str] = []
        system = self.body.get("system")
        parts += _texts(system)
        for m in self.body.get("messages") or []:
            if isinstance(m, dict):
                parts += _texts(m.get("content"))
        return "\n".join(parts)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        out: list[str] = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                out.append(block["text"])
        return out
    return []


def received_key(headers: dict[str, str]) -> str:
    if "x-api-key" in headers:
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else auth


def error_body(api: Api, reply: Reply, key: str) -> tuple[int, dict[str, Any]]:
    """The status and body each real API sends for this failure."""
    if reply.kind == "ptl":
        if api == "anthropic":
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": f"prompt is too long: {reply.tokens} tokens > {reply.maximum} maximum"}}
        message = (
            f"This model's maximum context length is {reply.maximum} tokens. However, your messages resulted in "
            f"{reply.tokens} tokens. Please reduce the length of the messages."
        )
        return 400, {"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
    if reply.kind == "429":
        if api == "anthropic":
            return 429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}
        return 429, {"error": {"message": "Rate limit reached for requests per min (RPM)", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    if reply.kind == "500":
        if api == "anthropic":
            return reply.status, {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
        return reply.status, {"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": None, "code": None}}
    if reply.kind == "auth":
        shown = key if reply.echo_key else "***"
        if api == "anthropic":
            return 401, {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {shown}".strip()}}
        return 401, {"error": {"message": f"Incorrect API key provided: {shown}.", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    return reply.status, dict(reply.body or {})


def grade_text(scores: Mapping[str, int], rationale: str = "scripted grade") -> str:
    """A judge's reply as the probe judge asks for it: one JSON object, a score per dimension and a rationale."""
    return json.dumps({**dict(scores), "rationale": rationale})


def _ok_text(reply: Reply, prompt: str) -> str:
    for needles, text in reply.routes:
        if all(n in prompt for n in needles):
            return text
    if reply.marker is not None:
        verdict = "present" if reply.marker in prompt else "absent"
        return f"<analysis>checked</analysis><summary>marker {reply.marker}: {verdict}</summary>"
    return CANNED_TEXT if reply.text is None else reply.text


def ok_body(api: Api, reply: Reply, request: RecordedRequest, serial: int) -> dict[str, Any]:
    body = request.body if isinstance(request.body, dict) else {}
    text = _ok_text(reply, request.prompt_text())
    model = str(body.get("model") or "fake-model")
    u = reply.usage
    if api == "anthropic":
        return {
            "id": f"msg_fake_{serial}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn" if reply.stop == "end" else "max_tokens",
            "stop_sequence": None,
            "usage": {
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cache_read_input_tokens": u.cache_read_tokens,
                "cache_creation_input_tokens": u.cache_write_tokens,
            },
        }
    prompt_tokens = u.input_tokens + u.cache_read_tokens
    return {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop" if reply.stop == "end" else "length", "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": prompt_tokens + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
        },
    }


def models_body(api: Api) -> dict[str, Any]:
    if api == "anthropic":
        item = {"type": "model", "id": "fake-model", "display_name": "Fake model", "created_at": "2025-01-01T00:00:00Z"}
        return {"data": [item], "has_more": False, "first_id": "fake-model", "last_id": "fake-model"}
    return {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 1_700_000_000, "owned_by": "lab"}]}
