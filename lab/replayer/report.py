"""What a replay produces: one ``Row`` per request and a ``Report`` with the totals.

Rows and totals are plain data (pydantic models), so a report round-trips
through JSON: ``Report.from_dict(report.to_dict()) == report``. The contexts
themselves are not part of the JSON: a report made by ``replay`` keeps them in
memory (``context_at`` / ``raw_at``) as references to the immutable messages,
shared between requests, never as copies; a report read back from JSON has
rows and totals only. They are kept as what changed from one request to the
next (``Contexts``): a tuple of the whole context per request cost memory
quadratic in a session of many small messages (4.9 GiB for 100,000 of them).
A summary's message there, and its text in its row's events, are kept
compressed until read (``packed.py``): every read gives the values given.

``Report.df`` is a pandas view of the rows; pandas is imported only when it
is asked for, so the core of a replay never pays for it.
"""

from __future__ import annotations

import json
import os
from array import array
from bisect import bisect_left
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Iterable, Iterator, Sequence
import functools
from collections import namedtuple
from operator import itemgetter

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, PrivateAttr, ValidationError
from pydantic_core import core_schema

from ..core.config import CompactionConfig
from ..core.messages import Message, is_sent, model_builder, shared_prefix
from ..core.stats import PARTS
from ..atomic import write_text_atomic
from ..errors import LabError
from .columns import Column, Sparse, column_of
from .packed import PackedEvents, PackedMessage, pack_events, packs
from .recorded import RecordedCompaction

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Contexts", "Row", "Rows", "RetentionItem", "RetentionPart", "Retention", "Report", "REPORT_VERSION", "LostMention", "LOST_TO", "column", "recorded_totals", "cost_check",
           "COMPACTION_KINDS", "STAGE_LABELS", "STRATEGY_KINDS", "compaction_kind", "describe_compactions", "invalid_reasons", "describe_invalid", "raw_peak_note"]

REPORT_VERSION = 1


class Contexts(Sequence[tuple[Message, ...]]):
    """Every request's context (boundary markers included), stored as what changed since the previous one.

    Why: a request's context is mostly the previous one's, and a tuple of all of
    it per request made a replay's memory grow with requests x context, which a
    session of many small messages turns into gigabytes. Each entry keeps how
    many leading messages it shares with the previous context and the messages
    after those. A full copy (a key frame) is stored instead whenever the
    messages stored since the last one would outgrow the context itself, so
    memory stays within about twice what changed over the session, and reading
    one context replays at most about two contexts' worth of entries.

    A message the pipeline wrote with big text (a summary) is stored packed
    (``packed.PackedMessage``: compressed, one per message object however many
    key frames hold it) and given back whole when a context is read: the
    summaries of a long session were whole to the end, nearly a quarter of the
    file. A read gives the pipeline's own object while anything holds it, and
    one rebuilt object while a reader holds that, so contexts read side by side
    share their messages as the replay's did.
    """

    __slots__ = ("_keep", "_start", "_flat", "_frame", "_since", "_last", "_packed", "_packs")

    def __init__(self) -> None:
        # Per entry: messages kept from the previous context, where the messages after them start in ``_flat``
        # (every entry's, one after another: an entry's end where the next one's start), and its key frame's
        # index. Machine ints and one list: an int object or two and a tuple per request were most of the log.
        self._keep = array("q")
        self._start = array("q")
        self._frame = array("q")
        self._flat: list[Message | PackedMessage] = []
        # Messages stored since the last key frame, and the last context (None: rebuilt when next needed).
        self._since = 0
        self._last: tuple[Message, ...] | None = ()
        # Where ``_flat`` holds a PackedMessage (ascending), and the pack of each packed message object by id
        # (an entry is good while its pack ``holds`` that object), so a key frame shares the pack it was given.
        self._packed = array("q")
        self._packs: dict[int, PackedMessage] = {}

    def append(self, context: Sequence[Message], *, same: int | None = None) -> None:
        """Store the next context. ``same``: when the caller knows it, how many leading messages it shares
        with the previous one (a lower bound is enough); else they are compared."""
        now = tuple(context)
        if not self._keep:
            keep = 0
        elif same is not None:
            keep = min(same, len(now), len(self._last) if self._last is not None else self._length(-1))
        else:
            last = self._last if self._last is not None else self[-1]
            keep = shared_prefix(last, now)
        tail = now[keep:]
        if not self._keep or self._since + len(tail) > len(now):
            self._frame.append(len(self._keep))
            keep, tail, self._since = 0, now, 0
        else:
            self._frame.append(self._frame[-1])
        self._keep.append(keep)
        self._start.append(len(self._flat))
        if any(m.tag is not None for m in tail):
            self._store_packed(tail)
        else:
            self._flat.extend(tail)
        self._since += len(tail)
        self._last = now

    def _store_packed(self, tail: tuple[Message, ...]) -> None:
        """Store ``tail``, each message ``packs`` names as its PackedMessage."""
        flat, packed, memo = self._flat, self._packed, self._packs
        for m in tail:
            if m.tag is not None and packs(m):
                pack = memo.get(id(m))
                if pack is None or not pack.holds(m):
                    pack = memo[id(m)] = PackedMessage(m)
                packed.append(len(flat))
                flat.append(pack)
            else:
                flat.append(m)

    def head(self, n: int) -> Contexts:
        """The first ``n`` contexts, as a log of their own that shares the stored messages."""
        out = Contexts()
        out._keep, out._start, out._frame = self._keep[:n], self._start[:n], self._frame[:n]
        end = self._end(n - 1) if n else 0
        out._flat = self._flat[:end]
        out._since = end - self._start[out._frame[-1]] if n else 0
        out._last = None if n else ()
        out._packed = self._packed[: bisect_left(self._packed, end)]
        out._packs = dict(self._packs)
        return out

    def __len__(self) -> int:
        return len(self._keep)

    def _end(self, i: int) -> int:
        """Where entry ``i``'s messages end in ``_flat``."""
        return self._start[i + 1] if i + 1 < len(self._start) else len(self._flat)

    def _length(self, k: int) -> int:
        return len(self._stored(k % len(self._keep)))

    def _stored(self, k: int) -> list[Message | PackedMessage]:
        """Context ``k`` as stored: packed messages still packed."""
        msgs: list[Message | PackedMessage] = []
        keep, start, flat = self._keep, self._start, self._flat
        for i in range(self._frame[k], k + 1):
            del msgs[keep[i]:]
            msgs.extend(flat[start[i] : self._end(i)])
        return msgs

    def _build(self, k: int) -> list[Message]:
        msgs = self._stored(k)
        # Every message read comes from the entries since k's key frame: packed ones among them are given back.
        if self._has_packed(self._start[self._frame[k]], self._end(k)):
            return _unpacked(msgs)
        return msgs  # type: ignore[return-value]

    def _has_packed(self, a: int, b: int) -> bool:
        """Some message stored at ``a:b`` in ``_flat`` is packed."""
        packed = self._packed
        if not packed or packed[-1] < a:
            return False
        return bisect_left(packed, a) < bisect_left(packed, b)

    def __getitem__(self, k: int) -> tuple[Message, ...]:  # type: ignore[override]
        if not isinstance(k, int):
            raise TypeError(f"contexts are read one at a time, by request index, not by {type(k).__name__}")
        n = len(self._keep)
        if not -n <= k < n:
            raise IndexError(f"context {k} out of range ({n} stored)")
        k %= n
        if k == n - 1 and self._last is not None:
            return self._last
        return tuple(self._build(k))

    def __iter__(self) -> Iterator[tuple[Message, ...]]:
        msgs: list[Any] = []
        flat, packed = self._flat, self._packed
        # The next packed place not yet passed: entries come in ``_flat`` order, so one pointer walks them all.
        at = 0
        for i, keep in enumerate(self._keep):
            del msgs[keep:]
            a, b = self._start[i], self._end(i)
            if at < len(packed) and packed[at] < b:
                msgs.extend(_unpacked(flat[a:b]))
                while at < len(packed) and packed[at] < b:
                    at += 1
            else:
                msgs.extend(flat[a:b])
            yield tuple(msgs)


def _unpacked(msgs: list[Any]) -> list[Message]:
    """``msgs`` with every PackedMessage given back as its message."""
    return [m.get() if type(m) is PackedMessage else m for m in msgs]


class _Marker:
    """A shared stand-in in a packed row (``Rows``): an empty container, or a composition packed as its counts."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        # Pickled (a report sent to a worker) and copied as the module's own marker: packed rows compare by identity.
        return self.name


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetentionItem(_Data):
    """One thing that should survive compaction, and where it was found."""

    item: str
    # "tail" (verbatim in a kept message), "summary" (inside a pipeline-written message),
    # "spill" (recoverable from the spill store through a path the context names), or "nowhere".
    where: str
    # For an item that is nowhere: one of LOST_TO, what removed it (None in reports made before it existed).
    lost_to: str | None = None

    def model_post_init(self, context: Any, /) -> None:
        # A report lists an item for every user message, path and removed output it scores, and pydantic's
        # set of the fields given cost 216 bytes an item, more than the item: every item shares one (as rows do).
        object.__setattr__(self, "__pydantic_fields_set__", _ITEM_FIELDS)

    @staticmethod
    def of(item: str, where: str, lost_to: str | None) -> RetentionItem:
        """The item as validation builds it, without validating: for the scorer's own checked values.

        Why: a final context's retention lists every removed result, user message and path of the session
        (tens of thousands on a long one), and each validated item carried a ``__dict__`` of its own; built
        so, its values live in the object (as a transcript's blocks do), a third of its memory.
        """
        return _build_item({"item": item, "where": where, "lost_to": lost_to})


_ITEM_FIELDS = set(RetentionItem.model_fields)
_build_item = model_builder(RetentionItem, *_ITEM_FIELDS)


# What removed a lost item: the original agent's own compaction recorded in the transcript, or the replayed config.
LOST_TO = ("recorded compaction", "this config")


class LostMention(_Data):
    """A mention the response at a request used that its context no longer holds (see ``recall.py``)."""

    mention: str
    kind: str
    lost_to: str

    def model_post_init(self, context: Any, /) -> None:
        # Every field is required, so every mention's set of fields given is this one (see ``RetentionItem``).
        object.__setattr__(self, "__pydantic_fields_set__", _MENTION_FIELDS)


_MENTION_FIELDS = set(LostMention.model_fields)


class RetentionPart(_Data):
    kept: int = 0
    total: int = 0
    items: list[RetentionItem] = Field(default_factory=list)
    # Sizes, for parts where an item's size matters (removed tool output).
    kept_chars: int | None = None
    total_chars: int | None = None

    @property
    def share(self) -> float | None:
        return self.kept / self.total if self.total else None


class Retention(_Data):
    """How much of what matters is still in a context; ``score`` is the weighted mean of the part shares."""

    parts: dict[str, RetentionPart] = Field(default_factory=dict)
    weights: dict[str, float] = Field(default_factory=dict)
    # None when no part had anything to keep.
    score: float | None = None

    def shares(self) -> dict[str, float | None]:
        return {name: part.share for name, part in self.parts.items()}


class Row(_Data):
    """One request of the replay: what was sent, what compaction did, what it cost."""

    index: int
    # Index in the transcript of the assistant message this request produced.
    message_index: int
    # Seconds since the epoch: a message timestamp or the simulated clock.
    time: float
    raw_tokens: int
    # Tokens of the raw history before this request's compaction ran (context so far + new messages).
    tokens_before: int
    sent_tokens: int
    sent_messages: int
    freed_by_stage: dict[str, int] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)
    boundary_placed: bool = False
    valid_anthropic: bool = True
    valid_openai: bool = True
    problems: list[str] = Field(default_factory=list)
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    uncached_tokens: int = 0
    cache_expired: bool = False
    output_tokens: int = 0
    cost: float = 0.0
    raw_cached_tokens: int = 0
    cost_uncompacted: float = 0.0
    # What the agent itself recorded this request cost (its response's ``Usage.cost_usd``); None when it recorded none.
    recorded_cost: float | None = None
    # These prices applied to the usage the agent recorded beside that cost: the price table's own check.
    recorded_usage_cost: float | None = None
    cache_hit_ratio: float = 0.0
    over_watermark: bool = False
    # The watermark wanted a summary but the circuit breaker was open (after repeated auto failures).
    breaker_open: bool = False
    overflowed: bool = False
    recovered: bool = False
    failed: bool = False
    recover_calls: int = 0
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    summary_cost: float = 0.0
    composition: dict[str, int] = Field(default_factory=dict)
    # The user's first request is verbatim in the context (None before the user has spoken).
    first_request_kept: bool | None = None
    # Only when the replay ran with retention_each=True.
    retention: Retention | None = None
    # Needed-later recall, the names score (recall.py): mentions of this request's recorded response seen earlier
    # in the raw history, kept when the name is anywhere in the context.
    needed_mentions: int = 0
    kept_mentions: int = 0
    recoverable_mentions: int = 0
    lost_recorded: int = 0
    lost_config: int = 0
    # kept / needed, and recoverable / needed; None when nothing was needed (or the replay ran with recall=False).
    needed_later_recall: float | None = None
    recoverable_share: float | None = None
    # The lost mentions themselves, at most recall.MAX_LOST of them.
    lost_mentions: list[LostMention] = Field(default_factory=list)
    # Content recall (content.py): the edit anchor lines and copied spans this request's recorded response used,
    # kept when verbatim in the context; needed = kept + recoverable + lost. None when nothing was needed.
    content_needed: int = 0
    content_kept: int = 0
    content_recoverable: int = 0
    content_lost: int = 0
    content_recall: float | None = None
    # Tokens of the spill files the agent would read back for what was only recoverable (each file once).
    reread_tokens: int = 0

    def model_post_init(self, context: Any, /) -> None:
        # A replay keeps one row per request, and pydantic's per-instance set of the fields given was
        # as big as the row's values (2 KB of a 4 KB row). Every row shares one set naming every field:
        # nothing reads which row fields were given, and setting a field adds a name already there.
        object.__setattr__(self, "__pydantic_fields_set__", _ROW_FIELDS)

    @property
    def valid(self) -> bool:
        return self.valid_anthropic and self.valid_openai


# Every Row's ``model_fields_set`` (see ``Row.model_post_init``).
_ROW_FIELDS = set(Row.model_fields)

# Row fields in declaration order: a packed row holds their values in this order, then a composition's counts.
_ROW_NAMES = tuple(Row.model_fields)
_row_values = itemgetter(*_ROW_NAMES)
# An empty container is packed as a shared marker (one per kind), and made afresh for each Row built.
_EMPTY_DICT, _EMPTY_LIST = _Marker("_EMPTY_DICT"), _Marker("_EMPTY_LIST")
_CONTAINERS = tuple((i, info.default_factory) for i, info in enumerate(Row.model_fields.values()) if info.default_factory in (dict, list))
_CONTAINER_MARKS = tuple((i, _EMPTY_DICT if factory is dict else _EMPTY_LIST) for i, factory in _CONTAINERS)
# A composition in ``PARTS`` order is packed as this marker in its own place and its counts after the fields
# (a dict per row was 360 bytes); any other composition as itself, with zeros there.
_FROM_PARTS = _Marker("_FROM_PARTS")
_COMPOSITION = _ROW_NAMES.index("composition")
# A row's events are packed with their big strings compressed (``packed.pack_events``): a summary's text and
# attachment, kept only for the pages to show, were whole in every row that wrote one until the report went.
_EVENTS = _ROW_NAMES.index("events")
_FIELDS = len(_ROW_NAMES)
_NO_PARTS = (0,) * len(PARTS)
# The places whose values are mostly one object (an empty container, a composition's marker, no retention):
# stored as the few others by position (``Sparse``), every other place as a typed column (``column_of``).
_USUAL = {**{i: mark for i, mark in _CONTAINER_MARKS}, _COMPOSITION: _FROM_PARTS, _ROW_NAMES.index("retention"): None}
# Rows wait packed until a batch of them is stored, a column at a time: appending each value to its column
# as its row came was a Python call per field and request.
_BATCH = 256
_new, _set_dict = object.__new__, BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra, _set_private = BaseModel.__dict__["__pydantic_extra__"].__set__, BaseModel.__dict__["__pydantic_private__"].__set__


def _pack(row: Row) -> tuple[Any, ...]:
    values = list(_row_values(row.__dict__))
    for i, mark in _CONTAINER_MARKS:
        if not values[i]:
            values[i] = mark
    if type(values[_EVENTS]) is list:
        values[_EVENTS] = pack_events(values[_EVENTS])
    parts = values[_COMPOSITION]
    if type(parts) is dict and tuple(parts) == PARTS:
        values[_COMPOSITION] = _FROM_PARTS
        values.extend(parts.values())
    else:
        values.extend(_NO_PARTS)
    return tuple(values)


def _unpack(packed: tuple[Any, ...]) -> Row:
    values = list(packed[:_FIELDS])
    for i, factory in _CONTAINERS:
        if type(values[i]) is _Marker:
            values[i] = factory()
    if type(values[_EVENTS]) is PackedEvents:
        values[_EVENTS] = values[_EVENTS].unpack()
    if packed[_COMPOSITION] is _FROM_PARTS:
        values[_COMPOSITION] = dict(zip(PARTS, packed[_FIELDS:], strict=True))
    # Built as validation would build it from these values (they were a Row's): no second validation.
    row = _new(Row)
    _set_dict(row, dict(zip(_ROW_NAMES, values, strict=True)))
    _set_fields_set(row, _ROW_FIELDS)
    _set_extra(row, None)
    _set_private(row, None)
    return row


class _FieldsView:
    """``Rows.fields``: iterated as often as asked, each pass a named tuple per row."""

    __slots__ = ("_rows", "_make", "_names")

    def __init__(self, rows: Rows, kind: Any, names: tuple[str, ...]) -> None:
        self._rows, self._make, self._names = rows, kind._make, names

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Any]:
        return map(self._make, zip(*(self._rows.column(n) for n in self._names), strict=True))


class Rows(Sequence[Row]):
    """A report's rows, stored as a column per field; a ``Row`` is built when one is read.

    Why: a replay keeps one row per request, and a pydantic Row is a dict of 55 fields beside its
    values: 2 KB a row, the largest share of a replay's memory on a session of many tiny messages
    (2.4x the file's size). A tuple of its values per row was still about 1 KB with the int and float
    objects it held; as columns (``columns.py``: the narrowest array that holds a field's values, one
    value for a field that never changes, only the non-empty containers) a row of a tiny session is
    about 100 bytes. Rows are packed as tuples (empty containers as shared markers, the composition as
    its counts) and stored in the columns a batch at a time. ``Report.rows`` is one: read it as a list of
    rows (index, slice, iterate, compare with a list); ``column(name)`` reads one field of every row
    without building them. A Row read from here is a copy: change a report's rows through ``append`` or
    a new ``Rows``.
    """

    __slots__ = ("_cols", "_stored", "_pending")

    def __init__(self, rows: Iterable[Row] = ()) -> None:
        # The columns (one per field, then one per composition part), empty until the first batch is stored.
        self._cols: list[Column] = []
        self._stored = 0
        # Packed rows not yet in the columns (fewer than _BATCH).
        self._pending: list[tuple[Any, ...]] = []
        for r in rows:
            self.append(r)

    def append(self, row: Row) -> None:
        self._add(_pack(row))

    def _add(self, packed: tuple[Any, ...]) -> None:
        self._pending.append(packed)
        if len(self._pending) >= _BATCH:
            self._store()

    def _store(self) -> None:
        batch = list(zip(*self._pending, strict=True))
        if not self._cols:
            self._cols = [Sparse(_USUAL[j]).extend(values) if j in _USUAL else column_of(values) for j, values in enumerate(batch)]
        else:
            self._cols = [col.extend(values) for col, values in zip(self._cols, batch, strict=True)]
        self._stored += len(self._pending)
        self._pending = []

    def _packed(self, start: int, stop: int) -> Iterator[tuple[Any, ...]]:
        """The packed rows ``start:stop`` (0 <= start <= stop <= len), in order."""
        stored = self._stored
        for a in range(start, min(stop, stored), _BATCH):
            b = min(a + _BATCH, stop, stored)
            yield from zip(*(col.values(a, b) for col in self._cols), strict=True)
        yield from self._pending[max(start, stored) - stored : max(stop, stored) - stored]

    def _packed_at(self, i: int) -> tuple[Any, ...]:
        if i >= self._stored:
            return self._pending[i - self._stored]
        return tuple(col.get(i) for col in self._cols)

    def _raw(self, j: int) -> list[Any]:
        """Place ``j``'s packed value in every row, in order."""
        head = self._cols[j].values() if self._cols else []
        return head + [p[j] for p in self._pending]

    def __len__(self) -> int:
        return self._stored + len(self._pending)

    def __getitem__(self, k: int | slice) -> Any:
        n = len(self)
        if isinstance(k, slice):
            out = Rows()
            start, stop, step = k.indices(n)
            picked = self._packed(start, max(start, stop)) if step == 1 else map(self._packed_at, range(start, stop, step))
            for packed in picked:
                out._add(packed)
            return out
        if not -n <= k < n:
            raise IndexError("row index out of range")
        return _unpack(self._packed_at(k % n))

    def __iter__(self) -> Iterator[Row]:
        return map(_unpack, self._packed(0, len(self)))

    def column(self, name: str) -> list[Any]:
        """Field ``name`` of every row, in order, as a Row would hold it (no Row built)."""
        i = _ROW_NAMES.index(name)
        out = self._raw(i)
        factory = next((f for j, f in _CONTAINERS if j == i), None)
        if factory is None:
            return out
        if i == _COMPOSITION:
            parts = zip(*(self._raw(j) for j in range(_FIELDS, _FIELDS + len(PARTS))), strict=True)
            return [dict(zip(PARTS, p, strict=True)) if v is _FROM_PARTS else factory() if type(v) is _Marker else v
                    for v, p in zip(out, parts, strict=True)]
        if i == _EVENTS:
            return [factory() if type(v) is _Marker else v.unpack() if type(v) is PackedEvents else v for v in out]
        return [factory() if type(v) is _Marker else v for v in out]

    def light_events(self) -> list[list[dict[str, Any]]]:
        """Every row's events with their big strings (a summary's text, its attachment) left compressed, each a
        ``packed.PackedText``: for a reader of the small fields only (``compaction_kind``), which so never
        decompresses the summaries. Every other field of an event is the one ``column("events")`` gives."""
        return [[] if type(v) is _Marker else v.light if type(v) is PackedEvents else v for v in self._raw(_EVENTS)]

    def head(self, n: int, **fields: Sequence[Any]) -> Rows:
        """The first ``n`` rows, each plain field named in ``fields`` set to its value there (one per row, in order).

        What ``Rows(r.model_copy(update=...) for r in self[:n])`` gives, without building a Row per row (nor
        unpacking and packing again its events: a summary's text would be decompressed and compressed again).
        """
        n = max(0, min(n, len(self)))
        unknown = sorted(set(fields) - set(_ROW_NAMES))
        if unknown:
            raise LabError(f"a row has no field(s) {unknown}")
        at = {_ROW_NAMES.index(name): values for name, values in fields.items()}
        if any(i in dict(_CONTAINERS) for i in at):
            raise LabError(f"Rows.head sets plain fields only, not {sorted(fields)}")
        if any(len(values) < n for values in at.values()):
            raise LabError(f"Rows.head needs a value per row for {sorted(fields)}: {n} rows")
        out = Rows()
        for k, packed in enumerate(self._packed(0, n)):
            if at:
                row = list(packed)
                for i, values in at.items():
                    row[i] = values[k]
                packed = tuple(row)
            out._add(packed)
        return out

    def fields(self, *names: str) -> _FieldsView:
        """The rows with only the plain fields ``names`` (no containers), each row a named tuple made as it is
        read: for a caller that reads a few fields of every row, several times (a Row built per row and pass
        cost a replay of 50,000 requests half a second)."""
        at = [_ROW_NAMES.index(n) for n in names]
        if any(i == j for i in at for j, _ in _CONTAINERS):
            raise LabError(f"Rows.fields reads plain fields only, not {[n for n in names if _ROW_NAMES.index(n) in dict(_CONTAINERS)]}")
        return _FieldsView(self, _row_fields(names), names)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rows):
            n = len(self)
            return n == len(other) and all(a == b for a, b in zip(self._packed(0, n), other._packed(0, n), strict=True))
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rows({list(self)!r})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # Validated as a list of rows, then packed; serialized as that list, so a report's JSON is unchanged.
        as_list = handler.generate_schema(list[Row])

        def validate(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> Rows:
            return value if isinstance(value, Rows) else Rows(inner(value))

        def serialize(value: Rows, inner: core_schema.SerializerFunctionWrapHandler) -> Any:
            return inner(list(value))

        return core_schema.no_info_wrap_validator_function(
            validate, as_list, serialization=core_schema.wrap_serializer_function_ser_schema(serialize, schema=as_list)
        )


@functools.cache
def _row_fields(names: tuple[str, ...]) -> type:
    # One class per set of names, made once: a class is a reference cycle, and a replay must leave none behind
    # for the collector (lab.core.gcpause runs replays with it paused).
    return namedtuple("RowFields", names)


# Row fields that are nested and stay out of the flat DataFrame view (their own columns are derived).
_NESTED = ("events", "freed_by_stage", "composition", "problems", "retention", "lost_mentions")


class Report(_Data):
    """Rows plus totals of one replay of one transcript under one config."""

    version: int = REPORT_VERSION
    label: str = "custom"
    window: int = 0
    counter: str = ""
    # "timestamps" or "simulated"
    clock: str = "simulated"
    rows: Rows = Field(default_factory=Rows)
    peak_sent: int = 0
    peak_raw: int = 0
    requests: int = 0
    requests_over_watermark: int = 0
    # Requests sent over the watermark because the breaker was open: failures, though nothing overflowed.
    breaker_open_over_watermark: int = 0
    watermark_tokens: int | None = None
    compactions_by_strategy: dict[str, int] = Field(default_factory=dict)
    summary_calls: int = 0
    summary_cost: float = 0.0
    invalid_requests: int = 0
    overflows: int = 0
    recoveries: int = 0
    failures: int = 0
    total_cost: float = 0.0
    total_cost_uncompacted: float = 0.0
    # The agent's own bill, where it records one, beside the lab's price for the same requests uncompacted:
    # how far the price table and cache model are from what the provider charged (``cost_check``).
    recorded_cost: float | None = None
    recorded_cost_requests: int = 0
    recorded_usage_cost: float | None = None
    recorded_cost_priced: float | None = None
    # The recorded usage against the counted context (``overhead.UsageFit``): what every request carried
    # beyond the file (system prompt, tool definitions) and the provider's tokens per counted token.
    usage_fit: dict[str, Any] | None = None
    # Tokens every request was taken to carry beyond the file (ReplaySettings.hidden_tokens or the fit).
    hidden_tokens: int = 0
    cache_hit_ratio: float = 0.0
    cache_hit_ratio_uncompacted: float = 0.0
    first_request_kept: bool | None = None
    retention: Retention = Field(default_factory=Retention)
    retention_score: float | None = None
    # Needed-later recall, the names score, over every request: sums of the row counts, and sum kept / sum needed.
    needed_mentions: int = 0
    kept_mentions: int = 0
    recoverable_mentions: int = 0
    lost_recorded: int = 0
    lost_config: int = 0
    needed_later_recall: float | None = None
    recoverable_share: float | None = None
    # Content recall over every request (content.py): summed counts, sum kept / sum needed, and whether it rests on
    # fewer than content.THIN needed items (too thin to rank configs by); the re-read tokens summed.
    content_needed: int = 0
    content_kept: int = 0
    content_recoverable: int = 0
    content_lost: int = 0
    content_recall: float | None = None
    content_thin: bool = True
    reread_tokens: int = 0
    config: dict[str, Any] = Field(default_factory=dict)
    # The replay settings it was billed and timed with (ReplaySettings' dump); beside the agent config, not in it.
    settings: dict[str, Any] = Field(default_factory=dict)
    # Where the prices in ``settings`` came from (``prices.session_pricing``): "session" (the transcript's own
    # model), "default" (it names no model the table knows) or "settings" (chosen prices); "" in older reports.
    pricing_source: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    # What the replay did with the compactions the original agent recorded ("undo" or "keep"), and each one found.
    recorded_compactions_mode: str = "undo"
    recorded_compactions: int = 0
    recorded: list[RecordedCompaction] = Field(default_factory=list)

    # Shared, immutable message objects: what changed per request (``Contexts``), never copies.
    _contexts: Contexts | None = PrivateAttr(default=None)
    _raw: Sequence[Message] | None = PrivateAttr(default=None)
    _final: tuple[Message, ...] | None = PrivateAttr(default=None)
    # ``config`` as the typed value: the one the replay ran (``keep_config``), or parsed once from ``config``.
    _config: CompactionConfig | None = PrivateAttr(default=None)

    @property
    def compactions_by_kind(self) -> dict[str, int]:
        """The compactions counted in ``compactions_by_strategy``, by what they did (``COMPACTION_KINDS``), in that order.

        Strategy names alone ("tool_budget", "full") do not say whether a summary was written: a spill is
        not a summary, and "compactions 4" that were all spills read as four summaries.
        """
        counts = dict.fromkeys(COMPACTION_KINDS, 0)
        # The one field read, not a Row built per request, and its summaries left compressed (the Timeline asks
        # this on every rerun).
        rows = self.rows
        for events in rows.light_events() if isinstance(rows, Rows) else column(rows, "events"):
            for ev in events:
                kind = compaction_kind(ev)
                if kind is not None:
                    counts[kind] += 1
        return counts

    def __eq__(self, other: object) -> bool:
        # The in-memory contexts are a cache of the replay, not part of the report's value.
        return isinstance(other, Report) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    # -- the typed config -----------------------------------------------------

    def keep_config(self, config: CompactionConfig) -> None:
        """Keep the config the replay ran, whose dump ``config`` is, so ``compaction_config`` needs no parse."""
        self._config = config

    @property
    def compaction_config(self) -> CompactionConfig:
        """The config as a ``CompactionConfig``: the replay's own, or ``config`` validated once (a report read back).

        Raises pydantic's ValidationError when ``config`` does not fit this version of the lab.
        """
        if self._config is None:
            self._config = CompactionConfig.model_validate(self.config)
        return self._config

    # -- contexts -------------------------------------------------------------

    def _attach(self, contexts: Contexts, raw: Sequence[Message], final: tuple[Message, ...]) -> None:
        self._contexts, self._raw, self._final = contexts, raw, final

    @property
    def has_contexts(self) -> bool:
        return self._contexts is not None

    def _row(self, k: int) -> int:
        if self._contexts is None:
            raise LabError("this report has no contexts (it was read from JSON); replay the transcript to get them")
        if not isinstance(k, int) or not -len(self.rows) <= k < len(self.rows):
            raise LabError(f"request {k!r} out of range: the replay has {len(self.rows)} request(s)")
        return k % len(self.rows)

    def context_at(self, k: int, *, include_boundaries: bool = False) -> list[Message]:
        """The context sent at request ``k`` (boundary markers, never sent, only on request)."""
        msgs = self._contexts[self._row(k)]  # type: ignore[index]
        if include_boundaries:
            return list(msgs)
        return [m for m in msgs if is_sent(m)]

    def input_at(self, k: int) -> list[Message]:
        """The context request ``k``'s pipeline started from (boundary markers included).

        The replay builds it this way: what was sent at ``k - 1``, then every raw
        message from ``k - 1``'s response up to request ``k``.
        """
        n = len(self.rows)
        if not isinstance(k, int) or not 0 <= k < n:
            raise LabError(f"request {k!r} out of range: the replay has {n} request(s)")
        raw = self.raw_at(k)
        if k == 0:
            return raw
        return self.context_at(k - 1, include_boundaries=True) + raw[self.rows[k - 1].message_index :]

    def raw_at(self, k: int) -> list[Message]:
        """The raw, uncompacted history at request ``k``: every transcript message before it."""
        row = self.rows[self._row(k)]
        return list(self._raw[: row.message_index])  # type: ignore[index]

    def final_context(self) -> list[Message]:
        """The context after the whole session: the last request's context plus everything after it."""
        if self._final is None:
            raise LabError("this report has no contexts (it was read from JSON); replay the transcript to get them")
        return [m for m in self._final if is_sent(m)]

    # -- views and I/O ---------------------------------------------------------

    def totals(self) -> dict[str, Any]:
        """Everything but the rows, config, settings and meta: the numbers a comparison table shows."""
        data = self.model_dump(mode="json", exclude={"rows", "config", "settings", "pricing_source", "meta", "retention", "recorded"})
        data["retention"] = {name: part.share for name, part in self.retention.parts.items()}
        return data

    @property
    def df(self) -> pd.DataFrame:
        """The rows as a DataFrame: one line per request, nested fields flattened to columns."""
        import pandas as pd

        records = []
        for row in self.rows:
            rec = row.model_dump(exclude=set(_NESTED))
            rec["events"] = len(row.events)
            rec["problems"] = len(row.problems)
            for stage, n in row.freed_by_stage.items():
                rec[f"freed_{stage}"] = n
            for part, n in row.composition.items():
                rec[f"tokens_{part}"] = n
            if row.retention is not None:
                rec["retention_score"] = row.retention.score
            records.append(rec)
        frame = pd.DataFrame.from_records(records)
        freed = [c for c in frame.columns if str(c).startswith("freed_")]
        if freed:
            frame[freed] = frame[freed].fillna(0).astype("int64")
        return frame

    def to_dict(self) -> dict[str, Any]:
        return {"lab_replay_report": self.version, **self.model_dump(mode="json")}

    def to_json(self, *, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Report:
        if not isinstance(data, dict):
            raise LabError(f"a replay report must be a JSON object, got {type(data).__name__}")
        # "run" ties a written report to its request dump (``write(run=...)``); it is not part of the model.
        body = {k: v for k, v in data.items() if k not in ("lab_replay_report", "run")}
        config = body.get("config")
        if "settings" not in body and isinstance(config, dict) and isinstance(config.get("replay"), dict):
            # Reports written before the split kept the replay settings inside the config, as "replay".
            body["config"] = {k: v for k, v in config.items() if k != "replay"}
            body["settings"] = config["replay"]
        try:
            return cls.model_validate(body)
        except ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "<root>"
            raise LabError(f"not a replay report: {loc}: {first['msg']}") from None

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Report:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise LabError(f"cannot read replay report {path}: {e}") from None
        return cls.from_dict(data)

    def write(self, path: str | os.PathLike[str], *, run: dict[str, Any] | None = None) -> Path:
        """Write the report as JSON; the file appears complete or not at all.

        ``run`` (the run id, and the request dump's name and sha256 when there is one) is written as the
        top-level ``"run"`` key, so a report found beside a dump says whether they come from one run.
        """
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            data = self.to_dict() if run is None else {"lab_replay_report": self.version, "run": run, **self.model_dump(mode="json")}
            return write_text_atomic(target, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        except OSError as e:
            raise LabError(f"cannot write {target}: {e.strerror or e}") from None


def column(rows: Sequence[Row], name: str) -> list[Any]:
    """Field ``name`` of every row: ``Rows.column`` when the rows are packed, else read from each."""
    return rows.column(name) if isinstance(rows, Rows) else [getattr(r, name) for r in rows]


def recorded_totals(rows: Sequence[Row]) -> dict[str, Any]:
    """The report's recorded-bill fields over the requests whose response carries the agent's own cost: that
    cost summed, how many requests, these prices applied to the agent's recorded usage, and the lab's price
    for the same requests replayed uncompacted (what ``cost_check`` sets side by side)."""
    recorded = column(rows, "recorded_cost")
    billed = [i for i, c in enumerate(recorded) if c is not None]
    if not billed:
        return {"recorded_cost": None, "recorded_cost_requests": 0, "recorded_usage_cost": None, "recorded_cost_priced": None}
    usage, priced = column(rows, "recorded_usage_cost"), column(rows, "cost_uncompacted")
    return {
        "recorded_cost": sum(recorded[i] or 0.0 for i in billed),
        "recorded_cost_requests": len(billed),
        "recorded_usage_cost": sum(usage[i] or 0.0 for i in billed),
        "recorded_cost_priced": sum(priced[i] for i in billed),
    }


def _times(x: float, of: float) -> str:
    return f"x{x / of:.2f}" if of > 0 else "n/a"


def cost_check(report: Report) -> str | None:
    """One line setting the agent's recorded bill beside the lab's prices; None when the agent recorded no cost.

    Two comparisons: these prices applied to the tokens the agent recorded (does the price table match the
    provider's?), and the lab's own replay of the file uncompacted (does the file hold what the agent sent?
    a transcript without the system prompt or tool definitions prices far lower).
    """
    recorded, usage, priced = report.recorded_cost, report.recorded_usage_cost, report.recorded_cost_priced
    if recorded is None or priced is None:
        return None
    line = (f"the agent recorded a bill of ${recorded:.4f} for {report.recorded_cost_requests} of {report.requests} requests; "
            f"these prices give ${usage or 0.0:.4f} for the tokens it recorded ({_times(usage or 0.0, recorded)}) and "
            f"${priced:.4f} for this file's requests replayed uncompacted ({_times(priced, recorded)})")
    if report.recorded_compactions and report.recorded_compactions_mode == "undo":
        # Undone, the raw history is longer than what the agent sent after its own compactions.
        line += f"; the agent compacted {report.recorded_compactions} time(s) and this replay undid it, so the replay prices more than it sent"
    return line


# What a compaction did, by the stage that did it: one vocabulary for the CLI, the charts and the pages.
# kind -> (one, several, what it is). Summaries are counted apart from what only moves or clears tool output.
COMPACTION_KINDS: dict[str, tuple[str, str, str]] = {
    "summary": ("summary", "summaries", "older messages replaced by a summary"),
    "spill": ("spill", "spills", "large tool results moved to files, a short stub left in their place"),
    "clearing": ("clearing", "clearings", "old tool results cleared from the context"),
    "dedup": ("read dedup", "read dedups", "a file read again replaced by a pointer to the earlier read"),
    "truncation": ("truncation", "truncations", "oldest messages dropped to recover from an overflow"),
    "other": ("other compaction", "other compactions", "a stage the lab does not name"),
}
# A stage's events as the timeline's legend names them: a compaction by its kind, the rest by what they are.
STAGE_LABELS = {"summary": "summary", "spill": "spill", "microcompact": "clearing", "dedup": "read dedup",
                "recovery": "overflow recovery", "watermark": "watermark decision", "active": "history before the last boundary dropped"}
_STAGE_KINDS = {"summary": "summary", "spill": "spill", "microcompact": "clearing", "dedup": "dedup", "recovery": "truncation"}
# A compaction strategy's kind, for what is counted by strategy alone (the compare table's compactions_<strategy>
# columns): the stages' fixed strategy names; anything else is a summary's (full, session_memory, llm, ...).
STRATEGY_KINDS = {"tool_budget": "spill", "observation_masking": "clearing", "clear_tool_uses": "clearing", "microcompact": "clearing",
                  "read_dedup": "dedup", "reactive": "truncation", "emergency": "truncation"}
# The replay's own rule for what counts (engine._count_compactions): decisions and bookkeeping do not.
_NOT_COUNTED_STAGES = ("watermark", "active")


def compaction_kind(event: dict[str, Any]) -> str | None:
    """The ``COMPACTION_KINDS`` key of a row's event, or None when the event is not a compaction.

    Counted as the replay counts (``compactions_by_strategy``): a stage's effective event, not the watermark's
    decision, not a spill re-applied from the ledger. Recovery's "full" strategy writes a summary.
    """
    stage, strategy = event.get("stage"), event.get("strategy")
    freed = event.get("tokens_freed", event.get("tokens_before", 0) - event.get("tokens_after", 0))
    if not strategy or not event.get("success", True) or freed <= 0 or stage in _NOT_COUNTED_STAGES or strategy == "reapply":
        return None
    if stage == "recovery" and strategy == "full":
        return "summary"
    return _STAGE_KINDS.get(str(stage), "other")


def describe_compactions(by_kind: dict[str, int], *, zeros: tuple[str, ...] = ("summary",)) -> str:
    """ "0 summaries, 4 spills": every kind that happened, and the ``zeros`` kinds even when none did."""
    parts = [f"{n} {COMPACTION_KINDS[k][0] if n == 1 else COMPACTION_KINDS[k][1]}" for k, n in by_kind.items() if n or k in zeros]
    return ", ".join(parts) or "none"


def invalid_reasons(report: Report) -> dict[str, list[tuple[int, str]]]:
    """Why requests were invalid: each distinct reason -> (request, where in its context) for every request it hit.

    A row's problem reads "message 3 (assistant, id m3): empty text block": the reason is what follows the
    message's label, so one reason met in many requests is said once.
    """
    out: dict[str, list[tuple[int, str]]] = {}
    # Only the invalid rows are built: a valid one has nothing to say, and a Row is made when read.
    rows = report.rows
    flags = zip(column(rows, "valid_anthropic"), column(rows, "valid_openai"), strict=True)
    for row in (rows[k] for k, (a, o) in enumerate(flags) if not (a and o)):
        seen: set[str] = set()
        for problem in row.problems or ["no reason recorded"]:
            # The replay prefixes the provider that refuses it ("anthropic: message 2 (...): empty text block").
            provider, _, rest = problem.partition(": ") if problem.startswith(("anthropic: ", "openai: ")) else ("", "", problem)
            where, _, reason = rest.rpartition(": ") if ": " in rest else ("", "", rest)
            reason = f"{reason} ({_PROVIDER_NAMES.get(provider, provider)} refuses it)" if provider else reason
            if reason not in seen:
                seen.add(reason)
                out.setdefault(reason, []).append((row.index, where))
    return out


_PROVIDER_NAMES = {"anthropic": "Anthropic", "openai": "OpenAI"}


def _requests(hits: list[tuple[int, str]], most: int = 5) -> str:
    shown = ", ".join(str(i) for i, _ in hits[:most])
    more = f" and {len(hits) - most} more" if len(hits) > most else ""
    first = f"; first at {hits[0][1]}" if hits[0][1] else ""
    return f"request{'s' if len(hits) > 1 else ''} {shown}{more}{first}"


def describe_invalid(report: Report, *, most: int = 3) -> list[str]:
    """One line per reason requests were invalid (a provider would refuse them), with where; empty when none were.

    The CLI prints them, and the pages show them beside every invalid count (``lab.ui.explain.show_invalid``).
    """
    reasons = sorted(invalid_reasons(report).items(), key=lambda kv: (-len(kv[1]), kv[1][0][0]))
    lines = [f"{reason}: {_requests(hits)}" for reason, hits in reasons[:most]]
    if len(reasons) > most:
        lines.append(f"{len(reasons) - most} more reason(s); every row's problems are in the report")
    return lines


def raw_peak_note(report: Report) -> str:
    """What the raw-history peak is counted with: another counter gives another figure for the same history."""
    return f"raw history peak {report.peak_raw:,} tokens by the {report.counter or 'config'} counter; another counter counts another peak"
