"""lab.bench.tokens: rows, table and the held-out rows (what is measured, not how fast this machine is)."""

from __future__ import annotations

import pytest

from lab.bench.tokens import (
    BENCH_COUNTERS,
    bench_counters,
    bench_counters_paths,
    calibration_texts,
    format_table,
    held_out_summary,
    transcript_texts,
)
from lab.core.messages import Transcript, TranscriptMeta
from lab.errors import LabError
from tests.builders import session, user
from tests.conftest import corpus_path

SMALL_FILES = ("codex/codex-rollout-sample.jsonl", "openai-chat/swe-agent-pydicom-1458.traj")
SMALL = [corpus_path(p) for p in SMALL_FILES]


def _transcript(title: str) -> Transcript:
    return Transcript(meta=TranscriptMeta(title=title), messages=[*session(3, 2000), user("总结一下改动。")])


class TestRows:
    @pytest.fixture(scope="class")
    def rows(self) -> list[dict]:
        return bench_counters([_transcript("one"), _transcript("two")])

    def test_one_row_per_transcript_and_counter(self, rows: list[dict]) -> None:
        assert [(r["transcript"], r["counter"]) for r in rows] == [(t, c) for t in ("one", "two") for c in BENCH_COUNTERS]

    def test_reference_has_no_error_and_others_are_measured_against_it(self, rows: list[dict]) -> None:
        for r in rows:
            assert r["o200k_tokens"] > 0 and r["bytes"] > 0 and r["seconds"] >= 0
            if r["counter"] == "o200k":
                assert r["total_error"] == 0 and r["message_mean_abs_error"] == 0 and r["tokens"] == r["o200k_tokens"]
            else:
                assert r["total_error"] == pytest.approx((r["tokens"] - r["o200k_tokens"]) / r["o200k_tokens"])

    def test_block_texts_include_tool_calls_and_results(self) -> None:
        texts = transcript_texts(_transcript("x"))
        assert any(t.startswith("Read ") for t in texts) and any(t.startswith("line 0") for t in texts)

    def test_anthropic_is_refused(self) -> None:
        with pytest.raises(LabError, match="offline"):
            bench_counters([_transcript("x")], counters=("anthropic",))

    def test_table_lists_every_counter_with_a_summary(self, rows: list[dict]) -> None:
        table = format_table(rows)
        assert "summary per counter" in table
        for name in BENCH_COUNTERS:
            assert f"  {name} " in table
        assert "x o200k" in table


@pytest.mark.corpus(*SMALL_FILES)
class TestPaths:
    def test_paths_are_loaded_and_get_held_out_rows(self) -> None:
        rows = bench_counters_paths(SMALL, counters=("calibrated", "o200k"))
        sessions = [r for r in rows if r["counter"] == "calibrated (session held out)"]
        assert [r["transcript"] for r in sessions] == [p.name for p in SMALL]
        assert all(abs(r["total_error"]) < 0.2 for r in sessions)
        kinds = [r for r in rows if r["counter"] == "calibrated (kind held out)"]
        assert {"[base64]", "[chinese]", "[mcp_schema]", "[hexdump]"} <= {r["transcript"] for r in kinds}
        assert any(r["counter"] == "calibrated (unseen text)" for r in rows)
        table = format_table(rows)
        assert "sessions held out (leave-one-session-out" in table and "target <= 3%" in table
        assert "x tiktoken o200k in this run" in table

    def test_summary_says_met_or_missed_from_the_rows(self) -> None:
        def row(counter: str, err: float, seconds: float | None = None) -> dict:
            return {"transcript": "t", "counter": counter, "total_error": err, "seconds": seconds, "bytes": 1000}

        good = held_out_summary([row("calibrated (session held out)", 0.02), row("calibrated", 0.01, 1.0), row("o200k", 0.0, 6.0)])
        assert any("target <= 3%: met" in line for line in good) and any("6.0x" in line and "met" in line for line in good)
        bad = held_out_summary([row("calibrated (session held out)", -0.05), row("calibrated", 0.01, 1.0), row("o200k", 0.0, 4.0)])
        assert sum("MISSED" in line for line in bad) == 2
        assert held_out_summary([row("minicode", 0.1)]) == []

    def test_calibration_texts_add_the_transcripts_to_the_fixed_set(self) -> None:
        fixed = calibration_texts([])
        both = calibration_texts(SMALL[:1])
        assert len(both) > len(fixed)
        assert any("\u4e00" <= ch <= "\u9fff" for t in fixed for ch in t[:200])
