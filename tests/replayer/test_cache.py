"""The prompt-cache and cost model: exact numbers by hand, block granularity, TTL, and ledger vs clearing."""

from __future__ import annotations

import pytest

from lab.core.messages import Message, TextBlock, ToolResultBlock
from lab.replayer.settings import CacheConfig, PricingConfig, ReplaySettings
from lab.core.tokens import MiniCodeCounter
from lab.replayer import PromptCache, replay, request_cost
from lab.replayer.cache import CacheStep
from lab.core.config import with_value
from tests.builders import assistant, session, system, user


def _msg(role: str, *texts: str, mid: str = "m") -> Message:
    return Message(role=role, content=tuple(TextBlock(text=t) for t in texts), id=mid)  # type: ignore[arg-type]


class TestHandBuiltThreeRequests:
    """system 4000 chars = 1004 tokens, user/assistant 400 chars = 104, later users 800 chars = 204 (MiniCode: chars/4 + 4)."""

    def _transcript(self) -> list[Message]:
        return [
            system("S" * 4000),
            user("U" * 400, at=1_000),
            assistant("A" * 400, at=1_005),
            user("V" * 800, at=1_060),
            assistant("B" * 400, at=1_065),
            # 440 s after the previous request: past the 5-minute TTL.
            user("W" * 800, at=1_500),
            assistant("C" * 400, at=1_505),
        ]

    def test_tokens_per_request(self) -> None:
        report = replay(self._transcript(), "minicode")
        got = [(r.sent_tokens, r.cached_tokens, r.cache_write_tokens, r.uncached_tokens, r.output_tokens, r.cache_expired) for r in report.rows]
        assert got == [
            (1108, 0, 1108, 0, 104, True),  # first request: nothing to read, the whole prompt is written
            (1416, 1108, 308, 0, 104, False),  # the whole previous prompt is read back, the new tail written
            (1724, 0, 1724, 0, 104, True),  # the entry expired: everything is written again
        ]

    def test_cost_per_request_and_totals(self) -> None:
        report = replay(self._transcript(), "minicode")
        # $3 input, $15 output, $3.75 cache write, $0.30 cache read per million tokens.
        expected = [
            (1108 * 3.75 + 104 * 15) / 1e6,
            (1108 * 0.30 + 308 * 3.75 + 104 * 15) / 1e6,
            (1724 * 3.75 + 104 * 15) / 1e6,
        ]
        assert [r.cost for r in report.rows] == pytest.approx(expected)
        assert report.total_cost == pytest.approx(sum(expected))
        assert report.cache_hit_ratio == pytest.approx(1108 / (1108 + 1416 + 1724))
        assert [r.cache_hit_ratio for r in report.rows] == pytest.approx([0.0, 1108 / 1416, 0.0])
        # Nothing was compacted, so the uncompacted side is the same requests.
        assert [r.cost_uncompacted for r in report.rows] == pytest.approx(expected)
        assert report.cache_hit_ratio_uncompacted == pytest.approx(report.cache_hit_ratio)

    def test_a_one_hour_ttl_keeps_the_third_request_warm(self) -> None:
        s = with_value(ReplaySettings(), "cache.ttl_seconds", 3600)
        row = replay(self._transcript(), "minicode", settings=s).rows[2]
        assert (row.cached_tokens, row.cache_write_tokens) == (1416, 308)

    def test_no_cache_means_everything_is_uncached(self) -> None:
        report = replay(self._transcript(), "minicode", settings={"cache": {"enabled": False}})
        assert all(r.cached_tokens == r.cache_write_tokens == 0 and r.uncached_tokens == r.sent_tokens for r in report.rows)
        assert report.rows[0].cost == pytest.approx((1108 * 3 + 104 * 15) / 1e6)


class TestPromptCache:
    def _cache(self, **kw: object) -> PromptCache:
        return PromptCache(CacheConfig(**kw), MiniCodeCounter())  # type: ignore[arg-type]

    def test_prefix_is_block_granular(self) -> None:
        cache = self._cache(min_cacheable_tokens=0)
        head = _msg("system", "S" * 400, mid="s")
        cache.step([head, _msg("user", "a" * 400, "b" * 400, mid="u")], 0.0)
        step = cache.step([head, _msg("user", "a" * 400, "c" * 400, mid="u2")], 10.0)
        # system (100 + 4) + the first user block (100, plus the message overhead 4 it carries).
        assert step.shared == step.cached == 104 + 104
        assert step.written == step.sent - step.cached == 100

    def test_only_wire_text_matters(self) -> None:
        cache = self._cache(min_cacheable_tokens=0)
        plain = Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content="x" * 400),), id="r1")
        flagged = Message(role="user", content=(ToolResultBlock(tool_use_id="t1", content="x" * 400, original_chars=400),), id="r1-copy")
        cache.step([_msg("user", "hi", mid="u"), plain], 0.0)
        step = cache.step([_msg("user", "hi", mid="u"), flagged], 1.0)
        assert step.cached == step.sent

    def test_short_prompts_are_neither_written_nor_read(self) -> None:
        cache = self._cache(min_cacheable_tokens=1024)
        small = [_msg("user", "x" * 400, mid="u")]
        first = cache.step(small, 0.0)
        second = cache.step(small, 1.0)
        assert (first.written, second.cached, second.uncached) == (0, 0, second.sent)

    def test_append_only_fast_path_matches_the_general_walk(self) -> None:
        msgs = session(5, 4000)
        general, fast = self._cache(), self._cache()
        counter = MiniCodeCounter()
        for k, n in enumerate((3, 5, 7, 9)):
            a = general.step(msgs[:n], 30.0 * k)
            b = fast.step_append(counter.count_messages(msgs[:n]), 30.0 * k)
            assert a == b

    def test_request_cost_formula(self) -> None:
        step = CacheStep(sent=1000, cached=600, written=300, uncached=100, expired=False, shared=600)
        pricing = PricingConfig(input_per_mtok=1, output_per_mtok=10, cache_write_per_mtok=2, cache_read_per_mtok=0.5)
        assert request_cost(step, 50, pricing) == pytest.approx((100 * 1 + 300 * 2 + 600 * 0.5 + 50 * 10) / 1e6)


class TestLedgerVersusClearing:
    """MewCode's frozen decisions keep the prefix byte-stable; MiniCode's time-based clearing rewrites it."""

    @pytest.fixture(scope="class")
    def reports(self) -> dict:
        # 130 reads, 30 s apart (simulated clock), well inside the 5-minute TTL; small enough never to spill or summarise.
        msgs = session(130, 2000)
        return {name: replay(msgs, name) for name in ("mewcode", "minicode")}

    def test_mewcode_prefix_grows_monotonically(self, reports: dict) -> None:
        rows = reports["mewcode"].rows
        assert not any(r.events for r in rows)
        cached = [r.cached_tokens for r in rows]
        assert cached == sorted(cached)
        # Every request reads back the whole previous prompt once that prompt was cacheable.
        for prev, row in zip(rows, rows[1:], strict=False):
            if prev.sent_tokens >= 1024:
                assert row.cached_tokens == prev.sent_tokens
        assert reports["mewcode"].cache_hit_ratio > 0.9

    def test_minicode_clearing_is_a_cache_miss(self, reports: dict) -> None:
        rows = reports["minicode"].rows
        cleared = [r for r in rows if any(e["stage"] == "microcompact" and e["success"] for e in r.events)]
        # The interval is 3600 s; at 30 s a request the first run is request 120.
        assert [r.index for r in cleared] == [120]
        row, prev = cleared[0], rows[cleared[0].index - 1]
        assert row.cached_tokens < prev.sent_tokens / 10
        assert row.cache_write_tokens > row.sent_tokens / 2
        assert reports["minicode"].cache_hit_ratio < reports["mewcode"].cache_hit_ratio
