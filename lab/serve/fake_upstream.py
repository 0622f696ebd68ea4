"""A fake Anthropic/OpenAI upstream on loopback that records what it received and answers like the real APIs.

Shipped in the package (not under tests/) because ``python -m lab bench --section serve`` measures the proxy
against it, side by side with direct calls; the proxy's tests start it too. It never leaves 127.0.0.1.

It simulates the prompt cache the way the providers bill it: a request's
``cache_read_input_tokens`` are the tokens of the longest byte prefix it
shares with an earlier request (``cache_control`` markers stripped, as the
providers ignore where a client puts them), so a proxy that rewrites the
prefix differently from one request to the next shows as cache misses.

``script`` holds behaviours for the next model requests, one each: an error
status with headers, a delay, a stream cut off in the middle.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from .app import listen_socket

__all__ = ["FakeUpstream", "ServerThread", "Received", "cache_view"]

BYTES_PER_TOKEN = 4
# Earlier requests a new one is compared with: enough for every test's conversations, and a long bench stays linear.
MAX_CACHED = 256


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def cache_view(body: dict[str, Any]) -> bytes:
    """The bytes the simulated cache compares: the body in its own key order, markers stripped, messages last."""
    ordered = {k: v for k, v in body.items() if k not in ("messages", "stream", "max_tokens")}
    ordered["messages"] = body.get("messages", body.get("input"))
    return json.dumps(_strip(ordered), ensure_ascii=False, separators=(",", ":")).encode()


def _common(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search on prefix equality: fast for long bodies
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeUpstream:
    received: list[Received] = field(default_factory=list)
    script: deque[dict[str, Any]] = field(default_factory=deque)
    cancelled_streams: int = 0
    # The bytes of each streamed answer as the fake sent them, for byte-for-byte checks on the client's side.
    streamed: list[bytes] = field(default_factory=list)
    chunk_delay: float = 0.0
    _views: list[bytes] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        """Forget every request and the simulated cache (the bench's measurements start each from nothing)."""
        with self._lock:
            self.received.clear()
            self.streamed.clear()
            self._views.clear()

    def model_requests(self, path: str = "/v1/messages") -> list[Received]:
        return [r for r in self.received if r.path == path]

    def _usage(self, body: dict[str, Any]) -> tuple[int, int]:
        view = cache_view(body)
        with self._lock:
            shared = max((_common(view, v) for v in self._views[-MAX_CACHED:]), default=0)
            self._views.append(view)
        return (len(view) - shared) // BYTES_PER_TOKEN, shared // BYTES_PER_TOKEN

    # -- the app ---------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count, methods=["POST"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ])

    async def _take(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        raw = await request.body()
        self.received.append(Received(request.url.path, dict(request.headers), raw))
        behaviour = self.script.popleft() if self.script else {}
        if behaviour.get("delay"):
            await asyncio.sleep(behaviour["delay"])
        return json.loads(raw), behaviour

    @staticmethod
    def _scripted_error(behaviour: dict[str, Any]) -> Response | None:
        if "status" not in behaviour:
            return None
        return Response(json.dumps(behaviour.get("body", {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})),
                        status_code=behaviour["status"], headers=behaviour.get("headers", {}), media_type="application/json")

    async def _models(self, request: Request) -> Response:
        self.received.append(Received(request.url.path, dict(request.headers), b""))
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}]})

    async def _count(self, request: Request) -> Response:
        body, _ = await self._take(request)
        return JSONResponse({"input_tokens": len(cache_view(body)) // BYTES_PER_TOKEN})

    async def _sse(self, events: list[tuple[str | None, dict[str, Any] | str]], behaviour: dict[str, Any]) -> AsyncIterator[bytes]:
        cut = behaviour.get("cut_after")
        sent = bytearray()
        try:
            for i, (name, data) in enumerate(events):
                if cut is not None and i == cut:
                    raise RuntimeError("fake upstream: stream cut off")
                payload = data if isinstance(data, str) else json.dumps(data)
                chunk = ((f"event: {name}\n" if name else "") + f"data: {payload}\n\n").encode()
                sent += chunk
                yield chunk
                if self.chunk_delay:
                    await asyncio.sleep(self.chunk_delay)
        except (asyncio.CancelledError, GeneratorExit):
            self.cancelled_streams += 1
            raise
        finally:
            self.streamed.append(bytes(sent))

    async def _begin(self, request: Request) -> tuple[dict[str, Any], dict[str, Any], int, int, int] | Response:
        """What every model endpoint starts with: the body recorded, a scripted error answered, the cache simulated.

        Returns the scripted error response, or (body, behaviour, fresh input tokens, cache-read tokens, request number).
        """
        body, behaviour = await self._take(request)
        error = self._scripted_error(behaviour)
        if error is not None:
            return error
        fresh, read = self._usage(body)
        return body, behaviour, fresh, read, len(self.received)

    async def _messages(self, request: Request) -> Response:
        call = await self._begin(request)
        if isinstance(call, Response):
            return call
        body, behaviour, fresh, read, n = call
        usage = {"input_tokens": fresh, "output_tokens": 3, "cache_read_input_tokens": read, "cache_creation_input_tokens": 0}
        text = f"reply {n}"
        message = {"id": f"msg_fake_{n}", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
                   "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return JSONResponse(message)
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}
        events: list[tuple[str | None, dict[str, Any] | str]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "reply "}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": str(n)}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 3}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        return StreamingResponse(self._sse(events, behaviour), media_type="text/event-stream")

    async def _chat(self, request: Request) -> Response:
        call = await self._begin(request)
        if isinstance(call, Response):
            return call
        body, behaviour, fresh, read, n = call
        usage = {"prompt_tokens": fresh + read, "completion_tokens": 3, "total_tokens": fresh + read + 3, "prompt_tokens_details": {"cached_tokens": read}}
        base = {"id": f"chatcmpl-{n}", "created": int(time.time()), "model": body.get("model", "fake")}
        if not body.get("stream"):
            return JSONResponse({**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": f"reply {n}"}}]})
        chunk = {**base, "object": "chat.completion.chunk"}
        events: list[tuple[str | None, dict[str, Any] | str]] = [
            (None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "reply "}, "finish_reason": None}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {"content": str(n)}, "finish_reason": None}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append((None, {**chunk, "choices": [], "usage": usage}))
        events.append((None, "[DONE]"))
        return StreamingResponse(self._sse(events, behaviour), media_type="text/event-stream")

    async def _responses(self, request: Request) -> Response:
        call = await self._begin(request)
        if isinstance(call, Response):
            return call
        body, behaviour, fresh, read, n = call
        item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": f"reply {n}", "annotations": []}]}
        response = {"id": f"resp_{n}", "object": "response", "created_at": int(time.time()), "status": "completed", "model": body.get("model", "fake"),
                    "output": [item], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                    "usage": {"input_tokens": fresh + read, "output_tokens": 3, "total_tokens": fresh + read + 3,
                              "input_tokens_details": {"cached_tokens": read}, "output_tokens_details": {"reasoning_tokens": 0}}}
        if not body.get("stream"):
            return JSONResponse(response)
        events: list[tuple[str | None, dict[str, Any] | str]] = [
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": {**response, "status": "in_progress", "output": []}}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1, "item_id": item["id"], "output_index": 0,
                                            "content_index": 0, "delta": f"reply {n}", "logprobs": []}),
            ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "sequence_number": 3, "response": response}),
        ]
        return StreamingResponse(self._sse(events, behaviour), media_type="text/event-stream")


class ServerThread:
    """An ASGI app served by uvicorn on 127.0.0.1 at a free port, in a thread; a context manager."""

    def __init__(self, app: Any) -> None:
        self.sock = listen_socket("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="error", access_log=False, lifespan="on", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
