"""The ASGI app of ``lab serve``: the routes, the relay, fail-open and the one retry after prompt-too-long.

Starlette serves it and ``httpx2`` calls the upstream; the core (``lab.core``)
knows nothing of either. Per request:

1. the token (when one is set), the size limit (413) and the JSON (400) are
   checked, each refusal in the API's own error shape;
2. in compact mode the conversation's Compactor rewrites ``messages``
   (``lab.serve.conversations``); if that raises, the original bytes go
   upstream instead, one log line says so and ``/stats`` counts a fail-open:
   the lab never drops a request;
3. the upstream's answer is relayed as it arrives (a stream chunk by chunk,
   never buffered), status and headers unchanged, 4xx/5xx included; a copy is
   parsed afterwards for the recording and the usage;
4. a prompt-too-long refusal runs the config's reactive recovery and retries
   once; if recovery gives up, or the retry fails too, the upstream's error
   goes to the client unchanged.

``/v1/messages/count_tokens`` is sent upstream compacted, so the agent's own
auto-compact sees what will really be sent. ``/v1/responses`` gets the whole
config too (summaries, removal, recovery); every item of a message the
Compactor left as it was goes upstream as the agent sent it, the items the lab
does not model included (see ``lab.serve.conversations``). Any other path is
passed through unchanged.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..core.config import CompactionConfig
from ..core.ptl import is_prompt_too_long
from .conversations import API_ANTHROPIC, API_CHAT, API_RESPONSES, Conversation, Conversations, Step, conversation_key, dumps_body
from .recording import Recorder, iso_now
from .sse import read_copy, usage_of
from .stats import Stats
from .upstream import DEFAULT_ANTHROPIC, DEFAULT_OPENAI, TOKEN_HEADER, api_of_path, error_body, join_url, request_headers, response_headers
from ..core.summarizers.factory import build_summarizer
from ..errors import LabError
from ..core.summarizers.rules import RuleSummarizer

__all__ = ["ServeOptions", "build_app", "listen_socket", "DEFAULT_MAX_BODY"]

log = logging.getLogger("lab.serve")

# Claude Code's largest requests are a few MB; 32 MiB leaves room and still bounds memory per request.
DEFAULT_MAX_BODY = 32 * 1024 * 1024


@dataclass
class ServeOptions:
    config: CompactionConfig = field(default_factory=CompactionConfig)
    mode: Literal["compact", "audit"] = "compact"
    upstream_anthropic: str = DEFAULT_ANTHROPIC
    upstream_openai: str = DEFAULT_OPENAI
    record: Path | None = None
    spill_dir: Path | None = None
    max_body: int = DEFAULT_MAX_BODY
    # Required on every request when set (``--allow-remote``), in the ``x-lab-serve-token`` header.
    token: str | None = None
    connect_timeout: float = 10.0
    # Seconds between two chunks of the upstream's answer before it counts as too slow (504 before the first byte).
    read_timeout: float = 600.0
    clock: Callable[[], float] = time.time


class _TooLarge(Exception):
    pass


def _error(api: str, status: int, message: str) -> Response:
    return Response(error_body(api, status, message), status_code=status, media_type="application/json")


def _stage_counts(step: Step | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    if step is not None:
        for e in step.events:
            if e.effective and e.stage != "watermark":
                counts[e.stage] = counts.get(e.stage, 0) + 1
    return counts


def _caller_key(request: Request) -> str | None:
    """The agent's own API key, for an LLM summary through the same upstream; held in memory only, never logged."""
    key = request.headers.get("x-api-key")
    if key:
        return key
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return None


class _Server:
    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.stats = Stats(options.mode)
        self.conversations = Conversations(options.config, spill_dir=options.spill_dir, summarizer_factory=self._summarizer)
        self.recorder = Recorder(options.record) if options.record is not None else None
        self.client: httpx2.AsyncClient | None = None

    # -- plumbing --------------------------------------------------------------

    def _summarizer(self, config: CompactionConfig, api: str, api_key: str | None) -> Any:
        """The config's summarizer; an LLM one calls the same upstream, with the caller's own key when it speaks that API."""
        kind = config.summary.summarizer
        if kind == "rules":
            return None
        same = (kind == "anthropic") == (api == API_ANTHROPIC)
        base = self.options.upstream_anthropic if kind == "anthropic" else self.options.upstream_openai
        if kind == "openai" and not urlsplit(base).path.strip("/"):
            base = base.rstrip("/") + "/v1"  # the OpenAI SDK's base URL carries the version
        try:
            return build_summarizer(config, api_key=api_key if same else None, base_url=config.summary.llm_base_url or base)
        except LabError as e:
            # No key for it: the rule-based summary instead, said once per conversation, never with the key.
            log.warning("lab serve: the %s summarizer cannot run (%s); using the rule-based summary", kind, type(e).__name__)

            return RuleSummarizer()

    def _client(self) -> httpx2.AsyncClient:
        if self.client is None:
            timeout = httpx2.Timeout(self.options.read_timeout, connect=self.options.connect_timeout)
            limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=200)
            # No Nagle: a request's headers and body go out as separate writes, and with the peer's delayed ACK the
            # body would wait ~40 ms on every kept-alive connection.
            transport = httpx2.AsyncHTTPTransport(limits=limits, trust_env=False, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
            self.client = httpx2.AsyncClient(timeout=timeout, transport=transport, trust_env=False)
        return self.client

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    def _denied(self, request: Request, api: str) -> Response | None:
        if self.options.token is None:
            return None
        given = request.headers.get(TOKEN_HEADER, "")
        if hmac.compare_digest(given.encode(), self.options.token.encode()):
            return None
        return _error(api, 401, f"lab serve: missing or wrong {TOKEN_HEADER} header")

    async def _body(self, request: Request) -> bytes:
        limit = self.options.max_body
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _TooLarge
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    def _base(self, api: str) -> str:
        return self.options.upstream_anthropic if api == API_ANTHROPIC else self.options.upstream_openai

    async def _send(self, request: Request, url: str, content: bytes) -> httpx2.Response:
        client = self._client()
        upstream = client.build_request(request.method, url, headers=request_headers(request.headers.items()), content=content)
        return await client.send(upstream, stream=True)

    # -- routes ----------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        denied = self._denied(request, "openai")
        return denied or JSONResponse({"status": "ok", "mode": self.options.mode, "conversations": len(self.conversations)})

    async def stats_route(self, request: Request) -> Response:
        denied = self._denied(request, "openai")
        return denied or JSONResponse(self.stats.snapshot())

    async def anthropic_messages(self, request: Request) -> Response:
        return await self._model(request, API_ANTHROPIC)

    async def count_tokens(self, request: Request) -> Response:
        return await self._model(request, API_ANTHROPIC, count=True)

    async def chat(self, request: Request) -> Response:
        return await self._model(request, API_CHAT)

    async def responses(self, request: Request) -> Response:
        return await self._model(request, API_RESPONSES)

    async def passthrough(self, request: Request) -> Response:
        api = api_of_path(request.url.path, request.headers)
        denied = self._denied(request, api)
        if denied:
            return denied
        try:
            content = await self._body(request)
        except _TooLarge:
            return _error(api, 413, f"request body over the proxy's limit of {self.options.max_body} bytes")
        self.stats.passthrough += 1
        url = join_url(self._base(api), request.url.path, request.url.query)
        try:
            resp = await self._send(request, url, content)
        except httpx2.TimeoutException:
            return _error(api, 504, "lab serve: the upstream did not answer in time")
        except httpx2.TransportError as e:
            return _error(api, 502, f"lab serve: upstream unreachable ({type(e).__name__})")
        return StreamingResponse(self._relay(resp, None), status_code=resp.status_code, headers=response_headers(resp.headers.items()))

    # -- the model requests ----------------------------------------------------

    def _compact(self, conv: Conversation, body: dict[str, Any], count: bool) -> Step:
        return conv.step(body, now=self.options.clock(), commit=not count)

    async def _model(self, request: Request, api: str, *, count: bool = False) -> Response:  # noqa: C901
        err_api = API_ANTHROPIC if api == API_ANTHROPIC else "openai"
        denied = self._denied(request, err_api)
        if denied:
            return denied
        try:
            raw = await self._body(request)
        except _TooLarge:
            return _error(err_api, 413, f"request body over the proxy's limit of {self.options.max_body} bytes")
        try:
            body = json.loads(raw)
        except ValueError as e:
            return _error(err_api, 400, f"malformed JSON in the request body: {e}")
        if not isinstance(body, dict):
            return _error(err_api, 400, f"the request body must be a JSON object, got {type(body).__name__}")
        key = conversation_key(api, body, request.headers)
        url = join_url(self._base(api), request.url.path, request.url.query)
        step: Step | None = None
        conv: Conversation | None = None
        content = raw
        failed_open = False
        if self.options.mode == "compact":
            conv = self.conversations.get(key, api, _caller_key(request))
            try:
                step = await anyio.to_thread.run_sync(self._compact, conv, body, count)
                content = dumps_body(step.body) if step.outcome is not None else raw
            except Exception as e:
                # Fail open: the original request goes upstream; one line says why (never the body or a header).
                log.warning("lab serve: compaction failed for conversation %s, forwarding the request as sent: %s", key[:12], type(e).__name__)
                failed_open = True
                step = None
                content = raw
        background = None
        if self.options.mode == "audit" and not count:
            # After the answer has gone out: audit mode adds nothing to a request's latency.
            background = BackgroundTask(self._audit_count, self.conversations.get(key, api), body, key, api)
        if not count:
            self.stats.request(key, api, tokens_agent=step.tokens_agent if step else 0, tokens_upstream=step.tokens_upstream if step else 0,
                               stages=_stage_counts(step), reset=bool(step and step.reset))
            if failed_open:
                self.stats.bump(key, api, "fail_open")
        try:
            resp = await self._send(request, url, content)
        except httpx2.TimeoutException:
            self.stats.bump(key, api, "failures")
            return _error(err_api, 504, "lab serve: the upstream did not answer in time")
        except httpx2.TransportError as e:
            self.stats.bump(key, api, "failures")
            return _error(err_api, 502, f"lab serve: upstream unreachable ({type(e).__name__})")
        recovered = False
        if resp.status_code in (400, 413) and step is not None and conv is not None and not count:
            resp, outcome, retried = await self._after_refusal(request, url, resp, conv, step, raw, key, api)
            if outcome == "recovered" and retried is not None:
                step, recovered, content = retried, True, dumps_body(retried.body)
            elif outcome == "original":
                # Refused for another reason than its length: the request as the agent sent it went instead (fail open).
                step, failed_open, content = None, True, raw
                self.stats.bump(key, api, "fail_open")
        if resp.status_code >= 400:
            self.stats.bump(key, api, "failures")
        record = None
        if self.recorder is not None and not count:
            record = {"request": {"timestamp": iso_now(), "method": request.method, "url": url.split("?", 1)[0], "body": body},
                      "upstream_request": {"body": step.body if step is not None else None, "compacted": step is not None,
                                           "fail_open": failed_open, "recovered": recovered,
                                           "tokens_agent": step.tokens_agent if step else None, "tokens_upstream": step.tokens_upstream if step else None},
                      "conversation": key, "mode": self.options.mode}
        streamed = body.get("stream") is True and resp.status_code < 300
        tail = (key, api, record, streamed)
        headers = response_headers(resp.headers.items())
        if streamed:
            return StreamingResponse(self._relay(resp, tail), status_code=resp.status_code, headers=headers, background=background)
        try:
            data = await resp.aread()
        except httpx2.TransportError as e:
            self.stats.bump(key, api, "failures")
            return _error(err_api, 502, f"lab serve: the upstream broke off its answer ({type(e).__name__})")
        finally:
            await resp.aclose()
        self._finish(tail, data, resp.status_code)
        return Response(data, status_code=resp.status_code, headers=headers, background=background)

    async def _audit_count(self, conv: Conversation, body: dict[str, Any], key: str, api: str) -> None:
        try:
            tokens = await anyio.to_thread.run_sync(conv.count, body)
        except Exception as e:
            log.warning("lab serve: could not count an audited request of conversation %s: %s", key[:12], type(e).__name__)
            return
        self.stats.request(key, api, tokens_agent=tokens, tokens_upstream=tokens, stages={}, requests=0)

    async def _after_refusal(self, request: Request, url: str, resp: httpx2.Response, conv: Conversation, step: Step, raw: bytes, key: str,
                             api: str) -> tuple[httpx2.Response, str, Step | None]:
        """After the upstream refused the compacted request: one more try, and what it was.

        Prompt too long: the config's recovery, then one retry ("recovered"). Any other refusal of a request the lab
        rewrote: the request as the agent sent it, once ("original"), so the lab never turns a request the upstream
        would take into one it refuses. Else, or when the second try cannot be sent, the refusal as it came ("").
        """
        data = await resp.aread()
        await resp.aclose()
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = data.decode("utf-8", "replace")
        if is_prompt_too_long(parsed):
            try:
                retry_step = await anyio.to_thread.run_sync(lambda: conv.recover(step, parsed, now=self.options.clock()))
                retry = await self._send(request, url, dumps_body(retry_step.body))
            except Exception as e:
                log.warning("lab serve: recovery after prompt-too-long did not go through for conversation %s: %s", key[:12], type(e).__name__)
            else:
                self.stats.bump(key, api, "recoveries")
                return retry, "recovered", retry_step
        elif resp.status_code == 400 and dumps_body(json.loads(raw)) != dumps_body(step.body):
            try:
                retry = await self._send(request, url, raw)
            except httpx2.TransportError as e:
                log.warning("lab serve: resending the original request failed for conversation %s: %s", key[:12], type(e).__name__)
            else:
                log.warning("lab serve: the upstream refused the compacted request of conversation %s (400); sent the original instead", key[:12])
                return retry, "original", None
        # The refusal goes to the client as the upstream sent it: a response whose body is already read.
        return httpx2.Response(resp.status_code, headers=resp.headers, content=data), "", None

    async def _relay(self, resp: httpx2.Response, tail: tuple[str, str, dict[str, Any] | None, bool] | None) -> AsyncIterator[bytes]:
        """The upstream's bytes as they arrive; a copy is kept for the recording and the usage."""
        copy: list[bytes] = []
        broke = False
        try:
            async for chunk in resp.aiter_raw():
                if tail is not None:
                    copy.append(chunk)
                yield chunk
        except httpx2.TransportError as e:
            # Headers are gone already: the stream ends with an error event in the API's own shape, so the client's SDK
            # raises instead of taking the cut answer for a whole one.
            broke = True
            log.warning("lab serve: the upstream broke off a stream: %s", type(e).__name__)
            if tail is not None:
                api = tail[1]
                payload = error_body(API_ANTHROPIC if api == API_ANTHROPIC else "openai", 502, "lab serve: the upstream broke off its answer")
                yield (b"event: error\n" if api == API_ANTHROPIC else b"") + b"data: " + payload + b"\n\n"
        finally:
            # Also on cancellation (the client went away): closing the response cancels the upstream request.
            with anyio.CancelScope(shield=True):
                await resp.aclose()
        if tail is not None:
            if broke:
                self.stats.bump(tail[0], tail[1], "failures")
            self._finish(tail, b"".join(copy), resp.status_code)

    def _finish(self, tail: tuple[str, str, dict[str, Any] | None, bool] | None, data: bytes, status: int) -> None:
        if tail is None:
            return
        key, api, record, streamed = tail
        body, text = read_copy(api, data, streamed)
        usage = usage_of(body) if status < 300 else None
        if usage is not None:
            self.stats.usage(key, api, usage)
        if record is not None and self.recorder is not None:
            record["response"] = {"timestamp": iso_now(), "status_code": status, "body": body, **({"body_raw": text} if text is not None else {})}
            record["usage"] = usage
            record["logged_at"] = iso_now()
            try:
                self.recorder.append(key, record)
            except OSError as e:
                log.warning("lab serve: cannot write the recording: %s", e)


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket for uvicorn, with ``TCP_NODELAY`` (port 0: a free one).

    Accepted connections inherit the option. Without it uvicorn's h11 protocol, which writes a response's head and
    body separately, waits out the client's delayed ACK: about 40 ms on every request of a kept-alive connection.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def build_app(options: ServeOptions) -> Starlette:
    """The proxy as an ASGI app; its state (conversations, stats, the upstream client) lives with it."""
    server = _Server(options)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await server.close()

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    routes = [
        Route("/health", server.health, methods=["GET"]),
        Route("/stats", server.stats_route, methods=["GET"]),
        Route("/v1/messages", server.anthropic_messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", server.count_tokens, methods=["POST"]),
        Route("/v1/chat/completions", server.chat, methods=["POST"]),
        Route("/v1/responses", server.responses, methods=["POST"]),
        Route("/{path:path}", server.passthrough, methods=methods),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.lab = server
    return app
