"""Typed columns (``lab.replayer.columns``) and the rows stored in them give back every value exactly as given."""

from __future__ import annotations

import math
import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.stats import PARTS
from lab.replayer.columns import Const, Objects, Sparse, Typed, column_of
from lab.replayer.report import LostMention, Retention, Row, Rows


def _same(a: Any, b: Any) -> bool:
    """Equal with the same type, and for floats the same bits (``-0.0`` is not ``0.0``, NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    return bool(a == b)


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80), st.integers(min_value=-3, max_value=300),
    st.floats(allow_nan=True), st.sampled_from([0.0, -0.0]), st.text(max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(_VALUES, st.sampled_from([0, None, 1.5])), min_size=1, max_size=12), min_size=1, max_size=5))
def test_a_column_gives_back_every_value_of_every_batch(batches: list[list[Any]]) -> None:
    col = column_of(batches[0])
    for batch in batches[1:]:
        col = col.extend(batch)
    given_values = [v for batch in batches for v in batch]
    assert len(col) == len(given_values)
    assert all(_same(a, b) for a, b in zip(col.values(), given_values, strict=True))
    assert all(_same(col.get(i), v) for i, v in enumerate(given_values))
    mid = len(given_values) // 2
    assert all(_same(a, b) for a, b in zip(col.values(1, mid), given_values[1:mid], strict=True))


def test_each_shape_is_the_most_compact_that_holds_the_values() -> None:
    assert isinstance(column_of([0, 0, 0]), Const) and isinstance(column_of([None] * 4), Const)
    # One value of another type, or another value, and the column widens.
    assert isinstance(column_of([0, 0]).extend([1]), Typed)
    assert isinstance(column_of([0.0]).extend([-0.0]), Typed)
    small = column_of([1, 2, 3])
    assert isinstance(small, Typed) and small.data.typecode == "b"
    wide = small.extend([70_000, None])
    assert isinstance(wide, Typed) and wide.data.typecode == "i" and wide.values() == [1, 2, 3, 70_000, None]
    # Never an int for a bool, nor a float for an int: such a mix is kept as objects.
    assert isinstance(column_of([True, 1]), Objects) and isinstance(column_of([1, 2.0]), Objects)
    assert isinstance(column_of([2**70, 1]), Objects)
    sparse = Sparse(None).extend([None, "a", None])
    assert sparse.values() == [None, "a", None] and sparse.other == {1: "a"}


def _row(i: int, **fields: Any) -> Row:
    base = dict(index=i, message_index=2 * i + 1, time=1.7e9 + i * 0.25, raw_tokens=100 * i, tokens_before=90 * i,
                sent_tokens=80 * i, sent_messages=i, cost=i / 7, composition=dict(zip(PARTS, (0, i, 2 * i, 3, 0, i % 5), strict=True)))
    return Row(**{**base, **fields})


def test_rows_over_many_batches_read_back_as_given() -> None:
    # Enough rows for several stored batches and a pending one, with the odd values that widen a column.
    rows = [_row(i) for i in range(700)]
    rows[3] = _row(3, events=[{"stage": "spill", "tokens_freed": 5}], freed_by_stage={"spill": 5}, problems=["x"])
    rows[300] = _row(300, recorded_cost=0.5, first_request_kept=True, composition={"user": 1, "system": 2})
    rows[650] = _row(650, lost_mentions=[LostMention(mention="a.py", kind="path", lost_to="this config")], retention=Retention(score=0.5))
    rows[699] = _row(699, composition={}, raw_tokens=2**40, cost=-0.0)
    stored = Rows(rows)
    assert len(stored) == 700 and list(stored) == rows and stored == rows
    assert stored[-1] == rows[-1] and stored[300] == rows[300] and stored[3].events == rows[3].events
    assert stored[250:520] == rows[250:520] and stored[::97] == rows[::97] and stored[5:2] == []
    for name in Row.model_fields:
        assert stored.column(name) == [getattr(r, name) for r in rows], name
    assert math.copysign(1.0, stored[699].cost) == -1.0
    # Empty containers are made afresh for each read.
    stored[5].problems.append("changed")
    assert stored[5].problems == []
    back = pickle.loads(pickle.dumps(stored))
    assert back == stored and list(back) == rows
