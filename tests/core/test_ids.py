"""``id_key``: the ids of pipeline-written messages stay what they were, and never collide by concatenation."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from lab.core.ids import id_key

# st.text() never draws lone surrogates, i.e. exactly the texts plain UTF-8 could always encode.
parts = st.lists(st.text(max_size=40), min_size=1, max_size=5)


def _plain_utf8_key(*values: str) -> str:
    # What the summary, tail and recovery modules each computed before they shared one helper.
    return hashlib.sha256("\x1f".join(values).encode("utf-8")).hexdigest()[:16]


def test_pinned_values() -> None:
    # Summary and placeholder ids appear in golden files and exported requests: these must not drift.
    assert id_key("full", "m1", "m9", "## Summary") == "2498b975115c4282"
    assert id_key("user", "<start>", "a1") == "6ea27e6afa4b43e9"


@given(parts)
def test_same_value_as_before_for_every_encodable_text(values: list[str]) -> None:
    assert id_key(*values) == _plain_utf8_key(*values)


@given(parts)
def test_sixteen_hex_characters(values: list[str]) -> None:
    key = id_key(*values)
    assert len(key) == 16 and set(key) <= set("0123456789abcdef")


def test_parts_are_separated() -> None:
    assert id_key("ab", "c") != id_key("a", "bc")
    assert id_key("abc") != id_key("ab", "c")


def test_a_lone_surrogate_is_hashed_not_an_error() -> None:
    # JSON "\ud800" escapes reach the pipeline as lone surrogates; a summary of such a text still needs an id.
    assert id_key("a\ud800") == "25819b9b43d49909"
    assert id_key("a\ud800") != id_key("a\ud801")
