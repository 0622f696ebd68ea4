"""The fake provider server: lifecycle, routes, exact error shapes, scripting and recording."""

from __future__ import annotations

import json
import socket
import threading
import time

import anthropic
import httpx2
import openai
import pytest

import lab.testing as testing_pkg
import lab.testing.fake_provider as fp_module
from lab.testing import CANNED_TEXT, FakeProvider, Reply, serve


def _post(fake: FakeProvider, path: str, body: dict, headers: dict | None = None) -> httpx2.Response:
    with httpx2.Client(timeout=5) as client:
        return client.post(f"{fake.base_url_anthropic}{path}", json=body, headers=headers or {})


class TestLifecycle:
    def test_serve_starts_and_stops_without_leaking_threads(self) -> None:
        before = set(threading.enumerate())
        with serve() as fake:
            port = fake.port
            assert fake.base_url_anthropic == f"http://127.0.0.1:{port}"
            assert fake.base_url_openai == f"http://127.0.0.1:{port}/v1"
            assert _post(fake, "/v1/messages", {"model": "m", "messages": []}).status_code == 200
        assert set(threading.enumerate()) <= before
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()

    def test_not_running_is_an_error(self) -> None:
        with pytest.raises(RuntimeError, match="not running"):
            _ = FakeProvider().port  # reading the property is the act under test: it raises

    def test_stop_does_not_wait_for_a_slow_reply(self) -> None:
        errors: list[BaseException] = []

        def slow_call(url: str) -> None:
            try:
                with httpx2.Client(timeout=20) as client:
                    client.post(url, json={"model": "m", "messages": []})
            except httpx2.HTTPError as e:
                errors.append(e)

        with serve(default=Reply.slow(30)) as fake:
            worker = threading.Thread(target=slow_call, args=(f"{fake.base_url_openai}/chat/completions",))
            worker.start()
            deadline = time.monotonic() + 5
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.01)
            started = time.monotonic()
        assert time.monotonic() - started < 3
        worker.join(timeout=5)
        assert not worker.is_alive() and errors

    def test_each_server_gets_its_own_port(self) -> None:
        with serve() as a, serve() as b:
            assert a.port != b.port

    def test_all_exports(self) -> None:
        for mod in (testing_pkg, fp_module):
            assert all(hasattr(mod, name) for name in mod.__all__)


class TestRoutes:
    def test_models_for_both_sdks(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        with anthropic.Anthropic(api_key="k", base_url=fake_provider.base_url_anthropic, max_retries=0) as a:
            assert [m.id for m in a.models.list()] == ["fake-model"]
        with openai.OpenAI(api_key="k", base_url=fake_provider.base_url_openai, max_retries=0) as o:
            assert [m.id for m in o.models.list()] == ["fake-model"]

    def test_count_tokens_does_not_consume_the_script(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        fake_provider.script("ptl")
        with anthropic.Anthropic(api_key="k", base_url=fake_provider.base_url_anthropic, max_retries=0) as a:
            count = a.messages.count_tokens(model="m", messages=[{"role": "user", "content": "x" * 400}])
        assert count.input_tokens == 100
        assert fake_provider.pending == 1

    def test_unknown_route_is_404(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        assert _post(fake_provider, "/v1/embeddings", {}).status_code == 404
        with httpx2.Client() as client:
            assert client.get(f"{fake_provider.base_url_anthropic}/nothing").status_code == 404
        assert fake_provider.pending == 0


class TestErrorShapes:
    def test_anthropic_ptl_body(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        fake_provider.script(Reply.ptl(tokens=250_000, maximum=200_000))
        r = _post(fake_provider, "/v1/messages", {"model": "m", "messages": []})
        assert r.status_code == 400
        assert r.json() == {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}}

    def test_openai_ptl_body(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        fake_provider.script("ptl")
        r = _post(fake_provider, "/v1/chat/completions", {"model": "m", "messages": []})
        assert r.status_code == 400
        error = r.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["code"] == "context_length_exceeded" and error["type"] == "invalid_request_error"
        assert "maximum context length is 200000 tokens" in error["message"]

    @pytest.mark.parametrize(
        ("behaviour", "status", "header"),
        [("429", 429, "retry-after"), ("500", 500, "retry-after-ms"), ("auth", 401, None)],
        ids=["rate-limit", "server-error", "auth"],
    )
    def test_status_and_headers(self, fake_provider: FakeProvider, behaviour: str, status: int, header: str | None) -> None:  # noqa: F811
        for path in ("/v1/messages", "/v1/chat/completions"):
            fake_provider.script(behaviour)
            r = _post(fake_provider, path, {"model": "m", "messages": []})
            assert r.status_code == status
            if header:
                assert header in r.headers
            assert "error" in r.json()

    def test_custom_error(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        fake_provider.script(Reply.error(418, {"error": {"message": "teapot"}}))
        r = _post(fake_provider, "/v1/messages", {"model": "m", "messages": []})
        assert (r.status_code, r.json()) == (418, {"error": {"message": "teapot"}})


class TestScripting:
    def test_queue_then_default(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        fake_provider.script("500", Reply.ok("first"))
        fake_provider.default = Reply.ok("default")
        statuses = []
        texts = []
        for _ in range(3):
            r = _post(fake_provider, "/v1/messages", {"model": "m", "messages": []})
            statuses.append(r.status_code)
            texts.append(r.json()["content"][0]["text"] if r.status_code == 200 else None)
        assert statuses == [500, 200, 200] and texts == [None, "first", "default"]

    def test_canned_answer_has_usage(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        body = _post(fake_provider, "/v1/chat/completions", {"model": "mm", "messages": [{"role": "user", "content": "hi"}]}).json()
        assert body["choices"][0]["message"]["content"] == CANNED_TEXT
        assert body["model"] == "mm" and body["usage"]["prompt_tokens_details"]["cached_tokens"] == 100

    @pytest.mark.parametrize("value", ["nope", "slowly"], ids=["unknown", "bad-slow"])
    def test_unknown_behaviour(self, fake_provider: FakeProvider, value: str) -> None:  # noqa: F811
        with pytest.raises(ValueError):
            fake_provider.script(value)

    def test_slow_shortcut(self) -> None:
        assert Reply.of("slow:2.5").seconds == 2.5 and Reply.of("slow").seconds == 5.0

    def test_requests_are_recorded_and_reset(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        body = {"model": "m", "system": "S", "messages": [{"role": "user", "content": [{"type": "text", "text": "T"}]}]}
        _post(fake_provider, "/v1/messages?beta=true", body, headers={"X-Custom": "1"})
        [rec] = fake_provider.requests
        assert rec.method == "POST" and rec.path == "/v1/messages" and rec.api == "anthropic"
        assert rec.body == body and json.loads(rec.raw) == body
        assert rec.headers["x-custom"] == "1"
        assert rec.prompt_text() == "S\nT" and rec.is_generation
        fake_provider.script("ptl")
        fake_provider.reset()
        assert fake_provider.requests == [] and fake_provider.pending == 0
