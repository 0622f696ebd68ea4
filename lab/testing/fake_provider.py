"""A fake LLM provider: a local HTTP server that speaks enough of both APIs for the real SDKs.

It ships with the library (as httpx ships its mock transport) so that the
lab's own tests, and anyone building on the lab, can exercise the real
``anthropic`` and ``openai`` clients, retries and error handling included,
without a network or a key::

    with serve() as fake:
        fake.script("429", Reply.ok("<summary>done</summary>"))
        settings = ProviderSettings(provider="openai", base_url=fake.base_url_openai, ...)

Endpoints: ``POST /v1/messages`` and ``POST /v1/messages/count_tokens``
(Anthropic; base URL ``base_url_anthropic``, the SDK appends ``/v1/...``),
``POST /v1/chat/completions`` (OpenAI; base URL ``base_url_openai``, which
ends in ``/v1`` because that SDK appends only ``/chat/completions``), and
``GET /v1/models`` for both. Only the two generation endpoints consume the
script; every request is recorded with its headers and parsed body.
"""

from __future__ import annotations

import json
import sys
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Literal

__all__ = [
    "FakeUsage",
    "Reply",
    "RecordedRequest",
    "FakeProvider",
    "serve",
    "CANNED_SUMMARY",
    "CANNED_TEXT",
]

Api = Literal["anthropic", "openai"]
Kind = Literal["ok", "ptl", "429", "500", "slow", "auth", "error"]

CANNED_SUMMARY = "1. Primary request and intent: the canned summary of the fake provider."
CANNED_TEXT = f"<analysis>Walking through the conversation in order.</analysis>\n<summary>\n{CANNED_SUMMARY}\n</summary>"


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

    @classmethod
    def ok(cls, text: str | None = None, *, marker: str | None = None, usage: FakeUsage | None = None, stop: Literal["end", "length"] = "end") -> Reply:
        return cls("ok", text=text, marker=marker, usage=usage or FakeUsage(), stop=stop)

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


def _received_key(headers: dict[str, str]) -> str:
    if "x-api-key" in headers:
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else auth


def _error_body(api: Api, reply: Reply, key: str) -> tuple[int, dict[str, Any]]:
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


def _ok_text(reply: Reply, prompt: str) -> str:
    if reply.marker is not None:
        verdict = "present" if reply.marker in prompt else "absent"
        return f"<analysis>checked</analysis><summary>marker {reply.marker}: {verdict}</summary>"
    return CANNED_TEXT if reply.text is None else reply.text


def _ok_body(api: Api, reply: Reply, request: RecordedRequest, serial: int) -> dict[str, Any]:
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


def _models_body(api: Api) -> dict[str, Any]:
    if api == "anthropic":
        item = {"type": "model", "id": "fake-model", "display_name": "Fake model", "created_at": "2025-01-01T00:00:00Z"}
        return {"data": [item], "has_more": False, "first_id": "fake-model", "last_id": "fake-model"}
    return {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 1_700_000_000, "owned_by": "lab"}]}


class _Handler(BaseHTTPRequestHandler):
    # One request per connection: handler threads end with their response, so
    # shutdown never waits on an idle keep-alive connection.
    protocol_version = "HTTP/1.1"
    # A client that connects and never sends must not hold up shutdown for long.
    timeout = 10
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # stderr noise in test output; the requests are recorded instead

    def _record(self) -> RecordedRequest:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        path = self.path.split("?", 1)[0]
        rec = RecordedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
        self.server.fake._add(rec)
        return rec

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("connection", "close")
            self.send_header("request-id", "req_fake")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing left to tell it
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        rec = self._record()
        if rec.path == "/v1/models":
            api: Api = "anthropic" if "anthropic-version" in rec.headers or "x-api-key" in rec.headers else "openai"
            self._send(200, _models_body(api))
        else:
            self._send(404, {"error": {"type": "not_found_error", "message": f"no route GET {rec.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        rec = self._record()
        if rec.path == "/v1/messages/count_tokens":
            self._send(200, {"input_tokens": max(1, len(rec.prompt_text()) // 4)})
            return
        api = rec.api
        if not rec.is_generation or api is None:
            self._send(404, {"error": {"type": "not_found_error", "message": f"no route POST {rec.path}"}})
            return
        reply, serial = self.server.fake._next()
        if reply.kind == "slow":
            # Interruptible, so that stopping the server never waits out a long sleep.
            if self.server.fake._stopping.wait(reply.seconds):
                self.close_connection = True
                return
            reply = Reply.ok(reply.text)
        if reply.kind == "ok":
            self._send(200, _ok_body(api, reply, rec, serial))
            return
        status, body = _error_body(api, reply, _received_key(rec.headers))
        headers: dict[str, str] = {}
        if reply.kind in ("429", "500"):
            if reply.retry_after is not None:
                headers["retry-after"] = reply.retry_after
            if reply.retry_after_ms is not None:
                headers["retry-after-ms"] = reply.retry_after_ms
        self._send(status, body, headers)


class _Server(ThreadingHTTPServer):
    # Non-daemon handler threads are joined by server_close(): nothing outlives serve().
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, fake: FakeProvider) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up mid-request is routine here (timeout tests), not a server fault.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class FakeProvider:
    """The running fake: script behaviours, read recorded requests, stop it."""

    def __init__(self, default: Reply | str = "ok") -> None:
        self.default = Reply.of(default)
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._serial = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle
    def start(self) -> FakeProvider:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- addresses
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake provider is not running; use serve() or start()")
        return int(self._server.server_address[1])

    @property
    def base_url_anthropic(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url_openai(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def base_url(self, api: Api) -> str:
        return self.base_url_anthropic if api == "anthropic" else self.base_url_openai

    # --- scripting
    def script(self, *behaviours: Reply | str) -> FakeProvider:
        """Queue behaviours for the next generation requests; then ``default`` applies."""
        replies = [Reply.of(b) for b in behaviours]
        with self._lock:
            self._queue.extend(replies)
        return self

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def generation_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_generation]

    def _add(self, rec: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(rec)

    def _next(self) -> tuple[Reply, int]:
        with self._lock:
            self._serial += 1
            reply = self._queue.popleft() if self._queue else self.default
            return reply, self._serial


@contextmanager
def serve(default: Reply | str = "ok") -> Iterator[FakeProvider]:
    """Run a fake provider on an ephemeral 127.0.0.1 port for the duration of the block."""
    fake = FakeProvider(default)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
