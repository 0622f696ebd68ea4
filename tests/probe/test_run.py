"""A probe run end to end through the real SDKs against the fake provider: scripted answers and grades, known scores."""

from __future__ import annotations

import math
from statistics import mean
from typing import Any

import pytest

from lab.core.providers import ProviderSettings
from lab.errors import ConfigError
from lab.probe import DIMENSIONS, PROBE_KINDS, QUESTIONS, probe_score, run_probes
from lab.probe.judge import RUBRIC_MARKER
from lab.replayer import replay
from lab.testing.fake_provider import FakeProvider
from lab.testing.replies import Reply, grade_text
from tests.probe.sessions import GRADES, MODELS, answer, calc_transcript, script

K = 6  # the last request of calc_session: all four kinds have a reference


def settings(fake: FakeProvider, provider: str, model: str | None = None) -> ProviderSettings:
    return ProviderSettings(provider=provider, model=model or MODELS[provider], base_url=fake.base_url(provider), max_retries=0)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def report() -> Any:
    return replay(calc_transcript(), "lab")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
class TestScores:
    def test_per_type_and_per_dimension_equal_the_scripted_grades(self, fake_provider: FakeProvider, report: Any, provider: str) -> None:
        script(fake_provider)
        lines: list[str] = []
        out = run_probes(report, settings(fake_provider, provider), at=[K], tools=calc_transcript().tools, echo=lines.append)
        assert [p.status for p in out.probes] == ["graded"] * 4, [p.error for p in out.probes]
        for kind, g in GRADES.items():
            assert out.by_type[kind].dimensions == {d: float(v) for d, v in g.items()}
            assert out.by_type[kind].score == pytest.approx(mean(g.values()))
        for d in DIMENSIONS:
            assert out.by_dimension[d] == pytest.approx(mean(GRADES[k][d] for k in PROBE_KINDS))
        assert out.score == pytest.approx(mean(v for g in GRADES.values() for v in g.values()))
        assert [p.answer for p in out.probes] == [answer(k) for k in PROBE_KINDS]
        assert [p.rationale for p in out.probes] == [f"graded {k}" for k in PROBE_KINDS]
        assert out.graded == 4 and out.failed == out.skipped == 0 and out.calls == 8
        assert out.provider == provider and out.model == MODELS[provider]

    def test_requests_carry_the_compacted_context_and_the_answer_to_the_judge(self, fake_provider: FakeProvider, report: Any, provider: str) -> None:
        from lab.formats.export import to_anthropic, to_openai

        script(fake_provider)
        run_probes(report, settings(fake_provider, provider), at=[K])
        reqs = fake_provider.generation_requests
        assert len(reqs) == 8 and all(r.api == provider for r in reqs)
        asks, judges = reqs[0::2], reqs[1::2]
        context = (to_anthropic if provider == "anthropic" else to_openai)(report.context_at(K))
        for kind, req in zip(PROBE_KINDS, asks, strict=True):
            body = req.body
            assert body["model"] == MODELS[provider] and body["tool_choice"] in ({"type": "none"}, "none")
            sent = body["messages"]
            # The compacted context as exported, then the question (merged into the last user turn by Anthropic's rules).
            assert sent[: len(context["messages"]) - 1] == context["messages"][:-1]
            assert QUESTIONS[kind] in req.prompt_text() and RUBRIC_MARKER not in req.prompt_text()
        for kind, req in zip(PROBE_KINDS, judges, strict=True):
            assert RUBRIC_MARKER in req.prompt_text() and answer(kind) in req.prompt_text()
            assert "tools" not in req.body


class TestFailures:
    def test_malformed_grade_is_retried_then_reported_as_a_failure(self, fake_provider: FakeProvider, report: Any) -> None:
        script(fake_provider)
        # The first probe (recall): its answer, then three replies that are no grade.
        fake_provider.script(Reply.ok(answer("recall")), Reply.ok("I think it deserves a 4."), Reply.ok('{"accuracy": 9}'), Reply.ok("```json\n{oops\n```"))
        out = run_probes(report, settings(fake_provider, "openai"), at=[K], attempts=3)
        first = out.probes[0]
        assert first.status == "failed" and first.judge_attempts == 3 and first.answer == answer("recall")
        assert first.error is not None and first.error.startswith("malformed grade after 3 attempt(s)")
        assert [p.status for p in out.probes[1:]] == ["graded"] * 3, "the run goes on"
        assert "recall" in out.by_type and out.by_type["recall"].score is None and out.by_type["recall"].failed == 1
        assert out.score == pytest.approx(mean(v for k in PROBE_KINDS[1:] for v in GRADES[k].values()))
        assert len(fake_provider.generation_requests) == 4 + 6

    def test_a_grade_that_parses_on_the_retry_counts(self, fake_provider: FakeProvider, report: Any) -> None:
        script(fake_provider)
        fenced = "Here you go:\n```json\n" + grade_text(GRADES["recall"]) + "\n```"
        fake_provider.script(Reply.ok(answer("recall")), Reply.ok("not json at all"), Reply.ok(fenced))
        out = run_probes(report, settings(fake_provider, "anthropic"), at=[K])
        assert out.probes[0].status == "graded" and out.probes[0].judge_attempts == 2
        assert out.by_type["recall"].dimensions == {d: float(v) for d, v in GRADES["recall"].items()}

    def test_a_failed_call_fails_its_probe_only(self, fake_provider: FakeProvider, report: Any) -> None:
        script(fake_provider)
        fake_provider.script("auth")
        out = run_probes(report, settings(fake_provider, "anthropic"), at=[K])
        assert out.probes[0].status == "failed" and "authentication failed" in (out.probes[0].error or "")
        assert [p.status for p in out.probes[1:]] == ["graded"] * 3

    def test_unreachable_provider_fails_every_probe_without_raising(self, report: Any) -> None:
        dead = ProviderSettings(provider="openai", model="gpt-4.1-mini", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
        out = run_probes(report, dead, at=[K])
        assert out.failed == 4 and out.score is None and all("cannot reach" in (p.error or "") for p in out.probes)
        assert math.isnan(probe_score(report, dead, at=[K]))


class TestCost:
    def test_the_estimate_is_printed_before_the_first_call(self, fake_provider: FakeProvider, report: Any) -> None:
        script(fake_provider)
        seen: list[tuple[str, int]] = []
        run_probes(report, settings(fake_provider, "anthropic"), at=[K], echo=lambda line: seen.append((line, len(fake_provider.generation_requests))))
        assert seen and all(n == 0 for _, n in seen), "printed before anything was sent"
        text = "\n".join(line for line, _ in seen)
        assert "claude-sonnet-4-5: 8 requests (4 ask, 4 judge)" in text and "Claude Sonnet 4.5 prices" in text
        assert "estimate: total <= $" in text

    def test_estimate_is_tokens_times_the_price_table(self, fake_provider: FakeProvider, report: Any) -> None:
        from lab.replayer.prices import match_model

        script(fake_provider)
        out = run_probes(report, settings(fake_provider, "openai"), at=[K])
        row = match_model("gpt-4.1-mini")
        assert row is not None and out.estimated_cost is not None
        # Output is billed at its full budget: 4 answers of 1024 and 4 grades of 400 tokens at least.
        assert out.estimated_cost > 4 * (1024 + 400) * row.output / 1e6
        # Spent is billed from the fake's reported usage (1,200 in + 100 cached, 345 out per call).
        per_call = (1200 * row.input + 100 * row.cache_read + 345 * row.output) / 1e6
        assert out.spent == pytest.approx(8 * per_call)

    def test_max_cost_stops_the_run(self, fake_provider: FakeProvider, report: Any) -> None:
        script(fake_provider)
        # Sonnet: one call of the fake's usage costs ~$0.009; an answer's estimate ~$0.016, a grade's ~$0.01.
        out = run_probes(report, settings(fake_provider, "anthropic"), at=[K], max_cost=0.03)
        assert [p.status for p in out.probes] == ["graded", "skipped", "skipped", "skipped"]
        assert out.stopped is not None and out.stopped.startswith("stopped at the cost limit of $0.03")
        assert out.spent <= 0.03 and len(fake_provider.generation_requests) == 2 == out.calls
        assert out.by_type["recall"].score is not None and out.by_type["decision"].skipped == 1

    def test_zero_budget_sends_nothing(self, fake_provider: FakeProvider, report: Any) -> None:
        out = run_probes(report, settings(fake_provider, "openai"), at=[K], max_cost=0)
        assert out.skipped == 4 and fake_provider.generation_requests == []

    def test_a_limit_needs_a_priced_model(self, fake_provider: FakeProvider, report: Any) -> None:
        with pytest.raises(ConfigError, match="no price known for model 'qwen-local'"):
            run_probes(report, settings(fake_provider, "openai", "qwen-local"), at=[K], max_cost=1.0)
        assert fake_provider.generation_requests == []


class TestPoints:
    def test_several_points_and_negative_indices(self, fake_provider: FakeProvider, report: Any) -> None:
        script(fake_provider)
        out = run_probes(report, settings(fake_provider, "openai"), at=[2, -1, K])
        assert out.points == [2, K]
        # Before request 2 nothing was changed yet: no artifact probe there.
        assert [p.id for p in out.probes] == ["recall@2", "continuation@2", "decision@2"] + [f"{k}@{K}" for k in PROBE_KINDS]
        assert out.by_type["artifact"].probes == 1 and out.by_type["recall"].probes == 2

    def test_out_of_range(self, report: Any) -> None:
        dead = ProviderSettings(provider="openai", base_url="http://127.0.0.1:9/v1")
        with pytest.raises(ConfigError, match="out of range"):
            run_probes(report, dead, at=[99])

    def test_probe_score_is_the_overall_mean(self, fake_provider: FakeProvider, report: Any) -> None:
        script(fake_provider)
        assert probe_score(report, settings(fake_provider, "anthropic"), at=[K]) == pytest.approx(
            mean(v for g in GRADES.values() for v in g.values()))

    def test_report_round_trips_through_json(self, fake_provider: FakeProvider, report: Any, tmp_path: Any) -> None:
        from lab.probe import ProbeReport

        script(fake_provider)
        out = run_probes(report, settings(fake_provider, "openai"), at=[K])
        assert ProbeReport.read(out.write(tmp_path / "p.json")) == out
