"""A replay's per-request contexts, stored as changes (``report.Contexts``), and recall's substring index
(``recall.Anchored``): both stand in for a simpler structure, and must answer exactly as it would."""

from __future__ import annotations

import random

import pytest

from lab.core.messages import Message, TextBlock
from lab.replayer.recall import Anchored
from lab.replayer.report import Contexts


def _msg(n: int) -> Message:
    return Message(role="user" if n % 2 else "assistant", id=f"m{n}", content=(TextBlock(text=f"text {n}"),))


def _history(seed: int, steps: int = 200) -> list[tuple[Message, ...]]:
    """Contexts as a replay makes them: mostly growing, sometimes cut, sometimes a message replaced mid-way."""
    rng = random.Random(seed)
    made = 0
    ctx: list[Message] = []
    out: list[tuple[Message, ...]] = []
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.08 and ctx:
            del ctx[rng.randrange(len(ctx)) :]  # a compaction keeps a head
        elif roll < 0.2 and ctx:
            made += 1
            ctx[rng.randrange(len(ctx))] = _msg(made)  # a stage rewrites one message
        for _ in range(rng.randint(1, 3)):
            made += 1
            ctx.append(_msg(made))
        out.append(tuple(ctx))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_every_context_reads_back_as_it_was_given(seed: int) -> None:
    history = _history(seed)
    log = Contexts()
    for ctx in history:
        log.append(list(ctx))
    assert len(log) == len(history)
    assert list(log) == history
    for k in (0, 1, len(history) // 2, len(history) - 1, -1, -len(history)):
        got = log[k]
        assert got == history[k]
        # The same message objects, never copies.
        assert all(a is b for a, b in zip(got, history[k], strict=True))


def test_a_head_goes_on_as_its_own_log() -> None:
    history = _history(7)
    log = Contexts()
    for ctx in history:
        log.append(ctx)
    cut = 120
    head = log.head(cut)
    assert len(head) == cut and list(head) == history[:cut]
    # Appending to the head leaves the original alone, and reads back as a log built from scratch.
    other = _history(8, steps=30)
    for ctx in other:
        head.append(ctx)
    assert list(head) == history[:cut] + other
    assert list(log) == history
    assert len(Contexts().head(0)) == 0


def test_storage_follows_what_changed_not_the_contexts_sizes() -> None:
    # An append-only session of 2,000 requests: a tuple per request would hold about 2 million references.
    log = Contexts()
    ctx: list[Message] = []
    for n in range(2_000):
        ctx.append(_msg(n))
        log.append(ctx)
    stored = len(log._flat)
    assert stored <= 3 * len(ctx)
    assert log[1_000] == tuple(ctx[:1_001])


def test_out_of_range_and_slices_are_refused() -> None:
    log = Contexts()
    log.append([_msg(1)])
    with pytest.raises(IndexError):
        log[1]
    with pytest.raises(IndexError):
        log[-2]
    with pytest.raises(TypeError):
        log[0:1]  # type: ignore[call-overload]


@pytest.mark.parametrize("seed", range(20))
def test_anchored_finds_what_a_scan_of_every_string_finds(seed: int) -> None:
    rng = random.Random(seed)
    # A small alphabet and long texts repeat a piece in many places (the index then scans the text instead).
    alphabet, longest = ("ab c/d:", 120) if seed % 2 else ("ab ", 2_000)
    strings = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) for _ in range(rng.randint(0, 60))})
    index = Anchored(strings)
    for _ in range(20):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))
        assert index.within(text) == {w for w in strings if w in text}


def test_kept_is_a_prefix_every_update_since_kept() -> None:
    from lab.core.tokens import get_counter
    from lab.replayer.identity_caches import MessageCounts, MessageParts, SentSums

    counter = get_counter("minicode")
    sums = SentSums(MessageCounts(counter), MessageParts(counter), None)
    history = _history(3, steps=120)
    assert sums.kept("x") is None  # nothing seen yet: the consumer compares for itself
    seen = list(history[0])
    sums.update(seen)
    sums.kept("x")
    for ctx in history[1:]:
        # Two updates per request, as a replay makes them: the context with the new messages, then the compacted one.
        grown = list(ctx) + [_msg(10_000 + len(ctx))]
        sums.update(grown)
        sums.update(list(ctx))
        low = sums.kept("x")
        assert low is not None
        # A lower bound of what the context at the last call shares with this one, and exact for a plain extension.
        from lab.core.messages import shared_prefix

        assert low <= shared_prefix(seen, list(ctx))
        if tuple(ctx[: len(seen)]) == tuple(seen):
            assert low == len(seen)
        seen = list(ctx)
    # A consumer's hint in sent messages counts the messages before it that are sent.
    assert sums.kept_sent("y") is None and sums.kept_sent("y") == len(sums.sent)


def test_the_compactor_keeps_its_promise_of_unchanged_messages() -> None:
    from lab.core.compactor import Compactor
    from lab.core.presets import preset
    from lab.core.tokens import get_counter
    from lab.replayer.inputs import request_points
    from tests.builders import session

    raw = session(n_reads=30, size=3_000)
    cfg = preset("mewcode").model_copy(update={"window": 12_000})
    compactor = Compactor(cfg, get_counter("minicode"))
    context: list[Message] = []
    consumed = 0
    promised = 0
    for p in request_points(raw):
        request = context + list(raw[consumed:p])
        out = compactor.process_request(request)
        n = out.unchanged
        assert 0 <= n <= min(len(request), len(out.messages))
        assert out.messages[:n] == request[:n]
        promised += n
        context, consumed = out.messages + [raw[p]], p + 1
    # Something was promised: the hint is not always the trivial 0.
    assert promised > 0
