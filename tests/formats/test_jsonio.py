"""Streaming JSONL, single JSON documents, and the detection probe."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.core.messages import ImportNotes
from lab.errors import TranscriptError
from lab.formats.jsonio import (
    HEAD_BYTES,
    clean_strings,
    gc_paused,
    is_jsonl,
    iter_jsonl,
    iter_jsonl_as,
    iter_jsonl_lines,
    iter_log_lines,
    leading_char,
    read_file_head,
    read_json,
    repair_note,
    repairs,
    utf16_of,
)


def _write(path: Path, data: bytes | str) -> Path:
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


# --- JSONL: the happy path -------------------------------------------------


def test_yields_line_numbers_and_objects(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n\n{"b": 2}\n')
    assert list(iter_jsonl(p)) == [(1, {"a": 1}), (3, {"b": 2})]


def test_accepts_a_utf8_bom_and_a_missing_final_newline(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", b'\xef\xbb\xbf{"a": "\xc3\xa9"}\n{"b": 2}')
    assert [v for _, v in iter_jsonl(p)] == [{"a": "é"}, {"b": 2}]


def test_streams_records_before_reading_the_rest(tmp_path: Path) -> None:
    # Records before a broken line are handed over first: the file is never read whole up front.
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n{"b": 2}\nnot json\n')
    it = iter_jsonl(p)
    assert next(it) == (1, {"a": 1})
    assert next(it) == (2, {"b": 2})
    with pytest.raises(TranscriptError):
        next(it)


# --- JSONL: errors that say where and what ------------------------------------


def test_empty_file(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", "")
    with pytest.raises(TranscriptError, match="empty file") as err:
        list(iter_jsonl(p))
    assert err.value.file == str(p)


def test_blank_lines_only_count_as_empty(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", "\n  \n\n")
    with pytest.raises(TranscriptError, match="empty file"):
        list(iter_jsonl(p))


def test_not_json_names_the_line(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n{oops}\n{"b": 2}\n')
    with pytest.raises(TranscriptError, match="not JSON") as err:
        list(iter_jsonl(p))
    assert err.value.where == "line 2"
    assert err.value.expected


def test_latin1_bytes_are_not_utf8(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n{"name": "Jos\xe9"}\n'.encode("latin-1"))
    with pytest.raises(TranscriptError, match="not UTF-8") as err:
        list(iter_jsonl(p))
    assert err.value.where == "line 2"
    assert "0xe9" in str(err.value)


def test_truncated_last_line_is_named_as_such(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n{"b": "half a rec')
    with pytest.raises(TranscriptError, match="truncated last line") as err:
        list(iter_jsonl(p))
    assert err.value.where == "line 2"


def test_broken_line_followed_by_newline_is_not_called_truncated(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n{"b": 2,, }\n')
    with pytest.raises(TranscriptError) as err:
        list(iter_jsonl(p))
    assert "truncated" not in str(err.value)


@pytest.mark.parametrize("line,kind", [("[1, 2]", "an array"), ('"text"', "a string"), ("3", "a number"), ("null", "null")])
def test_non_object_line(tmp_path: Path, line: str, kind: str) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n' + line + "\n")
    with pytest.raises(TranscriptError, match=f"holds {kind}") as err:
        list(iter_jsonl(p))
    assert err.value.where == "line 2"


def test_any_value_lines_are_allowed_by_the_raw_iterator(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", "[1]\n2\n")
    assert list(iter_jsonl_lines(p)) == [(1, [1]), (2, 2)]


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_path_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    p = tmp_path / "nope.jsonl" if kind == "missing" else tmp_path
    with pytest.raises(TranscriptError):
        list(iter_jsonl(p))


# --- single documents ---------------------------------------------------------


def test_read_json_with_bom(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.json", b'\xef\xbb\xbf{"x": [1, 2]}')
    assert read_json(p) == {"x": [1, 2]}


def test_read_json_error_carries_line_and_column(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.json", '{\n  "x": 1,\n  "y": oops\n}')
    with pytest.raises(TranscriptError, match="not JSON") as err:
        read_json(p)
    assert err.value.where == "line 3 column 8"


def test_read_json_empty_and_latin1(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="empty file"):
        read_json(_write(tmp_path / "a.json", "   \n"))
    with pytest.raises(TranscriptError, match="not UTF-8"):
        read_json(_write(tmp_path / "b.json", '{"n": "\xe9"}'.encode("latin-1")))


# --- the probe ------------------------------------------------------------------


def test_probe_of_jsonl(tmp_path: Path) -> None:
    lines = [json.dumps({"i": i}) for i in range(30)]
    probe = read_file_head(_write(tmp_path / "a.jsonl", "\n".join(lines) + "\n"))
    assert probe.shape == "jsonl"
    assert probe.records == [{"i": i} for i in range(20)]
    assert probe.document is None


def test_probe_of_a_small_document(tmp_path: Path) -> None:
    probe = read_file_head(_write(tmp_path / "a.json", json.dumps({"messages": []}, indent=2)))
    assert probe.shape == "json"
    assert probe.document == {"messages": []}


def test_probe_of_a_one_line_object_offers_it_as_a_record_too(tmp_path: Path) -> None:
    probe = read_file_head(_write(tmp_path / "a.jsonl", '{"type": "user"}\n'))
    assert probe.shape == "json"
    assert probe.records == [{"type": "user"}]


def test_probe_of_a_big_document_reads_only_the_head(tmp_path: Path) -> None:
    doc = {"items": ["x" * 1000 for _ in range(3000)]}
    probe = read_file_head(_write(tmp_path / "a.json", json.dumps(doc, indent=1)))
    assert probe.shape == "json"
    assert probe.document is None
    assert len(probe.head.encode("utf-8")) <= HEAD_BYTES


def test_probe_of_jsonl_whose_first_line_is_longer_than_the_head(tmp_path: Path) -> None:
    big = json.dumps({"type": "user", "text": "y" * (2 * HEAD_BYTES)})
    probe = read_file_head(_write(tmp_path / "a.jsonl", big + "\n" + '{"type": "assistant"}\n'))
    assert probe.shape == "jsonl"
    assert probe.records is not None and [r["type"] for r in probe.records] == ["user", "assistant"]


def test_probe_of_text_and_of_an_empty_file(tmp_path: Path) -> None:
    assert read_file_head(_write(tmp_path / "a.txt", "hello world\n")).shape == "unknown"
    with pytest.raises(TranscriptError, match="empty file"):
        read_file_head(_write(tmp_path / "b.json", ""))


# --- the fast path reads what the stripped line says --------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
# JSON's own whitespace, and characters only ``str.strip`` removes (the slow path's business).
_padding = st.text(alphabet=" \t\r\x0b\x0c\x1c\x85\xa0\u2028\u3000", max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(_padding, _json_values, _padding, st.booleans()), min_size=1, max_size=5))
def test_every_line_reads_as_its_stripped_text(tmp_path: Path, lines: list[tuple[str, Any, str, bool]]) -> None:
    texts = [f"{pre}{json.dumps(value)}{post}" + ("\n \n" if blank_after else "") for pre, value, post, blank_after in lines]
    p = _write(tmp_path / "pad.jsonl", "\n".join(texts) + "\n")
    # Lines end at "\n" only (no universal newlines), as the reader splits them.
    # What json.loads gives, with strings no encoder can write (NUL, lone surrogates) replaced.
    expected = [clean_strings(json.loads(line.strip())) for line in p.read_bytes().decode("utf-8").split("\n") if line.strip()]
    assert [v for _, v in iter_jsonl_lines(p)] == expected


@pytest.mark.parametrize("line", ['{"a": 1} x', '{"a": 1}{"b": 2}', '{"a": 1}\x00', "\ufeff{}"])
def test_a_value_followed_by_more_than_whitespace_is_not_json(tmp_path: Path, line: str) -> None:
    p = _write(tmp_path / "extra.jsonl", '{"ok": 1}\n' + line + "\n")
    with pytest.raises(TranscriptError) as err:
        list(iter_jsonl(p))
    assert err.value.where == "line 2"
    assert "not JSON" in str(err.value)


def test_crlf_lines_read_like_lf_lines(tmp_path: Path) -> None:
    p = _write(tmp_path / "crlf.jsonl", '{"a": 1}\r\n\r\n{"b": [2]}\r\n')
    assert list(iter_jsonl(p)) == [(1, {"a": 1}), (3, {"b": [2]})]


# --- leading_char ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,char",
    [(b'[{"a": 1}]', "["), (b'\xef\xbb\xbf \n\t[1]', "["), (b'{"a": 1}\n', "{"), (b"  hello", "h"), (b" \n ", "")],
)
def test_leading_char_is_the_probe_heads_first_character(tmp_path: Path, data: bytes, char: str) -> None:
    p = _write(tmp_path / "f.json", data)
    assert leading_char(p) == char == read_file_head(p).head.lstrip()[:1]


def test_leading_char_of_an_empty_or_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="empty file"):
        leading_char(_write(tmp_path / "empty.jsonl", b""))
    with pytest.raises(TranscriptError, match="no such file"):
        leading_char(tmp_path / "missing.jsonl")


# --- the fast parser gives json.loads's values ------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (1 == 1.0 == True would hide a changed type)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


_all_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_all_values, min_size=1, max_size=4), ascii_only=st.booleans())
def test_lines_read_as_json_loads_reads_them(tmp_path: Path, values: list[Any], ascii_only: bool) -> None:
    # Any size of int, every float (NaN and infinities as json writes them), any text, escaped or not.
    lines = [json.dumps(v, ensure_ascii=ascii_only) for v in values]
    p = _write(tmp_path / "v.jsonl", "\n".join(lines) + "\n")
    got = [v for _, v in iter_jsonl_lines(p)]
    assert len(got) == len(lines)
    # json.loads's values, but for strings no encoder can write (NUL, lone surrogates): replaced.
    assert all(_same(g, clean_strings(json.loads(line))) for g, line in zip(got, lines, strict=True))
    doc = _write(tmp_path / "v.json", "[" + ",".join(lines) + "]")
    assert _same(read_json(doc), clean_strings(json.loads(doc.read_text(encoding="utf-8"))))


@pytest.mark.parametrize(
    "text",
    [
        "18446744073709551615",  # the largest 64-bit unsigned int
        "18446744073709551616",  # one more: a fast parser that makes it a float would lose it
        "-9223372036854775809",
        "123456789012345678901234567890123456789",
        "1e400",  # json.loads gives inf
        "-0.0",
        "5e-324",
        "0.30000000000000004",
        "NaN",
        "-Infinity",
        '"\\ud800 lone surrogate"',
        '"\\ud83d\\ude00 and \\u00e9 and \\u0000"',
        '"é中😀"',
        '{"k": 1, "k": 2}',  # the last duplicate wins, as in json
    ],
)
def test_values_json_has_its_own_ideas_about(tmp_path: Path, text: str) -> None:
    p = _write(tmp_path / "edge.jsonl", f'{{"v": {text}}}\n')
    [(_, value)] = list(iter_jsonl(p))
    assert _same(value, clean_strings(json.loads(f'{{"v": {text}}}')))
    assert _same(read_json(_write(tmp_path / "edge.json", text)), clean_strings(json.loads(text)))


def test_invalid_json_still_names_line_and_column(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n{"a": 1}\n{"b": nope}\n')
    with pytest.raises(TranscriptError, match="not JSON: Expecting value at column 7") as err:
        list(iter_jsonl(p))
    assert err.value.where == "line 3"


# --- live files: a last line cut off mid-record -------------------------------------------


_RECORD = {
    "a": [1, -2.5e-3, 1e10, True, False, None, {"k": "v"}],
    "s": 'é中😀 "q" \\ \n tail',
    "n": -12,
    "e": 1.5e20,
}
_RECORD_TEXTS = [
    json.dumps(_RECORD),
    json.dumps(_RECORD, ensure_ascii=False),
    json.dumps(_RECORD, ensure_ascii=False, separators=(",", ":")),
    '{"x": NaN, "y": -Infinity, "z": Infinity, "t": true, "f": false, "u": null}',
]


@pytest.mark.parametrize("text", _RECORD_TEXTS, ids=["ascii", "unicode", "compact", "literals"])
def test_a_record_cut_at_any_byte_is_a_truncated_last_line(tmp_path: Path, text: str) -> None:
    # Every prefix a writer can leave (mid-literal, mid-number, mid-escape, mid-character) is recognised.
    raw = text.encode("utf-8")
    p = tmp_path / "cut.jsonl"
    for cut in range(1, len(raw)):
        p.write_bytes(b'{"first": 1}\n' + raw[:cut])
        with pytest.raises(TranscriptError, match="truncated last line") as err:
            list(iter_jsonl(p))
        assert err.value.where == "line 2", raw[:cut]
        notes = ImportNotes()
        assert list(iter_jsonl(p, notes=notes)) == [(1, {"first": 1})], raw[:cut]
        assert notes.warnings == ["line 2: last line cut off mid-record (log still being written?); ignored"], raw[:cut]


def test_with_notes_a_cut_last_line_ends_every_reader_with_a_warning(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n[2]\n{"b": "half a rec')
    notes = ImportNotes()
    assert list(iter_jsonl_lines(p, notes=notes)) == [(1, {"a": 1}), (2, [2])]
    assert notes.warnings == ["line 3: last line cut off mid-record (log still being written?); ignored"]
    log_notes = ImportNotes()
    assert [v for _, v in iter_log_lines(p, log_notes)] == [{"a": 1}, [2]]
    assert log_notes.records_read == 2 and log_notes.warnings == notes.warnings


def test_a_cut_line_in_the_middle_is_an_error_even_with_notes(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n{"b": "half a rec\n{"c": 3}\n')
    with pytest.raises(TranscriptError, match="not JSON") as err:
        list(iter_jsonl(p, notes=ImportNotes()))
    assert err.value.where == "line 2"


@pytest.mark.parametrize(
    "tail",
    ['{"b": x, "c": 2}', '{"b": 2}}', '{"b": 1 2', "garbage"],
    ids=["bad-value", "extra-brace", "two-values", "not-a-record"],
)
def test_a_last_line_broken_before_its_end_is_not_taken_for_a_cut(tmp_path: Path, tail: str) -> None:
    # Without its newline, but wrong before the point where it stops: corrupt, not cut off.
    p = _write(tmp_path / "a.jsonl", '{"a": 1}\n' + tail)
    with pytest.raises(TranscriptError, match="not JSON") as err:
        list(iter_jsonl(p, notes=ImportNotes()))
    assert err.value.where == "line 2"


def test_a_cut_first_line_is_still_an_error(tmp_path: Path) -> None:
    # Nothing whole was written: an empty import would hide that.
    p = _write(tmp_path / "a.jsonl", '{"a": "hal')
    with pytest.raises(TranscriptError, match="truncated last line"):
        list(iter_jsonl(p, notes=ImportNotes()))


def test_a_cut_inside_a_multibyte_character(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", b'{"a": 1}\n' + '{"b": "中'.encode()[:-1])
    notes = ImportNotes()
    assert list(iter_jsonl(p, notes=notes)) == [(1, {"a": 1})]
    assert len(notes.warnings) == 1
    # The same bytes on a line that goes on are not UTF-8.
    q = _write(tmp_path / "b.jsonl", b'{"a": 1}\n' + '{"b": "中'.encode()[:-1] + b'"}\n')
    with pytest.raises(TranscriptError, match="not UTF-8") as err:
        list(iter_jsonl(q, notes=ImportNotes()))
    assert err.value.where == "line 2"


# --- gc_paused ----------------------------------------------------------------------


def test_an_import_runs_in_the_cores_one_gc_pause() -> None:
    # One pause, one count, for imports and replays alike (its behaviour: tests/core/test_gcpause.py).
    from lab.core import gcpause

    assert gc_paused is gcpause.gc_paused


# --- typed lines (iter_jsonl_as) --------------------------------------------------------------


class _Shape(msgspec.Struct):
    a: Any = None
    n: int = 0


def test_a_line_that_fits_the_struct_is_decoded_into_it(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"a": [1, {"x": 2}], "skipped": {"big": "value"}, "n": 3}\n\n{"n": 4}\n')
    assert list(iter_jsonl_as(p, _Shape)) == [(1, _Shape(a=[1, {"x": 2}], n=3)), (3, _Shape(n=4))]


@pytest.mark.parametrize(
    "line",
    [
        pytest.param('{"a": 1, "n": "three"}', id="field-of-another-type"),
        pytest.param('{"a": 1, "n": 1e400}', id="number-out-of-range"),
        pytest.param('{"a": NaN, "n": 1}', id="what-only-json-reads"),
        pytest.param('{"a": "\\ud800", "n": 1}', id="lone-surrogate"),
    ],
)
def test_a_line_the_struct_cannot_take_is_the_dict_iter_jsonl_gives(tmp_path: Path, line: str) -> None:
    p = _write(tmp_path / "a.jsonl", '{"n": 1}\n' + line + "\n")
    got = list(iter_jsonl_as(p, _Shape))
    assert got[0] == (1, _Shape(n=1))
    assert got[1][0] == 2 and type(got[1][1]) is dict
    assert _same(got[1][1], list(iter_jsonl(p))[1][1])


def test_a_bom_first_line_is_read_as_the_plain_reader_reads_it(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", b'\xef\xbb\xbf{"n": 1}\n{"n": 2}\n')
    assert [v for _, v in iter_jsonl_as(p, _Shape)] == [{"n": 1}, _Shape(n=2)]


def test_the_typed_reader_keeps_the_plain_readers_errors(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="line holds an array, not an object"):
        list(iter_jsonl_as(_write(tmp_path / "a.jsonl", '{"n": 1}\n[1]\n'), _Shape))
    with pytest.raises(TranscriptError, match="not JSON") as err:
        list(iter_jsonl_as(_write(tmp_path / "b.jsonl", '{"n": 1}\n{"n": nope}\n{"n": 2}\n'), _Shape))
    assert err.value.where == "line 2"
    with pytest.raises(TranscriptError, match="not UTF-8"):
        list(iter_jsonl_as(_write(tmp_path / "c.jsonl", b'{"a": "\xff"}\n'), _Shape))
    with pytest.raises(TranscriptError, match="empty file"):
        list(iter_jsonl_as(_write(tmp_path / "d.jsonl", "\n\n"), _Shape))


def test_the_typed_reader_ends_at_a_cut_last_line_with_a_warning(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", '{"n": 1}\n{"n": 2, "a": "half a rec')
    notes = ImportNotes()
    assert list(iter_jsonl_as(p, _Shape, notes=notes)) == [(1, _Shape(n=1))]
    assert notes.warnings == ["line 2: last line cut off mid-record (log still being written?); ignored"]
    with pytest.raises(TranscriptError, match="truncated last line"):
        list(iter_jsonl_as(p, _Shape))


def test_bytes_that_are_not_utf8_in_a_skipped_field_are_never_read(tmp_path: Path) -> None:
    # What the typed reader gives up for its speed: a value it skips is checked as JSON, not built.
    p = _write(tmp_path / "a.jsonl", b'{"n": 1, "other": "\xff"}\n')
    assert list(iter_jsonl_as(p, _Shape)) == [(1, _Shape(n=1))]


# --- strings no encoder can write ------------------------------------------------------------------------


def _repaired(value: Any) -> bool:
    """Whether any string in ``value`` still holds a lone surrogate or a NUL."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\\u0000" not in text


@pytest.mark.parametrize("reader", ["lines", "typed", "document"])
def test_lone_surrogates_and_nul_are_replaced_and_counted(tmp_path: Path, reader: str) -> None:
    lines = [
        r'{"id": "t\ud800", "text": "a\u0000b"}',
        r'{"id": "ok", "text": "pair \ud83d\ude00 kept", "\udc01key": 1}',
        r'{"id": "n", "text": "only a nul \u0000"}',
    ]
    with repairs() as tally:
        if reader == "lines":
            values = [v for _, v in iter_jsonl(_write(tmp_path / "a.jsonl", "\n".join(lines) + "\n"))]
        elif reader == "typed":
            values = [v if isinstance(v, dict) else msgspec.structs.asdict(v) for _, v in iter_jsonl_as(_write(tmp_path / "a.jsonl", "\n".join(lines) + "\n"), _IdText)]
        else:
            values = read_json(_write(tmp_path / "a.json", "[" + ",".join(lines) + "]"))
    assert _repaired(values)
    assert values[0]["id"] == "t\ufffd"
    assert "pair \U0001f600 kept" in json.dumps(values, ensure_ascii=False)
    assert tally == {"lone UTF-16 surrogate": 2, "NUL character": 2}
    note = repair_note(tally)
    assert note is not None and "NUL characters" in note and "U+FFFD" in note


class _IdText(msgspec.Struct):
    id: str = ""
    text: str = ""


def test_clean_json_costs_no_repair(tmp_path: Path) -> None:
    with repairs() as tally:
        values = [v for _, v in iter_jsonl(_write(tmp_path / "a.jsonl", '{"a": "caf\\u00e9 \\\\u0000 literal"}\n'))]
    assert values == [{"a": "café \\u0000 literal"}]
    assert not tally and repair_note(tally) is None


def test_an_import_says_how_many_strings_it_replaced(tmp_path: Path) -> None:
    from lab.formats import load

    p = _write(
        tmp_path / "chat.jsonl",
        '{"role": "user", "content": "fix \\ud800 it"}\n{"role": "assistant", "content": "done\\u0000"}\n',
    )
    t = load(p)
    assert any(w.startswith("replaced 1 NUL character and 1 lone UTF-16 surrogate") for w in t.notes.warnings)
    # Everything the lab writes later encodes.
    json.dumps(t.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")


# --- encodings -----------------------------------------------------------------------------------------


_UTF16 = [("utf-16-le", b"\xff\xfe", "UTF-16 LE (with BOM)"), ("utf-16-be", b"\xfe\xff", "UTF-16 BE (with BOM)"), ("utf-16-le", b"", "UTF-16 LE"), ("utf-16-be", b"", "UTF-16 BE")]
_CHAT = '{"role": "user", "content": "caf\u00e9 \U0001f600"}\r\n{"role": "assistant", "content": "yo"}\n'


@pytest.mark.parametrize(("codec", "bom", "named"), _UTF16)
def test_utf16_files_are_named_as_such_by_the_readers(tmp_path: Path, codec: str, bom: bytes, named: str) -> None:
    p = _write(tmp_path / "a.jsonl", bom + _CHAT.encode(codec))
    assert utf16_of(p.read_bytes()) == named
    for read in (read_file_head, lambda q: list(iter_jsonl(q)), read_json):
        with pytest.raises(TranscriptError, match=re.escape(f"is {named} text, not UTF-8")) as err:
            read(p)
        assert "iconv" in (err.value.expected or "")


@pytest.mark.parametrize(("codec", "bom", "named"), _UTF16)
def test_load_reads_a_utf16_file_as_its_utf8_text(tmp_path: Path, codec: str, bom: bytes, named: str) -> None:
    from lab.formats import load

    p = _write(tmp_path / "a.jsonl", bom + _CHAT.encode(codec))
    t = load(p)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.messages[0].content[0].text == "caf\u00e9 \U0001f600"  # type: ignore[union-attr]
    assert f"converted from {named} to UTF-8 before reading" in t.notes.warnings
    assert t.meta.source_path == str(p)


def test_a_utf16_file_that_fails_names_the_users_file(tmp_path: Path) -> None:
    from lab.formats import load

    p = _write(tmp_path / "a.jsonl", '{"role": "user", "content": "hi"}\n{"role": oops}\n'.encode("utf-16"))
    with pytest.raises(TranscriptError) as err:
        load(p)
    assert err.value.file == str(p) and "lab-utf16" not in str(err.value)


def test_a_bom_before_jsonl_is_skipped_by_every_reader(tmp_path: Path) -> None:
    from lab.formats import load

    p = _write(tmp_path / "a.jsonl", b'\xef\xbb\xbf{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n')
    assert is_jsonl(p)
    assert read_file_head(p).shape == "jsonl"
    assert [m.role for m in load(p).messages] == ["user", "assistant"]


def test_a_first_line_longer_than_the_probe_cap_is_still_jsonl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cap is lowered so the test writes kilobytes, not the 8 MiB a real file needs.
    from lab.formats import jsonio, load

    monkeypatch.setattr(jsonio, "_PROBE_LINE_CAP", 1024)
    monkeypatch.setattr(jsonio, "_SCAN_CHUNK", 256)
    big = json.dumps({"role": "user", "content": "x" * 5000})
    p = _write(tmp_path / "a.jsonl", big + "\n" + '{"role": "assistant", "content": "ok"}\n')
    probe = read_file_head(p)
    assert probe.shape == "jsonl" and probe.records is not None and probe.records[0]["content"] == "x" * 5000
    assert is_jsonl(p)
    t = load(p)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    # One long line alone stays a document, scanned but not parsed as JSONL.
    single = _write(tmp_path / "b.json", big)
    assert not is_jsonl(single)
    assert read_file_head(single).shape == "json"


def test_utf16_of_leaves_utf8_and_binary_alone() -> None:
    assert utf16_of(b'{"a": 1}\n') is None
    assert utf16_of(b"SQLite format 3\x00" + bytes(range(48))) is None
    assert utf16_of("{}".encode("utf-16-le") * 4) == "UTF-16 LE"
