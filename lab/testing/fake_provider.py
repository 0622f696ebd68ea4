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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from collections.abc import Iterator

from .replies import (
    CANNED_SUMMARY,
    CANNED_TEXT,
    Api,
    FakeUsage,
    RecordedRequest,
    Reply,
    error_body,
    models_body,
    ok_body,
    received_key,
)

__all__ = [
    "FakeUsage",
    "Reply",
    "RecordedRequest",
    "FakeProvider",
    "serve",
    "CANNED_SUMMARY",
    "CANNED_TEXT",
]

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
            self._send(200, models_body(api))
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
            self._send(200, ok_body(api, reply, rec, serial))
            return
        status, body = error_body(api, reply, received_key(rec.headers))
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
