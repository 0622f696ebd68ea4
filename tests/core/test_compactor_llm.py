"""The Compactor with a real SDK summarizer against the fake provider: the auto path,
the breaker, the manual and emergency paths, and PTL on the summary request itself."""

from __future__ import annotations

from lab.core.compactor import Compactor
from lab.core.config import CompactionConfig
from lab.core.messages import Message
from lab.core.presets import preset
from lab.core.summarizers.factory import build_summarizer
from lab.errors import PromptTooLongError
from lab.testing.fake_provider import FakeProvider, Reply
from tests.builders import assistant, call_and_result, session, user

SECRET = "sk-lab-test-never-leak-0001"


def _config(fake: FakeProvider, kind: str = "openai", window: int = 6_000) -> CompactionConfig:
    cfg = preset("mewcode")
    return cfg.model_copy(update={
        "window": window,
        "watermark": cfg.watermark.model_copy(update={"min_window": 0, "summary_reserve": 500, "safety_margin": 500}),
        "summary": cfg.summary.model_copy(
            update={"summarizer": kind, "llm_model": "fake-model", "llm_base_url": fake.base_url(kind), "session_memory": False, "tail_min_tokens": 200, "attachment_files": 1, "attachment_file_tokens": 300}
        ),
        "spill": cfg.spill.model_copy(update={"enabled": False}),
    })


def _compactor(fake: FakeProvider, kind: str = "openai", window: int = 6_000) -> Compactor:
    cfg = _config(fake, kind, window)
    summarizer = build_summarizer(cfg, api_key=SECRET)
    # Fast retries: the SDK's own retry loop, bounded, against a loopback server.
    inner = summarizer.inner  # type: ignore[attr-defined]
    inner.settings = inner.settings.model_copy(update={"max_retries": 1, "timeout": 5.0})
    return Compactor(cfg, summarizer=summarizer)


def _history() -> list[Message]:
    """Four user turns, each followed by large reads, so the PTL retry has groups to drop."""
    msgs = session(n_reads=2, size=3000)[:-1]
    for turn in range(3):
        msgs.append(user(f"Now check module {turn}"))
        for i in range(2):
            msgs += call_and_result("Read", f"code {turn}.{i}\n" * 400, file_path=f"src/m{turn}_{i}.py")
    msgs.append(assistant("All checked."))
    return msgs


def _summary_text(messages: list[Message]) -> str:
    return "\n".join(b.text for m in messages if m.tag == "summary" for b in m.content if b.type == "text")


class TestAutoPath:
    def test_llm_summary_replaces_history_and_is_recorded(self, fake_provider: FakeProvider) -> None:
        fake_provider.script(Reply.ok("<analysis>scratch</analysis><summary>1. Primary request: fix the test</summary>"))
        out = _compactor(fake_provider).process_request(_history())
        assert out.success and out.tokens_after < out.tokens_before
        assert "Primary request: fix the test" in _summary_text(out.messages)
        assert "scratch" not in _summary_text(out.messages)
        body = fake_provider.generation_requests[-1].body
        assert "tools" not in body
        assert SECRET not in repr(out) and SECRET not in str([e.to_dict() for e in out.events])

    def test_breaker_opens_after_three_auto_failures_and_manual_still_works(self, fake_provider: FakeProvider) -> None:
        fake_provider.default = Reply.of("500")
        compactor = _compactor(fake_provider)
        for _ in range(3):
            out = compactor.process_request(_history())
            assert not any(e.stage == "summary" and e.success for e in out.events)
        assert compactor.breaker.failures >= 3
        calls = len(fake_provider.generation_requests)
        compactor.process_request(_history())
        assert len(fake_provider.generation_requests) == calls, "auto path must stay off once the breaker is open"
        fake_provider.default = Reply.of("ok")
        manual = compactor.compact(_history(), instructions="keep API decisions")
        assert manual.success
        assert "keep API decisions" in fake_provider.generation_requests[-1].prompt_text()


class TestPromptTooLong:
    def test_summary_request_too_long_is_retried_with_fewer_groups(self, fake_provider: FakeProvider) -> None:
        fake_provider.script(Reply.ptl(), Reply.ptl(), Reply.ok("<summary>short</summary>"))
        out = _compactor(fake_provider, kind="anthropic").process_request(_history())
        assert out.success
        prompts = [r.prompt_text() for r in fake_provider.generation_requests]
        assert len(prompts) == 3 and len(prompts[2]) < len(prompts[0])

    def test_emergency_path_after_provider_rejects_the_request(self, fake_provider: FakeProvider) -> None:
        compactor = _compactor(fake_provider, window=8_000)
        error = PromptTooLongError(
            "prompt is too long: 9000 tokens > 8000 maximum",
            body={"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 9000 tokens > 8000 maximum"}},
        )
        out = compactor.recover(_history(), error)
        assert out.success
        assert out.tokens_after < 8_000 - 3_000
        assert compactor.state.anchor is None
        assert fake_provider.generation_requests, "the emergency path runs the LLM summary"
