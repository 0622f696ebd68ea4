"""``shared_prefix``: the leading messages two histories share, the same or equal objects."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import Message, shared_prefix
from tests.builders import user

# A small pool, so drawn histories share objects, equal copies and different messages.
_POOL = [user(f"m{i}") for i in range(4)]


def _reference(a: list[Message], b: list[Message], limit: int | None) -> int:
    n = min(len(a), len(b)) if limit is None else max(0, min(limit, len(a), len(b)))
    for i in range(n):
        if a[i] is not b[i] and a[i] != b[i]:
            return i
    return n


# Each entry: which pool message, and whether to use a value-equal copy instead of the object itself.
_items = st.lists(st.tuples(st.integers(0, len(_POOL) - 1), st.booleans()), max_size=60)


def _build(spec: list[tuple[int, bool]]) -> list[Message]:
    return [_POOL[i].model_copy() if copy else _POOL[i] for i, copy in spec]


@settings(max_examples=200, deadline=None)
@given(a=_items, b=_items, limit=st.none() | st.integers(0, 70), as_tuple=st.booleans())
def test_shared_prefix_matches_an_element_by_element_reference(a: list, b: list, limit: int | None, as_tuple: bool) -> None:
    x, y = _build(a), _build(b)
    expected = _reference(x, y, limit)
    assert shared_prefix(tuple(x) if as_tuple else x, y, limit) == expected
    assert shared_prefix(y, x, limit) == expected


def test_a_long_extension_with_a_late_difference() -> None:
    # Past the binary search's 16-message window: the first difference is found exactly.
    base = [user(f"m{i}") for i in range(500)]
    longer = base + [user("new")]
    assert shared_prefix(base, longer) == 500
    changed = base[:317] + [user("other")] + base[318:]
    assert shared_prefix(base, changed) == 317
    assert shared_prefix(base, changed, 300) == 300
    assert shared_prefix(base, [m.model_copy() for m in base]) == 500
