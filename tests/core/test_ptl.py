"""``is_prompt_too_long``: one verdict for texts, bodies, the lab's errors and SDK exceptions (no network)."""

from __future__ import annotations

import subprocess
import sys

import anthropic
import openai
import pytest

from lab.core.ptl import is_prompt_too_long, text_is_ptl
from lab.errors import PromptTooLongError, ProviderError
from tests.conftest import ROOT
from tests.core.error_bodies import ANTHROPIC_PTL, OPENAI_PTL, OPENAI_TPM, response

PTL_TEXTS = [
    "prompt is too long: 210000 tokens > 200000 maximum",
    "invalid_request_error: context_length exceeded",
    "Too many tokens in request",
    "Error code: 400 - {'error': {'code': 'context_length_exceeded'}}",
    "This model's maximum context length is 128000 tokens.",
    "Input is too long for requested model.",
    "The number of tokens exceeds the limit",
    "The input token count (300000) exceeds the maximum number of tokens allowed",
]
PTL_IDS = ["anthropic", "context_length", "too-many-tokens", "openai-code", "openai-max-context", "too-long", "tokens-exceed", "token-count-exceeds"]
OTHER_TEXTS = ["rate limit exceeded", "invalid api token", "overloaded", "", "quota exceeded for the month", "max_tokens: must be positive"]


class TestTexts:
    @pytest.mark.parametrize("text", PTL_TEXTS, ids=PTL_IDS)
    def test_both_designs_substrings_match_in_any_case(self, text: str) -> None:
        assert is_prompt_too_long(text) and is_prompt_too_long(text.upper())
        assert text_is_ptl(text)

    @pytest.mark.parametrize("text", PTL_TEXTS, ids=PTL_IDS)
    def test_a_plain_exception_is_judged_by_its_text(self, text: str) -> None:
        assert is_prompt_too_long(RuntimeError(text))

    @pytest.mark.parametrize("text", OTHER_TEXTS)
    def test_other_errors_do_not_match(self, text: str) -> None:
        assert not is_prompt_too_long(text)
        assert not is_prompt_too_long(RuntimeError(text))


class TestBodies:
    def test_anthropic_and_openai_bodies(self) -> None:
        assert is_prompt_too_long(ANTHROPIC_PTL)
        assert is_prompt_too_long(OPENAI_PTL)
        assert is_prompt_too_long({"error": OPENAI_PTL})

    def test_a_ptl_code_decides_whatever_the_message(self) -> None:
        assert is_prompt_too_long({"error": {"message": "whatever", "code": "context_length_exceeded"}})
        assert is_prompt_too_long({"error": {"code": "string_above_max_length"}})

    def test_a_rate_limit_code_is_never_ptl(self) -> None:
        assert not is_prompt_too_long(OPENAI_TPM)
        assert not is_prompt_too_long({"error": OPENAI_TPM})

    def test_other_bodies(self) -> None:
        assert not is_prompt_too_long({"type": "error", "error": {"type": "invalid_request_error", "message": "model: field required"}})
        assert not is_prompt_too_long({})


class TestLabErrors:
    def test_the_typed_error_is_ptl_whatever_its_text(self) -> None:
        assert is_prompt_too_long(PromptTooLongError("nope"))

    def test_another_provider_error_is_not_even_when_it_mentions_tokens(self) -> None:
        # The lab already classified it (here a throughput limit); its text is no second opinion.
        assert not is_prompt_too_long(ProviderError("too many tokens per minute"))

    def test_none(self) -> None:
        assert not is_prompt_too_long(None)


class TestSdkExceptions:
    @pytest.mark.parametrize("status", [400, 413])
    def test_client_errors_with_a_ptl_body(self, status: int) -> None:
        assert is_prompt_too_long(anthropic.APIStatusError(f"Error code: {status}", response=response(status), body=ANTHROPIC_PTL))
        assert is_prompt_too_long(openai.APIStatusError(f"Error code: {status}", response=response(status), body=OPENAI_PTL))

    def test_bad_request_classes(self) -> None:
        assert is_prompt_too_long(anthropic.BadRequestError("Error code: 400", response=response(400), body=ANTHROPIC_PTL))
        assert is_prompt_too_long(openai.BadRequestError("Error code: 400", response=response(400), body=OPENAI_PTL))
        assert not is_prompt_too_long(anthropic.BadRequestError("Error code: 400", response=response(400), body={"error": {"message": "bad"}}))

    def test_a_ptl_message_without_a_body(self) -> None:
        assert is_prompt_too_long(anthropic.BadRequestError("prompt is too long: 9000 tokens > 8000 maximum", response=response(400), body=None))

    @pytest.mark.parametrize("status", [429, 500, 503])
    def test_other_statuses_are_never_ptl_whatever_the_text(self, status: int) -> None:
        assert not is_prompt_too_long(openai.APIStatusError("Error code", response=response(status), body=OPENAI_PTL))
        assert not is_prompt_too_long(openai.RateLimitError("Error code: 429", response=response(429), body=OPENAI_TPM))

    def test_timeouts_and_connection_errors_are_not(self) -> None:
        request = response(400).request
        # A connection error whose text happens to match must still not be taken for the window.
        assert not is_prompt_too_long(anthropic.APIConnectionError(message="too many tokens in flight", request=request))
        assert not is_prompt_too_long(openai.APITimeoutError(request=request))


def test_deciding_never_imports_an_sdk() -> None:
    # The Compactor checks every recover() argument with it; an agent without the SDKs loaded must not pay for them.
    code = (
        "import sys\n"
        "from lab.core.ptl import is_prompt_too_long\n"
        "assert is_prompt_too_long(RuntimeError('prompt is too long'))\n"
        "assert not is_prompt_too_long(TimeoutError('timed out'))\n"
        "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
