"""Provider settings, client construction and error classification (no network; PTL detection: test_ptl.py)."""

from __future__ import annotations

import anthropic
import openai
import pytest

from lab.core.providers import (
    LOCAL_DUMMY_KEY,
    ProviderSettings,
    classify_error,
    make_client,
    redact,
    settings_from_dict,
)
from lab.errors import ConfigError, LabError, PromptTooLongError, ProviderError, SummaryError
from tests.core.error_bodies import ANTHROPIC_PTL, OPENAI_PTL, OPENAI_TPM
from tests.core.error_bodies import response as _response

KEY = "sk-test-SECRET-0123456789abcdef"


def test_all_is_complete() -> None:
    import lab.core.providers as mod

    public = {n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == mod.__name__}
    assert public <= set(mod.__all__)
    assert all(hasattr(mod, n) for n in mod.__all__)


class TestSettings:
    def test_defaults(self) -> None:
        s = ProviderSettings()
        assert s.provider == "anthropic" and s.resolved_model
        assert ProviderSettings(provider="openai", model="m").resolved_model == "m"

    def test_total_timeout_defaults_to_attempts_plus_backoff(self) -> None:
        s = ProviderSettings(timeout=10, max_retries=2)
        assert s.effective_total_timeout == pytest.approx((10 + 0.5) * 3 + 0.5 + 1.0)
        assert ProviderSettings(timeout=10, max_retries=2, total_timeout=7).effective_total_timeout == 7

    @pytest.mark.parametrize(
        ("data", "field"),
        [({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries"), ({"provider": "gemini"}, "provider"), ({"base_url": "ftp://x"}, "base_url"), ({"colour": 1}, "colour")],
        ids=["timeout", "retries", "provider", "url-scheme", "unknown-key"],
    )
    def test_bad_values_raise_config_error_naming_the_field(self, data: dict, field: str) -> None:
        with pytest.raises(ConfigError, match=field):
            settings_from_dict({"api_key": KEY, **data})

    def test_base_url_is_normalised(self) -> None:
        assert ProviderSettings(base_url=" http://localhost:8000/v1/ ").base_url == "http://localhost:8000/v1"
        assert ProviderSettings(base_url="  ").base_url is None


class TestKeyNeverShown:
    def test_dump_repr_str_json(self) -> None:
        s = ProviderSettings(provider="openai", api_key=KEY, base_url="http://localhost:1/v1")
        assert "api_key" not in s.model_dump()
        for text in (s.model_dump_json(), repr(s), str(s), s.describe(), str(s.model_dump(mode="json"))):
            assert KEY not in text
        assert s.secret() == KEY

    def test_validation_error_does_not_echo_the_key(self) -> None:
        with pytest.raises(ConfigError) as info:
            settings_from_dict({"api_key": KEY, "timeout": "soon"})
        assert KEY not in str(info.value) and KEY not in repr(info.value)

    def test_redact(self) -> None:
        s = ProviderSettings(api_key=KEY)
        assert redact(f"bad key {KEY}!", s) == "bad key [redacted]!"
        assert redact("nothing here", s) == "nothing here"


class TestKeySource:
    def test_explicit_key_wins(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
        assert ProviderSettings(api_key=KEY).secret() == KEY

    @pytest.mark.parametrize(("provider", "env"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")])
    def test_key_from_environment(self, monkeypatch: pytest.MonkeyPatch, provider: str, env: str) -> None:
        monkeypatch.setenv(env, "from-env")
        assert ProviderSettings(provider=provider).secret() == "from-env"  # type: ignore[arg-type]

    def test_local_server_gets_a_dummy_key(self) -> None:
        s = ProviderSettings(provider="openai", base_url="http://localhost:11434/v1")
        assert s.secret() == LOCAL_DUMMY_KEY
        client = make_client(s)
        assert isinstance(client, openai.OpenAI)
        client.close()

    @pytest.mark.parametrize(("provider", "env"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")])
    def test_no_key_no_url_explains_what_is_missing(self, provider: str, env: str) -> None:
        with pytest.raises(ConfigError) as info:
            make_client(ProviderSettings(provider=provider))  # type: ignore[arg-type]
        assert env in str(info.value) and "base_url" in str(info.value)

    @pytest.mark.parametrize(("provider", "cls"), [("anthropic", anthropic.Anthropic), ("openai", openai.OpenAI)])
    def test_client_class_and_settings(self, provider: str, cls: type) -> None:
        client = make_client(ProviderSettings(provider=provider, api_key=KEY, base_url="http://127.0.0.1:9/v1", timeout=3, max_retries=4))  # type: ignore[arg-type]
        try:
            assert isinstance(client, cls)
            assert client.max_retries == 4
            assert "127.0.0.1:9" in str(client.base_url)
        finally:
            client.close()


class TestClassify:
    def test_ptl_keeps_the_body_shape(self) -> None:
        err = classify_error(anthropic.BadRequestError("400", response=_response(400), body=ANTHROPIC_PTL))
        assert isinstance(err, PromptTooLongError)
        assert err.body == ANTHROPIC_PTL and err.provider == "anthropic"
        err = classify_error(openai.BadRequestError("400", response=_response(400), body=OPENAI_PTL))
        assert isinstance(err, PromptTooLongError) and err.body["code"] == "context_length_exceeded"

    def test_rate_limit_with_token_words_is_not_ptl(self) -> None:
        err = classify_error(openai.RateLimitError("429", response=_response(429), body=OPENAI_TPM))
        assert type(err) is ProviderError and "rate limited" in str(err)

    def test_other_bad_request(self) -> None:
        err = classify_error(anthropic.BadRequestError("400", response=_response(400), body={"type": "error", "error": {"message": "max_tokens: required"}}))
        assert type(err) is ProviderError and "rejected the request" in str(err) and "max_tokens" in str(err)

    def test_lab_errors_pass_through(self) -> None:
        original = SummaryError("x")
        assert classify_error(original) is original

    def test_unknown_exception(self) -> None:
        err = classify_error(RuntimeError("boom"))
        assert isinstance(err, LabError) and "RuntimeError" in str(err)

    def test_key_redacted_from_body_and_message(self) -> None:
        s = ProviderSettings(api_key=KEY)
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": f"prompt is too long for key {KEY}"}}
        err = classify_error(anthropic.BadRequestError(f"400 {KEY}", response=_response(400), body=body), s)
        assert isinstance(err, PromptTooLongError)
        assert KEY not in str(err) and KEY not in repr(err.body)
