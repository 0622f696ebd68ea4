"""The upstream side: where a request goes, which headers go with it, and errors in each API's own shape.

Headers pass through as the agent sent them (its API key included: the key is
the agent's, and the lab never reads, logs or records it), minus the
hop-by-hop ones, the proxy's own token, and ``accept-encoding`` (asked as
``identity``, so the copy the relay keeps can be read). Errors the proxy
makes itself (upstream unreachable, malformed or oversize body, bad token) are
written the way the API the client speaks writes them, so its SDK raises the
usual exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

__all__ = ["TOKEN_HEADER", "DEFAULT_ANTHROPIC", "DEFAULT_OPENAI", "request_headers", "response_headers", "join_url", "error_body", "api_of_path"]

DEFAULT_ANTHROPIC = "https://api.anthropic.com"
DEFAULT_OPENAI = "https://api.openai.com"
# The header a remote client proves itself with (``--allow-remote`` + ``LAB_SERVE_TOKEN``); never forwarded.
TOKEN_HEADER = "x-lab-serve-token"

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers", "transfer-encoding", "upgrade"}
_DROP_REQUEST = _HOP_BY_HOP | {"host", "content-length", "accept-encoding", TOKEN_HEADER}
_DROP_RESPONSE = _HOP_BY_HOP | {"content-length"}


def request_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    out = [(k, v) for k, v in headers if k.lower() not in _DROP_REQUEST]
    out.append(("accept-encoding", "identity"))
    return out


def response_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {k: v for k, v in headers if k.lower() not in _DROP_RESPONSE}


def join_url(base: str, path: str, query: str = "") -> str:
    """``base`` + ``path``, without doubling a ``/v1`` that both carry (an SDK-style base such as ``http://localhost:11434/v1``)."""
    base = base.rstrip("/")
    base_path = urlsplit(base).path
    if base_path and path.startswith(base_path + "/"):
        path = path[len(base_path):]
    return f"{base}{path}" + (f"?{query}" if query else "")


def api_of_path(path: str, headers: Mapping[str, str]) -> str:
    """Which upstream a passed-through path belongs to: Anthropic's when it looks like it, else OpenAI's."""
    if path.startswith("/v1/messages") or path.startswith("/v1/complete") or "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    return "openai"


_ANTHROPIC_KINDS = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 413: "request_too_large",
                    502: "api_error", 504: "timeout_error"}
_OPENAI_KINDS = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error", 413: "invalid_request_error",
                 502: "server_error", 504: "server_error"}


def error_body(api: str, status: int, message: str) -> bytes:
    """An error as the API writes it: Anthropic's ``{"type": "error", "error": {...}}``, OpenAI's ``{"error": {...}}``."""
    if api == "anthropic":
        data: dict = {"type": "error", "error": {"type": _ANTHROPIC_KINDS.get(status, "api_error"), "message": message}}
    else:
        data = {"error": {"message": message, "type": _OPENAI_KINDS.get(status, "server_error"), "param": None, "code": None}}
    return json.dumps(data).encode()
