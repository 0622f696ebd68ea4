"""The seeded session generator: config, determinism, knobs, validity, planted facts, bulk JSONL."""

from __future__ import annotations

import json
import re
import statistics
import time
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lab.generator as gen
from lab.core.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Transcript, message_text
from lab.errors import ConfigError
from lab.generator import GeneratorConfig, generate, generate_jsonl_bytes, parse_generator_config, write_samples
from lab.generator.samples import BULK_SAMPLE, SAMPLE_CONFIGS, main
from lab.generator.session import estimate_tokens
from tests.conftest import SAMPLES

CJK = re.compile(r"[\u4e00-\u9fff]")
ERROR_STARTS = ("Error:", "<tool_use_error>", "Traceback (most recent call last):", "Exit code ")


def results(t: Transcript) -> list[ToolResultBlock]:
    return [b for m in t.messages for b in m.content if isinstance(b, ToolResultBlock)]


def uses(t: Transcript) -> list[ToolUseBlock]:
    return [b for m in t.messages for b in m.content if isinstance(b, ToolUseBlock)]


def calls_with_results(t: Transcript) -> list[tuple[ToolUseBlock, ToolResultBlock]]:
    by_id = {r.tool_use_id: r for r in results(t)}
    return [(u, by_id[u.id]) for u in uses(t)]


def assert_valid(t: Transcript, requests: int) -> None:
    msgs = t.messages
    assert msgs[0].role == "system"
    assert msgs[1].role == "user" and all(isinstance(b, TextBlock) for b in msgs[1].content), "the first message after the system prompt is the task request"
    # After the system prompt roles alternate strictly, starting with the user and ending with the answer.
    assert [m.role for m in msgs[1:]] == ["user", "assistant"] * requests
    assert sum(m.role == "assistant" for m in msgs) == requests
    assert not any(isinstance(b, ToolUseBlock) for b in msgs[-1].content)
    ids = [u.id for u in uses(t)]
    assert len(ids) == len(set(ids)), "tool_use ids are unique"
    assert len({m.id for m in msgs}) == len(msgs), "message ids are unique"
    for i, m in enumerate(msgs):
        called = [b.id for b in m.content if isinstance(b, ToolUseBlock)]
        answered = [b.tool_use_id for b in m.content if isinstance(b, ToolResultBlock)]
        if called:
            nxt = msgs[i + 1]
            assert [b.tool_use_id for b in nxt.content if isinstance(b, ToolResultBlock)] == called, "answered in the very next message"
            assert all(isinstance(b, ToolResultBlock) for b in nxt.content)
        if answered:
            prev = msgs[i - 1]
            assert answered == [b.id for b in prev.content if isinstance(b, ToolUseBlock)]
    stamps = [m.timestamp for m in msgs]
    assert all(s is not None and s.tzinfo is not None for s in stamps)
    assert stamps == sorted(stamps)
    # Usage: simulated, but every term adds up to the prompt, which grows with the context.
    prompts = []
    for i, m in enumerate(msgs):
        if m.role == "assistant":
            assert m.usage is not None and m.usage.output_tokens > 0
            prompt = m.usage.input_tokens + m.usage.cache_read_tokens + m.usage.cache_write_tokens
            assert prompt > sum(estimate_tokens(x) for x in msgs[:i])
            prompts.append(prompt)
        else:
            assert m.usage is None
    assert prompts == sorted(prompts) and len(set(prompts)) == len(prompts)


class TestConfig:
    def test_defaults_are_valid(self) -> None:
        cfg = GeneratorConfig()
        assert cfg.requests == 40 and cfg.start.tzinfo is not None

    @pytest.mark.parametrize(
        ("knobs", "field"),
        [
            ({"requests": 0}, "requests"),
            ({"requests": 10_001}, "requests"),
            ({"error_rate": 1.5}, "error_rate"),
            ({"cjk_share": -0.1}, "cjk_share"),
            ({"colour": "red"}, "colour"),
        ],
        ids=["requests-0", "requests-too-many", "error-rate-above-1", "negative-cjk", "unknown-key"],
    )
    def test_bad_knob_names_the_field(self, knobs: dict, field: str) -> None:
        with pytest.raises(ConfigError, match=field):
            parse_generator_config(knobs)

    def test_all_weights_zero_is_refused(self) -> None:
        zero = dict.fromkeys(("read_weight", "grep_weight", "bash_weight", "edit_weight", "list_weight"), 0)
        with pytest.raises(ConfigError, match="tool weight"):
            parse_generator_config(zero)

    def test_typical_above_max_is_refused(self) -> None:
        with pytest.raises(ConfigError, match="typical_output_chars"):
            parse_generator_config({"typical_output_chars": 5000, "max_output_chars": 1000})

    def test_not_a_mapping(self) -> None:
        with pytest.raises(ConfigError, match="mapping"):
            parse_generator_config([1, 2])  # type: ignore[arg-type]

    def test_naive_start_becomes_utc(self) -> None:
        cfg = GeneratorConfig(start=datetime(2025, 1, 1, 8, 0))
        assert cfg.start.utcoffset() is not None and cfg.start.hour == 8

    def test_every_field_has_a_description(self) -> None:
        # The app builds its widgets from these.
        assert all(f.description for f in GeneratorConfig.model_fields.values())


class TestDeterminism:
    def test_same_seed_byte_identical(self) -> None:
        a = generate(GeneratorConfig(seed=7, requests=60, cjk_share=0.3))
        b = generate(GeneratorConfig(seed=7, requests=60, cjk_share=0.3))
        assert a.model_dump_json() == b.model_dump_json()

    def test_different_seeds_differ(self) -> None:
        a, b = generate(seed=1, requests=20), generate(seed=2, requests=20)
        assert [message_text(m) for m in a.messages] != [message_text(m) for m in b.messages]
        assert {u.id for u in uses(a)}.isdisjoint({u.id for u in uses(b)})

    def test_mapping_and_model_agree(self) -> None:
        assert generate({"seed": 3, "requests": 5}) == generate(GeneratorConfig(seed=3, requests=5))

    def test_input_config_is_not_changed(self) -> None:
        cfg = GeneratorConfig(seed=3, requests=5)
        before = cfg.model_dump()
        generate(cfg, requests=6)
        assert cfg.model_dump() == before


class TestKnobs:
    @pytest.mark.parametrize("requests", [1, 2, 7, 40])
    def test_requests_is_the_number_of_assistant_messages(self, requests: int) -> None:
        t = generate(seed=5, requests=requests)
        assert sum(m.role == "assistant" for m in t.messages) == requests

    def test_repeat_read_rate(self) -> None:
        def duplicate_reads(rate: float) -> int:
            t = generate(seed=9, requests=120, repeat_read_rate=rate, read_weight=10, planted_facts=0, error_rate=0)
            reads = [(u.input["file_path"], r.content) for u, r in calls_with_results(t) if u.name == "Read"]
            return len(reads) - len(set(reads))

        assert duplicate_reads(0.0) == 0
        assert duplicate_reads(0.7) > 20

    def test_a_read_changes_exactly_when_the_file_was_edited(self) -> None:
        t = generate(seed=4, requests=200, read_weight=6, edit_weight=4, repeat_read_rate=0.7, error_rate=0.1, planted_facts=0)
        last: dict[str, str] = {}
        edited: set[str] = set()
        changed = unchanged = 0
        for u, r in calls_with_results(t):
            path = u.input.get("file_path")
            if r.is_error:
                continue
            if u.name in ("Edit", "Write"):
                edited.add(path)
            elif u.name == "Read":
                if path in last:
                    if path in edited:
                        assert r.content != last[path]
                        changed += 1
                    else:
                        assert r.content == last[path]
                        unchanged += 1
                last[path] = r.content
                edited.discard(path)
        assert changed > 0 and unchanged > 0

    def test_error_rate(self) -> None:
        t = generate(seed=2, requests=500, error_rate=0.3, planted_facts=0)
        res = results(t)
        share = sum(r.is_error for r in res) / len(res)
        assert 0.24 < share < 0.36
        assert all(r.content.startswith(ERROR_STARTS) for r in res if r.is_error)
        assert not any(r.is_error for r in results(generate(seed=2, requests=100, error_rate=0.0)))

    def test_cjk_share(self) -> None:
        none = generate(seed=3, requests=60, cjk_share=0.0, planted_facts=6)
        assert not any(CJK.search(message_text(m)) for m in none.messages)
        some = generate(seed=3, requests=60, cjk_share=0.5, planted_facts=6)
        spoken = [m for m in some.messages if m.role in ("user", "assistant") and any(isinstance(b, TextBlock) for b in m.content)]
        assert sum(bool(CJK.search(message_text(m))) for m in spoken) >= len(spoken) // 4
        assert any(CJK.search(r.content) for r in results(some)), "some CJK in file content"

    @pytest.mark.parametrize(("requests", "user_turns", "expected"), [(30, 0, 0), (30, 5, 5), (4, 10, 3)])
    def test_user_turns(self, requests: int, user_turns: int, expected: int) -> None:
        t = generate(seed=1, requests=requests, user_turns=user_turns)
        extra = [i for i, m in enumerate(t.messages[2:], 2) if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content)]
        assert len(extra) == expected
        # A user turn follows a text-only assistant report, so roles still alternate.
        assert all(not any(isinstance(b, ToolUseBlock) for b in t.messages[i - 1].content) for i in extra)

    def test_tool_mix(self) -> None:
        only = {"read_weight": 0, "grep_weight": 0, "bash_weight": 0, "edit_weight": 0, "list_weight": 0}
        bash = generate(seed=1, requests=30, planted_facts=0, **{**only, "bash_weight": 1})
        assert {u.name for u in uses(bash)} == {"Bash"}
        listing = generate(seed=1, requests=40, planted_facts=0, **{**only, "list_weight": 1})
        assert {u.name for u in uses(listing)} == {"Glob", "LS"}

    def test_output_sizes(self) -> None:
        t = generate(seed=6, requests=300, typical_output_chars=2000, max_output_chars=30_000, huge_output_rate=0.0, error_rate=0, planted_facts=0)
        sized = [len(r.content) for u, r in calls_with_results(t) if u.name in ("Read", "Grep", "Bash", "Glob", "LS")]
        assert 1000 < statistics.median(sized) < 4000
        assert max(sized) <= 30_000
        huge = generate(seed=6, requests=30, typical_output_chars=500, max_output_chars=100_000, huge_output_rate=0.5, planted_facts=0, error_rate=0)
        assert sum(len(r.content) > 25_000 for r in results(huge)) >= 5
        assert max(len(r.content) for r in results(huge)) <= 100_000

    def test_outputs_look_like_tools(self) -> None:
        t = generate(seed=8, requests=150, error_rate=0, planted_facts=0)
        pairs = calls_with_results(t)
        reads = [r.content for u, r in pairs if u.name == "Read"]
        assert reads and all(r.startswith("     1\u2192") for r in reads)
        greps = [r.content for u, r in pairs if u.name == "Grep" and u.input.get("output_mode") == "content"]
        assert greps and all(re.match(r"/home/dev/[\w-]+/\S+\.py:\d+:", g) for g in greps)
        assert any("test session starts" in r.content for u, r in pairs if u.name == "Bash")

    def test_parallel_and_thinking_rates(self) -> None:
        single = generate(seed=2, requests=40, parallel_rate=0.0, thinking_rate=0.0, planted_facts=0)
        counts = [sum(isinstance(b, ToolUseBlock) for b in m.content) for m in single.messages if m.role == "assistant"]
        assert set(counts) == {0, 1}
        assert not any(isinstance(b, ThinkingBlock) for m in single.messages for b in m.content)
        multi = generate(seed=2, requests=40, parallel_rate=1.0, thinking_rate=1.0, planted_facts=0, user_turns=0)
        tool_msgs = [m for m in multi.messages if any(isinstance(b, ToolUseBlock) for b in m.content)]
        assert all(2 <= sum(isinstance(b, ToolUseBlock) for b in m.content) <= 3 for m in tool_msgs)
        assert all(isinstance(m.content[0], ThinkingBlock) for m in tool_msgs)

    def test_spacing_and_long_pauses(self) -> None:
        def gaps(t: Transcript) -> list[float]:
            stamps = [m.timestamp for m in t.messages if m.role == "assistant"]
            return [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:], strict=False)]

        calm = gaps(generate(seed=4, requests=200, seconds_between_requests=30, long_pause_rate=0.0, user_turns=0))
        assert 20 < statistics.median(calm) < 60 and max(calm) < 3600
        paused = gaps(generate(seed=4, requests=200, seconds_between_requests=30, long_pause_rate=0.2, user_turns=0))
        assert sum(g >= 3600 for g in paused) > 10


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    requests=st.integers(1, 50),
    user_turns=st.integers(0, 20),
    facts=st.integers(0, 8),
    error_rate=st.floats(0, 1),
    repeat=st.floats(0, 1),
    parallel=st.floats(0, 1),
    cjk=st.floats(0, 1),
    weights=st.lists(st.floats(0, 5), min_size=5, max_size=5).filter(lambda w: sum(w) > 0),
)
def test_every_session_is_valid(seed: int, requests: int, user_turns: int, facts: int, error_rate: float, repeat: float, parallel: float, cjk: float, weights: list[float]) -> None:
    t = generate(
        seed=seed, requests=requests, user_turns=user_turns, planted_facts=facts, error_rate=error_rate, repeat_read_rate=repeat,
        parallel_rate=parallel, cjk_share=cjk, typical_output_chars=300, max_output_chars=4000,
        read_weight=weights[0], grep_weight=weights[1], bash_weight=weights[2], edit_weight=weights[3], list_weight=weights[4],
    )
    assert_valid(t, requests)
    assert len(t.meta.planted_facts) == facts == len(set(t.meta.planted_facts))
    texts = [message_text(m) for m in t.messages]
    assert all(any(f in x for x in texts) for f in t.meta.planted_facts)


class TestPlantedFacts:
    def test_facts_sit_verbatim_in_user_messages_and_tool_outputs(self) -> None:
        t = generate(seed=12, requests=80, planted_facts=10, user_turns=6)
        facts = t.meta.planted_facts
        assert len(facts) == 10
        user_texts = [message_text(m) for m in t.messages if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content)]
        outputs = [r.content for r in results(t)]
        in_user = [f for f in facts if any(f in x for x in user_texts)]
        in_tools = [f for f in facts if any(f in x for x in outputs)]
        assert in_user and in_tools
        assert set(in_user) | set(in_tools) == set(facts)

    def test_facts_with_no_user_turns_go_to_the_task_or_tools(self) -> None:
        t = generate(seed=3, requests=1, planted_facts=3, user_turns=0)
        assert all(f in message_text(t.messages[1]) for f in t.meta.planted_facts)

    def test_facts_spread_across_the_session(self) -> None:
        t = generate(seed=5, requests=100, planted_facts=6, user_turns=0)
        where = [next(i for i, m in enumerate(t.messages) if f in message_text(m)) for f in t.meta.planted_facts]
        assert max(where) - min(where) > len(t.messages) // 2


class TestBulkJsonl:
    def test_size_shape_and_pairs(self, tmp_path: Path) -> None:
        path = tmp_path / "big.jsonl"
        n = generate_jsonl_bytes(path, 400_000, seed=3)
        assert n == path.stat().st_size
        assert 400_000 <= n <= 440_000
        entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert {e["type"] for e in entries} == {"user", "assistant"}
        assert entries[0]["parentUuid"] is None
        assert all(b["parentUuid"] == a["uuid"] for a, b in zip(entries, entries[1:], strict=False))
        called = [c["id"] for e in entries if e["type"] == "assistant" for c in e["message"]["content"] if c["type"] == "tool_use"]
        answered = [c["tool_use_id"] for e in entries if e["type"] == "user" and isinstance(e["message"]["content"], list) for c in e["message"]["content"]]
        assert called == answered and len(set(called)) == len(called)

    def test_deterministic(self, tmp_path: Path) -> None:
        generate_jsonl_bytes(tmp_path / "a.jsonl", 50_000, seed=1)
        generate_jsonl_bytes(tmp_path / "b.jsonl", 50_000, seed=1)
        assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()

    def test_too_small_target(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="target_bytes"):
            generate_jsonl_bytes(tmp_path / "x.jsonl", 10)


class TestSamplesAndCli:
    def test_committed_samples_are_what_the_generator_writes(self, tmp_path: Path) -> None:
        written = write_samples(tmp_path)
        assert {p.name for p in written} == set(SAMPLE_CONFIGS) | {BULK_SAMPLE[0]}
        for p in written:
            assert p.read_bytes() == (SAMPLES / p.name).read_bytes(), f"{p.name} is stale: run python -m lab.generator --out sample_sessions"

    def test_lab_json_envelope(self) -> None:
        data = json.loads((SAMPLES / "generated-small.lab.json").read_text(encoding="utf-8"))
        assert data.pop("lab_transcript") == 1
        assert Transcript.model_validate(data) == generate(SAMPLE_CONFIGS["generated-small.lab.json"])

    def test_cli(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["--jsonl", str(tmp_path / "s.jsonl"), "--bytes", "20000", "--seed", "2"]) == 0
        assert (tmp_path / "s.jsonl").stat().st_size >= 20_000
        assert main(["--jsonl", str(tmp_path / "t.jsonl"), "--bytes", "5"]) == 2
        assert "target_bytes" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            main([])


def test_long_sessions_are_cheap() -> None:
    # 5,000 requests take about 2 s on an idle core; 2,000 keep the suite fast, and the bound
    # leaves room for a busy shared machine while still catching a quadratic slip.
    start = time.perf_counter()
    t = generate(seed=1, requests=2000)
    assert time.perf_counter() - start < 8
    assert sum(m.role == "assistant" for m in t.messages) == 2000


def test_public_names_exist() -> None:
    assert all(hasattr(gen, name) for name in gen.__all__)
    assert isinstance(generate(requests=1).messages[0], Message)


class TestPlantedContent:
    """``content_dependencies``: turns that need the exact text of earlier output, planted and listed."""

    def test_off_by_default_and_the_session_is_unchanged(self) -> None:
        t, planted = gen.generate_planted(seed=4, requests=60)
        assert planted == [] and t == generate(seed=4, requests=60)

    def test_planted_turns_keep_the_session_valid_and_its_length(self) -> None:
        t, planted = gen.generate_planted(seed=9, requests=90, content_dependencies=40, user_turns=5, planted_facts=3)
        assert_valid(t, 90)
        assert {p.kind for p in planted} == {"edit_read", "quote", "edit_own"}
        def said(m: Message) -> str:
            # Texts, results and call inputs, whitespace-normalised as the scorer reads them.
            parts = [b.text if isinstance(b, TextBlock) else b.content if isinstance(b, ToolResultBlock) else
                     " ".join(str(v) for v in b.input.values()) if isinstance(b, ToolUseBlock) else "" for b in m.content]
            return " ".join(" ".join(x.split()) for x in parts)

        # A planted item sits in the assistant message named, and something before that message showed it.
        for p in planted:
            m = t.messages[p.message]
            assert m.role == "assistant" and p.text in said(m)
            assert any(p.text in said(x) for x in t.messages[: p.message])

    def test_deterministic_with_planted_content(self) -> None:
        a = gen.generate_planted(seed=2, requests=70, content_dependencies=30)
        b = gen.generate_planted(GeneratorConfig(seed=2, requests=70, content_dependencies=30))
        assert a == b and a[0].model_dump_json() == b[0].model_dump_json()

    def test_own_files_are_written_before_they_are_edited(self) -> None:
        t, planted = gen.generate_planted(seed=1, requests=80, content_dependencies=30)
        writes = {b.input["file_path"]: i for i, m in enumerate(t.messages) for b in m.content if isinstance(b, ToolUseBlock) and b.name == "Write"}
        own = [p for p in planted if p.kind == "edit_own"]
        assert own
        for p in own:
            [edit] = [b for b in t.messages[p.message].content if isinstance(b, ToolUseBlock)]
            assert edit.name == "Edit" and writes[edit.input["file_path"]] < p.message

    def test_bad_count_names_the_field(self) -> None:
        with pytest.raises(ConfigError, match="content_dependencies"):
            parse_generator_config(content_dependencies=-1)
