"""The replay's running state (sums, validity, cache prefix) gives every row byte-identical to a from-scratch replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Boundary, Message, TextBlock, ToolResultBlock, ToolUseBlock, Transcript
from lab.core.presets import preset
from lab.replayer.settings import CacheConfig
from lab.core.tokens import MiniCodeCounter
from lab.formats import load
from lab.generator import GeneratorConfig, generate
from lab.replayer import PromptCache, replay
from lab.replayer.identity_caches import ByIdentity, MessageCounts, MessageParts, SentSums, same_prefix
from lab.replayer.inputs import first_request_in, sendable
from lab.core.config import with_value, with_values
from tests.builders import assistant, call_and_result, session, system, tool_call, tool_result, user
from tests.conftest import CORPUS_FILES, corpus_id


def _both(transcript: Transcript | list[Message], config: object, **kw: object) -> tuple[dict, dict]:
    fast = replay(transcript, config, **kw).to_dict()  # type: ignore[arg-type]
    slow = replay(transcript, config, incremental=False, **kw).to_dict()  # type: ignore[arg-type]
    return fast, slow


def _same_bytes(fast: dict, slow: dict) -> None:
    assert len(fast["rows"]) == len(slow["rows"])
    for a, b in zip(fast["rows"], slow["rows"], strict=True):
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True), f"row {a['index']} differs"
    assert json.dumps(fast, sort_keys=True) == json.dumps(slow, sort_keys=True)


def _broken_session() -> list[Message]:
    """A session that breaks the providers' rules on purpose, so rows carry problems that come and go."""
    msgs = [system("You are a coding agent."), user("Please fix the parser")]
    for i in range(12):
        msgs += call_and_result("Read", f"line {i}\n" * 300, tool_id=f"t{i}")
    # An interrupted call, an orphan result, a duplicate id, then normal work again.
    msgs += [tool_call("Bash", "lost"), user("stop, do something else"), assistant("ok")]
    msgs += [user("go on"), tool_result("ghost", "x" * 500), assistant("hm")]
    msgs += [user("again"), *call_and_result("Read", "y" * 2000, tool_id="t3")]
    for i in range(12, 24):
        msgs += call_and_result("Grep", f"match {i}\n" * 200, tool_id=f"t{i}")
    msgs.append(assistant("Done."))
    return msgs


# --- whole replays ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "requests", "preset_name", "window"),
    [
        (3, 150, "minicode", 16_000),
        (3, 150, "mewcode", 16_000),
        (5, 120, "codex", 12_000),
        (7, 120, "openhands-masking", 20_000),
        (9, 120, "claude-code", 16_000),
        (11, 120, "anthropic-context-editing", 16_000),
    ],
    ids=lambda v: str(v),
)
def test_generated_sessions(seed: int, requests: int, preset_name: str, window: int) -> None:
    t = generate(GeneratorConfig(seed=seed, requests=requests, parallel_rate=0.3, long_pause_rate=0.05))
    fast, slow = _both(t, preset_name, window=window)
    assert sum(len(r["events"]) for r in fast["rows"]) > 0  # compaction ran, so contexts changed mid-prefix
    _same_bytes(fast, slow)


@pytest.mark.parametrize("preset_name", ["minicode", "mewcode", "claude-code"])
def test_a_session_with_rule_breaks(preset_name: str) -> None:
    # Unrepaired (repair=False): the replay would otherwise mend every break before any row sees it.
    fast, slow = _both(_broken_session(), preset_name, window=6_000, repair=False)
    assert fast["invalid_requests"] > 0 and any(r["problems"] for r in fast["rows"])
    _same_bytes(fast, slow)


def test_recovery_retention_and_recorded_anchor() -> None:
    cfg = with_values(preset("minicode"), dict.fromkeys(["spill.enabled", "dedup.enabled", "microcompact.enabled", "watermark.enabled"], False))
    fast, slow = _both(session(n_reads=30, size=3000), cfg, window=9_000, retention_each=True, anchor="recorded")
    assert fast["overflows"] > 0
    _same_bytes(fast, slow)


_SMALL_CORPUS = [p for p in CORPUS_FILES if p.stat().st_size < 450_000]


@pytest.mark.parametrize("path", _SMALL_CORPUS, ids=corpus_id)
@pytest.mark.parametrize("preset_name", ["minicode", "mewcode"])
def test_corpus_files(path: Path, preset_name: str) -> None:
    t = load(path)
    fast, slow = _both(t, preset_name, window=16_000)
    _same_bytes(fast, slow)


# --- the running state on its own ----------------------------------------------------------------------------------

_block = st.one_of(
    st.sampled_from(("go", "first request", "Please fix the parser now", "x" * 90)).map(lambda t: TextBlock(text=t)),
    st.sampled_from(("t1", "t2")).map(lambda i: ToolUseBlock(id=i, name="Read")),
    st.sampled_from(("t1", "t2")).map(lambda i: ToolResultBlock(tool_use_id=i, content="out " * 30)),
)


@st.composite
def _message(draw: st.DrawFn) -> Message:
    mid = f"m{draw(st.integers(0, 50))}"
    if draw(st.integers(0, 7)) == 0:
        return Message(role="system", content=(), id=mid, tag="boundary", boundary=Boundary(trigger="auto", strategy="full"))
    role = draw(st.sampled_from(("user", "assistant", "system")))
    return Message(role=role, content=tuple(draw(st.lists(_block, min_size=1, max_size=3))), id=mid)


_edit = st.tuples(st.integers(0, 30), st.booleans(), st.lists(_message(), max_size=4))


def _next(context: list[Message], edit: tuple[int, bool, list[Message]]) -> list[Message]:
    """Keep a prefix (sometimes as equal copies, as a stage rebuilding unchanged messages would) and append."""
    cut, copy, new = edit
    kept = context[: min(cut, len(context))] if cut < 25 else list(context)
    if copy and kept:
        kept[0] = kept[0].model_copy()
    return kept + new


@settings(max_examples=60, deadline=None)
@given(st.lists(_edit, min_size=1, max_size=12), st.sampled_from((None, "Please fix the parser")))
def test_sent_sums_match_the_plain_functions(edits: list, first: str | None) -> None:
    counter = MiniCodeCounter()
    counts, parts = MessageCounts(counter), MessageParts(counter)
    sums = SentSums(counts, parts, first)
    context: list[Message] = []
    for edit in edits:
        context = _next(context, edit)
        sums.update(context)
        sent = sendable(context)
        assert sums.sent == sent
        assert sums.tokens == counts.sum(sent)
        assert sums.composition == parts.of(sent)
        assert sums.first_kept == first_request_in(sent, first)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_edit, st.integers(0, 400)), min_size=1, max_size=12))
def test_prompt_cache_matches_the_from_scratch_comparison(steps: list) -> None:
    settings_ = CacheConfig(min_cacheable_tokens=50)
    fast, slow = PromptCache(settings_, MiniCodeCounter()), PromptCache(settings_, MiniCodeCounter(), incremental=False)
    context: list[Message] = []
    now = 0.0
    for edit, gap in steps:
        context = sendable(_next(context, edit))
        now += gap
        assert fast.shared_prefix(context) == slow.shared_prefix(context)
        assert fast.step(context, now) == slow.step(context, now)


def test_a_metadata_only_change_still_shares_its_wire_text() -> None:
    # The running sums end at the first message that is not equal; the block-by-block comparison goes on from there.
    counter = MiniCodeCounter()
    first = [system("S" * 400), user("U" * 400), assistant("A" * 400)]
    cache = PromptCache(CacheConfig(min_cacheable_tokens=0), counter)
    cache.step(first, 0.0)
    relabelled = [first[0], first[1].model_copy(update={"id": "other"}), first[2], user("more")]
    assert cache.shared_prefix(relabelled) == sum(counter.count_message(m) for m in first)


def test_identity_cache_tells_equal_messages_apart_and_lets_old_generations_go() -> None:
    cache: ByIdentity[int] = ByIdentity(limit=2)
    a = user("same")
    twin = a.model_copy()
    cache.put(a, 1)
    assert cache.get(a) == 1 and cache.get(twin) is None
    cache.put(twin, 2)
    assert cache.get(twin) == 2 and len(cache) == 2
    # At its limit the young generation becomes the old one; two generations on, what was not asked for is gone.
    cache.put(user("third"), 3)
    assert len(cache) == 3 and cache.get(twin) == 2
    for n in range(4):
        cache.put(user(f"more {n}"), n)
    assert cache.get(a) is None and len(cache) <= 4


def test_same_prefix_counts_equal_objects_and_finds_the_first_difference() -> None:
    msgs = [user(f"m{i}") for i in range(100)]
    copies = [m.model_copy() for m in msgs]
    assert same_prefix(msgs, copies) == 100
    assert same_prefix(msgs, msgs[:40]) == 40
    changed = msgs[:63] + [user("other")] + msgs[64:]
    assert same_prefix(msgs, changed) == 63
    assert same_prefix([], msgs) == 0


def test_recall_fields_match_a_from_scratch_replay() -> None:
    # Masking removes early reads that later responses name, so recall has losses to agree on.
    t = generate(GeneratorConfig(seed=13, requests=120, parallel_rate=0.3))
    cfg = with_value(preset("openhands-masking"), "microcompact.keep_recent", 3)
    fast, slow = _both(t, cfg, window=16_000)
    assert fast["needed_mentions"] > 0 and fast["kept_mentions"] < fast["needed_mentions"]
    keys = ("needed_mentions", "kept_mentions", "recoverable_mentions", "lost_recorded", "lost_config", "needed_later_recall", "lost_mentions")
    assert [[r[k] for k in keys] for r in fast["rows"]] == [[r[k] for k in keys] for r in slow["rows"]]
    _same_bytes(fast, slow)
