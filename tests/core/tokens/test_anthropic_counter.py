"""The anthropic counter against a tiny count_tokens server on 127.0.0.1 (the real SDK, no mocks)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Iterator
from typing import Any

import pytest

from lab.core.messages import ImageBlock, Message, TextBlock
from lab.core.tokens import get_counter
from lab.core.tokens.anthropic_counter import AnthropicCounter
from lab.core.tokens.base import IMAGE_TOKENS
from lab.errors import ConfigError, ProviderError
from tests.builders import assistant, call_and_result, user

SECRET = "sk-ant-test-secret-123"


class FakeCountServer:
    """Answers POST /v1/messages/count_tokens with 7 + total text characters // 4, like a tokenizer would."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail_with: int | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.requests.append({"path": self.path, "body": body})
                outer.headers.append(dict(self.headers))
                if self.path != "/v1/messages/count_tokens":
                    return self._reply(404, {"type": "error", "error": {"type": "not_found_error", "message": "no route"}})
                if outer.fail_with:
                    return self._reply(outer.fail_with, {"type": "error", "error": {"type": "api_error", "message": "boom"}})
                chars = sum(len(b["text"]) for m in body["messages"] for b in m["content"])
                self._reply(200, {"input_tokens": 7 + chars // 4})

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> FakeCountServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_server() -> Iterator[FakeCountServer]:
    with FakeCountServer() as server:
        yield server


@pytest.fixture
def counter(fake_server: FakeCountServer) -> AnthropicCounter:
    return AnthropicCounter(api_key=SECRET, base_url=fake_server.url, max_retries=0, timeout=5)


class TestConfiguration:
    def test_without_key_or_base_url_is_a_config_error_naming_what_is_missing(self) -> None:
        with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
            AnthropicCounter()

    def test_registry_builds_it_with_kwargs(self, fake_server: FakeCountServer) -> None:
        c = get_counter("anthropic", base_url=fake_server.url, max_retries=0)
        assert isinstance(c, AnthropicCounter)
        assert c.count_text("abcdefgh") == 9

    def test_key_from_environment(self, fake_server: FakeCountServer, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        c = AnthropicCounter(base_url=fake_server.url, max_retries=0)
        c.count_text("hello")
        sent = fake_server.headers[-1]
        assert SECRET in (sent.get("x-api-key", ""), sent.get("Authorization", "").removeprefix("Bearer "))

    @pytest.mark.parametrize("kwargs", [{"model": ""}, {"timeout": 0}, {"max_retries": -1}], ids=["empty-model", "zero-timeout", "negative-retries"])
    def test_bad_arguments(self, kwargs: dict[str, Any]) -> None:
        with pytest.raises(ConfigError):
            AnthropicCounter(api_key=SECRET, **kwargs)

    def test_key_is_never_shown(self, counter: AnthropicCounter) -> None:
        assert SECRET not in repr(counter)
        assert all(SECRET not in repr(v) for k, v in vars(counter).items() if k != "_client")


class TestCounting:
    def test_text_is_sent_as_one_user_message_to_count_tokens(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        assert counter.count_text("x" * 40) == 17
        req = fake_server.requests[-1]
        assert req["path"] == "/v1/messages/count_tokens"
        assert req["body"]["model"] == counter.model
        assert req["body"]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "x" * 40}]}]

    def test_message_is_counted_in_one_request_with_all_its_block_texts(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        call, result = call_and_result("Read", "line\n" * 20, file_path="/a.py")
        assert counter.count_message(result) == 7 + 100 // 4
        n_call = counter.count_message(call)
        sent = fake_server.requests[-1]["body"]["messages"][0]["content"]
        assert [b["type"] for b in sent] == ["text"]
        assert sent[0]["text"].startswith("Read ")
        assert n_call == 7 + len(sent[0]["text"]) // 4

    def test_images_are_charged_locally_and_never_sent(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        m = Message(role="user", id="img", content=(TextBlock(text="look"), ImageBlock(size_bytes=1000)))
        assert counter.count_message(m) == 7 + 1 + IMAGE_TOKENS
        assert all(b["type"] == "text" for b in fake_server.requests[-1]["body"]["messages"][0]["content"])

    def test_message_without_text_sends_nothing(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        m = Message(role="user", id="empty", content=(TextBlock(text=""),))
        assert counter.count_message(m) > 0
        assert fake_server.requests == []

    def test_count_messages_sums_messages(self, counter: AnthropicCounter) -> None:
        msgs = [user("hello there"), assistant("general kenobi")]
        assert counter.count_messages(msgs) == sum(counter.count_message(m) for m in msgs)


class TestCache:
    def test_recounting_an_unchanged_message_sends_no_request(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        m = user("the same question")
        first = counter.count_message(m)
        again = counter.count_message(m.model_copy(update={"id": "other-id"}))
        assert first == again
        assert len(fake_server.requests) == 1 and counter.requests == 1

    def test_changed_content_is_counted_again(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        counter.count_message(user("one"))
        counter.count_message(user("two"))
        assert len(fake_server.requests) == 2

    def test_text_cache(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        assert counter.count_text("abc") == counter.count_text("abc")
        assert len(fake_server.requests) == 1


class TestErrors:
    @pytest.mark.parametrize("status", [400, 401, 429, 500], ids=["bad-request", "auth", "rate-limit", "server"])
    def test_http_errors_become_provider_errors(self, counter: AnthropicCounter, fake_server: FakeCountServer, status: int) -> None:
        fake_server.fail_with = status
        with pytest.raises(ProviderError, match=f"HTTP {status}") as info:
            counter.count_text("hello")
        assert SECRET not in str(info.value)

    def test_unreachable_server_is_a_provider_error(self) -> None:
        c = AnthropicCounter(api_key=SECRET, base_url="http://127.0.0.1:9", max_retries=0, timeout=2)
        with pytest.raises(ProviderError, match="APIConnectionError"):
            c.count_text("hello")

    def test_failed_counts_are_not_cached(self, counter: AnthropicCounter, fake_server: FakeCountServer) -> None:
        fake_server.fail_with = 500
        with pytest.raises(ProviderError):
            counter.count_message(user("retry me"))
        fake_server.fail_with = None
        assert counter.count_message(user("retry me")) == 7 + len("retry me") // 4
