"""The lab's own JSON: a lossless round trip, and clear errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.core.messages import (
    Boundary,
    ImageBlock,
    ImportNotes,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Transcript,
    TranscriptMeta,
    Usage,
)
from lab.errors import TranscriptError
from lab.formats import detect, dump, labjson, load
from tests.builders import session

# --- strategies -------------------------------------------------------------------------

_text = st.text(max_size=40)
_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
_json_scalar = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False) | _text
_json = st.recursive(_json_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3), max_leaves=8)
_times = st.none() | st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC) | st.just(timezone(timedelta(hours=5, minutes=30)))
)
_count = st.integers(0, 10**7)

_block = st.one_of(
    st.builds(TextBlock, text=_text),
    st.builds(ThinkingBlock, thinking=_text, signature=st.none() | _text),
    st.builds(ToolUseBlock, id=_ids, name=_ids, input=st.dictionaries(_text, _json, max_size=3)),
    st.builds(
        ToolResultBlock,
        tool_use_id=_ids,
        content=_text,
        is_error=st.booleans(),
        compacted=st.none() | st.sampled_from(["spill", "dedup", "cleared", "masked", "truncated"]),
        spill_path=st.none() | _text,
        original_chars=st.none() | _count,
    ),
    st.builds(ImageBlock, media_type=st.sampled_from(["image/png", "image/jpeg"]), size_bytes=_count, source=st.sampled_from(["base64", "url", "file", "unknown"]), url=st.none() | _text),
)
_boundary = st.builds(
    Boundary,
    trigger=st.sampled_from(["manual", "auto", "reactive", "emergency", "import"]),
    strategy=_ids,
    timestamp=_times,
    tokens_before=_count,
    tokens_after=_count,
    messages_removed=_count,
    preserved_first_id=st.none() | _ids,
)
_message = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant"]),
    content=st.lists(_block, max_size=4).map(tuple),
    id=_ids,
    timestamp=_times,
    usage=st.none() | st.builds(Usage, input_tokens=_count, output_tokens=_count, cache_read_tokens=_count, cache_write_tokens=_count),
    tag=st.none() | st.sampled_from(["summary", "placeholder", "truncation_note", "boundary", "memory"]),
    boundary=st.none() | _boundary,
)
_notes = st.builds(
    ImportNotes,
    skipped=st.dictionaries(_ids, st.integers(0, 100), max_size=3),
    dropped=st.lists(_text, max_size=2),
    orphan_tool_results=st.lists(_ids, max_size=2),
    unanswered_tool_uses=st.lists(_ids, max_size=2),
    warnings=st.lists(_text, max_size=2),
    records_read=_count,
)
_transcripts = st.builds(
    Transcript,
    meta=st.builds(TranscriptMeta, source_format=_ids, session_id=st.none() | _text, model=st.none() | _text, title=st.none() | _text, planted_facts=st.lists(_text, max_size=2)),
    messages=st.lists(_message, max_size=5),
    tools=st.lists(st.builds(ToolSpec, name=_ids, description=_text, input_schema=st.dictionaries(_text, _json, max_size=2)), max_size=2),
    sidechains=st.dictionaries(_ids, st.lists(_message, max_size=2), max_size=2),
    notes=_notes,
)


# --- round trip ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(_transcripts)
def test_round_trip_is_lossless(t: Transcript) -> None:
    data = labjson.to_dict(t)
    assert data["lab_transcript"] == 1
    # Through real JSON text, as it would be on disk.
    assert labjson.from_dict(json.loads(json.dumps(data))) == t


def test_round_trip_through_a_file_with_detection(tmp_path: Path) -> None:
    t = Transcript(meta=TranscriptMeta(title="demo"), messages=session(n_reads=2, size=100))
    p = labjson.write(t, tmp_path / "t.lab.json")
    assert detect(p) == "lab"
    assert load(p) == t
    assert not list(tmp_path.glob("*.tmp"))


def test_dump_with_a_path_writes_the_same_dict(tmp_path: Path) -> None:
    t = Transcript(messages=session(n_reads=1, size=50))
    data = dump(t, "lab", tmp_path / "out.json")
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8")) == data
    assert load(tmp_path / "out.json", format="lab") == t


def test_big_lab_file_is_detected_from_its_head(tmp_path: Path) -> None:
    t = Transcript(messages=session(n_reads=40, size=40_000))
    p = labjson.write(t, tmp_path / "big.json")
    assert p.stat().st_size > 1024 * 1024
    assert detect(p) == "lab"


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,where",
    [
        ([1, 2], "$"),
        ({"messages": []}, "$.lab_transcript"),
        ({"lab_transcript": 2, "messages": []}, "$.lab_transcript"),
        ({"lab_transcript": 1, "messages": [{"role": "robot", "id": "x"}]}, "$.messages[0].role"),
        ({"lab_transcript": 1, "surprise": True}, "$.surprise"),
    ],
    ids=["not-an-object", "no-version", "future-version", "bad-role", "unknown-field"],
)
def test_invalid_lab_json(tmp_path: Path, data: Any, where: str) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(TranscriptError) as err:
        labjson.read(p)
    assert err.value.where == where
    assert err.value.file == str(p)
