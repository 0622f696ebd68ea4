"""The replay engine: request points, rows, compaction, overflow and recovery, the clock, contexts."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.config import CompactionConfig
from lab.core.messages import Transcript, TranscriptMeta, Usage
from lab.core.presets import PRESETS, preset
from lab.core.summarizers.base import SummaryRequest, SummaryResult
from lab.errors import ConfigError, PromptTooLongError, TranscriptError
from lab.replayer import EPOCH, prompt_too_long_error, replay, request_points
from lab.core.config import with_value, with_values
from tests.builders import assistant, call_and_result, session, system, user


def summarising(window: int = 8000) -> CompactionConfig:
    """MiniCode with a small window and a tail small enough that the auto summary has work to do."""
    return with_values(preset("minicode"), {"window": window, "summary.tail_min_tokens": 500, "summary.tail_max_tokens": 2000,
                                            "summary.tail_min_messages": 2, "summary.session_memory": False})


def growing(window: int = 4000, *, recovery: bool = True) -> CompactionConfig:
    """Nothing compacts before a request, so the history overflows the window and recovery must act."""
    return with_values(preset("minicode"), {"window": window, "spill.enabled": False, "dedup.enabled": False, "microcompact.enabled": False,
                                            "watermark.enabled": False, "recovery.enabled": recovery})


class TestRequestPoints:
    def test_every_assistant_after_a_non_assistant(self) -> None:
        msgs = [system(), user("hi"), assistant("a"), assistant("b"), user("more"), assistant("c")]
        assert request_points(msgs) == [2, 5]

    def test_one_row_per_request_point(self) -> None:
        msgs = session(6, 1000)
        report = replay(msgs, "minicode")
        assert report.requests == len(report.rows) == len(request_points(msgs)) == 7
        assert [r.message_index for r in report.rows] == request_points(msgs)
        assert [r.index for r in report.rows] == list(range(7))

    def test_consecutive_assistant_messages_are_one_response(self) -> None:
        msgs = [system(), user("hi"), assistant("a" * 400), assistant("b" * 400), user("more"), assistant("c")]
        report = replay(msgs, "minicode")
        assert report.requests == 2
        # Both assistant messages are the first response's output, and both are in the next context.
        assert report.rows[0].output_tokens == 2 * (100 + 4)
        assert [m.id for m in report.context_at(1)] == [m.id for m in msgs[:5]]

    @pytest.mark.parametrize("msgs", [[], [system(), user("only a question")]], ids=["empty", "no-assistant"])
    def test_no_request_points_is_an_empty_report(self, msgs: list) -> None:
        report = replay(Transcript(messages=msgs), "mewcode")
        assert report.rows == [] and report.requests == 0 and report.peak_sent == 0
        assert report.total_cost == 0.0 and report.df.empty
        assert report.final_context() == msgs


class TestRows:
    def test_raw_at_least_sent_once_compaction_frees_tokens(self) -> None:
        report = replay(session(20, 2000), summarising())
        freed = [r for r in report.rows if r.freed_by_stage]
        assert freed, "the small window must make the pipeline compact"
        assert all(r.sent_tokens <= r.raw_tokens for r in freed)
        # The raw history only grows, request by request.
        raws = [r.raw_tokens for r in report.rows]
        assert raws == sorted(raws) and len(set(raws)) == len(raws)

    def test_boundary_flag_and_events_on_the_summary_row(self) -> None:
        report = replay(session(20, 2000), summarising())
        placed = [r for r in report.rows if r.boundary_placed]
        assert len(placed) == 1
        row = placed[0]
        stages = [(e["stage"], e["strategy"], e["success"]) for e in row.events]
        assert ("summary", "full", True) in stages and ("watermark", "threshold", True) in stages
        assert row.freed_by_stage["summary"] == row.tokens_before - row.sent_tokens
        assert report.compactions_by_strategy == {"full": 1}
        assert all(not r.events for r in report.rows if r.index != row.index)

    def test_spill_event_lands_on_the_row_where_the_big_result_arrived(self) -> None:
        msgs = [system(), user("look at the logs")]
        msgs += call_and_result("Bash", "x" * 100 + "\n", command="ls")
        msgs += call_and_result("Bash", "log line\n" * 1000, command="cat big.log")
        msgs.append(assistant("done"))
        report = replay(msgs, "minicode")
        spill_rows = [r.index for r in report.rows if any(e["stage"] == "spill" for e in r.events)]
        assert spill_rows == [2]
        assert report.compactions_by_strategy == {"tool_budget": 1}
        assert report.rows[2].composition["stubs"] > 0 and report.rows[2].composition["tool_output"] < 100

    def test_validity_and_first_request_per_row(self) -> None:
        report = replay(session(20, 2000), summarising())
        assert report.invalid_requests == 0
        assert all(r.valid_anthropic and r.valid_openai and not r.problems for r in report.rows)
        assert all(r.first_request_kept for r in report.rows)
        assert report.first_request_kept is True

    def test_the_transcript_is_not_mutated(self) -> None:
        t = Transcript(messages=session(20, 2000))
        before = copy.deepcopy(t)
        replay(t, summarising())
        assert t == before

    def test_replays_are_deterministic(self) -> None:
        msgs = session(20, 2000)
        assert replay(msgs, summarising()).to_dict() == replay(msgs, summarising()).to_dict()

    def test_progress_is_called_once_per_request(self) -> None:
        seen: list[tuple[int, int]] = []
        replay(session(3, 500), "minicode", progress=lambda k, n: seen.append((k, n)))
        assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


class TestOverflow:
    def test_overflow_is_answered_with_prompt_too_long_and_recovered(self) -> None:
        report = replay(session(12, 2000), growing())
        over = [r for r in report.rows if r.overflowed]
        assert over and all(r.recovered and not r.failed for r in over)
        assert all(r.recover_calls >= 1 and r.sent_tokens <= 4000 for r in over)
        assert all(any(e["trigger"] in ("reactive", "emergency") for e in r.events) for r in over)
        assert report.overflows == report.recoveries == len(over) and report.failures == 0
        assert report.invalid_requests == 0

    def test_unrecoverable_requests_keep_their_row_and_the_replay_goes_on(self) -> None:
        msgs = session(12, 2000)
        report = replay(msgs, growing(recovery=False))
        failed = [r for r in report.rows if r.failed]
        assert failed and report.failures == len(failed) and report.requests == len(request_points(msgs))
        for r in failed:
            assert r.overflowed and not r.recovered and r.sent_tokens > 4000
            assert r.cost == 0.0 and r.cached_tokens == r.cache_write_tokens == 0
            assert r.events[-1]["stage"] == "recovery" and not r.events[-1]["success"]
        # The context goes on uncompacted: each failed request sends the whole raw history.
        assert all(r.sent_tokens == r.raw_tokens for r in failed)

    def test_the_provider_error_has_anthropics_shape(self) -> None:
        err = prompt_too_long_error(5000, 4000)
        assert isinstance(err, PromptTooLongError) and err.provider == "anthropic"
        assert err.body == {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 5000 tokens > 4000 maximum"}}


class TestClock:
    def _timed(self) -> list:
        msgs = [system(), user("start", at=1_000.0)]
        msgs += call_and_result("Read", "a\n", file_path="a.py", at=1_010.0)
        msgs += call_and_result("Read", "b\n", file_path="b.py", at=2_000.0)
        msgs.append(assistant("done", at=2_005.0))
        return msgs

    def test_timestamps_when_present(self) -> None:
        report = replay(self._timed(), "minicode")
        assert report.clock == "timestamps"
        # The request goes out when its newest message arrived.
        assert [r.time for r in report.rows] == [1_000.0, 1_010.0, 2_000.0]

    def test_simulated_clock_when_asked(self) -> None:
        report = replay(self._timed(), "minicode", settings={"use_timestamps": False, "seconds_per_request": 45})
        assert report.clock == "simulated"
        assert [r.time for r in report.rows] == [EPOCH, EPOCH + 45, EPOCH + 90]

    def test_simulated_clock_without_timestamps(self) -> None:
        report = replay(session(2, 100), "minicode")
        assert report.clock == "simulated" and report.rows[1].time == EPOCH + 30


class TestContexts:
    def test_context_and_raw_at_each_request(self) -> None:
        msgs = session(20, 2000)
        report = replay(msgs, summarising())
        for k, row in enumerate(report.rows):
            assert report.raw_at(k) == msgs[: row.message_index]
            sent = report.context_at(k)
            assert len(sent) == row.sent_messages
            assert all(m.boundary is None for m in sent)
        boundary_row = next(r.index for r in report.rows if r.boundary_placed)
        assert any(m.boundary is not None for m in report.context_at(boundary_row, include_boundaries=True))

    def test_contexts_share_message_objects(self) -> None:
        report = replay(session(5, 500), "mewcode")
        first, second = report.context_at(1), report.context_at(2)
        # The later context is longer; the messages both hold are the same objects.
        assert all(a is b for a, b in zip(first, second, strict=False))

    def test_out_of_range_is_a_lab_error(self) -> None:
        from lab.errors import LabError

        report = replay(session(2, 100), "minicode")
        with pytest.raises(LabError, match="out of range"):
            report.context_at(7)


class _UsageSummarizer:
    name = "llm-fake"

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        return SummaryResult(text="A short summary.", strategy="llm", usage=Usage(input_tokens=1000, output_tokens=200), model="fake")


class TestSummaries:
    def test_summary_calls_usage_and_cost_are_recorded(self) -> None:
        fake = _UsageSummarizer()
        report = replay(session(20, 2000), summarising(), summarizer=fake)
        rows = [r for r in report.rows if r.summary_calls]
        assert rows and fake.calls == report.summary_calls == sum(r.summary_calls for r in rows)
        for row in rows:
            n = row.summary_calls
            assert (row.summary_input_tokens, row.summary_output_tokens) == (1000 * n, 200 * n)
            # Default prices: $3 / M input, $15 / M output.
            assert row.summary_cost == pytest.approx(n * (1000 * 3 + 200 * 15) / 1e6)
            assert row.cost >= row.summary_cost
        assert report.summary_cost == pytest.approx(fake.calls * (1000 * 3 + 200 * 15) / 1e6)

    def test_an_llm_config_without_a_summarizer_falls_back_to_rules(self) -> None:
        c = with_value(summarising(), "summary.summarizer", "anthropic")
        report = replay(session(20, 2000), c)
        assert report.summary_calls == 1 and report.compactions_by_strategy == {"full": 1}
        assert any("rule-based" in n for n in report.notes)


class TestInputs:
    def test_config_by_preset_mapping_or_default(self) -> None:
        msgs = session(2, 100)
        assert replay(msgs, "codex").label == "codex"
        assert replay(msgs, {"label": "mine", "window": 50_000}).window == 50_000
        assert replay(msgs).label == "custom"
        assert replay(msgs, "mewcode", window=32_000).window == 32_000

    def test_the_callers_config_is_left_alone(self) -> None:
        c = preset("mewcode")
        replay(session(2, 100), c, window=40_000)
        assert c.window == 200_000

    @pytest.mark.parametrize("config, window", [("nope", None), (42, None), ("minicode", 10)], ids=["unknown-preset", "wrong-type", "window-too-small"])
    def test_bad_config_is_a_config_error(self, config: object, window: int | None) -> None:
        with pytest.raises(ConfigError):
            replay(session(2, 100), config, window=window)  # type: ignore[arg-type]

    def test_bad_transcript_is_a_transcript_error(self, tmp_path) -> None:
        with pytest.raises(TranscriptError):
            replay(42)  # type: ignore[arg-type]
        with pytest.raises(TranscriptError):
            replay(tmp_path / "missing.jsonl")

    def test_bad_anchor_mode(self) -> None:
        with pytest.raises(ConfigError, match="anchor"):
            replay(session(2, 100), anchor="guess")  # type: ignore[arg-type]

    def test_meta_and_planted_facts_reach_the_report(self) -> None:
        t = Transcript(messages=session(2, 100), meta=TranscriptMeta(session_id="s1", planted_facts=["line 0"]))
        report = replay(t, "minicode")
        assert report.meta["session_id"] == "s1" and report.meta["messages"] == len(t.messages)
        assert report.retention.parts["planted_facts"].total == 1


class TestInvariants:
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        seed=st.integers(0, 2**16),
        requests=st.integers(1, 25),
        typical=st.sampled_from([300, 3_000, 9_000]),
        name=st.sampled_from(list(PRESETS)),
        window=st.sampled_from([8_000, 16_000, 200_000]),
    )
    def test_rows_add_up(self, seed: int, requests: int, typical: int, name: str, window: int) -> None:
        from lab.generator import GeneratorConfig, generate

        t = generate(GeneratorConfig(seed=seed, requests=requests, typical_output_chars=typical, max_output_chars=40_000,
                                     long_pause_rate=0.2, user_turns=min(3, requests - 1)))
        report = replay(t, name, window=window)
        assert report.requests == len(request_points(t.messages))
        for row in report.rows:
            if row.failed:
                assert row.cost == 0.0
                continue
            assert row.cached_tokens + row.cache_write_tokens + row.uncached_tokens == row.sent_tokens
            assert row.sent_tokens <= window and row.cost > 0
            assert sum(row.composition.values()) == row.sent_tokens
        times = [r.time for r in report.rows]
        assert times == sorted(times)
        assert report.invalid_requests == 0


class TestSessionWorkingDirectory:
    @staticmethod
    def _transcript(cwd: str | None) -> Transcript:
        body = "def f():\n    return 1\n" * 100  # under the spill threshold: a source dedup can point at
        msgs = [system(), user("read it twice"), *call_and_result("Read", body, tool_id="r1", file_path="/repo/app.py")]
        msgs += [*call_and_result("Bash", body, tool_id="c1", command="cat app.py"), assistant("done")]
        return Transcript(meta=TranscriptMeta(cwd=cwd), messages=msgs)

    @staticmethod
    def _deduped(report: object) -> bool:
        return any(e["stage"] == "dedup" and e["success"] and e["tokens_freed"] > 0 for r in report.rows for e in r.events)  # type: ignore[attr-defined]

    def test_the_recorded_cwd_resolves_relative_reads_when_the_config_names_none(self) -> None:
        report = replay(self._transcript("/repo"), "minicode", window=200_000)
        assert report.config["dedup"]["cwd"] == "/repo"
        assert any("working directory /repo" in n for n in report.notes)
        assert self._deduped(report)

    def test_the_config_wins_and_odd_directories_are_ignored(self) -> None:
        cfg = preset("minicode")
        cfg = cfg.model_copy(update={"dedup": cfg.dedup.model_copy(update={"cwd": "/elsewhere"})})
        assert replay(self._transcript("/repo"), cfg).config["dedup"]["cwd"] == "/elsewhere"
        for odd in (None, "C:\\repo", "relative/dir"):
            report = replay(self._transcript(odd), "minicode")
            assert report.config["dedup"]["cwd"] is None and not any("working directory" in n for n in report.notes)
            assert not self._deduped(report)
