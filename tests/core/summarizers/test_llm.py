"""LLM summarizers against the fake provider server, through the real anthropic and openai SDKs."""

from __future__ import annotations

import logging
import time

import pytest

from lab.core.messages import Usage
from lab.core.providers import ProviderSettings
from lab.core.summarizers.base import Summarizer, SummaryRequest
from lab.core.summarizers.llm import AnthropicSummarizer, LLMSummarizer, OpenAISummarizer, make_llm_summarizer
from lab.core.tokens.base import get_counter
from lab.errors import ConfigError, PromptTooLongError, ProviderError, SummaryError
from lab.testing import CANNED_SUMMARY, FakeProvider, FakeUsage, Reply
from tests.builders import assistant, call_and_result, session, user

KEY = "sk-test-SECRET-9f8e7d6c5b4a"
PROVIDERS = ["anthropic", "openai"]


def _summarizer(fake: FakeProvider, provider: str, **overrides: object) -> LLMSummarizer:
    fields: dict[str, object] = {"provider": provider, "base_url": fake.base_url(provider), "api_key": KEY, "model": "fake-model", "timeout": 5, "max_retries": 2}
    fields.update(overrides)
    return make_llm_summarizer(ProviderSettings(**fields))  # type: ignore[arg-type]


def _request(messages: list | None = None, instructions: str | None = None, max_tokens: int = 2000) -> SummaryRequest:
    return SummaryRequest(messages=messages or session(2, 300), counter=get_counter("minicode"), instructions=instructions, max_tokens=max_tokens)


@pytest.mark.parametrize("provider", PROVIDERS)
class TestSummary:
    def test_normal_summary_with_usage(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.script(Reply.ok(usage=FakeUsage(input_tokens=1000, output_tokens=200, cache_read_tokens=300, cache_write_tokens=40)))
        result = _summarizer(fake_provider, provider).summarize(_request())
        assert result.text == CANNED_SUMMARY
        assert result.strategy == "llm" and result.model == "fake-model"
        expected = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=300, cache_write_tokens=40 if provider == "anthropic" else 0)
        assert result.usage == expected
        assert result.attachment.startswith("## Recovery attachment")
        assert result.extra["provider"] == provider and result.extra["truncated"] is False

    def test_request_has_no_tools_and_one_user_message(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        msgs = [user("go"), *call_and_result("Read", "body", file_path="a.py"), assistant("done")]
        _summarizer(fake_provider, provider).summarize(_request(msgs, max_tokens=1234))
        [req] = fake_provider.generation_requests
        body = req.body
        assert "tools" not in body and "tool_choice" not in body
        assert body["model"] == "fake-model"
        roles = [m["role"] for m in body["messages"]]
        if provider == "anthropic":
            assert req.path == "/v1/messages" and roles == ["user"] and body["max_tokens"] == 1234 and body["system"]
        else:
            assert req.path == "/v1/chat/completions" and roles == ["system", "user"] and body["max_completion_tokens"] == 1234

    def test_user_messages_verbatim_and_custom_instructions(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        first = "Please migrate  the DB\n  to Postgres 16 — keep the 'legacy' schema!"
        msgs = [user(first), assistant("ok"), *call_and_result("Bash", "ran", command="ls"), user("Also add tests.")]
        _summarizer(fake_provider, provider).summarize(_request(msgs, instructions="Keep every API decision."))
        prompt = fake_provider.generation_requests[0].prompt_text()
        assert first in prompt and "Also add tests." in prompt
        assert prompt.index(first) < prompt.index("Also add tests.")
        assert prompt.rstrip().endswith("Keep every API decision.")

    def test_marker_echo(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.script(Reply.ok(marker="PLANTED-42"), Reply.ok(marker="NOT-THERE"))
        s = _summarizer(fake_provider, provider)
        assert s.summarize(_request([user("fact PLANTED-42"), assistant()])).text == "marker PLANTED-42: present"
        assert s.summarize(_request([user("fact"), assistant()])).text == "marker NOT-THERE: absent"

    def test_prompt_too_long_from_real_error_shape(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.script(Reply.ptl(tokens=250_000, maximum=200_000))
        with pytest.raises(PromptTooLongError) as info:
            _summarizer(fake_provider, provider).summarize(_request())
        err = info.value
        assert err.provider == provider and "250000" in str(err)
        if provider == "anthropic":
            assert err.body["type"] == "error" and err.body["error"]["type"] == "invalid_request_error"
        else:
            assert err.body["code"] == "context_length_exceeded" and err.body["param"] == "messages"
        # A 400 is not retried.
        assert len(fake_provider.generation_requests) == 1

    def test_rate_limit_then_ok_via_sdk_retries(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.script("429", "429", "ok")
        result = _summarizer(fake_provider, provider, max_retries=2).summarize(_request())
        assert result.text == CANNED_SUMMARY
        assert len(fake_provider.generation_requests) == 3

    def test_server_errors_exhaust_retries(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.default = Reply.server_error(500)
        with pytest.raises(ProviderError) as info:
            _summarizer(fake_provider, provider, max_retries=2).summarize(_request())
        assert not isinstance(info.value, PromptTooLongError)
        assert "server error (HTTP 500) after 3 attempt(s)" in str(info.value)
        assert len(fake_provider.generation_requests) == 3

    def test_slow_answer_times_out(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.default = Reply.slow(10)
        started = time.monotonic()
        with pytest.raises(ProviderError, match="timed out"):
            _summarizer(fake_provider, provider, timeout=0.3, max_retries=1).summarize(_request())
        # Two 0.3 s attempts and one SDK backoff (at most 0.5 s), with slack for a busy machine.
        assert time.monotonic() - started < 4.0
        assert len(fake_provider.generation_requests) == 2

    def test_total_time_budget_bounds_all_retries(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.default = Reply.slow(10)
        started = time.monotonic()
        with pytest.raises(ProviderError, match="timed out: no answer within the total time budget of 0.8s"):
            _summarizer(fake_provider, provider, timeout=0.5, max_retries=8, total_timeout=0.8).summarize(_request())
        assert time.monotonic() - started < 3.0

    def test_retry_after_beyond_the_budget_fails_at_once(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        # The server asks for 30 s; the budget is 3 s, so waiting would be pointless.
        fake_provider.script(Reply.rate_limited(retry_after="30", retry_after_ms=None), "ok")
        started = time.monotonic()
        with pytest.raises(ProviderError, match="rate limited"):
            _summarizer(fake_provider, provider, timeout=1, max_retries=3, total_timeout=3).summarize(_request())
        assert time.monotonic() - started < 2.5
        assert len(fake_provider.generation_requests) == 1

    def test_auth_error_is_clear(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.script("auth")
        with pytest.raises(ProviderError, match=rf"authentication failed for {provider} \(check the API key\)"):
            _summarizer(fake_provider, provider).summarize(_request())
        assert len(fake_provider.generation_requests) == 1

    def test_answer_without_summary(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.script(Reply.ok(""), Reply.ok("<analysis>ran out", stop="length"))
        s = _summarizer(fake_provider, provider)
        with pytest.raises(SummaryError, match="no summary text"):
            s.summarize(_request())
        with pytest.raises(SummaryError, match="output budget of 2000 tokens ran out"):
            s.summarize(_request())

    def test_malformed_success_is_a_summary_error(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        # A "compatible" server answering 200 with a body neither API would send.
        fake_provider.script(Reply.error(200, {"id": "x", "model": "m", "content": None, "choices": None, "usage": None}))
        with pytest.raises(SummaryError):
            _summarizer(fake_provider, provider).summarize(_request())

    def test_truncated_summary_is_flagged(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        fake_provider.script(Reply.ok("<analysis>a</analysis><summary>1. Primary request", stop="length"))
        result = _summarizer(fake_provider, provider).summarize(_request())
        assert result.text == "1. Primary request" and result.extra["truncated"] is True


@pytest.mark.parametrize("provider", PROVIDERS)
class TestKeyHygiene:
    def test_key_only_in_the_auth_header(self, fake_provider: FakeProvider, provider: str) -> None:  # noqa: F811
        _summarizer(fake_provider, provider).summarize(_request())
        [req] = fake_provider.generation_requests
        assert KEY not in req.raw.decode()
        carrying = {name for name, value in req.headers.items() if KEY in value}
        assert carrying and carrying <= {"authorization", "x-api-key"}

    def test_key_never_in_errors_or_logs(self, fake_provider: FakeProvider, provider: str, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
        caplog.set_level(logging.DEBUG)
        # The worst server: it quotes the key back in its error message.
        fake_provider.script(Reply.auth(echo_key=True), Reply.server_error(), Reply.server_error(), Reply.server_error(), "ptl")
        s = _summarizer(fake_provider, provider)
        errors: list[BaseException] = []
        for _ in range(3):
            with pytest.raises(ProviderError) as info:
                s.summarize(_request())
            errors.append(info.value)
        assert isinstance(errors[2], PromptTooLongError)
        formatter = logging.Formatter()
        texts = [formatter.format(r) for r in caplog.records] + [repr(s), str(s.settings), s.settings.model_dump_json()]
        for e in errors:
            texts += [str(e), repr(e), repr(getattr(e, "body", None))]
            cause = e.__cause__
            while cause is not None:
                texts += [str(cause), repr(cause), repr(getattr(cause, "body", None))]
                cause = cause.__cause__
        assert caplog.records, "the SDK debug logs were not captured"
        assert not [t for t in texts if KEY in t]
        # The echoed key was really there, so the redaction was tested.
        assert "[redacted]" in str(errors[0])


class TestConstruction:
    def test_protocol_and_names(self) -> None:
        a = AnthropicSummarizer(ProviderSettings(api_key=KEY))
        o = OpenAISummarizer(ProviderSettings(provider="openai", api_key=KEY))
        assert isinstance(a, Summarizer) and isinstance(o, Summarizer)
        assert (a.name, o.name) == ("anthropic", "openai")
        assert KEY not in repr(a) and KEY not in repr(o)

    def test_provider_follows_the_class(self) -> None:
        assert OpenAISummarizer(ProviderSettings(provider="anthropic")).settings.provider == "openai"
        assert isinstance(make_llm_summarizer(ProviderSettings(provider="openai")), OpenAISummarizer)

    def test_bad_attachment_budget(self) -> None:
        with pytest.raises(ConfigError, match="attachment_files must be >= 0, got -1"):
            AnthropicSummarizer(ProviderSettings(), attachment_files=-1)

    def test_missing_key_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
            AnthropicSummarizer(ProviderSettings()).summarize(_request())

    def test_local_server_without_key(self, fake_provider: FakeProvider) -> None:  # noqa: F811
        s = OpenAISummarizer(ProviderSettings(provider="openai", base_url=fake_provider.base_url_openai, max_tokens_param="max_tokens"))
        assert s.summarize(_request()).text == CANNED_SUMMARY
        [req] = fake_provider.generation_requests
        assert req.body["max_tokens"] == 2000 and "max_completion_tokens" not in req.body
