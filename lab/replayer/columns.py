"""Typed column storage: one field's values for many records, as compact as the values allow, read back exactly.

Why: a replay keeps one row of about sixty values per request, and a tuple of
Python objects per row (each int or float beyond the smallest its own object)
cost about a kilobyte a row, the largest share of a replay's memory on a
session of many tiny messages. Most of those values are small ints, floats and
flags, and many fields never change over a session (a flag never set, a count
always zero, a cost always None): a column of them is an ``array`` of the
narrowest machine type that holds them, or just the one value and a count.

A column takes values a batch at a time (``extend``) and returns the column to
use from then on, which is itself or a wider shape when a value did not fit:

- ``Const``: every value so far is the same ``None``, bool, int or float (the
  same bits: ``-0.0`` is not ``0.0``), kept once with a count;
- ``Typed``: ints in the narrowest of ``b h i q``, floats as ``d``, bools as
  ``b``, each optionally ``None`` (a byte mask beside the array);
- ``Sparse``: values that are mostly one usual object (an empty container's
  marker, ``None``), kept as a dict of the others by position;
- ``Objects``: anything else, a plain list (what a column falls back to, so any
  value at all round-trips: the exact type of every value read back is the type
  stored, never an int for a bool or a float for an int).
"""

from __future__ import annotations

from array import array
from typing import Any
from collections.abc import Sequence

__all__ = ["Column", "Const", "Typed", "Sparse", "Objects", "column_of"]

# Int widths, narrowest first, and the range each holds.
_INT_CODES = "bhiq"
_INT_RANGE = {code: (-(1 << (8 * array(code).itemsize - 1)), (1 << (8 * array(code).itemsize - 1)) - 1) for code in _INT_CODES}
_BOOLS = (False, True)
_NONE = type(None)


class Column:
    """One field's values, by position; see the module docstring for the shapes."""

    __slots__ = ()

    def __len__(self) -> int:
        raise NotImplementedError

    def extend(self, values: Sequence[Any]) -> Column:
        """Append ``values``; returns the column holding them all (``self``, or a wider shape made from it)."""
        raise NotImplementedError

    def get(self, i: int) -> Any:
        raise NotImplementedError

    def values(self, start: int = 0, stop: int | None = None) -> list[Any]:
        """The values at ``start:stop`` (non-negative bounds), as they were given."""
        raise NotImplementedError


def _all_same(values: Sequence[Any], first: Any) -> bool:
    """Every value is ``first``: the same type, and the same value (for floats, the same bits)."""
    kind = type(first)
    if kind not in (_NONE, bool, int, float) or any(type(v) is not kind for v in values):
        return False
    if kind is float:
        return array("d", values).tobytes() == array("d", (first,)).tobytes() * len(values)
    # One type, and equality within it is identity of value (None, bools and ints).
    return values.count(first) == len(values)


def column_of(values: Sequence[Any]) -> Column:
    """The most compact column that holds ``values`` exactly."""
    values = list(values)
    if values and _all_same(values, values[0]):
        return Const(values[0], len(values))
    typed = Typed.of(values)
    return typed if typed is not None else Objects(values)


class Const(Column):
    """Every value is one ``None``, bool, int or float."""

    __slots__ = ("value", "n")

    def __init__(self, value: Any, n: int) -> None:
        self.value, self.n = value, n

    def __len__(self) -> int:
        return self.n

    def extend(self, values: Sequence[Any]) -> Column:
        if not values:
            return self
        if _all_same(values, self.value):
            self.n += len(values)
            return self
        return column_of([self.value] * self.n + list(values))

    def get(self, i: int) -> Any:
        return self.value

    def values(self, start: int = 0, stop: int | None = None) -> list[Any]:
        stop = self.n if stop is None else min(stop, self.n)
        return [self.value] * max(0, stop - start)


class Typed(Column):
    """Ints, floats or bools in an ``array``, with ``None`` marked in a byte mask (made when the first one comes)."""

    __slots__ = ("kind", "data", "none")

    def __init__(self, kind: type, data: array, none: bytearray | None) -> None:
        self.kind, self.data, self.none = kind, data, none

    @classmethod
    def of(cls, values: Sequence[Any]) -> Typed | None:
        """``values`` as a typed column, or None when they are not all of one of the three types (or None)."""
        kinds = set(map(type, values)) - {_NONE}
        if len(kinds) != 1:
            return None
        [kind] = kinds
        if kind not in (int, float, bool):
            return None
        empty = array("d" if kind is float else "b")
        col = cls(kind, empty, None)
        return col if col._add(values) else None

    def __len__(self) -> int:
        return len(self.data)

    def _add(self, values: Sequence[Any]) -> bool:
        """Append ``values`` when they fit this column's kind (any int fits, by widening); False when not."""
        kinds = set(map(type, values))
        nones = _NONE in kinds
        if kinds - {_NONE, self.kind}:
            return False
        if nones:
            if self.none is None:
                self.none = bytearray(len(self.data))
            self.none.extend([v is None for v in values])
            values = [0 if v is None else v for v in values]
        elif self.none is not None:
            self.none.extend(bytes(len(values)))
        if self.kind is int and values:
            low, high = min(values), max(values)
            code = self.data.typecode
            if not _INT_RANGE[code][0] <= low <= high <= _INT_RANGE[code][1]:
                # The narrowest width that holds the new values, and so the old ones (it is wider than theirs).
                wider = [c for c in _INT_CODES[_INT_CODES.index(code) + 1 :] if _INT_RANGE[c][0] <= low <= high <= _INT_RANGE[c][1]]
                if not wider:
                    return False
                self.data = array(wider[0], self.data)
        self.data.extend(values)
        return True

    def extend(self, values: Sequence[Any]) -> Column:
        if self._add(values):
            return self
        return Objects(self.values() + list(values))

    def get(self, i: int) -> Any:
        if self.none is not None and self.none[i]:
            return None
        v = self.data[i]
        return _BOOLS[v] if self.kind is bool else v

    def values(self, start: int = 0, stop: int | None = None) -> list[Any]:
        out = self.data[start:stop].tolist()
        if self.kind is bool:
            out = [_BOOLS[v] for v in out]
        if self.none is not None:
            out = [None if n else v for v, n in zip(out, self.none[start:stop], strict=True)]
        return out


class Sparse(Column):
    """Values that are mostly one object (``usual``): only the others are kept, by position."""

    __slots__ = ("usual", "n", "other")

    def __init__(self, usual: Any) -> None:
        self.usual, self.n = usual, 0
        self.other: dict[int, Any] = {}

    def __len__(self) -> int:
        return self.n

    def extend(self, values: Sequence[Any]) -> Column:
        usual, other, n = self.usual, self.other, self.n
        for i, v in enumerate(values, n):
            if v is not usual:
                other[i] = v
        self.n = n + len(values)
        return self

    def get(self, i: int) -> Any:
        return self.other.get(i, self.usual)

    def values(self, start: int = 0, stop: int | None = None) -> list[Any]:
        stop = self.n if stop is None else min(stop, self.n)
        out = [self.usual] * max(0, stop - start)
        for i, v in self.other.items():
            if start <= i < stop:
                out[i - start] = v
        return out


class Objects(Column):
    """Any values, as a list."""

    __slots__ = ("data",)

    def __init__(self, data: list[Any]) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def extend(self, values: Sequence[Any]) -> Column:
        self.data.extend(values)
        return self

    def get(self, i: int) -> Any:
        return self.data[i]

    def values(self, start: int = 0, stop: int | None = None) -> list[Any]:
        return self.data[start:stop]
