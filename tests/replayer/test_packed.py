"""Big pipeline-written text a report keeps packed (``lab.replayer.packed``): every read gives back what was given,
the pipeline's own objects while they live, one shared object per message while a reader holds it."""

from __future__ import annotations

import copy
import gc
import pickle
from datetime import UTC, datetime

import pytest

import lab.replayer.packed as packed
from lab.core.config import with_values
from lab.core.messages import Message, TextBlock
from lab.core.presets import preset
from lab.errors import LabError
from lab.generator import generate
from lab.replayer import replay
from lab.replayer.packed import MIN_PACKED_CHARS, PackedEvents, PackedMessage, PackedText, pack_events, pack_text, packs
from lab.replayer.report import _EVENTS, Contexts, Row, Rows

# A lone surrogate, as a text read from a broken file may hold: it must read back as it was.
_ODD = "caf\u00e9 \ud800 \U0001f600 "


def _summary(n: int, size: int = 3 * MIN_PACKED_CHARS) -> Message:
    body = "".join(f"line {n}.{i} {_ODD}\n" for i in range(size // 10))
    return Message(role="user", content=(TextBlock(text=body), TextBlock(text="short")), id=f"summary-{n}",
                   timestamp=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), tag="summary")


def _plain(n: int) -> Message:
    return Message(role="user" if n % 2 else "assistant", id=f"m{n}", content=(TextBlock(text=f"text {n}"),))


def test_only_pipeline_messages_with_big_text_are_packed() -> None:
    assert packs(_summary(1))
    assert not packs(_summary(1, size=MIN_PACKED_CHARS // 4))
    big_raw = Message(role="user", id="u", content=(TextBlock(text="x" * 2 * MIN_PACKED_CHARS),))
    assert not packs(big_raw)  # not written by the pipeline (no tag): the transcript holds it anyway


class TestPackedMessage:
    def test_the_pipelines_object_while_it_lives_then_an_equal_one(self) -> None:
        m = _summary(1)
        twin = _summary(1)
        p = PackedMessage(m)
        assert p.get() is m
        assert p.nbytes < len(m.content[0].text) // 2
        del m
        gc.collect()
        again = p.get()
        assert again == twin and again.model_fields_set == twin.model_fields_set
        assert [b.model_fields_set for b in again.content] == [b.model_fields_set for b in twin.content]
        assert again.content[0].text == twin.content[0].text and again.model_dump() == twin.model_dump()
        # While a reader holds the rebuilt one, every read gives that one.
        assert p.get() is again and p.holds(again)

    def test_pickles_and_copies_by_value(self) -> None:
        m = _summary(2)
        p = PackedMessage(m)
        back = pickle.loads(pickle.dumps(p))
        assert back.get() == m and back.get() is not m
        assert copy.deepcopy(p) is p and copy.copy(p) is p

    def test_one_text_packed_twice_is_shared(self) -> None:
        m = _summary(3)
        p = PackedMessage(m)
        # The same text packed again (a row's event, then the context): one PackedText, whatever object holds it.
        assert pack_text("".join(m.content[0].text)) is p._texts[0]


def test_pack_text_checks_what_it_shares() -> None:
    a, b = "a" * 2000, "b" * 2000
    wrong = PackedText(b)
    packed._RECENT[(len(a), hash(a))] = wrong
    got = pack_text(a)
    assert got is not wrong and got.text() == a
    assert PackedText(_ODD * 500).text() == _ODD * 500
    assert PackedText(a) == got and PackedText(a) != wrong


class TestEvents:
    def _events(self) -> list[dict]:
        text = _summary(1).content[0].text
        return [{"stage": "watermark", "strategy": None, "summary_text": None},
                {"stage": "summary", "strategy": "full", "success": True, "tokens_before": 9, "tokens_after": 2,
                 "summary_text": text, "attachment": "small", "ids": ["m1", "m2"]}]

    def test_small_events_stay_the_objects_given(self) -> None:
        small = [{"stage": "spill", "detail": "x" * 10}]
        assert pack_events(small) is small

    def test_big_strings_are_packed_and_read_back(self) -> None:
        events = self._events()
        got = pack_events(events)
        assert isinstance(got, PackedEvents)
        assert got.light[0] is events[0]  # no big string: the very event
        assert isinstance(got.light[1]["summary_text"], PackedText) and got.light[1]["attachment"] == "small"
        back = got.unpack()
        assert back == events and back[1]["summary_text"] == events[1]["summary_text"]
        assert got == events and got == pack_events(self._events()) and got != [events[0]]

    def test_rows_keep_them_packed_and_give_them_back(self) -> None:
        events = self._events()
        rows = [Row(index=i, message_index=i + 1, time=0.0, raw_tokens=1, tokens_before=1, sent_tokens=i, sent_messages=1,
                    events=events if i % 3 == 0 else []) for i in range(600)]
        stored = Rows(rows)
        assert stored == rows and list(stored) == rows and stored[0] == rows[0] and stored[599] == rows[599]
        assert stored.column("events") == [r.events for r in rows]
        assert stored[0:10] == rows[0:10] and stored[::7] == rows[::7]
        # Stored packed (batched rows and pending ones), and a slice shares the packed events.
        assert isinstance(stored._raw(_EVENTS)[0], PackedEvents) and isinstance(stored._raw(_EVENTS)[597], PackedEvents)
        assert isinstance(stored[0:4]._raw(_EVENTS)[3], PackedEvents)
        light = stored.light_events()
        assert len(light) == 600 and light[1] == [] and isinstance(light[0][1]["summary_text"], PackedText)
        assert light[0][1]["stage"] == "summary"

    def test_rows_head_sets_a_field_without_building_rows(self) -> None:
        rows = [Row(index=i, message_index=i + 1, time=0.0, raw_tokens=1, tokens_before=1, sent_tokens=i, sent_messages=1,
                    events=self._events() if i == 2 else []) for i in range(300)]
        stored = Rows(rows)
        flags = [i % 2 == 0 for i in range(300)]
        head = stored.head(290, over_watermark=flags)
        assert head == [r.model_copy(update={"over_watermark": f}) for r, f in zip(rows[:290], flags, strict=False)]
        assert stored.head(5) == rows[:5] and stored.head(1000) == rows
        assert head._raw(_EVENTS)[2] is stored._raw(_EVENTS)[2]  # shared, never unpacked and packed again
        with pytest.raises(LabError, match="plain fields"):
            stored.head(3, events=[[], [], []])
        with pytest.raises(LabError, match="a value per row"):
            stored.head(3, over_watermark=[True])
        with pytest.raises(LabError, match="no field"):
            stored.head(3, overwatermark=[True, True, True])


class TestContexts:
    def _history(self) -> tuple[list[tuple[Message, ...]], list[Message]]:
        """Contexts that grow, are cut to a new summary every 40 requests, and in between lose their middle (a stage
        clearing old results): many key frames hold each summary."""
        out: list[tuple[Message, ...]] = []
        summaries: list[Message] = []
        ctx: list[Message] = []
        for n in range(300):
            if n % 40 == 39:
                summaries.append(_summary(n))
                ctx = [ctx[0], summaries[-1], *ctx[-3:]]
            elif n % 8 == 7 and len(ctx) > 4:
                ctx = [*ctx[:2], *ctx[-2:]]
            ctx.append(_plain(n))
            out.append(tuple(ctx))
        return out, summaries

    def test_reads_give_back_the_contexts_and_the_pipelines_objects(self) -> None:
        history, summaries = self._history()
        log = Contexts()
        for ctx in history:
            log.append(list(ctx))
        packs_ = [p for p in log._flat if type(p) is PackedMessage]
        # One pack per summary, however many key frames hold it; none of them holds the summary itself.
        assert len({id(p) for p in packs_}) == len(summaries) and len(packs_) > len(summaries)
        assert not any(type(m) is Message and m.tag == "summary" for m in log._flat)
        assert list(log) == history
        for k in (0, 45, 120, 299, -1):
            assert all(a is b for a, b in zip(log[k], history[k], strict=True))

    def test_after_the_pipeline_let_go_reads_that_overlap_share_one_message(self) -> None:
        history, summaries = self._history()
        log = Contexts()
        for ctx in history:
            log.append(list(ctx))
        ids = [m.id for m in summaries]
        expected = [tuple(m.model_dump() for m in ctx) for ctx in history]
        del history, summaries, ctx
        gc.collect()
        for k in (50, 51, 150, 298):
            assert tuple(m.model_dump() for m in log[k]) == expected[k]
        a, b = log[100], log[101]
        assert a[1].id == ids[1] and a[1] is b[1]
        # Iteration rebuilds each summary once, and the contexts it yields share it.
        seen = {m.id: m for ctx in log for m in ctx if m.tag == "summary"}
        assert sorted(seen) == sorted(ids)
        assert all(x is seen[x.id] for ctx in log for x in ctx if x.tag == "summary")

    def test_a_head_keeps_its_packs(self) -> None:
        history, _ = self._history()
        log = Contexts()
        for ctx in history:
            log.append(ctx)
        head = log.head(130)
        assert list(head) == history[:130]
        for ctx in history[130:]:
            head.append(ctx)
        assert list(head) == history and list(log) == history


def test_a_replay_reads_the_same_packed_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every public read of a replay with summaries: equal with packing and without."""
    session = generate(requests=160, seed=11)
    cfg = with_values(preset("mewcode"), {"window": 24_000})
    report = replay(session, cfg, resume=False)
    assert any(type(p) is PackedMessage for p in report._contexts._flat)  # type: ignore[union-attr]
    monkeypatch.setattr(packed, "MIN_PACKED_CHARS", 10**12)
    whole = replay(session, cfg, resume=False)
    assert not any(type(p) is PackedMessage for p in whole._contexts._flat)  # type: ignore[union-attr]
    assert report.to_dict() == whole.to_dict() and report == whole
    assert report.compactions_by_kind == whole.compactions_by_kind
    assert list(report._contexts) == list(whole._contexts)  # type: ignore[arg-type]
    for k in range(0, len(report.rows), 7):
        assert report.context_at(k, include_boundaries=True) == whole.context_at(k, include_boundaries=True)
        assert report.input_at(k) == whole.input_at(k)
    assert report.final_context() == whole.final_context()
